// A program outside the tree that compiles a kernel through the installed
// compile API and prints what it got.
#include "flashtile/DSL/Compile.h"

#include <cstdio>

int main() {
  mlir::MLIRContext ctx;
  flashtile::dsl::AttentionSpec spec;
  spec.name = "outside";
  spec.headDim = 64;
  spec.causal = true;
  flashtile::CompileOptions options;
  options.stopAfter = flashtile::CompileStage::Ptx;
  mlir::FailureOr<flashtile::CompiledKernel> kernel =
      flashtile::compile(ctx, spec, options);
  if (mlir::failed(kernel))
    return 1;
  std::printf("%s: %zu bytes of PTX, %d warps\n", kernel->name.c_str(),
              kernel->ptx.size(),
              int(kernel->getTileKernel().getConfigAttr().getWarps()));
  return kernel->ptx.find(".entry outside") == std::string::npos;
}
