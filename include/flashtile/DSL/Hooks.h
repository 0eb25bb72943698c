//===- Hooks.h - C++ DSL: score_mod / mask_mod as C++ callables -*- C++ -*-===//
//
// Variant hooks written as ordinary C++ lambdas over `Expr`, FlexAttention's
// idea in C++:
//
//   spec.scoreMod = [](Score s, Idx b, Idx h, Idx q, Idx k) {
//     return 50.f * tanh(s / 50.f);
//   };
//   Tensor docIds = spec.addTensor("doc_ids", DType::I32, 1);
//   spec.maskMod = [=](Idx b, Idx h, Idx q, Idx k) {
//     return docIds[q] == docIds[k];
//   };
//
// buildAttentionKernel calls each lambda once, with Exprs standing for the
// hook's arguments; every operator and function on an Expr appends the
// matching arith / math / memref op to the hook region. So a hook is traced,
// not interpreted: what the lambda computes at build time is what the kernel
// computes per score.
//
// Types. An Expr is a score (f32), an index, or a condition (i1). Integer
// tensor elements and integer scalars read as indices, float ones (f16,
// bf16, f32) as f32. Numeric literals take the type of the other operand
// (an integer literal next to a score is a float). An index meeting a score
// or a float literal becomes a float, as in torch and the Python front end
// (flashtile/_tracer.py): `s + slopes[h] * (k - q)` and `q * 0.5f` are f32.
// Integer `/` and `%` truncate, as in C++ (Python's `/` of indices is a
// float, its `//` and `%` floor, as torch's do). `&&`, `||` and `!` build i1 logic and do not
// short-circuit.
//
// Errors. A misuse (a type mismatch, a tensor that the spec does not
// declare, a wrong index count, a hook that returns the wrong type) becomes
// an error diagnostic at the user's source line where one is known (tensor
// reads and functions capture it), naming the construct; the first error
// stops the build of the kernel and buildAttentionKernel fails.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHTILE_DSL_HOOKS_H
#define FLASHTILE_DSL_HOOKS_H

#include "flashtile/Dialect/Attn/IR/CallerLocation.h"

#include "mlir/IR/Location.h"
#include "mlir/IR/Value.h"

#include <functional>
#include <string>

namespace flashtile::dsl {

namespace detail {
class HookTracer;
} // namespace detail

/// A value of a hook being traced: a score (f32), an index, a condition
/// (i1), or a numeric literal not yet given a type.
class Expr {
public:
  Expr(float value) : literal(value), isFloatLiteral(true) {}
  Expr(double value) : literal(value), isFloatLiteral(true) {}
  Expr(int value) : literal(value) {}
  Expr(long value) : literal(static_cast<double>(value)) {}
  Expr(long long value) : literal(static_cast<double>(value)) {}

  /// The IR value, or null for a literal.
  mlir::Value getValue() const { return value; }
  /// Where the value was built; null for a literal.
  mlir::LocationAttr getLoc() const { return loc; }
  bool isLiteral() const { return !value; }
  double getLiteral() const { return literal; }
  bool isFloatLit() const { return isFloatLiteral; }

  /// Used by the tracer only.
  Expr(mlir::Value value, mlir::LocationAttr loc) : value(value), loc(loc) {}

private:
  mlir::Value value;
  mlir::LocationAttr loc;
  double literal = 0.0;
  bool isFloatLiteral = false;
};

/// The names the examples use for a hook's arguments.
using Score = Expr;
using Idx = Expr;

/// score_mod(score, batch, head, q_idx, kv_idx) -> score. `score` is the
/// scaled score (softmax_scale * q.k); q_idx is the query's position in its
/// sequence, head its query head.
using ScoreModFn = std::function<Expr(Expr, Expr, Expr, Expr, Expr)>;
/// mask_mod(batch, head, q_idx, kv_idx) -> condition; true keeps the key.
using MaskModFn = std::function<Expr(Expr, Expr, Expr, Expr)>;
/// sink(b, h) -> the f32 logit of an attention sink: it joins every row's
/// softmax denominator (attn.attention's `sink` region).
using SinkFn = std::function<Expr(Expr, Expr)>;

/// An extra tensor argument of the kernel, by name. Reading it in a hook
/// needs the spec to declare it (AttentionSpec::addTensor or extraArgs).
class Tensor {
public:
  explicit Tensor(std::string name) : name(std::move(name)) {}
  const std::string &getName() const { return name; }

  Expr operator[](const Expr &i) const;
  Expr operator()(const Expr &i, FLASHTILE_CALLER) const;
  Expr operator()(const Expr &i, const Expr &j, FLASHTILE_CALLER) const;
  Expr operator()(const Expr &i, const Expr &j, const Expr &k,
                  FLASHTILE_CALLER) const;
  Expr operator()(const Expr &i, const Expr &j, const Expr &k, const Expr &l,
                  FLASHTILE_CALLER) const;

private:
  std::string name;
};

/// An extra scalar argument of the kernel, by name; converts to an Expr in a
/// hook.
class Scalar {
public:
  explicit Scalar(std::string name) : name(std::move(name)) {}
  const std::string &getName() const { return name; }
  operator Expr() const;

private:
  std::string name;
};

// Arithmetic and comparisons. The location of a result is its left
// operand's.
Expr operator+(const Expr &a, const Expr &b);
Expr operator-(const Expr &a, const Expr &b);
Expr operator*(const Expr &a, const Expr &b);
Expr operator/(const Expr &a, const Expr &b);
Expr operator%(const Expr &a, const Expr &b);
Expr operator-(const Expr &a);
Expr operator==(const Expr &a, const Expr &b);
Expr operator!=(const Expr &a, const Expr &b);
Expr operator<(const Expr &a, const Expr &b);
Expr operator<=(const Expr &a, const Expr &b);
Expr operator>(const Expr &a, const Expr &b);
Expr operator>=(const Expr &a, const Expr &b);
Expr operator&&(const Expr &a, const Expr &b);
Expr operator||(const Expr &a, const Expr &b);
Expr operator!(const Expr &a);

#define FLASHTILE_DSL_UNARY(name) Expr name(const Expr &x, FLASHTILE_CALLER);
#define FLASHTILE_DSL_BINARY(name)                                             \
  Expr name(const Expr &x, const Expr &y, FLASHTILE_CALLER);
// f32 -> f32, on the SFU where the chip has it (tanh.approx, ex2, lg2).
FLASHTILE_DSL_UNARY(tanh)
FLASHTILE_DSL_UNARY(exp)
FLASHTILE_DSL_UNARY(exp2)
FLASHTILE_DSL_UNARY(log)
FLASHTILE_DSL_UNARY(log2)
FLASHTILE_DSL_UNARY(sqrt)
FLASHTILE_DSL_UNARY(rsqrt)
FLASHTILE_DSL_UNARY(erf)
FLASHTILE_DSL_UNARY(floor)
FLASHTILE_DSL_UNARY(ceil)
FLASHTILE_DSL_UNARY(sin)
FLASHTILE_DSL_UNARY(cos)
/// |x| of a score or an index.
FLASHTILE_DSL_UNARY(abs)
/// An index as an f32.
FLASHTILE_DSL_UNARY(toFloat)
/// A score as an index, rounded toward zero (finite values only).
FLASHTILE_DSL_UNARY(toIndex)
/// x^y for x > 0 (2^(y log2 x)).
FLASHTILE_DSL_BINARY(pow)
/// Of two scores or two indices.
FLASHTILE_DSL_BINARY(min)
FLASHTILE_DSL_BINARY(max)
#undef FLASHTILE_DSL_UNARY
#undef FLASHTILE_DSL_BINARY

/// `cond ? a : b`, elementwise.
Expr where(const Expr &cond, const Expr &a, const Expr &b, FLASHTILE_CALLER);

/// The run-time sizes of the launch, as indices.
Expr seqlenQ();
Expr seqlenK();
Expr headsQ();
Expr headsKV();
Expr batchSize();

} // namespace flashtile::dsl

#endif // FLASHTILE_DSL_HOOKS_H
