//===- Patterns.h - The pattern groups of convert-attn-to-nvvm --*- C++ -*-===//
//
// Private to lib/Conversion/AttnToNVVM: one populate function per pattern
// file, and the builders of the plan's extra kernels.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHTILE_LIB_CONVERSION_ATTNTONVVM_PATTERNS_H
#define FLASHTILE_LIB_CONVERSION_ATTNTONVVM_PATTERNS_H

#include "flashtile/Dialect/Attn/IR/Attn.h"

#include "mlir/IR/PatternMatch.h"

namespace mlir {
class LLVMTypeConverter;
} // namespace mlir

namespace flashtile::attn::lowering {

void populateKernelPatterns(mlir::LLVMTypeConverter &converter,
                            mlir::RewritePatternSet &patterns);
/// `isa`: the ISA the PTX targets (attn.store_tile's vector reductions).
void populateMemoryPatterns(mlir::LLVMTypeConverter &converter,
                            mlir::RewritePatternSet &patterns,
                            const ArchInfo &isa);
void populateMmaPatterns(mlir::LLVMTypeConverter &converter,
                         mlir::RewritePatternSet &patterns);
void populateElementwisePatterns(mlir::LLVMTypeConverter &converter,
                                 mlir::RewritePatternSet &patterns);
void populateSoftmaxPatterns(mlir::LLVMTypeConverter &converter,
                             mlir::RewritePatternSet &patterns);
void populateEpiloguePatterns(mlir::LLVMTypeConverter &converter,
                              mlir::RewritePatternSet &patterns);
void populateHookPatterns(mlir::LLVMTypeConverter &converter,
                          mlir::RewritePatternSet &patterns);
/// Adds the block-mask kernels of `kernel` (which has an attn.block_ranges)
/// to its module, before it as llvm.funcs (KernelABI.h).
mlir::LogicalResult buildBlockMaskKernels(attn::KernelOp kernel);
/// Adds the diagonal table's kernel of `kernel` (whose score_mod has a
/// diagonal term) to its module, before it as an llvm.func (KernelABI.h).
mlir::LogicalResult buildDiagonalTableKernel(attn::KernelOp kernel);
/// Adds the combine kernel of the split-KV kernel `kernel` to its module,
/// before it as an llvm.func (KernelABI.h).
mlir::LogicalResult buildCombineKernel(attn::KernelOp kernel);

} // namespace flashtile::attn::lowering

#endif // FLASHTILE_LIB_CONVERSION_ATTNTONVVM_PATTERNS_H
