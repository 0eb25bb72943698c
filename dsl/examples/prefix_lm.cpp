//===- prefix_lm.cpp - Prefix-LM: a bidirectional prefix, causal after ----===//
//
// Every query sees the first `prefix_len` keys (a run-time i32 scalar) and,
// causally, the keys up to its own position.

#include "Example.h"

using namespace flashtile::dsl;

int main(int argc, char **argv) {
  AttentionSpec spec;
  spec.name = "prefix_lm";
  spec.dtype = DType::BF16;
  spec.headDim = 128;
  Scalar prefixLen = spec.addScalar("prefix_len", DType::I32);
  spec.maskMod = [=](Idx b, Idx h, Idx q, Idx k) {
    return k <= q || k < prefixLen;
  };
  return flashtile::examples::printKernel(argc, argv, spec);
}
