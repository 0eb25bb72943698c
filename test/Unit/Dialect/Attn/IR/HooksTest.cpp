//===- HooksTest.cpp - The hook-op list against the lowering's test ------===//
//
// Every op the hook contract admits (isSupportedHookOp) must lower: the
// lit test Compiler/hook-all-ops.test compiles Inputs/hook-all-ops.mlir to
// PTX, so that file must contain each of them. An op added to the list
// without a case in that file (and so perhaps none in HookEmitter) fails
// here.
//
//===----------------------------------------------------------------------===//

#include "flashtile/Dialect/Attn/IR/Attn.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/ADT/StringSet.h"
#include "gtest/gtest.h"

using namespace mlir;
using namespace flashtile::attn;

TEST(HooksTest, EveryHookOpIsInTheLoweringTest) {
  MLIRContext ctx;
  ctx.loadDialect<AttnDialect, arith::ArithDialect, math::MathDialect,
                  memref::MemRefDialect>();
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(
      FLASHTILE_SOURCE_DIR "/test/Compiler/Inputs/hook-all-ops.mlir", &ctx);
  ASSERT_TRUE(module) << "hook-all-ops.mlir does not parse";
  llvm::StringSet<> used;
  module->walk([&](AttentionOp attention) {
    attention->walk([&](Operation *op) {
      if (op != attention)
        used.insert(op->getName().getStringRef());
    });
  });
  for (StringRef name : getSupportedHookOpNames()) {
    // The compiler makes attn.kernel_arg from the hooks' reads of kernel
    // arguments (the file's memref.load of its extra tensors); no hook is
    // written with it.
    if (name == KernelArgOp::getOperationName())
      continue;
    EXPECT_TRUE(used.contains(name))
        << name.str() << " is a supported hook op, but hook-all-ops.mlir "
        << "does not use it, so no test shows it lowers";
  }
  // And the file uses nothing else: the list is what the lowering takes.
  for (const auto &entry : used) {
    llvm::SmallVector<StringRef> names = getSupportedHookOpNames();
    EXPECT_TRUE(llvm::is_contained(names, entry.getKey()))
        << entry.getKey().str() << " is used in a hook but not listed";
  }
}
