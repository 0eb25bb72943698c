//===- Input.cpp - Reading and parsing a kernel's text, within bounds -----===//

#include "flashtile/Compiler/Input.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace flashtile;

std::unique_ptr<llvm::MemoryBuffer>
flashtile::readInputFile(llvm::StringRef path, std::string &error) {
  namespace fs = llvm::sys::fs;
  bool isStdin = path == "-";
  fs::file_t file = fs::getStdinHandle();
  if (!isStdin) {
    llvm::Expected<fs::file_t> opened = fs::openNativeFileForRead(path);
    if (!opened) {
      error = llvm::toString(opened.takeError());
      return nullptr;
    }
    file = *opened;
  }
  // Read in chunks, one byte past the limit at most: a device or a pipe
  // that never ends is refused once it has said too much.
  std::string text;
  char chunk[1 << 16];
  bool failed = false;
  while (text.size() <= kMaxInputBytes) {
    llvm::Expected<size_t> got =
        fs::readNativeFile(file, llvm::MutableArrayRef<char>(chunk));
    if (!got) {
      error = llvm::toString(got.takeError());
      failed = true;
      break;
    }
    if (*got == 0)
      break;
    text.append(chunk, *got);
  }
  if (!isStdin)
    fs::closeFile(file);
  if (failed)
    return nullptr;
  if (text.size() > kMaxInputBytes) {
    error = llvm::formatv("the input is larger than the compiler's limit of "
                          "{0} bytes",
                          kMaxInputBytes)
                .str();
    return nullptr;
  }
  return llvm::MemoryBuffer::getMemBufferCopy(text, isStdin ? "<stdin>" : path);
}

/// The offset where the brackets of `text` first nest deeper than
/// kMaxInputNesting, or npos. Strings and comments do not count, nor does
/// the '>' of "->" or ">=".
static size_t findTooDeep(llvm::StringRef text) {
  unsigned depth = 0;
  for (size_t i = 0, e = text.size(); i < e; ++i) {
    char c = text[i];
    if (c == '"') {
      for (++i; i < e && text[i] != '"'; ++i)
        if (text[i] == '\\')
          ++i;
      continue;
    }
    if (c == '/' && i + 1 < e && text[i + 1] == '/') {
      i = text.find('\n', i);
      if (i == llvm::StringRef::npos)
        break;
      continue;
    }
    if (c == '(' || c == '[' || c == '{' || c == '<') {
      if (++depth > kMaxInputNesting)
        return i;
    } else if (c == ')' || c == ']' || c == '}' ||
               (c == '>' && !(i > 0 && text[i - 1] == '-') &&
                !(i + 1 < e && text[i + 1] == '='))) {
      if (depth > 0)
        --depth;
    }
  }
  return llvm::StringRef::npos;
}

LogicalResult flashtile::checkInputBounds(MLIRContext &ctx,
                                          llvm::SourceMgr &sourceMgr) {
  const llvm::MemoryBuffer *buffer =
      sourceMgr.getMemoryBuffer(sourceMgr.getMainFileID());
  llvm::StringRef text = buffer->getBuffer();
  auto locationOf = [&](size_t offset) -> Location {
    auto [line, col] = sourceMgr.getLineAndColumn(
        llvm::SMLoc::getFromPointer(text.data() + offset));
    return FileLineColLoc::get(&ctx, buffer->getBufferIdentifier(), line, col);
  };
  if (text.size() > kMaxInputBytes) {
    emitError(locationOf(0))
        << "the input has " << text.size()
        << " bytes, more than the compiler's limit of " << kMaxInputBytes;
    return failure();
  }
  if (size_t at = findTooDeep(text); at != llvm::StringRef::npos) {
    emitError(locationOf(at))
        << "brackets nest more than " << kMaxInputNesting
        << " deep here; the compiler refuses deeper input";
    return failure();
  }
  return success();
}

OwningOpRef<ModuleOp> flashtile::parseInput(MLIRContext &ctx,
                                            llvm::SourceMgr &sourceMgr) {
  if (failed(checkInputBounds(ctx, sourceMgr)))
    return nullptr;
  return parseSourceFile<ModuleOp>(sourceMgr, &ctx);
}
