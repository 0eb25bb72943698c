//===- Attn.h - The attn dialect, its attributes, types and ops -*- C++ -*-===//

#ifndef FLASHTILE_DIALECT_ATTN_IR_ATTN_H
#define FLASHTILE_DIALECT_ATTN_IR_ATTN_H

#include "flashtile/Target/Arch.h"

#include <optional>
#include <string>

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "flashtile/Dialect/Attn/IR/AttnOpsDialect.h.inc"

namespace flashtile::attn {

/// Which mma operand's register layout an `!attn.frag` follows.
enum class FragLayout : uint8_t {
  /// C / D: scores and accumulators.
  Acc,
  /// A: the left operand of an mma.
  A,
  /// One value per row (rank 1).
  Rows,
  /// One value per column of an accumulator (rank 1): the per-query
  /// softmax state of a backward's key-side tile S^T = K Q^T, broadcast
  /// along the rows by attn.map.
  Cols,
};

/// Whether `layout` is one of the rank-1 layouts (rows, cols).
inline bool isVectorLayout(FragLayout layout) {
  return layout == FragLayout::Rows || layout == FragLayout::Cols;
}

/// The layout kind an `!attn.frag` of `rank` and `elementType` has when its
/// type does not spell one: rows for rank 1, acc for f32 and i32, a
/// otherwise.
FragLayout getDefaultFragLayout(int64_t rank, mlir::Type elementType);

/// The spelling of `layout` in `!attn.frag<..., kind>`.
llvm::StringRef stringifyFragLayout(FragLayout layout);

/// The dimension of `tensor` that a tile's rows run along, for the tile ops
/// (attn.copy_tile, attn.load_tile, attn.store_tile): rows of a 2-d
/// tensor, of a (batch, rows, heads, dim) one, or of a (batch, heads, rows)
/// one. A tile's columns run along the last dimension.
int64_t getTileRowDim(mlir::MemRefType tensor);

} // namespace flashtile::attn

#define GET_ATTRDEF_CLASSES
#include "flashtile/Dialect/Attn/IR/AttnAttrs.h.inc"

#define GET_TYPEDEF_CLASSES
#include "flashtile/Dialect/Attn/IR/AttnOpsTypes.h.inc"

#define GET_OP_CLASSES
#include "flashtile/Dialect/Attn/IR/AttnOps.h.inc"

namespace flashtile::attn {

/// A config as every message and report states it: its parameters as the
/// IR spells them ("tile_m = 128, tile_n = 64, stages = 2, warps = 4,
/// q_in_regs = true", then kv_warps and pack_gqa where not the default).
std::string formatConfig(ConfigAttr config);


/// The address space of shared memory in NVVM (and in our buffer types).
constexpr unsigned kSharedMemorySpace = 3;

/// Checks that `arch` has a code path the compiler implements; emits an
/// error at `op` and fails otherwise. Every pass that needs a code path asks
/// this, so the refusal reads the same everywhere.
mlir::LogicalResult checkCodePathImplemented(mlir::Operation *op,
                                             ArchAttr arch);

/// Columns past head_dim_v in each row of attn.epilogue's merge buffer: m
/// and l of the row, then padding, so that rows of 8 consecutive mma row
/// groups start 8 banks apart and the 64-bit partial-O stores of a warp hit
/// every bank once per wavefront.
inline constexpr int64_t kMergeRowPadding = 8;

/// Why (tile_m, tile_n, stages, warps, kv_warps, pack_gqa) is not a
/// well-formed config of a kernel on the query grid (`queryGrid`) or on
/// either grid, or nullopt when it is. The verifiers of #attn.config (either
/// grid: the attribute does not know its kernel's) and of attn.kernel, and
/// the forward's config search share this one rule. On the query grid KV
/// warps and packed rows come together (the decode family): the epilogue's
/// merge is where a split launch writes its partial results, and the
/// lowering is tested only so; a key-grid kernel's KV warps split columns.
std::optional<std::string> explainInvalidConfig(int64_t tileM, int64_t tileN,
                                                int64_t stages, int64_t warps,
                                                int64_t kvWarps = 1,
                                                bool packGqa = false,
                                                bool queryGrid = true);

/// The head-dim rule of the sm80 path, asked by the kernel verifier, config
/// selection and the lowering alike: why `dim` cannot be a head dim, or
/// nullopt when it can (a multiple of 8 from 8 to 256).
std::optional<std::string> explainUnsupportedHeadDim(int64_t dim);

/// The width of a head-dim row in shared memory and in register fragments:
/// `dim` rounded up to whole swizzle groups and mma k-steps (32). The pad
/// columns are zero-filled by the copies and never stored, so any head dim
/// the rule admits (48, 72, 80, 112...) runs on the kernels of the next
/// multiple of 32, as FlashAttention-2's head-dim instances do.
int64_t getPaddedHeadDim(int64_t dim);

/// The softmax scale a kernel takes when none is given: 1 / sqrt(head_dim)
/// of Q and K.
float getDefaultSoftmaxScale(int64_t headDim);

/// Why `name` cannot be a kernel's symbol (its PTX entry name), or nullopt.
std::optional<std::string> explainInvalidKernelName(llvm::StringRef name);

/// True when `op` may appear in a score_mod / mask_mod hook: the arith,
/// math, memref.load and attn ops the hook lowering emits.
bool isSupportedHookOp(mlir::Operation *op);
/// The names of those ops ("arith.addf", ...), for tests that check every
/// one lowers.
llvm::SmallVector<llvm::StringRef> getSupportedHookOpNames();

/// Replaces every use, inside hook region `hook`, of an argument of the
/// kernel around it by an attn.kernel_arg at the top of the hook: how the
/// lowering reads a hook's kernel arguments (as kernel parameters).
void readKernelArgsThroughKernelArgOps(mlir::Region &hook,
                                       KernelOp kernel);

/// Emits, at `b`'s insertion point, the ops of hook region `hook` (a
/// score_mod, mask_mod or sink) on `args` (its block arguments' values) and
/// returns the value it yields: a hook inlined where it is used (the
/// backward's maps). The values the region uses from outside it (the
/// kernel's extra arguments) are taken from `outside` where it maps them
/// (another kernel's), else used as they are.
mlir::Value emitHook(mlir::OpBuilder &b, mlir::Region &hook,
                     mlir::ValueRange args,
                     const mlir::IRMapping *outside = nullptr);

/// The elements' shape of an attn.map / attn.for_each over `operands`:
/// the rank-2 fragments' (rows, cols), else the `rows` vectors' (rows);
/// `cols` vectors give no rows. The op verifiers check that the operands
/// agree on it.
llvm::SmallVector<int64_t> getElementwiseShape(mlir::ValueRange operands);

/// Checks the body of hook region `region` of `owner` (named `name` in
/// errors): supported ops and types only, and no value from outside but the
/// kernel's extra arguments. With `accumulates` (attn.for_each), the body
/// may also add f32 values into the kernel's extra tensors of role
/// `accumulate` with memref.atomic_rmw addf. Emits the error at the
/// offending op.
mlir::LogicalResult verifyHookBody(mlir::Operation *owner,
                                   mlir::Region &region, llvm::StringRef name,
                                   bool accumulates = false);

/// The largest window side (keys) and sequence length the kernels take. The
/// kernel's index arithmetic is 32-bit and adds up to three such values (a
/// row, the length offset and a window side), so each stays below 2^29.
constexpr int64_t kMaxSequenceExtent = (int64_t(1) << 29) - 1;

/// An unbounded side of an attn.key_range interval: -2^30 or 2^30, beyond
/// any key, and small enough that a tile computation adding a sequence
/// extent to it stays in 32 bits.
constexpr int64_t kKeyRangeUnbounded = int64_t(1) << 30;

} // namespace flashtile::attn

#endif // FLASHTILE_DIALECT_ATTN_IR_ATTN_H
