//===- SplitKV.cpp - How many ways to split a launch's KV sequence --------===//

#include "flashtile/ABI/SplitKV.h"

#include <algorithm>
#include <vector>

using namespace flashtile::runtime;

double flashtile::runtime::getWaveEfficiency(int64_t blocks, int64_t slots) {
  if (blocks <= 0 || slots <= 0)
    return 0.0;
  int64_t fullWaves = (blocks + slots - 1) / slots;
  return static_cast<double>(blocks) / static_cast<double>(fullWaves * slots);
}

int64_t flashtile::runtime::chooseKVSplits(const SplitKVProblem &p) {
  int64_t slots = p.numSMs * std::max<int64_t>(p.blocksPerSM, 1);
  if (p.blocks <= 0 || p.kvTiles <= 1 || slots <= 0)
    return 1;
  // The unsplit launch nearly fills a wave already (80%, FA2's threshold).
  if (p.blocks * 10 >= slots * 8)
    return 1;
  int64_t most = std::min({p.maxSplits, slots, p.kvTiles});
  auto tilesPerSplit = [&](int64_t s) { return (p.kvTiles + s - 1) / s; };
  // Splits that leave the tiles per split unchanged do the same work as one
  // fewer: they do not count.
  auto counts = [&](int64_t s) {
    return s == 1 || tilesPerSplit(s) != tilesPerSplit(s - 1);
  };
  std::vector<double> efficiency(most + 1, 0.0);
  double best = 0.0;
  for (int64_t s = 1; s <= most; ++s) {
    if (!counts(s))
      continue;
    efficiency[s] = getWaveEfficiency(p.blocks * s, slots);
    best = std::max(best, efficiency[s]);
  }
  for (int64_t s = 1; s <= most; ++s)
    if (counts(s) && efficiency[s] >= 0.85 * best)
      return s;
  return 1;
}
