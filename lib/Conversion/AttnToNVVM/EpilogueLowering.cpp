//===- EpilogueLowering.cpp - Normalise, stage and store O and LSE --------===//

#include "HookEmitter.h"
#include "GlobalAccess.h"
#include "Patterns.h"
#include "SharedAccess.h"
#include "TileOpContext.h"

#include "mlir/Conversion/LLVMCommon/MemRefBuilder.h"

#include "mlir/Conversion/LLVMCommon/Pattern.h"
#include "mlir/Conversion/LLVMCommon/TypeConverter.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace flashtile;
using namespace flashtile::attn;
using namespace flashtile::attn::lowering;

namespace {

/// What the ways of finishing a tile share (attn.epilogue's two, and
/// attn.store's): where O's rows and the LSE go, and the sink logit of a row.
template <typename OpT>
struct EpilogueContextT {
  OpT op;
  typename OpT::Adaptor adaptor;
  ConversionPatternRewriter &rewriter;
  TileOpContext &ctx;
  Emitter &e;
  int64_t rows;
  Value sinkOfBlock;
  /// Split-KV kernels: whether this launch splits (kv_splits > 1) and its
  /// negation; null otherwise.
  Value splitting, whole;

  EpilogueContextT(OpT op, typename OpT::Adaptor adaptor,
                   ConversionPatternRewriter &rewriter, TileOpContext &ctx,
                   int64_t rows)
      : op(op), adaptor(adaptor), rewriter(rewriter), ctx(ctx), e(ctx.e),
        rows(rows) {}

  /// O's rows (emitted on first use).
  TensorRows &out() {
    if (!rowsOut)
      rowsOut.emplace(e, adaptor.getO(), adaptor.getBatch(), adaptor.getHead(),
                      ctx.packed() ? &ctx : nullptr);
    return *rowsOut;
  }
  /// The block's first (packed) row (emitted on first use).
  Value firstRow() {
    if (!first)
      first = e.mul(adaptor.getMBlock(), rows);
    return first;
  }

  /// The head of block row `row`: the block's, or with packed rows its own.
  Value headOf(Value row) {
    if (!ctx.packed())
      return adaptor.getHead();
    return e.add(adaptor.getHead(),
                 ctx.unpackRow(e.add(firstRow(), row)).second);
  }

  /// The sink logit z of block row `row`, or null without a sink region.
  Value sinkOf(Value row) {
    if constexpr (!std::is_same_v<OpT, EpilogueOp>) {
      return {};
    } else {
      if (op.getSink().empty())
        return {};
      if (!ctx.packed() && sinkOfBlock)
        return sinkOfBlock;
      HookEmitter hooks(e, op);
      Value z = hooks.emit(op.getSink(), {adaptor.getBatch(), headOf(row)});
      if (!ctx.packed())
        sinkOfBlock = z;
      return z;
    }
  }

  /// Stores `value` as the LSE of block row `row` (warp row base + offset)
  /// when `cond` (null: the thread leads its quad) holds and the row is
  /// valid.
  void storeLse(Value rowBase, Value rowOffset, Value value, Value cond) {
    Location loc = op.getLoc();
    emitLseValues();
    if (!cond)
      cond = quadLeader;
    Value globalRow = e.add(e.add(firstRow(), rowBase), rowOffset);
    Value store = LLVM::AndOp::create(
        rewriter, loc, cond,
        e.cmp(LLVM::ICmpPredicate::slt, globalRow, out().seqlen()));
    emitIf(rewriter, loc, store, [&] {
      Value element;
      if (ctx.packed()) {
        auto [position, offset] = ctx.unpackRow(globalRow);
        element = e.add64(lseRowsOf(e.add(adaptor.getHead(), offset)),
                          e.sext64(position));
      } else {
        element = e.add64(lseBase, e.sext64(globalRow));
      }
      LLVM::StoreOp::create(rewriter, loc, value,
                            e.gep(lsePtr, e.mul64(element, e.i64(4))),
                            /*alignment=*/4);
    });
  }

  /// Emits now what the lazy getters above (and storeLse) would emit on
  /// first use, so that their values dominate every later branch.
  void emitSharedValues() {
    out();
    firstRow();
    if (ctx.packed())
      ctx.groupSize();
    emitLseValues();
  }

  /// A row's denominator `sum` with the sink's term (its row `row`), whether
  /// the row saw no key, and its LSE then: -inf, or z with a sink.
  struct Denominator {
    Value sum, empty, noKey;
  };
  Denominator finishSum(Value sum, Value m, Value scale, Value row) {
    Value empty = e.fcmp(LLVM::FCmpPredicate::oeq, sum, e.f32(0.0f));
    Value noKey = e.f32(-std::numeric_limits<float>::infinity());
    if (Value sink = sinkOf(row)) {
      // The denominator e^(m * scale) * l gains e^z: l += e^(z - m * scale).
      // A row with no key keeps O = 0 and takes LSE = z.
      Value exponent = e.fma(m, e.fmul(scale, e.f32(-1.0f)), sink);
      Value extra =
          e.exp2(e.fmul(exponent, e.f32(static_cast<float>(M_LOG2E))));
      sum = e.select(empty, sum, e.fadd(sum, extra));
      noKey = sink;
    }
    return {sum, empty, noKey};
  }
  /// LSE = m * scale + ln(sum), or the no-key value.
  Value lseOf(const Denominator &d, Value m, Value scale) {
    return e.select(
        d.empty, d.noKey,
        e.fma(m, scale,
              e.fmul(e.log2(d.sum), e.f32(static_cast<float>(M_LN2)))));
  }

private:
  /// The element offset of the LSE row of (batch, `head`).
  Value lseRowsOf(Value head) {
    // A (batch, heads, rows) tensor.
    MemRefDescriptor lse(adaptor.getLse());
    OpBuilder &b = e.builder();
    return e.add64(
        e.mul64(e.sext64(adaptor.getBatch()), lse.stride(b, e.location(), 0)),
        e.mul64(e.sext64(head), lse.stride(b, e.location(), 1)));
  }
  /// What every LSE store shares, emitted once: the block head's row
  /// (unpacked), the pointer and whether the thread leads its quad.
  void emitLseValues() {
    if (lsePtr)
      return;
    if (!ctx.packed())
      lseBase = lseRowsOf(adaptor.getHead());
    lsePtr = MemRefDescriptor(adaptor.getLse())
                 .alignedPtr(e.builder(), e.location());
    quadLeader = e.cmp(LLVM::ICmpPredicate::eq, ctx.thread().t, e.i32(0));
  }

  std::optional<TensorRows> rowsOut;
  Value first, lseBase, lsePtr, quadLeader;
};
using EpilogueContext = EpilogueContextT<EpilogueOp>;

/// Copies the staged tile's rows to O: every thread moves 16-byte chunks of
/// whole rows, so that stores are 128-bit and coalesced. Rows past seqlen_q,
/// pad columns (getPaddedHeadDim) and, with `onlyIf`, launches where it is
/// false store nothing.
template <typename OpT>
static void storeStagedRows(EpilogueContextT<OpT> &ep, Value stage,
                            int64_t rows, int64_t cols, Type dtype,
                            int64_t outHeadDim, Value onlyIf) {
  Emitter &e = ep.e;
  ConversionPatternRewriter &rewriter = ep.rewriter;
  Location loc = ep.op.getLoc();
  TensorRows &out = ep.out();
  auto vectorType = VectorType::get({4}, rewriter.getI32Type());
  TileChunkWalk walk(e, ep.ctx.thread().tid, ep.ctx.threads(), rows, cols);
  int64_t elementsPerChunk = kCopyChunkBytes * 8 / dtype.getIntOrFloatBitWidth();
  int64_t outChunks = outHeadDim / elementsPerChunk;
  for (int64_t step = 0; step < walk.numSteps(); ++step) {
    Value row = walk.row(step);
    Value globalRow = e.add(ep.firstRow(), row);
    Value store = e.cmp(LLVM::ICmpPredicate::slt, globalRow, out.seqlen());
    if (outChunks * elementsPerChunk < cols)
      store = LLVM::AndOp::create(rewriter, loc, store,
                                  e.slt(walk.chunk(step), e.i32(outChunks)));
    if (walk.isPartial(step))
      store = LLVM::AndOp::create(rewriter, loc, store, walk.isActive(step));
    if (onlyIf)
      store = LLVM::AndOp::create(rewriter, loc, store, onlyIf);
    emitIf(rewriter, loc, store, [&] {
      Value data = LLVM::LoadOp::create(rewriter, loc, vectorType,
                                        e.gep(stage, walk.smemOffset(step)),
                                        /*alignment=*/kCopyChunkBytes);
      LLVM::StoreOp::create(rewriter, loc, data,
                            out.chunkAddress(globalRow, walk.chunk(step)),
                            /*alignment=*/kCopyChunkBytes);
    });
  }
}

/// O = acc / l goes to the staging buffer in the swizzled layout (4-byte
/// stores, conflict-free), then every thread copies 16-byte chunks of whole
/// rows to global memory, so that stores are 128-bit and coalesced. Threads
/// with t = 0 store the LSE of their rows. Rows past seqlen_q are skipped.
/// A sink region's logit joins l first (attn.epilogue's description). With
/// KV warps, the partial states meet in the merge buffer first.
struct EpilogueLowering : public AttnOpLoweringPattern<EpilogueOp> {
  using AttnOpLoweringPattern::AttnOpLoweringPattern;

  LogicalResult lower(EpilogueOp op, OpAdaptor adaptor,
                      ConversionPatternRewriter &rewriter,
                      TileOpContext &ctx) const override {
    FragType accType = op.getAcc().getType();
    Type dtype = op.getStage().getType().getElementType();
    int64_t rows = accType.getDimSize(0), cols = accType.getDimSize(1);
    Location loc = op.getLoc();
    using P = LLVM::ICmpPredicate;

    Emitter &e = ctx.e;
    // The thread's coordinates first: every branch below uses them.
    (void)ctx.thread();
    EpilogueContext ep(op, adaptor, rewriter, ctx, rows);
    if (hasKVSplitsParam(op)) {
      ep.splitting = e.cmp(P::sgt, getKVSplitsParam(op), e.i32(1));
      ep.whole = e.cmp(P::sle, getKVSplitsParam(op), e.i32(1));
    }
    Value stage = adaptor.getStage();
    SmallVector<std::tuple<Value, Value, Value, Value>> lseStores;
    if (op.getMerge())
      mergeIntoStage(ep, rows, cols, dtype);
    else
      normaliseIntoStage(ep, rows, cols, dtype, lseStores);
    NVVM::Barrier0Op::create(rewriter, loc);

    // Whole rows out; a split launch leaves O to the combine kernel.
    storeStagedRows(ep, stage, rows, cols, dtype,
                    op.getO().getType().getDimSize(3), ep.whole);
    for (auto &[rowBase, rowOffset, value, cond] : lseStores)
      ep.storeLse(rowBase, rowOffset, value, cond);
    rewriter.eraseOp(op);
    return success();
  }

private:
  /// One warp per row group: each thread divides its accumulators by its
  /// rows' l and stages them; quad leaders store the LSE after O
  /// (`lseStores`).
  static void normaliseIntoStage(
      EpilogueContext &ep, int64_t rows, int64_t cols, Type dtype,
      SmallVectorImpl<std::tuple<Value, Value, Value, Value>> &lseStores) {
    TileOpContext &ctx = ep.ctx;
    Emitter &e = ep.e;
    const FragmentLayout &layout = ctx.layout;
    ThreadCoords &thread = ctx.thread();
    int64_t mTiles = layout.mTiles(rows), nTiles = cols / 8;
    SmallVector<Value> acc = e.unpack(ep.adaptor.getAcc());
    SmallVector<Value> rowMax = e.unpack(ep.adaptor.getRowMax());
    SmallVector<Value> rowSum = e.unpack(ep.adaptor.getRowSum());
    Value scale = ep.adaptor.getSoftmaxScale();
    Value zero = e.f32(0.0f);
    Value warpRow = e.mul(thread.warp, layout.rowsPerWarp(rows));
    // This thread's 4 bytes of each 16-byte chunk of its rows.
    SwizzledTileAccess staged(e, e.gep(ep.adaptor.getStage(),
                                       e.mul(thread.t, 4)),
                              e.add(warpRow, thread.g), e.i32(0), cols);
    // Unpacked, the block's rows share one sink logit.
    if (!ctx.packed())
      ep.sinkOf(Value());
    SmallVector<std::pair<Value, Value>> lse;
    for (int64_t i = 0; i < mTiles; ++i)
      for (int64_t h = 0; h < 2; ++h) {
        int64_t index = FragmentLayout::rowIndex(i, h);
        Value sum = rowSum[index];
        sum = e.fadd(sum, e.shflXor(sum, 1));
        sum = e.fadd(sum, e.shflXor(sum, 2));
        Value rowOffset = e.add(thread.g, e.i32(16 * i + 8 * h));
        EpilogueContext::Denominator d = ep.finishSum(
            sum, rowMax[index], scale,
            ctx.packed() ? e.add(warpRow, rowOffset) : Value());
        Value inverse = e.select(d.empty, zero, e.rcp(d.sum));
        lse.push_back({rowOffset, ep.lseOf(d, rowMax[index], scale)});
        for (int64_t j = 0; j < nTiles; ++j) {
          Value lo = e.fmul(acc[FragmentLayout::accIndex(i, j, 2 * h, nTiles)],
                            inverse);
          Value hi = e.fmul(
              acc[FragmentLayout::accIndex(i, j, 2 * h + 1, nTiles)], inverse);
          LLVM::StoreOp::create(ep.rewriter, ep.op.getLoc(),
                                e.packPair(lo, hi, dtype),
                                staged.address(16 * i + 8 * h, j),
                                /*alignment=*/4);
        }
      }
    for (auto &[rowOffset, value] : lse)
      lseStores.push_back({warpRow, rowOffset, value, Value()});
  }

  /// A split's row `row`, column pair `col`: the normalised fp32 O pair and,
  /// from column 0, the LSE (no sink: the combine kernel adds it once) to
  /// the o_partial and lse_partial entries of (split, batch, head, position)
  /// (KernelABI.h).
  static void storePartial(EpilogueContext &ep, Value row, Value col,
                           int64_t cols, Value o0, Value o1, Value sum,
                           Value best, Value scale) {
    TileOpContext &ctx = ep.ctx;
    Emitter &e = ep.e;
    ConversionPatternRewriter &rewriter = ep.rewriter;
    Location loc = ep.op.getLoc();
    Operation *op = ep.op;
    using P = LLVM::ICmpPredicate;
    Value zero = e.f32(0.0f);
    Value empty = e.fcmp(LLVM::FCmpPredicate::oeq, sum, zero);
    Value inverse = e.select(empty, zero, e.rcp(sum));
    Value lse = e.select(
        empty, e.f32(-std::numeric_limits<float>::infinity()),
        e.fma(best, scale,
              e.fmul(e.log2(sum), e.f32(static_cast<float>(M_LN2)))));
    Value globalRow = e.add(ep.firstRow(), row);
    Value valid = e.cmp(P::slt, globalRow, ep.out().seqlen());
    emitIf(rewriter, loc, valid, [&] {
      auto [position, offset] = ctx.unpackRow(globalRow);
      Value head = e.add(ep.adaptor.getHead(), offset);
      Value split = LLVM::UDivOp::create(
          rewriter, loc,
          NVVM::BlockIdXOp::create(rewriter, loc, rewriter.getI32Type()),
          getQueryTiles(e, op));
      Value rowIndex =
          e.add(e.mul(e.add(e.mul(ep.adaptor.getBatch(),
                                  getKernelParam(op, abi::kQuerySide.heads)),
                            head),
                      getKernelParam(op, abi::kQuerySide.rows)),
                position);
      Value entry = e.add64(e.mul64(e.sext64(split),
                                    e.sext64(getSplitRowsParam(op))),
                            e.sext64(rowIndex));
      auto pairType = VectorType::get({2}, rewriter.getF32Type());
      Value pair = LLVM::PoisonOp::create(rewriter, loc, pairType);
      pair = LLVM::InsertElementOp::create(rewriter, loc, pair,
                                           e.fmul(o0, inverse), e.i32(0));
      pair = LLVM::InsertElementOp::create(rewriter, loc, pair,
                                           e.fmul(o1, inverse), e.i32(1));
      Value oAddress = e.gep(
          getWorkspaceParam(op, kPartialOWorkspace),
          e.mul64(e.add64(e.mul64(entry, e.i64(cols)), e.sext64(col)),
                  e.i64(4)));
      LLVM::StoreOp::create(rewriter, loc, pair, oAddress, /*alignment=*/8);
      emitIf(rewriter, loc, e.cmp(P::eq, col, e.i32(0)), [&] {
        LLVM::StoreOp::create(
            rewriter, loc, lse,
            e.gep(getWorkspaceParam(op, kPartialLseWorkspace),
                  e.mul64(entry, e.i64(4))),
            /*alignment=*/4);
      });
    });
  }

  /// KV warps: every warp writes its partial O, m and l (quad-reduced) to its
  /// slice of the merge buffer; after a barrier each thread merges whole
  /// (row, column pair) units across the warps, stages them, and the unit of
  /// column pair 0 stores the row's LSE.
  static void mergeIntoStage(EpilogueContext &ep, int64_t rows, int64_t cols,
                             Type dtype) {
    TileOpContext &ctx = ep.ctx;
    Emitter &e = ep.e;
    ConversionPatternRewriter &rewriter = ep.rewriter;
    Location loc = ep.op.getLoc();
    const FragmentLayout &layout = ctx.layout;
    ThreadCoords &thread = ctx.thread();
    int64_t mTiles = layout.mTiles(rows), nTiles = cols / 8;
    int64_t kvWarps = ctx.config.getKvWarps();
    int64_t rowBytes = (cols + kMergeRowPadding) * 4;
    auto pairType = VectorType::get({2}, rewriter.getF32Type());
    Value merge = ep.adaptor.getMerge();
    Value scale = ep.adaptor.getSoftmaxScale();
    Value scaleLog2 = e.fmul(scale, e.f32(static_cast<float>(M_LOG2E)));
    Value zero = e.f32(0.0f);
    Value negInf = e.f32(-std::numeric_limits<float>::infinity());
    auto pair = [&](Value a, Value b) {
      Value v = LLVM::PoisonOp::create(rewriter, loc, pairType);
      v = LLVM::InsertElementOp::create(rewriter, loc, v, a, e.i32(0));
      return LLVM::InsertElementOp::create(rewriter, loc, v, b, e.i32(1))
          .getResult();
    };
    auto element = [&](Value v, int64_t index) {
      return LLVM::ExtractElementOp::create(rewriter, loc, v, e.i32(index))
          .getResult();
    };
    // The address of column `col` (f32) of block row `row` of warp `w`'s
    // slice.
    auto address = [&](Value w, Value row, Value col) {
      Value offset = e.add(e.mul(e.add(e.mul(w, rows), row), rowBytes),
                           e.mul(col, 4));
      return e.gep(merge, offset);
    };

    // The merge branches (split or not, partial units): what they share
    // first.
    ep.emitSharedValues();

    // 1. Partial states out: O pairs, then (m, l) after the row's columns.
    SmallVector<Value> acc = e.unpack(ep.adaptor.getAcc());
    SmallVector<Value> rowMax = e.unpack(ep.adaptor.getRowMax());
    SmallVector<Value> rowSum = e.unpack(ep.adaptor.getRowSum());
    Value warpRow = e.mul(thread.warp, layout.rowsPerWarp(rows));
    Value quadLeader = e.cmp(LLVM::ICmpPredicate::eq, thread.t, e.i32(0));
    for (int64_t i = 0; i < mTiles; ++i)
      for (int64_t h = 0; h < 2; ++h) {
        int64_t index = FragmentLayout::rowIndex(i, h);
        Value row = e.add(warpRow, e.add(thread.g, e.i32(16 * i + 8 * h)));
        Value sum = rowSum[index];
        sum = e.fadd(sum, e.shflXor(sum, 1));
        sum = e.fadd(sum, e.shflXor(sum, 2));
        for (int64_t j = 0; j < nTiles; ++j) {
          Value col = e.add(e.mul(thread.t, 2), e.i32(8 * j));
          LLVM::StoreOp::create(
              rewriter, loc,
              pair(acc[FragmentLayout::accIndex(i, j, 2 * h, nTiles)],
                   acc[FragmentLayout::accIndex(i, j, 2 * h + 1, nTiles)]),
              address(thread.kvWarp, row, col), /*alignment=*/8);
        }
        emitIf(rewriter, loc, quadLeader, [&] {
          LLVM::StoreOp::create(rewriter, loc, pair(rowMax[index], sum),
                                address(thread.kvWarp, row, e.i32(cols)),
                                /*alignment=*/8);
        });
      }
    NVVM::Barrier0Op::create(rewriter, loc);

    // 2. Merge (row, column pair) units; consecutive threads take
    // consecutive pairs of one row.
    int64_t pairsPerRow = cols / 2;
    int64_t threads = ctx.threads();
    int64_t units = rows * pairsPerRow;
    Value stage = ep.adaptor.getStage();
    for (int64_t step = 0; step * threads < units; ++step) {
      Value unit = e.add(thread.tid, e.i32(step * threads));
      auto body = [&] {
        Value row = e.udiv(unit, pairsPerRow);
        Value col = e.mul(e.urem(unit, pairsPerRow), 2);
        SmallVector<Value> m(kvWarps), l(kvWarps);
        Value best = negInf;
        for (int64_t w = 0; w < kvWarps; ++w) {
          Value ml = LLVM::LoadOp::create(rewriter, loc, pairType,
                                          address(e.i32(w), row, e.i32(cols)),
                                          /*alignment=*/8);
          m[w] = element(ml, 0);
          l[w] = element(ml, 1);
          best = e.fmax(best, m[w]);
        }
        // A row no warp saw a key of keeps max -inf: use 0 so that every
        // factor is exp2(-inf) = 0, never NaN.
        best = e.select(e.fcmp(LLVM::FCmpPredicate::oeq, best, negInf), zero,
                        best);
        Value sum = zero, o0 = zero, o1 = zero;
        for (int64_t w = 0; w < kvWarps; ++w) {
          Value factor = e.exp2(e.fmul(e.fadd(m[w], e.fmul(best, e.f32(-1.0f))),
                                       scaleLog2));
          sum = e.fma(factor, l[w], sum);
          Value o = LLVM::LoadOp::create(rewriter, loc, pairType,
                                         address(e.i32(w), row, col),
                                         /*alignment=*/8);
          o0 = e.fma(factor, element(o, 0), o0);
          o1 = e.fma(factor, element(o, 1), o1);
        }
        auto finish = [&] {
          EpilogueContext::Denominator d =
              ep.finishSum(sum, best, scale, row);
          Value inverse = e.select(d.empty, zero, e.rcp(d.sum));
          Value lse = ep.lseOf(d, best, scale);
          Value offset = e.add(swizzledOffset(e, row, e.udiv(col, 8), cols),
                               e.mul(e.urem(col, 8), 2));
          LLVM::StoreOp::create(rewriter, loc,
                                e.packPair(e.fmul(o0, inverse),
                                           e.fmul(o1, inverse), dtype),
                                e.gep(stage, offset), /*alignment=*/4);
          ep.storeLse(row, e.i32(0), lse,
                      e.cmp(LLVM::ICmpPredicate::eq, col, e.i32(0)));
        };
        if (!ep.splitting) {
          finish();
          return;
        }
        emitIf(rewriter, loc, ep.splitting, [&] {
          storePartial(ep, row, col, cols, o0, o1, sum, best, scale);
        });
        emitIf(rewriter, loc, ep.whole, finish);
      };
      if ((step + 1) * threads > units)
        emitIf(rewriter, loc, e.slt(unit, e.i32(units)), body);
      else
        body();
    }
  }
};

/// attn.store: the tile is staged as it is (no normalisation), then stored
/// as the epilogue stores O; quad leaders store the given LSE values.
struct StoreLowering : public AttnOpLoweringPattern<StoreOp> {
  using AttnOpLoweringPattern::AttnOpLoweringPattern;

  LogicalResult lower(StoreOp op, OpAdaptor adaptor,
                      ConversionPatternRewriter &rewriter,
                      TileOpContext &ctx) const override {
    FragType accType = op.getAcc().getType();
    Type dtype = op.getStage().getType().getElementType();
    int64_t rows = accType.getDimSize(0), cols = accType.getDimSize(1);
    Location loc = op.getLoc();
    Emitter &e = ctx.e;
    ThreadCoords &thread = ctx.thread();
    const FragmentLayout &layout = ctx.layout;
    EpilogueContextT<StoreOp> ep(op, adaptor, rewriter, ctx, rows);
    int64_t mTiles = layout.mTiles(rows);
    storeAccumulatorToShared(ctx, e.unpack(adaptor.getAcc()), rows, cols,
                             dtype, adaptor.getStage(), cols);
    Value warpRow = e.mul(thread.warp, layout.rowsPerWarp(rows));
    NVVM::Barrier0Op::create(rewriter, loc);
    storeStagedRows(ep, adaptor.getStage(), rows, cols, dtype,
                    op.getO().getType().getDimSize(3), Value());
    if (Value values = adaptor.getLseValues()) {
      SmallVector<Value> lse = e.unpack(values);
      for (int64_t i = 0; i < mTiles; ++i)
        for (int64_t h = 0; h < 2; ++h)
          ep.storeLse(warpRow, e.add(thread.g, e.i32(16 * i + 8 * h)),
                      lse[FragmentLayout::rowIndex(i, h)], Value());
    }
    rewriter.eraseOp(op);
    return success();
  }
};

} // namespace

void lowering::populateEpiloguePatterns(LLVMTypeConverter &converter,
                                      RewritePatternSet &patterns) {
  patterns.add<EpilogueLowering, StoreLowering>(converter);
}
