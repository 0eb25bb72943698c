//===- differential.cpp - Differential attention in the tile language -----===//
//
// DIFF Transformer (Ye et al., "Differential Transformer", 2024): each head's
// query and key are two halves, [Q1; Q2] and [K1; K2] (d = head_dim / 2
// each), and the head attends with the difference of two softmax maps,
//   O = (softmax(Q1 K1^T / sqrt(d)) - lambda softmax(Q2 K2^T / sqrt(d))) V,
// V of the full head dim. A score_mod or FlexAttention cannot express it:
// the two maps have their own row maxima and sums. Here both live in one
// block: two dots over the halves of one K tile (attn.mma's k range),
// two online softmaxes written with the tile language's row reductions and
// maps, two accumulators over the same V tile, and the difference at the
// end. The LSE output is not written. lambda is the kernel argument `lam`.
//
//   differential [--dtype=f16|bf16] [--head-dim=N] [--causal=0|1] [--name=NAME]

#include "Example.h"

#include <cmath>
#include <limits>

using namespace flashtile::dsl;
using flashtile::attn::KernelOp;
using flashtile::attn::TileBuilder;
using mlir::Value;
using mlir::ValueRange;

namespace {
/// One map's online-softmax state: the row max m, the row sum l (both over
/// whole rows) and the unnormalised output.
struct SoftmaxState {
  Value m, l, acc;
};
} // namespace

static TileKernelSpec makeSpec(const flashtile::examples::Flags &flags) {
  TileKernelSpec spec;
  spec.name = flags.name;
  spec.dtype = flags.dtype;
  spec.headDim = flags.headDim;
  // Two score tiles and two accumulators per warp: 32-key tiles, Q read
  // from shared memory, so that nothing spills (64-key tiles spill ~100 B).
  spec.tileM = 128;
  spec.tileN = 32;
  spec.stages = 1;
  spec.warps = 8;
  spec.qInRegs = false;
  Scalar lambda = spec.addScalar("lam", DType::F32);
  bool causal = flags.causal;
  int64_t half = flags.headDim / 2;
  spec.body = [lambda, causal, half](TileProgram &t) {
    int64_t tileM = t.getSpec().tileM, tileN = t.getSpec().tileN;
    int64_t d = t.headDim(), dv = t.headDimV();
    KernelOp kernel = t.getKernel();
    mlir::Type dtype = t.getElementType();
    mlir::Type f32 = t.builder().getF32Type();
    int64_t right = causal ? 0 : -1;
    const float negInf = -std::numeric_limits<float>::infinity();
    const float log2e = 1.4426950408889634f;

    Value qs = t.buffer("Q", 1, tileM, d);
    Value ks = t.buffer("K", 1, tileN, d);
    Value vs = t.buffer("V", 1, tileN, dv);
    Value os = t.buffer("O", 1, tileM, dv);
    TileBuilder::Block blk = t.blockContext();
    TileBuilder::TileRange range = t.kvBounds(blk, tileM, tileN, -1, right);
    t.copy(kernel.getQ(), blk.batch, blk.mBlock, blk.head, qs);
    // Each map's scores are scaled by 1 / sqrt(d), d the half head dim.
    Value scale = t.softmaxScale(1.0f / std::sqrt(float(half)));

    // One online-softmax step of a map (FlashAttention-2's, with whole-row
    // sums): a row that has seen no key yet keeps m = -inf and weighs 0.
    auto softmaxStep = [&](Value s, SoftmaxState st, Value j) {
      Value tileMax = t.reduceRows(s, "max");
      Value m = t.map({st.m, tileMax}, [](llvm::ArrayRef<Expr> x, Expr, Expr) {
        return max(x[0], x[1]);
      });
      Value p = t.map({s, m, scale}, [&](llvm::ArrayRef<Expr> x, Expr, Expr) {
        return where(x[1] == negInf, 0.0f, exp2((x[0] - x[1]) * x[2] * log2e));
      });
      Value alpha = t.map({st.m, m, scale}, [&](llvm::ArrayRef<Expr> x, Expr,
                                                Expr) {
        return where(x[1] == negInf, 1.0f, exp2((x[0] - x[1]) * x[2] * log2e));
      });
      Value rowSum = t.reduceRows(p, "sum");
      Value l =
          t.map({st.l, alpha, rowSum}, [](llvm::ArrayRef<Expr> x, Expr, Expr) {
            return x[0] * x[1] + x[2];
          });
      Value acc = t.map({st.acc, alpha}, [](llvm::ArrayRef<Expr> x, Expr,
                                            Expr) { return x[0] * x[1]; });
      acc = t.dotAccumulate(t.convert(p, dtype), vs, j, acc);
      return SoftmaxState{m, l, acc};
    };

    auto init = [&] {
      return SoftmaxState{t.splat({tileM}, f32, negInf),
                          t.splat({tileM}, f32, 0.0f),
                          t.splat({tileM, dv}, f32, 0.0f)};
    };
    SoftmaxState one = init(), two = init();
    auto step = [&](bool masked) {
      return [&, masked](Value j, ValueRange c) -> llvm::SmallVector<Value> {
        t.copy(kernel.getK(), blk.batch, j, blk.kvHead, ks);
        Value s1 = t.dot(qs, ks, j, 0, half);
        Value s2 = t.dot(qs, ks, j, half, d);
        if (masked) {
          s1 = t.mask(s1, blk, j, -1, right);
          s2 = t.mask(s2, blk, j, -1, right);
        }
        t.copy(kernel.getV(), blk.batch, j, blk.kvHead, vs);
        SoftmaxState a = softmaxStep(s1, {c[0], c[1], c[2]}, j);
        SoftmaxState b = softmaxStep(s2, {c[3], c[4], c[5]}, j);
        return {a.m, a.l, a.acc, b.m, b.l, b.acc};
      };
    };
    llvm::SmallVector<Value> state = {one.m, one.l, one.acc,
                                      two.m, two.l, two.acc};
    state = llvm::to_vector(t.loop(range.unmaskedEnd, range.end, state,
                                   /*masked=*/true, step(true)));
    state = llvm::to_vector(t.loop(range.unmaskedBegin, range.unmaskedEnd,
                                   state, /*masked=*/false, step(false)));
    // O = acc1 / l1 - lambda acc2 / l2; a row with no key gives 0.
    Value o = t.map({state[2], state[1], state[5], state[4]},
                    [&](llvm::ArrayRef<Expr> x, Expr, Expr) {
                      Expr first = where(x[1] == 0.0f, 0.0f, x[0] / x[1]);
                      Expr second = where(x[3] == 0.0f, 0.0f, x[2] / x[3]);
                      return first - lambda * second;
                    });
    t.store(o, os, blk);
  };
  return spec;
}

int main(int argc, char **argv) {
  return flashtile::examples::printTileKernel(
      argc, argv, {DType::BF16, 128, false, "differential_attention"},
      makeSpec);
}
