//===- Outputs.cpp - Writing a compile's files, all or none ---------------===//

#include "flashtile/Compiler/Compiler.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace flashtile;

/// `path` made absolute and without "." / ".." components, so that two
/// spellings of one destination compare equal.
static std::string canonicalPath(StringRef path) {
  SmallString<256> canonical(path);
  llvm::sys::fs::make_absolute(canonical);
  llvm::sys::path::remove_dots(canonical, /*remove_dot_dot=*/true);
  SmallString<256> real;
  // Follow links where the file exists already.
  if (!llvm::sys::fs::real_path(canonical, real))
    return real.str().str();
  return canonical.str().str();
}

std::string flashtile::getCubinPathForPlan(StringRef cubinPath,
                                           StringRef planPath) {
  SmallString<256> cubin(cubinPath), planDir(planPath);
  llvm::sys::fs::make_absolute(cubin);
  llvm::sys::path::remove_dots(cubin, /*remove_dot_dot=*/true);
  llvm::sys::fs::make_absolute(planDir);
  llvm::sys::path::remove_dots(planDir, /*remove_dot_dot=*/true);
  llvm::sys::path::remove_filename(planDir);
  if (llvm::sys::path::parent_path(cubin) == planDir)
    return llvm::sys::path::filename(cubin).str();
  return cubin.str().str();
}

LogicalResult flashtile::writeOutputs(ArrayRef<OutputFile> files,
                                      Location loc) {
  llvm::StringMap<std::string> seen;
  for (const OutputFile &file : files) {
    if (file.path.empty())
      return emitError(loc) << "an output file name is empty";
    std::string key = file.path == "-" ? "-" : canonicalPath(file.path);
    if (file.path != "-" && llvm::sys::fs::is_directory(file.path))
      return emitError(loc) << "cannot write '" << file.path
                            << "': it is a directory";
    auto [it, inserted] = seen.try_emplace(key, file.path);
    if (!inserted)
      return emitError(loc) << "two outputs would be written to the same file: '"
                            << it->second << "' and '" << file.path
                            << "'; give each output its own file";
  }

  // Write every file to a temporary next to its destination; rename only when
  // all were written. TempFile removes itself unless kept, also on signals.
  std::vector<llvm::sys::fs::TempFile> temps;
  auto discardAll = [&] {
    for (llvm::sys::fs::TempFile &temp : temps)
      llvm::consumeError(temp.discard());
  };
  for (const OutputFile &file : files) {
    if (file.path == "-")
      continue;
    llvm::Expected<llvm::sys::fs::TempFile> temp =
        llvm::sys::fs::TempFile::create(file.path + ".tmp-%%%%%%%%");
    if (!temp) {
      std::string message = llvm::toString(temp.takeError());
      discardAll();
      return emitError(loc) << "cannot write '" << file.path
                            << "': " << message;
    }
    temps.push_back(std::move(*temp));
    llvm::raw_fd_ostream os(temps.back().FD, /*shouldClose=*/false);
    os << file.contents;
    os.flush();
    if (os.has_error()) {
      std::string message = os.error().message();
      os.clear_error();
      discardAll();
      return emitError(loc) << "cannot write '" << file.path
                            << "': " << message;
    }
  }
  // A rename can still fail after others succeeded (a full or read-only
  // folder); the checks above leave only such system errors.
  size_t next = 0;
  for (const OutputFile &file : files) {
    if (file.path == "-")
      continue;
    if (llvm::Error error = temps[next].keep(file.path)) {
      std::string message = llvm::toString(std::move(error));
      for (size_t i = next; i < temps.size(); ++i)
        llvm::consumeError(temps[i].discard());
      return emitError(loc) << "cannot write '" << file.path
                            << "': " << message;
    }
    ++next;
  }
  for (const OutputFile &file : files)
    if (file.path == "-")
      llvm::outs() << file.contents;
  llvm::outs().flush();
  return success();
}
