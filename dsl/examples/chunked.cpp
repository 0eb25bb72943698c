//===- chunked.cpp - Chunked (local) attention, Llama 4 style -------------===//
//
// The sequence is cut into chunks of 1024 tokens; a query sees, causally,
// the keys of its own chunk only.

#include "Example.h"

using namespace flashtile::dsl;

constexpr int kChunk = 1024;

int main(int argc, char **argv) {
  AttentionSpec spec;
  spec.name = "chunked";
  spec.dtype = DType::BF16;
  spec.headDim = 128;
  spec.causal = true;
  spec.maskMod = [](Idx b, Idx h, Idx q, Idx k) {
    return q / kChunk == k / kChunk;
  };
  return flashtile::examples::printKernel(argc, argv, spec);
}
