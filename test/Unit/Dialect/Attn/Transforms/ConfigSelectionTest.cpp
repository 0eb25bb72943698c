//===- ConfigSelectionTest.cpp - Config search on sm_120 ------------------===//

#include "flashtile/DSL/FlashAttention.h"
#include "flashtile/Dialect/Attn/Analysis/SharedMemoryAllocation.h"
#include "flashtile/Dialect/Attn/Transforms/ConfigSelection.h"
#include "flashtile/Dialect/Attn/Transforms/ExpandToTiles.h"
#include "flashtile/Dialect/Attn/Transforms/PipelineCopies.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "gtest/gtest.h"

using namespace mlir;
using namespace flashtile;
using namespace flashtile::attn;

namespace {
class ConfigSelectionTest : public ::testing::Test {
protected:
  ConfigSelectionTest() {
    ctx.loadDialect<AttnDialect, arith::ArithDialect>();
    module = ModuleOp::create(UnknownLoc::get(&ctx));
  }

  KernelOp build(dsl::AttentionSpec spec) {
    FailureOr<KernelOp> kernel =
        dsl::buildAttentionKernel(*module, spec, UnknownLoc::get(&ctx));
    EXPECT_TRUE(succeeded(kernel));
    return *kernel;
  }

  /// The allocator's total for `config`, on a fresh expansion.
  int64_t planBytes(KernelOp kernel, ConfigAttr config) {
    auto clone = cast<KernelOp>(kernel->clone());
    EXPECT_TRUE(succeeded(expandAttentionToTiles(clone, config)));
    pipelineCopies(clone);
    int64_t bytes = SharedMemoryPlan(clone).getTotalBytes();
    clone->erase();
    return bytes;
  }

  MLIRContext ctx;
  OwningOpRef<ModuleOp> module;
};
} // namespace

TEST_F(ConfigSelectionTest, Sm120AlwaysGetsAFeasibleConfig) {
  const ArchInfo &sm120 = getArchInfo(Chip::sm_120);
  for (dsl::DType dtype : {dsl::DType::F16, dsl::DType::BF16})
    for (int64_t headDim : {64, 96, 128, 192, 256})
      for (bool causal : {false, true}) {
        dsl::AttentionSpec spec;
        spec.dtype = dtype;
        spec.headDim = headDim;
        spec.causal = causal;
        KernelOp kernel = build(spec);
        FailureOr<ConfigAttr> config = selectConfig(kernel, {});
        ASSERT_TRUE(succeeded(config))
            << "d=" << headDim << " causal=" << causal;
        // The allocator already judged feasibility; check its total against
        // what the buffers must take, computed independently: K and V slots
        // (each tile_n x d, 2-byte elements) are live together, and Q, K,
        // V, O together is the most the plan may ever need.
        ConfigAttr c = *config;
        int64_t kv = 2 * c.getTileN() * 2 * headDim * c.getStages();
        int64_t q = c.getTileM() * headDim * 2;
        int64_t all = q + kv + q;
        int64_t bytes = planBytes(kernel, c);
        EXPECT_GE(bytes, kv) << "d=" << headDim;
        EXPECT_LE(bytes, all) << "d=" << headDim;
        EXPECT_LE(bytes, sm120.smemPerBlock) << "d=" << headDim;
        if (c.getQInRegs() && c.getStages() == 1) {
          EXPECT_EQ(bytes, std::max(q, kv / 2) + kv / 2)
              << "with Q in registers V (or O) takes Q's bytes, d=" << headDim;
        }
      }
}

// At d=128 the chosen config keeps at least 8 warps resident per SM: 2
// blocks of 4 warps at <= 49 KiB each, or 1 block of 8 warps.
TEST_F(ConfigSelectionTest, Sm120D128KeepsEightWarpsResident) {
  const ArchInfo &sm120 = getArchInfo(Chip::sm_120);
  for (dsl::DType dtype : {dsl::DType::F16, dsl::DType::BF16})
    for (bool causal : {false, true}) {
      dsl::AttentionSpec spec;
      spec.dtype = dtype;
      spec.causal = causal;
      KernelOp kernel = build(spec);
      SmallVector<ConfigCandidate> ranked = rankConfigs(kernel, {});
      ASSERT_FALSE(ranked.empty());
      const ConfigCandidate &best = ranked.front();
      ASSERT_TRUE(best.isFeasible()) << best.rejection;
      EXPECT_EQ(best.config, *selectConfig(kernel, {}));
      int64_t warps = best.config.getWarps();
      int64_t bytes = planBytes(kernel, best.config);
      int64_t blocks = blocksPerSMBySmem(sm120, bytes);
      bool twoSmallBlocks = warps == 4 && bytes <= 49 * 1024 && blocks >= 2;
      bool oneWideBlock = warps == 8 && blocks >= 1;
      EXPECT_TRUE(twoSmallBlocks || oneWideBlock)
          << "warps=" << warps << " bytes=" << bytes;
      EXPECT_GE(best.residentWarps, 8);
    }
}

/// The rank of `config` in `ranked`, or -1.
static int rankOf(ArrayRef<ConfigCandidate> ranked, int64_t tileM,
                  int64_t tileN, int64_t warps, bool qInRegs) {
  for (auto [i, c] : llvm::enumerate(ranked))
    if (c.isFeasible() && c.config.getTileM() == tileM &&
        c.config.getTileN() == tileN && c.config.getWarps() == warps &&
        c.config.getStages() == 1 && c.config.getQInRegs() == qInRegs)
      return int(i);
  return -1;
}

// The cost model must order configs as the H200 measured them
// (ConfigSelection.h): at d = 128, 128x128 w8 (353 TFLOP/s) > 128x64 w8
// (329) > 128x32 w8 (255); at d = 64, 128x64 w4 (324) > 128x128 w8 (297).
TEST_F(ConfigSelectionTest, RankingFollowsMeasurements) {
  dsl::AttentionSpec d128;
  d128.dtype = dsl::DType::BF16;
  SmallVector<ConfigCandidate> ranked = rankConfigs(build(d128), {});
  int r128x128 = rankOf(ranked, 128, 128, 8, true);
  int r128x64 = rankOf(ranked, 128, 64, 8, true);
  int r128x32 = rankOf(ranked, 128, 32, 8, true);
  ASSERT_GE(r128x128, 0);
  ASSERT_GE(r128x64, 0);
  ASSERT_GE(r128x32, 0);
  EXPECT_LT(r128x128, r128x64);
  EXPECT_LT(r128x64, r128x32);

  dsl::AttentionSpec d64 = d128;
  d64.headDim = 64;
  ranked = rankConfigs(build(d64), {});
  int w4 = rankOf(ranked, 128, 64, 4, true);
  int w8 = rankOf(ranked, 128, 128, 8, true);
  ASSERT_GE(w4, 0);
  ASSERT_GE(w8, 0);
  EXPECT_LT(w4, w8);
  // sm_120 rejects 2-stage 128x128 at d = 128 (160 KiB), with the reason.
  ranked = rankConfigs(build(d128), {});
  bool rejected = false;
  for (const ConfigCandidate &c : ranked)
    rejected |= !c.isFeasible() && c.config.getTileN() == 128 &&
                c.config.getStages() == 2 && !c.config.getQInRegs() &&
                !c.rejection.empty();
  EXPECT_TRUE(rejected);
}

TEST_F(ConfigSelectionTest, PinnedParametersAreHonoured) {
  KernelOp kernel = build({});
  ConfigOverrides pins;
  pins.tileN = 64;
  pins.qInRegs = false;
  FailureOr<ConfigAttr> config = selectConfig(kernel, pins);
  ASSERT_TRUE(succeeded(config));
  EXPECT_EQ(config->getTileN(), 64);
  EXPECT_FALSE(config->getQInRegs());
}

TEST_F(ConfigSelectionTest, InfeasiblePinsReportTheAllocatorsNumbers) {
  KernelOp kernel = build({});
  ConfigOverrides pins;
  pins.tileM = 128;
  pins.tileN = 128;
  pins.stages = 2;
  pins.qInRegs = false;
  std::string messages;
  ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &diag) {
    messages += diag.str() + "\n";
    for (Diagnostic &note : diag.getNotes())
      messages += note.str() + "\n";
    return success();
  });
  EXPECT_TRUE(failed(selectConfig(kernel, pins)));
  EXPECT_NE(messages.find("no feasible config on sm_120"), std::string::npos)
      << messages;
  EXPECT_NE(messages.find("needs 163840 B of shared memory"), std::string::npos)
      << messages;
}
