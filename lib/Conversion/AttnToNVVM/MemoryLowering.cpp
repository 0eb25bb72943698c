//===- MemoryLowering.cpp - Shared buffers, async copies, barriers --------===//

#include "GlobalAccess.h"
#include "Patterns.h"
#include "SharedAccess.h"
#include "TileOpContext.h"

#include "flashtile/Dialect/Attn/Utils/MmaFragments.h"
#include "flashtile/Target/Arch.h"

#include "mlir/Conversion/LLVMCommon/MemRefBuilder.h"
#include "mlir/Conversion/LLVMCommon/Pattern.h"
#include "mlir/Conversion/LLVMCommon/TypeConverter.h"

#include <cstdint>
#include <limits>

using namespace mlir;
using namespace flashtile;
using namespace flashtile::attn;
using namespace flashtile::attn::lowering;

/// One 16-byte cp.async.cg chunk from global `from` to shared `to`, of
/// which the first `bytes` are read and the rest zero-filled.
static void emitCopyChunk(RewriterBase &rewriter, Location loc, Value to,
                          Value from, Value bytes) {
  NVVM::CpAsyncOp::create(
      rewriter, loc, to, from, rewriter.getI32IntegerAttr(kCopyChunkBytes),
      NVVM::LoadCacheModifierKindAttr::get(rewriter.getContext(),
                                           NVVM::LoadCacheModifierKind::CG),
      bytes);
}

/// `body` for this thread's chunk of `step` of `walk`: under a branch when
/// some threads have none in that step.
static void emitStep(RewriterBase &rewriter, Location loc, TileChunkWalk &walk,
                     int64_t step, llvm::function_ref<void()> body) {
  if (walk.isPartial(step))
    emitIf(rewriter, loc, walk.isActive(step), body);
  else
    body();
}

namespace {

/// A buffer is the dynamic shared memory plus its allocated offset.
struct SmemAllocLowering : public ConvertOpToLLVMPattern<SmemAllocOp> {
  using ConvertOpToLLVMPattern::ConvertOpToLLVMPattern;

  LogicalResult
  matchAndRewrite(SmemAllocOp op, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    std::optional<int64_t> offset = op.getOffset();
    if (!offset)
      return rewriter.notifyMatchFailure(op, "buffer has no offset");
    Emitter e(rewriter, op.getLoc());
    Value base = getSmemBase(e, op);
    rewriter.replaceOp(op, e.gep(base, e.i32(*offset)));
    return success();
  }
};

/// One tile of rows into a buffer slot, as 16-byte cp.async.cg chunks spread
/// over the block's threads. Rows at or past the sequence end (or the
/// `limit`), and every row of a negative tile, copy 0 bytes, which
/// zero-fills the chunk. The op
/// commits exactly one group, as attn.async_wait counts them.
struct CopyAsyncLowering : public AttnOpLoweringPattern<CopyAsyncOp> {
  using AttnOpLoweringPattern::AttnOpLoweringPattern;

  LogicalResult lower(CopyAsyncOp op, OpAdaptor adaptor,
                      ConversionPatternRewriter &rewriter,
                      TileOpContext &ctx) const override {
    Location loc = op.getLoc();
    MemRefType dstType = op.getDst().getType();
    int64_t rows = dstType.getDimSize(1), cols = dstType.getDimSize(2);
    // Buffer rows are padded (getPaddedHeadDim): chunks past the source row
    // read nothing and zero-fill, so the pad contributes 0 to every mma.
    int64_t srcCols = op.getSrc().getType().getDimSize(3);
    int64_t srcChunks =
        srcCols * dstType.getElementTypeBitWidth() / (8 * kCopyChunkBytes);
    int64_t threads = ctx.threads();

    Emitter &e = ctx.e;
    Value tile = adaptor.getTile();
    // No branch around the copy: a negative tile zero-fills the slot it maps
    // to, which the pipeline only ever refills once it is free, so the KV
    // loop body stays one basic block that ptxas can schedule as a whole.
    ThreadCoords &thread = ctx.thread();
    Value slotBase = getSlotAddress(
        e, adaptor.getDst(), dstType,
        adaptor.getSlot() ? adaptor.getSlot() : adaptor.getTile());
    std::optional<TensorRows> source;
    if (op.getPages())
      source.emplace(e, adaptor.getSrc(), adaptor.getBatch(),
                     adaptor.getHead(), op);
    else
      source.emplace(e, adaptor.getSrc(), adaptor.getBatch(),
                     adaptor.getHead(), op.getPacked() ? &ctx : nullptr);
    TensorRows &src = *source;
    // Rows past the key range's end are zero-filled like rows past the
    // sequence: the mask drops them for every row of the block, and zeros
    // keep a stale row's NaN out of P V.
    // A limit only ever narrows the sequence (a negative one copies
    // nothing), whatever IR gave it.
    Value rowLimit = src.seqlen();
    if (Value limit = adaptor.getLimit())
      rowLimit = LLVM::UMinOp::create(rewriter, loc,
                                      e.smax(limit, e.i32(0)), rowLimit);
    Value firstRow = e.mul(tile, rows);
    TileChunkWalk walk(e, thread.tid, threads, rows, cols);
    // Paged rows: the threads of a row (one per chunk) share its page
    // lookup. When a warp's rows of the whole tile fit in its lanes, lane l
    // looks up the warp's l-th row once, and each step takes its row's
    // offset by a shuffle; otherwise every row divides and loads itself.
    int64_t chunksPerRow = cols / 8, rowsPerStep = walk.getRowsPerStep();
    int64_t warpRowsPerStep =
        chunksPerRow <= kWarpSize && kWarpSize % chunksPerRow == 0
            ? kWarpSize / chunksPerRow
            : 0;
    bool sharedLookup = src.isPaged() && rowsPerStep && warpRowsPerStep &&
                        walk.numSteps() * warpRowsPerStep <= kWarpSize;
    Value laneRowOffset, rowLane;
    if (sharedLookup) {
      Value lane = thread.lane;
      Value warp = e.udiv(thread.tid, kWarpSize);
      // Thread t's row in step s is s * rowsPerStep + t / chunksPerRow, so
      // warp w's are s * rowsPerStep + w * warpRowsPerStep + [0,
      // warpRowsPerStep).
      Value laneRow = e.add(
          e.add(firstRow, e.mul(e.udiv(lane, warpRowsPerStep), rowsPerStep)),
          e.add(e.mul(warp, warpRowsPerStep), e.urem(lane, warpRowsPerStep)));
      laneRowOffset = src.pagedRowOffset(laneRow);
      rowLane = e.udiv(lane, chunksPerRow);
    }
    for (int64_t step = 0; step < walk.numSteps(); ++step) {
      // Every lane takes part in the shuffles, before any partial step's
      // branch.
      Value rowOffset;
      if (sharedLookup) {
        Value from = e.add(rowLane, step * warpRowsPerStep);
        Type i64 = rewriter.getI64Type(), i32 = rewriter.getI32Type();
        Value lo = e.shflIdx(LLVM::TruncOp::create(rewriter, loc, i32,
                                                   laneRowOffset),
                             from);
        Value hi = e.shflIdx(
            LLVM::TruncOp::create(
                rewriter, loc, i32,
                LLVM::LShrOp::create(rewriter, loc, laneRowOffset,
                                     e.i64(32))),
            from);
        rowOffset = LLVM::OrOp::create(
            rewriter, loc, LLVM::ZExtOp::create(rewriter, loc, i64, lo),
            LLVM::ShlOp::create(rewriter, loc,
                                LLVM::ZExtOp::create(rewriter, loc, i64, hi),
                                e.i64(32)));
      }
      auto copyChunk = [&] {
        Value globalRow = e.add(firstRow, walk.row(step));
        // Unsigned: rows of negative tiles are out of range too.
        Value inRange =
            e.cmp(LLVM::ICmpPredicate::ult, globalRow, rowLimit);
        if (srcCols < cols)
          inRange = LLVM::AndOp::create(
              rewriter, loc, inRange,
              e.slt(walk.chunk(step), e.i32(srcChunks)));
        // Out-of-range rows read nothing, but keep the address valid (paged
        // offsets always are).
        // (One value per statement: the order of the emitted ops must not
        // depend on the C++ compiler's argument evaluation order.)
        Value from;
        if (rowOffset) {
          from = src.chunkAddressAt(rowOffset, walk.chunk(step));
        } else {
          Value safeRow = e.select(inRange, globalRow, e.i32(0));
          from = src.chunkAddress(safeRow, walk.chunk(step));
        }
        Value to = e.gep(slotBase, walk.smemOffset(step));
        Value bytes = e.select(inRange, e.i32(kCopyChunkBytes), e.i32(0));
        emitCopyChunk(rewriter, loc, to, from, bytes);
      };
      emitStep(rewriter, loc, walk, step, copyChunk);
    }
    NVVM::CpAsyncCommitGroupOp::create(rewriter, loc);
    rewriter.eraseOp(op);
    return success();
  }
};

/// What a tile access (attn.copy_tile, attn.store_tile, attn.load_tile) reaches
/// of a tensor, from its descriptor: the element offset of the fixed
/// indices (batch, head), the extents and strides of the rows and (for a
/// tile with columns) the columns, and the data pointer.
struct TensorTileView {
  mlir::Value offset, rowExtent, rowStride, colExtent, colStride, base;

  TensorTileView(Emitter &e, RewriterBase &rewriter, Location loc,
                 Value descriptor, ValueRange indices, int64_t rowDim,
                 std::optional<int64_t> colDim) {
    MemRefDescriptor desc(descriptor);
    offset = e.i64(0);
    for (auto [d, index] : llvm::enumerate(indices))
      if (static_cast<int64_t>(d) != rowDim &&
          static_cast<int64_t>(d) != colDim)
        offset = e.add64(offset, e.mul64(e.sext64(index),
                                         desc.stride(rewriter, loc, d)));
    rowExtent = desc.size(rewriter, loc, rowDim);
    rowStride = desc.stride(rewriter, loc, rowDim);
    if (colDim) {
      colExtent = desc.size(rewriter, loc, *colDim);
      colStride = desc.stride(rewriter, loc, *colDim);
    }
    base = desc.alignedPtr(rewriter, loc);
  }
};

/// A tile of a tensor of the kernel into a buffer slot: one 16-byte cp.async.cg
/// per chunk, spread over the block's threads like attn.copy_async's. A
/// chunk copies the bytes of its row that lie inside the tensor (cp.async's
/// source size) and zero-fills the rest; rows past the end copy nothing.
struct CopyTileLowering : public AttnOpLoweringPattern<CopyTileOp> {
  using AttnOpLoweringPattern::AttnOpLoweringPattern;

  LogicalResult lower(CopyTileOp op, OpAdaptor adaptor,
                      ConversionPatternRewriter &rewriter,
                      TileOpContext &ctx) const override {
    Location loc = op.getLoc();
    MemRefType dstType = op.getDst().getType();
    int64_t elementBytes = dstType.getElementTypeBitWidth() / 8;
    int64_t chunkElements = kCopyChunkBytes / elementBytes;
    Emitter &e = ctx.e;
    ThreadCoords &thread = ctx.thread();
    // The source's view: its base moved by the fixed indices (batch,
    // head), the extents and the row stride; columns are contiguous (the
    // verifier and the plan hold them to it).
    int64_t rowDim = op.getRowDim(), colDim = op.getColDim();
    TensorTileView src(e, rewriter, loc, adaptor.getSrc(),
                       adaptor.getIndices(), rowDim, colDim);
    Value base = e.gep(src.base, e.mul64(src.offset, e.i64(elementBytes)));
    Value rows64 = src.rowExtent, cols64 = src.colExtent,
          stride64 = src.rowStride;
    Value slotBase =
        getSlotAddress(e, adaptor.getDst(), dstType, adaptor.getTile());
    Value firstRow = e.sext64(adaptor.getIndices()[rowDim]);
    Value firstCol = e.sext64(adaptor.getIndices()[colDim]);
    TileChunkWalk walk(e, thread.tid, ctx.threads(), dstType.getDimSize(1),
                       getB16Columns(dstType));
    for (int64_t step = 0; step < walk.numSteps(); ++step) {
      auto copyChunk = [&] {
        Value row = e.add64(firstRow, e.sext64(walk.row(step)));
        Value col = e.add64(firstCol,
                            e.sext64(e.mul(walk.chunk(step), chunkElements)));
        // Unsigned: negative rows and columns are out of range too.
        Value inRows = e.cmp(LLVM::ICmpPredicate::ult, row, rows64);
        Value inCols = e.cmp(LLVM::ICmpPredicate::ult, col, cols64);
        Value inRange = LLVM::AndOp::create(rewriter, loc, inRows, inCols);
        // The bytes of the chunk inside the row: min(cols - col, chunk).
        Value left = LLVM::SubOp::create(rewriter, loc, cols64, col);
        left = LLVM::UMinOp::create(rewriter, loc, left,
                                    e.i64(chunkElements));
        Value bytes = LLVM::TruncOp::create(
            rewriter, loc, rewriter.getI32Type(),
            e.mul64(left, e.i64(elementBytes)));
        bytes = e.select(inRange, bytes, e.i32(0));
        // Out-of-range chunks read nothing, at a valid address.
        Value offset = e.add64(e.mul64(row, stride64), col);
        offset = e.select(inRange, offset, e.i64(0));
        Value from = e.gep(base, e.mul64(offset, e.i64(elementBytes)));
        Value to = e.gep(slotBase, walk.smemOffset(step));
        emitCopyChunk(rewriter, loc, to, from, bytes);
      };
      emitStep(rewriter, loc, walk, step, copyChunk);
    }
    NVVM::CpAsyncCommitGroupOp::create(rewriter, loc);
    rewriter.eraseOp(op);
    return success();
  }
};

/// The tensor coordinates of element 0 of this lane's first tile of an
/// accumulator (`c`, the C fragment) with `rows` rows and `cols` columns
/// whose tile starts at the row and (unless `colDim` is none: a row state)
/// the column that `indices` give: a lane's offset within a C tile is
/// linear in (g, t). With KV warps a fragment with columns is the warp's
/// share of them (what a transpose_b or split_n mma gives it): the warp's
/// columns start at kvWarp * cols.
static std::pair<Value, Value>
getLaneTileOrigin(TileOpContext &ctx, const MmaFragment &c, int64_t rows,
                  int64_t cols, ValueRange indices, int64_t rowDim,
                  std::optional<int64_t> colDim) {
  Emitter &e = ctx.e;
  ThreadCoords &thread = ctx.thread();
  auto [originRow, originCol] = c.getCoord(0, 0);
  int64_t rowPerG = c.getCoord(4, 0).first - originRow;
  int64_t colPerT = c.getCoord(1, 0).second - originCol;
  Value laneRow = e.add(e.mul(thread.warp, ctx.layout.rowsPerWarp(rows)),
                        e.mul(thread.g, rowPerG));
  Value firstRow =
      e.add64(e.sext64(indices[rowDim]), e.sext64(laneRow));
  Value firstCol;
  if (colDim) {
    Value laneCol = e.mul(thread.t, colPerT);
    if (ctx.config.getKvWarps() > 1)
      laneCol = e.add(laneCol, e.mul(thread.kvWarp, cols));
    firstCol = e.add64(e.sext64(indices[*colDim]), e.sext64(laneCol));
  }
  return {firstRow, firstCol};
}

/// The columns left in a tensor from `firstCol` (i64) to `colExtent`, as
/// an i32 clamped to 2^31 - 1: the register a predicated vector access
/// (emitPredicatedVectorAccess) compares its column immediate with.
static Value getColumnsLeft(Emitter &e, RewriterBase &rewriter, Location loc,
                            Value colExtent, Value firstCol) {
  Value left = LLVM::SubOp::create(rewriter, loc, colExtent, firstCol);
  Value most = e.i64(std::numeric_limits<int32_t>::max());
  left = LLVM::SelectOp::create(
      rewriter, loc, e.cmp(LLVM::ICmpPredicate::slt, left, most), left, most);
  return LLVM::TruncOp::create(rewriter, loc, rewriter.getI32Type(), left);
}

/// One global access of `values.size()` f32 as a vector, in inline PTX
/// (`opcode`: red.global.add or st.global), at `address` (i64) plus the
/// immediate `byteOffset`, predicated on `rowInside` (i32, non-zero) and
/// `columnsLeft` > the immediate `column`: only the row's address and the
/// two tests' operands are registers.
static void emitPredicatedVectorAccess(RewriterBase &rewriter, Location loc,
                                       StringRef opcode, Value rowInside,
                                       Value columnsLeft, int64_t column,
                                       Value address, int64_t byteOffset,
                                       ValueRange values) {
  std::string ptx = "{ .reg .pred p, q; setp.ne.b32 p, $0, 0; "
                    "setp.gt.s32 q, $1, " +
                    std::to_string(column) + "; and.pred p, p, q; @p " +
                    opcode.str() + ".v" + std::to_string(values.size()) +
                    ".f32 [$2";
  if (byteOffset)
    ptx += "+" + std::to_string(byteOffset);
  ptx += "], {";
  std::string constraints = "r,r,l";
  for (size_t v = 0; v < values.size(); ++v) {
    ptx += (v ? ", $" : "$") + std::to_string(3 + v);
    constraints += ",f";
  }
  ptx += "}; }";
  SmallVector<Value> operands = {rowInside, columnsLeft, address};
  llvm::append_range(operands, values);
  LLVM::InlineAsmOp::create(
      rewriter, loc, TypeRange{}, operands, ptx, constraints,
      /*has_side_effects=*/true, /*is_align_stack=*/false,
      LLVM::TailCallKind::None, /*asm_dialect=*/LLVM::AsmDialectAttr(),
      /*operand_attrs=*/ArrayAttr());
}

/// Where a thread's elements of an accumulator lie in a C-tiled tensor
/// (#attn.tensor's order "c_tiles"): the tile at (R, C) (R a multiple of
/// the C tile's m rows, C of its n columns: attn.store_tile and
/// attn.load_tile verify it) starts at element R * row stride + C * m past
/// the fixed indices' offset (the tiles of a 16-row block follow one
/// another along the columns; the head stride is one block's plane), and
/// lane l's element r of it is at l * perLane + r: a lane's elements of a
/// tile are one vector, a warp's a contiguous m x n block. A tile is
/// inside the tensor when its first row and column are (its rows are
/// padded to whole tiles, its columns, the head dim, are whole tiles).
struct CTileAccess {
  CTileAccess(TileOpContext &ctx, RewriterBase &rewriter, Location loc,
              const TensorTileView &view, const MmaFragment &c,
              ValueRange indices, int64_t rowDim, int64_t colDim,
              int64_t rows, int64_t cols)
      : e(ctx.e), rewriter(rewriter), loc(loc), view(view) {
    ThreadCoords &thread = ctx.thread();
    auto [tileRows, tileCols] = c.getMatrixShape();
    m = tileRows;
    n = tileCols;
    perLane = c.getElementsPerLane();
    firstRow = e.add64(e.sext64(indices[rowDim]),
                       e.sext64(e.mul(thread.warp,
                                      ctx.layout.rowsPerWarp(rows))));
    Value firstCol = e.sext64(indices[colDim]);
    // With KV warps a fragment with columns is the warp's share of them.
    if (ctx.config.getKvWarps() > 1)
      firstCol = e.add64(firstCol, e.sext64(e.mul(thread.kvWarp, cols)));
    // The lane's element 0 of tile (0, 0) but for the rows' term, and the
    // bytes a row moves it: each tile's address is then one multiply-add
    // from them, and they stay the same across a loop.
    Value laneOffset = e.add64(
        view.offset,
        e.add64(e.mul64(firstCol, e.i64(m)),
                e.sext64(e.mul(thread.lane, perLane))));
    laneBase = e.gep(view.base, e.mul64(laneOffset, e.i64(4)));
    rowBytes = e.mul64(view.rowStride, e.i64(4));
    // The columns left from the warp's first.
    columnsLeft = getColumnsLeft(e, rewriter, loc, view.colExtent, firstCol);
  }

  /// The C tile's bytes: tile (i, j + 1) is this many past tile (i, j).
  int64_t tileBytes() const { return m * n * 4; }

  /// The address of the lane's element 0 of tile (i, 0).
  Value addressAt(int64_t i) {
    Value row = e.add64(firstRow, e.i64(m * i));
    return e.gep(laneBase, e.mul64(row, rowBytes));
  }
  /// Whether the rows of tile (i, *) are inside the tensor (i1).
  Value rowInside(int64_t i) {
    return e.cmp(LLVM::ICmpPredicate::ult, e.add64(firstRow, e.i64(m * i)),
                 view.rowExtent);
  }
  /// Whether tile (i, j) is inside the tensor (i1), from rowInside(i).
  Value inside(Value rowInside, int64_t j) {
    return LLVM::AndOp::create(
        rewriter, loc, rowInside,
        e.cmp(LLVM::ICmpPredicate::sgt, columnsLeft, e.i32(n * j)));
  }

  Emitter &e;
  RewriterBase &rewriter;
  Location loc;
  const TensorTileView &view;
  int64_t m = 0, n = 0, perLane = 0;
  Value firstRow, laneBase, rowBytes, columnsLeft;
};

/// A register tile into a tensor of the kernel, each thread its own
/// elements at the coordinates of the fragment tables, with no shared
/// memory: a store (rounded to the tensor's type), or with `accumulate` an
/// atomic add (an atomicrmw the NVPTX backend emits as atom.global.add),
/// for the elements inside the tensor's extents. The tensor's descriptor
/// gives the base (the fixed indices' offset), extents and strides.
struct StoreTileLowering : public AttnOpLoweringPattern<StoreTileOp> {
  StoreTileLowering(LLVMTypeConverter &converter, const ArchInfo &target)
      : AttnOpLoweringPattern(converter), target(target) {}

  LogicalResult lower(StoreTileOp op, OpAdaptor adaptor,
                      ConversionPatternRewriter &rewriter,
                      TileOpContext &ctx) const override {
    Location loc = op.getLoc();
    FragType type = op.getValue().getType();
    const FragmentLayout &layout = ctx.layout;
    Emitter &e = ctx.e;
    ThreadCoords &thread = ctx.thread();
    bool rowState = type.getLayout() == FragLayout::Rows;
    int64_t rows = type.getDimSize(0);
    int64_t cols = rowState ? 1 : type.getDimSize(1);
    int64_t mTiles = layout.mTiles(rows), nTiles = rowState ? 1 : cols / 8;
    MmaFragment c(FragmentLayout::kShape, MmaOperand::C, 32);

    MemRefType dstType = op.getDst().getType();
    int64_t rowDim = op.getRowDim();
    std::optional<int64_t> colDim;
    if (!rowState)
      colDim = op.getColDim();
    TensorTileView view(e, rewriter, loc, adaptor.getDst(),
                        adaptor.getIndices(), rowDim, colDim);
    Value offset = view.offset, rowExtent = view.rowExtent,
          rowStride = view.rowStride, colExtent = view.colExtent,
          colStride = view.colStride, base = view.base;
    Type stored = dstType.getElementType();
    int64_t storedBytes = dstType.getElementTypeBitWidth() / 8;

    auto [firstRow, firstCol] =
        getLaneTileOrigin(ctx, c, rows, cols, adaptor.getIndices(), rowDim,
                          colDim);
    // A row's value is held by its whole quad; its first lane writes it.
    Value writer =
        rowState ? e.cmp(LLVM::ICmpPredicate::eq, thread.t, e.i32(0)) : Value();

    SmallVector<Value> values = e.unpack(adaptor.getValue());
    bool packedHalves = !rowState && type.getElementType().isF16();
    int64_t perTile = rowState ? 0 : FragmentLayout::accValuesPerTile(type);
    // Element r of (m-tile i, n-tile j) (row state: element r of m-tile i,
    // at C element 2 r's row), in the fragment's element type.
    auto element = [&](int64_t i, int64_t j, int64_t r) -> Value {
      if (rowState)
        return values[FragmentLayout::rowIndex(i, r)];
      if (!packedHalves)
        return values[FragmentLayout::accIndex(i, j, r, nTiles)];
      Value pair = LLVM::BitcastOp::create(
          rewriter, loc, VectorType::get({2}, rewriter.getF16Type()),
          values[FragmentLayout::accIndex(i, j, r / 2, nTiles, perTile)]);
      return LLVM::ExtractElementOp::create(rewriter, loc, pair,
                                            e.i32(r % 2));
    };
    int64_t perLane = rowState ? 2 : c.getElementsPerLane();
    // The address of the element `elements` past the fixed indices' offset.
    auto addressOf = [&](Value elements) {
      return e.gep(base, e.mul64(e.add64(offset, elements),
                                 e.i64(storedBytes)));
    };
    // Element (i, j, r)'s tensor position and whether it lies inside the
    // tensor's extents.
    auto position = [&](int64_t i, int64_t j, int64_t r) {
      auto [dr, dc] = c.getCoord(0, rowState ? 2 * r : r);
      Value row = e.add64(firstRow, e.i64(16 * i + dr));
      Value inRange = e.cmp(LLVM::ICmpPredicate::ult, row, rowExtent);
      Value address = e.mul64(row, rowStride);
      if (!rowState) {
        Value col = e.add64(firstCol, e.i64(8 * j + dc));
        inRange = LLVM::AndOp::create(
            rewriter, loc, inRange,
            e.cmp(LLVM::ICmpPredicate::ult, col, colExtent));
        address = e.add64(address, e.mul64(col, colStride));
      } else {
        inRange = LLVM::AndOp::create(rewriter, loc, writer, inRange);
      }
      return std::make_pair(addressOf(address), inRange);
    };
    // One element at a time, each inside an `if` of its own.
    auto elementwise = [&] {
      for (int64_t i = 0; i < mTiles; ++i)
        for (int64_t j = 0; j < nTiles; ++j)
          for (int64_t r = 0; r < perLane; ++r) {
            auto [at, inRange] = position(i, j, r);
            Value value = element(i, j, r);
            emitIf(rewriter, loc, inRange, [&] {
              if (!op.getAccumulate()) {
                if (value.getType() != stored)
                  value =
                      LLVM::FPTruncOp::create(rewriter, loc, stored, value);
                LLVM::StoreOp::create(rewriter, loc, value, at, storedBytes);
                return;
              }
              LLVM::AtomicRMWOp::create(
                  rewriter, loc,
                  isa<FloatType>(value.getType()) ? LLVM::AtomicBinOp::fadd
                                                  : LLVM::AtomicBinOp::add,
                  at, value, LLVM::AtomicOrdering::monotonic);
            });
          }
    };
    if (op.getCTiles()) {
      storeCTiles(op, adaptor.getIndices(), rewriter, ctx, view, c, element,
                  rows, cols, mTiles, nTiles);
      rewriter.eraseOp(op);
      return success();
    }
    if (!accumulatesPairs(op, c)) {
      elementwise();
      rewriter.eraseOp(op);
      return success();
    }
    // Each pair of adjacent columns (C elements r, r + 1) as one predicated
    // red.global.add.v2.f32, with no branch per element, when every pair's
    // address is 8-byte aligned: the first column's byte address is, the
    // row stride is even (the lanes' first columns are even), and so is
    // the column extent (a pair lies inside it or outside it whole). The
    // test is uniform across the block; where it fails, one atomic add per
    // element. A pair's address is its row's address plus an immediate
    // (its column offset), and its column test compares the lane's columns
    // left in the tensor with an immediate, both written into the
    // instruction: only a row's address, whether the row is inside, and
    // the lane's columns left are registers (LLVM would hoist a
    // loop-invariant column term per pair into a 64-bit register of its
    // own, which NVPTX's selection cannot fold back).
    Value tileCol = e.sext64(adaptor.getIndices()[*colDim]);
    Value firstColBytes = e.mul64(e.add64(offset, tileCol), e.i64(4));
    Value misaligned = e.bitOr(
        e.add64(LLVM::PtrToIntOp::create(rewriter, loc,
                                         rewriter.getI64Type(), base),
                firstColBytes),
        e.bitOr(e.mul64(rowStride, e.i64(4)), e.mul64(colExtent, e.i64(4))));
    Value aligned = e.cmp(
        LLVM::ICmpPredicate::eq,
        LLVM::AndOp::create(rewriter, loc, misaligned, e.i64(7)), e.i64(0));
    requirePtxVersion(rewriter, op, kVectorF32ReductionPtxVersion);
    emitIfElse(
        rewriter, loc, aligned,
        [&] {
          // The lane's columns left in the tensor.
          Value columnsLeft =
              getColumnsLeft(e, rewriter, loc, colExtent, firstCol);
          // The lane's rows (16 i + dr from its first, dr from the C
          // table), each once: its address and whether it is inside.
          llvm::SmallDenseMap<int64_t, std::pair<Value, Value>> rowOf;
          auto rowAt = [&](int64_t i, int64_t dr) {
            auto [it, added] = rowOf.try_emplace(16 * i + dr);
            if (added) {
              Value row = e.add64(firstRow, e.i64(16 * i + dr));
              Value inside = LLVM::ZExtOp::create(
                  rewriter, loc, rewriter.getI32Type(),
                  e.cmp(LLVM::ICmpPredicate::ult, row, rowExtent));
              // Columns have stride 1 here (accumulatesPairs).
              Value at =
                  addressOf(e.add64(e.mul64(row, rowStride), firstCol));
              it->second = {inside, LLVM::PtrToIntOp::create(
                                        rewriter, loc, rewriter.getI64Type(),
                                        at)};
            }
            return it->second;
          };
          for (int64_t i = 0; i < mTiles; ++i)
            for (int64_t j = 0; j < nTiles; ++j)
              for (int64_t r = 0; r < perLane; r += 2) {
                auto [dr, dc] = c.getCoord(0, r);
                auto [inside, rowAddress] = rowAt(i, dr);
                int64_t column = 8 * j + dc;
                emitPredicatedVectorAccess(
                    rewriter, loc, "red.global.add", inside, columnsLeft,
                    column, rowAddress, column * 4,
                    {element(i, j, r), element(i, j, r + 1)});
              }
        },
        elementwise);
    rewriter.eraseOp(op);
    return success();
  }

private:
  /// An f32 accumulator into a C-tiled tensor (CTileAccess): each lane's
  /// elements of a tile as one predicated 16-byte vector, added
  /// (red.global.add.v4.f32, where the ISA has vector reductions) or
  /// stored (st.global.v4.f32); a warp's tile is then 512 contiguous
  /// bytes, 4 cache lines, where the row-major order touches 8 per pair
  /// of columns. A tile's address is its row of tiles' (a register) plus
  /// an immediate, and its predicate is whether that row is inside and
  /// whether the lane's columns left exceed the tile's first. Without
  /// vector reductions, one atomic add (or store) per element at the same
  /// addresses.
  void storeCTiles(StoreTileOp op, ValueRange indices,
                   ConversionPatternRewriter &rewriter,
                   TileOpContext &ctx, const TensorTileView &view,
                   const MmaFragment &c,
                   llvm::function_ref<Value(int64_t, int64_t, int64_t)> element,
                   int64_t rows, int64_t cols, int64_t mTiles,
                   int64_t nTiles) const {
    Location loc = op.getLoc();
    Emitter &e = ctx.e;
    CTileAccess tiles(ctx, rewriter, loc, view, c, indices, op.getRowDim(),
                      op.getColDim(), rows, cols);
    bool vector = tiles.perLane == 4 && (!op.getAccumulate() ||
                                         isaHasVectorF32Reductions(target));
    if (vector && op.getAccumulate())
      requirePtxVersion(rewriter, op, kVectorF32ReductionPtxVersion);
    for (int64_t i = 0; i < mTiles; ++i) {
      Value at = tiles.addressAt(i);
      if (!vector) {
        Value rowInside = tiles.rowInside(i);
        for (int64_t j = 0; j < nTiles; ++j)
          emitIf(rewriter, loc, tiles.inside(rowInside, j), [&] {
            for (int64_t r = 0; r < tiles.perLane; ++r) {
              Value to = e.gep(at, e.i64(j * tiles.tileBytes() + 4 * r));
              if (!op.getAccumulate())
                LLVM::StoreOp::create(rewriter, loc, element(i, j, r), to, 4);
              else
                LLVM::AtomicRMWOp::create(rewriter, loc,
                                          LLVM::AtomicBinOp::fadd, to,
                                          element(i, j, r),
                                          LLVM::AtomicOrdering::monotonic);
            }
          });
        continue;
      }
      Value rowInside = LLVM::ZExtOp::create(
          rewriter, loc, rewriter.getI32Type(), tiles.rowInside(i));
      Value address =
          LLVM::PtrToIntOp::create(rewriter, loc, rewriter.getI64Type(), at);
      for (int64_t j = 0; j < nTiles; ++j) {
        SmallVector<Value> values;
        for (int64_t r = 0; r < tiles.perLane; ++r)
          values.push_back(element(i, j, r));
        emitPredicatedVectorAccess(
            rewriter, loc, op.getAccumulate() ? "red.global.add" : "st.global",
            rowInside, tiles.columnsLeft, tiles.n * j, address,
            j * tiles.tileBytes(), values);
      }
    }
  }

  /// Whether `op` adds f32 pairs of adjacent, contiguous columns that the
  /// ISA can add as one vector reduction: an accumulating store of an f32
  /// accumulator (not a row state, not packed halves) into a tensor whose
  /// columns have stride 1, and the C fragment places elements 2k and
  /// 2k + 1 of a lane side by side in one row, starting at an even column.
  bool accumulatesPairs(StoreTileOp op, const MmaFragment &c) const {
    FragType type = op.getValue().getType();
    if (!op.getAccumulate() || type.getLayout() == FragLayout::Rows ||
        !type.getElementType().isF32() || !isaHasVectorF32Reductions(target))
      return false;
    MemRefType dstType = op.getDst().getType();
    SmallVector<int64_t> strides;
    int64_t offset;
    if (!dstType.getElementType().isF32() ||
        failed(dstType.getStridesAndOffset(strides, offset)) ||
        strides[op.getColDim()] != 1)
      return false;
    for (int64_t r = 0; r + 1 < c.getElementsPerLane(); r += 2) {
      auto [row, col] = c.getCoord(0, r);
      if (c.getCoord(0, r + 1) != std::make_pair(row, col + 1) || col % 2)
        return false;
    }
    return c.getElementsPerLane() % 2 == 0 &&
           c.getCoord(1, 0).second - c.getCoord(0, 0).second == 2;
  }

  /// The ISA the PTX targets.
  const ArchInfo &target;
};

/// A tile of a tensor of the kernel into an accumulator, each thread its
/// own elements at the C fragment table's coordinates (attn.store_tile's
/// mirror); elements outside the extents read 0 (the load reads the
/// tensor's first element instead, which exists whenever a block runs).
struct LoadTileLowering : public AttnOpLoweringPattern<LoadTileOp> {
  using AttnOpLoweringPattern::AttnOpLoweringPattern;

  LogicalResult lower(LoadTileOp op, OpAdaptor adaptor,
                      ConversionPatternRewriter &rewriter,
                      TileOpContext &ctx) const override {
    if (isVectorLayout(op.getResult().getType().getLayout()))
      return lowerVector(op, adaptor, rewriter, ctx);
    Location loc = op.getLoc();
    FragType type = op.getResult().getType();
    const FragmentLayout &layout = ctx.layout;
    Emitter &e = ctx.e;
    int64_t rows = type.getDimSize(0), cols = type.getDimSize(1);
    int64_t mTiles = layout.mTiles(rows), nTiles = cols / 8;
    MmaFragment c(FragmentLayout::kShape, MmaOperand::C, 32);

    MemRefType srcType = op.getSrc().getType();
    int64_t rowDim = getTileRowDim(srcType), colDim = srcType.getRank() - 1;
    TensorTileView view(e, rewriter, loc, adaptor.getSrc(),
                        adaptor.getIndices(), rowDim, colDim);
    Value offset = view.offset, rowExtent = view.rowExtent,
          colExtent = view.colExtent, rowStride = view.rowStride,
          colStride = view.colStride, base = view.base;
    Type element = type.getElementType();
    // What the tensor stores: the tile's type, or a 16-bit float widened.
    Type stored = srcType.getElementType();
    Value zero = isa<FloatType>(element)
                     ? LLVM::ConstantOp::create(rewriter, loc, element,
                                                rewriter.getF32FloatAttr(0))
                           .getResult()
                     : e.i32(0);

    SmallVector<Value> values(layout.numValues(type));
    if (op.getCTiles()) {
      // Each lane's elements of a C tile as one 16-byte vector
      // (CTileAccess); a tile outside reads 0 (the load reads the
      // tensor's first vector instead).
      CTileAccess tiles(ctx, rewriter, loc, view, c, adaptor.getIndices(),
                        rowDim, colDim, rows, cols);
      auto vectorType = VectorType::get({tiles.perLane}, element);
      for (int64_t i = 0; i < mTiles; ++i) {
        Value at = tiles.addressAt(i);
        Value rowInside = tiles.rowInside(i);
        for (int64_t j = 0; j < nTiles; ++j) {
          Value inRange = tiles.inside(rowInside, j);
          Value tile = LLVM::SelectOp::create(
              rewriter, loc, inRange,
              e.gep(at, e.i64(j * tiles.tileBytes())), base);
          Value loaded = LLVM::LoadOp::create(rewriter, loc, vectorType, tile,
                                              4 * tiles.perLane);
          for (int64_t r = 0; r < tiles.perLane; ++r)
            values[FragmentLayout::accIndex(i, j, r, nTiles)] = e.select(
                inRange,
                LLVM::ExtractElementOp::create(rewriter, loc, loaded,
                                               e.i32(r)),
                zero);
        }
      }
      rewriter.replaceOp(op, e.pack(layout.convertType(type), values));
      return success();
    }
    auto [firstRow, firstCol] =
        getLaneTileOrigin(ctx, c, rows, cols, adaptor.getIndices(), rowDim,
                          colDim);
    for (int64_t i = 0; i < mTiles; ++i)
      for (int64_t j = 0; j < nTiles; ++j)
        for (int64_t r = 0; r < c.getElementsPerLane(); ++r) {
          auto [dr, dc] = c.getCoord(0, r);
          Value row = e.add64(firstRow, e.i64(16 * i + dr));
          Value col = e.add64(firstCol, e.i64(8 * j + dc));
          Value inRange = LLVM::AndOp::create(
              rewriter, loc, e.cmp(LLVM::ICmpPredicate::ult, row, rowExtent),
              e.cmp(LLVM::ICmpPredicate::ult, col, colExtent));
          Value at = e.add64(offset, e.add64(e.mul64(row, rowStride),
                                             e.mul64(col, colStride)));
          values[FragmentLayout::accIndex(i, j, r, nTiles)] =
              loadInRange(e, base, at, inRange, stored, element, zero);
        }
    rewriter.replaceOp(op, e.pack(layout.convertType(type), values));
    return success();
  }

  /// Element `at` (elements from `base`) of a tensor storing `stored`, as
  /// `element` (a 16-bit float widened), when `inRange`; else `zero`, and
  /// the load reads the tensor's first element instead, which exists
  /// whenever a block runs.
  static Value loadInRange(Emitter &e, Value base, Value at, Value inRange,
                           Type stored, Type element, Value zero) {
    int64_t bytes = stored.getIntOrFloatBitWidth() / 8;
    at = e.select(inRange, at, e.i64(0));
    Value loaded = LLVM::LoadOp::create(
        e.builder(), e.location(), stored,
        e.gep(base, e.mul64(at, e.i64(bytes))), bytes);
    if (stored != element)
      loaded = LLVM::FPExtOp::create(e.builder(), e.location(), element, loaded);
    return e.select(inRange, loaded, zero);
  }

  /// A row or column vector of a (batch, heads, rows) f32 tensor: each
  /// thread reads the values of the rows (`rows`) or the columns (`cols`)
  /// its C elements sit in. The vector's one index is where both its rows
  /// and its columns start.
  static LogicalResult lowerVector(LoadTileOp op, OpAdaptor adaptor,
                                   ConversionPatternRewriter &rewriter,
                                   TileOpContext &ctx) {
    FragType type = op.getResult().getType();
    const FragmentLayout &layout = ctx.layout;
    Emitter &e = ctx.e;
    MmaFragment c(FragmentLayout::kShape, MmaOperand::C, 32);
    int64_t rowDim = getTileRowDim(op.getSrc().getType());
    TensorTileView view(e, rewriter, op.getLoc(), adaptor.getSrc(),
                        adaptor.getIndices(), rowDim, std::nullopt);
    Type f32 = rewriter.getF32Type();
    Value zero = e.f32(0.0f);
    auto load = [&](Value row) {
      Value inRange = e.cmp(LLVM::ICmpPredicate::ult, row, view.rowExtent);
      return loadInRange(e, view.base,
                         e.add64(view.offset, e.mul64(row, view.rowStride)),
                         inRange, f32, f32, zero);
    };
    int64_t size = type.getDimSize(0);
    auto [firstRow, firstCol] =
        getLaneTileOrigin(ctx, c, size, size, adaptor.getIndices(), rowDim,
                          /*colDim=*/rowDim);
    SmallVector<Value> values(layout.numValues(type));
    if (type.getLayout() == FragLayout::Rows) {
      for (int64_t i = 0; i < layout.mTiles(size); ++i)
        for (int64_t h = 0; h < 2; ++h)
          values[FragmentLayout::rowIndex(i, h)] = load(
              e.add64(firstRow, e.i64(16 * i + c.getCoord(0, 2 * h).first)));
    } else {
      for (int64_t j = 0; j < size / FragmentLayout::kShape.n; ++j)
        for (int64_t r = 0; r < 2; ++r)
          values[FragmentLayout::colIndex(j, r)] =
              load(e.add64(firstCol, e.i64(8 * j + c.getCoord(0, r).second)));
    }
    rewriter.replaceOp(op, e.pack(layout.convertType(type), values));
    return success();
  }
};

/// A register tile into slot 0 of a shared buffer, each thread its pairs of
/// adjacent columns as one 32-bit store at the swizzled address every
/// reader of the buffer uses (as attn.store stages O).
struct StoreFragLowering : public AttnOpLoweringPattern<StoreFragOp> {
  using AttnOpLoweringPattern::AttnOpLoweringPattern;

  LogicalResult lower(StoreFragOp op, OpAdaptor adaptor,
                      ConversionPatternRewriter &rewriter,
                      TileOpContext &ctx) const override {
    FragType type = op.getValue().getType();
    MemRefType dstType = op.getDst().getType();
    Value slot = getSlotAddress(ctx.e, adaptor.getDst(), dstType, ctx.e.i32(0));
    // With KV warps the fragment is the warp's share of the buffer's
    // columns: 16-bit columns, 8 to a chunk.
    Value firstChunk;
    if (ctx.config.getKvWarps() > 1)
      firstChunk = ctx.e.mul(ctx.thread().kvWarp, type.getDimSize(1) / 8);
    storeAccumulatorToShared(ctx, ctx.e.unpack(adaptor.getValue()),
                             type.getDimSize(0), type.getDimSize(1),
                             dstType.getElementType(), slot,
                             getB16Columns(dstType), firstChunk);
    rewriter.eraseOp(op);
    return success();
  }
};

struct AsyncWaitLowering : public ConvertOpToLLVMPattern<AsyncWaitOp> {
  using ConvertOpToLLVMPattern::ConvertOpToLLVMPattern;

  LogicalResult
  matchAndRewrite(AsyncWaitOp op, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOpWithNewOp<NVVM::CpAsyncWaitGroupOp>(op, op.getPending());
    return success();
  }
};

struct BarrierLowering : public ConvertOpToLLVMPattern<BarrierOp> {
  using ConvertOpToLLVMPattern::ConvertOpToLLVMPattern;

  LogicalResult
  matchAndRewrite(BarrierOp op, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOpWithNewOp<NVVM::Barrier0Op>(op);
    return success();
  }
};

} // namespace

void lowering::populateMemoryPatterns(LLVMTypeConverter &converter,
                                    RewritePatternSet &patterns,
                                    const ArchInfo &isa) {
  patterns.add<SmemAllocLowering, CopyAsyncLowering, CopyTileLowering,
               LoadTileLowering, StoreFragLowering, AsyncWaitLowering,
               BarrierLowering>(converter);
  patterns.add<StoreTileLowering>(converter, isa);
}
