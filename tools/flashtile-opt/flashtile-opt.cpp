//===- flashtile-opt.cpp - Runs attn passes and pipelines -----------------===//
//
// mlir-opt with the attn dialect, its passes and the compiler's named
// pipelines, for lit tests and for reading what each pass does:
//
//   flashtile-opt kernel.mlir --pass-pipeline='builtin.module(attn.kernel(
//       attn-to-tiles{tile-n=64}))'
//   flashtile-opt kernel.mlir --attn-to-nvvm
//
//===----------------------------------------------------------------------===//

#include "flashtile/Compiler/Compiler.h"
#include "flashtile/Conversion/Passes.h"
#include "flashtile/Dialect/Attn/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  registry.insert<flashtile::attn::AttnDialect, mlir::arith::ArithDialect,
                  mlir::math::MathDialect, mlir::memref::MemRefDialect,
                  mlir::LLVM::LLVMDialect, mlir::NVVM::NVVMDialect>();
  flashtile::attn::registerAttnPasses();
  flashtile::registerConversionPasses();
  flashtile::registerPipelines();
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "FlashTile pass driver for testing\n", registry));
}
