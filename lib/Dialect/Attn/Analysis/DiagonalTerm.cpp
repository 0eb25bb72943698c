//===- DiagonalTerm.cpp - score_mod terms that depend on k - q only -------===//

#include "flashtile/Dialect/Attn/Analysis/DiagonalTerm.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

using namespace mlir;
using namespace flashtile::attn;

namespace {

/// How a value changes when q and k move together by t (DiagonalTerm.h).
enum class Shift { Constant, Shifted, Invariant, Varying };

/// The score_mod's block arguments: (score, b, h, q_idx, kv_idx).
enum ScoreModArg : unsigned { kScore, kBatch, kHead, kQuery, kKey };

Shift classify(Operation &op, const DenseMap<Value, Shift> &shifts) {
  auto of = [&](unsigned i) { return shifts.lookup(op.getOperand(i)); };
  auto stationary = [](Shift s) {
    return s == Shift::Constant || s == Shift::Invariant;
  };
  auto join = [](Shift a, Shift b) {
    return a == Shift::Invariant || b == Shift::Invariant ? Shift::Invariant
                                                          : Shift::Constant;
  };
  if (isa<arith::AddIOp, arith::SubIOp>(op)) {
    Shift x = of(0), y = of(1);
    bool sub = isa<arith::SubIOp>(op);
    if (x == Shift::Shifted && y == Shift::Shifted)
      return sub ? Shift::Invariant : Shift::Varying;
    if (x == Shift::Shifted && stationary(y))
      return Shift::Shifted;
    if (y == Shift::Shifted && stationary(x))
      return sub ? Shift::Varying : Shift::Shifted;
    if (stationary(x) && stationary(y))
      return join(x, y);
    return Shift::Varying;
  }
  Shift result = Shift::Constant;
  for (Value operand : op.getOperands()) {
    Shift s = shifts.lookup(operand);
    if (!stationary(s))
      return Shift::Varying;
    result = join(result, s);
  }
  return result;
}

/// Ops that cost a table read, an SFU op or a division sequence.
bool isCostly(Operation *op) {
  return isa<memref::LoadOp, math::TanhOp, math::ExpOp, math::Exp2Op,
             math::LogOp, math::Log2Op, math::SqrtOp, math::RsqrtOp,
             math::PowFOp, math::ErfOp, math::SinOp, math::CosOp,
             arith::DivFOp, arith::DivSIOp, arith::DivUIOp, arith::RemSIOp,
             arith::RemUIOp, arith::FloorDivSIOp, arith::CeilDivSIOp>(op);
}

/// The ops of the hook that `v` is computed from, and in `args` a bit per
/// block argument it uses.
void collectSlice(Value v, llvm::SmallPtrSetImpl<Operation *> &slice,
                  unsigned *args = nullptr) {
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    if (args)
      *args |= 1u << arg.getArgNumber();
    return;
  }
  Operation *op = v.getDefiningOp();
  if (!slice.insert(op).second)
    return;
  for (Value operand : op->getOperands())
    collectSlice(operand, slice, args);
}

} // namespace

Operation *flashtile::attn::findDiagonalTerm(Region &scoreMod) {
  if (scoreMod.empty())
    return nullptr;
  Block &body = scoreMod.front();
  DenseMap<Value, Shift> shifts;
  for (BlockArgument arg : body.getArguments())
    shifts[arg] = arg.getArgNumber() == kScore   ? Shift::Varying
                  : arg.getArgNumber() >= kQuery ? Shift::Shifted
                                                 : Shift::Constant;
  for (Operation &op : body)
    for (Value result : op.getResults())
      shifts[result] = classify(op, shifts);

  Operation *best = nullptr;
  int64_t bestCost = 0;
  for (Operation &op : body) {
    if (op.getNumResults() != 1 || !op.getResult(0).getType().isF32() ||
        shifts.lookup(op.getResult(0)) != Shift::Invariant)
      continue;
    bool usedByVarying = llvm::any_of(op.getUsers(), [&](Operation *user) {
      return isa<YieldOp>(user) ||
             shifts.lookup(user->getResult(0)) == Shift::Varying;
    });
    if (!usedByVarying)
      continue;
    // Its cost per score: the invariant ops it is computed from (constant
    // ones are computed once per block).
    llvm::SmallPtrSet<Operation *, 16> slice;
    collectSlice(op.getResult(0), slice);
    int64_t cost = 0;
    bool costly = false;
    for (Operation *s : slice) {
      if (shifts.lookup(s->getResult(0)) != Shift::Invariant)
        continue;
      costly |= isCostly(s);
      cost += isCostly(s) ? 4 : 1;
    }
    if (costly && cost > bestCost) {
      best = &op;
      bestCost = cost;
    }
  }
  return best;
}

DiagonalTerm flashtile::attn::getDiagonalTerm(ModifyScoresOp op) {
  DiagonalTerm term;
  if (op.getScoreMod().empty())
    return term;
  for (Operation &inner : op.getScoreMod().front()) {
    if (!inner.hasAttr(kDiagonalTermAttrName))
      continue;
    llvm::SmallPtrSet<Operation *, 16> slice;
    unsigned args = 0;
    collectSlice(inner.getResult(0), slice, &args);
    term.op = &inner;
    term.usesBatch = args & (1u << kBatch);
    term.usesHead = args & (1u << kHead);
    return term;
  }
  return term;
}
