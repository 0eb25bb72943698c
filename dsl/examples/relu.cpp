//===- relu.cpp - ReLU attention in the tile language ---------------------===//
//
// ReLU attention (Wortsman et al., "Replacing softmax with ReLU in Vision
// Transformers", 2023): O_i = (1 / n_i) sum_j relu(scale q_i.k_j) v_j, with
// n_i the number of keys row i sees (the sequence length without a mask,
// its causal prefix with one). There is no softmax, so neither a score_mod
// nor FlexAttention expresses it, and the normaliser differs per row under
// a causal mask: the program counts each row's visible keys as it goes (a
// row reduction of the mask, carried through the KV loop) and divides at
// the end. A row with no key gives 0. The LSE output is not written.
//
//   relu [--dtype=f16|bf16] [--head-dim=N] [--causal=0|1] [--name=NAME]

#include "Example.h"

#include <limits>

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
  // The plain kernel's config at d = 128.
  spec.tileM = 128;
  spec.tileN = 128;
  spec.stages = 1;
  spec.warps = 8;
  spec.qInRegs = true;
  bool causal = flags.causal;
  spec.body = [causal](TileProgram &t) {
    int64_t tileM = t.getSpec().tileM, tileN = t.getSpec().tileN;
    int64_t d = t.headDim(), dv = t.headDimV();
    KernelOp kernel = t.getKernel();
    mlir::Type dtype = t.getElementType();
    mlir::Type f32 = t.builder().getF32Type();
    int64_t right = causal ? 0 : -1;
    const float negInf = -std::numeric_limits<float>::infinity();

    Value qs = t.buffer("Q", 1, tileM, d);
    Value ks = t.buffer("K", 1, tileN, d);
    Value vs = t.buffer("V", 1, tileN, dv);
    Value os = t.buffer("O", 1, tileM, dv);
    TileBuilder::Block blk = t.blockContext();
    TileBuilder::TileRange range = t.kvBounds(blk, tileM, tileN, -1, right);
    t.copy(kernel.getQ(), blk.batch, blk.mBlock, blk.head, qs);
    Value qf = t.load(qs);
    Value scale = t.softmaxScale();

    auto step = [&](bool masked) {
      return [&, masked](Value j, ValueRange c) -> llvm::SmallVector<Value> {
        Value acc = c[0], count = c[1];
        t.copy(kernel.getK(), blk.batch, j, blk.kvHead, ks);
        Value s = t.dot(qf, ks, j);
        if (masked) {
          s = t.mask(s, blk, j, -1, right);
          // Masked tiles count their visible keys; whole tiles count all.
          Value seen =
              t.reduceRows(t.map({s},
                                 [&](llvm::ArrayRef<Expr> x, Expr, Expr) {
                                   return where(x[0] == negInf, 0.0f, 1.0f);
                                 }),
                           "sum");
          count = t.map({count, seen}, [](llvm::ArrayRef<Expr> x, Expr, Expr) {
            return x[0] + x[1];
          });
        } else {
          count = t.map({count}, [tileN](llvm::ArrayRef<Expr> x, Expr, Expr) {
            return x[0] + float(tileN);
          });
        }
        Value p = t.map({s, scale}, [](llvm::ArrayRef<Expr> x, Expr, Expr) {
          return max(x[0] * x[1], 0.0f);
        });
        t.copy(kernel.getV(), blk.batch, j, blk.kvHead, vs);
        return {t.dotAccumulate(t.convert(p, dtype), vs, j, acc), count};
      };
    };
    llvm::SmallVector<Value> state = {t.splat({tileM, dv}, f32, 0.0f),
                                      t.splat({tileM}, f32, 0.0f)};
    state = llvm::to_vector(t.loop(range.unmaskedEnd, range.end, state,
                                   /*masked=*/true, step(true)));
    state = llvm::to_vector(t.loop(range.unmaskedBegin, range.unmaskedEnd,
                                   state, /*masked=*/false, step(false)));
    Value o =
        t.map({state[0], state[1]}, [](llvm::ArrayRef<Expr> x, Expr, Expr) {
          return where(x[1] == 0.0f, 0.0f, x[0] / x[1]);
        });
    t.store(o, os, blk);
  };
  return spec;
}

int main(int argc, char **argv) {
  return flashtile::examples::printTileKernel(
      argc, argv, {DType::BF16, 128, false, "relu_attention"}, makeSpec);
}
