//===- ConfigSelection.h - Choosing a tile configuration ---------*- C++ -*-===//
//
// Config selection enumerates (tile_m, tile_n, stages, warps, q_in_regs),
// asks the shared-memory allocator whether each candidate's tile program
// fits the chip (feasibility is the allocator's own answer, not a second
// formula), drops candidates whose register estimate would spill, and ranks
// the rest by a cost model.
//
// The cost model estimates the fraction of the tensor-core peak one SM
// sustains over one KV-loop step of its B resident blocks:
//
//   t_mma  = B * tile_m * tile_n * (d + dv) / 1024   mma.sync MACs per cycle
//   t_lds  = B * warps * (2 * tile_n * (d + dv)      every warp reads all of K
//            + (q_in_regs ? 0 : 2 * rows * d)) / 128  and V (and its Q rows)
//                                                   through ldmatrix, 128 B/clk
//   t_l2   = B * 2 * tile_n * (d + dv) / 21          K and V tiles from L2,
//                                                   ~21 B/clk per SM
//   t_exp  = tile_m * tile_n / 16                    a block's exp2 on the
//                                                   MUFU, 16/clk
//   t_step = 750                                     a block's two barriers
//                                                   and the wait for its
//                                                   prefetched tile
//   step   = max(t_mma, t_lds, t_l2) + t_exp + t_step
//
// A block's softmax and barriers sit between its mma phases (its warps run
// in lockstep), and in the measurements a second resident block hid little
// of that gap, so it is not divided by B.
//   hiding = min(1, resident warps * (rows / 16) / 8)  independent mma chains
//   score  = hiding * t_mma / step
//
// rows = tile_m / warps. resident warps = warps * blocks per SM, where blocks
// per SM is the least of the shared-memory, register and thread limits of the
// chip's table row. Register use per thread is estimated as
//
//   O accumulator rows * dv / 32 + S accumulator rows * tile_n / 32
//   + Q fragments (q_in_regs) rows * d / 64 + 4 * rows / 16 (softmax state)
//   + 87 (addresses, loop state, ldmatrix operands, P while it is packed),
//
// and a candidate above the chip's per-thread maximum is rejected as
// spilling. The 87 is calibrated on ptxas 13.0 -v for the sm80 lowering at
// d = 64..256: fragments up to 160 registers compiled without spills,
// from 176 up they spilled. The driver checks the estimate against ptxas
// (--spill-fallback).
//
// The rates are those of an A100-class SM (1024 dense f16 MACs, 128 B of
// shared memory and 16 MUFU ops per cycle, about 21 B/cycle of L2 per SM);
// only their ratios matter. t_step is fitted to H200 timings of the sm80
// path (d = 128: 128x128 w8 353, 128x32 w4 339, 128x64 w8 329, 128x32 w8
// 255 TFLOP/s; d = 64: 128x64 w4 324, 128x128 w8 297), whose order the
// model reproduces. It is a model to rank candidates; measurements
// overrule it.
//
//
// The decode family (ConfigFamily::Decode) searches its own space: a 16-row
// tile of packed rows (pack_gqa), 4 or 2 warps, all of them KV warps, tile_n
// 64/128/32 and 1-4 stages, Q in registers first. A decode step reads every K/V
// byte once and computes little on it, so its score is not the mma model
// above but the K/V bytes a block keeps in flight, which is what keeps HBM
// busy:
//
//   in_flight = min(blocks per SM, 2) * (2 * stages - 1) * tile_n * (d + dv)
//   score     = min(1, in_flight / 64 KiB)
//
// (copies issue K, V, K, V, ...: while one tile is consumed, 2 * stages - 1
// half tiles can be in flight). Little's law asks ~36 KiB per SM of an H200
// (4.8 TB/s over 132 SMs at ~1 us of DRAM latency); 64 KiB leaves room for
// the gaps between a block's tiles. Two blocks per SM is what a decode
// launch of batch x KV heads (for example 32 x 8 = 256 blocks on 132 SMs)
// puts there. Ties keep the enumeration order: 4 KV warps, tile_n 64, the
// fewest stages.
//===----------------------------------------------------------------------===//

#ifndef FLASHTILE_DIALECT_ATTN_TRANSFORMS_CONFIGSELECTION_H
#define FLASHTILE_DIALECT_ATTN_TRANSFORMS_CONFIGSELECTION_H

#include "flashtile/Dialect/Attn/IR/Attn.h"

#include "llvm/ADT/SmallVector.h"
#include <optional>
#include <string>

namespace flashtile::attn {

/// The kernel families config selection searches.
enum class ConfigFamily {
  /// 128/64-row query tiles, warps stacked along M (FlashAttention-2).
  Prefill,
  /// A 16-row tile of packed (position, head) rows of one KV head, with KV
  /// warps: decode steps and short queries (#attn.config pack_gqa,
  /// kv_warps).
  Decode,
};

/// "prefill", "decode".
llvm::StringRef stringifyConfigFamily(ConfigFamily family);
std::optional<ConfigFamily> parseConfigFamily(llvm::StringRef name);

/// Parameters the user pinned; the others are searched.
struct ConfigOverrides {
  std::optional<int64_t> tileM, tileN, stages, warps;
  std::optional<bool> qInRegs;
  ConfigFamily family = ConfigFamily::Prefill;
  std::optional<int64_t> kvWarps;
  /// Whether any parameter is pinned (the family counts when not prefill).
  bool any() const {
    return tileM || tileN || stages || warps || qInRegs || kvWarps ||
           family != ConfigFamily::Prefill;
  }
  /// Whether every parameter of the family is pinned.
  bool isFullyPinned() const {
    return tileM && tileN && stages && warps && qInRegs &&
           (family == ConfigFamily::Prefill || kvWarps);
  }
};

/// One evaluated candidate.
struct ConfigCandidate {
  ConfigAttr config;
  /// Empty when the candidate is feasible.
  std::string rejection;
  int64_t smemBytes = 0;
  int64_t estimatedRegs = 0;
  int64_t blocksBySmem = 0, blocksByRegs = 0, blocksByThreads = 0;
  int64_t blocksPerSM = 0;
  int64_t residentWarps = 0;
  double score = 0.0;
  bool isFeasible() const { return rejection.empty(); }
};

/// Every candidate consistent with `overrides`, feasible ones first, best
/// first; rejected ones keep their reason. `kernel` must still hold its
/// `attn.attention` (it is cloned for each candidate, never changed).
llvm::SmallVector<ConfigCandidate>
rankConfigs(KernelOp kernel, const ConfigOverrides &overrides);

/// The best feasible config for `kernel`, or an error at the kernel listing
/// why the candidates were rejected.
mlir::FailureOr<ConfigAttr> selectConfig(KernelOp kernel,
                                         const ConfigOverrides &overrides);

} // namespace flashtile::attn

#endif // FLASHTILE_DIALECT_ATTN_TRANSFORMS_CONFIGSELECTION_H
