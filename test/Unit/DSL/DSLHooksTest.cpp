//===- DSLHooksTest.cpp - Hook lambdas trace into hook regions ------------===//

#include "flashtile/DSL/Compile.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "gtest/gtest.h"

#include <string>

using namespace mlir;
using namespace flashtile;
using namespace flashtile::attn;
using namespace flashtile::dsl;

namespace {
class DSLHooksTest : public ::testing::Test {
protected:
  DSLHooksTest() {
    registerCompilerDialects(ctx);
    module = ModuleOp::create(UnknownLoc::get(&ctx));
    spec.dtype = DType::BF16;
    spec.headDim = 64;
  }

  /// Builds `spec`; on failure, the diagnostics (with their locations) are
  /// in `errors`.
  FailureOr<KernelOp> build() {
    ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &d) {
      std::string s;
      llvm::raw_string_ostream os(s);
      os << d.getLocation() << ": " << d;
      errors += s + "\n";
      return success();
    });
    return buildAttentionKernel(*module, spec, UnknownLoc::get(&ctx));
  }

  AttentionOp attentionOf(KernelOp kernel) {
    return *kernel.getBodyBlock().getOps<AttentionOp>().begin();
  }

  MLIRContext ctx;
  OwningOpRef<ModuleOp> module;
  AttentionSpec spec;
  std::string errors;
};
} // namespace

TEST_F(DSLHooksTest, SoftcapTracesToTanh) {
  spec.scoreMod = [](Score s, Idx b, Idx h, Idx q, Idx k) {
    return 50.f * tanh(s / 50.f);
  };
  FailureOr<KernelOp> kernel = build();
  ASSERT_TRUE(succeeded(kernel)) << errors;
  Region &hook = attentionOf(*kernel).getScoreMod();
  ASSERT_FALSE(hook.empty());
  Block &block = hook.front();
  EXPECT_EQ(block.getNumArguments(), 5u);
  int tanhs = 0, divs = 0, muls = 0;
  for (Operation &op : block) {
    tanhs += isa<math::TanhOp>(op);
    divs += isa<arith::DivFOp>(op);
    muls += isa<arith::MulFOp>(op);
  }
  EXPECT_EQ(tanhs, 1);
  EXPECT_EQ(divs, 1);
  EXPECT_EQ(muls, 1);
  // The result of the hook is the product.
  auto yield = cast<YieldOp>(block.getTerminator());
  EXPECT_TRUE(isa<arith::MulFOp>(yield.getValues()[0].getDefiningOp()));
  EXPECT_TRUE(attentionOf(*kernel).getMaskMod().empty());
}

TEST_F(DSLHooksTest, DocumentMaskReadsTheDeclaredTensor) {
  Tensor docIds = spec.addTensor("doc_ids", DType::I32, 1);
  spec.causal = true;
  spec.maskMod = [=](Idx b, Idx h, Idx q, Idx k) {
    return docIds[q] == docIds[k];
  };
  FailureOr<KernelOp> kernel = build();
  ASSERT_TRUE(succeeded(kernel)) << errors;
  ASSERT_EQ(kernel->getExtraArgs().size(), 1u);
  EXPECT_EQ(kernel->getExtraArgName(0), "doc_ids");
  Block &block = attentionOf(*kernel).getMaskMod().front();
  int loads = 0;
  for (Operation &op : block)
    if (auto load = dyn_cast<memref::LoadOp>(op)) {
      ++loads;
      EXPECT_EQ(load.getMemRef(), kernel->getExtraArgs()[0]);
    }
  EXPECT_EQ(loads, 2);
  auto yield = cast<YieldOp>(block.getTerminator());
  auto cmp = dyn_cast<arith::CmpIOp>(yield.getValues()[0].getDefiningOp());
  ASSERT_TRUE(cmp);
  EXPECT_EQ(cmp.getPredicate(), arith::CmpIPredicate::eq);
}

TEST_F(DSLHooksTest, ScalarsSizesAndLogic) {
  Scalar prefix = spec.addScalar("prefix_len", DType::I32);
  spec.maskMod = [=](Idx b, Idx h, Idx q, Idx k) {
    return (k <= q || k < prefix) && !(k >= seqlenK());
  };
  FailureOr<KernelOp> kernel = build();
  ASSERT_TRUE(succeeded(kernel)) << errors;
  Block &block = attentionOf(*kernel).getMaskMod().front();
  int sizes = 0, ors = 0, ands = 0, xors = 0;
  for (Operation &op : block) {
    if (auto size = dyn_cast<SizeOp>(op)) {
      ++sizes;
      EXPECT_EQ(size.getName(), "seqlen_k");
    }
    ors += isa<arith::OrIOp>(op);
    ands += isa<arith::AndIOp>(op);
    xors += isa<arith::XOrIOp>(op);
  }
  EXPECT_EQ(sizes, 1);
  EXPECT_EQ(ors, 1);
  EXPECT_EQ(ands, 1);
  EXPECT_EQ(xors, 1);
}

// The Python front end's rule (torch's): an index meeting a score becomes
// a float, with the conversion toFloat() emits.
TEST_F(DSLHooksTest, ScoreTimesIndexPromotesTheIndex) {
  Tensor slopes = spec.addTensor("slopes", DType::F32, 1);
  spec.scoreMod = [=](Score s, Idx b, Idx h, Idx q, Idx k) {
    return s + slopes(h) * (k - q) + q * 0.5f;
  };
  FailureOr<KernelOp> kernel = build();
  ASSERT_TRUE(succeeded(kernel)) << errors;
  int conversions = 0;
  for (Operation &op : attentionOf(*kernel).getScoreMod().front())
    conversions += isa<arith::SIToFPOp>(op);
  EXPECT_EQ(conversions, 2);
}

TEST_F(DSLHooksTest, MixingScoreAndConditionIsAnErrorAtTheUsersLine) {
  Tensor slopes = spec.addTensor("slopes", DType::F32, 1);
  // The read below captures this file and line.
  int line = __LINE__ + 2;
  spec.scoreMod = [=](Score s, Idx b, Idx h, Idx q, Idx k) {
    return s + slopes(h) * (k > q);
  };
  EXPECT_TRUE(failed(build()));
  EXPECT_NE(errors.find("score_mod: '*' mixes a score (f32) and a condition "
                        "(i1); a condition chooses between values with "
                        "where()"),
            std::string::npos)
      << errors;
  EXPECT_NE(errors.find("DSLHooksTest.cpp\":" + std::to_string(line)),
            std::string::npos)
      << errors;
  // Nothing half-built is left in the module.
  EXPECT_TRUE(module->getBody()->empty());
}

TEST_F(DSLHooksTest, ReturningTheWrongTypeIsAnError) {
  spec.maskMod = [](Idx b, Idx h, Idx q, Idx k) { return k - q; };
  EXPECT_TRUE(failed(build()));
  EXPECT_NE(errors.find("mask_mod: returns an index; it must return a "
                        "condition (i1), e.g. q >= k"),
            std::string::npos)
      << errors;

  errors.clear();
  spec.maskMod = nullptr;
  spec.scoreMod = [](Score s, Idx b, Idx h, Idx q, Idx k) { return q > k; };
  EXPECT_TRUE(failed(build()));
  EXPECT_NE(errors.find("score_mod: returns a condition (i1); it must return "
                        "a score (f32)"),
            std::string::npos)
      << errors;
}

TEST_F(DSLHooksTest, SinkReadsAPerHeadLogit) {
  Tensor sinks = spec.addTensor("sinks", DType::F32, 1);
  spec.causal = true;
  spec.sink = [=](Idx b, Idx h) { return sinks[h]; };
  FailureOr<KernelOp> kernel = build();
  ASSERT_TRUE(succeeded(kernel)) << errors;
  Region &sink = attentionOf(*kernel).getSink();
  ASSERT_FALSE(sink.empty());
  Block &block = sink.front();
  EXPECT_EQ(block.getNumArguments(), 2u);
  auto yield = cast<YieldOp>(block.getTerminator());
  auto load = yield.getValues()[0].getDefiningOp<memref::LoadOp>();
  ASSERT_TRUE(load);
  EXPECT_EQ(load.getIndices()[0], block.getArgument(1));

  errors.clear();
  spec.sink = [](Idx b, Idx h) { return h; };
  EXPECT_TRUE(failed(build()));
  EXPECT_NE(errors.find("sink: returns an index; it must return a logit "
                        "(f32)"),
            std::string::npos)
      << errors;
}

TEST_F(DSLHooksTest, UndeclaredTensorIsAnError) {
  Tensor bias("bias"); // not on the spec
  spec.scoreMod = [=](Score s, Idx b, Idx h, Idx q, Idx k) {
    return s + bias(h, k - q);
  };
  EXPECT_TRUE(failed(build()));
  EXPECT_NE(errors.find("score_mod: tensor 'bias' is used but not declared: "
                        "add it to the spec"),
            std::string::npos)
      << errors;
}

TEST_F(DSLHooksTest, WrongIndexCountAndTypesAreErrors) {
  Tensor bias = spec.addTensor("bias", DType::F32, 2);
  spec.scoreMod = [=](Score s, Idx b, Idx h, Idx q, Idx k) {
    return s + bias(h);
  };
  EXPECT_TRUE(failed(build()));
  EXPECT_NE(errors.find("tensor 'bias' has rank 2 but is read with 1 "
                        "index(es)"),
            std::string::npos)
      << errors;

  errors.clear();
  spec.scoreMod = [=](Score s, Idx b, Idx h, Idx q, Idx k) {
    return s + bias(h, s);
  };
  EXPECT_TRUE(failed(build()));
  EXPECT_NE(errors.find("index 1 of tensor 'bias' is a score (f32); tensor "
                        "indices are indices"),
            std::string::npos)
      << errors;

  errors.clear();
  spec.scoreMod = [=](Score s, Idx b, Idx h, Idx q, Idx k) {
    return s * tanh(q);
  };
  EXPECT_TRUE(failed(build()));
  EXPECT_NE(errors.find("tanh takes a score (f32), got an index; convert it "
                        "with toFloat()"),
            std::string::npos)
      << errors;
}

TEST_F(DSLHooksTest, LiteralsTakeTheOtherOperandsType) {
  spec.scoreMod = [](Score s, Idx b, Idx h, Idx q, Idx k) {
    // 2 next to a score is a float; 8 next to an index is an index.
    return s * 2 + toFloat((k - q) / 8);
  };
  FailureOr<KernelOp> kernel = build();
  ASSERT_TRUE(succeeded(kernel)) << errors;
  int floatConsts = 0, indexConsts = 0;
  for (Operation &op : attentionOf(*kernel).getScoreMod().front())
    if (auto c = dyn_cast<arith::ConstantOp>(op)) {
      floatConsts += c.getType().isF32();
      indexConsts += c.getType().isIndex();
    }
  EXPECT_EQ(floatConsts, 1);
  EXPECT_EQ(indexConsts, 1);

  // A float literal makes an index a float (torch's q * 0.5), and
  // toFloat of a float is that float.
  errors.clear();
  spec.scoreMod = [](Score s, Idx b, Idx h, Idx q, Idx k) {
    return s + toFloat(q * 0.5f);
  };
  kernel = build();
  ASSERT_TRUE(succeeded(kernel)) << errors;
  int floats = 0;
  for (Operation &op : attentionOf(*kernel).getScoreMod().front())
    if (auto c = dyn_cast<arith::ConstantOp>(op))
      floats += c.getType().isF32();
  EXPECT_EQ(floats, 1);
}

TEST_F(DSLHooksTest, HookedSpecCompilesToPTX) {
  Tensor slopes = spec.addTensor("slopes", DType::F32, 1);
  spec.causal = true;
  spec.scoreMod = [=](Score s, Idx b, Idx h, Idx q, Idx k) {
    return s + slopes[h] * toFloat(k - q);
  };
  CompileOptions options;
  options.stopAfter = CompileStage::Ptx;
  FailureOr<CompiledKernel> compiled = compile(ctx, spec, options);
  ASSERT_TRUE(succeeded(compiled));
  EXPECT_NE(compiled->ptx.find("ld.global.nc.b32"), std::string::npos);
}
