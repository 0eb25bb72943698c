//===- BlockMaskKernel.cpp - The run-time block mask's kernel -------------===//
//
// The `<name>_kv_ranges` kernel of a kernel with attn.block_ranges
// (KernelABI.h): same parameters, written directly as an llvm.func.
//
//===----------------------------------------------------------------------===//

#include "HookEmitter.h"

#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace flashtile;
using namespace flashtile::attn;
using namespace flashtile::attn::lowering;

/// The block-mask kernel: one block of kBlockRangesThreads threads per
/// (query tile, head or 0, batch). For each KV tile the window allows, in
/// order, every thread evaluates the mask_mod on its share of the tile's
/// elements (positions clamped to the last row and key), and two barrier
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
  auto func = LLVM::LLVMFuncOp::create(
      b, loc, (kernel.getSymName() + kBlockRangesKernelSuffix).str(),
      getKernelFuncType(ctx, abi));
  func->setAttr(NVVM::NVVMDialect::getKernelFuncAttrName(), b.getUnitAttr());
  func->setAttr(NVVM::NVVMDialect::getMaxntidAttrName(),
                b.getDenseI32ArrayAttr({int32_t(kBlockRangesThreads), 1, 1}));
  func->setAttr(kExtraParamsAttrName,
                b.getDenseI64ArrayAttr(getExtraArgParamIndices(kernel)));

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
  Value rangeEntry = getBlockRangesEntry(e, func, ranges, batch, head, mBlock);
  Value out[] = {begin, wholeBegin, wholeEnd, end};
  Value addresses[kBlockRangesFields];
  for (int64_t f = 0; f < kBlockRangesFields; ++f)
    addresses[f] = e.gep(rangeEntry, e.i32(4 * f));
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
