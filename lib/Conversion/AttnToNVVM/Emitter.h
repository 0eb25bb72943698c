//===- Emitter.h - Arithmetic on the LLVM dialect ---------------*- C++ -*-===//
//
// Private to lib/Conversion/AttnToNVVM: 32-bit index and f32 arithmetic at one
// insertion point, the thread's coordinates, and the control flow the
// patterns emit (a counted loop, a conditional, a tree reduction).
//
//===----------------------------------------------------------------------===//

#ifndef FLASHTILE_LIB_CONVERSION_ATTNTONVVM_EMITTER_H
#define FLASHTILE_LIB_CONVERSION_ATTNTONVVM_EMITTER_H

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/PatternMatch.h"

namespace flashtile::attn::lowering {

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
  /// Leading zero bits of an i32 (32 for 0).
  mlir::Value ctlz(mlir::Value a);
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

/// Which way emitForLoop counts.
enum class LoopDirection { Up, Down };

/// `for (i = lower; i < upper; i += step)` (i32, step > 0) carrying
/// `inits`, as blocks at the rewriter's insertion point; `body` gets i and
/// the carried values and returns the next ones. Counting Down (step 1), i
/// runs from upper - 1 to lower. The rewriter continues after the loop;
/// returns the final values. The lowering's one loop builder: the KV loop
/// and the combine kernel's loops are built with it.
llvm::SmallVector<mlir::Value>
emitForLoop(mlir::RewriterBase &rewriter, mlir::Location loc,
            mlir::Value lower, mlir::Value upper, int64_t step,
            mlir::ValueRange inits,
            llvm::function_ref<llvm::SmallVector<mlir::Value>(
                mlir::Value, mlir::ValueRange)>
                body,
            LoopDirection direction = LoopDirection::Up);

/// Splits the current block and runs `body` only when `cond` holds; the
/// rewriter continues after the conditional code.
void emitIf(mlir::RewriterBase &rewriter, mlir::Location loc, mlir::Value cond,
            llvm::function_ref<void()> body);
/// The same with an `otherwise` branch run when `cond` does not hold.
void emitIfElse(mlir::RewriterBase &rewriter, mlir::Location loc,
                mlir::Value cond, llvm::function_ref<void()> body,
                llvm::function_ref<void()> otherwise);

/// Combines each of `values` over the whole warp with butterfly shuffles
/// (shfl.sync.bfly, lane masks 16 down to 1), so that every lane ends with
/// the result; `combine(i, a, b)` merges two of value i. The values are
/// interleaved per step, so that their shuffles overlap.
void warpAllReduce(Emitter &e, llvm::MutableArrayRef<mlir::Value> values,
                   llvm::function_ref<mlir::Value(size_t, mlir::Value,
                                                  mlir::Value)>
                       combine);

/// Combines `values` pairwise, in log2(n) dependent steps rather than a
/// chain of n: a row's 2 * (tile_n / 8) values per thread would otherwise
/// serialise on the FMNMX / FADD latency. The order is fixed, so results are
/// deterministic.
mlir::Value treeReduce(llvm::SmallVector<mlir::Value> values,
                       llvm::function_ref<mlir::Value(mlir::Value, mlir::Value)>
                           combine);

} // namespace flashtile::attn::lowering

#endif // FLASHTILE_LIB_CONVERSION_ATTNTONVVM_EMITTER_H
