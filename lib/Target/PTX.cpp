//===- PTX.cpp - LLVM dialect -> LLVM IR -> PTX ---------------------------===//

#include "flashtile/Target/PTX.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Triple.h"

extern "C" {
void LLVMInitializeNVPTXTargetInfo();
void LLVMInitializeNVPTXTarget();
void LLVMInitializeNVPTXTargetMC();
void LLVMInitializeNVPTXAsmPrinter();
}

using namespace mlir;
using namespace flashtile;

std::string flashtile::getPtxFeatures(const ArchInfo &isa, int atLeast) {
  return "+ptx" + std::to_string(std::max(isa.minPtxVersion, atLeast));
}

FailureOr<std::string> flashtile::emitPTX(ModuleOp module, const ArchInfo &isa,
                                          std::string *llvmIR) {
  static const bool initialized = [] {
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
    return true;
  }();
  (void)initialized;

  DialectRegistry registry;
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  registerNVVMDialectTranslation(registry);
  module->getContext()->appendDialectRegistry(registry);

  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(module, llvmContext, "flashtile");
  if (!llvmModule)
    return module.emitError() << "translation to LLVM IR failed";

  llvm::Triple triple("nvptx64-nvidia-cuda");
  std::string error;
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return module.emitError() << "the NVPTX backend is unavailable: " << error;
  // The highest version a function's instructions need.
  int ptxVersion = 0;
  module.walk([&](LLVM::LLVMFuncOp func) {
    if (auto v = func->getAttrOfType<IntegerAttr>(kMinPtxVersionAttrName))
      ptxVersion = std::max(ptxVersion, static_cast<int>(v.getInt()));
  });
  std::unique_ptr<llvm::TargetMachine> machine(target->createTargetMachine(
      triple, isa.ptxTarget, getPtxFeatures(isa, ptxVersion),
      llvm::TargetOptions(),
      std::nullopt, std::nullopt, llvm::CodeGenOptLevel::Aggressive));
  llvmModule->setTargetTriple(triple);
  llvmModule->setDataLayout(machine->createDataLayout());

  // The standard O3 pipeline: it scalarises the fragment arrays (SROA,
  // InstCombine) and schedules the unrolled tile code.
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassBuilder passBuilder(machine.get());
  passBuilder.registerModuleAnalyses(mam);
  passBuilder.registerCGSCCAnalyses(cgam);
  passBuilder.registerFunctionAnalyses(fam);
  passBuilder.registerLoopAnalyses(lam);
  passBuilder.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::ModulePassManager passes =
      passBuilder.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
  passes.run(*llvmModule, mam);

  if (llvmIR) {
    llvmIR->clear();
    llvm::raw_string_ostream os(*llvmIR);
    llvmModule->print(os, nullptr);
  }

  llvm::SmallString<0> ptx;
  llvm::raw_svector_ostream ptxStream(ptx);
  llvm::legacy::PassManager codegen;
  if (machine->addPassesToEmitFile(codegen, ptxStream, nullptr,
                                   llvm::CodeGenFileType::AssemblyFile))
    return module.emitError() << "the NVPTX backend cannot emit PTX";
  codegen.run(*llvmModule);
  return std::string(ptx.str());
}
