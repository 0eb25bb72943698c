//===- softcap.cpp - tanh soft-capping of the scores (Gemma 2, Grok) ------===//
//
// score' = cap * tanh(score / cap), cap = 50. The tanh is one tanh.approx.f32
// per score on the SFU.

#include "Example.h"

using namespace flashtile::dsl;

int main(int argc, char **argv) {
  AttentionSpec spec;
  spec.name = "softcap";
  spec.dtype = DType::BF16;
  spec.headDim = 128;
  spec.causal = true;
  spec.scoreMod = [](Score s, Idx b, Idx h, Idx q, Idx k) {
    return 50.f * tanh(s / 50.f);
  };
  return flashtile::examples::printKernel(argc, argv, spec);
}
