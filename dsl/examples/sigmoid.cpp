//===- sigmoid.cpp - Sigmoid attention in the tile language ---------------===//
//
// FlashSigmoid (Ramapuram et al., "Theory, Analysis, and Best Practices for
// Sigmoid Self-Attention", 2024): O = sigmoid(scale * Q K^T + bias) V, with
// no softmax and so no row max, no row sum and no rescaling of O. Neither a
// score_mod nor FlexAttention can express it: both keep the softmax. The
// sigmoid is 0.5 + 0.5 tanh(x / 2), one tanh.approx.f32 per score. Masked
// scores are -inf before the sigmoid, so they weigh 0; the LSE output is not
// written (there is no normaliser).
//
//   sigmoid [--dtype=f16|bf16] [--head-dim=N] [--causal=0|1] [--name=NAME]

#include "Example.h"


using namespace flashtile::dsl;
using flashtile::attn::KernelOp;
using flashtile::attn::TileBuilder;
using mlir::Value;
using mlir::ValueRange;

static TileKernelSpec makeSpec(const flashtile::examples::Flags &flags) {
  TileKernelSpec spec;
  spec.name = flags.name;
  spec.dtype = flags.dtype;
  spec.headDim = flags.headDim;
  // The plain kernel's config at d = 128: one 128 x 128 tile per step.
  spec.tileM = 128;
  spec.tileN = 128;
  spec.stages = 1;
  spec.warps = 8;
  spec.qInRegs = true;
  Scalar bias = spec.addScalar("bias", DType::F32);
  bool causal = flags.causal;
  spec.body = [bias, causal](TileProgram &t) {
    int64_t tileM = t.getSpec().tileM, tileN = t.getSpec().tileN;
    int64_t d = t.headDim(), dv = t.headDimV();
    KernelOp kernel = t.getKernel();
    mlir::Type dtype = t.getElementType();
    int64_t right = causal ? 0 : -1;

    Value qs = t.buffer("Q", 1, tileM, d);
    Value ks = t.buffer("K", 1, tileN, d);
    Value vs = t.buffer("V", 1, tileN, dv);
    Value os = t.buffer("O", 1, tileM, dv);
    TileBuilder::Block blk = t.blockContext();
    TileBuilder::TileRange range = t.kvBounds(blk, tileM, tileN, -1, right);
    t.copy(kernel.getQ(), blk.batch, blk.mBlock, blk.head, qs);
    Value qf = t.load(qs);
    Value scale = t.softmaxScale();
    Value acc = t.splat({tileM, dv}, t.builder().getF32Type(), 0.0f);

    auto step = [&](bool masked) {
      return [&, masked](Value j,
                         ValueRange carried) -> llvm::SmallVector<Value> {
        // Each tile is copied where it is used: the compiler issues the
        // copies ahead (attn-pipeline-copies) and places every sync.
        t.copy(kernel.getK(), blk.batch, j, blk.kvHead, ks);
        Value s = t.dot(qf, ks, j);
        if (masked)
          s = t.mask(s, blk, j, -1, right);
        // sigmoid(y) = 0.5 + 0.5 tanh(y / 2), with the halving folded into
        // the scale and the bias: one FMA, one tanh, one FMA per score.
        Value p =
            t.map({s, scale}, [&](llvm::ArrayRef<Expr> x, Expr row, Expr col) {
              return 0.5f + 0.5f * tanh(x[0] * (0.5f * x[1]) + 0.5f * bias);
            });
        t.copy(kernel.getV(), blk.batch, j, blk.kvHead, vs);
        return {t.dotAccumulate(t.convert(p, dtype), vs, j, carried[0])};
      };
    };
    // The partial last tile (and the diagonal) first, then the rest.
    acc = t.loop(range.unmaskedEnd, range.end, {acc}, /*masked=*/true,
                 step(true))[0];
    acc = t.loop(range.unmaskedBegin, range.unmaskedEnd, {acc},
                 /*masked=*/false, step(false))[0];
    t.store(acc, os, blk);
  };
  return spec;
}

int main(int argc, char **argv) {
  return flashtile::examples::printTileKernel(
      argc, argv, {DType::BF16, 128, false, "sigmoid_attention"}, makeSpec);
}
