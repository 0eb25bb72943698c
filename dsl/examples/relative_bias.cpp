//===- relative_bias.cpp - T5 relative-position bias from a bucket table --===//
//
// score' = score + bias[h, bucket(kv_idx - q_idx)], T5's bidirectional
// bucketing (Raffel et al., 2020): 32 buckets, 16 per direction; distances
// below 8 get a bucket each, longer ones share logarithmically wider buckets
// up to a distance of 100. `bias` is an extra (heads_q, 32) f32 tensor.

#include "Example.h"

#include <cmath>

using namespace flashtile::dsl;

constexpr int kBucketsPerSide = 16;
constexpr int kExact = 8;
constexpr float kMaxDistance = 100.f;

int main(int argc, char **argv) {
  AttentionSpec spec;
  spec.name = "relative_bias";
  spec.dtype = DType::BF16;
  spec.headDim = 128;
  spec.causal = false;
  Tensor bias = spec.addTensor("bias", DType::F32, 2);
  spec.scoreMod = [=](Score s, Idx b, Idx h, Idx q, Idx k) {
    Idx rel = k - q;
    Idx side = where(rel > 0, kBucketsPerSide, 0);
    Idx n = abs(rel);
    // log(n / 8) / log(100 / 8) of the 8 remaining buckets; n >= 8 here.
    Expr far = kExact + toIndex(log(toFloat(max(n, kExact)) / float(kExact)) /
                                std::log(kMaxDistance / kExact) *
                                float(kBucketsPerSide - kExact));
    Idx bucket =
        side + where(n < kExact, n, min(far, kBucketsPerSide - 1));
    return s + bias(h, bucket);
  };
  return flashtile::examples::printKernel(argc, argv, spec);
}
