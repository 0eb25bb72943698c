//===- SplitKV.h - How many ways to split a launch's KV sequence -*- C++
//-*-===//
//
// A decode step has few query rows: batch x KV heads x query tiles blocks
// can leave most SMs idle. Splitting each row's KV range into S pieces runs
// S times as many blocks, each writing fp32 partial (O, LSE) that a combine
// kernel merges; it pays while the extra blocks fill a wave. This is the
// host-side rule the runtime applies at launch, from the device's SM count
// (132 on an H200, 170 on an RTX 5090, 188 on an RTX PRO 6000).
//
// The rule is FlashAttention-2's (`num_splits_heuristic`, csrc/flash_attn/
// flash_api.cpp): no split when the unsplit launch fills 80% of one wave;
// otherwise the smallest S whose waves are at least 85% as full as the best
// S's, counting only S that change the KV tiles per split.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHTILE_ABI_SPLITKV_H
#define FLASHTILE_ABI_SPLITKV_H

#include <cstdint>

namespace flashtile::runtime {

/// What a split-KV launch spreads over the GPU.
struct SplitKVProblem {
  /// Blocks of the launch without splitting (batch x KV heads x query
  /// tiles).
  int64_t blocks = 0;
  /// KV tiles of the longest row.
  int64_t kvTiles = 0;
  /// The device's SMs and the kernel's resident blocks per SM.
  int64_t numSMs = 0;
  int64_t blocksPerSM = 1;
  /// The most splits the plan's workspaces allow.
  int64_t maxSplits = 128;
};

/// The fill of the last wave of `blocks` blocks on `slots` resident slots,
/// in (0, 1]: waves / ceil(waves).
double getWaveEfficiency(int64_t blocks, int64_t slots);

/// The number of splits (>= 1) for `problem`; 1 for an empty problem.
int64_t chooseKVSplits(const SplitKVProblem &problem);

} // namespace flashtile::runtime

#endif // FLASHTILE_ABI_SPLITKV_H
