//===- HookTracer.h - Builds a hook region from a traced lambda -*- C++ -*-===//
//
// Private to dsl/: the state behind the Expr operators while
// buildAttentionKernel calls a hook lambda. One tracer is active per thread;
// it appends ops at the end of the hook's block and keeps the first error.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHTILE_DSL_HOOKTRACER_H
#define FLASHTILE_DSL_HOOKTRACER_H

#include "flashtile/DSL/Hooks.h"
#include "flashtile/Dialect/Attn/IR/Attn.h"

#include "mlir/IR/Builders.h"

#include <optional>

namespace flashtile::dsl::detail {

class HookTracer {
public:
  /// Traces into the end of `block`, a hook region of an attn.attention of
  /// `kernel`; `hookName` ("score_mod", "mask_mod") starts every error.
  HookTracer(attn::KernelOp kernel, mlir::Block *block,
             llvm::StringRef hookName);
  ~HookTracer();
  HookTracer(const HookTracer &) = delete;
  HookTracer &operator=(const HookTracer &) = delete;

  /// The active tracer; Exprs are only built inside a traced hook.
  static HookTracer &get();
  bool hasFailed() const { return hadError; }

  mlir::Location at(const char *file, unsigned line);
  /// Where `x` was built, or the hook itself for a literal.
  mlir::Location locOf(const Expr &x) {
    return x.getLoc() ? mlir::Location(x.getLoc()) : hookLoc;
  }

  Expr arithmetic(const Expr &a, const Expr &c, llvm::StringRef what);
  Expr compare(const Expr &a, const Expr &c, llvm::StringRef what);
  Expr logic(const Expr &a, const Expr *c, llvm::StringRef what);
  Expr unary(const Expr &a, llvm::StringRef what, mlir::Location loc);
  Expr select(const Expr &cond, const Expr &a, const Expr &c,
              mlir::Location loc);
  Expr read(const Tensor &tensor, llvm::ArrayRef<const Expr *> indices,
            mlir::Location loc);
  Expr scalar(const Scalar &scalar);
  Expr size(llvm::StringRef name);
  /// A hook argument.
  Expr argument(mlir::Value value) { return Expr(value, hookLoc); }

  /// The hook's result as a value of `expected` (named `expectedName` in
  /// errors), or failure after any error of the trace.
  mlir::FailureOr<mlir::Value> finish(const Expr &result, mlir::Type expected,
                                      llvm::StringRef expectedName);

private:
  /// Emits `message` at `loc` once (the first error wins) and returns a
  /// placeholder so that tracing can run to the end.
  Expr fail(mlir::Location loc, const llvm::Twine &message);
  Expr poison(mlir::Location loc);
  std::string describe(const Expr &x);
  mlir::Value materialize(const Expr &x, mlir::Type type, mlir::Location loc);
  /// An index as f32 (toFloat, and the promotion of unify).
  mlir::Value indexToFloat(mlir::Value index, mlir::Location loc);
  std::optional<std::pair<mlir::Value, mlir::Value>>
  unify(const Expr &a, const Expr &c, llvm::StringRef what,
        mlir::Location loc);
  mlir::BlockArgument lookupArg(llvm::StringRef name, llvm::StringRef kind,
                                mlir::Location loc);
  /// Tensor elements and scalars as hook values: floats as f32, integers as
  /// indices.
  mlir::Value toHookValue(mlir::Value value, mlir::Location loc);

  attn::KernelOp kernel;
  std::string hookName;
  mlir::OpBuilder b;
  mlir::Location hookLoc;
  bool hadError = false;
  HookTracer *previous = nullptr;
};

} // namespace flashtile::dsl::detail

#endif // FLASHTILE_DSL_HOOKTRACER_H
