//===- BlockMaskKernel.cpp - The run-time block mask's kernels ------------===//
//
// The `<name>_kv_tiles` and `<name>_kv_ranges` kernels of a kernel with
// attn.block_ranges, or with key_grid `<name>_q_tiles` and `<name>_q_ranges`
// (KernelABI.h): same parameters, written directly as llvm.funcs. The mask
// is evaluated once per score position of every (query tile, KV tile) pair
// the window allows, which is as much work as a score_mod; one block per
// pair spreads it over the whole GPU. A second, small kernel then scans
// each query tile's bytes (with key_grid, each KV tile's, over the group's
// query heads).
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
  auto func = createKernelFunc(b, kernel, getBlockMaskNames(ranges).tilesSuffix,
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
  // Position (row q, key k) of the tile: kept if the row is valid, the key
  // visible to it and the mask keeps it; a position of no valid row does
  // not count against the whole tile.
  // `key` is k clamped to the last key (what the mask reads).
  auto classify = [&](Value q, Value k, Value key, Value rowValid) {
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
  };
  if (kBlockTilesThreads % tileN == 0 &&
      tileM * tileN % kBlockTilesThreads == 0) {
    // Each thread keeps one key of the tile and steps over rows, so that
    // what the mask computes from the key is computed once.
    int64_t rowsPerStep = kBlockTilesThreads / tileN;
    Value k = e.add(firstKey, e.urem(tid, tileN));
    Value key = e.smin(k, lastKey);
    Value row0 = e.add(firstRow, e.udiv(tid, tileN));
    for (int64_t step = 0; step < tileM / rowsPerStep; ++step) {
      Value q = e.add(row0, step * rowsPerStep);
      classify(q, k, key, e.slt(q, seqlenQ));
    }
  } else {
    // Tiles the block does not divide: position p = tid + 256 s of the
    // tile, row-major, each step; positions past the tile count as no row.
    int64_t positions = tileM * tileN;
    for (int64_t step = 0; step * kBlockTilesThreads < positions; ++step) {
      Value p = e.add(tid, step * kBlockTilesThreads);
      Value q = e.add(firstRow, e.udiv(p, tileN));
      Value k = e.add(firstKey, e.urem(p, tileN));
      Value inTile = e.slt(p, e.i32(positions));
      classify(q, k, e.smin(k, lastKey),
               LLVM::AndOp::create(b, loc, inTile, e.slt(q, seqlenQ)));
    }
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

/// What both range kernels start from: the kernel function, one thread
/// per tile of the grid's x axis (`tile`, of query tiles or KV tiles), the
/// head of the y axis (0 unless the mask is per head) and the batch.
struct RangesKernel {
  LLVM::LLVMFuncOp func;
  Value tile, head, batch, seqlenQ, seqlenK;
};
RangesKernel startRangesKernel(OpBuilder &b, Emitter &e, KernelOp kernel,
                               BlockRangesOp ranges, Location loc) {
  RangesKernel k;
  k.func = createKernelFunc(b, kernel, getBlockMaskNames(ranges).rangesSuffix,
                            kBlockRangesThreads, loc);
  Type i32 = b.getI32Type();
  Value tid = NVVM::ThreadIdXOp::create(b, loc, i32);
  k.tile = e.add(
      e.mul(NVVM::BlockIdXOp::create(b, loc, i32), kBlockRangesThreads), tid);
  k.head = ranges.getPerHead() ? Value(NVVM::BlockIdYOp::create(b, loc, i32))
                               : e.i32(0);
  k.batch = NVVM::BlockIdZOp::create(b, loc, i32);
  k.seqlenQ = getKernelParam(k.func, abi::kQuerySide.rows);
  k.seqlenK = getKernelParam(k.func, abi::kKeySide.rows);
  return k;
}

/// The blocks of a range kernel's scan, appended to `func`: `start`
/// (entered from the current block when `inGrid`, else `exit`), `header`
/// (the scan state as its arguments), `body`, `done` and `exit`. Leaves
/// the builder at the end of `start`.
struct ScanBlocks {
  Block *start, *header, *body, *done, *exit;
};
ScanBlocks createScanBlocks(OpBuilder &b, LLVM::LLVMFuncOp func,
                            TypeRange state, Value inGrid, Location loc) {
  Block *entry = b.getInsertionBlock();
  Region &body = func.getBody();
  ScanBlocks s;
  s.start = b.createBlock(&body, body.end());
  SmallVector<Location> locs(state.size(), loc);
  s.header = b.createBlock(&body, body.end(), state, locs);
  s.body = b.createBlock(&body, body.end());
  s.done = b.createBlock(&body, body.end());
  s.exit = b.createBlock(&body, body.end());
  b.setInsertionPointToEnd(entry);
  LLVM::CondBrOp::create(b, loc, inGrid, s.start, s.exit);
  b.setInsertionPointToEnd(s.start);
  return s;
}

/// A range kernel's scan state (-1: none yet): the first and last kept
/// tiles, where the current run of whole tiles started, and the longest
/// run [bestBegin, bestEnd).
struct RunState {
  Value firstAny, lastAny, runStart, bestBegin, bestEnd;
};
/// The state after tile `n` with its verdict (kept: anyTile, whole:
/// allTile); with `commit`, only where it holds (the key grid takes a
/// tile's verdict at the group's last head).
RunState advanceRun(OpBuilder &b, Emitter &e, Location loc, RunState s,
                    Value n, Value anyTile, Value allTile,
                    Value commit = Value()) {
  Value none = e.i32(-1);
  if (commit) {
    anyTile = LLVM::AndOp::create(b, loc, anyTile, commit);
    allTile = LLVM::AndOp::create(b, loc, allTile, commit);
  }
  Value noneYet = e.cmp(LLVM::ICmpPredicate::eq, s.firstAny, none);
  RunState next;
  next.firstAny = e.select(LLVM::AndOp::create(b, loc, anyTile, noneYet), n,
                           s.firstAny);
  next.lastAny = e.select(anyTile, n, s.lastAny);
  Value noRun = e.cmp(LLVM::ICmpPredicate::eq, s.runStart, none);
  Value runFrom = e.select(noRun, n, s.runStart);
  next.runStart = e.select(allTile, runFrom, none);
  if (commit)
    next.runStart = e.select(commit, next.runStart, s.runStart);
  Value longer = LLVM::AndOp::create(
      b, loc, allTile,
      e.cmp(LLVM::ICmpPredicate::sgt, e.sub(e.add(n, 1), runFrom),
            e.sub(s.bestEnd, s.bestBegin)));
  next.bestBegin = e.select(longer, runFrom, s.bestBegin);
  next.bestEnd = e.select(longer, e.add(n, 1), s.bestEnd);
  return next;
}

/// Writes the entry of `tile` from the final scan state: [begin, end)
/// from the first and last kept tiles (empty at `empty` when none), the
/// whole run clamped into it.
void writeRange(OpBuilder &b, Emitter &e, Location loc,
                const RangesKernel &k, BlockRangesOp ranges,
                const RunState &s, Value empty) {
  Value none = e.i32(-1);
  Value found = e.cmp(LLVM::ICmpPredicate::ne, s.firstAny, none);
  Value begin = e.select(found, s.firstAny, empty);
  Value end = e.select(found, e.add(s.lastAny, 1), empty);
  Value wholeBegin = e.smax(begin, e.smin(s.bestBegin, end));
  Value wholeEnd = e.smax(wholeBegin, e.smin(s.bestEnd, end));
  Value rangeEntry =
      getBlockRangesEntry(e, k.func, ranges, k.batch, k.head, k.tile);
  Value out[] = {begin, wholeBegin, wholeEnd, end};
  for (int64_t f = 0; f < kBlockRangesFields; ++f)
    LLVM::StoreOp::create(b, loc, out[f], e.gep(rangeEntry, e.i32(4 * f)),
                          /*alignment=*/4);
}

/// The scan state held by `header`'s arguments from `first` on.
RunState runStateOf(Block *header, unsigned first) {
  return {header->getArgument(first), header->getArgument(first + 1),
          header->getArgument(first + 2), header->getArgument(first + 3),
          header->getArgument(first + 4)};
}

/// The end of a range kernel: `done` writes the entry from the final scan
/// state (header arguments from `first` on; `empty` where nothing is
/// kept) and goes to `exit`, which returns.
void finishRangesKernel(OpBuilder &b, Emitter &e, Location loc,
                        const RangesKernel &k, BlockRangesOp ranges,
                        const ScanBlocks &blocks, unsigned first,
                        Value empty) {
  b.setInsertionPointToEnd(blocks.done);
  writeRange(b, e, loc, k, ranges, runStateOf(blocks.header, first), empty);
  LLVM::BrOp::create(b, loc, ValueRange(), blocks.exit);
  b.setInsertionPointToEnd(blocks.exit);
  LLVM::ReturnOp::create(b, loc, ValueRange());
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
  Emitter e(b, loc);
  RangesKernel k = startRangesKernel(b, e, kernel, ranges, loc);
  Type i32 = b.getI32Type();
  Value mBlock = k.tile;
  Value mTiles =
      emitPlanExpr(e, k.func, formula::queryTiles(ranges.getTileM(), false));
  LLVM::LLVMFuncOp func = k.func;
  // header(chunk, firstAny, lastAny, runStart, bestBegin, bestEnd)
  SmallVector<Type> stateTypes(6, i32);
  ScanBlocks blocks =
      createScanBlocks(b, func, stateTypes, e.slt(mBlock, mTiles), loc);
  Block *header = blocks.header, *body = blocks.body, *done = blocks.done;
  KVTileRange<Value> window = computeKVTileRange(
      e, mBlock, k.seqlenQ, k.seqlenK, getTiling(kernel, ranges));
  Value none = e.i32(-1);
  Value rowStart =
      getBlockTileEntry(e, func, ranges, k.batch, k.head, mBlock, e.i32(0));
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
  RunState state = runStateOf(header, 1);
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
    state = advanceRun(b, e, loc, state, n, anyTile, allTile);
  }
  LLVM::BrOp::create(b, loc,
                     ValueRange{e.add(chunk, 1), state.firstAny, state.lastAny,
                                state.runStart, state.bestBegin, state.bestEnd},
                     header);

  finishRangesKernel(b, e, loc, k, ranges, blocks, 1, window.begin);
}

/// The key-grid range kernel: one thread per KV tile n of (batch, KV head
/// or 0) steps through the query tiles [lo, hi) the window lets the tile
/// see (computeQueryTilesOfKeys) and, for each, the bytes of every query
/// head of the KV head's group (the one row 0 when the mask is not per
/// head), as one flat walk t = m * group + g. A tile is kept if any head
/// keeps a key of it and whole if every head keeps it whole; a byte the
/// tiles kernel did not write (n outside query tile m's window range, so
/// no key of the tile is visible) is not read and counts as neither. It then tracks the
/// first and last kept tiles and the longest whole run, and writes (begin,
/// whole begin, whole end, end), as the query-grid kernel does.
void buildKeyGridRangesKernel(KernelOp kernel, BlockRangesOp ranges) {
  Location loc = ranges.getLoc();
  OpBuilder b(kernel);
  Emitter e(b, loc);
  RangesKernel k = startRangesKernel(b, e, kernel, ranges, loc);
  LLVM::LLVMFuncOp func = k.func;
  Type i1 = b.getI1Type(), i8 = b.getI8Type(), i32 = b.getI32Type();
  Value nBlock = k.tile;
  int64_t tileN = ranges.getTileN();
  Value nTiles = emitPlanExpr(
      e, func, formula::keyTiles(tileN, plan::Expr::named(abi::kKeySide.rows)));
  // The query heads of the group: heads_q / heads_kv, from kvHead * group.
  Value group = e.i32(1), head0 = e.i32(0);
  if (ranges.getPerHead()) {
    group = LLVM::UDivOp::create(b, loc,
                                 getKernelParam(func, abi::kQuerySide.heads),
                                 getKernelParam(func, abi::kKeySide.heads));
    head0 = e.mul(k.head, group);
  }
  // header(t, tileAny, tileAll, firstAny, lastAny, runStart, bestBegin,
  // bestEnd)
  SmallVector<Type> stateTypes = {i32, i1, i1, i32, i32, i32, i32, i32};
  ScanBlocks blocks =
      createScanBlocks(b, func, stateTypes, e.slt(nBlock, nTiles), loc);
  Block *header = blocks.header, *body = blocks.body, *done = blocks.done;
  KVTiling tiling = getTiling(kernel, ranges);
  KeyGridTiles<Value> window =
      computeQueryTilesOfKeys(e, nBlock, k.seqlenQ, k.seqlenK, tiling);
  Value none = e.i32(-1);
  Value no = LLVM::ConstantOp::create(b, loc, i1, 0);
  Value yes = LLVM::ConstantOp::create(b, loc, i1, 1);
  LLVM::BrOp::create(b, loc,
                     ValueRange{e.mul(window.begin, group), no, yes, none,
                                none, none, e.i32(0), e.i32(0)},
                     header);

  b.setInsertionPointToEnd(header);
  Value t = header->getArgument(0);
  LLVM::CondBrOp::create(b, loc, e.slt(t, e.mul(window.end, group)), body,
                         done);

  b.setInsertionPointToEnd(body);
  Value m = LLVM::UDivOp::create(b, loc, t, group);
  Value g = e.sub(t, e.mul(m, group));
  // Whether the tiles kernel wrote byte (m, n): n in m's window range.
  KVTileRange<Value> kvWindow =
      computeKVTileRange(e, m, k.seqlenQ, k.seqlenK, tiling);
  Value written = LLVM::AndOp::create(b, loc, e.sge(nBlock, kvWindow.begin),
                                      e.slt(nBlock, kvWindow.end));
  // Only written bytes are read (initcheck-clean): the others are 0.
  Block *read = b.createBlock(done);
  Block *join = b.createBlock(done, {i32}, {loc});
  b.setInsertionPointToEnd(body);
  LLVM::CondBrOp::create(b, loc, written, read, ValueRange(), join,
                         ValueRange{e.i32(0)});
  b.setInsertionPointToEnd(read);
  Value address = getBlockTileEntry(e, func, ranges, k.batch,
                                    e.add(head0, g), m, nBlock);
  LLVM::BrOp::create(
      b, loc,
      ValueRange{LLVM::ZExtOp::create(
          b, loc, i32,
          LLVM::LoadOp::create(b, loc, i8, address, /*alignment=*/1))},
      join);
  b.setInsertionPointToEnd(join);
  Value byte = join->getArgument(0);
  auto bit = [&](int64_t mask) -> Value {
    return e.cmp(LLVM::ICmpPredicate::ne,
                 LLVM::AndOp::create(b, loc, byte, e.i32(mask)), e.i32(0));
  };
  Value anyTile =
      LLVM::OrOp::create(b, loc, header->getArgument(1), bit(kBlockTileAnyKept));
  Value allTile = LLVM::AndOp::create(b, loc, header->getArgument(2),
                                      bit(kBlockTileAllKept));
  // The group's last head: the tile's verdict joins the ranges, and the
  // next tile starts from no head's verdict.
  Value last = e.cmp(LLVM::ICmpPredicate::eq, g, e.sub(group, e.i32(1)));
  RunState state =
      advanceRun(b, e, loc, runStateOf(header, 3), m, anyTile, allTile, last);
  Value nextAny = e.select(last, no, anyTile);
  Value nextAll = e.select(last, yes, allTile);
  LLVM::BrOp::create(b, loc,
                     ValueRange{e.add(t, 1), nextAny, nextAll, state.firstAny,
                                state.lastAny, state.runStart,
                                state.bestBegin, state.bestEnd},
                     header);

  finishRangesKernel(b, e, loc, k, ranges, blocks, 3, window.begin);
}

} // namespace

LogicalResult lowering::buildBlockMaskKernels(KernelOp kernel) {
  BlockRangesOp ranges = getBlockRanges(kernel);
  buildTilesKernel(kernel, ranges);
  if (ranges.getKeyGrid())
    buildKeyGridRangesKernel(kernel, ranges);
  else
    buildRangesKernel(kernel, ranges);
  return success();
}
