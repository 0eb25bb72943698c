//===- flashtile-opt.cpp - Runs attn passes for testing -------------------===//
//
// mlir-opt with the attn dialect and passes, for lit tests and for reading
// what each pass does:
//
//   flashtile-opt kernel.mlir --pass-pipeline='builtin.module(attn.kernel(
//       attn-select-config, attn-expand-to-tiles, attn-allocate-shared-memory,
//       attn-insert-barriers))'
//
//===----------------------------------------------------------------------===//

#include "flashtile/Conversion/Passes.h"
#include "flashtile/Dialect/Attn/IR/Attn.h"
#include "flashtile/Dialect/Attn/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  registry.insert<flashtile::attn::AttnDialect, mlir::arith::ArithDialect,
                  mlir::LLVM::LLVMDialect, mlir::NVVM::NVVMDialect>();
  flashtile::attn::registerAttnPasses();
  flashtile::registerConversionPasses();
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "FlashTile pass driver for testing\n", registry));
}
