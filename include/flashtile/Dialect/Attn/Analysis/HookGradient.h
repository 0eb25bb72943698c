//===- HookGradient.h - The derivative of a score_mod ----------*- C++ -*-===//
//
// The backward of attention with a score_mod s' = f(s, b, h, q_idx, kv_idx)
// needs, per score, dS = dS' * ∂f/∂s, and for every tensor f reads whose
// gradient is wanted (a learned bias table, ALiBi slopes), the adjoint of
// each read: d(read) += dS' * ∂f/∂read. The hook is an MLIR region, so the
// compiler derives both: differentiateScoreMod re-emits the region's
// computation and then its reverse-mode adjoint, op by op, at a builder's
// insertion point. No peer derives them below Python (FlexAttention traces
// the Python function; FA-cute wants a hand-written score_mod_bwd).
//
// Every op of the hook contract (attn::isSupportedHookOp) has a rule:
// the float arithmetic and math ops by their derivatives (tanh' = 1 -
// tanh², max/min and select by the branch taken, |x| by sign(x) with 0 at
// 0, floor and ceil by 0); integer, index and comparison ops carry no
// gradient (they are piecewise constant in the score); sizes, kernel
// scalars and reads of tensors that are not differentiated are constants.
// An op outside the contract on the path from the score to the result is
// refused with an error at the op.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHTILE_DIALECT_ATTN_ANALYSIS_HOOKGRADIENT_H
#define FLASHTILE_DIALECT_ATTN_ANALYSIS_HOOKGRADIENT_H

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Region.h"

namespace flashtile::attn {

/// The adjoint of one tensor read of a score_mod: `seed * ∂f/∂read`, to be
/// added to the gradient of `read`'s tensor at `read`'s indices (the
/// re-emitted load, whose operands are valid at the insertion point).
struct TensorReadAdjoint {
  mlir::memref::LoadOp read;
  mlir::Value adjoint;
};

/// What differentiateScoreMod emits.
struct ScoreModGradient {
  /// f(s, ...): the modified score, re-emitted.
  mlir::Value score;
  /// seed * ∂f/∂s (a constant 0 when f does not depend on s).
  mlir::Value scoreAdjoint;
  /// One per read of a differentiated tensor on the path to the result,
  /// in the region's order.
  llvm::SmallVector<TensorReadAdjoint> reads;
};

/// (A sink region, whose arguments are (batch, head) with no score, may be
/// differentiated the same way: only its reads then get adjoints.)
///
/// Emits, at `b`'s insertion point, the computation of the score_mod
/// region `scoreMod` on `args` (its block arguments' values: the f32 score,
/// then batch, head, q_idx, kv_idx) and its reverse-mode adjoint with
/// `seed` (dS', an f32) as the adjoint of the result. The values the
/// region uses from outside it (the kernel's extra arguments) are mapped
/// through `outside` as attn::emitHook does. Reads of tensors for which
/// `differentiated` holds (tested on the mapped tensor) get adjoints;
/// other reads are constants. Fails, with an error at the op, on an op
/// that has no derivative rule on the path from the score or a
/// differentiated read to the result.
mlir::FailureOr<ScoreModGradient> differentiateScoreMod(
    mlir::OpBuilder &b, mlir::Region &scoreMod, mlir::ValueRange args,
    mlir::Value seed,
    llvm::function_ref<bool(mlir::Value tensor)> differentiated = nullptr,
    const mlir::IRMapping *outside = nullptr);

} // namespace flashtile::attn

#endif // FLASHTILE_DIALECT_ATTN_ANALYSIS_HOOKGRADIENT_H
