//===- Ptxas.cpp - Locating and running the CUDA toolkit's ptxas ----------===//

#include "flashtile/Target/PTX.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/FormatVariadic.h"
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

CubinResult::EntryResources
flashtile::getEntryResources(const CubinResult &cubin, StringRef symbol) {
  // ptxas -v reports each entry after "Compiling entry function 'NAME'".
  std::string marker = ("Compiling entry function '" + symbol + "'").str();
  StringRef log = cubin.log;
  size_t start = log.find(marker);
  if (start == StringRef::npos)
    return {cubin.registers, cubin.spillStores, cubin.spillLoads};
  StringRef section = log.substr(start + marker.size());
  section = section.substr(0, section.find("Compiling entry function '"));
  return {scan(section, "Used ([0-9]+) registers"),
          scan(section, "([0-9]+) bytes spill stores"),
          scan(section, "([0-9]+) bytes spill loads")};
}

/// ELF64 header fields a CUDA cubin is checked by (the System V ABI's
/// layout; NVIDIA's ELF keeps the SM number in e_flags: bits 0-7 up to ELF
/// ABI version 7, bits 8-15 from version 8, which CUDA 12.8+ writes).
static constexpr size_t kElfHeaderBytes = 64;
static constexpr uint16_t kElfMachineCuda = 190;
static constexpr uint8_t kElfOsAbiCuda = 0x41;

static uint32_t readLE(StringRef bytes, size_t offset, size_t size) {
  uint32_t value = 0;
  for (size_t i = 0; i < size; ++i)
    value |= uint32_t(uint8_t(bytes[offset + i])) << (8 * i);
  return value;
}

std::optional<std::string> flashtile::explainInvalidCubin(StringRef image,
                                                          const ArchInfo &isa) {
  if (image.size() < kElfHeaderBytes || !image.starts_with("\x7f" "ELF"))
    return std::string("it is not an ELF file");
  if (image[4] != 2 /*ELFCLASS64*/ || image[5] != 1 /*little-endian*/)
    return std::string("it is not a 64-bit little-endian ELF file");
  uint32_t machine = readLE(image, 18, 2);
  if (machine != kElfMachineCuda || uint8_t(image[7]) != kElfOsAbiCuda)
    return llvm::formatv("it is not a CUDA ELF (e_machine {0}, OS ABI {1})",
                         machine, unsigned(uint8_t(image[7])))
        .str();
  uint32_t flags = readLE(image, 48, 4);
  unsigned abiVersion = uint8_t(image[8]);
  unsigned sm = abiVersion >= 8 ? (flags >> 8) & 0xff : flags & 0xff;
  if (sm != unsigned(isa.computeCapability))
    return llvm::formatv("it is for sm_{0}, not {1}", sm, isa.name).str();
  return std::nullopt;
}

FailureOr<CubinResult> flashtile::assembleCubin(StringRef ptxas, StringRef ptx,
                                                const ArchInfo &isa,
                                                Location loc,
                                                unsigned timeoutSeconds) {
  SmallString<128> ptxPath, cubinPath, logPath;
  // Each remover is armed as soon as its file exists.
  std::optional<llvm::FileRemover> removePtx, removeCubin, removeLog;
  if (llvm::sys::fs::createTemporaryFile("flashtile", "ptx", ptxPath))
    return emitError(loc) << "cannot create temporary files for ptxas";
  removePtx.emplace(ptxPath);
  if (llvm::sys::fs::createTemporaryFile("flashtile", "cubin", cubinPath))
    return emitError(loc) << "cannot create temporary files for ptxas";
  removeCubin.emplace(cubinPath);
  if (llvm::sys::fs::createTemporaryFile("flashtile", "log", logPath))
    return emitError(loc) << "cannot create temporary files for ptxas";
  removeLog.emplace(logPath);
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(ptxPath, ec);
    if (ec)
      return emitError(loc) << "cannot write " << ptxPath << ": "
                            << ec.message();
    os << ptx;
    os.close();
    // A write error left pending would abort in the stream's destructor.
    if (os.has_error()) {
      std::string message = os.error().message();
      os.clear_error();
      return emitError(loc) << "cannot write " << ptxPath << ": " << message;
    }
  }

  std::string arch = ("-arch=" + isa.ptxTarget).str();
  SmallVector<StringRef> args = {ptxas, arch, "-O3", "-v", ptxPath, "-o",
                                 cubinPath};
  std::optional<StringRef> redirects[] = {std::nullopt, logPath.str(),
                                          logPath.str()};
  std::string execError;
  bool execFailed = false;
  std::optional<llvm::sys::ProcessStatistics> stats;
  int rc = llvm::sys::ExecuteAndWait(ptxas, args, std::nullopt, redirects,
                                     timeoutSeconds, 0, &execError,
                                     &execFailed, &stats);
  CubinResult result;
  if (auto log = llvm::MemoryBuffer::getFile(logPath))
    result.log = (*log)->getBuffer().str();
  std::string command = (ptxas + " " + arch).str();
  if (execFailed)
    return emitError(loc) << "cannot run ptxas (" << command
                          << "): " << execError;
  // ExecuteAndWait: -2 when the child crashed, was killed by a signal or ran
  // past the limit (it is then killed; execError says "timed out"), -1 when
  // the wait itself failed.
  if (rc < 0 && StringRef(execError).contains("timed out"))
    return emitError(loc) << "ptxas did not finish within " << timeoutSeconds
                          << " s and was killed (" << command
                          << "); raise the limit with --ptxas-timeout"
                          << (execError.empty() ? "" : ": " + execError);
  if (rc < 0)
    return emitError(loc) << "ptxas was killed by a signal (" << command
                          << "): " << execError << "\n"
                          << result.log;
  if (rc != 0)
    return emitError(loc) << "ptxas failed (" << command << ", exit code "
                          << rc << "): "
                          << (execError.empty() ? "" : execError + "\n")
                          << result.log;
  auto cubin = llvm::MemoryBuffer::getFile(cubinPath, /*IsText=*/false);
  if (!cubin || (*cubin)->getBufferSize() == 0)
    return emitError(loc) << "ptxas exited 0 but wrote no cubin (" << command
                          << ")";
  result.cubin = (*cubin)->getBuffer().str();
  if (std::optional<std::string> why = explainInvalidCubin(result.cubin, isa))
    return emitError(loc) << "ptxas wrote a file that is not a usable cubin ("
                          << command << "): " << *why;
  result.registers = scan(result.log, "Used ([0-9]+) registers");
  result.spillStores = scan(result.log, "([0-9]+) bytes spill stores");
  result.spillLoads = scan(result.log, "([0-9]+) bytes spill loads");
  result.stackBytes = scan(result.log, "([0-9]+) bytes stack frame");
  // A kernel uses at least one register and at most the chip's maximum; the
  // occupancy arithmetic divides by the count.
  if (result.registers &&
      (*result.registers < 1 || *result.registers > isa.maxRegsPerThread))
    return emitError(loc) << "ptxas reported " << *result.registers
                          << " registers per thread, outside 1.."
                          << isa.maxRegsPerThread << " for " << isa.name
                          << " (" << command << ")";
  return result;
}
