//===- AttnToNVVM.h - Lowering the tile program to NVVM ---------*- C++ -*-===//

#ifndef FLASHTILE_CONVERSION_ATTNTONVVM_ATTNTONVVM_H
#define FLASHTILE_CONVERSION_ATTNTONVVM_ATTNTONVVM_H

#include "flashtile/Conversion/AttnToNVVM/FragmentLayout.h"
#include "flashtile/Target/Arch.h"

#include "mlir/Conversion/LLVMCommon/TypeConverter.h"
#include "mlir/IR/PatternMatch.h"

namespace flashtile::attn {

/// Adds the conversions of the attn types for one kernel: !attn.frag by
/// `layout`, global tensors to their descriptor structs, shared buffers to
/// pointers in address space 3.
void populateAttnTypeConversions(mlir::LLVMTypeConverter &converter,
                                 const FragmentLayout &layout);

/// The patterns of the sm80 code path, one per tile-level op, for PTX
/// that targets `isa`.
void populateAttnToNVVMConversionPatterns(mlir::LLVMTypeConverter &converter,
                                          mlir::RewritePatternSet &patterns,
                                          const ArchInfo &isa);

} // namespace flashtile::attn

#endif // FLASHTILE_CONVERSION_ATTNTONVVM_ATTNTONVVM_H
