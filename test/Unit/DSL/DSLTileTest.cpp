//===- DSLTileTest.cpp - Tile programs from the C++ DSL -------------------===//

#include "flashtile/Compiler/Compiler.h"
#include "flashtile/DSL/Tile.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "gtest/gtest.h"

#include <string>

using namespace mlir;
using namespace flashtile;
using namespace flashtile::attn;
using namespace flashtile::dsl;

namespace {
class DSLTileTest : public ::testing::Test {
protected:
  DSLTileTest() {
    registerCompilerDialects(ctx);
    module = ModuleOp::create(UnknownLoc::get(&ctx));
    spec.name = "tile";
    spec.dtype = DType::BF16;
    spec.headDim = 64;
    spec.tileM = 64;
    spec.tileN = 32;
    spec.warps = 4;
  }

  /// Builds `spec`; on failure the diagnostics, with their locations, are
  /// in `errors`.
  FailureOr<KernelOp> build() {
    ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &d) {
      std::string s;
      llvm::raw_string_ostream os(s);
      os << d.getLocation() << ": " << d;
      errors += s + "\n";
      return success();
    });
    return buildTileKernel(*module, spec, UnknownLoc::get(&ctx));
  }

  /// A whole program: O = sum_j exp(S_j - 8) V_j over the block's tiles.
  void writeProgram() {
    spec.body = [](TileProgram &t) {
      KernelOp kernel = t.getKernel();
      Value qs = t.buffer("Q", 1, 64, 64), ks = t.buffer("K", 1, 32, 64);
      Value vs = t.buffer("V", 1, 32, 64), os = t.buffer("O", 1, 64, 64);
      TileBuilder::Block blk = t.blockContext();
      TileBuilder::TileRange r = t.kvBounds(blk, 64, 32, -1, -1);
      t.copy(kernel.getQ(), blk.batch, blk.mBlock, blk.head, qs);
      Value qf = t.load(qs);
      Value acc = t.splat({64, 64}, t.builder().getF32Type(), 0.0f);
      acc = t.loop(r.unmaskedBegin, r.end, {acc}, /*masked=*/false,
                   [&](Value j, ValueRange c) -> SmallVector<Value> {
                     t.copy(kernel.getK(), blk.batch, j, blk.kvHead, ks);
                     t.copy(kernel.getV(), blk.batch, j, blk.kvHead, vs);
                     Value s = t.dot(qf, ks, j);
                     Value p = t.map({s}, [](ArrayRef<Expr> x, Expr, Expr) {
                       return exp(x[0] - 8.0f);
                     });
                     // An f32 P: the builder converts it.
                     return {t.dotAccumulate(p, vs, j, c[0])};
                   })[0];
      t.store(acc, os, blk);
    };
  }

  MLIRContext ctx;
  OwningOpRef<ModuleOp> module;
  TileKernelSpec spec;
  std::string errors;
};
} // namespace

TEST_F(DSLTileTest, ProgramBuildsAndCompiles) {
  writeProgram();
  FailureOr<KernelOp> kernel = build();
  ASSERT_TRUE(succeeded(kernel)) << errors;
  EXPECT_TRUE(isTileProgram(*kernel));
  EXPECT_EQ(kernel->getConfigAttr().getTileN(), 32);
  // The program has no sync; the compile API places them and lowers it.
  int syncs = 0;
  kernel->walk(
      [&](Operation *op) { syncs += isa<AsyncWaitOp, BarrierOp>(op); });
  EXPECT_EQ(syncs, 0);
  // The f32 P became the mma's A operand through an attn.convert.
  int converts = 0;
  kernel->walk([&](ConvertOp op) {
    ++converts;
    EXPECT_TRUE(op.getResult().getType().getElementType().isBF16());
  });
  EXPECT_EQ(converts, 1);
  CompileOptions options;
  options.stopAfter = CompileStage::Ptx;
  FailureOr<CompiledKernel> compiled = compile(*module, options);
  ASSERT_TRUE(succeeded(compiled));
  EXPECT_NE(compiled->ptx.find("cp.async.wait_group"), std::string::npos);
  EXPECT_NE(compiled->ptx.find("bar.sync"), std::string::npos);
  syncs = 0;
  compiled->getTileKernel().walk(
      [&](Operation *op) { syncs += isa<AsyncWaitOp, BarrierOp>(op); });
  EXPECT_GT(syncs, 0);
}

TEST_F(DSLTileTest, ShapeErrorNamesTheUsersLine) {
  unsigned line = 0;
  spec.body = [&](TileProgram &t) {
    Value a = t.splat({64, 24}, t.builder().getF32Type(), 1.0f);
    line = __LINE__ + 1;
    t.convert(a, t.getElementType());
  };
  EXPECT_TRUE(failed(build()));
  EXPECT_NE(errors.find("DSLTileTest.cpp\":" + std::to_string(line) + ":"),
            std::string::npos)
      << errors;
  EXPECT_NE(errors.find("source has 24 columns; an mma A operand needs a "
                        "multiple of 16"),
            std::string::npos)
      << errors;
  // A failed build leaves nothing behind.
  EXPECT_TRUE(module->getOps<KernelOp>().empty());
}

TEST_F(DSLTileTest, MapTypeErrorIsTheTracersError) {
  spec.body = [&](TileProgram &t) {
    Value s = t.splat({64, 32}, t.builder().getF32Type(), 1.0f);
    t.map({s}, [&](ArrayRef<Expr> x, Expr row, Expr col) {
      return x[0] + (row < col); // a score and a condition
    });
  };
  EXPECT_TRUE(failed(build()));
  EXPECT_NE(errors.find("map"), std::string::npos) << errors;
  EXPECT_NE(errors.find("where()"), std::string::npos) << errors;
  EXPECT_TRUE(module->getOps<KernelOp>().empty());
}
