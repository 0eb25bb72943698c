//===- HookLowering.cpp - score_mod / mask_mod, per score element ---------===//
//
// attn.modify_scores runs its hook regions once per accumulator element of
// the score tile, in registers, between the QK^T mma and the softmax
// (HookEmitter.h emits them). attn.key_range refines the KV-tile range of
// attn.kv_bounds by a mask's key interval known at compile time, and
// attn.query_range the query tiles of a key-grid block by the same
// interval; attn.block_ranges refines it by the run-time block mask, whose
// kernels BlockMaskKernel.cpp builds. DiagonalTableKernel.cpp builds the
// kernel that fills the diagonal table a costly term of k - q is read
// from.
//
//===----------------------------------------------------------------------===//

#include "HookEmitter.h"
#include "Patterns.h"

#include "mlir/Conversion/LLVMCommon/MemRefBuilder.h"
#include "mlir/Conversion/LLVMCommon/Pattern.h"
#include "mlir/Conversion/LLVMCommon/TypeConverter.h"

#include <limits>

using namespace mlir;
using namespace flashtile;
using namespace flashtile::attn;
using namespace flashtile::attn::lowering;

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
    // A costly term of k - q comes from the table its kernel filled.
    if (DiagonalTable table = getDiagonalTable(op))
      hooks.useDiagonalTable(
          table.term.op,
          getDiagonalTableEntry(e, op, table, batch, head,
                                getDiagonalTableOrigin(e, op, table)));
    SmallVector<Value> s = e.unpack(adaptor.getS());
    for (int64_t i = 0; i < mTiles; ++i)
      for (int64_t j = 0; j < nTiles; ++j)
        for (int64_t r = 0; r < 4; ++r) {
          auto [q, qOffset] = coords.rowParts(i, r);
          auto [k, kOffset] = coords.colParts(j, r);
          // Packed rows: each row has its own query head.
          Value h = getRowHead(e, head, coords.headOffset(i, r));
          int64_t index = FragmentLayout::accIndex(i, j, r, nTiles);
          Value score = s[index];
          if (hasScoreMod)
            score = hooks.emit(op.getScoreMod(), {score, batch, h, q, k},
                               {0, 0, 0, qOffset, kOffset}, scale);
          if (hasMaskMod) {
            Value keep = hooks.emit(op.getMaskMod(), {batch, h, q, k},
                                    {0, 0, qOffset, kOffset});
            score = e.select(keep, score, negInf);
          }
          s[index] = score;
        }
    rewriter.replaceOp(op, e.pack(layout.convertType(type), s));
    return success();
  }
};

/// Replaces `op` (attn.key_range, attn.query_range or attn.block_ranges)
/// with its `within` tile range intersected with `mask`, followed by `more`
/// results.
template <typename OpTy, typename Adaptor>
static void replaceWithRefinedRange(ConversionPatternRewriter &rewriter,
                                    OpTy op, Adaptor adaptor, Emitter &e,
                                    const KVTileRange<Value> &mask,
                                    ArrayRef<Value> more = {}) {
  KVTileRange<Value> within{
      adaptor.getWithinBegin(), adaptor.getWithinUnmaskedBegin(),
      adaptor.getWithinUnmaskedEnd(), adaptor.getWithinEnd()};
  KVTileRange<Value> range = intersectTileRanges(e, within, mask);
  SmallVector<Value> results = {range.begin, range.unmaskedBegin,
                                range.unmaskedEnd, range.end};
  results.append(more.begin(), more.end());
  rewriter.replaceOp(op, results);
}

/// The tile range of attn.kv_bounds refined by the mask's key interval,
/// evaluated at the query tile's first and last valid rows when the
/// interval is monotone in the row, at every row with scan_rows; the
/// arithmetic is KVBounds.h's.
struct KeyRangeLowering : public AttnOpLoweringPattern<KeyRangeOp> {
  using AttnOpLoweringPattern::AttnOpLoweringPattern;

  LogicalResult lower(KeyRangeOp op, OpAdaptor adaptor,
                      ConversionPatternRewriter &rewriter,
                      TileOpContext &ctx) const override {
    Emitter &e = ctx.e;
    int64_t tileM = op.getTileM(), tileN = op.getTileN();
    Value first, last;
    if (ctx.packed()) {
      // The positions of the first and last valid packed rows (the mask
      // reads no head: ExpandToTiles builds no key range otherwise).
      std::tie(first, last) = ctx.packedTilePositions(
          adaptor.getMBlock(), adaptor.getSeqlenQ(), tileM);
    } else {
      first = e.mul(adaptor.getMBlock(), tileM);
      last = e.smin(e.add(first, tileM - 1),
                    e.sub(adaptor.getSeqlenQ(), e.i32(1)));
    }
    HookEmitter hooks(e, op);
    Value batch = adaptor.getBatch(), head = adaptor.getHead();
    SmallVector<Value> at0, at1;
    if (op.getScanRows()) {
      // Not monotone in q_idx: the interval at every row of the tile. The
      // keys any row keeps are [min lo, max hi], those every row keeps
      // [max lo, min hi]: computeKeyRangeTiles takes them as two "rows".
      // The lanes of each warp take every 32nd row and reduce with
      // shuffles, so every warp holds the result (no shared memory; the op
      // runs before any divergence, with whole warps). The rows are
      // unrolled (at most tile_m / 32 of them), so that their loads issue
      // together instead of one dependent chain per row; a lane past the
      // last row evaluates the last row again, which changes no bound.
      Value big = e.i32(kKeyRangeUnbounded), small = e.i32(-kKeyRangeUnbounded);
      Value lane = ctx.thread().lane;
      SmallVector<Value> bounds = {big, small, small, big};
      for (int64_t i = 0; i * kWarpSize < tileM; ++i) {
        Value row = e.smin(e.add(first, e.add(lane, i * kWarpSize)), last);
        SmallVector<Value> at = hooks.emitAll(op.getBody(), {batch, head, row});
        bounds = {e.smin(bounds[0], at[0]), e.smax(bounds[1], at[0]),
                  e.smax(bounds[2], at[1]), e.smin(bounds[3], at[1])};
      }
      warpAllReduce(e, bounds, [&](size_t i, Value a, Value b) {
        return i == 0 || i == 3 ? e.smin(a, b) : e.smax(a, b);
      });
      at0 = {bounds[0], bounds[3]};
      at1 = {bounds[1], bounds[2]};
    } else {
      at0 = hooks.emitAll(op.getBody(), {batch, head, first});
      at1 = hooks.emitAll(op.getBody(), {batch, head, last});
    }
    KVTileRange<Value> mask = computeKeyRangeTiles(
        e, at0[0], at0[1], at1[0], at1[1], adaptor.getSeqlenK(), tileN,
        op.getExact());
    // One past the largest hi of any row: a monotone interval's hi may
    // decrease with the row (keys <= c - q_idx), so the larger of the two
    // ends (in the scan, at1[1] is the maximum already).
    Value maxHi = e.smax(at0[1], at1[1]);
    Value keyEnd = e.smin(e.smax(e.add(maxHi, 1), e.i32(0)),
                          adaptor.getSeqlenK());
    replaceWithRefinedRange(rewriter, op, adaptor, e, mask, {keyEnd});
    return success();
  }
};

/// The query tiles of `within` with a row, of one of the group's heads,
/// whose keys meet this KV tile (KVBounds.h's searches). With a body
/// (monotone intervals), the rows are bisected; the body is emitted at
/// every row it is evaluated at, each with its own HookEmitter (they cache
/// what they emit, and the rows lie in different blocks of the search's
/// loops). With tables, each query tile's entries [first, end) are its
/// "interval" of KV tiles, scanned like rows: the lanes of each warp take
/// every 32nd tile, kScanUnroll of them per step so that their loads
/// overlap, and reduce with shuffles, so every warp holds the result
/// without shared memory (the op runs before any divergence). With no row,
/// tile or key nothing is read, so nothing reads past its tensor.
struct QueryRangeLowering : public AttnOpLoweringPattern<QueryRangeOp> {
  using AttnOpLoweringPattern::AttnOpLoweringPattern;
  /// Tiles each lane reads per step of the tables' scan.
  static constexpr int64_t kScanUnroll = 4;

  LogicalResult lower(QueryRangeOp op, OpAdaptor adaptor,
                      ConversionPatternRewriter &rewriter,
                      TileOpContext &ctx) const override {
    Emitter &e = ctx.e;
    Location loc = op.getLoc();
    int64_t tileM = op.getTileM(), tileN = op.getTileN();
    bool tables = !op.getTables().empty();
    Value withinBegin = adaptor.getWithinBegin();
    Value withinEnd = adaptor.getWithinEnd();
    Value batch = adaptor.getBatch();
    // What is searched: rows r0..r1 against keys k0..k1 with a body, the
    // query tiles of `within` against KV tile n_block with tables.
    Value r0, r1, k0, k1;
    if (tables) {
      r0 = withinBegin;
      r1 = e.sub(withinEnd, e.i32(1));
      k0 = k1 = adaptor.getNBlock();
    } else {
      r0 = e.mul(withinBegin, tileM);
      r1 = e.sub(e.smin(e.mul(withinEnd, tileM), adaptor.getSeqlenQ()),
                 e.i32(1));
      k0 = e.mul(adaptor.getNBlock(), tileN);
      k1 = e.sub(e.smin(e.add(k0, tileN), adaptor.getSeqlenK()), e.i32(1));
    }
    Region &body = op.getBody();
    bool readsHead = tables || !body.front().getArgument(1).use_empty();
    Value heads = readsHead ? adaptor.getGroup() : e.i32(1);
    Value nothing = e.bitOr(e.slt(r1, r0), e.slt(k1, k0));
    heads = e.select(nothing, e.i32(0), heads);
    Value none0 = e.add(r1, 1), none1 = e.sub(r0, e.i32(1));

    auto loop = [&](Value count, auto init, auto step) {
      constexpr size_t n = std::tuple_size<decltype(init)>::value;
      SmallVector<Value> last = emitForLoop(
          rewriter, loc, e.i32(0), count, 1, ValueRange(ArrayRef<Value>(init)),
          [&](Value i, ValueRange x) {
            std::array<Value, n> state;
            llvm::copy(x, state.begin());
            auto next = step(i, state);
            return SmallVector<Value>(next.begin(), next.end());
          });
      std::array<Value, n> out;
      llvm::copy(last, out.begin());
      return out;
    };
    // A table's row of (batch, head): its entry of query tile m, at row
    // m tile_m, as an integer.
    OpBuilder &b = rewriter;
    struct TableRow {
      Value base, rowStride;
    };
    auto tableRow = [&](Value desc, Value head) {
      MemRefDescriptor table(desc);
      Value element =
          e.add64(e.mul64(e.sext64(batch), table.stride(b, loc, 0)),
                  e.mul64(e.sext64(head), table.stride(b, loc, 1)));
      return TableRow{
          e.gep(table.alignedPtr(b, loc), e.mul64(element, e.i64(4))),
          table.stride(b, loc, 2)};
    };
    auto entry = [&](const TableRow &row, Value m) {
      Value element = e.mul64(e.sext64(e.mul(m, tileM)), row.rowStride);
      Value value = LLVM::LoadOp::create(
          b, loc, b.getF32Type(),
          e.gep(row.base, e.mul64(element, e.i64(4))), /*alignment=*/4);
      return LLVM::FPToSIOp::create(b, loc, b.getI32Type(), value)
          .getResult();
    };
    // Per head: the rows that meet the tile (their hull over the heads),
    // and with `exact` the rows that keep it whole (their intersection).
    bool exact = op.getExact();
    std::array<Value, 4> rows = loop(
        heads, std::array<Value, 4>{none0, none1, r0, r1},
        [&](Value i, const std::array<Value, 4> &acc) {
          Value head = e.add(adaptor.getHead(), i);
          Value first, last, wholeFirst = r0, wholeLast = r1;
          if (tables) {
            auto intervalOf = [&](Value firstTable, Value endTable) {
              TableRow firsts = tableRow(firstTable, head);
              TableRow ends = tableRow(endTable, head);
              return [&, firsts, ends](Value m) {
                Value end = entry(ends, m);
                return std::make_pair(entry(firsts, m), e.sub(end, e.i32(1)));
              };
            };
            auto [f, l] = scanMeetingRows<kScanUnroll>(
                e, r0, r1, k0, k1, ctx.thread().lane, kWarpSize,
                intervalOf(adaptor.getTables()[0], adaptor.getTables()[1]),
                loop);
            SmallVector<Value, 5> lanes = {f, l};
            if (exact) {
              // The tiles whose unmasked KV tiles hold this one, and how
              // many: kept where they are one run.
              auto [wf, wl, count] = scanMeetingRows<kScanUnroll, true>(
                  e, r0, r1, k0, k1, ctx.thread().lane, kWarpSize,
                  intervalOf(adaptor.getTables()[2], adaptor.getTables()[3]),
                  loop);
              lanes.append({wf, wl, count});
            }
            // Firsts (0, 2) by minimum, lasts (1, 3) by maximum, the
            // count (4) summed.
            warpAllReduce(e, lanes, [&](size_t i, Value a, Value b) {
              if (i == 4)
                return e.add(a, b);
              return i % 2 == 0 ? e.smin(a, b) : e.smax(a, b);
            });
            first = lanes[0];
            last = lanes[1];
            if (exact)
              std::tie(wholeFirst, wholeLast) =
                  wholeRunOrNone(e, lanes[2], lanes[3], lanes[4]);
          } else {
            auto interval = [&](Value q) {
              HookEmitter hooks(e, op);
              SmallVector<Value> at = hooks.emitAll(body, {batch, head, q});
              return std::make_pair(at[0], at[1]);
            };
            std::tie(first, last) =
                bisectMeetingRows(e, r0, r1, k0, k1, interval, loop);
            if (exact)
              std::tie(wholeFirst, wholeLast) =
                  bisectCoveringRows(e, r0, r1, k0, k1, interval, loop);
          }
          // An empty result of one head leaves the hull as it was; the
          // whole rows are those of every head.
          Value empty = e.slt(last, first);
          return std::array<Value, 4>{
              e.smin(acc[0], e.select(empty, none0, first)),
              e.smax(acc[1], e.select(empty, none1, last)),
              e.smax(acc[2], wholeFirst), e.smin(acc[3], wholeLast)};
        });
    // Rows are query tiles already with tables.
    int64_t rowsPerTile = tables ? 1 : tileM;
    auto [begin, end] = rowsToQueryTiles(e, rows[0], rows[1], withinBegin,
                                         withinEnd, rowsPerTile);
    Value wholeBegin = begin, wholeEnd = begin;
    if (exact)
      std::tie(wholeBegin, wholeEnd) =
          rowsToWholeQueryTiles(e, rows[2], rows[3], rowsPerTile);
    // No head (nothing to search): no whole tile either.
    wholeEnd = e.select(e.slt(e.i32(0), heads), wholeEnd, wholeBegin);
    replaceWithRefinedRange(
        rewriter, op, adaptor, e,
        KVTileRange<Value>{begin, wholeBegin, wholeEnd, end});
    return success();
  }
};

/// The 4 i32 the block-mask kernels wrote for this (batch, head, query tile)
/// in the `kv_ranges` workspace (getBlockRangesEntry), intersected with the
/// window's range.
struct BlockRangesLowering : public AttnOpLoweringPattern<BlockRangesOp> {
  using AttnOpLoweringPattern::AttnOpLoweringPattern;

  LogicalResult lower(BlockRangesOp op, OpAdaptor adaptor,
                      ConversionPatternRewriter &rewriter,
                      TileOpContext &ctx) const override {
    Emitter &e = ctx.e;
    Value head = op.getPerHead() ? adaptor.getHead() : e.i32(0);
    Value entry = getBlockRangesEntry(
        e, op->getParentOfType<LLVM::LLVMFuncOp>(), op, adaptor.getBatch(),
        head, adaptor.getMBlock());
    Value fields[kBlockRangesFields];
    for (int64_t f = 0; f < kBlockRangesFields; ++f)
      fields[f] = LLVM::LoadOp::create(rewriter, op.getLoc(),
                                       rewriter.getI32Type(),
                                       e.gep(entry, e.i32(4 * f)),
                                       /*alignment=*/4);
    replaceWithRefinedRange(
        rewriter, op, adaptor, e,
        KVTileRange<Value>{fields[0], fields[1], fields[2], fields[3]});
    return success();
  }
};

} // namespace

void lowering::populateHookPatterns(LLVMTypeConverter &converter,
                                    RewritePatternSet &patterns) {
  patterns.add<ModifyScoresLowering, KeyRangeLowering, QueryRangeLowering,
               BlockRangesLowering>(converter);
}
