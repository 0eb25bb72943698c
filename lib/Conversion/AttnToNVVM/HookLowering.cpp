//===- HookLowering.cpp - score_mod / mask_mod, per score element ---------===//
//
// attn.modify_scores runs its hook regions once per accumulator element of
// the score tile, in registers, between the QK^T mma and the softmax. The
// regions hold the ops the hook contract allows (attn::isSupportedHookOp);
// HookEmitter emits each one as LLVM dialect ops, with index as i32 like the
// rest of the kernel. Element-invariant parts (kernel arguments, sizes, a
// row's own reads) come out identical per element and are merged by LLVM's
// CSE, so a hook costs what its per-element arithmetic costs.
//
//===----------------------------------------------------------------------===//

#include "LoweringUtils.h"

#include "mlir/Conversion/LLVMCommon/Pattern.h"
#include "mlir/Conversion/LLVMCommon/TypeConverter.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>
#include <limits>
#include <map>
#include <tuple>

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

namespace {

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
  Value inF32(Value x, function_ref<Value(Value)> fn);
  Value erf(Value x);
  Value load(memref::LoadOp op);
  Value size(SizeOp op);

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

} // namespace

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
    if (std::optional<Affine> step = affineStep(op)) {
      affine[op.getResult(0)] = *step;
      continue;
    }
    if (std::optional<Scaled> step = scaledStep(op)) {
      scaled[op.getResult(0)] = *step;
      continue;
    }
    values[op.getResult(0)] = emitOp(op);
  }
  llvm_unreachable("a verified hook ends with attn.yield");
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

/// `tensor[indices]`: the parameters of an extra tensor are its pointer,
/// then its sizes, then its strides (KernelABI.h); the address is computed
/// in 64 bits. Each index is clamped to [0, size - 1], so that no hook reads
/// outside its tensor: hooks run on the positions of every score a thread
/// holds, including rows past seqlen_q and keys past seqlen_k, whose scores
/// are masked or never stored. The read is marked invariant: hooks never
/// write.
Value HookEmitter::load(memref::LoadOp op) {
  OpBuilder &b = e.builder();
  Location loc = op.getLoc();
  auto type = op.getMemRefType();
  int64_t first = tensors.lookup(op.getMemRef());
  int64_t rank = type.getRank();
  Value offset = e.i64(0);
  Value maxI32 = e.i64(std::numeric_limits<int32_t>::max());
  for (auto [d, index] : llvm::enumerate(op.getIndices())) {
    Value size = getKernelParam(anchor, first + 1 + d);
    Value last = e.sub(LLVM::TruncOp::create(b, loc, b.getI32Type(),
                                             LLVM::SMinOp::create(
                                                 b, loc, size, maxI32)),
                       e.i32(1));
    Value clamped = e.smin(e.smax(get(index), e.i32(0)), last);
    Value stride = getKernelParam(anchor, first + 1 + rank + d);
    offset = e.add64(offset, e.mul64(e.sext64(clamped), stride));
  }
  Value base = getKernelParam(anchor, first);
  Value address = LLVM::GEPOp::create(b, loc, base.getType(),
                                      type.getElementType(), base,
                                      ArrayRef<LLVM::GEPArg>{offset});
  // Elements are naturally aligned (the launch plan checks the pointer).
  auto read = LLVM::LoadOp::create(
      b, loc, type.getElementType(), address,
      /*alignment=*/type.getElementTypeBitWidth() / 8);
  read.setInvariant(true);
  return read;
}

Value HookEmitter::size(SizeOp op) {
  StringRef name = op.getName();
  if (name == "batch")
    return NVVM::GridDimZOp::create(e.builder(), op.getLoc(),
                                    e.builder().getI32Type());
  unsigned param = llvm::StringSwitch<unsigned>(name)
                       .Case("seqlen_q", kParamSeqlenQ)
                       .Case("seqlen_k", kParamSeqlenK)
                       .Case("heads_q", kParamHeadsQ)
                       .Case("heads_kv", kParamHeadsKV);
  static_assert(kGridAxisBatch == 2, "batch is the grid's z axis");
  return getKernelParam(anchor, param);
}

Value HookEmitter::emitOp(Operation &op) {
  OpBuilder &b = e.builder();
  Location loc = op.getLoc();
  auto afn = LLVM::FastmathFlagsAttr::get(b.getContext(),
                                          LLVM::FastmathFlags::afn);
  auto contract = LLVM::FastmathFlagsAttr::get(b.getContext(),
                                               LLVM::FastmathFlags::contract);
  auto approx = [&](Value x, function_ref<Value(Value)> fn) {
    return inF32(x, fn);
  };
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
            b.getContext(), LLVM::FastmathFlags::arcp | LLVM::FastmathFlags::afn);
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
      .Case([&](arith::SIToFPOp) { return convertOp<LLVM::SIToFPOp>(op); })
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
        return approx(in(op, 0), [&](Value x) -> Value {
          return LLVM::TanhOp::create(b, loc, x, afn);
        });
      })
      .Case([&](math::ExpOp) {
        return approx(in(op, 0), [&](Value x) {
          return e.exp2(e.fmul(x, e.f32(static_cast<float>(M_LOG2E))));
        });
      })
      .Case([&](math::Exp2Op) {
        return approx(in(op, 0), [&](Value x) { return e.exp2(x); });
      })
      .Case([&](math::LogOp) {
        return approx(in(op, 0), [&](Value x) {
          return e.fmul(e.log2(x), e.f32(static_cast<float>(M_LN2)));
        });
      })
      .Case([&](math::Log2Op) {
        return approx(in(op, 0), [&](Value x) { return e.log2(x); });
      })
      .Case([&](math::SqrtOp) {
        return approx(in(op, 0), [&](Value x) -> Value {
          return LLVM::SqrtOp::create(b, loc, x, afn);
        });
      })
      .Case([&](math::RsqrtOp) {
        return approx(in(op, 0), [&](Value x) -> Value {
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
      .Case([&](math::PowFOp) -> Value {
        // x^y = 2^(y log2 x): exact for x > 0 up to the SFU's error, and
        // 0^y = 0 for y > 0; a negative base gives NaN.
        Value y = in(op, 1);
        return approx(in(op, 0), [&](Value x) {
          Value yf = y.getType() == x.getType()
                         ? y
                         : Value(LLVM::FPExtOp::create(b, loc, x.getType(), y));
          return e.exp2(e.fmul(yf, e.log2(x)));
        });
      })
      .Case([&](math::ErfOp) {
        return approx(in(op, 0), [&](Value x) { return erf(x); });
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
        return approx(in(op, 0), [&](Value x) -> Value {
          return LLVM::SinOp::create(b, loc, x, afn);
        });
      })
      .Case([&](math::CosOp) {
        return approx(in(op, 0), [&](Value x) -> Value {
          return LLVM::CosOp::create(b, loc, x, afn);
        });
      })
      .Case([&](memref::LoadOp read) { return load(read); })
      .Case([&](SizeOp s) { return size(s); })
      .Default([&](Operation *) -> Value {
        llvm_unreachable("the hook verifier admits only the ops above");
      });
}

namespace {

/// Runs the hooks on every score element a thread holds, at its true
/// positions. Positions differ from element to element by compile-time
/// constants, so LLVM's CSE shares what the hooks compute from, say, k - q
/// between the elements of one diagonal.
struct ModifyScoresLowering : public AttnOpLoweringPattern<ModifyScoresOp> {
  using AttnOpLoweringPattern::AttnOpLoweringPattern;

  LogicalResult lower(ModifyScoresOp op, OpAdaptor adaptor,
                      ConversionPatternRewriter &rewriter,
                      TileOpContext &ctx) const override {
    const FragmentLayout &layout = ctx.layout;
    auto type = cast<FragType>(op.getS().getType());
    int64_t rows = type.getDimSize(0), cols = type.getDimSize(1);
    int64_t mTiles = layout.mTiles(rows), nTiles = cols / 8;
    Emitter &e = ctx.e;
    ScoreTileCoords coords(ctx, rows, cols, adaptor.getMBlock(),
                           adaptor.getNBlock());
    Value batch = adaptor.getBatch(), head = adaptor.getHead();
    Value scale = adaptor.getScale();
    Value negInf = e.f32(-std::numeric_limits<float>::infinity());
    bool hasScoreMod = !op.getScoreMod().empty();
    bool hasMaskMod = !op.getMaskMod().empty();

    HookEmitter hooks(e, op);
    SmallVector<Value> s = e.unpack(adaptor.getS());
    for (int64_t i = 0; i < mTiles; ++i)
      for (int64_t j = 0; j < nTiles; ++j)
        for (int64_t r = 0; r < 4; ++r) {
          auto [q, qOffset] = coords.rowParts(i, r);
          auto [k, kOffset] = coords.colParts(j, r);
          int64_t index = FragmentLayout::accIndex(i, j, r, nTiles);
          Value score = s[index];
          if (hasScoreMod)
            score = hooks.emit(op.getScoreMod(), {score, batch, head, q, k},
                               {0, 0, 0, qOffset, kOffset}, scale);
          if (hasMaskMod) {
            Value keep = hooks.emit(op.getMaskMod(), {batch, head, q, k},
                                    {0, 0, qOffset, kOffset});
            score = e.select(keep, score, negInf);
          }
          s[index] = score;
        }
    rewriter.replaceOp(op, e.pack(layout.convertType(type), s));
    return success();
  }
};

/// The tile range of attn.kv_bounds refined by the mask's key interval,
/// evaluated at the query tile's first and last valid rows (the interval is
/// monotone in the row); the arithmetic is KVBounds.h's.
struct KeyRangeLowering : public AttnOpLoweringPattern<KeyRangeOp> {
  using AttnOpLoweringPattern::AttnOpLoweringPattern;

  LogicalResult lower(KeyRangeOp op, OpAdaptor adaptor,
                      ConversionPatternRewriter &rewriter,
                      TileOpContext &ctx) const override {
    Emitter &e = ctx.e;
    int64_t tileM = op.getTileM(), tileN = op.getTileN();
    Value first = e.mul(adaptor.getMBlock(), tileM);
    Value last = e.smin(e.add(first, tileM - 1),
                        e.sub(adaptor.getSeqlenQ(), e.i32(1)));
    HookEmitter hooks(e, op);
    Value batch = adaptor.getBatch(), head = adaptor.getHead();
    SmallVector<Value> at0 = hooks.emitAll(op.getBody(), {batch, head, first});
    SmallVector<Value> at1 = hooks.emitAll(op.getBody(), {batch, head, last});
    KVTileRange<Value> mask = computeKeyRangeTiles(
        e, at0[0], at0[1], at1[0], at1[1], adaptor.getSeqlenK(), tileN,
        op.getExact());
    KVTileRange<Value> within{adaptor.getWithinBegin(),
                              adaptor.getWithinUnmaskedBegin(),
                              adaptor.getWithinUnmaskedEnd(),
                              adaptor.getWithinEnd()};
    KVTileRange<Value> range = intersectTileRanges(e, within, mask);
    rewriter.replaceOp(op, {range.begin, range.unmaskedBegin,
                            range.unmaskedEnd, range.end});
    return success();
  }
};

/// The 4 i32 the block-mask kernel wrote for this (batch, head, query tile)
/// in the `kv_ranges` workspace (the kernel's last parameter), intersected
/// with the window's range.
struct BlockRangesLowering : public AttnOpLoweringPattern<BlockRangesOp> {
  using AttnOpLoweringPattern::AttnOpLoweringPattern;

  LogicalResult lower(BlockRangesOp op, OpAdaptor adaptor,
                      ConversionPatternRewriter &rewriter,
                      TileOpContext &ctx) const override {
    Emitter &e = ctx.e;
    auto func = op->getParentOfType<LLVM::LLVMFuncOp>();
    Value workspace = func.getArgument(func.getNumArguments() - 1);
    Value mTiles = e.ceilDiv(adaptor.getSeqlenQ(), op.getTileM());
    Value heads = op.getPerHead() ? getKernelParam(op, kParamHeadsQ) : e.i32(1);
    Value head = op.getPerHead() ? adaptor.getHead() : e.i32(0);
    Value entry = e.add(e.mul(e.add(e.mul(adaptor.getBatch(), heads), head),
                              mTiles),
                        adaptor.getMBlock());
    Value base = e.mul64(e.sext64(entry), e.i64(kBlockRangesFields * 4));
    Value fields[kBlockRangesFields];
    for (int64_t f = 0; f < kBlockRangesFields; ++f) {
      Value address = e.gep(workspace, e.add64(base, e.i64(4 * f)));
      fields[f] = LLVM::LoadOp::create(rewriter, op.getLoc(),
                                       rewriter.getI32Type(), address,
                                       /*alignment=*/4);
    }
    KVTileRange<Value> within{adaptor.getWithinBegin(),
                              adaptor.getWithinUnmaskedBegin(),
                              adaptor.getWithinUnmaskedEnd(),
                              adaptor.getWithinEnd()};
    KVTileRange<Value> mask{fields[0], fields[1], fields[2], fields[3]};
    KVTileRange<Value> range = intersectTileRanges(e, within, mask);
    rewriter.replaceOp(op, {range.begin, range.unmaskedBegin,
                            range.unmaskedEnd, range.end});
    return success();
  }
};

} // namespace

/// The block-mask kernel: one block of kBlockRangesThreads threads per
/// (query tile, head or 0, batch). For each KV tile the window allows, in
/// order, every thread evaluates the mask_mod on its share of the tile's
/// elements (positions clamped like attn.modify_scores), and two barrier
/// reductions tell every thread whether any element is kept and whether
/// every element of a valid row is. The first and last tiles with a kept key
/// and the longest run of whole tiles are tracked in registers (uniform
/// across the block) and thread 0 writes them.
LogicalResult lowering::buildBlockRangesKernel(KernelOp kernel) {
  BlockRangesOp ranges = getBlockRanges(kernel);
  MLIRContext *ctx = kernel.getContext();
  Location loc = ranges.getLoc();
  OpBuilder b(kernel);
  std::vector<plan::Param> abi = getKernelParams(kernel);
  SmallVector<int64_t> extraParams;
  for (unsigned i = 0; i < kernel.getExtraArgs().size(); ++i) {
    std::string name = kernel.getExtraArgName(i).str();
    for (auto [index, param] : llvm::enumerate(abi))
      if (param.source.arg == name &&
          (param.source.kind == plan::ParamSource::Kind::Data ||
           param.source.kind == plan::ParamSource::Kind::Scalar)) {
        extraParams.push_back(index);
        break;
      }
  }
  auto func = LLVM::LLVMFuncOp::create(
      b, loc, (kernel.getSymName() + kBlockRangesKernelSuffix).str(),
      getKernelFuncType(ctx, abi));
  func->setAttr(NVVM::NVVMDialect::getKernelFuncAttrName(), b.getUnitAttr());
  func->setAttr(NVVM::NVVMDialect::getMaxntidAttrName(),
                b.getDenseI32ArrayAttr({int32_t(kBlockRangesThreads), 1, 1}));
  func->setAttr(kExtraParamsAttrName, b.getDenseI64ArrayAttr(extraParams));

  Block *entry = func.addEntryBlock(b);
  b.setInsertionPointToStart(entry);
  Emitter e(b, loc);
  Type i32 = b.getI32Type(), i1 = b.getI1Type();
  Value tid = NVVM::ThreadIdXOp::create(b, loc, i32);
  Value mBlock = NVVM::BlockIdXOp::create(b, loc, i32);
  Value head = ranges.getPerHead()
                   ? Value(NVVM::BlockIdYOp::create(b, loc, i32))
                   : e.i32(0);
  Value batch = NVVM::BlockIdZOp::create(b, loc, i32);
  Value seqlenQ = func.getArgument(kParamSeqlenQ);
  Value seqlenK = func.getArgument(kParamSeqlenK);
  int64_t tileM = ranges.getTileM(), tileN = ranges.getTileN();
  ProblemAttr problem = kernel.getProblemInfo();
  KVTiling tiling{tileM, tileN, problem.getWindowLeft(),
                  problem.getWindowRight()};
  KVTileRange<Value> window =
      computeKVTileRange(e, mBlock, seqlenQ, seqlenK, tiling);
  Value firstRow = e.mul(mBlock, tileM);
  Value lastRow = e.sub(seqlenQ, e.i32(1));
  Value lastKey = e.sub(seqlenK, e.i32(1));
  Value offset = e.sub(seqlenK, seqlenQ);
  Value none = e.i32(-1);

  // header(n, firstAny, lastAny, runStart, bestBegin, bestEnd)
  SmallVector<Type> stateTypes(6, i32);
  SmallVector<Location> locs(6, loc);
  Block *header = b.createBlock(&func.getBody(), func.getBody().end(),
                                stateTypes, locs);
  Block *body = b.createBlock(&func.getBody(), func.getBody().end());
  Block *exit = b.createBlock(&func.getBody(), func.getBody().end());
  b.setInsertionPointToEnd(entry);
  LLVM::BrOp::create(b, loc,
                     ValueRange{window.begin, none, none, none, e.i32(0),
                                e.i32(0)},
                     header);

  b.setInsertionPointToEnd(header);
  Value n = header->getArgument(0);
  LLVM::CondBrOp::create(b, loc, e.slt(n, window.end), body, ValueRange{},
                         exit, ValueRange{});

  b.setInsertionPointToEnd(body);
  HookEmitter hooks(e, tid.getDefiningOp());
  Value anyKept = LLVM::ConstantOp::create(b, loc, i1, 0);
  Value allKept = LLVM::ConstantOp::create(b, loc, i1, 1);
  int64_t steps = tileM * tileN / kBlockRangesThreads;
  for (int64_t step = 0; step < steps; ++step) {
    Value element = e.add(tid, step * kBlockRangesThreads);
    Value q = e.add(firstRow, e.udiv(element, tileN));
    Value k = e.add(e.mul(n, tileN), e.urem(element, tileN));
    Value rowValid = e.slt(q, seqlenQ);
    KeyWindow<Value> keys = computeKeyWindow(
        e, e.add(q, offset), seqlenK, tiling.windowLeft, tiling.windowRight);
    Value hidden = isKeyMasked(e, keys, k);
    Value keep = hooks.emit(ranges.getMaskMod(),
                            {batch, head, e.smin(q, lastRow),
                             e.smin(k, lastKey)});
    Value notHidden = LLVM::XOrOp::create(
        b, loc, hidden, LLVM::ConstantOp::create(b, loc, i1, 1));
    keep = LLVM::AndOp::create(
        b, loc, LLVM::AndOp::create(b, loc, keep, notHidden), rowValid);
    anyKept = LLVM::OrOp::create(b, loc, anyKept, keep);
    Value rowInvalid = LLVM::XOrOp::create(
        b, loc, rowValid, LLVM::ConstantOp::create(b, loc, i1, 1));
    allKept = LLVM::AndOp::create(
        b, loc, allKept, LLVM::OrOp::create(b, loc, keep, rowInvalid));
  }
  auto reduce = [&](StringRef name, Value pred) -> Value {
    return LLVM::CallIntrinsicOp::create(b, loc, i1, b.getStringAttr(name),
                                         ValueRange{e.i32(0), pred})
        .getResult(0);
  };
  Value anyTile = reduce("llvm.nvvm.barrier.cta.red.or.aligned.all", anyKept);
  Value allTile = reduce("llvm.nvvm.barrier.cta.red.and.aligned.all", allKept);
  Value firstAny = header->getArgument(1), lastAny = header->getArgument(2);
  Value runStart = header->getArgument(3);
  Value bestBegin = header->getArgument(4), bestEnd = header->getArgument(5);
  Value noneYet = e.cmp(LLVM::ICmpPredicate::eq, firstAny, none);
  firstAny = e.select(LLVM::AndOp::create(b, loc, anyTile, noneYet), n,
                      firstAny);
  lastAny = e.select(anyTile, n, lastAny);
  Value noRun = e.cmp(LLVM::ICmpPredicate::eq, runStart, none);
  Value start = e.select(noRun, n, runStart);
  runStart = e.select(allTile, start, none);
  Value longer = LLVM::AndOp::create(
      b, loc, allTile,
      e.cmp(LLVM::ICmpPredicate::sgt, e.sub(e.add(n, 1), start),
            e.sub(bestEnd, bestBegin)));
  bestBegin = e.select(longer, start, bestBegin);
  bestEnd = e.select(longer, e.add(n, 1), bestEnd);
  LLVM::BrOp::create(b, loc,
                     ValueRange{e.add(n, 1), firstAny, lastAny, runStart,
                                bestBegin, bestEnd},
                     header);

  // Thread 0 writes (begin, whole begin, whole end, end); no kept key gives
  // an empty range at the window's begin.
  b.setInsertionPointToEnd(exit);
  Value found = e.cmp(LLVM::ICmpPredicate::ne, header->getArgument(1), none);
  Value begin = e.select(found, header->getArgument(1), window.begin);
  Value end = e.select(found, e.add(header->getArgument(2), 1), window.begin);
  Value wholeBegin = e.smax(begin, e.smin(header->getArgument(4), end));
  Value wholeEnd = e.smax(wholeBegin, e.smin(header->getArgument(5), end));
  Value heads = ranges.getPerHead() ? func.getArgument(kParamHeadsQ) : e.i32(1);
  Value mTiles = e.ceilDiv(seqlenQ, tileM);
  Value index = e.add(e.mul(e.add(e.mul(batch, heads), head), mTiles), mBlock);
  Value byteBase = e.mul64(e.sext64(index), e.i64(kBlockRangesFields * 4));
  Value workspace = func.getArgument(func.getNumArguments() - 1);
  Value out[] = {begin, wholeBegin, wholeEnd, end};
  Value addresses[kBlockRangesFields];
  for (int64_t f = 0; f < kBlockRangesFields; ++f)
    addresses[f] = e.gep(workspace, e.add64(byteBase, e.i64(4 * f)));
  Value isFirst = e.cmp(LLVM::ICmpPredicate::eq, tid, e.i32(0));
  IRRewriter rewriter(b);
  emitIf(rewriter, loc, isFirst, [&] {
    for (int64_t f = 0; f < kBlockRangesFields; ++f)
      LLVM::StoreOp::create(rewriter, loc, out[f], addresses[f],
                            /*alignment=*/4);
  });
  LLVM::ReturnOp::create(rewriter, loc, ValueRange());
  return success();
}

void lowering::populateHookPatterns(LLVMTypeConverter &converter,
                                    RewritePatternSet &patterns) {
  patterns.add<ModifyScoresLowering, KeyRangeLowering, BlockRangesLowering>(
      converter);
}
