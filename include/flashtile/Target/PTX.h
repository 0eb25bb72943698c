//===- PTX.h - From the LLVM dialect to PTX and cubin -----------*- C++ -*-===//

#ifndef FLASHTILE_TARGET_PTX_H
#define FLASHTILE_TARGET_PTX_H

#include "flashtile/Target/Arch.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"
#include <optional>
#include <string>

namespace flashtile {

/// An llvm.func attribute (i64) a lowering sets when the function uses an
/// instruction newer than its chip's minimum PTX ISA version (an e4m3
/// mma.sync needs 8.4): the PTX of its module is emitted at the highest
/// such version.
inline constexpr llvm::StringLiteral kMinPtxVersionAttrName =
    "attn.min_ptx_version";

/// The PTX ISA version FlashTile emits for `isa`: the table's minimum, or
/// `atLeast` when higher, as "+ptxNN" for the NVPTX backend.
std::string getPtxFeatures(const ArchInfo &isa, int atLeast = 0);

/// Translates a module of LLVM + NVVM dialect ops to LLVM IR, optimizes it at
/// O3 for `isa` and emits PTX with LLVM's NVPTX backend, in process. When
/// `llvmIR` is given it receives the optimized LLVM IR. Errors are emitted at
/// the module's location.
mlir::FailureOr<std::string> emitPTX(mlir::ModuleOp module,
                                     const ArchInfo &isa,
                                     std::string *llvmIR = nullptr);

/// What ptxas made of the PTX.
struct CubinResult {
  std::string cubin;
  /// ptxas -v output.
  std::string log;
  /// Of the first entry ptxas reports (the only one of most cubins).
  std::optional<int64_t> registers, spillStores, spillLoads, stackBytes;

  struct EntryResources {
    std::optional<int64_t> registers, spillStores, spillLoads;
  };
};

/// What ptxas reported for entry `symbol` of `cubin` (a cubin with several
/// kernels); the first entry's figures when the log does not name it.
CubinResult::EntryResources getEntryResources(const CubinResult &cubin,
                                              llvm::StringRef symbol);

/// Locates ptxas: `explicitPath` when given, else $CUDA_HOME/bin/ptxas, else
/// /usr/local/cuda/bin/ptxas, else ptxas on PATH. Fails with an error at
/// `loc` that lists where it looked.
mlir::FailureOr<std::string> findPtxas(llvm::StringRef explicitPath,
                                       mlir::Location loc);

/// The default limit on one ptxas run, in seconds.
inline constexpr unsigned kDefaultPtxasTimeoutSeconds = 120;

/// Runs `ptxas -arch=<isa> -O3 -v` on `ptx`, killing it after
/// `timeoutSeconds` (0: no limit). ptxas is treated as untrusted: a
/// timeout, a crash or a signal, a non-zero exit (with ptxas's own output),
/// a cubin that is not a CUDA ELF for `isa`, and resource figures that make
/// no sense (no registers, more than the chip allows, negative spills) are
/// errors at `loc`.
mlir::FailureOr<CubinResult>
assembleCubin(llvm::StringRef ptxas, llvm::StringRef ptx, const ArchInfo &isa,
              mlir::Location loc,
              unsigned timeoutSeconds = kDefaultPtxasTimeoutSeconds);

/// Why `image` is not a CUDA cubin for `isa`, or nullopt when it is one.
std::optional<std::string> explainInvalidCubin(llvm::StringRef image,
                                               const ArchInfo &isa);

} // namespace flashtile

#endif // FLASHTILE_TARGET_PTX_H
