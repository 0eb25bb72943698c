//===- HookGradientTest.cpp - differentiateScoreMod against numbers -------===//
//
// Each score_mod is differentiated at a constant score and constant
// indices, and MLIR's folders evaluate what differentiateScoreMod emitted:
// the adjoint (with seed 1) must match a central difference of the
// re-emitted forward, and of the hook itself, within f32's reach. Reads of
// differentiated tensors get their adjoints; an op without a rule is
// refused at the op.
//
//===----------------------------------------------------------------------===//

#include "flashtile/Dialect/Attn/Analysis/HookGradient.h"
#include "flashtile/Dialect/Attn/IR/Attn.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Transforms/FoldUtils.h"
#include "gtest/gtest.h"

#include <cmath>
#include <optional>

using namespace mlir;
using namespace flashtile::attn;

namespace {
class HookGradientTest : public ::testing::Test {
protected:
  HookGradientTest() {
    ctx.loadDialect<AttnDialect, arith::ArithDialect, math::MathDialect,
                    memref::MemRefDialect>();
  }

  /// A kernel whose attention's score_mod is `body` (arguments %s: f32,
  /// %b, %h, %q, %k: index; it ends in attn.yield), with one extra tensor
  /// %w: a per-head f32 vector.
  AttentionOp parse(llvm::StringRef body, bool verify = true) {
    std::string t = "!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>\n"
                    "!w = memref<?xf32, strided<[?]>>\n"
                    "attn.kernel @k arch(#attn.arch<sm_120>) attributes "
                    "{arg_names = [\"w\"]} {\n"
                    "^bb0(%q0: !t, %k0: !t, %v0: !t, %o0: !t, "
                    "%lse: memref<?x?x?xf32>, %w: !w):\n"
                    "  attn.attention %q0, %k0, %v0 -> %o0, %lse : !t, !t, !t "
                    "-> !t, memref<?x?x?xf32> score_mod {\n"
                    "  ^bb0(%s: f32, %b: index, %h: index, %q: index, "
                    "%k: index):\n";
    t += body.str();
    t += "\n  }\n}\n";
    kernels = parseSourceString<ModuleOp>(
        t, ParserConfig(&ctx, /*verifyAfterParse=*/verify));
    if (!kernels)
      return nullptr;
    AttentionOp attention;
    kernels->walk([&](AttentionOp op) { attention = op; });
    return attention;
  }

  /// (f(s), seed * df/ds, the reads' adjoints) at score `s` and (q, k) =
  /// (7, 3), evaluated by folding; nullopt where something did not fold to
  /// a constant.
  struct Values {
    std::optional<double> score, adjoint;
    std::vector<std::optional<double>> reads;
  };
  std::optional<Values> evaluate(AttentionOp attention, double s,
                                 bool differentiateW = false) {
    scratch = ModuleOp::create(UnknownLoc::get(&ctx));
    OpBuilder b = OpBuilder::atBlockEnd(scratch->getBody());
    Location loc = b.getUnknownLoc();
    auto index = [&](int64_t v) {
      return arith::ConstantIndexOp::create(b, loc, v).getResult();
    };
    SmallVector<Value> args = {
        arith::ConstantOp::create(b, loc, b.getF32FloatAttr(s)), index(0),
        index(1), index(7), index(3)};
    Value seed = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(1.0f));
    FailureOr<ScoreModGradient> g = differentiateScoreMod(
        b, attention.getScoreMod(), args, seed,
        [&](Value) { return differentiateW; });
    if (failed(g))
      return std::nullopt;
    SmallVector<Value> anchored = {g->score, g->scoreAdjoint};
    for (const TensorReadAdjoint &r : g->reads)
      anchored.push_back(r.adjoint);
    SmallVector<Type> types(anchored.size(), b.getF32Type());
    auto anchor = UnrealizedConversionCastOp::create(b, loc, types, anchored);
    // Fold in order (operands first): the anchor keeps what it reads.
    OperationFolder folder(&ctx);
    SmallVector<Operation *> ops;
    for (Operation &op : *scratch->getBody())
      if (&op != anchor)
        ops.push_back(&op);
    for (Operation *op : ops)
      if (failed(folder.tryToFold(op)))
        foldByHand(op);
    auto constant = [](Value v) -> std::optional<double> {
      auto c = v.getDefiningOp<arith::ConstantOp>();
      if (!c)
        return std::nullopt;
      return cast<FloatAttr>(c.getValue()).getValueAsDouble();
    };
    Values out;
    out.score = constant(anchor.getOperand(0));
    out.adjoint = constant(anchor.getOperand(1));
    for (unsigned i = 2; i < anchor.getNumOperands(); ++i)
      out.reads.push_back(constant(anchor.getOperand(i)));
    return out;
  }

  /// The math ops MLIR does not fold (rsqrt, fma), on constants.
  void foldByHand(Operation *op) {
    auto value = [](Value v) -> std::optional<double> {
      if (auto c = v.getDefiningOp<arith::ConstantOp>())
        return cast<FloatAttr>(c.getValue()).getValueAsDouble();
      return std::nullopt;
    };
    std::optional<double> result;
    if (auto rsqrt = dyn_cast<math::RsqrtOp>(op)) {
      if (auto x = value(rsqrt.getOperand()))
        result = 1 / std::sqrt(static_cast<float>(*x));
    } else if (auto fma = dyn_cast<math::FmaOp>(op)) {
      auto x = value(fma.getA()), y = value(fma.getB()),
           z = value(fma.getC());
      if (x && y && z)
        result = std::fma(static_cast<float>(*x), static_cast<float>(*y),
                          static_cast<float>(*z));
    }
    if (!result)
      return;
    OpBuilder b(op);
    Value c = arith::ConstantOp::create(
        b, op->getLoc(), b.getF32FloatAttr(static_cast<float>(*result)));
    op->getResult(0).replaceAllUsesWith(c);
    op->erase();
  }

  /// Checks df/ds at `s` against a central difference of f (both as
  /// emitted) and against `expected`, the hand-derived value.
  void checkDerivative(llvm::StringRef body, double s, double expected) {
    SCOPED_TRACE(body.str());
    AttentionOp attention = parse(body);
    ASSERT_TRUE(attention);
    std::optional<Values> at = evaluate(attention, s);
    ASSERT_TRUE(at && at->score && at->adjoint) << "did not fold";
    double h = 1e-2 * std::max(1.0, std::abs(s));
    std::optional<Values> up = evaluate(attention, s + h);
    std::optional<Values> down = evaluate(attention, s - h);
    ASSERT_TRUE(up && up->score && down && down->score);
    double difference = (*up->score - *down->score) / (2 * h);
    double scale = std::max(1.0, std::abs(expected));
    EXPECT_NEAR(*at->adjoint, expected, 1e-5 * scale);
    EXPECT_NEAR(*at->adjoint, difference, 2e-3 * scale);
  }

  MLIRContext ctx;
  OwningOpRef<ModuleOp> kernels;
  // Declared after `kernels`, so destroyed first: its ops use the kernel's
  // tensors.
  OwningOpRef<ModuleOp> scratch;
};
} // namespace

TEST_F(HookGradientTest, Softcap) {
  // 50 tanh(s / 50): 1 - tanh^2(s / 50).
  double s = 37.0, t = std::tanh(s / 50);
  checkDerivative(R"mlir(
    %c = arith.constant 5.000000e+01 : f32
    %0 = arith.divf %s, %c : f32
    %1 = math.tanh %0 : f32
    %2 = arith.mulf %1, %c : f32
    attn.yield %2 : f32)mlir",
                  s, 1 - t * t);
}

TEST_F(HookGradientTest, IndexTermsAreConstants) {
  // ALiBi-like: s - 0.5 (k - q): the index path carries no gradient.
  checkDerivative(R"mlir(
    %0 = arith.subi %k, %q : index
    %1 = arith.index_cast %0 : index to i32
    %2 = arith.sitofp %1 : i32 to f32
    %c = arith.constant 5.000000e-01 : f32
    %3 = arith.mulf %2, %c : f32
    %4 = arith.subf %s, %3 : f32
    attn.yield %4 : f32)mlir",
                  2.0, 1.0);
}

TEST_F(HookGradientTest, ProductsQuotientsAndSigmoid) {
  // s^2 / 2 + 1 / (1 + e^-s): s + sigmoid(s)(1 - sigmoid(s)).
  double s = -0.8, sig = 1 / (1 + std::exp(-s));
  checkDerivative(R"mlir(
    %half = arith.constant 5.000000e-01 : f32
    %one = arith.constant 1.000000e+00 : f32
    %0 = arith.mulf %s, %s : f32
    %1 = arith.mulf %0, %half : f32
    %2 = arith.negf %s : f32
    %3 = math.exp %2 : f32
    %4 = arith.addf %one, %3 : f32
    %5 = arith.divf %one, %4 : f32
    %6 = arith.addf %1, %5 : f32
    attn.yield %6 : f32)mlir",
                  s, s + sig * (1 - sig));
}

TEST_F(HookGradientTest, PowOfANegativeBase) {
  // s^3 at s = -1.5: 3 s^2 = 6.75, where the forward's pow is exact.
  checkDerivative(R"mlir(
    %c = arith.constant 3.000000e+00 : f32
    %0 = math.powf %s, %c : f32
    attn.yield %0 : f32)mlir",
                  -1.5, 6.75);
}

TEST_F(HookGradientTest, BranchesTakeTheirSide) {
  // Leaky ReLU, then max with -1: 0.1 on the negative side (s = -2 gives
  // -0.2 > -1), 1 on the positive side.
  const char *body = R"mlir(
    %zero = arith.constant 0.000000e+00 : f32
    %slope = arith.constant 1.000000e-01 : f32
    %floor = arith.constant -1.000000e+00 : f32
    %0 = arith.cmpf ogt, %s, %zero : f32
    %1 = arith.mulf %s, %slope : f32
    %2 = arith.select %0, %s, %1 : f32
    %3 = arith.maxnumf %2, %floor : f32
    attn.yield %3 : f32)mlir";
  checkDerivative(body, -2.0, 0.1);
  checkDerivative(body, 3.0, 1.0);
  // Below -10 the max takes the constant: no gradient.
  checkDerivative(body, -20.0, 0.0);
}

TEST_F(HookGradientTest, EveryMathRule) {
  // sqrt|s| + log(s^2 + 1) + rsqrt(s^2 + 2) + erf(s) + sin(s) + cos(s)
  //   + exp2(s) + log2(s^2 + 1) + fma(s, s, 1) + floor(s) + min(s, 0)
  double s = -0.7, u = s * s + 1, r = s * s + 2;
  double expected = -0.5 / std::sqrt(-s) + 2 * s / u -
                    s * std::pow(r, -1.5) +
                    2 / std::sqrt(M_PI) * std::exp(-s * s) + std::cos(s) -
                    std::sin(s) + std::exp2(s) * M_LN2 +
                    2 * s / (u * M_LN2) + 2 * s + 0 + 1;
  checkDerivative(R"mlir(
    %one = arith.constant 1.000000e+00 : f32
    %two = arith.constant 2.000000e+00 : f32
    %zero = arith.constant 0.000000e+00 : f32
    %a = math.absf %s : f32
    %0 = math.sqrt %a : f32
    %ss = arith.mulf %s, %s : f32
    %u = arith.addf %ss, %one : f32
    %1 = math.log %u : f32
    %r = arith.addf %ss, %two : f32
    %2 = math.rsqrt %r : f32
    %3 = math.erf %s : f32
    %4 = math.sin %s : f32
    %5 = math.cos %s : f32
    %6 = math.exp2 %s : f32
    %7 = math.log2 %u : f32
    %8 = math.fma %s, %s, %one : f32
    %9 = math.floor %s : f32
    %10 = arith.minimumf %s, %zero : f32
    %t0 = arith.addf %0, %1 : f32
    %t1 = arith.addf %t0, %2 : f32
    %t2 = arith.addf %t1, %3 : f32
    %t3 = arith.addf %t2, %4 : f32
    %t4 = arith.addf %t3, %5 : f32
    %t5 = arith.addf %t4, %6 : f32
    %t6 = arith.addf %t5, %7 : f32
    %t7 = arith.addf %t6, %8 : f32
    %t8 = arith.addf %t7, %9 : f32
    %t9 = arith.addf %t8, %10 : f32
    attn.yield %t9 : f32)mlir",
                  s, expected);
}

TEST_F(HookGradientTest, AScoreModWithoutTheScoreHasNoGradient) {
  checkDerivative(R"mlir(
    %c = arith.constant 2.000000e+00 : f32
    attn.yield %c : f32)mlir",
                  1.0, 0.0);
}

TEST_F(HookGradientTest, DifferentiatedReadsGetTheirAdjoints) {
  // s * w[h] + w[h]: d/ds = w[h] (not foldable: it is a read), and each
  // read's adjoint: s for the first, 1 for the second.
  AttentionOp attention = parse(R"mlir(
    %0 = memref.load %w[%h] : !w
    %1 = arith.mulf %s, %0 : f32
    %2 = memref.load %w[%h] : !w
    %3 = arith.addf %1, %2 : f32
    attn.yield %3 : f32)mlir");
  ASSERT_TRUE(attention);
  std::optional<Values> v = evaluate(attention, 0.375, /*differentiateW=*/true);
  ASSERT_TRUE(v);
  ASSERT_EQ(v->reads.size(), 2u);
  EXPECT_EQ(v->reads[0], 0.375);
  EXPECT_EQ(v->reads[1], 1.0);
  EXPECT_FALSE(v->adjoint) << "d/ds is w[h], a read";
  // Without differentiating w, no reads are reported.
  v = evaluate(attention, 0.375, /*differentiateW=*/false);
  ASSERT_TRUE(v);
  EXPECT_TRUE(v->reads.empty());
}

TEST_F(HookGradientTest, AnOpWithoutARuleIsRefusedAtTheOp) {
  // Outside the hook contract (the verifier refuses it; unverified here):
  // on the path from the score, it has no rule.
  AttentionOp attention = parse(R"mlir(
    %0 = math.atan %s : f32
    attn.yield %0 : f32)mlir",
                                /*verify=*/false);
  ASSERT_TRUE(attention);
  std::string errors;
  unsigned line = 0;
  ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &d) {
    errors += d.str() + "\n";
    if (auto at = dyn_cast<FileLineColLoc>(d.getLocation()))
      line = at.getLine();
    return success();
  });
  EXPECT_FALSE(evaluate(attention, 0.5));
  EXPECT_NE(errors.find("'math.atan' op has no derivative rule"),
            std::string::npos)
      << errors;
  EXPECT_EQ(line, 8u) << "the error is at the op's line";
}

TEST_F(HookGradientTest, TheHookOpsLoweringTestDifferentiates) {
  // Inputs/hook-all-ops.mlir holds every op of the hook contract
  // (HooksTest checks it): each of its score_mods, with every tensor read
  // differentiated, has a gradient.
  OwningOpRef<ModuleOp> all = parseSourceFile<ModuleOp>(
      FLASHTILE_SOURCE_DIR "/test/Compiler/Inputs/hook-all-ops.mlir", &ctx);
  ASSERT_TRUE(all);
  int differentiated = 0;
  all->walk([&](AttentionOp attention) {
    if (attention.getScoreMod().empty())
      return;
    scratch = ModuleOp::create(UnknownLoc::get(&ctx));
    OpBuilder b = OpBuilder::atBlockEnd(scratch->getBody());
    Location loc = b.getUnknownLoc();
    SmallVector<Value> args = {
        arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.5f))};
    for (int i = 0; i < 4; ++i)
      args.push_back(arith::ConstantIndexOp::create(b, loc, i));
    Value seed = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(1.0f));
    EXPECT_TRUE(succeeded(differentiateScoreMod(
        b, attention.getScoreMod(), args, seed, [](Value) { return true; })));
    scratch = nullptr;
    ++differentiated;
  });
  EXPECT_GT(differentiated, 0);
}
