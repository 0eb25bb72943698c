//===- gqa.cpp - Grouped-query and multi-query attention ------------------===//
//
// GQA and MQA need no hook: heads_kv is a run-time size that divides
// heads_q, and query head h reads KV head h / (heads_q / heads_kv). The same
// kernel runs MHA (heads_kv = heads_q), GQA (e.g. 32 / 8) and MQA
// (heads_kv = 1). In hooks, `h` is always the query head.

#include "Example.h"

using namespace flashtile::dsl;

int main(int argc, char **argv) {
  AttentionSpec spec;
  spec.name = "gqa";
  spec.dtype = DType::BF16;
  spec.headDim = 128;
  spec.causal = true;
  return flashtile::examples::printKernel(argc, argv, spec);
}
