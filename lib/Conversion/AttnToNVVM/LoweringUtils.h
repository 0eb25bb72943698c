//===- LoweringUtils.h - Shared helpers of the AttnToNVVM patterns -*- C++ -*-//
//
// Private to lib/Conversion/AttnToNVVM: 32-bit index arithmetic on the LLVM
// dialect, the thread's coordinates, the shared-memory base and swizzle, and
// access to the per-thread fragment arrays.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHTILE_LIB_CONVERSION_ATTNTONVVM_LOWERINGUTILS_H
#define FLASHTILE_LIB_CONVERSION_ATTNTONVVM_LOWERINGUTILS_H

#include "flashtile/Conversion/AttnToNVVM/FragmentLayout.h"
#include "flashtile/Conversion/AttnToNVVM/KVBounds.h"
#include "flashtile/Conversion/AttnToNVVM/KernelABI.h"

#include "mlir/Conversion/LLVMCommon/Pattern.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/PatternMatch.h"

#include <optional>

namespace mlir {
class LLVMTypeConverter;
} // namespace mlir

namespace flashtile::attn::lowering {

/// The dynamic shared memory every buffer lives in.
constexpr llvm::StringLiteral kSmemSymbol = "__flashtile_smem";
/// The attributes that keep a lowered kernel's config and chip on its
/// llvm.func.
constexpr llvm::StringLiteral kConfigAttrName = "attn.config";
constexpr llvm::StringLiteral kArchAttrName = "attn.arch";

/// The descriptor of a tensor in global memory, chosen by its type alone:
/// MLIR's memref descriptor of its rank (allocated and aligned pointer,
/// offset, extents, strides; i64) with global pointers. The kernel lowering
/// builds one per tensor argument from its parameters; a sequence tensor's
/// batch extent is a parameter only where a hook reads the batch size
/// (readsBatchSize), so readers take the block's batch from the grid and
/// never read that extent.
mlir::LLVM::LLVMStructType getGlobalTensorDescType(mlir::MLIRContext *ctx,
                                                   int64_t rank);

/// 32-bit integer and f32 arithmetic at one insertion point. Also the IR
/// policy of the window arithmetic templates of KVBounds.h.
class Emitter {
public:
  Emitter(mlir::OpBuilder &b, mlir::Location loc) : b(b), loc(loc) {}

  mlir::OpBuilder &builder() { return b; }
  mlir::Location location() { return loc; }

  mlir::Value i32(int64_t value);
  mlir::Value i64(int64_t value);
  mlir::Value f32(float value);
  mlir::Value add(mlir::Value a, mlir::Value c);
  mlir::Value add(mlir::Value a, int64_t c) { return add(a, i32(c)); }
  mlir::Value sub(mlir::Value a, mlir::Value c);
  mlir::Value mul(mlir::Value a, mlir::Value c);
  mlir::Value mul(mlir::Value a, int64_t c) { return mul(a, i32(c)); }
  /// Floor and ceil division for c > 0 (correct for negative a), as
  /// attn::floorDiv / attn::ceilDiv of KVBounds.h emit them.
  mlir::Value floorDiv(mlir::Value a, int64_t c);
  mlir::Value ceilDiv(mlir::Value a, int64_t c);
  mlir::Value udiv(mlir::Value a, int64_t c);
  mlir::Value urem(mlir::Value a, int64_t c);
  mlir::Value sdiv(mlir::Value a, mlir::Value c);
  mlir::Value bitAnd(mlir::Value a, int64_t c);
  mlir::Value bitXor(mlir::Value a, mlir::Value c);
  mlir::Value bitOr(mlir::Value a, mlir::Value c);
  mlir::Value shl(mlir::Value a, int64_t c);
  mlir::Value lshr(mlir::Value a, int64_t c);
  mlir::Value smin(mlir::Value a, mlir::Value c);
  mlir::Value smax(mlir::Value a, mlir::Value c);
  mlir::Value cmp(mlir::LLVM::ICmpPredicate pred, mlir::Value a, mlir::Value c);
  mlir::Value slt(mlir::Value a, mlir::Value c) {
    return cmp(mlir::LLVM::ICmpPredicate::slt, a, c);
  }
  mlir::Value sge(mlir::Value a, mlir::Value c) {
    return cmp(mlir::LLVM::ICmpPredicate::sge, a, c);
  }
  mlir::Value select(mlir::Value cond, mlir::Value a, mlir::Value c);
  mlir::Value sext64(mlir::Value a);
  mlir::Value trunc32(mlir::Value a);
  mlir::Value add64(mlir::Value a, mlir::Value c);
  mlir::Value mul64(mlir::Value a, mlir::Value c);

  mlir::Value fadd(mlir::Value a, mlir::Value c);
  mlir::Value fsub(mlir::Value a, mlir::Value c);
  mlir::Value fmul(mlir::Value a, mlir::Value c);
  mlir::Value fma(mlir::Value a, mlir::Value c, mlir::Value d);
  mlir::Value fmax(mlir::Value a, mlir::Value c);
  mlir::Value fcmp(mlir::LLVM::FCmpPredicate pred, mlir::Value a,
                   mlir::Value c);
  /// ex2.approx.ftz.f32: 2^x, with 2^-inf = 0.
  mlir::Value exp2(mlir::Value x);
  /// lg2.approx.f32.
  mlir::Value log2(mlir::Value x);
  /// rcp.approx.ftz.f32.
  mlir::Value rcp(mlir::Value x);
  /// shfl.sync.bfly over the full warp.
  mlir::Value shflXor(mlir::Value x, int64_t laneMask);
  /// shfl.sync.idx over the full warp: `x` of lane `lane`.
  mlir::Value shflIdx(mlir::Value x, mlir::Value lane);

  /// `base + byteOffset` for a pointer of any address space.
  mlir::Value gep(mlir::Value base, mlir::Value byteOffset);
  /// Two f32 converted to `dtype` (f16 or bf16) and packed into an i32.
  mlir::Value packPair(mlir::Value lo, mlir::Value hi, mlir::Type dtype);

  mlir::Value extract(mlir::Value aggregate, int64_t index);
  mlir::Value insert(mlir::Value aggregate, mlir::Value value, int64_t index);
  /// All elements of a per-thread array.
  llvm::SmallVector<mlir::Value> unpack(mlir::Value array);
  /// A per-thread array of `type` holding `values`.
  mlir::Value pack(mlir::Type type, mlir::ValueRange values);

private:
  mlir::OpBuilder &b;
  mlir::Location loc;
};

/// The calling thread's place in its block. Warp `w` of a config with
/// `kv_warps` KV warps is row warp `w / kv_warps` (FragmentLayout) and KV
/// warp `w % kv_warps` (#attn.config).
struct ThreadCoords {
  mlir::Value tid, warp, lane;
  /// The slice of each KV tile this warp takes (constant 0 without KV
  /// warps).
  mlir::Value kvWarp;
  /// lane / 4 and lane % 4: the row and column group of mma fragments.
  mlir::Value g, t;
  static ThreadCoords get(Emitter &e, int64_t kvWarps = 1);
};

/// The tile configuration of the kernel `op` belongs to (found on the
/// enclosing attn.kernel, or on the llvm.func it became).
ConfigAttr getKernelConfig(mlir::Operation *op);
/// The chip of the kernel `op` belongs to, found the same way.
ArchAttr getKernelArch(mlir::Operation *op);
/// Whether that kernel's blocks own key tiles (attn.kernel's grid =
/// "keys"; on its llvm.func, kKeyGridAttrName).
bool hasKeyGrid(mlir::Operation *op);
constexpr llvm::StringLiteral kKeyGridAttrName = "attn.key_grid";
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

/// The extra argument an attn.copy_tile moves (its index among the extra
/// arguments), stamped on the op by the conversion pass before lowering.
inline constexpr llvm::StringLiteral kExtraArgAttrName = "attn.extra_arg";

/// A 2-d extra tensor as the lowering reads it, from the kernel's
/// parameters: its global data pointer and, as i64, its extents and
/// strides (elements).
struct ExtraMatrix {
  mlir::Value data, rows, cols, rowStride, colStride;
};
/// The extra tensor `op` (an attn.copy_tile) moves.
ExtraMatrix getExtraMatrix(mlir::Operation *op);
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
/// The attribute that marks the batch parameter (kernels whose hooks read
/// it; getBatchParamIndex).
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
/// The batch parameter of the kernel `op` belongs to, whose hooks read it.
mlir::Value getBatchParam(mlir::Operation *op);
/// The pointer of workspace `name` (KernelABI.h) in the llvm.func of `op`.
mlir::Value getWorkspaceParam(mlir::Operation *op, llvm::StringRef name);

/// The address of field 0 of the kv_ranges entry (KernelABI.h) of query
/// tile `mBlock` of `batch` and `head` (0 unless the block mask is per
/// head), in `func`; fields are consecutive i32.
mlir::Value getBlockRangesEntry(Emitter &e, mlir::LLVM::LLVMFuncOp func,
                                attn::BlockRangesOp op, mlir::Value batch,
                                mlir::Value head, mlir::Value mBlock);

/// The address of the kv_tiles byte (KernelABI.h) of query tile `mBlock`
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

/// Pointer (address space 3) to the start of the dynamic shared memory.
mlir::Value getSmemBase(Emitter &e, mlir::Operation *anchor);

class TileOpContext;

/// The rows of one (batch, head) of a rank-4 sequence tensor (Q, K, V, O,
/// ...), from its descriptor (getGlobalTensorDescType):
/// the address of 16-byte chunk `chunk` of row `row`. With `packedBy` (a
/// kernel with packed rows), the rows of Q or O are the packed (position,
/// head) pairs of the group whose first head is `head`: seqlen() counts
/// seqlen * G of them.
class TensorRows {
public:
  TensorRows(Emitter &e, mlir::Value desc, mlir::Value batch,
             mlir::Value head, TileOpContext *packedBy = nullptr);
  /// The rows of K or V in a page pool (attn.copy_async's `pages`), read
  /// through the block table, page size and page count parameters of the
  /// llvm.func that `pagedIn` belongs to.
  TensorRows(Emitter &e, mlir::Value desc, mlir::Value batch,
             mlir::Value head, mlir::Operation *pagedIn);
  mlir::Value seqlen() const { return length; }
  bool isPaged() const { return pages.has_value(); }
  mlir::Value chunkAddress(mlir::Value row, mlir::Value chunk);

  /// Paged: the element offset (i64) of row `row`'s start, through the
  /// block table. Any row, in range or not, gives an offset inside the
  /// pool: negative rows read row 0, and slots and entries are clamped.
  mlir::Value pagedRowOffset(mlir::Value row);
  /// The address of chunk `chunk` of the row at element offset `rowOffset`.
  mlir::Value chunkAddressAt(mlir::Value rowOffset, mlir::Value chunk);

private:
  /// base, length and the batch, sequence and head strides, from the
  /// tensor's descriptor.
  void readDescriptor(mlir::Value desc);

  Emitter &e;
  TileOpContext *packedBy;
  mlir::Value base, length, strideBatch, strideSeq, strideHead, headOffset;
  struct PageTable {
    mlir::Value pageSize, lastPage, lastSlot, strideBatch, tableRow,
        tableStride;
  };
  std::optional<PageTable> pages;
};

/// A row of `type` (a shared buffer) in 16-bit columns, the unit the
/// swizzle addresses in: an 8-bit row of 64 elements is 32 columns.
inline int64_t getB16Columns(mlir::MemRefType type) {
  return type.getDimSize(2) * type.getElementTypeBitWidth() / 16;
}

/// The start of slot `tile mod slots` (floor modulo, so negative tiles map
/// to a slot too) of a ring buffer of `type` at `buffer`.
mlir::Value getSlotAddress(Emitter &e, mlir::Value buffer,
                           mlir::MemRefType type, mlir::Value tile);

/// Byte offset of 16-byte chunk `chunk` of row `row` in a row-major shared
/// tile of `cols` 16-bit elements per row. Chunks are XOR-swizzled with the
/// row so that eight consecutive rows read at one logical chunk hit eight
/// distinct 16-byte bank groups (ldmatrix reads 8 rows per phase): within
/// groups of 8 chunks by `row % 8` when a row has a multiple of 8 chunks,
/// within groups of 4 chunks by `(row / 2) % 4` otherwise (e.g. d = 96).
mlir::Value swizzledOffset(Emitter &e, mlir::Value row, mlir::Value chunk,
                           int64_t cols);

/// Addresses of 16-byte chunks of one lane in a swizzled shared tile, in the
/// form [register + immediate]. A lane's row is `laneRow` plus a compile-time
/// multiple of 8, and its chunk `laneChunk` plus a compile-time even number;
/// the swizzle key of a row does not change under a multiple of 8, so only
/// the chunk offset modulo the swizzle group (8 or 4 chunks) reaches a
/// register: one base per distinct value, everything else is an immediate.
/// This keeps loop-invariant address registers to a handful per operand
/// instead of one per ldmatrix.
class SwizzledTileAccess {
public:
  SwizzledTileAccess(Emitter &e, mlir::Value tileBase, mlir::Value laneRow,
                     mlir::Value laneChunk, int64_t cols);
  /// The address of (laneRow + rowOffset, laneChunk + chunkOffset).
  mlir::Value address(int64_t rowOffset, int64_t chunkOffset);

private:
  Emitter &e;
  mlir::Value rowBase, laneChunk, key;
  int64_t cols, group;
  llvm::SmallVector<mlir::Value, 8> bases;
};

/// The 16-byte chunks one thread moves when `threads` threads copy a
/// [rows x cols] tile whole rows at a time: chunk id `tid + step * threads`.
/// When the threads cover a multiple of 8 whole rows per step, a thread's
/// column and swizzle key never change, so every step is the first one plus
/// immediates.
class TileChunkWalk {
public:
  TileChunkWalk(Emitter &e, mlir::Value tid, int64_t threads, int64_t rows,
                int64_t cols);
  int64_t numSteps() const { return (chunks + threads - 1) / threads; }
  /// True when some threads have no chunk in `step`.
  bool isPartial(int64_t step) const { return (step + 1) * threads > chunks; }
  /// Whether this thread has a chunk in `step` (only for partial steps).
  mlir::Value isActive(int64_t step);
  mlir::Value row(int64_t step);
  mlir::Value chunk(int64_t step);
  /// Byte offset of the chunk in the swizzled tile.
  mlir::Value smemOffset(int64_t step);
  /// Rows between a thread's consecutive steps when every thread keeps one
  /// column and moves down by a fixed number of rows per step (then row(s)
  /// = row(0) + s * rowsPerStep()), else 0.
  int64_t getRowsPerStep() const { return rowsPerStep; }

private:
  mlir::Value chunkId(int64_t step);

  Emitter &e;
  mlir::Value tid;
  int64_t threads, rows, cols, chunksPerRow, chunks;
  /// Rows per step on the fast path, 0 otherwise.
  int64_t rowsPerStep = 0;
  mlir::Value firstRow, firstChunk, firstOffset;
};

/// `for (i = lower; i < upper; i += step)` (i32, step > 0) carrying
/// `inits`, as blocks at the rewriter's insertion point; `body` gets i and
/// the carried values and returns the next ones. The rewriter continues
/// after the loop; returns the final values.
llvm::SmallVector<mlir::Value>
emitForLoop(mlir::RewriterBase &rewriter, mlir::Location loc,
            mlir::Value lower, mlir::Value upper, int64_t step,
            mlir::ValueRange inits,
            llvm::function_ref<llvm::SmallVector<mlir::Value>(
                mlir::Value, mlir::ValueRange)>
                body);

/// An llvm.func kernel taking `kernel`'s parameters (KernelABI.h), named
/// with `suffix`, for blocks of `threads` threads, annotated as
/// annotateKernelFunc does, placed before `kernel`; the builder's insertion
/// point is its entry block. The plan's extra kernels are built on it.
mlir::LLVM::LLVMFuncOp createKernelFunc(mlir::OpBuilder &b,
                                        attn::KernelOp kernel,
                                        llvm::StringRef suffix,
                                        int64_t threads, mlir::Location loc);

/// Splits the current block and runs `body` only when `cond` holds; the
/// rewriter continues after the conditional code.
void emitIf(mlir::RewriterBase &rewriter, mlir::Location loc, mlir::Value cond,
            llvm::function_ref<void()> body);

/// What a tile-level op of a kernel lowers against: the kernel's tile
/// configuration, the fragment layout of its warps, and an Emitter at the
/// op. The thread's coordinates are emitted on first use, once per op, so a
/// pattern that never asks for them emits none.
class TileOpContext {
public:
  TileOpContext(ConfigAttr config, mlir::OpBuilder &b, mlir::Operation *op)
      : config(config), layout(config.getRowWarps()), e(b, op->getLoc()),
        op(op) {}

  /// Threads per block.
  int64_t threads() const { return config.getWarps() * kWarpSize; }
  ThreadCoords &thread() {
    if (!coords)
      coords = ThreadCoords::get(e, config.getKvWarps());
    return *coords;
  }
  /// Whether rows are packed (position, head) pairs (#attn.config pack_gqa).
  bool packed() const { return config.getPackGqa(); }
  /// G = heads_q / heads_kv, the rows of one position when packed.
  mlir::Value groupSize();
  /// Packed row `row` as (position, head offset in the KV head's group).
  std::pair<mlir::Value, mlir::Value> unpackRow(mlir::Value row);
  /// The positions of the first and last valid packed rows of query tile
  /// `mBlock` (tile_m rows; seqlen_q * G of them in all): the query rows a
  /// packed tile's KV bounds and key range are taken at.
  std::pair<mlir::Value, mlir::Value>
  packedTilePositions(mlir::Value mBlock, mlir::Value seqlenQ, int64_t tileM);

  const ConfigAttr config;
  const FragmentLayout layout;
  Emitter e;
  mlir::Operation *const op;

private:
  std::optional<ThreadCoords> coords;
  mlir::Value group;
};

/// The query head of packed row group offset `offset` in the block whose
/// first query head is `firstHead`, or `firstHead` itself unpacked.
inline mlir::Value getRowHead(Emitter &e, mlir::Value firstHead,
                              mlir::Value offset) {
  return offset ? e.add(firstHead, offset) : firstHead;
}

/// The sequence positions of the score elements one thread holds in a
/// `rows x cols` accumulator tile (cols: the warp's slice of the KV tile) of
/// query tile `mBlock` and KV tile `nBlock`: element r of (m-tile i, n-tile
/// j) is query position row(i, r) and key col(j, r), as
/// FragmentLayout::accElementOffset places it within the warp's rows and
/// slice. With packed rows, row(i, r) is the position of the packed row and
/// headOffset(i, r) its head's offset in the KV head's group.
class ScoreTileCoords {
public:
  ScoreTileCoords(TileOpContext &ctx, int64_t rows, int64_t cols,
                  mlir::Value mBlock, mlir::Value nBlock);
  mlir::Value row(int64_t i, int64_t r);
  mlir::Value col(int64_t j, int64_t r);
  /// Null when rows are not packed.
  mlir::Value headOffset(int64_t i, int64_t r);
  /// row(i, r) and col(j, r) as a per-thread base plus a compile-time
  /// constant (packed rows: the position and 0).
  std::pair<mlir::Value, int64_t> rowParts(int64_t i, int64_t r) {
    if (ctx.packed())
      return {row(i, r), 0};
    return {rowBase, rowOffset(i, r)};
  }
  std::pair<mlir::Value, int64_t> colParts(int64_t j, int64_t r) {
    return {colBase, 8 * j + FragmentLayout::accElementOffset(r).second};
  }

private:
  static int64_t rowOffset(int64_t i, int64_t r) {
    return 16 * i + FragmentLayout::accElementOffset(r).first;
  }
  TileOpContext &ctx;
  Emitter &e;
  mlir::Value rowBase, colBase;
  /// Packed rows: (position, head offset) per row offset, emitted once.
  llvm::SmallDenseMap<int64_t, std::pair<mlir::Value, mlir::Value>, 8> unpacked;
};

/// Base of the patterns of ops inside an allocated kernel: finds the
/// kernel's config (no match without one) and hands `lower` the op's
/// TileOpContext, so that patterns start from what they share instead of
/// rebuilding it.
template <typename OpTy>
class AttnOpLoweringPattern : public mlir::ConvertOpToLLVMPattern<OpTy> {
public:
  using Base = mlir::ConvertOpToLLVMPattern<OpTy>;
  using OpAdaptor = typename Base::OpAdaptor;
  using Base::Base;

  mlir::LogicalResult
  matchAndRewrite(OpTy op, OpAdaptor adaptor,
                  mlir::ConversionPatternRewriter &rewriter) const final {
    ConfigAttr config = getKernelConfig(op);
    if (!config)
      return rewriter.notifyMatchFailure(op, "no kernel config");
    TileOpContext ctx(config, rewriter, op.getOperation());
    return lower(op, adaptor, rewriter, ctx);
  }

protected:
  /// Rewrites `op`; `ctx.e` emits at the op.
  virtual mlir::LogicalResult lower(OpTy op, OpAdaptor adaptor,
                                    mlir::ConversionPatternRewriter &rewriter,
                                    TileOpContext &ctx) const = 0;
};

} // namespace flashtile::attn::lowering

#endif // FLASHTILE_LIB_CONVERSION_ATTNTONVVM_LOWERINGUTILS_H

namespace flashtile::attn::lowering {
// The pattern groups, one file each.
/// Combines `values` pairwise, in log2(n) dependent steps rather than a
/// chain of n: a row's 2 * (tile_n / 8) values per thread would otherwise
/// serialise on the FMNMX / FADD latency. The order is fixed, so results are
/// deterministic.
mlir::Value treeReduce(llvm::SmallVector<mlir::Value> values,
                       llvm::function_ref<mlir::Value(mlir::Value, mlir::Value)>
                           combine);

/// The f32 accumulator values `acc` of an M x N fragment (`mTiles` m-tiles,
/// `nTiles` 8-column n-tiles per thread) rounded to `dtype` and packed as the
/// A operand of an mma: the C fragments of n-tiles 2k and 2k + 1 are the A
/// fragment of k-tile k (FragmentLayout.h).
llvm::SmallVector<mlir::Value> packAccumulatorAsA(Emitter &e,
                                                  llvm::ArrayRef<mlir::Value> acc,
                                                  int64_t mTiles, int64_t nTiles,
                                                  mlir::Type dtype);

void populateKernelPatterns(mlir::LLVMTypeConverter &converter,
                            mlir::RewritePatternSet &patterns);
void populateMemoryPatterns(mlir::LLVMTypeConverter &converter,
                            mlir::RewritePatternSet &patterns);
void populateMmaPatterns(mlir::LLVMTypeConverter &converter,
                         mlir::RewritePatternSet &patterns);
void populateElementwisePatterns(mlir::LLVMTypeConverter &converter,
                                 mlir::RewritePatternSet &patterns);
void populateSoftmaxPatterns(mlir::LLVMTypeConverter &converter,
                             mlir::RewritePatternSet &patterns);
void populateEpiloguePatterns(mlir::LLVMTypeConverter &converter,
                              mlir::RewritePatternSet &patterns);
void populateHookPatterns(mlir::LLVMTypeConverter &converter,
                          mlir::RewritePatternSet &patterns);
/// Adds the block-mask kernels of `kernel` (which has an attn.block_ranges)
/// to its module, before it as llvm.funcs (KernelABI.h).
mlir::LogicalResult buildBlockMaskKernels(attn::KernelOp kernel);
/// Adds the diagonal table's kernel of `kernel` (whose score_mod has a
/// diagonal term) to its module, before it as an llvm.func (KernelABI.h).
mlir::LogicalResult buildDiagonalTableKernel(attn::KernelOp kernel);
/// Adds the combine kernel of the split-KV kernel `kernel` to its module,
/// before it as an llvm.func (KernelABI.h).
mlir::LogicalResult buildCombineKernel(attn::KernelOp kernel);
} // namespace flashtile::attn::lowering
