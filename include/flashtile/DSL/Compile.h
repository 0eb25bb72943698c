//===- Compile.h - Compiling a DSL spec -------------------------*- C++ -*-===//
//
// The compile API (flashtile/Compiler/Compiler.h) takes kernels as IR; this
// is its DSL front: build the kernel of an AttentionSpec, then compile it.
// It lives with the DSL because the DSL depends on the compiler, never the
// reverse.
//
//   MLIRContext ctx;
//   flashtile::dsl::AttentionSpec spec;  spec.headDim = 128;
//   flashtile::CompileOptions options;
//   FailureOr<flashtile::CompiledKernel> k =
//       flashtile::compile(ctx, spec, options);
//
//===----------------------------------------------------------------------===//

#ifndef FLASHTILE_DSL_COMPILE_H
#define FLASHTILE_DSL_COMPILE_H

#include "flashtile/Compiler/Compiler.h"
#include "flashtile/DSL/FlashAttention.h"

namespace flashtile {

/// Loads the compiler's dialects into `ctx` (registerCompilerDialects),
/// builds the kernel of `spec` (dsl::buildAttentionKernel) and compiles it.
mlir::FailureOr<CompiledKernel> compile(mlir::MLIRContext &ctx,
                                        const dsl::AttentionSpec &spec,
                                        const CompileOptions &options);

} // namespace flashtile

#endif // FLASHTILE_DSL_COMPILE_H
