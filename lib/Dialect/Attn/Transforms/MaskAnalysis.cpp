//===- MaskAnalysis.cpp - Key intervals of a mask_mod ---------------------===//
//
// One forward walk over the mask_mod's block. A value that does not depend
// on the key index is "row-only": it is cloned into the key_range body and
// its monotonicity in q_idx is tracked. The key index itself, and the key
// index divided by a positive constant, are "key terms". A comparison of a
// key term with a row-only value is an interval of keys; `and` intersects
// intervals, `or` takes their hull (exact when both are unbounded on the
// same side, as in prefix-LM: k < P or k <= q is k <= max(P - 1, q)). Any
// other use of the key gives the whole line, inexact.
//
//===----------------------------------------------------------------------===//

#include "flashtile/Dialect/Attn/Transforms/MaskAnalysis.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/OwningOpRef.h"

#include <cstdlib>

using namespace mlir;
using namespace flashtile;
using namespace flashtile::attn;

namespace {

/// The largest constant factor a product keeps monotone: positions below
/// 2^19 times it stay below 2^31.
constexpr int64_t kMaxMonotoneFactor = 4096;

/// How a row-only value moves as q_idx grows.
enum class Mono { Const, Inc, Dec, Unknown };

Mono negate(Mono m) {
  return m == Mono::Inc ? Mono::Dec : m == Mono::Dec ? Mono::Inc : m;
}
/// The monotonicity of a sum (also of max and min) of two values.
Mono combine(Mono a, Mono b) {
  if (a == Mono::Const)
    return b;
  if (b == Mono::Const || a == b)
    return a;
  return Mono::Unknown;
}

/// Keys [lo, hi] (values in the key_range body) of a condition on the key.
struct Interval {
  Value lo, hi;
  Mono loMono = Mono::Const, hiMono = Mono::Const;
  bool loUnbounded = false, hiUnbounded = false;
  bool exact = true;
};

/// The predicate with its operands exchanged: a < b is b > a.
arith::CmpIPredicate swapped(arith::CmpIPredicate pred) {
  using P = arith::CmpIPredicate;
  switch (pred) {
  case P::slt:
    return P::sgt;
  case P::sle:
    return P::sge;
  case P::sgt:
    return P::slt;
  case P::sge:
    return P::sle;
  case P::ult:
    return P::ugt;
  case P::ule:
    return P::uge;
  case P::ugt:
    return P::ult;
  case P::uge:
    return P::ule;
  default:
    return pred; // eq, ne
  }
}

class KeyRangeBuilder {
public:
  KeyRangeBuilder(KernelOp kernel, Block &mask, Block *body)
      : kernel(kernel), mask(mask), b(OpBuilder::atBlockEnd(body)),
        loc(mask.getParentOp()->getLoc()) {
    // (batch, head, q_idx) of the body; the mask's kv_idx is the key.
    for (unsigned i = 0; i < 3; ++i) {
      rowOnly[mask.getArgument(i)] = body->getArgument(i);
      mono[mask.getArgument(i)] = i == 2 ? Mono::Inc : Mono::Const;
    }
    keyTerms[mask.getArgument(3)] = 1;
  }

  /// The interval of the mask's result, or failure.
  FailureOr<Interval> run();

private:
  Value constant(int64_t v) {
    return arith::ConstantIndexOp::create(b, loc, v);
  }
  Interval whole() {
    return {constant(-kKeyRangeUnbounded), constant(kKeyRangeUnbounded),
            Mono::Const, Mono::Const, true, true, /*exact=*/false};
  }
  void cloneRowOnly(Operation &op);
  Mono monotonicity(Operation &op);
  Interval compare(arith::CmpIPredicate pred, int64_t divisor, Value rhs,
                   Mono rhsMono);
  Interval join(const Interval &x, const Interval &y, bool conjunction);
  std::optional<int64_t> constantOf(Value v) {
    APInt value;
    if (matchPattern(v, m_ConstantInt(&value)))
      return value.getSExtValue();
    return std::nullopt;
  }

  KernelOp kernel;
  Block &mask;
  OpBuilder b;
  Location loc;
  /// Row-only mask values -> their clones in the body.
  DenseMap<Value, Value> rowOnly;
  DenseMap<Value, Mono> mono;
  /// Key terms: kv_idx / divisor.
  DenseMap<Value, int64_t> keyTerms;
  /// Conditions on the key.
  DenseMap<Value, Interval> conditions;
};

} // namespace

void KeyRangeBuilder::cloneRowOnly(Operation &op) {
  IRMapping mapping;
  for (Value operand : op.getOperands()) {
    auto it = rowOnly.find(operand);
    if (it != rowOnly.end()) {
      mapping.map(operand, it->second);
      continue;
    }
    // A kernel argument read from outside the hook.
    auto arg = cast<BlockArgument>(operand);
    Value clone = KernelArgOp::create(b, loc, kernel, arg);
    rowOnly[operand] = clone;
    mono[operand] = Mono::Const;
    mapping.map(operand, clone);
  }
  Operation *clone = b.clone(op, mapping);
  for (auto [from, to] : llvm::zip(op.getResults(), clone->getResults())) {
    rowOnly[from] = to;
    mono[from] = monotonicity(op);
  }
}

Mono KeyRangeBuilder::monotonicity(Operation &op) {
  auto of = [&](unsigned i) {
    auto it = mono.find(op.getOperand(i));
    return it == mono.end() ? Mono::Const : it->second;
  };
  if (isa<arith::AddIOp>(op))
    return combine(of(0), of(1));
  if (isa<arith::SubIOp>(op))
    return combine(of(0), negate(of(1)));
  if (isa<arith::MaxSIOp, arith::MinSIOp>(op))
    return combine(of(0), of(1));
  // A product with a constant keeps (or reverses) the order while it does
  // not wrap i32: with |c| <= kMaxMonotoneFactor, for positions below
  // 2^31 / kMaxMonotoneFactor.
  if (isa<arith::MulIOp>(op)) {
    for (unsigned i = 0; i < 2; ++i)
      if (std::optional<int64_t> c = constantOf(op.getOperand(i))) {
        if (*c == 0)
          return Mono::Const;
        if (std::abs(*c) > kMaxMonotoneFactor)
          break;
        return *c > 0 ? of(1 - i) : negate(of(1 - i));
      }
  }
  if (isa<arith::DivSIOp, arith::FloorDivSIOp, arith::CeilDivSIOp>(op)) {
    std::optional<int64_t> c = constantOf(op.getOperand(1));
    if (c && *c > 0)
      return of(0);
  }
  // Casts keep the order, unless one narrows below the kernel's 32-bit
  // index, where it wraps.
  if (isa<arith::IndexCastOp, arith::ExtSIOp>(op)) {
    auto narrow = [](Type type) {
      return type.isInteger() && type.getIntOrFloatBitWidth() < 32;
    };
    if (of(0) != Mono::Const && narrow(op.getResult(0).getType()))
      return Mono::Unknown;
    return of(0);
  }
  for (unsigned i = 0; i < op.getNumOperands(); ++i)
    if (of(i) != Mono::Const)
      return Mono::Unknown;
  return Mono::Const;
}

/// kv_idx / divisor PRED rhs as an interval of kv_idx (kv_idx >= 0, so the
/// truncating division is a floor division).
Interval KeyRangeBuilder::compare(arith::CmpIPredicate pred, int64_t divisor,
                                  Value rhs, Mono rhsMono) {
  using P = arith::CmpIPredicate;
  Interval r = whole();
  r.exact = true;
  Value scaled = divisor == 1
                     ? rhs
                     : arith::MulIOp::create(b, loc, rhs, constant(divisor))
                           .getResult();
  auto plus = [&](Value v, int64_t c) -> Value {
    return c == 0 ? v : arith::AddIOp::create(b, loc, v, constant(c));
  };
  auto setLo = [&](Value v) {
    r.lo = v;
    r.loMono = rhsMono;
    r.loUnbounded = false;
  };
  auto setHi = [&](Value v) {
    r.hi = v;
    r.hiMono = rhsMono;
    r.hiUnbounded = false;
  };
  switch (pred) {
  case P::eq:
    setLo(scaled);
    setHi(plus(scaled, divisor - 1));
    break;
  case P::sle:
    setHi(plus(scaled, divisor - 1));
    break;
  case P::slt:
    setHi(plus(scaled, -1));
    break;
  case P::sge:
    setLo(scaled);
    break;
  case P::sgt:
    setLo(plus(scaled, divisor));
    break;
  default:
    return whole();
  }
  return r;
}

Interval KeyRangeBuilder::join(const Interval &x, const Interval &y,
                               bool conjunction) {
  Interval r;
  if (conjunction) {
    r.lo = arith::MaxSIOp::create(b, loc, x.lo, y.lo);
    r.hi = arith::MinSIOp::create(b, loc, x.hi, y.hi);
    r.loUnbounded = x.loUnbounded && y.loUnbounded;
    r.hiUnbounded = x.hiUnbounded && y.hiUnbounded;
    r.exact = x.exact && y.exact;
  } else {
    r.lo = arith::MinSIOp::create(b, loc, x.lo, y.lo);
    r.hi = arith::MaxSIOp::create(b, loc, x.hi, y.hi);
    r.loUnbounded = x.loUnbounded || y.loUnbounded;
    r.hiUnbounded = x.hiUnbounded || y.hiUnbounded;
    // The hull is the union when the two overlap for every row: both reach
    // -inf, or both reach +inf.
    r.exact = x.exact && y.exact &&
              ((x.loUnbounded && y.loUnbounded) ||
               (x.hiUnbounded && y.hiUnbounded));
  }
  r.loMono = combine(x.loMono, y.loMono);
  r.hiMono = combine(x.hiMono, y.hiMono);
  return r;
}

FailureOr<Interval> KeyRangeBuilder::run() {
  for (Operation &op : mask) {
    if (auto yield = dyn_cast<YieldOp>(op)) {
      auto it = conditions.find(yield.getValues()[0]);
      if (it == conditions.end())
        return failure(); // a mask that does not look at the key
      return it->second;
    }
    bool onKey = llvm::any_of(op.getOperands(), [&](Value v) {
      return keyTerms.count(v) || conditions.count(v) ||
             !(rowOnly.count(v) || isa<BlockArgument>(v));
    });
    if (!onKey) {
      cloneRowOnly(op);
      continue;
    }
    Value result = op.getResult(0);
    if (isa<arith::DivSIOp, arith::FloorDivSIOp>(op) &&
        keyTerms.lookup(op.getOperand(0)) == 1) {
      std::optional<int64_t> c = constantOf(op.getOperand(1));
      if (c && *c > 0 && rowOnly.count(op.getOperand(1))) {
        keyTerms[result] = *c;
        continue;
      }
    }
    if (auto cmp = dyn_cast<arith::CmpIOp>(op)) {
      Value lhs = cmp.getLhs(), rhs = cmp.getRhs();
      arith::CmpIPredicate pred = cmp.getPredicate();
      if (keyTerms.count(rhs) && rowOnly.count(lhs)) {
        std::swap(lhs, rhs);
        pred = swapped(pred);
      }
      if (keyTerms.count(lhs) && rowOnly.count(rhs)) {
        conditions[result] =
            compare(pred, keyTerms[lhs], rowOnly[rhs], mono[rhs]);
        continue;
      }
    }
    if (isa<arith::AndIOp, arith::OrIOp>(op) &&
        conditions.count(op.getOperand(0)) &&
        conditions.count(op.getOperand(1))) {
      conditions[result] =
          join(conditions[op.getOperand(0)], conditions[op.getOperand(1)],
               isa<arith::AndIOp>(op));
      continue;
    }
    // Any other use of the key: a condition that may keep any key. (A
    // key-dependent index lands here too; comparisons with it are then
    // neither key terms nor row-only, so they are the whole line as well.)
    conditions[result] = whole();
  }
  return failure();
}

FailureOr<bool> attn::buildKeyRange(KernelOp kernel, Region &maskMod,
                                    Region &body, bool &monotone) {
  assert(body.empty() && "builds into an empty region");
  MLIRContext *ctx = kernel.getContext();
  Type index = IndexType::get(ctx);
  Location loc = maskMod.getLoc();
  Block *block = new Block();
  body.push_back(block);
  block->addArguments({index, index, index}, {loc, loc, loc});
  KeyRangeBuilder builder(kernel, maskMod.front(), block);
  FailureOr<Interval> interval = builder.run();
  if (failed(interval) ||
      (interval->loUnbounded && interval->hiUnbounded && !interval->exact)) {
    body.getBlocks().clear();
    return failure();
  }
  monotone = interval->loMono != Mono::Unknown &&
             interval->hiMono != Mono::Unknown;
  OpBuilder b = OpBuilder::atBlockEnd(block);
  YieldOp::create(b, loc, ValueRange{interval->lo, interval->hi});
  // Row-only values only the key conditions used, and conditions that fed
  // nothing, are dead in the body.
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(*block)))
    if (!isa<YieldOp>(op) && op.use_empty())
      op.erase();
  return interval->exact;
}

FailureOr<bool> attn::refineByKeyRange(TileBuilder &t, KernelOp kernel,
                                       Region &maskMod,
                                       const TileBuilder::Block &block,
                                       TileBuilder::TileRange &range,
                                       int64_t tileM, int64_t tileN,
                                       Value *keyEnd) {
  KeyRangeOp keyRange = t.keyRange(block, range, tileM, tileN);
  bool monotone = true;
  FailureOr<bool> exact =
      buildKeyRange(kernel, maskMod, keyRange.getBody(), monotone);
  if (failed(exact)) {
    keyRange.erase();
    return failure();
  }
  keyRange.setExact(*exact);
  keyRange.setScanRows(!monotone);
  range = {keyRange.getBegin(), keyRange.getUnmaskedBegin(),
           keyRange.getUnmaskedEnd(), keyRange.getEnd()};
  if (keyEnd)
    *keyEnd = keyRange.getKeyEnd();
  return *exact;
}

std::optional<KeyIntervalInfo> attn::analyzeKeyInterval(KernelOp kernel,
                                                        Region &maskMod) {
  // A scratch region, dropped with what is built into it. It needs a
  // parent op: a builder at one of its blocks takes the context from it.
  OwningOpRef<ModuleOp> holder = ModuleOp::create(maskMod.getLoc());
  Region &scratch = holder->getBodyRegion();
  scratch.getBlocks().clear();
  bool monotone = true;
  FailureOr<bool> exact = buildKeyRange(kernel, maskMod, scratch, monotone);
  if (failed(exact))
    return std::nullopt;
  return KeyIntervalInfo{*exact, monotone};
}

FailureOr<bool> attn::refineByQueryRange(TileBuilder &t, KernelOp kernel,
                                         Region &maskMod,
                                         const TileBuilder::Block &block,
                                         Value head, Value group,
                                         TileBuilder::TileRange &range,
                                         int64_t tileM, int64_t tileN,
                                         ValueRange tables) {
  // Tables of the unmasked tiles come with an exact interval only.
  bool exact = tables.size() == 4;
  QueryRangeOp queryRange = t.queryRange(block, head, group, range, tileM,
                                         tileN, tables, exact);
  if (tables.empty()) {
    bool monotone = true;
    FailureOr<bool> found =
        buildKeyRange(kernel, maskMod, queryRange.getBody(), monotone);
    if (failed(found) || !monotone) {
      queryRange.erase();
      return failure();
    }
    exact = *found;
    queryRange.setExact(exact);
  }
  range = {queryRange.getBegin(), queryRange.getUnmaskedBegin(),
           queryRange.getUnmaskedEnd(), queryRange.getEnd()};
  return exact;
}

void attn::refineByBlockMask(TileBuilder &t, KernelOp kernel, Region &maskMod,
                             const TileBuilder::Block &block,
                             TileBuilder::TileRange &range, int64_t tileM,
                             int64_t tileN, bool keyGrid,
                             const IRMapping *outside) {
  bool perHead = !maskMod.front().getArgument(1).use_empty();
  BlockRangesOp ranges =
      t.blockRanges(block, range, tileM, tileN, perHead, keyGrid);
  IRMapping mapping = outside ? *outside : IRMapping();
  maskMod.cloneInto(&ranges.getMaskMod(), mapping);
  readKernelArgsThroughKernelArgOps(ranges.getMaskMod(), kernel);
  range = {ranges.getBegin(), ranges.getUnmaskedBegin(),
           ranges.getUnmaskedEnd(), ranges.getEnd()};
}
