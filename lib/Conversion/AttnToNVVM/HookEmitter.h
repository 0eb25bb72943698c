//===- HookEmitter.h - Hook regions as LLVM dialect ops ---------*- C++ -*-===//
//
// Private to lib/Conversion/AttnToNVVM: emits the body of a score_mod /
// mask_mod / key_range region for one set of argument values, as LLVM
// dialect ops at the Emitter's insertion point. The regions hold the ops the
// hook contract allows (attn::isSupportedHookOp); index is i32 like the rest
// of the kernel. Emitting the same hook for many elements in one straight
// line shares work between them: index arithmetic is kept as base + constant
// (elements on one diagonal share what they compute from k - q), the score
// is kept as raw * factor until used (a multiply or division by a constant
// folds into the softmax scale), and what does not depend on the element
// comes out identical and is merged by LLVM's CSE.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHTILE_LIB_CONVERSION_ATTNTONVVM_HOOKEMITTER_H
#define FLASHTILE_LIB_CONVERSION_ATTNTONVVM_HOOKEMITTER_H

#include "TileOpContext.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

#include "llvm/ADT/DenseSet.h"

#include <functional>
#include <map>
#include <optional>
#include <tuple>

namespace flashtile::attn::lowering {

/// Emits the body of a hook region for one set of argument values.
class HookEmitter {
public:
  HookEmitter(Emitter &e, mlir::Operation *anchor) : e(e), anchor(anchor) {}

  /// The values `hook` yields when its block arguments are `args` (each
  /// plus the constant in `argOffsets`, when given). With `scoreFactor`, the
  /// first argument stands for args[0] * scoreFactor.
  llvm::SmallVector<mlir::Value>
  emitAll(mlir::Region &hook, mlir::ValueRange args,
          llvm::ArrayRef<int64_t> argOffsets = {},
          mlir::Value scoreFactor = {});
  /// The one value a score_mod / mask_mod yields.
  mlir::Value emit(mlir::Region &hook, mlir::ValueRange args,
                   llvm::ArrayRef<int64_t> argOffsets = {},
                   mlir::Value scoreFactor = {}) {
    return emitAll(hook, args, argOffsets, scoreFactor).front();
  }

  /// Where set, an attn.for_each body's `memref.atomic_rmw addf` is handed
  /// here (the op, the element's address, the value to add) instead of
  /// being emitted as an atomic add: the caller sums what every element
  /// adds at one address first.
  std::function<void(mlir::Operation *, mlir::Value, mlir::Value)>
      onAccumulate;
  /// `value` added to `address` with an f32 atomic.
  void atomicAdd(mlir::Value address, mlir::Value value);

  /// From now on, score_mod term `term` (DiagonalTerm.h) is read from the
  /// diagonal table: `origin` points at its entry for k - q = 0, and the
  /// entries of k - q = origin + d follow one f32 apart.
  void useDiagonalTable(mlir::Operation *term, mlir::Value origin);
  /// The value of `term`, an op of `hook`, when the block arguments are
  /// `args`: what the diagonal table holds.
  mlir::Value emitTerm(mlir::Region &hook, mlir::ValueRange args,
                       mlir::Operation *term);

private:
  mlir::Value emitOp(mlir::Operation &op);
  /// The table entry of the score_mod's diagonal term for these k and q.
  mlir::Value diagonalTableRead(mlir::Region &hook);
  mlir::Type convert(mlir::Type type) {
    return type.isIndex() ? e.builder().getI32Type() : type;
  }
  mlir::Value in(mlir::Operation &op, unsigned i) {
    return get(op.getOperand(i));
  }
  /// The emitted value of hook value `v`.
  mlir::Value get(mlir::Value v);
  /// Index arithmetic as base + constant (a null base is a constant).
  struct Affine {
    mlir::Value base;
    int64_t offset = 0;
  };
  Affine affineOf(mlir::Value v);
  /// addi / subi of indices, kept as base + constant so that elements whose
  /// positions differ by constants share the code of equal bases.
  std::optional<Affine> affineStep(mlir::Operation &op);
  /// A float kept as raw * factor: the score before its softmax scale. A
  /// multiplication or division by a constant folds into the factor, which
  /// is the same for every element, so a softcap's (score * scale) / cap
  /// costs one multiply per score.
  struct Scaled {
    mlir::Value raw, factor;
  };
  std::optional<Scaled> scaledStep(mlir::Operation &op);
  template <typename LLVMOp, typename... Attrs>
  mlir::Value binary(mlir::Operation &op, Attrs... attrs) {
    return LLVMOp::create(e.builder(), op.getLoc(), in(op, 0), in(op, 1),
                          attrs...);
  }
  template <typename LLVMOp> mlir::Value convertOp(mlir::Operation &op) {
    return LLVMOp::create(e.builder(), op.getLoc(),
                          convert(op.getResult(0).getType()), in(op, 0));
  }
  /// Integer resize of `value` to `to`, sign- or zero-extending.
  mlir::Value resize(mlir::Value value, mlir::Type to, bool isSigned);
  /// `fn` computed in f32 on a value of any float type.
  mlir::Value inF32(mlir::Value x,
                    llvm::function_ref<mlir::Value(mlir::Value)> fn);
  mlir::Value erf(mlir::Value x);
  mlir::Value pow(mlir::math::PowFOp op);
  mlir::Value load(mlir::memref::LoadOp op);
  /// The address of `memref[indices]` in the hook's extra tensor, each
  /// index clamped into the tensor.
  mlir::Value elementAddress(mlir::Value memref, mlir::ValueRange indices);
  mlir::Value accumulate(mlir::memref::AtomicRMWOp op);
  mlir::Value size(attn::SizeOp op);

  Emitter &e;
  mlir::Operation *anchor;
  llvm::DenseMap<mlir::Value, mlir::Value> values;
  llvm::DenseMap<mlir::Value, Affine> affine;
  llvm::DenseMap<mlir::Value, Scaled> scaled;
  /// factor * constant, shared by every emit.
  std::map<std::pair<void *, uint32_t>, mlir::Value> factors;
  /// Emitted bases and materialized (base, offset) pairs, shared by every
  /// emit of this emitter (it emits in one straight line).
  std::map<std::tuple<int, void *, void *>, mlir::Value> bases;
  std::map<std::pair<void *, int64_t>, mlir::Value> materialized;
  /// float(base) per index base.
  std::map<void *, mlir::Value> floatBases;
  /// memref values of the hook: their extra argument's first kernel
  /// parameter.
  llvm::DenseMap<mlir::Value, int64_t> tensors;
  mlir::Operation *diagonalTerm = nullptr;
  mlir::Value diagonalOrigin;
  /// The ops of the score_mod still needed with the term read from the
  /// table, and the table address per k - q base.
  llvm::DenseSet<mlir::Operation *> neededOps;
  std::map<void *, mlir::Value> diagonalRows;
  /// emitAll stops after this op (emitTerm).
  mlir::Operation *stopAfter = nullptr;
};

} // namespace flashtile::attn::lowering

#endif // FLASHTILE_LIB_CONVERSION_ATTNTONVVM_HOOKEMITTER_H
