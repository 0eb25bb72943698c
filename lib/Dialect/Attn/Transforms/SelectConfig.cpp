//===- SelectConfig.cpp - attn-select-config and the config search --------===//

#include "flashtile/Dialect/Attn/Analysis/SharedMemoryAllocation.h"
#include "flashtile/Dialect/Attn/Analysis/TileProgramInvariants.h"
#include "flashtile/Dialect/Attn/Transforms/ConfigSelection.h"
#include "flashtile/Dialect/Attn/Transforms/ExpandToTiles.h"
#include "flashtile/Dialect/Attn/Transforms/Passes.h"
#include "flashtile/Dialect/Attn/Transforms/PipelineCopies.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MathExtras.h"
#include <algorithm>

namespace flashtile::attn {
#define GEN_PASS_DEF_ATTNSELECTCONFIG
#include "flashtile/Dialect/Attn/Transforms/Passes.h.inc"
} // namespace flashtile::attn

using namespace mlir;
using namespace flashtile;
using namespace flashtile::attn;

// The search space, in the order that breaks ties (bigger tiles, fewer
// stages, Q in registers first).
static constexpr int64_t kTileMs[] = {128, 64};
static constexpr int64_t kTileNs[] = {128, 64, 32};
static constexpr int64_t kStages[] = {1, 2};
static constexpr int64_t kWarps[] = {8, 4};
static constexpr bool kQInRegs[] = {true, false};

// Cost-model rates of the SM80 datapath per SM and cycle; see
// ConfigSelection.h. Only the ratios matter.
static constexpr double kMmaMacsPerCycle = 1024;
static constexpr double kSmemBytesPerCycle = 128;
static constexpr double kL2BytesPerCycle = 21;
static constexpr double kExpPerCycle = 16;
static constexpr double kStepCycles = 750;
static constexpr double kMmaChainsToHideLatency = 8;
static constexpr int64_t kFixedRegs = 87;

// The decode family's space and its in-flight target (ConfigSelection.h).
static constexpr int64_t kDecodeTileM = 16;
static constexpr int64_t kDecodeWarps[] = {4, 2};
static constexpr int64_t kDecodeKvWarps[] = {4, 2};
static constexpr int64_t kDecodeTileNs[] = {64, 128, 32};
static constexpr int64_t kDecodeStages[] = {1, 2, 3, 4};
static constexpr int64_t kDecodeBlocksPerSM = 2;
static constexpr double kDecodeInFlightBytes = 64 * 1024;

StringRef attn::stringifyConfigFamily(ConfigFamily family) {
  return family == ConfigFamily::Decode ? "decode" : "prefill";
}

std::optional<ConfigFamily> attn::parseConfigFamily(StringRef name) {
  if (name == "prefill")
    return ConfigFamily::Prefill;
  if (name == "decode")
    return ConfigFamily::Decode;
  return std::nullopt;
}

template <typename T>
static bool allowed(const std::optional<T> &pinned, T value) {
  return !pinned || *pinned == value;
}

/// Fills the register estimate, the occupancy and the score of a candidate
/// whose shared-memory size is known.
static void evaluate(ConfigCandidate &c, const ArchInfo &arch, int64_t headDim,
                     int64_t headDimV) {
  ConfigAttr config = c.config;
  int64_t tileM = config.getTileM(), tileN = config.getTileN();
  int64_t warps = config.getWarps();
  int64_t rows = tileM / config.getRowWarps();

  c.estimatedRegs = rows * headDimV / 32 + rows * config.getKeysPerWarp() / 32 +
                    (config.getQInRegs() ? rows * headDim / 64 : 0) +
                    4 * rows / 16 + kFixedRegs;
  if (c.estimatedRegs > arch.maxRegsPerThread) {
    c.rejection = llvm::formatv("an estimated {0} registers per thread would "
                                "spill ({1} at most)",
                                c.estimatedRegs, arch.maxRegsPerThread);
    return;
  }

  Occupancy occupancy =
      computeOccupancy(arch, warps, c.estimatedRegs, c.smemBytes);
  c.blocksBySmem = occupancy.bySharedMemory;
  c.blocksByRegs = occupancy.byRegisters;
  c.blocksByThreads = occupancy.byThreads;
  c.blocksPerSM = occupancy.blocks;
  c.residentWarps = c.blocksPerSM * warps;
  if (c.blocksPerSM == 0) {
    c.rejection = "no block fits on an SM";
    return;
  }

  // Per SM and KV step of every resident block; see ConfigSelection.h.
  double blocks = static_cast<double>(c.blocksPerSM);
  double dims = static_cast<double>(headDim + headDimV);
  double tMma = blocks * tileM * tileN * dims / kMmaMacsPerCycle;
  double tLds = blocks * warps *
                (2.0 * tileN * dims +
                 (config.getQInRegs() ? 0.0 : 2.0 * rows * headDim)) /
                kSmemBytesPerCycle;
  double tL2 = blocks * 2.0 * tileN * dims / kL2BytesPerCycle;
  double tExp = tileM * tileN / kExpPerCycle;
  double step = std::max({tMma, tLds, tL2}) + tExp + kStepCycles;
  double chains = static_cast<double>(c.residentWarps) * (rows / 16);
  double hiding = std::min(1.0, chains / kMmaChainsToHideLatency);
  c.score = hiding * tMma / step;
}

/// Calls `fn` for every (tile_m, tile_n, stages, warps, kv_warps) of the
/// family's search space that `overrides` allows. Pinned values outside the
/// usual space are still tried.
static void forEachShape(
    const ConfigOverrides &overrides,
    function_ref<void(int64_t, int64_t, int64_t, int64_t, int64_t)> fn) {
  auto space = [](ArrayRef<int64_t> defaults, std::optional<int64_t> pinned) {
    return pinned ? SmallVector<int64_t>{*pinned} : llvm::to_vector(defaults);
  };
  if (overrides.family == ConfigFamily::Decode) {
    for (int64_t kvWarps : space(kDecodeKvWarps, overrides.kvWarps))
      for (int64_t tileN : space(kDecodeTileNs, overrides.tileN))
        for (int64_t stages : space(kDecodeStages, overrides.stages))
          for (int64_t tileM : space({kDecodeTileM}, overrides.tileM))
            for (int64_t warps : space(kDecodeWarps, overrides.warps))
              fn(tileM, tileN, stages, warps, kvWarps);
    return;
  }
  for (int64_t tileM : space(kTileMs, overrides.tileM))
    for (int64_t tileN : space(kTileNs, overrides.tileN))
      for (int64_t stages : space(kStages, overrides.stages))
        for (int64_t warps : space(kWarps, overrides.warps))
          for (int64_t kvWarps : space({1}, overrides.kvWarps))
            fn(tileM, tileN, stages, warps, kvWarps);
}

/// The decode family's score: K/V bytes in flight per SM against the target
/// (ConfigSelection.h).
static void scoreDecode(ConfigCandidate &c, int64_t headDim,
                        int64_t headDimV) {
  ConfigAttr config = c.config;
  double blocks = static_cast<double>(
      std::min<int64_t>(c.blocksPerSM, kDecodeBlocksPerSM));
  // Copies issue K, V, K, V, ...: while one tile is consumed, the next
  // 2 * stages - 1 half tiles (K or V) can be in flight.
  double halfTiles = 2.0 * config.getStages() - 1.0;
  double inFlight = blocks * halfTiles * config.getTileN() *
                    (headDim + headDimV) * 2.0 / 2.0;
  c.score = std::min(1.0, inFlight / kDecodeInFlightBytes);
}

SmallVector<ConfigCandidate>
attn::rankConfigs(KernelOp kernel, const ConfigOverrides &overrides) {
  const ArchInfo &arch = kernel.getArch().getInfo();
  auto qType = cast<MemRefType>(kernel.getQ().getType());
  auto vType = cast<MemRefType>(kernel.getV().getType());
  // Tiles hold padded rows: that is what costs shared memory and registers.
  int64_t headDim = getPaddedHeadDim(qType.getDimSize(3)),
          headDimV = getPaddedHeadDim(vType.getDimSize(3));

  SmallVector<ConfigCandidate> candidates;
  MLIRContext *ctx = kernel.getContext();
  bool decode = overrides.family == ConfigFamily::Decode;
  forEachShape(overrides, [&](int64_t tileM, int64_t tileN, int64_t stages,
                              int64_t warps, int64_t kvWarps) {
    if (explainInvalidConfig(tileM, tileN, stages, warps, kvWarps, decode))
      return; // Not a well-formed config (e.g. 64 rows, 8 warps).
    for (bool qInRegs : kQInRegs) {
      if (!allowed(overrides.qInRegs, qInRegs))
        continue;
      ConfigCandidate candidate;
      candidate.config = ConfigAttr::get(ctx, tileM, tileN, stages, warps,
                                         qInRegs, kvWarps, decode);

      // The allocator's answer on this candidate's own tile program, its
      // copies pipelined as the pipeline will.
      auto clone = cast<KernelOp>(kernel->clone());
      if (succeeded(expandAttentionToTiles(clone, candidate.config))) {
        pipelineCopies(clone);
        candidate.smemBytes = SharedMemoryPlan(clone).getTotalBytes();
      }
      clone->erase();

      if (candidate.smemBytes > arch.smemPerBlock)
        candidate.rejection = llvm::formatv(
            "needs {0} B of shared memory, over the {1} B per-block limit "
            "of {2}",
            candidate.smemBytes, arch.smemPerBlock, arch.name);
      else
        evaluate(candidate, arch, headDim, headDimV);
      if (decode && candidate.isFeasible())
        scoreDecode(candidate, headDim, headDimV);
      candidates.push_back(std::move(candidate));
    }
  });

  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const ConfigCandidate &a, const ConfigCandidate &b) {
                     if (a.isFeasible() != b.isFeasible())
                       return a.isFeasible();
                     return a.score > b.score;
                   });
  return candidates;
}

FailureOr<ConfigAttr> attn::selectConfig(KernelOp kernel,
                                         const ConfigOverrides &overrides) {
  SmallVector<ConfigCandidate> candidates = rankConfigs(kernel, overrides);
  if (!candidates.empty() && candidates.front().isFeasible())
    return candidates.front().config;

  InFlightDiagnostic diag = kernel.emitError()
                            << "no feasible config on "
                            << kernel.getArch().getInfo().name
                            << " for the pinned parameters";
  if (candidates.empty()) {
    // Say why, with the verifier's own words for the first combination.
    std::string reason;
    forEachShape(overrides, [&](int64_t tileM, int64_t tileN, int64_t stages,
                                int64_t warps, int64_t kvWarps) {
      if (reason.empty())
        reason = explainInvalidConfig(tileM, tileN, stages, warps, kvWarps,
                                      overrides.family == ConfigFamily::Decode)
                     .value_or(std::string());
    });
    diag.attachNote() << "no well-formed config matches the pinned values: "
                      << reason;
  }
  for (const ConfigCandidate &c : candidates)
    diag.attachNote() << formatConfig(c.config) << ": " << c.rejection;
  return failure();
}

namespace {
struct AttnSelectConfigPass
    : public attn::impl::AttnSelectConfigBase<AttnSelectConfigPass> {
  using Base::Base;

  void runOnOperation() override {
    KernelOp kernel = getOperation();
    if (failed(checkCodePathImplemented(kernel, kernel.getArch())) ||
        failed(verifyAttentionTensors(kernel)))
      return signalPassFailure();
    // Options are user input: 0 (or -1 for q-in-regs) means "search", any
    // other value must be a real pin.
    for (auto [name, value] : {std::pair<StringRef, int64_t>{"tile-m", tileM},
                               {"tile-n", tileN},
                               {"stages", stages},
                               {"warps", warps},
                               {"kv-warps", kvWarps}})
      if (value < 0) {
        kernel.emitError() << "attn-select-config option " << name
                           << " = " << value
                           << " is invalid: give a positive value, or 0 to "
                              "search";
        return signalPassFailure();
      }
    if (qInRegs < -1 || qInRegs > 1) {
      kernel.emitError() << "attn-select-config option q-in-regs = "
                         << int(qInRegs)
                         << " is invalid: give 0 or 1, or -1 to search";
      return signalPassFailure();
    }
    std::optional<ConfigFamily> kernelFamily = parseConfigFamily(family);
    if (!kernelFamily) {
      kernel.emitError() << "attn-select-config option family = '" << family
                         << "' is invalid: give prefill or decode";
      return signalPassFailure();
    }
    if (kernel.getConfigAttr())
      return;

    ConfigOverrides overrides;
    auto pin = [](int64_t value) {
      return value > 0 ? std::optional<int64_t>(value) : std::nullopt;
    };
    overrides.tileM = pin(tileM);
    overrides.tileN = pin(tileN);
    overrides.stages = pin(stages);
    overrides.warps = pin(warps);
    overrides.kvWarps = pin(kvWarps);
    overrides.family = *kernelFamily;
    if (qInRegs >= 0)
      overrides.qInRegs = qInRegs != 0;

    if (explain)
      for (const ConfigCandidate &c : rankConfigs(kernel, overrides)) {
        if (c.isFeasible())
          kernel.emitRemark()
              << formatConfig(c.config) << ": score " << llvm::formatv("{0:F3}", c.score)
              << ", " << c.smemBytes << " B smem, ~" << c.estimatedRegs
              << " regs, " << c.blocksPerSM << " block(s) = "
              << c.residentWarps << " warps per SM";
        else
          kernel.emitRemark() << formatConfig(c.config) << ": rejected, "
                              << c.rejection;
      }

    FailureOr<ConfigAttr> config = selectConfig(kernel, overrides);
    if (failed(config))
      return signalPassFailure();
    kernel.setConfigAttr(*config);
  }
};
} // namespace
