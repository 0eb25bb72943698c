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

#include "LoweringUtils.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"

#include <map>
#include <optional>
#include <tuple>

namespace flashtile::attn::lowering {

using mlir::ArrayRef;
using mlir::DenseMap;
using mlir::Operation;
using mlir::Region;
using mlir::SmallVector;
using mlir::Type;
using mlir::Value;
using mlir::ValueRange;

/// Emits the body of a hook region for one set of argument values.
class HookEmitter {
public:
  HookEmitter(Emitter &e, Operation *anchor) : e(e), anchor(anchor) {}

  /// The values `hook` yields when its block arguments are `args` (each
  /// plus the constant in `argOffsets`, when given). With `scoreFactor`, the
  /// first argument stands for args[0] * scoreFactor.
  SmallVector<Value> emitAll(Region &hook, ValueRange args,
                             ArrayRef<int64_t> argOffsets = {},
                             Value scoreFactor = {});
  /// The one value a score_mod / mask_mod yields.
  Value emit(Region &hook, ValueRange args, ArrayRef<int64_t> argOffsets = {},
             Value scoreFactor = {}) {
    return emitAll(hook, args, argOffsets, scoreFactor).front();
  }

private:
  Value emitOp(Operation &op);
  Type convert(Type type) {
    return type.isIndex() ? e.builder().getI32Type() : type;
  }
  Value in(Operation &op, unsigned i) { return get(op.getOperand(i)); }
  /// The emitted value of hook value `v`.
  Value get(Value v);
  /// Index arithmetic as base + constant (a null base is a constant).
  struct Affine {
    Value base;
    int64_t offset = 0;
  };
  Affine affineOf(Value v);
  /// addi / subi of indices, kept as base + constant so that elements whose
  /// positions differ by constants share the code of equal bases.
  std::optional<Affine> affineStep(Operation &op);
  /// A float kept as raw * factor: the score before its softmax scale. A
  /// multiplication or division by a constant folds into the factor, which
  /// is the same for every element, so a softcap's (score * scale) / cap
  /// costs one multiply per score.
  struct Scaled {
    Value raw, factor;
  };
  std::optional<Scaled> scaledStep(Operation &op);
  template <typename LLVMOp, typename... Attrs>
  Value binary(Operation &op, Attrs... attrs) {
    return LLVMOp::create(e.builder(), op.getLoc(), in(op, 0), in(op, 1),
                          attrs...);
  }
  template <typename LLVMOp>
  Value convertOp(Operation &op) {
    return LLVMOp::create(e.builder(), op.getLoc(),
                          convert(op.getResult(0).getType()), in(op, 0));
  }
  /// Integer resize of `value` to `to`, sign- or zero-extending.
  Value resize(Value value, Type to, bool isSigned);
  /// `fn` computed in f32 on a value of any float type.
  Value inF32(Value x, llvm::function_ref<Value(Value)> fn);
  Value erf(Value x);
  Value load(mlir::memref::LoadOp op);
  Value size(attn::SizeOp op);

  Emitter &e;
  Operation *anchor;
  DenseMap<Value, Value> values;
  DenseMap<Value, Affine> affine;
  DenseMap<Value, Scaled> scaled;
  /// factor * constant, shared by every emit.
  std::map<std::pair<void *, uint32_t>, Value> factors;
  /// Emitted bases and materialized (base, offset) pairs, shared by every
  /// emit of this emitter (it emits in one straight line).
  std::map<std::tuple<int, void *, void *>, Value> bases;
  std::map<std::pair<void *, int64_t>, Value> materialized;
  /// memref values of the hook: their extra argument's first kernel
  /// parameter.
  DenseMap<Value, int64_t> tensors;
};


} // namespace flashtile::attn::lowering

#endif // FLASHTILE_LIB_CONVERSION_ATTNTONVVM_HOOKEMITTER_H
