//===- AttnToNVVM.cpp - convert-attn-to-nvvm ------------------------------===//
//
// Lowers each tile-level kernel on its own, because the register layout of
// its fragments depends on its config (warps per block).
//
//===----------------------------------------------------------------------===//

#include "flashtile/Dialect/Attn/Analysis/Synchronization.h"
#include "flashtile/Dialect/Attn/Analysis/TileProgramInvariants.h"
#include "flashtile/Conversion/AttnToNVVM/AttnToNVVM.h"
#include "flashtile/Conversion/Passes.h"

#include "GlobalAccess.h"
#include "Patterns.h"
#include "SharedAccess.h"
#include "TileOpContext.h"

#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/LLVMCommon/ConversionTarget.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Transforms/DialectConversion.h"

namespace flashtile {
#define GEN_PASS_DEF_CONVERTATTNTONVVM
#include "flashtile/Conversion/Passes.h.inc"
} // namespace flashtile

using namespace mlir;
using namespace flashtile;
using namespace flashtile::attn;

void attn::populateAttnTypeConversions(LLVMTypeConverter &converter,
                                       const FragmentLayout &layout) {
  converter.addConversion(
      [layout](FragType type) -> Type { return layout.convertType(type); });
  converter.addConversion([](MemRefType type) -> std::optional<Type> {
    MLIRContext *ctx = type.getContext();
    auto space = dyn_cast_or_null<IntegerAttr>(type.getMemorySpace());
    if (space && space.getInt() == kSharedMemorySpace)
      return LLVM::LLVMPointerType::get(ctx, 3);
    return lowering::getGlobalTensorDescType(ctx, type.getRank());
  });
}

void attn::populateAttnToNVVMConversionPatterns(LLVMTypeConverter &converter,
                                                RewritePatternSet &patterns,
                                                const ArchInfo &isa) {
  lowering::populateKernelPatterns(converter, patterns);
  lowering::populateMemoryPatterns(converter, patterns, isa);
  lowering::populateMmaPatterns(converter, patterns);
  lowering::populateSoftmaxPatterns(converter, patterns);
  lowering::populateElementwisePatterns(converter, patterns);
  lowering::populateEpiloguePatterns(converter, patterns);
  lowering::populateHookPatterns(converter, patterns);
}

/// What the sm80 lowering needs before it starts; each failure is an error
/// at the kernel.
static LogicalResult checkLowerable(KernelOp kernel) {
  if (failed(checkCodePathImplemented(kernel, kernel.getArch())))
    return failure();
  if (!kernel.getConfigAttr() || !kernel.getSmemBytes() ||
      !kernel.getBodyBlock().getOps<AttentionOp>().empty())
    return kernel.emitOpError()
           << "must be an allocated tile program: run attn-select-config, "
              "attn-expand-to-tiles, attn-allocate-shared-memory and "
              "attn-insert-barriers first";
  // The program agrees with its own config and allocation; then a race is
  // a wrong answer that no test may catch: the program must be proven
  // race-free (attn-insert-barriers makes it so).
  if (failed(verifyTileProgramInvariants(kernel)) ||
      failed(verifySynchronization(kernel)))
    return failure();
  // The verifier holds kernels to the head-dim rule; the lowering relies on
  // it (whole 16-byte chunks; buffers padded to whole swizzle groups).
  assert(!explainUnsupportedHeadDim(
              cast<MemRefType>(kernel.getQ().getType()).getDimSize(3)) &&
         "the kernel verifier enforces the head-dim rule");
  return success();
}

namespace {
struct ConvertAttnToNVVMPass
    : public flashtile::impl::ConvertAttnToNVVMBase<ConvertAttnToNVVMPass> {
  using ConvertAttnToNVVMBase::ConvertAttnToNVVMBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    const ArchInfo *target = nullptr;
    if (!isa.empty() && !(target = lookupArch(isa))) {
      module.emitError() << "convert-attn-to-nvvm: unknown ISA '" << isa
                         << "'; known: " << knownArchNames();
      return signalPassFailure();
    }
    for (KernelOp kernel :
         llvm::make_early_inc_range(module.getOps<KernelOp>())) {
      if (failed(checkLowerable(kernel)))
        return signalPassFailure();
      // A map's or a for_each's body may read (and a for_each's add into)
      // kernel arguments directly; the lowering reads them as parameters,
      // through attn.kernel_arg.
      kernel.walk([&](MapOp map) {
        readKernelArgsThroughKernelArgOps(map.getBody(), kernel);
      });
      kernel.walk([&](ForEachOp forEach) {
        readKernelArgsThroughKernelArgOps(forEach.getBody(), kernel);
      });
      if (getBlockRanges(kernel) &&
          failed(lowering::buildBlockMaskKernels(kernel)))
        return signalPassFailure();
      if (getDiagonalTable(kernel) &&
          failed(lowering::buildDiagonalTableKernel(kernel)))
        return signalPassFailure();
      if (hasKVSplits(kernel) && failed(lowering::buildCombineKernel(kernel)))
        return signalPassFailure();
      LowerToLLVMOptions options(ctx);
      options.overrideIndexBitwidth(32);
      LLVMTypeConverter converter(ctx, options);
      FragmentLayout layout(kernel.getConfigAttr().getRowWarps());
      populateAttnTypeConversions(converter, layout);

      RewritePatternSet patterns(ctx);
      populateAttnToNVVMConversionPatterns(
          converter, patterns, target ? *target : kernel.getArch().getInfo());
      arith::populateArithToLLVMConversionPatterns(converter, patterns);

      LLVMConversionTarget target(*ctx);
      target.addLegalDialect<NVVM::NVVMDialect>();
      target.addIllegalDialect<AttnDialect, arith::ArithDialect>();
      if (failed(applyPartialConversion(kernel.getOperation(), target,
                                        std::move(patterns))))
        return signalPassFailure();
    }
    // Casts between converted and unconverted block arguments cancel out.
    SmallVector<UnrealizedConversionCastOp> casts;
    module.walk([&](UnrealizedConversionCastOp op) { casts.push_back(op); });
    reconcileUnrealizedCasts(casts);
  }
};
} // namespace
