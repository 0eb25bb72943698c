//===- LoweringUtils.cpp - Shared helpers of the AttnToNVVM patterns ------===//

#include "LoweringUtils.h"

#include "mlir/Conversion/LLVMCommon/MemRefBuilder.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace flashtile;
using namespace flashtile::attn;
using namespace flashtile::attn::lowering;

//===----------------------------------------------------------------------===//
// Kernel ABI and fragment layout
//===----------------------------------------------------------------------===//


int64_t FragmentLayout::accValuesPerTile(FragType type) {
  return MmaFragment(kShape, MmaOperand::C,
                     type.getElementType().getIntOrFloatBitWidth())
      .getRegistersPerLane();
}

int64_t FragmentLayout::aTileCols(FragType type) {
  std::optional<MmaShape> shape =
      getOperandShape(type.getElementType().getIntOrFloatBitWidth());
  assert(shape && "A fragments hold types the mma table multiplies");
  return shape->k;
}

int64_t FragmentLayout::numValues(FragType type) const {
  ArrayRef<int64_t> shape = type.getShape();
  int64_t tiles = mTiles(shape[0]);
  switch (type.getLayout()) {
  case FragLayout::Rows:
    return tiles * 2;
  case FragLayout::Acc:
    return tiles * (shape[1] / kShape.n) * accValuesPerTile(type);
  case FragLayout::A:
    return tiles * (shape[1] / aTileCols(type)) * 4;
  }
  llvm_unreachable("every layout kind has a size");
}

Type FragmentLayout::convertType(FragType type) const {
  MLIRContext *ctx = type.getContext();
  // 32-bit elements are one value each, in their own type; narrower ones
  // are packed into i32.
  Type element = IntegerType::get(ctx, 32);
  if (type.getElementType().isF32())
    element = Float32Type::get(ctx);
  return LLVM::LLVMArrayType::get(element, numValues(type));
}

LLVM::LLVMStructType lowering::getGlobalTensorDescType(MLIRContext *ctx,
                                                       int64_t rank) {
  Type i64 = IntegerType::get(ctx, 64);
  auto ptr = LLVM::LLVMPointerType::get(ctx, 1);
  if (rank == 0)
    return LLVM::LLVMStructType::getLiteral(ctx, {ptr, ptr, i64});
  auto array = LLVM::LLVMArrayType::get(i64, rank);
  return LLVM::LLVMStructType::getLiteral(ctx, {ptr, ptr, i64, array, array});
}

//===----------------------------------------------------------------------===//
// Emitter
//===----------------------------------------------------------------------===//

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

//===----------------------------------------------------------------------===//
// Kernel context
//===----------------------------------------------------------------------===//

ConfigAttr lowering::getKernelConfig(Operation *op) {
  if (auto kernel = op->getParentOfType<KernelOp>())
    return kernel.getConfigAttr();
  if (auto func = op->getParentOfType<LLVM::LLVMFuncOp>())
    return func->getAttrOfType<ConfigAttr>(kConfigAttrName);
  return {};
}

bool lowering::hasKeyGrid(Operation *op) {
  if (auto kernel = op->getParentOfType<KernelOp>())
    return kernel.hasKeyGrid();
  auto func = op->getParentOfType<LLVM::LLVMFuncOp>();
  return func && func->hasAttr(kKeyGridAttrName);
}

ArchAttr lowering::getKernelArch(Operation *op) {
  if (auto kernel = op->getParentOfType<KernelOp>())
    return kernel.getArchAttr();
  if (auto func = op->getParentOfType<LLVM::LLVMFuncOp>())
    return func->getAttrOfType<ArchAttr>(kArchAttrName);
  return {};
}

static LLVM::LLVMFuncOp getFunc(Operation *op) {
  auto func = isa<LLVM::LLVMFuncOp>(op)
                  ? cast<LLVM::LLVMFuncOp>(op)
                  : op->getParentOfType<LLVM::LLVMFuncOp>();
  assert(func && "kernel ops are lowered after their kernel");
  return func;
}

Value lowering::getKernelParam(Operation *op, int64_t index) {
  return getFunc(op).getArgument(index);
}

Value lowering::emitPlanExpr(Emitter &e, Operation *anchor,
                             const plan::Expr &expr) {
  using Op = plan::Expr::Op;
  auto operand = [&](size_t i) {
    return emitPlanExpr(e, anchor, expr.operands[i]);
  };
  switch (expr.op) {
  case Op::Const:
    return e.i32(expr.value);
  case Op::Name:
    return getKernelParam(anchor, StringRef(expr.name));
  case Op::CeilDiv:
    // The formulas divide by tile sizes, which are constants.
    assert(expr.operands[1].op == Op::Const && "a constant divisor");
    return e.ceilDiv(operand(0), expr.operands[1].value);
  default:
    break;
  }
  // Binary operators. The right operand is emitted first: the order the
  // kernels' hand-written arithmetic had (GCC evaluated its call arguments
  // right to left), so that no kernel changed when the formulas became one.
  Value rhs = operand(1);
  Value lhs = operand(0);
  switch (expr.op) {
  case Op::Add:
    return e.add(lhs, rhs);
  case Op::Sub:
    return e.sub(lhs, rhs);
  case Op::Mul:
    return e.mul(lhs, rhs);
  case Op::Div:
    return e.sdiv(lhs, rhs);
  default:
    llvm_unreachable("KernelABI's formulas use + - * / and ceil_div only");
  }
}

Value lowering::getKernelParam(Operation *op, StringRef name) {
  LLVM::LLVMFuncOp func = getFunc(op);
  auto params = func->getAttrOfType<DictionaryAttr>(kTensorParamsAttrName);
  auto index = params ? params.getAs<IntegerAttr>(name) : IntegerAttr();
  assert(index && "the kernel lowering names its tensors' parameters");
  return func.getArgument(index.getInt());
}

LLVM::LLVMFunctionType
lowering::getKernelFuncType(MLIRContext *ctx,
                            const std::vector<plan::Param> &params) {
  SmallVector<Type> types;
  for (const plan::Param &param : params) {
    switch (param.type) {
    case plan::ParamType::Ptr:
      types.push_back(LLVM::LLVMPointerType::get(ctx, 1));
      break;
    case plan::ParamType::I32:
      types.push_back(IntegerType::get(ctx, 32));
      break;
    case plan::ParamType::I64:
      types.push_back(IntegerType::get(ctx, 64));
      break;
    case plan::ParamType::F32:
      types.push_back(Float32Type::get(ctx));
      break;
    }
  }
  return LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx), types);
}

int64_t lowering::getExtraArgParam(Operation *op, unsigned index) {
  auto func = op->getParentOfType<LLVM::LLVMFuncOp>();
  assert(func && "kernel ops are lowered after their kernel");
  auto params = func->getAttrOfType<DenseI64ArrayAttr>(kExtraParamsAttrName);
  assert(params && static_cast<int64_t>(index) < params.size() &&
         "the kernel lowering lists every extra argument");
  return params[index];
}

ExtraMatrix lowering::getExtraMatrix(Operation *op) {
  auto index = op->getAttrOfType<IntegerAttr>(kExtraArgAttrName);
  assert(index && "the conversion pass stamps the tensor's index");
  int64_t first = getExtraArgParam(op, index.getInt());
  auto func = op->getParentOfType<LLVM::LLVMFuncOp>();
  auto param = [&](int64_t i) -> Value { return func.getArgument(i); };
  return {param(first), param(getExtraTensorSizeParam(first, 0)),
          param(getExtraTensorSizeParam(first, 1)),
          param(getExtraTensorStrideParam(first, 2, 0)),
          param(getExtraTensorStrideParam(first, 2, 1))};
}

ScoreTileCoords::ScoreTileCoords(TileOpContext &ctx, int64_t rows,
                                 int64_t cols, Value mBlock, Value nBlock)
    : ctx(ctx), e(ctx.e) {
  ThreadCoords &thread = ctx.thread();
  rowBase = e.add(e.mul(mBlock, rows),
                  e.add(e.mul(thread.warp, ctx.layout.rowsPerWarp(rows)),
                        thread.g));
  // The KV tile is kv_warps slices of `cols` keys; this warp holds one.
  int64_t kvWarps = ctx.config.getKvWarps();
  colBase = e.add(e.mul(nBlock, cols * kvWarps), e.mul(thread.t, 2));
  if (kvWarps > 1)
    colBase = e.add(colBase, e.mul(thread.kvWarp, cols));
}

Value ScoreTileCoords::row(int64_t i, int64_t r) {
  if (!ctx.packed())
    return e.add(rowBase, rowOffset(i, r));
  auto &entry = unpacked[rowOffset(i, r)];
  if (!entry.first)
    entry = ctx.unpackRow(e.add(rowBase, rowOffset(i, r)));
  return entry.first;
}

Value ScoreTileCoords::headOffset(int64_t i, int64_t r) {
  if (!ctx.packed())
    return {};
  row(i, r);
  return unpacked[rowOffset(i, r)].second;
}

Value TileOpContext::groupSize() {
  if (!group)
    group = e.sdiv(getKernelParam(op, abi::kQuerySide.heads),
                   getKernelParam(op, abi::kKeySide.heads));
  return group;
}

std::pair<Value, Value>
TileOpContext::packedTilePositions(Value mBlock, Value seqlenQ, int64_t tileM) {
  Value first = e.mul(mBlock, tileM);
  Value rows = e.mul(seqlenQ, groupSize());
  Value last = e.sub(e.smin(e.add(first, tileM), rows), e.i32(1));
  return {unpackRow(first).first, unpackRow(last).first};
}

std::pair<Value, Value> TileOpContext::unpackRow(Value row) {
  Value g = groupSize();
  OpBuilder &b = e.builder();
  return {LLVM::UDivOp::create(b, e.location(), row, g),
          LLVM::URemOp::create(b, e.location(), row, g)};
}

Value ScoreTileCoords::col(int64_t j, int64_t r) {
  return e.add(colBase, 8 * j + FragmentLayout::accElementOffset(r).second);
}

void lowering::annotateKernelFunc(LLVM::LLVMFuncOp func, KernelOp kernel) {
  Builder b(func.getContext());
  SmallVector<NamedAttribute> tensorParams;
  std::vector<plan::Param> params = getKernelParams(kernel);
  for (int64_t i = 0, e = getNumTensorParams(kernel); i < e; ++i)
    tensorParams.push_back(
        b.getNamedAttr(params[i].name, b.getI64IntegerAttr(i)));
  func->setAttr(kTensorParamsAttrName, b.getDictionaryAttr(tensorParams));
  func->setAttr(kExtraParamsAttrName,
                b.getDenseI64ArrayAttr(getExtraArgParamIndices(kernel)));
  SmallVector<NamedAttribute> workspaces;
  for (auto &[name, index] : getWorkspaceParamIndices(kernel))
    workspaces.push_back(b.getNamedAttr(name, b.getI64IntegerAttr(index)));
  if (!workspaces.empty())
    func->setAttr(kWorkspaceParamsAttrName, b.getDictionaryAttr(workspaces));
  if (int64_t index = getKVSplitsParamIndex(kernel); index >= 0)
    func->setAttr(kKVSplitsParamAttrName, b.getI64IntegerAttr(index));
  if (int64_t index = getBatchParamIndex(kernel); index >= 0)
    func->setAttr(kBatchParamAttrName, b.getI64IntegerAttr(index));
  if (int64_t index = getPagedKVParamIndex(kernel); index >= 0) {
    int64_t table = kernel.getPageTableArg();
    func->setAttr(kPagedKVParamsAttrName,
                  b.getDenseI64ArrayAttr(
                      {index, getExtraArgParamIndices(kernel)[table]}));
  }
}

Value lowering::getQueryTiles(Emitter &e, Operation *op) {
  ConfigAttr config = getKernelConfig(op);
  return emitPlanExpr(e, op,
                      formula::queryTiles(config.getTileM(), /*packed=*/true));
}

bool lowering::hasKVSplitsParam(Operation *op) {
  return getFunc(op)->hasAttr(kKVSplitsParamAttrName);
}

Value lowering::getKVSplitsParam(Operation *op) {
  LLVM::LLVMFuncOp func = getFunc(op);
  auto index = func->getAttrOfType<IntegerAttr>(kKVSplitsParamAttrName);
  assert(index && "the kernel lowering marks the kv_splits parameter");
  return func.getArgument(index.getInt());
}

Value lowering::getSplitRowsParam(Operation *op) {
  LLVM::LLVMFuncOp func = getFunc(op);
  auto index = func->getAttrOfType<IntegerAttr>(kKVSplitsParamAttrName);
  assert(index && "the kernel lowering marks the kv_splits parameter");
  return func.getArgument(index.getInt() + 1);
}

Value lowering::getBatchParam(Operation *op) {
  LLVM::LLVMFuncOp func = getFunc(op);
  auto index = func->getAttrOfType<IntegerAttr>(kBatchParamAttrName);
  assert(index && "the kernel lowering marks the batch parameter of a "
                  "kernel whose hooks read it");
  return func.getArgument(index.getInt());
}

Value lowering::getWorkspaceParam(Operation *op, StringRef name) {
  auto func = isa<LLVM::LLVMFuncOp>(op) ? cast<LLVM::LLVMFuncOp>(op)
                                        : op->getParentOfType<LLVM::LLVMFuncOp>();
  assert(func && "kernel ops are lowered after their kernel");
  auto params = func->getAttrOfType<DictionaryAttr>(kWorkspaceParamsAttrName);
  auto index = params ? params.getAs<IntegerAttr>(name) : IntegerAttr();
  assert(index && "the kernel lowering lists every workspace");
  return func.getArgument(index.getInt());
}

Value lowering::getBlockRangesEntry(Emitter &e, LLVM::LLVMFuncOp func,
                                   BlockRangesOp op, Value batch, Value head,
                                   Value mBlock) {
  Value heads = emitPlanExpr(e, func, formula::heads(op.getPerHead()));
  Value mTiles =
      emitPlanExpr(e, func, formula::queryTiles(op.getTileM(), false));
  Value index = e.add(e.mul(e.add(e.mul(batch, heads), head), mTiles), mBlock);
  Value workspace = getWorkspaceParam(func, kBlockRangesWorkspace);
  return e.gep(workspace,
               e.mul64(e.sext64(index), e.i64(kBlockRangesFields * 4)));
}

Value lowering::getBlockTileEntry(Emitter &e, LLVM::LLVMFuncOp func,
                                 BlockRangesOp op, Value batch, Value head,
                                 Value mBlock, Value nBlock) {
  Value heads = emitPlanExpr(e, func, formula::heads(op.getPerHead()));
  Value mTiles =
      emitPlanExpr(e, func, formula::queryTiles(op.getTileM(), false));
  Value stride =
      emitPlanExpr(e, func,
                   formula::blockTilesRowBytes(
                       op.getTileN(), plan::Expr::named(abi::kKeySide.rows)));
  Value row = e.add(e.mul(e.add(e.mul(batch, heads), head), mTiles), mBlock);
  // 64-bit: the bytes of all rows may pass 2^31.
  Value index = e.add64(e.mul64(e.sext64(row), e.sext64(stride)),
                        e.sext64(nBlock));
  return e.gep(getWorkspaceParam(func, kBlockTilesWorkspace), index);
}

Value lowering::getDiagonalTableOrigin(Emitter &e, Operation *anchor,
                                       const DiagonalTable &table) {
  return emitPlanExpr(e, anchor, formula::diagonalTableOrigin(table.tileM));
}

Value lowering::getDiagonalTableRowLength(Emitter &e, Operation *anchor,
                                          const DiagonalTable &table) {
  return emitPlanExpr(
      e, anchor,
      formula::diagonalTableRow(table.tileM, table.tileN,
                                plan::Expr::named(abi::kKeySide.rows)));
}

Value lowering::getDiagonalTableEntry(Emitter &e, Operation *anchor,
                                      const DiagonalTable &table, Value batch,
                                      Value head, Value index) {
  Value row = getDiagonalTableRowLength(e, anchor, table);
  Value heads = emitPlanExpr(e, anchor, formula::heads(table.term.usesHead));
  Value b = table.term.usesBatch ? batch : e.i32(0);
  Value h = table.term.usesHead ? head : e.i32(0);
  // 64-bit: rows * row may pass 2^31 entries.
  Value rowIndex = e.add(e.mul(b, heads), h);
  Value entry = e.add64(e.mul64(e.sext64(rowIndex), e.sext64(row)),
                        e.sext64(index));
  return e.gep(getWorkspaceParam(anchor, kDiagonalTableWorkspace),
               e.mul64(entry, e.i64(4)));
}

Value lowering::getSmemBase(Emitter &e, Operation *anchor) {
  auto module = anchor->getParentOfType<ModuleOp>();
  OpBuilder &b = e.builder();
  if (!module.lookupSymbol(kSmemSymbol)) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(module.getBody());
    auto global = LLVM::GlobalOp::create(
        b, e.location(), LLVM::LLVMArrayType::get(b.getI8Type(), 0),
        /*isConstant=*/false, LLVM::Linkage::External, kSmemSymbol,
        Attribute(), /*alignment=*/128, /*addrSpace=*/3);
    (void)global;
  }
  return LLVM::AddressOfOp::create(b, e.location(),
                                   LLVM::LLVMPointerType::get(b.getContext(), 3),
                                   kSmemSymbol);
}

void TensorRows::readDescriptor(Value desc) {
  // A (batch, rows, heads, dim) tensor.
  MemRefDescriptor d(desc);
  OpBuilder &b = e.builder();
  Location loc = e.location();
  base = d.alignedPtr(b, loc);
  length = e.trunc32(d.size(b, loc, 1));
  strideBatch = d.stride(b, loc, 0);
  strideSeq = d.stride(b, loc, 1);
  strideHead = d.stride(b, loc, 2);
}

TensorRows::TensorRows(Emitter &e, Value desc, Value batch, Value head,
                       TileOpContext *packedBy)
    : e(e), packedBy(packedBy) {
  readDescriptor(desc);
  headOffset = e.add64(e.mul64(e.sext64(batch), strideBatch),
                       e.mul64(e.sext64(head), strideHead));
  if (packedBy)
    length = e.mul(length, packedBy->groupSize());
}

TensorRows::TensorRows(Emitter &e, Value desc, Value batch, Value head,
                       Operation *pagedIn)
    : e(e), packedBy(nullptr) {
  readDescriptor(desc);
  // The batch picks the block table's row, not the pool's page.
  headOffset = e.mul64(e.sext64(head), strideHead);
  LLVM::LLVMFuncOp func = getFunc(pagedIn);
  auto indices = func->getAttrOfType<DenseI64ArrayAttr>(kPagedKVParamsAttrName);
  assert(indices && "the kernel lowering marks paged KV's parameters");
  auto param = [&](int64_t index) { return func.getArgument(index); };
  int64_t sizes = indices[0], table = indices[1];
  pages.emplace();
  pages->pageSize = param(sizes);
  pages->lastPage = e.sub(param(sizes + 1), e.i32(1));
  pages->strideBatch = strideBatch;
  // The block table (batch, max_pages): its row of `batch`.
  pages->tableStride = param(getExtraTensorStrideParam(table, 2, 1));
  pages->lastSlot = e.sub(
      LLVM::TruncOp::create(e.builder(), e.location(),
                            e.builder().getI32Type(),
                            param(getExtraTensorSizeParam(table, 1))),
      e.i32(1));
  pages->tableRow = e.gep(
      param(table),
      e.mul64(e.mul64(e.sext64(batch),
                      param(getExtraTensorStrideParam(table, 2, 0))),
              e.i64(4)));
}

Value TensorRows::pagedRowOffset(Value row) {
  // Row r is row r mod page_size of the page the table lists at
  // r / page_size. A slot past the table's row is clamped into it, and a
  // stale entry (past the sequence's keys) into the pool (unsigned, so
  // negative entries too): it may be read, never fault.
  OpBuilder &b = e.builder();
  Location loc = e.location();
  row = e.smax(row, e.i32(0));
  Value slot = LLVM::UDivOp::create(b, loc, row, pages->pageSize);
  Value within = e.sub(row, e.mul(slot, pages->pageSize));
  slot = LLVM::UMinOp::create(b, loc, slot, pages->lastSlot);
  Value entryAddress = e.gep(
      pages->tableRow,
      e.mul64(e.mul64(e.sext64(slot), pages->tableStride), e.i64(4)));
  // No kernel writes the block table: an invariant load (ld.global.nc,
  // the read-only cache path).
  Value page = LLVM::LoadOp::create(b, loc, b.getI32Type(), entryAddress,
                                    /*alignment=*/4, /*isVolatile=*/false,
                                    /*isNonTemporal=*/false,
                                    /*isInvariant=*/true);
  page = LLVM::UMinOp::create(b, loc, page, pages->lastPage);
  return e.add64(e.add64(e.mul64(e.sext64(page), pages->strideBatch),
                         e.mul64(e.sext64(within), strideSeq)),
                 headOffset);
}

Value TensorRows::chunkAddressAt(Value rowOffset, Value chunk) {
  Value element = e.add64(rowOffset, e.sext64(e.mul(chunk, 8)));
  return e.gep(base, e.mul64(element, e.i64(2)));
}

Value TensorRows::chunkAddress(Value row, Value chunk) {
  if (pages)
    return chunkAddressAt(pagedRowOffset(row), chunk);
  Value chunkOffset = e.sext64(e.mul(chunk, 8));
  Value rowOffset;
  if (packedBy) {
    auto [position, head] = packedBy->unpackRow(row);
    rowOffset = e.add64(e.mul64(e.sext64(position), strideSeq),
                        e.mul64(e.sext64(head), strideHead));
  } else {
    rowOffset = e.mul64(e.sext64(row), strideSeq);
  }
  Value element = e.add64(e.add64(headOffset, rowOffset), chunkOffset);
  return e.gep(base, e.mul64(element, e.i64(2)));
}

Value lowering::getSlotAddress(Emitter &e, Value buffer, MemRefType type,
                               Value tile) {
  int64_t slots = type.getDimSize(0);
  if (slots == 1)
    return buffer;
  Value slot;
  if (llvm::isPowerOf2_64(slots)) {
    slot = e.bitAnd(tile, slots - 1);
  } else {
    Value rem = LLVM::SRemOp::create(e.builder(), e.location(), tile,
                                     e.i32(slots));
    slot = e.urem(e.add(rem, slots), slots);
  }
  int64_t slotBytes =
      type.getDimSize(1) * type.getDimSize(2) * type.getElementTypeBitWidth() / 8;
  return e.gep(buffer, e.mul(slot, slotBytes));
}

/// Chunks per swizzle group for rows of `cols` 16-bit elements.
static int64_t swizzleGroup(int64_t cols) {
  return (cols / 8) % 8 == 0 ? 8 : 4;
}

/// The XOR key of `row`: row % 8 for groups of 8 chunks; (row / 2) % 4 for
/// groups of 4, whose rows of 12 chunks (d = 96) already start at bank group
/// 4 * row, so that rows 2r and 2r + 1 differ.
static Value swizzleKey(Emitter &e, Value row, int64_t group) {
  return group == 8 ? e.bitAnd(row, 7) : e.bitAnd(e.lshr(row, 1), 3);
}

Value lowering::swizzledOffset(Emitter &e, Value row, Value chunk,
                               int64_t cols) {
  Value physical = e.bitXor(chunk, swizzleKey(e, row, swizzleGroup(cols)));
  return e.add(e.mul(row, cols * 2), e.shl(physical, 4));
}

SwizzledTileAccess::SwizzledTileAccess(Emitter &e, Value tileBase,
                                       Value laneRow, Value laneChunk,
                                       int64_t cols)
    : e(e), laneChunk(laneChunk), cols(cols), group(swizzleGroup(cols)) {
  rowBase = e.gep(tileBase, e.mul(laneRow, cols * 2));
  key = swizzleKey(e, laneRow, group);
  bases.resize(group);
}

Value SwizzledTileAccess::address(int64_t rowOffset, int64_t chunkOffset) {
  assert(rowOffset % 8 == 0 && "row offsets keep the swizzle key");
  int64_t inGroup = chunkOffset % group;
  Value &base = bases[inGroup];
  if (!base) {
    Value chunk = e.bitXor(e.add(laneChunk, inGroup), key);
    base = e.gep(rowBase, e.shl(chunk, 4));
  }
  int64_t immediate = rowOffset * cols * 2 + (chunkOffset - inGroup) * 16;
  return immediate ? e.gep(base, e.i32(immediate)) : base;
}

TileChunkWalk::TileChunkWalk(Emitter &e, Value tid, int64_t threads,
                             int64_t rows, int64_t cols)
    : e(e), tid(tid), threads(threads), rows(rows), cols(cols),
      chunksPerRow(cols / 8), chunks(rows * (cols / 8)) {
  if (threads % chunksPerRow == 0 &&
      ((threads / chunksPerRow) % 8 == 0 || numSteps() == 1)) {
    rowsPerStep = threads / chunksPerRow;
    firstRow = e.udiv(tid, chunksPerRow);
    firstChunk = e.urem(tid, chunksPerRow);
    firstOffset = swizzledOffset(e, firstRow, firstChunk, cols);
  }
}

Value TileChunkWalk::chunkId(int64_t step) {
  return e.add(tid, step * threads);
}
Value TileChunkWalk::isActive(int64_t step) {
  return e.cmp(LLVM::ICmpPredicate::ult, chunkId(step), e.i32(chunks));
}
Value TileChunkWalk::row(int64_t step) {
  if (rowsPerStep)
    return step ? e.add(firstRow, step * rowsPerStep) : firstRow;
  return e.udiv(chunkId(step), chunksPerRow);
}
Value TileChunkWalk::chunk(int64_t step) {
  if (rowsPerStep)
    return firstChunk;
  return e.urem(chunkId(step), chunksPerRow);
}
Value TileChunkWalk::smemOffset(int64_t step) {
  if (rowsPerStep)
    return step ? e.add(firstOffset, step * rowsPerStep * cols * 2)
                : firstOffset;
  return swizzledOffset(e, row(step), chunk(step), cols);
}

SmallVector<Value>
lowering::emitForLoop(RewriterBase &rewriter, Location loc, Value lower,
                      Value upper, int64_t step, ValueRange inits,
                      function_ref<SmallVector<Value>(Value, ValueRange)> body) {
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
  rewriter.setInsertionPointToEnd(before);
  SmallVector<Value> entry = {lower};
  llvm::append_range(entry, inits);
  LLVM::BrOp::create(rewriter, loc, entry, header);
  rewriter.setInsertionPointToEnd(header);
  LLVM::CondBrOp::create(rewriter, loc, e.slt(header->getArgument(0), upper),
                         bodyBlock, header->getArguments(), exit,
                         header->getArguments().drop_front());
  rewriter.setInsertionPointToEnd(bodyBlock);
  SmallVector<Value> next = {e.add(bodyBlock->getArgument(0), step)};
  llvm::append_range(next, body(bodyBlock->getArgument(0),
                                bodyBlock->getArguments().drop_front()));
  LLVM::BrOp::create(rewriter, loc, next, header);
  rewriter.setInsertionPointToStart(exit);
  return results;
}

LLVM::LLVMFuncOp lowering::createKernelFunc(OpBuilder &b, KernelOp kernel,
                                            StringRef suffix, int64_t threads,
                                            Location loc) {
  auto func = LLVM::LLVMFuncOp::create(
      b, loc, (kernel.getSymName() + suffix).str(),
      getKernelFuncType(kernel.getContext(), getKernelParams(kernel)));
  func->setAttr(NVVM::NVVMDialect::getKernelFuncAttrName(), b.getUnitAttr());
  func->setAttr(NVVM::NVVMDialect::getMaxntidAttrName(),
                b.getDenseI32ArrayAttr({int32_t(threads), 1, 1}));
  annotateKernelFunc(func, kernel);
  b.setInsertionPointToStart(func.addEntryBlock(b));
  return func;
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

SmallVector<Value> lowering::packAccumulatorAsA(Emitter &e, ArrayRef<Value> acc,
                                                int64_t mTiles, int64_t nTiles,
                                                Type dtype) {
  int64_t kTiles = nTiles / 2;
  SmallVector<Value> a(mTiles * kTiles * 4);
  for (int64_t i = 0; i < mTiles; ++i)
    for (int64_t k = 0; k < kTiles; ++k)
      for (int64_t r = 0; r < 4; ++r) {
        Value halves[2];
        for (int64_t half = 0; half < 2; ++half) {
          auto [tile, element] = FragmentLayout::accSourceOfA(r, half);
          halves[half] = acc[FragmentLayout::accIndex(i, 2 * k + tile, element,
                                                      nTiles)];
        }
        a[FragmentLayout::aIndex(i, k, r, kTiles)] =
            e.packPair(halves[0], halves[1], dtype);
      }
  return a;
}
