//===- KernelParams.h - A lowered kernel's parameters -----------*- C++ -*-===//
//
// Private to lib/Conversion/AttnToNVVM: how the patterns find what the
// kernel's signature (KernelABI.h) passes: its config and chip, its
// parameters by name, its extra tensors and workspaces, the entries of the
// plan's tables, and the llvm.func kernels the plan's extra kernels are.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHTILE_LIB_CONVERSION_ATTNTONVVM_KERNELPARAMS_H
#define FLASHTILE_LIB_CONVERSION_ATTNTONVVM_KERNELPARAMS_H

#include "Emitter.h"

#include "flashtile/Conversion/AttnToNVVM/KernelABI.h"

namespace flashtile::attn::lowering {

/// The attributes that keep a lowered kernel's config and chip on its
/// llvm.func.
constexpr llvm::StringLiteral kConfigAttrName = "attn.config";
constexpr llvm::StringLiteral kArchAttrName = "attn.arch";

/// The tile configuration of the kernel `op` belongs to (found on the
/// enclosing attn.kernel, or on the llvm.func it became).
ConfigAttr getKernelConfig(mlir::Operation *op);
/// The chip of the kernel `op` belongs to, found the same way.
ArchAttr getKernelArch(mlir::Operation *op);
/// Whether that kernel's blocks own key tiles (attn.kernel's grid =
/// "keys"; on its llvm.func, kKeyGridAttrName).
bool hasKeyGrid(mlir::Operation *op);
constexpr llvm::StringLiteral kKeyGridAttrName = "attn.key_grid";
/// The llvm.func `op` is in (a lowered kernel).
mlir::LLVM::LLVMFuncOp getKernelFunc(mlir::Operation *op);
/// The parameter named `name` of the kernel `op` belongs to (or of the
/// llvm.func `op`): one of its tensors' pointers, sizes or strides, or the
/// softmax scale (KernelABI.h names them).
mlir::Value getKernelParam(mlir::Operation *op, llvm::StringRef name);
/// Parameter `index` of that kernel (an extra argument's, KernelABI.h).
mlir::Value getKernelParam(mlir::Operation *op, int64_t index);
/// `expr`, one of KernelABI.h's formulas, as i32 IR over the parameters of
/// the kernel `anchor` belongs to: the plan's expression and the kernel's
/// arithmetic are the same tree. Sizes are non-negative, so division is
/// the signed one.
mlir::Value emitPlanExpr(Emitter &e, mlir::Operation *anchor,
                         const plan::Expr &expr);

/// The llvm.func type of a kernel with parameters `params` (KernelABI.h):
/// pointers in the global address space, i32, i64, f32.
mlir::LLVM::LLVMFunctionType
getKernelFuncType(mlir::MLIRContext *ctx,
                  const std::vector<plan::Param> &params);

/// The first llvm.func parameter of extra argument `index` (0 is the first
/// after the sequence tensors) of the kernel `op` has been lowered into: a scalar's value, or a
/// tensor's pointer followed by its sizes and strides (KernelABI.h).
int64_t getExtraArgParam(mlir::Operation *op, unsigned index);

/// The attribute on a lowered kernel's llvm.func that maps the names of
/// the parameters before the extra arguments' to their positions.
constexpr llvm::StringLiteral kTensorParamsAttrName = "attn.tensor_params";
/// The attributes on a lowered kernel's llvm.func that list, per extra
/// argument, its first parameter, and per workspace, its parameter.
constexpr llvm::StringLiteral kExtraParamsAttrName = "attn.extra_params";
constexpr llvm::StringLiteral kWorkspaceParamsAttrName =
    "attn.workspace_params";
/// The attribute that marks the kv_splits parameter (split-KV kernels).
constexpr llvm::StringLiteral kKVSplitsParamAttrName = "attn.kv_splits_param";
/// The attribute that lists a lowered paged-KV kernel's page_size
/// parameter (num_pages follows; getPagedKVParamIndex) and its block
/// table's first parameter.
constexpr llvm::StringLiteral kPagedKVParamsAttrName = "attn.paged_kv_params";
/// The attribute that marks the batch parameter (getBatchParamIndex).
constexpr llvm::StringLiteral kBatchParamAttrName = "attn.batch_param";
/// Puts these on `func`, an llvm.func that takes `kernel`'s parameters.
void annotateKernelFunc(mlir::LLVM::LLVMFuncOp func, attn::KernelOp kernel);
/// The kv_splits parameter of the split-KV kernel `op` belongs to (or of
/// the llvm.func `op`), and kv_split_rows, which follows it (KernelABI.h).
mlir::Value getKVSplitsParam(mlir::Operation *op);
mlir::Value getSplitRowsParam(mlir::Operation *op);
/// Whether the kernel `op` belongs to (or the llvm.func `op`) splits KV.
bool hasKVSplitsParam(mlir::Operation *op);
/// ceil(seqlen_q * G / tile_m): the query tiles of a packed kernel's split
/// (KernelABI.h), from the parameters of the kernel `op` belongs to.
mlir::Value getQueryTiles(Emitter &e, mlir::Operation *op);
/// The batch parameter of the kernel `op` belongs to.
mlir::Value getBatchParam(mlir::Operation *op);
/// The pointer of workspace `name` (KernelABI.h) in the llvm.func of `op`.
mlir::Value getWorkspaceParam(mlir::Operation *op, llvm::StringRef name);

/// The address of field 0 of the kv_ranges entry (KernelABI.h) of query
/// tile `mBlock` of `batch` and `head` (0 unless the block mask is per
/// head), in `func`; fields are consecutive i32. With key_grid, the
/// q_ranges entry of KV tile `mBlock` and KV head `head`.
mlir::Value getBlockRangesEntry(Emitter &e, mlir::LLVM::LLVMFuncOp func,
                                attn::BlockRangesOp op, mlir::Value batch,
                                mlir::Value head, mlir::Value mBlock);

/// The address of the kv_tiles (or, with key_grid, q_tiles) byte
/// (KernelABI.h) of query tile `mBlock`
/// and KV tile `nBlock` of `batch` and `head` (0 unless per head), in `func`;
/// nBlock 0 is kBlockTilesRowAlign-aligned.
mlir::Value getBlockTileEntry(Emitter &e, mlir::LLVM::LLVMFuncOp func,
                              attn::BlockRangesOp op, mlir::Value batch,
                              mlir::Value head, mlir::Value mBlock,
                              mlir::Value nBlock);

/// The address of entry `index` of the diagonal table's row of `batch` and
/// `head` (KernelABI.h; each 0 unless the term uses it), in the llvm.func of
/// `anchor`. `diagonalTableOrigin` is the index of the entry of k - q = 0.
mlir::Value getDiagonalTableEntry(Emitter &e, mlir::Operation *anchor,
                                  const DiagonalTable &table,
                                  mlir::Value batch, mlir::Value head,
                                  mlir::Value index);
mlir::Value getDiagonalTableOrigin(Emitter &e, mlir::Operation *anchor,
                                   const DiagonalTable &table);
/// Entries of one row of the diagonal table (KernelABI.h).
mlir::Value getDiagonalTableRowLength(Emitter &e, mlir::Operation *anchor,
                                      const DiagonalTable &table);

/// An llvm.func kernel taking `kernel`'s parameters (KernelABI.h), named
/// with `suffix`, for blocks of `threads` threads, annotated as
/// annotateKernelFunc does, placed before `kernel`; the builder's insertion
/// point is its entry block. The plan's extra kernels are built on it.
mlir::LLVM::LLVMFuncOp createKernelFunc(mlir::OpBuilder &b,
                                        attn::KernelOp kernel,
                                        llvm::StringRef suffix,
                                        int64_t threads, mlir::Location loc);

} // namespace flashtile::attn::lowering

#endif // FLASHTILE_LIB_CONVERSION_ATTNTONVVM_KERNELPARAMS_H
