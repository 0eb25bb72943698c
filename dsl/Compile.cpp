//===- Compile.cpp - Compiling a DSL spec ---------------------------------===//

#include "flashtile/DSL/Compile.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

using namespace mlir;

FailureOr<flashtile::CompiledKernel>
flashtile::compile(MLIRContext &ctx, const dsl::AttentionSpec &spec,
                   const CompileOptions &options) {
  registerCompilerDialects(ctx);
  Location loc = NameLoc::get(StringAttr::get(&ctx, "spec:" + spec.name));
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  if (failed(dsl::buildAttentionKernel(*module, spec, loc)))
    return failure();
  return compile(*module, options);
}
