//===- BlockMaskKernel.cpp - The run-time block mask's kernels ------------===//
//
// The `<name>_kv_tiles` and `<name>_kv_ranges` kernels of a kernel with
// attn.block_ranges (KernelABI.h): same parameters, written directly as
// llvm.funcs. The mask is evaluated once per score position of every
// (query tile, KV tile) pair the window allows, which is as much work as a
// score_mod; one block per pair spreads it over the whole GPU. A second,
// small kernel then scans each query tile's bytes.
//
//===----------------------------------------------------------------------===//

#include "HookEmitter.h"
#include "Patterns.h"

#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace flashtile;
using namespace flashtile::attn;
using namespace flashtile::attn::lowering;

namespace {

KVTiling getTiling(KernelOp kernel, BlockRangesOp ranges) {
  ProblemAttr problem = kernel.getProblemInfo();
  return KVTiling{int64_t(ranges.getTileM()), int64_t(ranges.getTileN()),
                  problem.getWindowLeft(), problem.getWindowRight()};
}

/// The block-mask classification kernel: one block per (query tile, KV
/// tile) pair, x = mBlock * KV tiles + nBlock. A pair outside the window's
/// tile range returns at once (nothing reads its byte). Otherwise every
/// thread evaluates the mask_mod on its share of the tile's positions (one
/// key, every kBlockTilesThreads / tile_n-th row; each clamped to the last
/// row and key), and two barrier reductions tell
/// whether any position keeps a visible key and whether every visible
/// position of a valid row is kept; thread 0 writes the byte.
void buildTilesKernel(KernelOp kernel, BlockRangesOp ranges) {
  Location loc = ranges.getLoc();
  OpBuilder b(kernel);
  auto func = createKernelFunc(b, kernel, kBlockTilesKernelSuffix,
                               kBlockTilesThreads, loc);
  Emitter e(b, loc);
  Type i1 = b.getI1Type(), i8 = b.getI8Type(), i32 = b.getI32Type();
  Value tid = NVVM::ThreadIdXOp::create(b, loc, i32);
  Value pair = NVVM::BlockIdXOp::create(b, loc, i32);
  Value head = ranges.getPerHead()
                   ? Value(NVVM::BlockIdYOp::create(b, loc, i32))
                   : e.i32(0);
  Value batch = NVVM::BlockIdZOp::create(b, loc, i32);
  Value seqlenQ = getKernelParam(func, abi::kQuerySide.rows);
  Value seqlenK = getKernelParam(func, abi::kKeySide.rows);
  int64_t tileM = ranges.getTileM(), tileN = ranges.getTileN();
  KVTiling tiling = getTiling(kernel, ranges);
  Value nTiles = emitPlanExpr(
      e, func, formula::keyTiles(tileN, plan::Expr::named(abi::kKeySide.rows)));
  Value mBlock = LLVM::UDivOp::create(b, loc, pair, nTiles);
  Value nBlock = e.sub(pair, e.mul(mBlock, nTiles));
  KVTileRange<Value> window =
      computeKVTileRange(e, mBlock, seqlenQ, seqlenK, tiling);
  Value inWindow = LLVM::AndOp::create(b, loc, e.sge(nBlock, window.begin),
                                       e.slt(nBlock, window.end));
  Block *entry = b.getInsertionBlock();
  Block *body = b.createBlock(&func.getBody(), func.getBody().end());
  Block *exit = b.createBlock(&func.getBody(), func.getBody().end());
  b.setInsertionPointToEnd(entry);
  LLVM::CondBrOp::create(b, loc, inWindow, body, exit);

  b.setInsertionPointToEnd(body);
  Value firstRow = e.mul(mBlock, tileM);
  Value firstKey = e.mul(nBlock, tileN);
  Value lastRow = e.sub(seqlenQ, e.i32(1));
  Value lastKey = e.sub(seqlenK, e.i32(1));
  Value offset = e.sub(seqlenK, seqlenQ);
  Value yes = LLVM::ConstantOp::create(b, loc, i1, 1);
  HookEmitter hooks(e, tid.getDefiningOp());
  Value anyKept = LLVM::ConstantOp::create(b, loc, i1, 0);
  Value allKept = yes;
  // Each thread keeps one key of the tile and steps over rows, so that
  // what the mask computes from the key is computed once.
  assert(kBlockTilesThreads % tileN == 0 && tileM * tileN % kBlockTilesThreads == 0 &&
         "configs' tiles divide the block");
  int64_t rowsPerStep = kBlockTilesThreads / tileN;
  int64_t steps = tileM / rowsPerStep;
  Value k = e.add(firstKey, e.urem(tid, tileN));
  Value key = e.smin(k, lastKey);
  Value row0 = e.add(firstRow, e.udiv(tid, tileN));
  for (int64_t step = 0; step < steps; ++step) {
    Value q = e.add(row0, step * rowsPerStep);
    Value rowValid = e.slt(q, seqlenQ);
    KeyWindow<Value> keys = computeKeyWindow(
        e, e.add(q, offset), seqlenK, tiling.windowLeft, tiling.windowRight);
    Value visible = LLVM::XOrOp::create(b, loc, isKeyMasked(e, keys, k), yes);
    Value keep = hooks.emit(ranges.getMaskMod(),
                            {batch, head, e.smin(q, lastRow), key});
    keep = LLVM::AndOp::create(
        b, loc, LLVM::AndOp::create(b, loc, keep, visible), rowValid);
    anyKept = LLVM::OrOp::create(b, loc, anyKept, keep);
    Value rowInvalid = LLVM::XOrOp::create(b, loc, rowValid, yes);
    allKept = LLVM::AndOp::create(b, loc, allKept,
                                  LLVM::OrOp::create(b, loc, keep, rowInvalid));
  }
  auto reduce = [&](StringRef name, Value pred) -> Value {
    return LLVM::CallIntrinsicOp::create(b, loc, i1, b.getStringAttr(name),
                                         ValueRange{e.i32(0), pred})
        .getResult(0);
  };
  Value anyTile = reduce("llvm.nvvm.barrier.cta.red.or.aligned.all", anyKept);
  Value allTile = reduce("llvm.nvvm.barrier.cta.red.and.aligned.all", allKept);
  Value byte = LLVM::OrOp::create(
      b, loc,
      e.select(anyTile, LLVM::ConstantOp::create(b, loc, i8, kBlockTileAnyKept),
               LLVM::ConstantOp::create(b, loc, i8, 0)),
      e.select(allTile, LLVM::ConstantOp::create(b, loc, i8, kBlockTileAllKept),
               LLVM::ConstantOp::create(b, loc, i8, 0)));
  Value address =
      getBlockTileEntry(e, func, ranges, batch, head, mBlock, nBlock);
  IRRewriter rewriter(b);
  emitIf(rewriter, loc, e.cmp(LLVM::ICmpPredicate::eq, tid, e.i32(0)), [&] {
    LLVM::StoreOp::create(rewriter, loc, byte, address, /*alignment=*/1);
  });
  LLVM::BrOp::create(rewriter, loc, ValueRange(), exit);
  rewriter.setInsertionPointToEnd(exit);
  LLVM::ReturnOp::create(rewriter, loc, ValueRange());
}

/// The block-mask range kernel: one thread per query tile scans the bytes
/// of the KV tiles in its window's range, in order, kBlockTilesRowAlign at a
/// time (byte loads of written bytes only), tracking the first and last tiles with a
/// kept key and the longest run of whole tiles, and writes (begin, whole
/// begin, whole end, end). Bytes of a chunk outside the range count as
/// neither. No kept key gives an empty range at the window's begin.
void buildRangesKernel(KernelOp kernel, BlockRangesOp ranges) {
  Location loc = ranges.getLoc();
  OpBuilder b(kernel);
  auto func = createKernelFunc(b, kernel, kBlockRangesKernelSuffix,
                               kBlockRangesThreads, loc);
  Emitter e(b, loc);
  Type i32 = b.getI32Type();
  Value tid = NVVM::ThreadIdXOp::create(b, loc, i32);
  Value mBlock = e.add(
      e.mul(NVVM::BlockIdXOp::create(b, loc, i32), kBlockRangesThreads), tid);
  Value head = ranges.getPerHead()
                   ? Value(NVVM::BlockIdYOp::create(b, loc, i32))
                   : e.i32(0);
  Value batch = NVVM::BlockIdZOp::create(b, loc, i32);
  Value seqlenQ = getKernelParam(func, abi::kQuerySide.rows);
  Value seqlenK = getKernelParam(func, abi::kKeySide.rows);
  Value mTiles =
      emitPlanExpr(e, func, formula::queryTiles(ranges.getTileM(), false));
  Block *entry = b.getInsertionBlock();
  Block *start = b.createBlock(&func.getBody(), func.getBody().end());
  // header(chunk, firstAny, lastAny, runStart, bestBegin, bestEnd)
  SmallVector<Type> stateTypes(6, i32);
  SmallVector<Location> locs(6, loc);
  Block *header = b.createBlock(&func.getBody(), func.getBody().end(),
                                stateTypes, locs);
  Block *body = b.createBlock(&func.getBody(), func.getBody().end());
  Block *done = b.createBlock(&func.getBody(), func.getBody().end());
  Block *exit = b.createBlock(&func.getBody(), func.getBody().end());
  b.setInsertionPointToEnd(entry);
  LLVM::CondBrOp::create(b, loc, e.slt(mBlock, mTiles), start, exit);

  b.setInsertionPointToEnd(start);
  KVTileRange<Value> window = computeKVTileRange(
      e, mBlock, seqlenQ, seqlenK, getTiling(kernel, ranges));
  Value none = e.i32(-1);
  Value rowStart =
      getBlockTileEntry(e, func, ranges, batch, head, mBlock, e.i32(0));
  LLVM::BrOp::create(b, loc,
                     ValueRange{e.udiv(window.begin, kBlockTilesRowAlign),
                                none, none, none, e.i32(0), e.i32(0)},
                     header);

  b.setInsertionPointToEnd(header);
  Value chunk = header->getArgument(0);
  Value first = e.mul(chunk, kBlockTilesRowAlign);
  LLVM::CondBrOp::create(b, loc, e.slt(first, window.end), body, done);

  b.setInsertionPointToEnd(body);
  Type i8 = b.getI8Type();
  Value lastInWindow = e.sub(window.end, e.i32(1));
  Value firstAny = header->getArgument(1), lastAny = header->getArgument(2);
  Value runStart = header->getArgument(3);
  Value bestBegin = header->getArgument(4), bestEnd = header->getArgument(5);
  for (int64_t i = 0; i < kBlockTilesRowAlign; ++i) {
    Value n = e.add(first, i);
    // Only bytes the tiles kernel wrote are read: a byte of the chunk
    // outside the window reads the nearest one inside, and counts as
    // neither below.
    Value at = e.smax(e.smin(n, lastInWindow), window.begin);
    Value byte = LLVM::ZExtOp::create(
        b, loc, i32,
        LLVM::LoadOp::create(b, loc, i8, e.gep(rowStart, e.sext64(at)),
                             /*alignment=*/1));
    Value inRange = LLVM::AndOp::create(b, loc, e.sge(n, window.begin),
                                        e.slt(n, window.end));
    auto bit = [&](int64_t mask) -> Value {
      Value set = e.cmp(LLVM::ICmpPredicate::ne,
                        LLVM::AndOp::create(b, loc, byte, e.i32(mask)),
                        e.i32(0));
      return LLVM::AndOp::create(b, loc, set, inRange);
    };
    Value anyTile = bit(kBlockTileAnyKept), allTile = bit(kBlockTileAllKept);
    Value noneYet = e.cmp(LLVM::ICmpPredicate::eq, firstAny, none);
    firstAny = e.select(LLVM::AndOp::create(b, loc, anyTile, noneYet), n,
                        firstAny);
    lastAny = e.select(anyTile, n, lastAny);
    Value noRun = e.cmp(LLVM::ICmpPredicate::eq, runStart, none);
    Value runFrom = e.select(noRun, n, runStart);
    runStart = e.select(allTile, runFrom, none);
    Value longer = LLVM::AndOp::create(
        b, loc, allTile,
        e.cmp(LLVM::ICmpPredicate::sgt, e.sub(e.add(n, 1), runFrom),
              e.sub(bestEnd, bestBegin)));
    bestBegin = e.select(longer, runFrom, bestBegin);
    bestEnd = e.select(longer, e.add(n, 1), bestEnd);
  }
  LLVM::BrOp::create(b, loc,
                     ValueRange{e.add(chunk, 1), firstAny, lastAny, runStart,
                                bestBegin, bestEnd},
                     header);

  b.setInsertionPointToEnd(done);
  Value found = e.cmp(LLVM::ICmpPredicate::ne, header->getArgument(1), none);
  Value begin = e.select(found, header->getArgument(1), window.begin);
  Value end = e.select(found, e.add(header->getArgument(2), 1), window.begin);
  Value wholeBegin = e.smax(begin, e.smin(header->getArgument(4), end));
  Value wholeEnd = e.smax(wholeBegin, e.smin(header->getArgument(5), end));
  Value rangeEntry = getBlockRangesEntry(e, func, ranges, batch, head, mBlock);
  Value out[] = {begin, wholeBegin, wholeEnd, end};
  for (int64_t f = 0; f < kBlockRangesFields; ++f)
    LLVM::StoreOp::create(b, loc, out[f], e.gep(rangeEntry, e.i32(4 * f)),
                          /*alignment=*/4);
  LLVM::BrOp::create(b, loc, ValueRange(), exit);
  b.setInsertionPointToEnd(exit);
  LLVM::ReturnOp::create(b, loc, ValueRange());
}

} // namespace

LogicalResult lowering::buildBlockMaskKernels(KernelOp kernel) {
  BlockRangesOp ranges = getBlockRanges(kernel);
  buildTilesKernel(kernel, ranges);
  buildRangesKernel(kernel, ranges);
  return success();
}
