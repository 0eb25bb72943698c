//===- TileBuilder.cpp - The tile language's builder ----------------------===//

#include "flashtile/Dialect/Attn/IR/TileBuilder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;
using namespace flashtile;
using namespace flashtile::attn;

Location TileBuilder::at(const char *file, unsigned line) {
  return callerLocations ? getCallerLocation(file, line, loc) : loc;
}

Type TileBuilder::getElementType() {
  return cast<MemRefType>(kernel.getQ().getType()).getElementType();
}

TileBuilder::Block TileBuilder::blockContext(const char *file, unsigned line) {
  Location here = at(file, line);
  Type idx = b.getIndexType();
  auto ctx = BlockContextOp::create(b, here, idx, idx, idx, idx, idx, idx,
                                    kernel.getQ(), kernel.getK());
  return {ctx.getMBlock(), ctx.getHead(),    ctx.getKvHead(),
          ctx.getBatch(),  ctx.getSeqlenQ(), ctx.getSeqlenK()};
}

TileBuilder::TileRange TileBuilder::kvBounds(const Block &block, int64_t tileM,
                                             int64_t tileN, int64_t windowLeft,
                                             int64_t windowRight,
                                             const char *file, unsigned line) {
  Location here = at(file, line);
  Type idx = b.getIndexType();
  auto bounds = KVBoundsOp::create(b, here, idx, idx, idx, idx, block.mBlock,
                                   block.seqlenQ, block.seqlenK, tileM, tileN,
                                   windowLeft, windowRight);
  return {bounds.getBegin(), bounds.getUnmaskedBegin(), bounds.getUnmaskedEnd(),
          bounds.getEnd()};
}

TileBuilder::TileRange TileBuilder::kvSplit(const TileRange &range,
                                            const char *file, unsigned line) {
  Location here = at(file, line);
  Type idx = b.getIndexType();
  auto split =
      KVSplitOp::create(b, here, idx, idx, idx, idx, range.begin,
                        range.unmaskedBegin, range.unmaskedEnd, range.end);
  return {split.getSplitBegin(), split.getSplitUnmaskedBegin(),
          split.getSplitUnmaskedEnd(), split.getSplitEnd()};
}

Value TileBuilder::softmaxScale(float defaultValue, const char *file,
                                unsigned line) {
  Location here = at(file, line);
  return SoftmaxScaleOp::create(b, here, b.getF32Type(),
                                b.getF32FloatAttr(defaultValue));
}

Value TileBuilder::softmaxScale(const char *file, unsigned line) {
  return softmaxScale(
      getDefaultSoftmaxScale(
          cast<MemRefType>(kernel.getQ().getType()).getDimSize(3)),
      file, line);
}

Value TileBuilder::index(int64_t value, const char *file, unsigned line) {
  Location here = at(file, line);
  return arith::ConstantIndexOp::create(b, here, value);
}

Value TileBuilder::f32(float value, const char *file, unsigned line) {
  Location here = at(file, line);
  return arith::ConstantOp::create(b, here, b.getF32FloatAttr(value));
}

Value TileBuilder::minus(Value tile, int64_t back, const char *file,
                         unsigned line) {
  Location here = at(file, line);
  if (back == 0)
    return tile;
  Value amount = index(back, file, line);
  return arith::SubIOp::create(b, here, tile, amount);
}

Value TileBuilder::buffer(StringRef name, int64_t slots, int64_t rows,
                          int64_t cols, Type elementType, const char *file,
                          unsigned line) {
  Location here = at(file, line);
  if (!elementType)
    elementType = getElementType();
  auto type = MemRefType::get({slots, rows, cols}, elementType,
                              MemRefLayoutAttrInterface(),
                              b.getI64IntegerAttr(kSharedMemorySpace));
  return SmemAllocOp::create(b, here, type, b.getStringAttr(name),
                             IntegerAttr())
      .getBuffer();
}

void TileBuilder::copy(Value src, Value batch, Value tile, Value head,
                       Value dst, Value pages, Value limit, bool packed,
                       Value slot, const char *file, unsigned line) {
  Location here = at(file, line);
  CopyAsyncOp::create(b, here, src, batch, tile, head, dst, pages, limit,
                      slot, packed);
}

Value TileBuilder::load(Value src, const char *file, unsigned line) {
  Location here = at(file, line);
  auto type = cast<MemRefType>(src.getType());
  return LoadFragOp::create(
      b, here,
      FragType::get(b.getContext(), {type.getDimSize(1), type.getDimSize(2)},
                    type.getElementType()),
      src);
}

Value TileBuilder::splat(ArrayRef<int64_t> shape, Type elementType, float value,
                         const char *file, unsigned line) {
  Location here = at(file, line);
  return SplatOp::create(b, here,
                         FragType::get(b.getContext(), shape, elementType),
                         b.getF32FloatAttr(value));
}

Value TileBuilder::mma(Value a, Value bBuffer, Value bTile, Value acc,
                       const MmaOptions &options, const char *file,
                       unsigned line) {
  Location here = at(file, line);
  auto bType = cast<MemRefType>(bBuffer.getType());
  ConfigAttr config = kernel.getConfigAttr();
  std::array<int64_t, 3> mkn = MmaOp::getProductShape(
      a.getType(), bType, options.transposeA, options.transposeB,
      config ? config.getKvWarps() : 1, options.splitN);
  Type accType = options.accType;
  if (acc)
    accType = cast<FragType>(acc.getType()).getElementType();
  if (!accType)
    accType = bType.getElementType().isInteger(8) ? Type(b.getI32Type())
                                                  : Type(b.getF32Type());
  int64_t columns = (options.nEnd ? options.nEnd : mkn[2]) - options.nBegin;
  auto type =
      FragType::get(b.getContext(), {mkn[0], columns}, accType, FragLayout::Acc);
  return MmaOp::create(b, here, type, a, options.aTile, bBuffer, bTile, acc,
                       options.transposeA, options.transposeB, options.splitN,
                       options.kBegin, options.kEnd, options.nBegin,
                       options.nEnd);
}

Value TileBuilder::dot(Value q, Value k, Value tile, int64_t headBegin,
                       int64_t headEnd, const char *file, unsigned line) {
  MmaOptions options;
  options.transposeB = true;
  options.kBegin = headBegin;
  options.kEnd = headEnd;
  return mma(q, k, tile, /*acc=*/Value(), options, file, line);
}

Value TileBuilder::dotAccumulate(Value p, Value v, Value tile, Value acc,
                                 const char *file, unsigned line) {
  // An f32 P (a map's result) becomes the mma's A operand here: the
  // program need not state the layout change.
  Type vElement = cast<MemRefType>(v.getType()).getElementType();
  if (auto frag = dyn_cast<FragType>(p.getType());
      frag && frag.getElementType().isF32())
    p = convert(p, vElement, file, line);
  return mma(p, v, tile, acc, MmaOptions(), file, line);
}

/// A block of a map's / for_each's arguments: one per operand, then the
/// row and, for rank 2, the column.
static mlir::Block *createElementwiseBody(OpBuilder &b, Region &region,
                                          ValueRange operands, size_t coords,
                                          Location here) {
  mlir::Block *body = new mlir::Block();
  region.push_back(body);
  for (Value operand : operands) {
    Type t = operand.getType();
    body->addArgument(isa<FragType>(t) ? cast<FragType>(t).getElementType() : t,
                      here);
  }
  for (size_t c = 0; c < coords; ++c)
    body->addArgument(b.getIndexType(), here);
  return body;
}

MapOp TileBuilder::createMap(ValueRange operands, const char *file,
                             unsigned line) {
  Location here = at(file, line);
  SmallVector<int64_t> shape = getElementwiseShape(operands);
  auto type = FragType::get(b.getContext(), shape, b.getF32Type());
  auto map = MapOp::create(b, here, type, operands);
  createElementwiseBody(b, map.getBody(), operands, shape.size(), here);
  return map;
}

void TileBuilder::forEach(ValueRange operands, const ForEachBody &body,
                          const char *file, unsigned line) {
  Location here = at(file, line);
  auto forEach = ForEachOp::create(b, here, operands);
  mlir::Block *block =
      createElementwiseBody(b, forEach.getBody(), operands,
                            getElementwiseShape(operands).size(), here);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(block);
  body(b, here, block->getArguments());
  YieldOp::create(b, here, ValueRange{});
}

Value TileBuilder::map(ValueRange operands, const MapBody &body,
                       const char *file, unsigned line) {
  Location here = at(file, line);
  MapOp map = createMap(operands, file, line);
  OpBuilder::InsertionGuard guard(b);
  mlir::Block &block = map.getBody().front();
  b.setInsertionPointToStart(&block);
  Value result = body(b, here, block.getArguments());
  YieldOp::create(b, here, ValueRange{result});
  return map.getResult();
}

Value TileBuilder::reduceRows(Value source, StringRef kind, const char *file,
                              unsigned line) {
  Location here = at(file, line);
  auto type = cast<FragType>(source.getType());
  return ReduceRowsOp::create(b, here,
                              FragType::get(b.getContext(),
                                            {type.getDimSize(0)},
                                            type.getElementType()),
                              source, b.getStringAttr(kind));
}

Value TileBuilder::convert(Value source, Type elementType, const char *file,
                           unsigned line) {
  Location here = at(file, line);
  auto type = cast<FragType>(source.getType());
  return ConvertOp::create(
      b, here, FragType::get(b.getContext(), type.getShape(), elementType),
      source);
}

Value TileBuilder::mask(Value s, const Block &block, Value nBlock,
                        int64_t windowLeft, int64_t windowRight,
                        const char *file, unsigned line) {
  Location here = at(file, line);
  return MaskOp::create(b, here, s.getType(), s, block.mBlock, nBlock,
                        block.seqlenQ, block.seqlenK, windowLeft, windowRight);
}

ModifyScoresOp TileBuilder::modifyScores(Value s, const Block &block,
                                         Value nBlock, Value scale,
                                         const char *file, unsigned line) {
  Location here = at(file, line);
  return ModifyScoresOp::create(b, here, s.getType(), s, block.mBlock, nBlock,
                                block.batch, block.head, block.seqlenQ,
                                block.seqlenK, scale);
}

OnlineSoftmaxOp TileBuilder::onlineSoftmax(Value s, Value rowMax, Value rowSum,
                                           Value acc, Value scaleLog2,
                                           Type pElementType, const char *file,
                                           unsigned line) {
  Location here = at(file, line);
  auto sType = cast<FragType>(s.getType());
  auto pType = FragType::get(b.getContext(), sType.getShape(), pElementType);
  return OnlineSoftmaxOp::create(b, here, pType, rowMax.getType(),
                                 rowSum.getType(), acc.getType(), s, rowMax,
                                 rowSum, acc, scaleLog2);
}

KeyRangeOp TileBuilder::keyRange(const Block &block, const TileRange &within,
                                 int64_t tileM, int64_t tileN, const char *file,
                                 unsigned line) {
  Location here = at(file, line);
  Type idx = b.getIndexType();
  return KeyRangeOp::create(b, here, idx, idx, idx, idx, idx, block.mBlock,
                            block.batch, block.head, block.seqlenQ,
                            block.seqlenK, within.begin, within.unmaskedBegin,
                            within.unmaskedEnd, within.end, tileM, tileN,
                            /*exact=*/false, /*scan_rows=*/false);
}

BlockRangesOp TileBuilder::blockRanges(const Block &block,
                                       const TileRange &within, int64_t tileM,
                                       int64_t tileN, bool perHead,
                                       bool keyGrid, const char *file,
                                       unsigned line) {
  Location here = at(file, line);
  Type idx = b.getIndexType();
  return BlockRangesOp::create(
      b, here, idx, idx, idx, idx, block.mBlock, block.batch, block.head,
      block.seqlenQ, within.begin, within.unmaskedBegin, within.unmaskedEnd,
      within.end, tileM, tileN, perHead, keyGrid);
}

QueryRangeOp TileBuilder::queryRange(const Block &block, Value head,
                                     Value group, const TileRange &within,
                                     int64_t tileM, int64_t tileN,
                                     ValueRange tables, bool exact,
                                     const char *file, unsigned line) {
  Location here = at(file, line);
  Type idx = b.getIndexType();
  return QueryRangeOp::create(
      b, here, idx, idx, idx, idx, block.mBlock, block.batch, head, group,
      block.seqlenQ, block.seqlenK, within.begin, within.unmaskedBegin,
      within.unmaskedEnd, within.end, tables, tileM, tileN, exact);
}

ValueRange TileBuilder::loop(Value lower, Value upper, ValueRange inits,
                             bool masked, const LoopBody &body,
                             const char *file, unsigned line) {
  Location here = at(file, line);
  auto loop = KVLoopOp::create(b, here, lower, upper, inits, masked);
  OpBuilder::InsertionGuard guard(b);
  mlir::Block &block = loop.getBody().front();
  b.setInsertionPointToStart(&block);
  SmallVector<Value> yields =
      body(block.getArgument(0), block.getArguments().drop_front());
  YieldOp::create(b, here, yields);
  return loop.getResults();
}

void TileBuilder::store(Value acc, Value stage, const Block &block,
                        Value lseValues, const char *file, unsigned line) {
  Location here = at(file, line);
  StoreOp::create(b, here, acc, stage, kernel.getO(), block.batch, block.mBlock,
                  block.head, kernel.getLse(), lseValues);
}

void TileBuilder::storeTile(Value value, Value dst, ValueRange indices,
                            bool accumulate, const char *file, unsigned line) {
  TensorAttr decl = kernel.getTensorDecl(dst);
  StoreTileOp::create(b, at(file, line), value, dst, indices, accumulate,
                      decl && decl.hasCTiles());
}

Value TileBuilder::loadTile(Value src, ValueRange indices, int64_t rows,
                            int64_t cols, const char *file, unsigned line) {
  Type element = cast<MemRefType>(src.getType()).getElementType();
  // A 16-bit float tensor widens into an f32 tile.
  if (element.isF16() || element.isBF16())
    element = b.getF32Type();
  auto type = FragType::get(b.getContext(), {rows, cols}, element);
  TensorAttr decl = kernel.getTensorDecl(src);
  return LoadTileOp::create(b, at(file, line), type, src, indices,
                            decl && decl.hasCTiles());
}

Value TileBuilder::loadVector(Value src, ValueRange indices, int64_t size,
                              FragLayout layout, const char *file,
                              unsigned line) {
  auto type = FragType::get(b.getContext(), {size}, b.getF32Type(), layout);
  return LoadTileOp::create(b, at(file, line), type, src, indices);
}

void TileBuilder::storeFrag(Value value, Value dst, const char *file,
                            unsigned line) {
  StoreFragOp::create(b, at(file, line), value, dst);
}

EpilogueOp TileBuilder::epilogue(Value acc, Value rowMax, Value rowSum,
                                 Value stage, const Block &block,
                                 Value softmaxScale, Value merge,
                                 const char *file, unsigned line) {
  Location here = at(file, line);
  return EpilogueOp::create(b, here, acc, rowMax, rowSum, stage, kernel.getO(),
                            block.batch, block.mBlock, block.head,
                            kernel.getLse(), softmaxScale, merge);
}
