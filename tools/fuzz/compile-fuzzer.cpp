//===- compile-fuzzer.cpp - libFuzzer over the compile API's front half ---===//
//
// A libFuzzer target: each input is handed to the compile API as kernel
// source (compileSource), which runs the input bounds, MLIR's parser, the
// attn verifiers, the tile pipeline (config selection, expansion, copy
// pipelining, allocation, barriers) and the lowering to the NVVM dialect.
// PTX and ptxas are left out: they are LLVM's and NVIDIA's, and slow.
//
// Built only with -DFLASHTILE_ENABLE_LIBFUZZER=ON and Debian's clang
// (tools/fuzz/libfuzzer.sh builds and runs it); never in CI. FlashTile's
// code is instrumented (libFuzzer's coverage and AddressSanitizer), Debian's
// libMLIR is not, so the coverage signal inside the parser is coarse:
// tools/fuzz/fuzz.py, the structured fuzzer, is the main one.
//
// An input fails on a crash, an LLVM ERROR, an assertion or an ASan report
// (libFuzzer catches them all), and also when the compile fails without an
// error diagnostic located in the input (`fuzz-input:LINE:COL: error:`).
//
//===----------------------------------------------------------------------===//

#include "flashtile/Compiler/Compiler.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/Regex.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace {
constexpr const char *kBufferName = "fuzz-input";
} // namespace

// LLVM's allocators poison their slabs under AddressSanitizer, and unpoison
// what they hand out, in code inlined where they are instantiated. Here some
// instances are instrumented (ours) and some are not (libMLIR's), so memory
// that libMLIR takes from a slab our code made still looks poisoned. Manual
// poisoning is therefore off; ASan still checks every malloc'd byte.
extern "C" const char *__asan_default_options() {
  return "allow_user_poisoning=0";
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  // A fresh context per input: nothing one input uniques can change the
  // next one's result, and no thread pool is made per run.
  mlir::MLIRContext ctx(mlir::MLIRContext::Threading::DISABLED);
  flashtile::registerCompilerDialects(ctx);
  flashtile::CompileOptions options;
  options.stopAfter = flashtile::CompileStage::Nvvm;
  std::string diagnostics;
  llvm::StringRef source(reinterpret_cast<const char *>(data), size);
  mlir::FailureOr<flashtile::CompiledKernel> kernel =
      flashtile::compileSource(ctx, source, kBufferName, options, diagnostics);
  if (succeeded(kernel))
    return 0;
  static const llvm::Regex located(std::string("(^|\n)") + kBufferName +
                                   ":[0-9]+:[0-9]+: error: ");
  if (!located.match(diagnostics)) {
    std::fprintf(stderr,
                 "compile-fuzzer: the compile failed without a located "
                 "error; its diagnostics:\n%s\n",
                 diagnostics.c_str());
    std::abort();
  }
  return 0;
}
