//===- alibi.cpp - ALiBi: a per-head linear bias on the distance ----------===//
//
// score' = score + slope[h] * (kv_idx - q_idx) (Press et al., 2022), with the
// slopes an extra f32 tensor of heads_q entries, so that one kernel serves
// any slope schedule.

#include "Example.h"

using namespace flashtile::dsl;

int main(int argc, char **argv) {
  AttentionSpec spec;
  spec.name = "alibi";
  spec.dtype = DType::BF16;
  spec.headDim = 128;
  spec.causal = true;
  Tensor slopes = spec.addTensor("slopes", DType::F32, 1);
  spec.scoreMod = [=](Score s, Idx b, Idx h, Idx q, Idx k) {
    return s + slopes[h] * toFloat(k - q);
  };
  return flashtile::examples::printKernel(argc, argv, spec);
}
