//===- ConfigSelectionTest.cpp - Config search on sm_120 ------------------===//

#include "flashtile/DSL/FlashAttention.h"
#include "flashtile/Dialect/Attn/Analysis/SharedMemoryAllocation.h"
#include "flashtile/Dialect/Attn/Transforms/ConfigSelection.h"
#include "flashtile/Dialect/Attn/Transforms/ExpandToTiles.h"

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
        int64_t bytes = planBytes(kernel, *config);
        EXPECT_LE(bytes, sm120.smemPerBlock)
            << "d=" << headDim << " causal=" << causal;
        EXPECT_GE(blocksPerSMBySmem(sm120, bytes), 1);
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

TEST_F(ConfigSelectionTest, RankingPutsFeasibleFirstBestFirst) {
  KernelOp kernel = build({});
  SmallVector<ConfigCandidate> ranked = rankConfigs(kernel, {});
  bool seenInfeasible = false;
  double lastScore = 2.0;
  for (const ConfigCandidate &c : ranked) {
    if (!c.isFeasible()) {
      seenInfeasible = true;
      continue;
    }
    EXPECT_FALSE(seenInfeasible) << "feasible after infeasible";
    EXPECT_LE(c.score, lastScore);
    lastScore = c.score;
  }
  EXPECT_TRUE(seenInfeasible) << "sm_120 must reject 2-stage 128x128 at d=128";
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
