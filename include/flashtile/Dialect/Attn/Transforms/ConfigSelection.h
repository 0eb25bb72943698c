//===- ConfigSelection.h - Choosing a tile configuration ---------*- C++ -*-===//
//
// Config selection enumerates (tile_m, tile_n, stages, warps, q_in_regs),
// asks the shared-memory allocator whether each candidate's tile program
// fits the chip (feasibility is the allocator's own answer, not a second
// formula), drops candidates whose register estimate would spill, and ranks
// the rest by a cost model.
//
// The cost model estimates the fraction of the tensor-core peak one SM
// sustains, per KV-loop step of one block:
//
//   t_mma  = tile_m * tile_n * (d + dv) / 1024     mma.sync MACs per cycle
//   t_lds  = warps * (2 * tile_n * (d + dv)         every warp reads all of K
//            + (q_in_regs ? 0 : 2 * rows * d)) / 128   and V (and its Q rows)
//                                                  through ldmatrix, 128 B/clk
//   t_exp  = tile_m * tile_n / 16                  exp2 on the MUFU, 16/clk
//   t_sync = 2 * 40 / blocks_per_sm                two barriers per step; other
//                                                  resident blocks fill them
//   step   = max(t_mma, t_lds, t_exp) + t_sync
//   hiding = min(1, resident_warps / 8)            latency hiding needs about
//                                                  two warps per SM sub-core
//   score  = hiding * t_mma / step
//
// rows = tile_m / warps. resident warps = warps * blocks per SM, where blocks
// per SM is the least of the shared-memory, register and thread limits of the
// chip's table row. Register use per thread is estimated as
//
//   O accumulator rows * dv / 32 + S accumulator rows * tile_n / 32
//   + Q fragments (q_in_regs) rows * d / 64 + 4 * rows / 16 (softmax state)
//   + 90 (addresses, loop state, ldmatrix operands, P while it is packed),
//
// and a candidate above the chip's per-thread maximum is rejected as
// spilling. The 90 is calibrated on ptxas 13.0 -v for the sm80 lowering at
// d = 64..256: fragments up to 160 registers compiled without spills,
// from 176 up they spilled. The constants are per-SM rates of the SM80 datapath (A100: 1024
// dense f16 MACs, 128 B of shared memory and 16 MUFU ops per cycle); only
// their ratios matter. They are a model to rank candidates, and measurements
// overrule it.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHTILE_DIALECT_ATTN_TRANSFORMS_CONFIGSELECTION_H
#define FLASHTILE_DIALECT_ATTN_TRANSFORMS_CONFIGSELECTION_H

#include "flashtile/Dialect/Attn/IR/Attn.h"

#include "llvm/ADT/SmallVector.h"
#include <optional>
#include <string>

namespace flashtile::attn {

/// Parameters the user pinned; the others are searched.
struct ConfigOverrides {
  std::optional<int64_t> tileM, tileN, stages, warps;
  std::optional<bool> qInRegs;
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
