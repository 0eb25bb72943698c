//===- HookGradient.cpp - The derivative of a score_mod -------------------===//
//
// Reverse mode over the hook's one block: the forward ops are cloned in
// order, the values that depend on the score or on a differentiated read
// are marked active, and the adjoints are propagated from the result back
// through the active ops, each op's rule adding its operands' shares.
// Adjoints are f32 whatever the float type of their value (hooks compute
// in f32; narrower floats are tensor reads, extended before use).
//
//===----------------------------------------------------------------------===//

#include "flashtile/Dialect/Attn/Analysis/HookGradient.h"

#include "flashtile/Dialect/Attn/IR/Attn.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

using namespace mlir;
using namespace flashtile;
using namespace flashtile::attn;

namespace {
/// The reverse sweep's state and the f32 arithmetic its rules are written
/// in.
class Adjoints {
public:
  Adjoints(OpBuilder &b, Location loc) : b(b), loc(loc) {}

  Value f32(double v) {
    return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v));
  }
  /// `v` as an f32 (a narrower float extended).
  Value wide(Value v) {
    if (v.getType().isF32())
      return v;
    return arith::ExtFOp::create(b, loc, b.getF32Type(), v);
  }
  Value add(Value x, Value y) {
    return arith::AddFOp::create(b, loc, wide(x), wide(y));
  }
  Value sub(Value x, Value y) {
    return arith::SubFOp::create(b, loc, wide(x), wide(y));
  }
  Value mul(Value x, Value y) {
    return arith::MulFOp::create(b, loc, wide(x), wide(y));
  }
  Value div(Value x, Value y) {
    return arith::DivFOp::create(b, loc, wide(x), wide(y));
  }
  Value neg(Value x) { return arith::NegFOp::create(b, loc, wide(x)); }
  Value select(Value cond, Value x, Value y) {
    return arith::SelectOp::create(b, loc, cond, x, y);
  }
  Value cmp(arith::CmpFPredicate pred, Value x, Value y) {
    return arith::CmpFOp::create(b, loc, pred, wide(x), wide(y));
  }
  Value exp(Value x) { return math::ExpOp::create(b, loc, wide(x)); }
  Value log(Value x) { return math::LogOp::create(b, loc, wide(x)); }
  Value sin(Value x) { return math::SinOp::create(b, loc, wide(x)); }
  Value cos(Value x) { return math::CosOp::create(b, loc, wide(x)); }
  Value pow(Value x, Value y) {
    return math::PowFOp::create(b, loc, wide(x), wide(y));
  }

  /// The adjoint of `v` so far (null: none yet).
  Value get(Value v) const { return adjoint.lookup(v); }
  /// Adds `share()` to `v`'s adjoint if `v` is active (the share is
  /// emitted only then).
  void addTo(Value v, llvm::function_ref<Value()> share) {
    if (!active.contains(v))
      return;
    Value s = share();
    Value &slot = adjoint[v];
    slot = slot ? add(slot, s) : s;
  }

  llvm::DenseSet<Value> active;

private:
  OpBuilder &b;
  Location loc;
  llvm::DenseMap<Value, Value> adjoint;
};
} // namespace

/// Whether `op` is piecewise constant in its operands, so that it passes
/// no gradient: comparisons, conversions to integers, and the hook ops
/// that compute on integers.
static bool passesNoGradient(Operation *op) {
  if (isa<arith::CmpFOp, arith::FPToSIOp, arith::FPToUIOp>(op))
    return true;
  return isSupportedHookOp(op) &&
         llvm::none_of(op->getResultTypes(),
                       [](Type t) { return isa<FloatType>(t); });
}

/// Adds the shares of `op`'s operands to their adjoints, given `ybar`, the
/// adjoint of its (one) result `y`. Fails on an op without a rule.
static LogicalResult propagate(Operation *op, Value y, Value ybar,
                               Adjoints &a) {
  auto x = [&](unsigned i) { return op->getOperand(i); };
  auto same = [&] { return ybar; };
  return TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](arith::AddFOp) {
        a.addTo(x(0), same);
        a.addTo(x(1), same);
        return success();
      })
      .Case([&](arith::SubFOp) {
        a.addTo(x(0), same);
        a.addTo(x(1), [&] { return a.neg(ybar); });
        return success();
      })
      .Case([&](arith::MulFOp) {
        a.addTo(x(0), [&] { return a.mul(ybar, x(1)); });
        a.addTo(x(1), [&] { return a.mul(ybar, x(0)); });
        return success();
      })
      .Case([&](arith::DivFOp) {
        // y = u / v: du = 1 / v, dv = -y / v.
        a.addTo(x(0), [&] { return a.div(ybar, x(1)); });
        a.addTo(x(1), [&] { return a.neg(a.mul(ybar, a.div(y, x(1)))); });
        return success();
      })
      .Case([&](arith::NegFOp) {
        a.addTo(x(0), [&] { return a.neg(ybar); });
        return success();
      })
      .Case<arith::MaximumFOp, arith::MaxNumFOp, arith::MinimumFOp,
            arith::MinNumFOp>([&](Operation *) {
        // The gradient goes to the operand taken (the first on a tie).
        bool max = isa<arith::MaximumFOp, arith::MaxNumFOp>(op);
        Value first = a.cmp(max ? arith::CmpFPredicate::OGE
                                : arith::CmpFPredicate::OLE,
                            x(0), x(1));
        a.addTo(x(0), [&] { return a.select(first, ybar, a.f32(0)); });
        a.addTo(x(1), [&] { return a.select(first, a.f32(0), ybar); });
        return success();
      })
      .Case([&](arith::SelectOp select) {
        Value cond = select.getCondition();
        a.addTo(x(1), [&] { return a.select(cond, ybar, a.f32(0)); });
        a.addTo(x(2), [&] { return a.select(cond, a.f32(0), ybar); });
        return success();
      })
      .Case<arith::ExtFOp, arith::TruncFOp, arith::SIToFPOp,
            arith::UIToFPOp>([&](Operation *) {
        // Adjoints are f32 whatever their value's width; an integer
        // operand is never active.
        a.addTo(x(0), same);
        return success();
      })
      .Case([&](math::TanhOp) {
        a.addTo(x(0), [&] { return a.mul(ybar, a.sub(a.f32(1), a.mul(y, y))); });
        return success();
      })
      .Case([&](math::ExpOp) {
        a.addTo(x(0), [&] { return a.mul(ybar, y); });
        return success();
      })
      .Case([&](math::Exp2Op) {
        a.addTo(x(0), [&] { return a.mul(ybar, a.mul(y, a.f32(M_LN2))); });
        return success();
      })
      .Case([&](math::LogOp) {
        a.addTo(x(0), [&] { return a.div(ybar, x(0)); });
        return success();
      })
      .Case([&](math::Log2Op) {
        a.addTo(x(0), [&] { return a.div(ybar, a.mul(x(0), a.f32(M_LN2))); });
        return success();
      })
      .Case([&](math::SqrtOp) {
        a.addTo(x(0), [&] { return a.div(a.mul(ybar, a.f32(0.5)), y); });
        return success();
      })
      .Case([&](math::RsqrtOp) {
        // y = x^-1/2: dy/dx = -y / (2 x).
        a.addTo(x(0), [&] {
          return a.neg(a.div(a.mul(ybar, a.mul(y, a.f32(0.5))), x(0)));
        });
        return success();
      })
      .Case([&](math::PowFOp) {
        // y = u^v: du = v u^(v - 1), written so (not v y / u) to stay
        // finite at u = 0 and exact for a negative u with an integral v,
        // as the forward's pow is; dv = y ln u.
        a.addTo(x(0), [&] {
          return a.mul(ybar, a.mul(x(1), a.pow(x(0), a.sub(x(1), a.f32(1)))));
        });
        a.addTo(x(1), [&] { return a.mul(ybar, a.mul(y, a.log(x(0)))); });
        return success();
      })
      .Case([&](math::AbsFOp) {
        // sign(x), 0 at 0 (torch's).
        a.addTo(x(0), [&] {
          Value zero = a.f32(0);
          Value positive = a.cmp(arith::CmpFPredicate::OGT, x(0), zero);
          Value negative = a.cmp(arith::CmpFPredicate::OLT, x(0), zero);
          return a.select(positive, ybar, a.select(negative, a.neg(ybar), zero));
        });
        return success();
      })
      .Case([&](math::ErfOp) {
        // 2 / sqrt(pi) e^(-x^2).
        a.addTo(x(0), [&] {
          return a.mul(ybar, a.mul(a.f32(M_2_SQRTPI),
                                   a.exp(a.neg(a.mul(x(0), x(0))))));
        });
        return success();
      })
      .Case([&](math::SinOp) {
        a.addTo(x(0), [&] { return a.mul(ybar, a.cos(x(0))); });
        return success();
      })
      .Case([&](math::CosOp) {
        a.addTo(x(0), [&] { return a.neg(a.mul(ybar, a.sin(x(0)))); });
        return success();
      })
      .Case([&](math::FmaOp) {
        a.addTo(x(0), [&] { return a.mul(ybar, x(1)); });
        a.addTo(x(1), [&] { return a.mul(ybar, x(0)); });
        a.addTo(x(2), same);
        return success();
      })
      .Case<math::FloorOp, math::CeilOp>(
          [&](Operation *) { return success(); })
      .Default([](Operation *) { return failure(); });
}

FailureOr<ScoreModGradient>
attn::differentiateScoreMod(OpBuilder &b, Region &scoreMod, ValueRange args,
                            Value seed,
                            llvm::function_ref<bool(Value)> differentiated,
                            const IRMapping *outside) {
  Block &body = scoreMod.front();
  assert(body.getNumArguments() == args.size() &&
         "a value for each of the region's arguments");
  IRMapping map = outside ? *outside : IRMapping();
  map.map(body.getArguments(), args);
  Location loc = scoreMod.getParentOp()->getLoc();
  Adjoints a(b, loc);
  // The score is the first argument of a score_mod; a hook without one
  // (a sink, of (batch, head)) has only its reads to differentiate.
  Value score = args.front();
  if (isa<FloatType>(score.getType()))
    a.active.insert(score);

  // Forward: the region's ops, cloned in order; an op's results are active
  // when one of its float operands is or it reads a differentiated tensor.
  SmallVector<std::pair<Operation *, Operation *>> ops; // (original, clone)
  SmallVector<memref::LoadOp> reads;
  Value result;
  for (Operation &op : body) {
    if (auto yield = dyn_cast<YieldOp>(op)) {
      result = map.lookup(yield.getValues().front());
      break;
    }
    Operation *clone = b.clone(op, map);
    ops.push_back({&op, clone});
    bool active = llvm::any_of(clone->getOperands(), [&](Value v) {
      return a.active.contains(v);
    });
    if (auto load = dyn_cast<memref::LoadOp>(clone)) {
      active = isa<FloatType>(load.getType()) && differentiated &&
               differentiated(load.getMemRef());
      if (active)
        reads.push_back(load);
    }
    if (!active || passesNoGradient(clone))
      continue;
    if (clone->getNumResults() != 1 ||
        !isa<FloatType>(clone->getResult(0).getType()))
      return op.emitOpError()
             << "has no derivative: the backward differentiates score_mod "
                "through float ops of one result";
    a.active.insert(clone->getResult(0));
  }
  assert(result && "a score_mod region ends in attn.yield");

  // Reverse: from the result's adjoint (the seed) back to the score's and
  // the reads'.
  a.addTo(result, [&] { return seed; });
  for (auto [original, clone] : llvm::reverse(ops)) {
    if (clone->getNumResults() != 1)
      continue;
    Value y = clone->getResult(0);
    Value ybar = a.get(y);
    // Only active ops have adjoints; a read's is its result.
    if (!ybar || isa<memref::LoadOp>(clone))
      continue;
    if (failed(propagate(clone, y, ybar, a)))
      return original->emitOpError()
             << "has no derivative rule; the backward cannot differentiate "
                "score_mod through it (ops with rules: the float ops of the "
                "hook contract)";
  }
  ScoreModGradient gradient;
  gradient.score = result;
  gradient.scoreAdjoint = a.get(score) ? a.get(score) : a.f32(0);
  for (memref::LoadOp read : reads)
    if (Value adjoint = a.get(read.getResult()))
      gradient.reads.push_back({read, adjoint});
  return gradient;
}
