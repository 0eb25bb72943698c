//===- DSLTest.cpp - The C++ DSL builds valid kernels ---------------------===//

#include "flashtile/DSL/FlashAttention.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "gtest/gtest.h"

using namespace mlir;
using namespace flashtile;
using namespace flashtile::attn;

namespace {
class DSLTest : public ::testing::Test {
protected:
  DSLTest() {
    ctx.loadDialect<AttnDialect, arith::ArithDialect>();
    module = ModuleOp::create(UnknownLoc::get(&ctx));
  }
  MLIRContext ctx;
  OwningOpRef<ModuleOp> module;
};
} // namespace

TEST_F(DSLTest, BuildsTheSpecAsAKernel) {
  dsl::AttentionSpec spec;
  spec.name = "fa_bf16";
  spec.dtype = dsl::DType::BF16;
  spec.headDim = 192;
  spec.headDimV = 128;
  spec.causal = true;
  spec.softmaxScale = 0.5f;
  FailureOr<KernelOp> kernel =
      dsl::buildAttentionKernel(*module, spec, UnknownLoc::get(&ctx));
  ASSERT_TRUE(succeeded(kernel));
  EXPECT_EQ(kernel->getSymName(), "fa_bf16");
  EXPECT_EQ(kernel->getArch().getChip(), Chip::sm_120);
  auto q = cast<MemRefType>(kernel->getQ().getType());
  auto v = cast<MemRefType>(kernel->getV().getType());
  EXPECT_TRUE(q.getElementType().isBF16());
  EXPECT_EQ(q.getDimSize(3), 192);
  EXPECT_EQ(v.getDimSize(3), 128);
  AttentionOp attention =
      *kernel->getBodyBlock().getOps<AttentionOp>().begin();
  EXPECT_TRUE(attention.getCausal());
  EXPECT_EQ(attention.getEffectiveWindow(), std::make_pair(int64_t(-1),
                                                           int64_t(0)));
  EXPECT_FLOAT_EQ(attention.getScale(), 0.5f);
}

TEST_F(DSLTest, DefaultScaleIsInverseSqrtHeadDim) {
  dsl::AttentionSpec spec;
  spec.headDim = 64;
  FailureOr<KernelOp> kernel =
      dsl::buildAttentionKernel(*module, spec, UnknownLoc::get(&ctx));
  ASSERT_TRUE(succeeded(kernel));
  AttentionOp attention =
      *kernel->getBodyBlock().getOps<AttentionOp>().begin();
  EXPECT_FLOAT_EQ(attention.getScale(), 0.125f);
}

TEST_F(DSLTest, ImpossibleHeadDimIsADiagnosticNotAKernel) {
  std::string message;
  ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &diag) {
    message = diag.str();
    return success();
  });
  dsl::AttentionSpec spec;
  spec.headDim = 100;
  EXPECT_TRUE(failed(
      dsl::buildAttentionKernel(*module, spec, UnknownLoc::get(&ctx))));
  EXPECT_NE(message.find("head_dim = 100 is not supported"), std::string::npos)
      << message;
  EXPECT_TRUE(module->getBody()->empty());
}
