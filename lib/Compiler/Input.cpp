//===- Input.cpp - Reading and parsing a kernel's text, within bounds -----===//

#include "flashtile/Compiler/Input.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/Parser/Parser.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"

#include <vector>

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

/// When a string literal or a `//` comment starts at `i`, moves `i` to its
/// last character (the closing quote; the character before the comment's
/// newline, which the caller still sees) and returns true.
static bool skipStringOrComment(llvm::StringRef text, size_t &i) {
  size_t e = text.size();
  if (text[i] == '"') {
    for (++i; i < e && text[i] != '"'; ++i)
      if (text[i] == '\\')
        ++i;
    return true;
  }
  if (text[i] == '/' && i + 1 < e && text[i + 1] == '/') {
    size_t newline = text.find('\n', i);
    i = newline == llvm::StringRef::npos ? e : newline - 1;
    return true;
  }
  return false;
}

/// The offset where the brackets of `text` first nest deeper than
/// kMaxInputNesting, or npos. Strings and comments do not count, nor does
/// the '>' of "->" or ">=".
static size_t findTooDeep(llvm::StringRef text) {
  unsigned depth = 0;
  for (size_t i = 0, e = text.size(); i < e; ++i) {
    if (skipStringOrComment(text, i))
      continue;
    char c = text[i];
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

/// The end of the SSA or block name that starts at `from` (after the
/// sigil): the first character that may not appear in one.
static size_t nameEnd(llvm::StringRef text, size_t from) {
  auto isNameChar = [](char c) {
    return llvm::isAlnum(c) || c == '_' || c == '$' || c == '.' || c == '-';
  };
  while (from < text.size() && isNameChar(text[from]))
    ++from;
  return from;
}

/// The offset of the first SSA value used before its definition, or out of
/// the region that defines it, or npos. Regions are the text between braces
/// (attribute dictionaries, which define nothing, count as regions too);
/// definitions are results (`%a, %b:2 =`), block arguments (`^bb0(%x: ...)`)
/// and `%name:` written without a space (function-style arguments).
static size_t findForwardReference(llvm::StringRef text) {
  std::vector<llvm::StringSet<>> scopes(1);
  auto isDefined = [&](llvm::StringRef name) {
    for (const llvm::StringSet<> &scope : scopes)
      if (scope.contains(name))
        return true;
    return false;
  };
  // Names read since the last '=' or newline at this nesting, that become
  // results if an '=' follows.
  struct Pending {
    llvm::StringRef name;
    size_t offset;
  };
  std::vector<Pending> pending;
  auto flushAsUses = [&]() -> size_t {
    for (const Pending &p : pending)
      if (!isDefined(p.name))
        return p.offset;
    pending.clear();
    return llvm::StringRef::npos;
  };
  int blockArgDepth = -1; // paren depth of a `^bb(` list, or -1
  int parenDepth = 0;
  for (size_t i = 0, e = text.size(); i < e; ++i) {
    if (skipStringOrComment(text, i))
      continue;
    char c = text[i];
    if (c == '^') {
      size_t j = nameEnd(text, i + 1);
      if (j < e && text[j] == '(' && blockArgDepth < 0) {
        blockArgDepth = parenDepth;
        ++parenDepth;
        i = j;
      }
      continue;
    }
    if (c == '(') {
      ++parenDepth;
      continue;
    }
    if (c == ')') {
      if (--parenDepth == blockArgDepth)
        blockArgDepth = -1;
      continue;
    }
    if (c == '=') {
      // `%a, %b =`: the pending names are results ("==" is not MLIR).
      for (const Pending &p : pending)
        scopes.back().insert(p.name);
      pending.clear();
      continue;
    }
    if (c == '\n' || c == '{' || c == '}' || c == ';') {
      if (size_t at = flushAsUses(); at != llvm::StringRef::npos)
        return at;
      if (c == '{')
        scopes.emplace_back();
      else if (c == '}' && scopes.size() > 1)
        scopes.pop_back();
      continue;
    }
    if (c != '%')
      continue;
    size_t j = nameEnd(text, i + 1);
    llvm::StringRef name = text.slice(i + 1, j);
    if (name.empty())
      continue;
    bool defined =
        blockArgDepth >= 0 ||
        (j < e && text[j] == ':' && !(j + 1 < e && llvm::isDigit(text[j + 1])));
    if (defined) {
      scopes.back().insert(name);
    } else if (j < e && (text[j] == ':' || text[j] == ',' || text[j] == ' ')) {
      // Maybe a result (`%a:2 =`, `%a, %b =`): decided at '=' or newline.
      pending.push_back({name, i});
    } else if (!isDefined(name)) {
      return i;
    }
    i = j - 1;
  }
  return flushAsUses();
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
  // MLIR resolves a forward reference to whatever the name later defines,
  // even a block argument of another region; when that region then fails
  // to parse, the use is left pointing at freed memory. FlashTile's
  // kernels never need a forward reference (every region has one block),
  // so none is parsed.
  if (size_t at = findForwardReference(text); at != llvm::StringRef::npos) {
    emitError(locationOf(at))
        << "'" << text.slice(at, nameEnd(text, at + 1))
        << "' is used before its definition, or outside the region that "
           "defines it; a kernel defines each value before its uses";
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
