//===- ElementwiseLowering.cpp - map, for_each, reduce_rows, convert ------===//
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

/// One element of an attn.map / attn.for_each a thread holds: its
/// operands' values, then its row and column (each a per-thread base plus
/// the compile-time `offsets`), and where it sits in the result.
struct Element {
  SmallVector<Value> args;
  SmallVector<int64_t> offsets;
  int64_t accIndex, rowIndex;
};

/// Calls `emit` on every element of shape `rows` x `cols` (rank 2) or
/// `rows` (rank 1) that the thread holds, in FragmentLayout's order.
void forEachElement(TileOpContext &ctx, ValueRange operands,
                    ValueRange converted, int64_t rank, int64_t rows,
                    int64_t cols, function_ref<void(const Element &)> emit) {
  const FragmentLayout &layout = ctx.layout;
  int64_t mTiles = layout.mTiles(rows), nTiles = cols / 8;
  Emitter &e = ctx.e;
  // Tile-local positions: block 0 of rows and of columns.
  ScoreTileCoords coords(ctx, rows, cols, e.i32(0), e.i32(0));

  // Each operand's values: a thread's elements, or the scalar.
  SmallVector<SmallVector<Value>> values;
  SmallVector<std::optional<FragLayout>> layouts;
  for (auto [operand, value] : llvm::zip(operands, converted)) {
    auto frag = dyn_cast<FragType>(operand.getType());
    layouts.push_back(frag ? std::optional(frag.getLayout()) : std::nullopt);
    values.push_back(frag ? e.unpack(value) : SmallVector<Value>{value});
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
  for (int64_t i = 0; i < mTiles; ++i)
    for (int64_t j = 0; j < (rank == 2 ? nTiles : 1); ++j)
      for (int64_t r = 0; r < 4; ++r) {
        // A rank-1 shape has one element per (m-tile, half): r = 0, 2.
        if (rank == 1 && r % 2)
          continue;
        Element element;
        element.accIndex = FragmentLayout::accIndex(i, j, r, nTiles);
        element.rowIndex = FragmentLayout::rowIndex(i, r / 2);
        int64_t colIndex = FragmentLayout::colIndex(j, r);
        for (size_t k = 0; k < operands.size(); ++k)
          element.args.push_back(
              operandValue(k, element.accIndex, element.rowIndex, colIndex));
        element.offsets.assign(operands.size(), 0);
        auto [row, rowOffset] = coords.rowParts(i, r);
        element.args.push_back(row);
        element.offsets.push_back(rowOffset);
        if (rank == 2) {
          auto [col, colOffset] = coords.colParts(j, r);
          element.args.push_back(col);
          element.offsets.push_back(colOffset);
        }
        emit(element);
      }
}

/// The map's body once per element of the result, as straight-line code:
/// HookEmitter shares what the elements have in common (the column and row
/// bases, anything that depends on neither).
struct MapLowering : public AttnOpLoweringPattern<MapOp> {
  using AttnOpLoweringPattern::AttnOpLoweringPattern;

  LogicalResult lower(MapOp op, OpAdaptor adaptor,
                      ConversionPatternRewriter &rewriter,
                      TileOpContext &ctx) const override {
    FragType result = op.getResult().getType();
    int64_t rank = result.getRank();
    int64_t rows = result.getDimSize(0);
    int64_t cols = rank == 2 ? result.getDimSize(1) : 8;
    Emitter &e = ctx.e;
    HookEmitter hooks(e, op);
    SmallVector<Value> out(ctx.layout.numValues(result));
    forEachElement(ctx, op.getOperands(), adaptor.getOperands(), rank, rows,
                   cols, [&](const Element &element) {
      out[rank == 2 ? element.accIndex : element.rowIndex] =
          hooks.emit(op.getBody(), element.args, element.offsets);
    });
    rewriter.replaceOp(op, e.pack(ctx.layout.convertType(result), out));
    return success();
  }
};

/// The values of a for_each body that differ between elements: those
/// computed from its fragment operands or from the element's row and
/// column. The rest comes from scalar operands alone, the same in every
/// thread of the block.
llvm::DenseSet<Value> elementVarying(ForEachOp op) {
  Block &body = op.getBody().front();
  llvm::DenseSet<Value> varying;
  for (auto [i, operand] : llvm::enumerate(op.getOperands()))
    if (isa<FragType>(operand.getType()))
      varying.insert(body.getArgument(i));
  for (BlockArgument arg : body.getArguments().drop_front(op.getNumOperands()))
    varying.insert(arg);
  for (Operation &inner : body)
    if (llvm::any_of(inner.getOperands(),
                     [&](Value v) { return varying.contains(v); }))
      varying.insert(inner.result_begin(), inner.result_end());
  return varying;
}

/// The body once per element, for its atomic adds. An add whose indices
/// vary between elements is one f32 atomic per element. One whose indices
/// do not (they come from scalar operands: the same address in every
/// thread) is summed over the thread's elements, then over the warp by
/// butterfly shuffles, and lane 0 adds the sum: one atomic per warp.
struct ForEachLowering : public AttnOpLoweringPattern<ForEachOp> {
  using AttnOpLoweringPattern::AttnOpLoweringPattern;

  LogicalResult lower(ForEachOp op, OpAdaptor adaptor,
                      ConversionPatternRewriter &rewriter,
                      TileOpContext &ctx) const override {
    // Rank 2: the verifier refuses rows vectors (held four times over).
    SmallVector<int64_t> shape = getElementwiseShape(op.getOperands());
    assert(shape.size() == 2 && "for_each has a rank-2 operand");
    Emitter &e = ctx.e;
    llvm::DenseSet<Value> varying = elementVarying(op);
    // Per uniform add, in the body's order: its address and running sum.
    SmallVector<Operation *> uniform;
    llvm::DenseMap<Operation *, std::pair<Value, Value>> sums;
    for (auto add : op.getBody().front().getOps<memref::AtomicRMWOp>())
      if (llvm::none_of(add.getIndices(),
                        [&](Value v) { return varying.contains(v); }))
        uniform.push_back(add);
    HookEmitter hooks(e, op);
    hooks.onAccumulate = [&](Operation *add, Value address, Value value) {
      if (!llvm::is_contained(uniform, add))
        return hooks.atomicAdd(address, value);
      auto &[at, sum] = sums[add];
      at = address;
      sum = sum ? e.fadd(sum, value) : value;
    };
    forEachElement(ctx, op.getOperands(), adaptor.getOperands(), 2, shape[0],
                   shape[1], [&](const Element &element) {
      hooks.emitAll(op.getBody(), element.args, element.offsets);
    });
    if (!uniform.empty()) {
      ThreadCoords thread = ThreadCoords::get(e);
      Value first = e.cmp(LLVM::ICmpPredicate::eq, thread.lane, e.i32(0));
      for (Operation *add : uniform) {
        auto [address, sum] = sums.lookup(add);
        warpAllReduce(e, sum,
                      [&](size_t, Value a, Value b) { return e.fadd(a, b); });
        emitIf(rewriter, op.getLoc(), first,
               [&] { hooks.atomicAdd(address, sum); });
      }
    }
    rewriter.eraseOp(op);
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
  patterns.add<MapLowering, ForEachLowering, ReduceRowsLowering,
               ConvertLowering>(converter);
}
