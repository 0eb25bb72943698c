//===- KernelShell.h - The signature of a DSL kernel -------------*- C++
//-*-===//
//
// Private to dsl/: the attn.kernel both front ends start from (an attention
// spec's, a tile program's): Q, K, V, O, LSE with run-time sizes and
// strides, then the extra arguments, named.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHTILE_DSL_KERNELSHELL_H
#define FLASHTILE_DSL_KERNELSHELL_H

#include "flashtile/DSL/FlashAttention.h"

namespace flashtile::dsl::detail {

/// The MLIR element type of `t`.
mlir::Type elementTypeOf(mlir::Builder &b, DType t);

/// Appends an attn.kernel with an empty body block holding the arguments
/// to `module`; `config` may be null.
attn::KernelOp createKernelShell(mlir::ModuleOp module, llvm::StringRef name,
                                 Chip chip, DType dtype, int64_t headDim,
                                 int64_t headDimV,
                                 llvm::ArrayRef<ExtraArg> extraArgs,
                                 attn::ConfigAttr config, mlir::Location loc);

} // namespace flashtile::dsl::detail

#endif // FLASHTILE_DSL_KERNELSHELL_H
