//===- SoftmaxLowering.cpp - Splat, masking and the online softmax --------===//

#include "Patterns.h"
#include "TileOpContext.h"

#include "mlir/Conversion/LLVMCommon/Pattern.h"
#include "mlir/Conversion/LLVMCommon/TypeConverter.h"

#include <limits>

using namespace mlir;
using namespace flashtile;
using namespace flashtile::attn;
using namespace flashtile::attn::lowering;

static constexpr float kNegInf = -std::numeric_limits<float>::infinity();

namespace {

struct SplatLowering : public AttnOpLoweringPattern<SplatOp> {
  using AttnOpLoweringPattern::AttnOpLoweringPattern;

  LogicalResult lower(SplatOp op, OpAdaptor,
                      ConversionPatternRewriter &rewriter,
                      TileOpContext &ctx) const override {
    FragType type = op.getResult().getType();
    const FragmentLayout &layout = ctx.layout;
    Emitter &e = ctx.e;
    Value value = e.f32(op.getValue().convertToFloat());
    // A 16-bit fragment holds packed pairs (FragmentLayout.h).
    if (!type.getElementType().isF32())
      value = e.packPair(value, value, type.getElementType());
    SmallVector<Value> values(layout.numValues(type), value);
    rewriter.replaceOp(op, e.pack(layout.convertType(type), values));
    return success();
  }
};

/// Sets scores outside the window or past seqlen_k to -inf, as KVBounds.h
/// decides per element. Per thread the key window is computed once per row
/// and compared with each column.
struct MaskLowering : public AttnOpLoweringPattern<MaskOp> {
  using AttnOpLoweringPattern::AttnOpLoweringPattern;

  LogicalResult lower(MaskOp op, OpAdaptor adaptor,
                      ConversionPatternRewriter &rewriter,
                      TileOpContext &ctx) const override {
    const FragmentLayout &layout = ctx.layout;
    FragType type = op.getS().getType();
    int64_t rows = type.getDimSize(0), cols = type.getDimSize(1);
    int64_t mTiles = layout.mTiles(rows), nTiles = cols / 8;
    int64_t left = op.getWindowLeft(), right = op.getWindowRight();

    Emitter &e = ctx.e;
    ScoreTileCoords coords(ctx, rows, cols, adaptor.getMBlock(),
                           adaptor.getNBlock());
    Value seqlenK = adaptor.getSeqlenK();
    Value offset = e.sub(seqlenK, adaptor.getSeqlenQ());
    Value negInf = e.f32(kNegInf);
    SmallVector<Value> s = e.unpack(adaptor.getS());
    for (int64_t i = 0; i < mTiles; ++i)
      for (int64_t h = 0; h < 2; ++h) {
        // Elements 2h and 2h + 1 share a row.
        Value diagonal = e.add(coords.row(i, 2 * h), offset);
        KeyWindow<Value> window =
            computeKeyWindow(e, diagonal, seqlenK, left, right);
        for (int64_t j = 0; j < nTiles; ++j)
          for (int64_t r = 2 * h; r < 2 * h + 2; ++r) {
            Value masked = isKeyMasked(e, window, coords.col(j, r));
            int64_t index = FragmentLayout::accIndex(i, j, r, nTiles);
            s[index] = e.select(masked, negInf, s[index]);
          }
      }
    rewriter.replaceOp(op, e.pack(layout.convertType(type), s));
    return success();
  }
};

/// One online-softmax step in the exp2 domain (FlashAttention-2, Alg. 1):
/// row maxima are reduced over the four threads of a quad with shfl.bfly, row
/// sums stay per thread until the epilogue. A row whose max is still -inf uses
/// 0 as its max so that exp2(-inf - 0) = 0 and nothing becomes NaN.
///
/// Each exponent is (s - max) * c, an FADD and an FMUL, not FlashAttention's
/// single fma(s, c, -round(max * c)). The subtraction is exact for scores
/// near the max, so the row's largest term is exactly 1 and no term exceeds
/// 1 however large the scores are. The one-FMA form shifts all of a row's
/// exponents by the rounding error of max * c, up to ulp(max * c) / 2: at
/// scaled scores near 1e9 that is 2^+-32, which overflows or underflows a
/// 16-bit P, and from ~1e11 on it zeroes the whole row (f16 Q and K near
/// 65504 reach 1e12). The extra op costs 3-4% at d = 128 on an H200; a
/// uniform branch between the two forms cost as much or more, because it
/// splits the block ptxas schedules.
struct OnlineSoftmaxLowering : public AttnOpLoweringPattern<OnlineSoftmaxOp> {
  using AttnOpLoweringPattern::AttnOpLoweringPattern;

  LogicalResult lower(OnlineSoftmaxOp op, OpAdaptor adaptor,
                      ConversionPatternRewriter &rewriter,
                      TileOpContext &ctx) const override {
    const FragmentLayout &layout = ctx.layout;
    FragType sType = op.getS().getType();
    FragType accType = op.getAcc().getType();
    FragType pType = op.getP().getType();
    Type dtype = pType.getElementType();
    int64_t rows = sType.getDimSize(0);
    int64_t mTiles = layout.mTiles(rows), nTiles = sType.getDimSize(1) / 8;
    int64_t accTiles = accType.getDimSize(1) / 8;

    Emitter &e = ctx.e;
    Value c = adaptor.getScaleLog2();
    Value negInf = e.f32(kNegInf);
    SmallVector<Value> s = e.unpack(adaptor.getS());
    SmallVector<Value> rowMax = e.unpack(adaptor.getRowMax());
    SmallVector<Value> rowSum = e.unpack(adaptor.getRowSum());
    SmallVector<Value> acc = e.unpack(adaptor.getAcc());

    for (int64_t i = 0; i < mTiles; ++i)
      for (int64_t h = 0; h < 2; ++h) {
        int64_t row = FragmentLayout::rowIndex(i, h);
        SmallVector<Value> rowScores;
        for (int64_t j = 0; j < nTiles; ++j)
          for (int64_t r = 2 * h; r < 2 * h + 2; ++r)
            rowScores.push_back(s[FragmentLayout::accIndex(i, j, r, nTiles)]);
        Value tileMax = treeReduce(rowScores, [&](Value a, Value b) {
          return e.fmax(a, b);
        });
        tileMax = e.fmax(tileMax, e.shflXor(tileMax, 1));
        tileMax = e.fmax(tileMax, e.shflXor(tileMax, 2));
        Value newMax = e.fmax(rowMax[row], tileMax);
        Value empty = e.fcmp(LLVM::FCmpPredicate::oeq, newMax, negInf);
        Value base = e.select(empty, e.f32(0.0f), newMax);
        Value alpha = e.exp2(e.fmul(e.fsub(rowMax[row], base), c));

        SmallVector<Value> probabilities;
        for (int64_t j = 0; j < nTiles; ++j)
          for (int64_t r = 2 * h; r < 2 * h + 2; ++r) {
            int64_t index = FragmentLayout::accIndex(i, j, r, nTiles);
            s[index] = e.exp2(e.fmul(e.fsub(s[index], base), c));
            probabilities.push_back(s[index]);
          }
        Value sum = treeReduce(probabilities,
                               [&](Value a, Value b) { return e.fadd(a, b); });
        rowSum[row] = e.fma(rowSum[row], alpha, sum);
        rowMax[row] = newMax;
        for (int64_t j = 0; j < accTiles; ++j)
          for (int64_t r = 2 * h; r < 2 * h + 2; ++r) {
            int64_t index = FragmentLayout::accIndex(i, j, r, accTiles);
            acc[index] = e.fmul(acc[index], alpha);
          }
      }

    // P as the A operand of the PV mma, with no shared-memory round trip.
    SmallVector<Value> p = packAccumulatorAsA(e, s, mTiles, nTiles, dtype);

    FragType rowType = op.getRowMax().getType();
    rewriter.replaceOp(op, {e.pack(layout.convertType(pType), p),
                            e.pack(layout.convertType(rowType), rowMax),
                            e.pack(layout.convertType(rowType), rowSum),
                            e.pack(layout.convertType(accType), acc)});
    return success();
  }
};

} // namespace

void lowering::populateSoftmaxPatterns(LLVMTypeConverter &converter,
                                     RewritePatternSet &patterns) {
  patterns.add<SplatLowering, MaskLowering, OnlineSoftmaxLowering>(converter);
}
