//===- Input.h - Reading a kernel's text, within bounds ---------*- C++ -*-===//
//
// Every client reads IR through here (the driver's files and standard
// input, the compile API's strings, the Python binding's, flashtile-opt's
// input), so that the bounds below hold for all of them: an input from
// /dev/zero or a file of twenty thousand nested brackets gets an error
// instead of exhausting memory or the parser's stack, and a value used
// before its definition gets an error instead of reaching the parser.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHTILE_COMPILER_INPUT_H
#define FLASHTILE_COMPILER_INPUT_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"

#include <memory>
#include <string>

namespace flashtile {

/// The largest input the compiler reads (kernels are kilobytes).
constexpr uint64_t kMaxInputBytes = 16ull << 20;
/// The deepest nesting of brackets ( [ { < the parser is given; real
/// kernels nest about ten deep, and the parser recurses once per level.
constexpr unsigned kMaxInputNesting = 256;

/// Reads `path` ("-": standard input), at most kMaxInputBytes of it. On
/// failure returns null and sets `error` (it names the file and the limit).
std::unique_ptr<llvm::MemoryBuffer> readInputFile(llvm::StringRef path,
                                                  std::string &error);

/// Checks the size, the bracket nesting and the absence of forward SSA
/// references (MLIR's parser can leave a use of freed memory behind one
/// when a later region fails to parse) in the main buffer of `sourceMgr`;
/// a problem is an error diagnostic on `ctx` located in the buffer.
mlir::LogicalResult checkInputBounds(mlir::MLIRContext &ctx,
                                     llvm::SourceMgr &sourceMgr);

/// Parses the main buffer of `sourceMgr` into a module after
/// checkInputBounds; every problem is a diagnostic on `ctx` with the
/// buffer's location.
mlir::OwningOpRef<mlir::ModuleOp> parseInput(mlir::MLIRContext &ctx,
                                             llvm::SourceMgr &sourceMgr);

} // namespace flashtile

#endif // FLASHTILE_COMPILER_INPUT_H
