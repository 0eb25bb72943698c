//===- Hooks.cpp - Tracing C++ hook lambdas into hook regions -------------===//

#include "HookTracer.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace flashtile;
using namespace flashtile::attn;
using namespace flashtile::dsl;
using flashtile::dsl::detail::HookTracer;

namespace {
/// The tracer of the hook being built on this thread, if any.
thread_local HookTracer *activeTracer = nullptr;
} // namespace

HookTracer::HookTracer(KernelOp kernel, Block *block, StringRef hookName)
    : kernel(kernel), hookName(hookName.str()), b(OpBuilder::atBlockEnd(block)),
      hookLoc(NameLoc::get(b.getStringAttr(hookName), kernel.getLoc())) {
  previous = activeTracer;
  activeTracer = this;
}

HookTracer::~HookTracer() { activeTracer = previous; }

HookTracer &HookTracer::get() {
  // Exprs exist only inside a hook being traced; a literal-only expression
  // never reaches here.
  assert(activeTracer && "a hook Expr is used outside buildAttentionKernel");
  return *activeTracer;
}

Location HookTracer::at(const char *file, unsigned line) {
  return getCallerLocation(file, line, hookLoc);
}

Expr HookTracer::fail(Location loc, const Twine &message) {
  if (!hadError) {
    hadError = true;
    emitError(loc) << hookName << ": " << message;
  }
  return poison(loc);
}

Expr HookTracer::poison(Location loc) {
  // Any value of the right kind keeps the trace going after an error; the
  // kernel is discarded.
  return Expr(arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.0f)), loc);
}

std::string HookTracer::describe(const Expr &x) {
  if (x.isLiteral())
    return x.isFloatLit() ? "a float literal" : "an integer literal";
  Type type = x.getValue().getType();
  if (type.isF32())
    return "a score (f32)";
  if (type.isIndex())
    return "an index";
  if (type.isInteger(1))
    return "a condition (i1)";
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "a value of type " << type;
  return s;
}

Value HookTracer::materialize(const Expr &x, Type type, Location loc) {
  if (!x.isLiteral())
    return x.getValue();
  if (type.isF32())
    return arith::ConstantOp::create(
        b, loc, b.getF32FloatAttr(static_cast<float>(x.getLiteral())));
  return arith::ConstantIndexOp::create(b, loc,
                                        static_cast<int64_t>(x.getLiteral()));
}

Value HookTracer::indexToFloat(Value index, Location loc) {
  Value wide = arith::IndexCastOp::create(b, loc, b.getI32Type(), index);
  return arith::SIToFPOp::create(b, loc, b.getF32Type(), wide);
}

std::optional<std::pair<Value, Value>>
HookTracer::unify(const Expr &a, const Expr &c, StringRef what, Location loc) {
  if (a.isLiteral() && c.isLiteral()) {
    // Both literals: a float if either is.
    Type type = a.isFloatLit() || c.isFloatLit() ? Type(b.getF32Type())
                                                 : Type(b.getIndexType());
    return std::make_pair(materialize(a, type, loc), materialize(c, type, loc));
  }
  Type type = a.isLiteral() ? c.getValue().getType() : a.getValue().getType();
  const Expr &literal = a.isLiteral() ? a : c;
  if (literal.isLiteral() && type.isInteger(1)) {
    fail(loc,
         llvm::formatv("'{0}' combines a condition (i1) with a number", what));
    return std::nullopt;
  }
  Type f32 = b.getF32Type();
  // torch's promotion: an index meeting a score or a float literal is a
  // float (the Python front end's rule, _tracer.py's _unify).
  auto promoted = [&](const Expr &x) {
    Value v = materialize(x, x.isLiteral() ? f32 : x.getValue().getType(), loc);
    return v.getType().isIndex() ? indexToFloat(v, loc) : v;
  };
  if (literal.isLiteral() && type.isIndex() && literal.isFloatLit())
    return std::make_pair(promoted(a), promoted(c));
  if (!a.isLiteral() && !c.isLiteral() &&
      a.getValue().getType() != c.getValue().getType()) {
    Type x = a.getValue().getType(), y = c.getValue().getType();
    if ((x.isF32() && y.isIndex()) || (x.isIndex() && y.isF32()))
      return std::make_pair(promoted(a), promoted(c));
    fail(loc, llvm::formatv("'{0}' mixes {1} and {2}; a condition chooses "
                            "between values with where()",
                            what, describe(a), describe(c)));
    return std::nullopt;
  }
  return std::make_pair(materialize(a, type, loc), materialize(c, type, loc));
}

Expr HookTracer::arithmetic(const Expr &a, const Expr &c, StringRef what) {
  Location loc = locOf(a.isLiteral() ? c : a);
  auto operands = unify(a, c, what, loc);
  if (!operands)
    return poison(loc);
  auto [x, y] = *operands;
  Type type = x.getType();
  if (type.isInteger(1))
    return fail(loc, llvm::formatv("'{0}' does not apply to conditions; use "
                                   "&&, || and !",
                                   what));
  bool isFloat = type.isF32();
  Value result;
  if (what == "+")
    result = isFloat ? Value(arith::AddFOp::create(b, loc, x, y))
                     : Value(arith::AddIOp::create(b, loc, x, y));
  else if (what == "-")
    result = isFloat ? Value(arith::SubFOp::create(b, loc, x, y))
                     : Value(arith::SubIOp::create(b, loc, x, y));
  else if (what == "*")
    result = isFloat ? Value(arith::MulFOp::create(b, loc, x, y))
                     : Value(arith::MulIOp::create(b, loc, x, y));
  else if (what == "/")
    result = isFloat ? Value(arith::DivFOp::create(b, loc, x, y))
                     : Value(arith::DivSIOp::create(b, loc, x, y));
  else if (what == "%") {
    if (isFloat)
      return fail(loc, "'%' takes indices, got a score (f32)");
    result = arith::RemSIOp::create(b, loc, x, y);
  } else if (what == "min")
    result = isFloat ? Value(arith::MinimumFOp::create(b, loc, x, y))
                     : Value(arith::MinSIOp::create(b, loc, x, y));
  else if (what == "max")
    result = isFloat ? Value(arith::MaximumFOp::create(b, loc, x, y))
                     : Value(arith::MaxSIOp::create(b, loc, x, y));
  else {
    assert(what == "pow" && "the operators above and pow");
    if (!isFloat)
      return fail(loc, "pow takes scores (f32), got indices; use toFloat()");
    result = math::PowFOp::create(b, loc, x, y);
  }
  return Expr(result, loc);
}

Expr HookTracer::compare(const Expr &a, const Expr &c, StringRef what) {
  Location loc = locOf(a.isLiteral() ? c : a);
  auto operands = unify(a, c, what, loc);
  if (!operands)
    return poison(loc);
  auto [x, y] = *operands;
  if (x.getType().isF32()) {
    auto predicate = llvm::StringSwitch<arith::CmpFPredicate>(what)
                         .Case("==", arith::CmpFPredicate::OEQ)
                         .Case("!=", arith::CmpFPredicate::UNE)
                         .Case("<", arith::CmpFPredicate::OLT)
                         .Case("<=", arith::CmpFPredicate::OLE)
                         .Case(">", arith::CmpFPredicate::OGT)
                         .Case(">=", arith::CmpFPredicate::OGE)
                         .Default(arith::CmpFPredicate::OGE);
    return Expr(arith::CmpFOp::create(b, loc, predicate, x, y), loc);
  }
  auto predicate = llvm::StringSwitch<arith::CmpIPredicate>(what)
                       .Case("==", arith::CmpIPredicate::eq)
                       .Case("!=", arith::CmpIPredicate::ne)
                       .Case("<", arith::CmpIPredicate::slt)
                       .Case("<=", arith::CmpIPredicate::sle)
                       .Case(">", arith::CmpIPredicate::sgt)
                       .Case(">=", arith::CmpIPredicate::sge)
                       .Default(arith::CmpIPredicate::sge);
  if (x.getType().isInteger(1) && what != "==" && what != "!=")
    return fail(loc, llvm::formatv("'{0}' does not order conditions", what));
  return Expr(arith::CmpIOp::create(b, loc, predicate, x, y), loc);
}

Expr HookTracer::logic(const Expr &a, const Expr *c, StringRef what) {
  Location loc = locOf(a.isLiteral() && c ? *c : a);
  auto isCondition = [](const Expr &x) {
    return !x.isLiteral() && x.getValue().getType().isInteger(1);
  };
  if (!isCondition(a) || (c && !isCondition(*c)))
    return fail(loc,
                llvm::formatv("'{0}' takes conditions, got {1}{2}", what,
                              describe(a), c ? " and " + describe(*c) : ""));
  Value x = a.getValue();
  if (!c) {
    Value one = arith::ConstantOp::create(b, loc, b.getBoolAttr(true));
    return Expr(arith::XOrIOp::create(b, loc, x, one), loc);
  }
  Value y = c->getValue();
  if (what == "&&")
    return Expr(arith::AndIOp::create(b, loc, x, y), loc);
  return Expr(arith::OrIOp::create(b, loc, x, y), loc);
}

Expr HookTracer::unary(const Expr &a, StringRef what, Location loc) {
  if (what == "neg") {
    if (a.isLiteral())
      return a.isFloatLit() ? Expr(-a.getLiteral())
                            : Expr(static_cast<long long>(-a.getLiteral()));
    Type type = a.getValue().getType();
    if (type.isF32())
      return Expr(arith::NegFOp::create(b, loc, a.getValue()), loc);
    if (type.isIndex()) {
      Value zero = arith::ConstantIndexOp::create(b, loc, 0);
      return Expr(arith::SubIOp::create(b, loc, zero, a.getValue()), loc);
    }
    return fail(loc, "unary '-' does not apply to conditions");
  }
  if (what == "toFloat") {
    if (a.isLiteral())
      return Expr(a.getLiteral());
    Type type = a.getValue().getType();
    if (type.isF32()) // already a float, as flashtile.to_float has it
      return a;
    if (!type.isIndex())
      return fail(
          loc, llvm::formatv("toFloat takes an index, got {0}", describe(a)));
    return Expr(indexToFloat(a.getValue(), loc), loc);
  }
  if (what == "toIndex") {
    if (a.isLiteral())
      return Expr(static_cast<long long>(a.getLiteral()));
    if (!a.getValue().getType().isF32())
      return fail(loc, llvm::formatv("toIndex takes a score (f32), got {0}",
                                     describe(a)));
    Value narrow =
        arith::FPToSIOp::create(b, loc, b.getI32Type(), a.getValue());
    return Expr(arith::IndexCastOp::create(b, loc, b.getIndexType(), narrow),
                loc);
  }
  if (what == "abs" && !a.isLiteral() && a.getValue().getType().isIndex()) {
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    Value neg = arith::SubIOp::create(b, loc, zero, a.getValue());
    return Expr(arith::MaxSIOp::create(b, loc, a.getValue(), neg), loc);
  }
  if (!a.isLiteral() && !a.getValue().getType().isF32())
    return fail(loc, llvm::formatv("{0} takes a score (f32), got {1}{2}", what,
                                   describe(a),
                                   a.getValue().getType().isIndex()
                                       ? "; convert it with toFloat()"
                                       : ""));
  Value x = materialize(a, b.getF32Type(), loc);
  std::function<Value()> build =
      llvm::StringSwitch<std::function<Value()>>(what)
          .Case("tanh", [&] { return math::TanhOp::create(b, loc, x); })
          .Case("exp", [&] { return math::ExpOp::create(b, loc, x); })
          .Case("exp2", [&] { return math::Exp2Op::create(b, loc, x); })
          .Case("log", [&] { return math::LogOp::create(b, loc, x); })
          .Case("log2", [&] { return math::Log2Op::create(b, loc, x); })
          .Case("sqrt", [&] { return math::SqrtOp::create(b, loc, x); })
          .Case("rsqrt", [&] { return math::RsqrtOp::create(b, loc, x); })
          .Case("erf", [&] { return math::ErfOp::create(b, loc, x); })
          .Case("floor", [&] { return math::FloorOp::create(b, loc, x); })
          .Case("ceil", [&] { return math::CeilOp::create(b, loc, x); })
          .Case("sin", [&] { return math::SinOp::create(b, loc, x); })
          .Case("cos", [&] { return math::CosOp::create(b, loc, x); })
          .Case("abs", [&] { return math::AbsFOp::create(b, loc, x); })
          .Default(nullptr);
  assert(build && "every unary function of Hooks.h is listed");
  return Expr(build(), loc);
}

Expr HookTracer::select(const Expr &cond, const Expr &a, const Expr &c,
                        Location loc) {
  if (cond.isLiteral() || !cond.getValue().getType().isInteger(1))
    return fail(loc, llvm::formatv("where takes a condition first, got {0}",
                                   describe(cond)));
  auto operands = unify(a, c, "where", loc);
  if (!operands)
    return poison(loc);
  return Expr(arith::SelectOp::create(b, loc, cond.getValue(), operands->first,
                                      operands->second),
              loc);
}

/// The extra argument `name` of the kernel, or null after an error.
BlockArgument HookTracer::lookupArg(StringRef name, StringRef kind,
                                    Location loc) {
  for (auto [i, arg] : llvm::enumerate(kernel.getExtraArgs()))
    if (kernel.getExtraArgName(i) == name)
      return arg;
  fail(loc, llvm::formatv("{0} '{1}' is used but not declared: add it to the "
                          "spec (addTensor / addScalar, or extraArgs)",
                          kind, name));
  return {};
}

Expr HookTracer::read(const Tensor &tensor, ArrayRef<const Expr *> indices,
                      Location loc) {
  BlockArgument arg = lookupArg(tensor.getName(), "tensor", loc);
  if (!arg)
    return poison(loc);
  auto type = dyn_cast<MemRefType>(arg.getType());
  if (!type)
    return fail(loc, llvm::formatv("'{0}' is a scalar, not a tensor",
                                   tensor.getName()));
  if (type.getRank() != static_cast<int64_t>(indices.size()))
    return fail(loc, llvm::formatv("tensor '{0}' has rank {1} but is read "
                                   "with {2} index(es)",
                                   tensor.getName(), type.getRank(),
                                   indices.size()));
  SmallVector<Value> values;
  for (auto [d, index] : llvm::enumerate(indices)) {
    if (!index->isLiteral() && !index->getValue().getType().isIndex())
      return fail(loc, llvm::formatv("index {0} of tensor '{1}' is {2}; "
                                     "tensor indices are indices",
                                     d, tensor.getName(), describe(*index)));
    if (index->isLiteral() && index->isFloatLit())
      return fail(loc, llvm::formatv("index {0} of tensor '{1}' is the float "
                                     "literal {2}",
                                     d, tensor.getName(), index->getLiteral()));
    values.push_back(materialize(*index, b.getIndexType(), loc));
  }
  Value element = memref::LoadOp::create(b, loc, arg, values);
  return Expr(toHookValue(element, loc), loc);
}

Value HookTracer::toHookValue(Value value, Location loc) {
  Type type = value.getType();
  if (type.isF16() || type.isBF16())
    return arith::ExtFOp::create(b, loc, b.getF32Type(), value);
  if (isa<IntegerType>(type))
    return arith::IndexCastOp::create(b, loc, b.getIndexType(), value);
  return value;
}

Expr HookTracer::scalar(const Scalar &scalar) {
  Location loc = hookLoc;
  BlockArgument arg = lookupArg(scalar.getName(), "scalar", loc);
  if (!arg)
    return poison(loc);
  if (isa<MemRefType>(arg.getType()))
    return fail(loc, llvm::formatv("'{0}' is a tensor, not a scalar; index it",
                                   scalar.getName()));
  return Expr(toHookValue(arg, loc), loc);
}

Expr HookTracer::size(StringRef name) {
  Location loc = hookLoc;
  return Expr(SizeOp::create(b, loc, b.getIndexType(), b.getStringAttr(name)),
              loc);
}

FailureOr<Value> HookTracer::finish(const Expr &result, Type expected,
                                    StringRef expectedName) {
  Location loc = locOf(result);
  if (hadError)
    return failure();
  if (result.isLiteral() && expected.isF32())
    return materialize(result, expected, loc);
  if (result.isLiteral() || result.getValue().getType() != expected) {
    fail(loc, llvm::formatv("returns {0}; it must return {1}", describe(result),
                            expectedName));
    return failure();
  }
  return result.getValue();
}

//===----------------------------------------------------------------------===//
// The user-facing operators
//===----------------------------------------------------------------------===//

static Location here(const char *file, unsigned line) {
  return HookTracer::get().at(file, line);
}

Expr Tensor::operator[](const Expr &i) const {
  HookTracer &t = HookTracer::get();
  Location loc = t.locOf(i);
  return t.read(*this, {&i}, loc);
}
Expr Tensor::operator()(const Expr &i, const char *file, unsigned line) const {
  return HookTracer::get().read(*this, {&i}, here(file, line));
}
Expr Tensor::operator()(const Expr &i, const Expr &j, const char *file,
                        unsigned line) const {
  return HookTracer::get().read(*this, {&i, &j}, here(file, line));
}
Expr Tensor::operator()(const Expr &i, const Expr &j, const Expr &k,
                        const char *file, unsigned line) const {
  return HookTracer::get().read(*this, {&i, &j, &k}, here(file, line));
}
Expr Tensor::operator()(const Expr &i, const Expr &j, const Expr &k,
                        const Expr &l, const char *file, unsigned line) const {
  return HookTracer::get().read(*this, {&i, &j, &k, &l}, here(file, line));
}

Scalar::operator Expr() const { return HookTracer::get().scalar(*this); }

Expr dsl::operator+(const Expr &a, const Expr &b) {
  if (a.isLiteral() && b.isLiteral())
    return a.isFloatLit() || b.isFloatLit()
               ? Expr(a.getLiteral() + b.getLiteral())
               : Expr(static_cast<long long>(a.getLiteral() + b.getLiteral()));
  return HookTracer::get().arithmetic(a, b, "+");
}
Expr dsl::operator-(const Expr &a, const Expr &b) {
  return HookTracer::get().arithmetic(a, b, "-");
}
Expr dsl::operator*(const Expr &a, const Expr &b) {
  return HookTracer::get().arithmetic(a, b, "*");
}
Expr dsl::operator/(const Expr &a, const Expr &b) {
  return HookTracer::get().arithmetic(a, b, "/");
}
Expr dsl::operator%(const Expr &a, const Expr &b) {
  return HookTracer::get().arithmetic(a, b, "%");
}
Expr dsl::operator-(const Expr &a) {
  if (a.isLiteral())
    return a.isFloatLit() ? Expr(-a.getLiteral())
                          : Expr(static_cast<long long>(-a.getLiteral()));
  HookTracer &t = HookTracer::get();
  return t.unary(a, "neg", t.locOf(a));
}
Expr dsl::operator==(const Expr &a, const Expr &b) {
  return HookTracer::get().compare(a, b, "==");
}
Expr dsl::operator!=(const Expr &a, const Expr &b) {
  return HookTracer::get().compare(a, b, "!=");
}
Expr dsl::operator<(const Expr &a, const Expr &b) {
  return HookTracer::get().compare(a, b, "<");
}
Expr dsl::operator<=(const Expr &a, const Expr &b) {
  return HookTracer::get().compare(a, b, "<=");
}
Expr dsl::operator>(const Expr &a, const Expr &b) {
  return HookTracer::get().compare(a, b, ">");
}
Expr dsl::operator>=(const Expr &a, const Expr &b) {
  return HookTracer::get().compare(a, b, ">=");
}
Expr dsl::operator&&(const Expr &a, const Expr &b) {
  return HookTracer::get().logic(a, &b, "&&");
}
Expr dsl::operator||(const Expr &a, const Expr &b) {
  return HookTracer::get().logic(a, &b, "||");
}
Expr dsl::operator!(const Expr &a) {
  return HookTracer::get().logic(a, nullptr, "!");
}

#define FLASHTILE_DSL_DEFINE_UNARY(name)                                       \
  Expr dsl::name(const Expr &x, const char *file, unsigned line) {             \
    return HookTracer::get().unary(x, #name, here(file, line));                \
  }
FLASHTILE_DSL_DEFINE_UNARY(tanh)
FLASHTILE_DSL_DEFINE_UNARY(exp)
FLASHTILE_DSL_DEFINE_UNARY(exp2)
FLASHTILE_DSL_DEFINE_UNARY(log)
FLASHTILE_DSL_DEFINE_UNARY(log2)
FLASHTILE_DSL_DEFINE_UNARY(sqrt)
FLASHTILE_DSL_DEFINE_UNARY(rsqrt)
FLASHTILE_DSL_DEFINE_UNARY(erf)
FLASHTILE_DSL_DEFINE_UNARY(floor)
FLASHTILE_DSL_DEFINE_UNARY(ceil)
FLASHTILE_DSL_DEFINE_UNARY(sin)
FLASHTILE_DSL_DEFINE_UNARY(cos)
FLASHTILE_DSL_DEFINE_UNARY(abs)
FLASHTILE_DSL_DEFINE_UNARY(toFloat)
FLASHTILE_DSL_DEFINE_UNARY(toIndex)
#undef FLASHTILE_DSL_DEFINE_UNARY

static Expr binaryAt(const Expr &x, const Expr &y, StringRef what,
                     const char *file, unsigned line) {
  HookTracer &t = HookTracer::get();
  // The function call's line, not the operand's.
  Location loc = t.at(file, line);
  Expr located = x.isLiteral() ? x : Expr(x.getValue(), loc);
  return t.arithmetic(located, y, what);
}
Expr dsl::pow(const Expr &x, const Expr &y, const char *file, unsigned line) {
  return binaryAt(x, y, "pow", file, line);
}
Expr dsl::min(const Expr &x, const Expr &y, const char *file, unsigned line) {
  return binaryAt(x, y, "min", file, line);
}
Expr dsl::max(const Expr &x, const Expr &y, const char *file, unsigned line) {
  return binaryAt(x, y, "max", file, line);
}
Expr dsl::where(const Expr &cond, const Expr &a, const Expr &b,
                const char *file, unsigned line) {
  return HookTracer::get().select(cond, a, b, here(file, line));
}

Expr dsl::seqlenQ() { return HookTracer::get().size("seqlen_q"); }
Expr dsl::seqlenK() { return HookTracer::get().size("seqlen_k"); }
Expr dsl::headsQ() { return HookTracer::get().size("heads_q"); }
Expr dsl::headsKV() { return HookTracer::get().size("heads_kv"); }
Expr dsl::batchSize() { return HookTracer::get().size("batch"); }
