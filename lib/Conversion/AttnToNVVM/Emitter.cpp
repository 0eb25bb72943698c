//===- Emitter.cpp - Arithmetic on the LLVM dialect -----------------------===//

#include "Emitter.h"

#include "flashtile/ABI/TargetLimits.h"
#include "flashtile/Dialect/Attn/Utils/KVBounds.h"

using namespace mlir;
using namespace flashtile;
using namespace flashtile::attn;
using namespace flashtile::attn::lowering;

Value Emitter::i32(int64_t value) {
  return LLVM::ConstantOp::create(b, loc, b.getI32Type(),
                                  b.getI32IntegerAttr(value));
}

Value Emitter::i64(int64_t value) {
  return LLVM::ConstantOp::create(b, loc, b.getI64Type(),
                                  b.getI64IntegerAttr(value));
}

Value Emitter::f32(float value) {
  return LLVM::ConstantOp::create(b, loc, b.getF32Type(),
                                  b.getF32FloatAttr(value));
}

Value Emitter::add(Value a, Value c) { return LLVM::AddOp::create(b, loc, a, c); }

Value Emitter::sub(Value a, Value c) { return LLVM::SubOp::create(b, loc, a, c); }

Value Emitter::mul(Value a, Value c) { return LLVM::MulOp::create(b, loc, a, c); }

Value Emitter::sdiv(Value a, Value c) {
  return LLVM::SDivOp::create(b, loc, a, c);
}

Value Emitter::floorDiv(Value a, int64_t c) {
  return attn::floorDiv(*this, a, c);
}

Value Emitter::ceilDiv(Value a, int64_t c) {
  return attn::ceilDiv(*this, a, c);
}

Value Emitter::udiv(Value a, int64_t c) {
  return LLVM::UDivOp::create(b, loc, a, i32(c));
}

Value Emitter::urem(Value a, int64_t c) {
  return LLVM::URemOp::create(b, loc, a, i32(c));
}

Value Emitter::bitAnd(Value a, int64_t c) {
  return LLVM::AndOp::create(b, loc, a, i32(c));
}

Value Emitter::bitXor(Value a, Value c) {
  return LLVM::XOrOp::create(b, loc, a, c);
}

Value Emitter::ctlz(Value a) {
  return LLVM::CountLeadingZerosOp::create(b, loc, a.getType(), a,
                                           /*is_zero_poison=*/false);
}

Value Emitter::bitOr(Value a, Value c) {
  return LLVM::OrOp::create(b, loc, a, c);
}

Value Emitter::shl(Value a, int64_t c) {
  return LLVM::ShlOp::create(b, loc, a, i32(c));
}

Value Emitter::lshr(Value a, int64_t c) {
  return LLVM::LShrOp::create(b, loc, a, i32(c));
}

Value Emitter::smin(Value a, Value c) {
  return LLVM::SMinOp::create(b, loc, a, c);
}

Value Emitter::smax(Value a, Value c) {
  return LLVM::SMaxOp::create(b, loc, a, c);
}

Value Emitter::cmp(LLVM::ICmpPredicate pred, Value a, Value c) {
  return LLVM::ICmpOp::create(b, loc, pred, a, c);
}

Value Emitter::select(Value cond, Value a, Value c) {
  return LLVM::SelectOp::create(b, loc, cond, a, c);
}

Value Emitter::sext64(Value a) {
  return LLVM::SExtOp::create(b, loc, b.getI64Type(), a);
}

Value Emitter::trunc32(Value a) {
  return LLVM::TruncOp::create(b, loc, b.getI32Type(), a);
}

Value Emitter::add64(Value a, Value c) {
  return LLVM::AddOp::create(b, loc, a, c);
}

Value Emitter::mul64(Value a, Value c) {
  return LLVM::MulOp::create(b, loc, a, c);
}

Value Emitter::fadd(Value a, Value c) {
  return LLVM::FAddOp::create(b, loc, a, c);
}

Value Emitter::fsub(Value a, Value c) {
  return LLVM::FSubOp::create(b, loc, a, c);
}

Value Emitter::fmul(Value a, Value c) {
  return LLVM::FMulOp::create(b, loc, a, c);
}

Value Emitter::fma(Value a, Value c, Value d) {
  return LLVM::FMAOp::create(b, loc, a, c, d);
}

Value Emitter::fmax(Value a, Value c) {
  return LLVM::MaxNumOp::create(b, loc, a, c);
}

Value Emitter::fcmp(LLVM::FCmpPredicate pred, Value a, Value c) {
  return LLVM::FCmpOp::create(b, loc, pred, a, c);
}

static Value callF32Intrinsic(OpBuilder &b, Location loc, StringRef name,
                              Value x) {
  return LLVM::CallIntrinsicOp::create(b, loc, b.getF32Type(),
                                       b.getStringAttr(name), ValueRange{x})
      .getResult(0);
}

Value Emitter::exp2(Value x) {
  return callF32Intrinsic(b, loc, "llvm.nvvm.ex2.approx.ftz.f32", x);
}

Value Emitter::log2(Value x) {
  return callF32Intrinsic(b, loc, "llvm.nvvm.lg2.approx.f", x);
}

Value Emitter::rcp(Value x) {
  return callF32Intrinsic(b, loc, "llvm.nvvm.rcp.approx.ftz.f", x);
}

Value Emitter::shflXor(Value x, int64_t laneMask) {
  return NVVM::ShflOp::create(b, loc, x.getType(), i32(-1), x, i32(laneMask),
                              i32(0x1f), NVVM::ShflKind::bfly,
                              UnitAttr());
}

Value Emitter::shflIdx(Value x, Value lane) {
  return NVVM::ShflOp::create(b, loc, x.getType(), i32(-1), x, lane,
                              i32(0x1f), NVVM::ShflKind::idx, UnitAttr());
}

Value Emitter::gep(Value base, Value byteOffset) {
  return LLVM::GEPOp::create(b, loc, base.getType(), b.getI8Type(), base,
                             ValueRange{byteOffset});
}

Value Emitter::packPair(Value lo, Value hi, Type dtype) {
  auto f32x2 = VectorType::get({2}, b.getF32Type());
  Value vec = LLVM::PoisonOp::create(b, loc, f32x2);
  vec = LLVM::InsertElementOp::create(b, loc, vec, lo, i32(0));
  vec = LLVM::InsertElementOp::create(b, loc, vec, hi, i32(1));
  Value half = LLVM::FPTruncOp::create(b, loc, VectorType::get({2}, dtype), vec);
  return LLVM::BitcastOp::create(b, loc, b.getI32Type(), half);
}

Value Emitter::extract(Value aggregate, int64_t index) {
  return LLVM::ExtractValueOp::create(b, loc, aggregate, index);
}

Value Emitter::insert(Value aggregate, Value value, int64_t index) {
  return LLVM::InsertValueOp::create(b, loc, aggregate, value, index);
}

SmallVector<Value> Emitter::unpack(Value array) {
  auto type = cast<LLVM::LLVMArrayType>(array.getType());
  SmallVector<Value> values;
  for (unsigned i = 0; i < type.getNumElements(); ++i)
    values.push_back(extract(array, i));
  return values;
}

Value Emitter::pack(Type type, ValueRange values) {
  Value array = LLVM::PoisonOp::create(b, loc, type);
  for (auto [i, value] : llvm::enumerate(values))
    array = insert(array, value, i);
  return array;
}

ThreadCoords ThreadCoords::get(Emitter &e, int64_t kvWarps) {
  OpBuilder &b = e.builder();
  ThreadCoords c;
  c.tid = NVVM::ThreadIdXOp::create(b, e.location(), b.getI32Type());
  Value warpId = e.udiv(c.tid, kWarpSize);
  c.warp = kvWarps == 1 ? warpId : e.udiv(warpId, kvWarps);
  c.kvWarp = kvWarps == 1 ? e.i32(0) : e.urem(warpId, kvWarps);
  c.lane = e.urem(c.tid, kWarpSize);
  c.g = e.udiv(c.lane, 4);
  c.t = e.urem(c.lane, 4);
  return c;
}

SmallVector<Value>
lowering::emitForLoop(RewriterBase &rewriter, Location loc, Value lower,
                      Value upper, int64_t step, ValueRange inits,
                      function_ref<SmallVector<Value>(Value, ValueRange)> body,
                      LoopDirection direction) {
  assert(step > 0 && "the step is positive; a loop down says so");
  assert((direction == LoopDirection::Up || step == 1) &&
         "a loop down steps by 1");
  Emitter e(rewriter, loc);
  Block *before = rewriter.getInsertionBlock();
  Block *exit = rewriter.splitBlock(before, rewriter.getInsertionPoint());
  SmallVector<Type> types = {rewriter.getI32Type()};
  for (Value v : inits)
    types.push_back(v.getType());
  SmallVector<Location> locs(types.size(), loc);
  SmallVector<Value> results;
  for (Type type : TypeRange(types).drop_front())
    results.push_back(exit->addArgument(type, loc));
  Block *header = rewriter.createBlock(exit, types, locs);
  Block *bodyBlock = rewriter.createBlock(exit, types, locs);
  // The header's counter: i itself going up; one past i going down, so
  // that the loop needs no bound below `lower`.
  rewriter.setInsertionPointToEnd(before);
  SmallVector<Value> entry = {direction == LoopDirection::Up ? lower : upper};
  llvm::append_range(entry, inits);
  LLVM::BrOp::create(rewriter, loc, entry, header);
  rewriter.setInsertionPointToEnd(header);
  Value counter = header->getArgument(0);
  SmallVector<Value> bodyArgs(header->getArguments());
  Value more;
  if (direction == LoopDirection::Up) {
    more = e.slt(counter, upper);
  } else {
    more = e.cmp(LLVM::ICmpPredicate::sgt, counter, lower);
    bodyArgs.front() = e.sub(counter, e.i32(1));
  }
  LLVM::CondBrOp::create(rewriter, loc, more, bodyBlock, bodyArgs, exit,
                         header->getArguments().drop_front());
  rewriter.setInsertionPointToEnd(bodyBlock);
  Value index = bodyBlock->getArgument(0);
  SmallVector<Value> next = {
      direction == LoopDirection::Up ? e.add(index, step) : index};
  llvm::append_range(next, body(index, bodyBlock->getArguments().drop_front()));
  LLVM::BrOp::create(rewriter, loc, next, header);
  rewriter.setInsertionPointToStart(exit);
  return results;
}

void lowering::emitIf(RewriterBase &rewriter, Location loc, Value cond,
                    function_ref<void()> body) {
  Block *current = rewriter.getInsertionBlock();
  Block *continuation =
      rewriter.splitBlock(current, rewriter.getInsertionPoint());
  Block *thenBlock = rewriter.createBlock(continuation);
  rewriter.setInsertionPointToEnd(current);
  LLVM::CondBrOp::create(rewriter, loc, cond, thenBlock, continuation);
  rewriter.setInsertionPointToStart(thenBlock);
  body();
  LLVM::BrOp::create(rewriter, loc, continuation);
  rewriter.setInsertionPointToStart(continuation);
}

void lowering::emitIfElse(RewriterBase &rewriter, Location loc, Value cond,
                          function_ref<void()> body,
                          function_ref<void()> otherwise) {
  Block *current = rewriter.getInsertionBlock();
  Block *continuation =
      rewriter.splitBlock(current, rewriter.getInsertionPoint());
  Block *thenBlock = rewriter.createBlock(continuation);
  Block *elseBlock = rewriter.createBlock(continuation);
  rewriter.setInsertionPointToEnd(current);
  LLVM::CondBrOp::create(rewriter, loc, cond, thenBlock, elseBlock);
  rewriter.setInsertionPointToStart(thenBlock);
  body();
  LLVM::BrOp::create(rewriter, loc, continuation);
  rewriter.setInsertionPointToStart(elseBlock);
  otherwise();
  LLVM::BrOp::create(rewriter, loc, continuation);
  rewriter.setInsertionPointToStart(continuation);
}

void lowering::warpAllReduce(
    Emitter &e, MutableArrayRef<Value> values,
    function_ref<Value(size_t, Value, Value)> combine) {
  for (int64_t mask = kWarpSize / 2; mask >= 1; mask /= 2)
    for (size_t i = 0; i < values.size(); ++i) {
      Value other = e.shflXor(values[i], mask);
      values[i] = combine(i, values[i], other);
    }
}

Value lowering::treeReduce(SmallVector<Value> values,
                           function_ref<Value(Value, Value)> combine) {
  assert(!values.empty() && "a row has at least one value per thread");
  while (values.size() > 1) {
    SmallVector<Value> next;
    for (size_t i = 0; i + 1 < values.size(); i += 2)
      next.push_back(combine(values[i], values[i + 1]));
    if (values.size() % 2)
      next.push_back(values.back());
    values = std::move(next);
  }
  return values.front();
}
