//===- HookEmitter.cpp - Hook regions as LLVM dialect ops -----------------===//

#include "HookEmitter.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace flashtile;
using namespace flashtile::attn;
using namespace flashtile::attn::lowering;

static_assert(static_cast<int>(arith::CmpIPredicate::uge) ==
                  static_cast<int>(LLVM::ICmpPredicate::uge) &&
              static_cast<int>(arith::CmpIPredicate::slt) ==
                  static_cast<int>(LLVM::ICmpPredicate::slt));
static_assert(static_cast<int>(arith::CmpFPredicate::UNO) ==
                  static_cast<int>(LLVM::FCmpPredicate::uno) &&
              static_cast<int>(arith::CmpFPredicate::OLT) ==
                  static_cast<int>(LLVM::FCmpPredicate::olt));

std::optional<HookEmitter::Scaled> HookEmitter::scaledStep(Operation &op) {
  bool isMul = isa<arith::MulFOp>(op), isDiv = isa<arith::DivFOp>(op);
  if (!isMul && !isDiv)
    return std::nullopt;
  for (unsigned i = 0; i < 2; ++i) {
    auto it = scaled.find(op.getOperand(i));
    // A division folds only its dividend.
    if (it == scaled.end() || (isDiv && i == 1))
      continue;
    auto c = op.getOperand(1 - i).getDefiningOp<arith::ConstantOp>();
    auto attr = c ? dyn_cast<FloatAttr>(c.getValue()) : FloatAttr();
    if (!attr || !attr.getType().isF32())
      return std::nullopt;
    float k = attr.getValueAsDouble();
    if (isDiv)
      k = 1.0f / k;
    Value factor = it->second.factor;
    Value &folded =
        factors[{factor.getAsOpaquePointer(), llvm::bit_cast<uint32_t>(k)}];
    if (!folded)
      folded = e.fmul(factor, e.f32(k));
    return Scaled{it->second.raw, folded};
  }
  return std::nullopt;
}

Value HookEmitter::get(Value v) {
  auto found = scaled.find(v);
  if (found != scaled.end()) {
    // May contract into an FMA with the hook's add, like the hook's own.
    Value value = LLVM::FMulOp::create(
        e.builder(), e.location(), found->second.raw, found->second.factor,
        LLVM::FastmathFlagsAttr::get(e.builder().getContext(),
                                     LLVM::FastmathFlags::contract));
    values[v] = value;
    scaled.erase(found);
    return value;
  }
  auto it = affine.find(v);
  if (it == affine.end())
    return values.lookup(v);
  auto [base, offset] = it->second;
  Value &value =
      materialized[{base ? base.getAsOpaquePointer() : nullptr, offset}];
  if (!value)
    value = base ? (offset ? e.add(base, offset) : base) : e.i32(offset);
  return value;
}

HookEmitter::Affine HookEmitter::affineOf(Value v) {
  auto it = affine.find(v);
  if (it != affine.end())
    return it->second;
  if (auto c = v.getDefiningOp<arith::ConstantOp>())
    if (auto attr = dyn_cast<IntegerAttr>(c.getValue()))
      return {Value(), attr.getInt()};
  return {get(v), 0};
}

std::optional<HookEmitter::Affine> HookEmitter::affineStep(Operation &op) {
  // index <-> i32 is no conversion here (index is i32).
  if (auto cast = dyn_cast<arith::IndexCastOp>(op)) {
    if (convert(cast.getType()) != convert(cast.getIn().getType()))
      return std::nullopt;
    auto it = affine.find(cast.getIn());
    if (it == affine.end())
      return std::nullopt;
    return it->second;
  }
  bool isAdd = isa<arith::AddIOp>(op);
  if ((!isAdd && !isa<arith::SubIOp>(op)) ||
      !op.getResult(0).getType().isIndex())
    return std::nullopt;
  Affine x = affineOf(op.getOperand(0)), y = affineOf(op.getOperand(1));
  int64_t offset = isAdd ? x.offset + y.offset : x.offset - y.offset;
  if (!y.base)
    return Affine{x.base, offset};
  if (!x.base && isAdd)
    return Affine{y.base, offset};
  if (!x.base)
    return std::nullopt; // c - y: emitted as it is
  Value &base = bases[{isAdd, x.base.getAsOpaquePointer(),
                       y.base.getAsOpaquePointer()}];
  if (!base)
    base = isAdd ? e.add(x.base, y.base) : e.sub(x.base, y.base);
  return Affine{base, offset};
}

SmallVector<Value> HookEmitter::emitAll(Region &hook, ValueRange args,
                                        ArrayRef<int64_t> argOffsets,
                                        Value scoreFactor) {
  values.clear();
  affine.clear();
  scaled.clear();
  tensors.clear();
  Block &body = hook.front();
  for (auto [i, arg] : llvm::enumerate(body.getArguments())) {
    if (i == 0 && scoreFactor)
      scaled[arg] = {args[i], scoreFactor};
    else if (!argOffsets.empty() && argOffsets[i] != 0)
      affine[arg] = {args[i], argOffsets[i]};
    else
      values[arg] = args[i];
  }
  for (Operation &op : body) {
    if (auto yield = dyn_cast<YieldOp>(op))
      return llvm::map_to_vector(yield.getValues(),
                                 [&](Value v) { return get(v); });
    if (auto arg = dyn_cast<KernelArgOp>(op)) {
      int64_t param = getExtraArgParam(anchor, arg.getIndex());
      if (isa<MemRefType>(arg.getType()))
        tensors[arg.getResult()] = param;
      else
        values[arg.getResult()] = getKernelParam(anchor, param);
      continue;
    }
    if (&op == diagonalTerm) {
      values[op.getResult(0)] = diagonalTableRead(hook);
      continue;
    }
    if (diagonalTerm && diagonalTerm->getParentRegion() == &hook &&
        !neededOps.contains(&op))
      continue;
    if (std::optional<Affine> step = affineStep(op)) {
      affine[op.getResult(0)] = *step;
      continue;
    }
    if (std::optional<Scaled> step = scaledStep(op)) {
      scaled[op.getResult(0)] = *step;
      continue;
    }
    values[op.getResult(0)] = emitOp(op);
    if (&op == stopAfter)
      return {get(op.getResult(0))};
  }
  llvm_unreachable("a verified hook ends with attn.yield");
}

void HookEmitter::useDiagonalTable(Operation *term, Value origin) {
  diagonalTerm = term;
  diagonalOrigin = origin;
  // What the yield needs, short of what only the term needed.
  SmallVector<Operation *> work{term->getBlock()->getTerminator()};
  while (!work.empty()) {
    Operation *op = work.pop_back_val();
    if (op == term || !neededOps.insert(op).second)
      continue;
    for (Value operand : op->getOperands())
      if (Operation *def = operand.getDefiningOp())
        work.push_back(def);
  }
}

Value HookEmitter::emitTerm(Region &hook, ValueRange args, Operation *term) {
  stopAfter = term;
  Value value = emitAll(hook, args).front();
  stopAfter = nullptr;
  return value;
}

/// origin + (k - q), with k - q as base + constant: the elements of one
/// warp row share the base and differ by immediate offsets.
Value HookEmitter::diagonalTableRead(Region &hook) {
  // The score_mod's block arguments are (score, b, h, q_idx, kv_idx).
  Block &body = hook.front();
  Affine q = affineOf(body.getArgument(3)), k = affineOf(body.getArgument(4));
  Value &base = bases[{false, k.base.getAsOpaquePointer(),
                       q.base.getAsOpaquePointer()}];
  if (!base)
    base = e.sub(k.base, q.base);
  Value &row = diagonalRows[base.getAsOpaquePointer()];
  if (!row)
    row = e.gep(diagonalOrigin, e.mul64(e.sext64(base), e.i64(4)));
  Value address = e.gep(row, e.i64(4 * (k.offset - q.offset)));
  auto read = LLVM::LoadOp::create(e.builder(), e.location(),
                                   e.builder().getF32Type(), address,
                                   /*alignment=*/4);
  read.setInvariant(true);
  return read;
}

Value HookEmitter::resize(Value value, Type to, bool isSigned) {
  unsigned from = value.getType().getIntOrFloatBitWidth();
  unsigned width = to.getIntOrFloatBitWidth();
  OpBuilder &b = e.builder();
  Location loc = e.location();
  if (from == width)
    return value;
  if (from > width)
    return LLVM::TruncOp::create(b, loc, to, value);
  if (isSigned)
    return LLVM::SExtOp::create(b, loc, to, value);
  return LLVM::ZExtOp::create(b, loc, to, value);
}

Value HookEmitter::inF32(Value x, function_ref<Value(Value)> fn) {
  OpBuilder &b = e.builder();
  Type type = x.getType(), f32 = b.getF32Type();
  if (type == f32)
    return fn(x);
  Value wide = LLVM::FPExtOp::create(b, e.location(), f32, x);
  return LLVM::FPTruncOp::create(b, e.location(), type, fn(wide));
}

/// erf(x) by Abramowitz and Stegun 7.1.26 (|error| < 1.5e-7):
/// 1 - (a1 t + ... + a5 t^5) exp(-x^2), t = 1 / (1 + p |x|), odd in x.
Value HookEmitter::erf(Value x) {
  OpBuilder &b = e.builder();
  Location loc = e.location();
  Value ax = LLVM::FAbsOp::create(b, loc, x);
  Value t = e.rcp(e.fma(ax, e.f32(0.3275911f), e.f32(1.0f)));
  const float a[] = {1.061405429f, -1.453152027f, 1.421413741f, -0.284496736f,
                     0.254829592f};
  Value poly = e.f32(a[0]);
  for (int i = 1; i < 5; ++i)
    poly = e.fma(poly, t, e.f32(a[i]));
  poly = e.fmul(poly, t);
  Value negSquare = LLVM::FNegOp::create(b, loc, e.fmul(ax, ax));
  Value expo = e.exp2(e.fmul(negSquare, e.f32(static_cast<float>(M_LOG2E))));
  Value y = LLVM::FSubOp::create(b, loc, e.f32(1.0f), e.fmul(poly, expo));
  Value negative = e.fcmp(LLVM::FCmpPredicate::olt, x, e.f32(0.0f));
  return e.select(negative, LLVM::FNegOp::create(b, loc, y), y);
}

/// The address of `tensor[indices]`: the parameters of an extra tensor are
/// its pointer, then its sizes, then its strides (KernelABI.h); the address
/// is computed in 64 bits. Each index is clamped to [0, size - 1], so that
/// no hook reads or adds outside its tensor: hooks run on the positions of
/// every score a thread holds, including rows past seqlen_q and keys past
/// seqlen_k, whose scores are masked or never stored.
Value HookEmitter::elementAddress(Value memref, ValueRange indices) {
  OpBuilder &b = e.builder();
  Location loc = memref.getLoc();
  auto type = cast<MemRefType>(memref.getType());
  int64_t first = tensors.lookup(memref);
  int64_t rank = type.getRank();
  Value offset = e.i64(0);
  Value maxI32 = e.i64(std::numeric_limits<int32_t>::max());
  for (auto [d, index] : llvm::enumerate(indices)) {
    Value size = getKernelParam(anchor, getExtraTensorSizeParam(first, d));
    Value last = e.sub(LLVM::TruncOp::create(b, loc, b.getI32Type(),
                                             LLVM::SMinOp::create(
                                                 b, loc, size, maxI32)),
                       e.i32(1));
    Value clamped = e.smin(e.smax(get(index), e.i32(0)), last);
    Value stride =
        getKernelParam(anchor, getExtraTensorStrideParam(first, rank, d));
    offset = e.add64(offset, e.mul64(e.sext64(clamped), stride));
  }
  Value base = getKernelParam(anchor, first);
  return LLVM::GEPOp::create(b, loc, base.getType(), type.getElementType(),
                             base, ArrayRef<LLVM::GEPArg>{offset});
}

/// `tensor[indices]`, marked invariant: hooks never write what they read.
Value HookEmitter::load(memref::LoadOp op) {
  auto type = op.getMemRefType();
  Value address = elementAddress(op.getMemRef(), op.getIndices());
  // Elements are naturally aligned (the launch plan checks the pointer).
  auto read = LLVM::LoadOp::create(
      e.builder(), op.getLoc(), type.getElementType(), address,
      /*alignment=*/type.getElementTypeBitWidth() / 8);
  read.setInvariant(true);
  return read;
}

void HookEmitter::atomicAdd(Value address, Value value) {
  LLVM::AtomicRMWOp::create(e.builder(), address.getLoc(),
                            LLVM::AtomicBinOp::fadd, address, value,
                            LLVM::AtomicOrdering::monotonic);
}

/// An attn.for_each body's atomic add (verified: f32 addf into an extra
/// tensor of role accumulate). Its result, the old value, is not read by
/// anything the body computes; the added value stands for it.
Value HookEmitter::accumulate(memref::AtomicRMWOp op) {
  Value address = elementAddress(op.getMemref(), op.getIndices());
  Value value = get(op.getValue());
  if (onAccumulate)
    onAccumulate(op, address, value);
  else
    atomicAdd(address, value);
  return value;
}

/// x^y with torch.pow's values (IEEE pow on the cases attention hooks
/// meet). An exponent that is an integral constant n, |n| <= kMaxExactPowi,
/// is exact: repeated squaring, then one reciprocal for n < 0, so that
/// `(q_idx - kv_idx) ** 2` of a negative difference is the square and not
/// the NaN of 2^(2 log2 x). Any other exponent is 2^(y log2 |x|) on the
/// SFU, with pow's rules on the edges: y = 0 gives 1 (even for x = 0 or
/// NaN), a negative base gives (-1)^y |x|^y when y is integral and NaN
/// otherwise, and 0^y is 0 for y > 0 and +inf for y < 0.
static constexpr int64_t kMaxExactPowi = 64;

Value HookEmitter::pow(math::PowFOp op) {
  OpBuilder &b = e.builder();
  Location loc = op.getLoc();
  Value y = in(*op, 1);
  std::optional<int64_t> integral;
  if (auto c = op.getRhs().getDefiningOp<arith::ConstantOp>())
    if (auto f = dyn_cast<FloatAttr>(c.getValue())) {
      double v = f.getValueAsDouble();
      if (std::isfinite(v) && std::trunc(v) == v &&
          std::fabs(v) <= static_cast<double>(kMaxExactPowi))
        integral = static_cast<int64_t>(v);
    }
  return inF32(in(*op, 0), [&](Value x) -> Value {
    if (integral) {
      uint64_t n = static_cast<uint64_t>(*integral < 0 ? -*integral
                                                       : *integral);
      Value result, square = x;
      for (; n; n >>= 1) {
        if (n & 1)
          result = result ? e.fmul(result, square) : square;
        if (n > 1)
          square = e.fmul(square, square);
      }
      if (!result)
        return e.f32(1.0f);
      if (*integral < 0)
        result = LLVM::FDivOp::create(b, loc, e.f32(1.0f), result);
      return result;
    }
    Value yf = y.getType() == x.getType()
                   ? y
                   : Value(LLVM::FPExtOp::create(b, loc, x.getType(), y));
    Value magnitude =
        e.exp2(e.fmul(yf, e.log2(LLVM::FAbsOp::create(b, loc, x))));
    // y is integral when floor(y) == y, and odd when moreover floor(y / 2)
    // != y / 2 (exact in f32: halving and floor do not round).
    Value isIntegral = e.fcmp(LLVM::FCmpPredicate::oeq,
                              LLVM::FFloorOp::create(b, loc, yf), yf);
    Value half = e.fmul(yf, e.f32(0.5f));
    Value isOdd = LLVM::AndOp::create(
        b, loc, isIntegral,
        e.fcmp(LLVM::FCmpPredicate::one, LLVM::FFloorOp::create(b, loc, half),
               half));
    Value negative = e.fcmp(LLVM::FCmpPredicate::olt, x, e.f32(0.0f));
    Value signed_ = e.select(isOdd, LLVM::FNegOp::create(b, loc, magnitude),
                             magnitude);
    Value nan = e.f32(std::numeric_limits<float>::quiet_NaN());
    Value ofNegative = e.select(isIntegral, signed_, nan);
    Value result = e.select(negative, ofNegative, magnitude);
    return e.select(e.fcmp(LLVM::FCmpPredicate::oeq, yf, e.f32(0.0f)),
                    e.f32(1.0f), result);
  });
}

Value HookEmitter::size(SizeOp op) {
  StringRef name = op.getName();
  if (name == abi::kBatchSize)
    return getBatchParam(anchor);
  // The other sizes are the tensors' (attn.size's verifier holds hooks to
  // them).
  return getKernelParam(anchor, name);
}

Value HookEmitter::emitOp(Operation &op) {
  OpBuilder &b = e.builder();
  Location loc = op.getLoc();
  auto afn = LLVM::FastmathFlagsAttr::get(b.getContext(),
                                          LLVM::FastmathFlags::afn);
  auto contract = LLVM::FastmathFlagsAttr::get(b.getContext(),
                                               LLVM::FastmathFlags::contract);
  return TypeSwitch<Operation *, Value>(&op)
      .Case([&](arith::ConstantOp c) -> Value {
        Type type = convert(c.getType());
        Attribute value = c.getValue();
        if (auto integer = dyn_cast<IntegerAttr>(value))
          value = b.getIntegerAttr(type, integer.getValue().sextOrTrunc(
                                             type.getIntOrFloatBitWidth()));
        return LLVM::ConstantOp::create(b, loc, type, cast<TypedAttr>(value));
      })
      .Case([&](arith::AddIOp) { return binary<LLVM::AddOp>(op); })
      .Case([&](arith::SubIOp) { return binary<LLVM::SubOp>(op); })
      .Case([&](arith::MulIOp) { return binary<LLVM::MulOp>(op); })
      .Case([&](arith::DivSIOp) { return binary<LLVM::SDivOp>(op); })
      .Case([&](arith::DivUIOp) { return binary<LLVM::UDivOp>(op); })
      .Case([&](arith::RemSIOp) { return binary<LLVM::SRemOp>(op); })
      .Case([&](arith::RemUIOp) { return binary<LLVM::URemOp>(op); })
      .Case<arith::FloorDivSIOp, arith::CeilDivSIOp>([&](Operation *) {
        // q = a / c rounded toward zero, moved by one when the remainder is
        // non-zero and the exact quotient lies below (floor: signs differ)
        // or above (ceil: signs agree).
        Value a = in(op, 0), c = in(op, 1);
        Value q = LLVM::SDivOp::create(b, loc, a, c);
        Value r = LLVM::SRemOp::create(b, loc, a, c);
        Value zero = LLVM::ConstantOp::create(b, loc, a.getType(), 0);
        Value one = LLVM::ConstantOp::create(b, loc, a.getType(), 1);
        Value inexact = e.cmp(LLVM::ICmpPredicate::ne, r, zero);
        Value signsDiffer = e.cmp(LLVM::ICmpPredicate::slt,
                                  LLVM::XOrOp::create(b, loc, r, c), zero);
        bool floor = isa<arith::FloorDivSIOp>(op);
        Value direction =
            floor ? signsDiffer
                  : LLVM::XOrOp::create(
                        b, loc, signsDiffer,
                        LLVM::ConstantOp::create(b, loc, b.getI1Type(), 1));
        Value adjust = LLVM::AndOp::create(b, loc, inexact, direction);
        Value step = e.select(adjust, one, zero);
        return floor ? Value(LLVM::SubOp::create(b, loc, q, step))
                     : Value(LLVM::AddOp::create(b, loc, q, step));
      })
      .Case([&](arith::MaxSIOp) { return binary<LLVM::SMaxOp>(op); })
      .Case([&](arith::MinSIOp) { return binary<LLVM::SMinOp>(op); })
      .Case([&](arith::MaxUIOp) { return binary<LLVM::UMaxOp>(op); })
      .Case([&](arith::MinUIOp) { return binary<LLVM::UMinOp>(op); })
      .Case([&](arith::AndIOp) { return binary<LLVM::AndOp>(op); })
      .Case([&](arith::OrIOp) { return binary<LLVM::OrOp>(op); })
      .Case([&](arith::XOrIOp) { return binary<LLVM::XOrOp>(op); })
      .Case([&](arith::ShLIOp) { return binary<LLVM::ShlOp>(op); })
      .Case([&](arith::ShRSIOp) { return binary<LLVM::AShrOp>(op); })
      .Case([&](arith::ShRUIOp) { return binary<LLVM::LShrOp>(op); })
      .Case([&](arith::CmpIOp cmp) -> Value {
        return LLVM::ICmpOp::create(
            b, loc, static_cast<LLVM::ICmpPredicate>(cmp.getPredicate()),
            in(op, 0), in(op, 1));
      })
      .Case([&](arith::SelectOp) -> Value {
        return LLVM::SelectOp::create(b, loc, in(op, 0), in(op, 1), in(op, 2));
      })
      // Multiplies and adds may contract into FMAs (nvcc's -fmad=true).
      .Case([&](arith::AddFOp) { return binary<LLVM::FAddOp>(op, contract); })
      .Case([&](arith::SubFOp) { return binary<LLVM::FSubOp>(op, contract); })
      .Case([&](arith::MulFOp) { return binary<LLVM::FMulOp>(op, contract); })
      .Case([&](arith::DivFOp) -> Value {
        // Approximate division (div.full.f32 class, as Triton's default);
        // a division by a constant becomes a multiplication.
        auto flags = LLVM::FastmathFlagsAttr::get(
            b.getContext(),
            LLVM::FastmathFlags::arcp | LLVM::FastmathFlags::afn);
        return LLVM::FDivOp::create(b, loc, in(op, 0), in(op, 1), flags);
      })
      .Case([&](arith::NegFOp) -> Value {
        return LLVM::FNegOp::create(b, loc, in(op, 0));
      })
      .Case([&](arith::MaximumFOp) { return binary<LLVM::MaximumOp>(op); })
      .Case([&](arith::MinimumFOp) { return binary<LLVM::MinimumOp>(op); })
      .Case([&](arith::MaxNumFOp) { return binary<LLVM::MaxNumOp>(op); })
      .Case([&](arith::MinNumFOp) { return binary<LLVM::MinNumOp>(op); })
      .Case([&](arith::CmpFOp cmp) -> Value {
        return LLVM::FCmpOp::create(
            b, loc, static_cast<LLVM::FCmpPredicate>(cmp.getPredicate()),
            in(op, 0), in(op, 1));
      })
      .Case([&](arith::IndexCastOp cast) {
        return resize(in(op, 0), convert(cast.getType()), /*isSigned=*/true);
      })
      .Case([&](arith::IndexCastUIOp cast) {
        return resize(in(op, 0), convert(cast.getType()), /*isSigned=*/false);
      })
      .Case([&](arith::SIToFPOp) -> Value {
        // float(base + c) as float(base) + c, so that the elements of one
        // diagonal share the conversion: exact while |base| < 2^24, and
        // within an ulp beyond.
        auto it = affine.find(op.getOperand(0));
        if (it == affine.end() || !it->second.base ||
            !op.getResult(0).getType().isF32())
          return convertOp<LLVM::SIToFPOp>(op);
        auto [base, offset] = it->second;
        Value &converted = floatBases[base.getAsOpaquePointer()];
        if (!converted)
          converted =
              LLVM::SIToFPOp::create(b, loc, b.getF32Type(), base);
        if (offset == 0)
          return converted;
        return LLVM::FAddOp::create(b, loc, converted,
                                    e.f32(static_cast<float>(offset)),
                                    contract);
      })
      .Case([&](arith::UIToFPOp) { return convertOp<LLVM::UIToFPOp>(op); })
      .Case([&](arith::FPToSIOp) { return convertOp<LLVM::FPToSIOp>(op); })
      .Case([&](arith::FPToUIOp) { return convertOp<LLVM::FPToUIOp>(op); })
      .Case([&](arith::ExtFOp) { return convertOp<LLVM::FPExtOp>(op); })
      .Case([&](arith::TruncFOp) { return convertOp<LLVM::FPTruncOp>(op); })
      .Case([&](arith::ExtSIOp) { return convertOp<LLVM::SExtOp>(op); })
      .Case([&](arith::ExtUIOp) { return convertOp<LLVM::ZExtOp>(op); })
      .Case([&](arith::TruncIOp) { return convertOp<LLVM::TruncOp>(op); })
      // Transcendentals on the SFU: tanh.approx.f32 (sm_75 and later; every
      // chip of the Arch table has it), ex2/lg2.approx, sin/cos.approx.
      .Case([&](math::TanhOp) {
        return inF32(in(op, 0), [&](Value x) -> Value {
          return LLVM::TanhOp::create(b, loc, x, afn);
        });
      })
      .Case([&](math::ExpOp) {
        return inF32(in(op, 0), [&](Value x) {
          return e.exp2(e.fmul(x, e.f32(static_cast<float>(M_LOG2E))));
        });
      })
      .Case([&](math::Exp2Op) {
        return inF32(in(op, 0), [&](Value x) { return e.exp2(x); });
      })
      .Case([&](math::LogOp) {
        return inF32(in(op, 0), [&](Value x) {
          return e.fmul(e.log2(x), e.f32(static_cast<float>(M_LN2)));
        });
      })
      .Case([&](math::Log2Op) {
        return inF32(in(op, 0), [&](Value x) { return e.log2(x); });
      })
      .Case([&](math::SqrtOp) {
        return inF32(in(op, 0), [&](Value x) -> Value {
          return LLVM::SqrtOp::create(b, loc, x, afn);
        });
      })
      .Case([&](math::RsqrtOp) {
        return inF32(in(op, 0), [&](Value x) -> Value {
          return LLVM::CallIntrinsicOp::create(
                     b, loc, b.getF32Type(),
                     b.getStringAttr("llvm.nvvm.rsqrt.approx.f"), ValueRange{x})
              .getResult(0);
        });
      })
      .Case([&](math::AbsFOp) -> Value {
        return LLVM::FAbsOp::create(b, loc, in(op, 0));
      })
      .Case([&](math::AbsIOp) -> Value {
        return LLVM::AbsOp::create(b, loc, in(op, 0).getType(), in(op, 0),
                                   /*is_int_min_poison=*/false);
      })
      .Case([&](math::PowFOp pow) { return this->pow(pow); })
      .Case([&](math::ErfOp) {
        return inF32(in(op, 0), [&](Value x) { return erf(x); });
      })
      .Case([&](math::FmaOp) -> Value {
        return LLVM::FMAOp::create(b, loc, in(op, 0), in(op, 1), in(op, 2));
      })
      .Case([&](math::FloorOp) -> Value {
        return LLVM::FFloorOp::create(b, loc, in(op, 0));
      })
      .Case([&](math::CeilOp) -> Value {
        return LLVM::FCeilOp::create(b, loc, in(op, 0));
      })
      .Case([&](math::SinOp) {
        return inF32(in(op, 0), [&](Value x) -> Value {
          return LLVM::SinOp::create(b, loc, x, afn);
        });
      })
      .Case([&](math::CosOp) {
        return inF32(in(op, 0), [&](Value x) -> Value {
          return LLVM::CosOp::create(b, loc, x, afn);
        });
      })
      .Case([&](memref::LoadOp read) { return load(read); })
      .Case([&](memref::AtomicRMWOp add) { return accumulate(add); })
      .Case([&](SizeOp s) { return size(s); })
      .Default([&](Operation *) -> Value {
        llvm_unreachable("the hook verifier admits only the ops above");
      });
}
