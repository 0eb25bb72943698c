//===- Example.h - The shared command line of the variant examples -*- C++ -*-//
//
// Each example in this directory is a C++ program that writes one attention
// variant with the DSL and prints the kernel-level MLIR it builds. With no
// arguments it prints the checked-in `<example>.mlir`; the flags make the
// variants the GPU proof script measures (dtype, head dim, masking).
//
//   example [--dtype=f16|bf16] [--head-dim=N] [--causal=0|1] [--name=NAME]
//
//===----------------------------------------------------------------------===//

#ifndef FLASHTILE_DSL_EXAMPLES_EXAMPLE_H
#define FLASHTILE_DSL_EXAMPLES_EXAMPLE_H

#include "flashtile/ABI/KernelRules.h"
#include "flashtile/Compiler/Compiler.h"
#include "flashtile/DSL/FlashAttention.h"
#include "flashtile/DSL/Tile.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>
#include <cstring>
#include <string>

namespace flashtile::examples {

/// What the command line sets.
struct Flags {
  dsl::DType dtype;
  int64_t headDim;
  bool causal;
  std::string name;
};

/// Applies the command line to `flags`; false (after a message) on a bad
/// flag.
inline bool parseFlags(int argc, char **argv, Flags &flags) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&](const char *flag) -> const char * {
      size_t n = std::strlen(flag);
      return arg.compare(0, n, flag) == 0 ? argv[i] + n : nullptr;
    };
    if (const char *v = value("--dtype=")) {
      std::optional<plan::DType> dtype = plan::parseDType(v);
      if (!dtype || !abi::isAttentionDType(*dtype)) {
        llvm::errs() << argv[0] << ": --dtype takes one of "
                     << abi::getAttentionDTypeList() << ", got '" << v
                     << "'\n";
        return false;
      }
      flags.dtype = *dtype;
    } else if (const char *v = value("--head-dim=")) {
      flags.headDim = std::atoi(v);
    } else if (const char *v = value("--causal=")) {
      flags.causal = std::strcmp(v, "1") == 0;
    } else if (const char *v = value("--name=")) {
      flags.name = v;
    } else {
      llvm::errs() << argv[0] << ": unknown argument '" << arg
                   << "'; usage: " << argv[0]
                   << " [--dtype=f16|bf16] [--head-dim=N] [--causal=0|1] "
                      "[--name=NAME]\n";
      return false;
    }
  }
  return true;
}

/// Builds one kernel into a fresh module with `build(module, loc)`, at a
/// location named `label`, and prints the module; the exit code of the
/// example.
template <typename Build>
inline int printModule(const std::string &label, const Build &build) {
  mlir::MLIRContext ctx;
  registerCompilerDialects(ctx);
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::ModuleOp::create(mlir::UnknownLoc::get(&ctx));
  mlir::Location loc =
      mlir::NameLoc::get(mlir::StringAttr::get(&ctx, label));
  if (mlir::failed(build(*module, loc)))
    return 1;
  module->print(llvm::outs());
  llvm::outs() << "\n";
  return 0;
}

/// Builds `spec` after the command line and prints its module; the exit
/// code of the example.
inline int printKernel(int argc, char **argv, dsl::AttentionSpec spec) {
  Flags flags{spec.dtype, spec.headDim, spec.causal, spec.name};
  if (!parseFlags(argc, argv, flags))
    return 2;
  spec.dtype = flags.dtype;
  spec.headDim = flags.headDim;
  spec.causal = flags.causal;
  spec.name = flags.name;
  return printModule("spec:" + spec.name, [&](mlir::ModuleOp module,
                                              mlir::Location loc) {
    return dsl::buildAttentionKernel(module, spec, loc);
  });
}

/// The same for a tile program: `make` builds the spec from the flags.
template <typename MakeSpec>
inline int printTileKernel(int argc, char **argv, Flags flags,
                           const MakeSpec &make) {
  if (!parseFlags(argc, argv, flags))
    return 2;
  dsl::TileKernelSpec spec = make(flags);
  return printModule("tile:" + spec.name, [&](mlir::ModuleOp module,
                                              mlir::Location loc) {
    return dsl::buildTileKernel(module, spec, loc);
  });
}

} // namespace flashtile::examples

#endif // FLASHTILE_DSL_EXAMPLES_EXAMPLE_H
