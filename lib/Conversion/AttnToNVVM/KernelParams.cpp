//===- KernelParams.cpp - A lowered kernel's parameters -------------------===//

#include "KernelParams.h"

#include "mlir/IR/BuiltinOps.h"

using namespace mlir;
using namespace flashtile;
using namespace flashtile::attn;
using namespace flashtile::attn::lowering;

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

LLVM::LLVMFuncOp lowering::getKernelFunc(Operation *op) {
  auto func = isa<LLVM::LLVMFuncOp>(op)
                  ? cast<LLVM::LLVMFuncOp>(op)
                  : op->getParentOfType<LLVM::LLVMFuncOp>();
  assert(func && "kernel ops are lowered after their kernel");
  return func;
}

Value lowering::getKernelParam(Operation *op, int64_t index) {
  return getKernelFunc(op).getArgument(index);
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
  LLVM::LLVMFuncOp func = getKernelFunc(op);
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
  func->setAttr(kBatchParamAttrName,
                b.getI64IntegerAttr(getBatchParamIndex(kernel)));
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
  return getKernelFunc(op)->hasAttr(kKVSplitsParamAttrName);
}

Value lowering::getKVSplitsParam(Operation *op) {
  LLVM::LLVMFuncOp func = getKernelFunc(op);
  auto index = func->getAttrOfType<IntegerAttr>(kKVSplitsParamAttrName);
  assert(index && "the kernel lowering marks the kv_splits parameter");
  return func.getArgument(index.getInt());
}

Value lowering::getSplitRowsParam(Operation *op) {
  LLVM::LLVMFuncOp func = getKernelFunc(op);
  auto index = func->getAttrOfType<IntegerAttr>(kKVSplitsParamAttrName);
  assert(index && "the kernel lowering marks the kv_splits parameter");
  return func.getArgument(index.getInt() + 1);
}

Value lowering::getBatchParam(Operation *op) {
  LLVM::LLVMFuncOp func = getKernelFunc(op);
  auto index = func->getAttrOfType<IntegerAttr>(kBatchParamAttrName);
  assert(index && "the kernel lowering marks the batch parameter");
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
  formula::BlockRangesAxes axes = formula::blockRangesAxes(
      op.getKeyGrid(), op.getPerHead(), op.getTileM(), op.getTileN(),
      plan::Expr::named(abi::kKeySide.rows));
  Value heads = emitPlanExpr(e, func, axes.heads);
  Value mTiles = emitPlanExpr(e, func, axes.tiles);
  Value index = e.add(e.mul(e.add(e.mul(batch, heads), head), mTiles), mBlock);
  Value workspace =
      getWorkspaceParam(func, getBlockMaskNames(op).rangesWorkspace);
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
  return e.gep(getWorkspaceParam(func, getBlockMaskNames(op).tilesWorkspace),
               index);
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
