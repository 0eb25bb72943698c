//===- Ptxas.cpp - Locating and running the CUDA toolkit's ptxas ----------===//

#include "flashtile/Target/PTX.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/Regex.h"

using namespace mlir;
using namespace flashtile;

FailureOr<std::string> flashtile::findPtxas(StringRef explicitPath,
                                            Location loc) {
  SmallVector<std::string> tried;
  auto usable = [&](const std::string &path) {
    tried.push_back(path);
    return llvm::sys::fs::can_execute(path);
  };
  if (!explicitPath.empty()) {
    if (usable(explicitPath.str()))
      return explicitPath.str();
    return emitError(loc) << "ptxas given by --ptxas is not an executable: '"
                          << explicitPath << "'";
  }
  if (const char *cudaHome = std::getenv("CUDA_HOME")) {
    SmallString<128> path(cudaHome);
    llvm::sys::path::append(path, "bin", "ptxas");
    if (usable(path.str().str()))
      return path.str().str();
  }
  if (usable("/usr/local/cuda/bin/ptxas"))
    return std::string("/usr/local/cuda/bin/ptxas");
  if (llvm::ErrorOr<std::string> onPath = llvm::sys::findProgramByName("ptxas"))
    return *onPath;
  tried.push_back("ptxas on PATH");
  InFlightDiagnostic diag =
      emitError(loc) << "cannot find ptxas (CUDA toolkit >= 12.8) to build the "
                        "cubin; looked at: ";
  llvm::interleaveComma(tried, diag);
  return diag << ". Set --ptxas=PATH or CUDA_HOME, or use --emit=ptx";
}

/// The number after `pattern` in ptxas -v output, if any.
static std::optional<int64_t> scan(StringRef log, StringRef pattern) {
  SmallVector<StringRef, 2> matches;
  if (!llvm::Regex(pattern).match(log, &matches) || matches.size() < 2)
    return std::nullopt;
  int64_t value;
  if (matches[1].getAsInteger(10, value))
    return std::nullopt;
  return value;
}

FailureOr<CubinResult> flashtile::assembleCubin(StringRef ptxas, StringRef ptx,
                                                const ArchInfo &isa,
                                                Location loc) {
  SmallString<128> ptxPath, cubinPath, logPath;
  if (llvm::sys::fs::createTemporaryFile("flashtile", "ptx", ptxPath) ||
      llvm::sys::fs::createTemporaryFile("flashtile", "cubin", cubinPath) ||
      llvm::sys::fs::createTemporaryFile("flashtile", "log", logPath))
    return emitError(loc) << "cannot create temporary files for ptxas";
  llvm::FileRemover removePtx(ptxPath), removeCubin(cubinPath),
      removeLog(logPath);
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(ptxPath, ec);
    if (ec)
      return emitError(loc) << "cannot write " << ptxPath << ": "
                            << ec.message();
    os << ptx;
  }

  std::string arch = ("-arch=" + isa.ptxTarget).str();
  SmallVector<StringRef> args = {ptxas, arch, "-O3", "-v", ptxPath, "-o",
                                 cubinPath};
  std::optional<StringRef> redirects[] = {std::nullopt, logPath.str(),
                                          logPath.str()};
  std::string execError;
  int rc = llvm::sys::ExecuteAndWait(ptxas, args, std::nullopt, redirects, 0,
                                     0, &execError);
  CubinResult result;
  if (auto log = llvm::MemoryBuffer::getFile(logPath))
    result.log = (*log)->getBuffer().str();
  if (rc != 0)
    return emitError(loc) << "ptxas failed (" << ptxas << " " << arch
                          << ", exit code " << rc << "): "
                          << (execError.empty() ? "" : execError + "\n")
                          << result.log;
  auto cubin = llvm::MemoryBuffer::getFile(cubinPath, /*IsText=*/false);
  if (!cubin)
    return emitError(loc) << "ptxas wrote no cubin";
  result.cubin = (*cubin)->getBuffer().str();
  result.registers = scan(result.log, "Used ([0-9]+) registers");
  result.spillStores = scan(result.log, "([0-9]+) bytes spill stores");
  result.spillLoads = scan(result.log, "([0-9]+) bytes spill loads");
  result.stackBytes = scan(result.log, "([0-9]+) bytes stack frame");
  return result;
}
