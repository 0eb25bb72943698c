//===- ElementwiseLowering.cpp - map, reduce_rows and convert -------------===//
//
// The tile language's math on register tiles. Every thread works on the
// elements FragmentLayout.h gives it; a rank-1 fragment's value of a row is
// held by every thread of the row's quad (and a column vector's value of a
// column by every thread holding the column), so broadcasting it is a
// register read and a row reduction ends with two shfl.bfly steps inside the quad.
//
//===----------------------------------------------------------------------===//

#include "HookEmitter.h"
#include "Patterns.h"
#include "TileOpContext.h"

#include "mlir/Conversion/LLVMCommon/Pattern.h"
#include "mlir/Conversion/LLVMCommon/TypeConverter.h"

using namespace mlir;
using namespace flashtile;
using namespace flashtile::attn;
using namespace flashtile::attn::lowering;

namespace {

/// The map's body once per element of the result, as straight-line code:
/// HookEmitter shares what the elements have in common (the column and row
/// bases, anything that depends on neither).
struct MapLowering : public AttnOpLoweringPattern<MapOp> {
  using AttnOpLoweringPattern::AttnOpLoweringPattern;

  LogicalResult lower(MapOp op, OpAdaptor adaptor,
                      ConversionPatternRewriter &rewriter,
                      TileOpContext &ctx) const override {
    const FragmentLayout &layout = ctx.layout;
    FragType result = op.getResult().getType();
    int64_t rows = result.getDimSize(0);
    int64_t cols = result.getRank() == 2 ? result.getDimSize(1) : 8;
    int64_t mTiles = layout.mTiles(rows), nTiles = cols / 8;
    Emitter &e = ctx.e;
    // Tile-local positions: block 0 of rows and of columns.
    ScoreTileCoords coords(ctx, rows, cols, e.i32(0), e.i32(0));

    // Each operand's values: a thread's elements, or the scalar.
    SmallVector<SmallVector<Value>> values;
    SmallVector<std::optional<FragLayout>> layouts;
    for (auto [operand, converted] :
         llvm::zip(op.getOperands(), adaptor.getOperands())) {
      auto frag = dyn_cast<FragType>(operand.getType());
      layouts.push_back(frag ? std::optional(frag.getLayout()) : std::nullopt);
      values.push_back(frag ? e.unpack(converted)
                            : SmallVector<Value>{converted});
    }
    auto operandValue = [&](size_t k, int64_t accIndex, int64_t rowIndex,
                            int64_t colIndex) {
      if (!layouts[k])
        return values[k].front();
      switch (*layouts[k]) {
      case FragLayout::Rows:
        return values[k][rowIndex];
      case FragLayout::Cols:
        return values[k][colIndex];
      default:
        return values[k][accIndex];
      }
    };

    HookEmitter hooks(e, op);
    SmallVector<Value> out(layout.numValues(result));
    size_t numOperands = op.getNumOperands();
    for (int64_t i = 0; i < mTiles; ++i)
      for (int64_t j = 0; j < (result.getRank() == 2 ? nTiles : 1); ++j)
        for (int64_t r = 0; r < 4; ++r) {
          // A rank-1 result has one element per (m-tile, half): r = 0, 2.
          if (result.getRank() == 1 && r % 2)
            continue;
          int64_t accIndex = FragmentLayout::accIndex(i, j, r, nTiles);
          int64_t rowIndex = FragmentLayout::rowIndex(i, r / 2);
          int64_t colIndex = FragmentLayout::colIndex(j, r);
          SmallVector<Value> args;
          SmallVector<int64_t> offsets(numOperands, 0);
          for (size_t k = 0; k < numOperands; ++k)
            args.push_back(operandValue(k, accIndex, rowIndex, colIndex));
          auto [row, rowOffset] = coords.rowParts(i, r);
          args.push_back(row);
          offsets.push_back(rowOffset);
          if (result.getRank() == 2) {
            auto [col, colOffset] = coords.colParts(j, r);
            args.push_back(col);
            offsets.push_back(colOffset);
          }
          out[result.getRank() == 2 ? accIndex : rowIndex] =
              hooks.emit(op.getBody(), args, offsets);
        }
    rewriter.replaceOp(op, e.pack(layout.convertType(result), out));
    return success();
  }
};

/// Each thread reduces its elements of a row, then the quad combines its
/// four partials with two butterfly shuffles, so every thread of the quad
/// holds the row's value.
struct ReduceRowsLowering : public AttnOpLoweringPattern<ReduceRowsOp> {
  using AttnOpLoweringPattern::AttnOpLoweringPattern;

  LogicalResult lower(ReduceRowsOp op, OpAdaptor adaptor,
                      ConversionPatternRewriter &rewriter,
                      TileOpContext &ctx) const override {
    const FragmentLayout &layout = ctx.layout;
    FragType source = op.getSource().getType();
    int64_t rows = source.getDimSize(0);
    int64_t mTiles = layout.mTiles(rows), nTiles = source.getDimSize(1) / 8;
    Emitter &e = ctx.e;
    bool isMax = op.getKind() == "max";
    auto combine = [&](Value a, Value b) {
      return isMax ? e.fmax(a, b) : e.fadd(a, b);
    };
    SmallVector<Value> s = e.unpack(adaptor.getSource());
    FragType result = op.getResult().getType();
    SmallVector<Value> out(layout.numValues(result));
    for (int64_t i = 0; i < mTiles; ++i)
      for (int64_t h = 0; h < 2; ++h) {
        SmallVector<Value> row;
        for (int64_t j = 0; j < nTiles; ++j)
          for (int64_t r = 2 * h; r < 2 * h + 2; ++r)
            row.push_back(s[FragmentLayout::accIndex(i, j, r, nTiles)]);
        Value value = treeReduce(row, combine);
        value = combine(value, e.shflXor(value, 1));
        value = combine(value, e.shflXor(value, 2));
        out[FragmentLayout::rowIndex(i, h)] = value;
      }
    rewriter.replaceOp(op, e.pack(layout.convertType(result), out));
    return success();
  }
};

/// Accumulator layout to A-operand layout: a repacking of registers.
struct ConvertLowering : public AttnOpLoweringPattern<ConvertOp> {
  using AttnOpLoweringPattern::AttnOpLoweringPattern;

  LogicalResult lower(ConvertOp op, OpAdaptor adaptor,
                      ConversionPatternRewriter &rewriter,
                      TileOpContext &ctx) const override {
    const FragmentLayout &layout = ctx.layout;
    FragType source = op.getSource().getType();
    FragType result = op.getResult().getType();
    int64_t mTiles = layout.mTiles(source.getDimSize(0));
    int64_t nTiles = source.getDimSize(1) / 8;
    SmallVector<Value> a =
        packAccumulatorAsA(ctx.e, ctx.e.unpack(adaptor.getSource()), mTiles,
                           nTiles, result.getElementType());
    rewriter.replaceOp(op, ctx.e.pack(layout.convertType(result), a));
    return success();
  }
};

} // namespace

void lowering::populateElementwisePatterns(LLVMTypeConverter &converter,
                                           RewritePatternSet &patterns) {
  patterns.add<MapLowering, ReduceRowsLowering, ConvertLowering>(converter);
}
