//===- flashtile-opt.cpp - Runs attn passes and pipelines -----------------===//
//
// mlir-opt with the attn dialect, its passes and the compiler's named
// pipelines, for lit tests and for reading what each pass does:
//
//   flashtile-opt kernel.mlir --pass-pipeline='builtin.module(attn.kernel(
//       attn-to-tiles{tile-n=64}))'
//   flashtile-opt kernel.mlir --attn-to-nvvm
//
// The input is read within the compiler's bounds (flashtile/Compiler/
// Input.h) before MLIR's parser sees it.
//
//===----------------------------------------------------------------------===//

#include "flashtile/Compiler/Compiler.h"
#include "flashtile/Compiler/Input.h"
#include "flashtile/Conversion/Passes.h"
#include "flashtile/Dialect/Attn/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

int main(int argc, char **argv) {
  DialectRegistry registry;
  registry.insert<flashtile::attn::AttnDialect, arith::ArithDialect,
                  math::MathDialect, memref::MemRefDialect, LLVM::LLVMDialect,
                  NVVM::NVVMDialect>();
  flashtile::attn::registerAttnPasses();
  flashtile::registerConversionPasses();
  flashtile::registerPipelines();
  auto [inputFile, outputFile] = registerAndParseCLIOptions(
      argc, argv, "FlashTile pass driver for testing\n", registry);
  MlirOptMainConfig config = MlirOptMainConfig::createFromCLOptions();
  // Listing dialects or passes reads no input.
  if (config.shouldShowDialects() || config.shouldListPasses())
    return asMainReturnCode(
        MlirOptMain(argc, argv, inputFile, outputFile, registry));
  // What MlirOptMain's other overloads set up: a stack trace on a crash.
  llvm::InitLLVM initLLVM(argc, argv);

  std::string error;
  std::unique_ptr<llvm::MemoryBuffer> input =
      flashtile::readInputFile(inputFile, error);
  if (!input) {
    llvm::errs() << inputFile << ":0:0: error: " << error << "\n";
    return 1;
  }
  {
    // The bounds, checked on a copy: MlirOptMain takes the buffer.
    MLIRContext ctx(MLIRContext::Threading::DISABLED);
    llvm::SourceMgr sourceMgr;
    sourceMgr.AddNewSourceBuffer(
        llvm::MemoryBuffer::getMemBuffer(input->getMemBufferRef(),
                                         /*RequiresNullTerminator=*/false),
        llvm::SMLoc());
    SourceMgrDiagnosticHandler handler(sourceMgr, &ctx);
    if (failed(flashtile::checkInputBounds(ctx, sourceMgr)))
      return 1;
  }
  std::unique_ptr<llvm::ToolOutputFile> output =
      openOutputFile(outputFile, &error);
  if (!output) {
    llvm::errs() << outputFile << ":0:0: error: " << error << "\n";
    return 1;
  }
  if (failed(MlirOptMain(output->os(), std::move(input), registry, config)))
    return 1;
  // Written only on success: a failed run leaves no partial file.
  output->keep();
  return 0;
}
