//===- TileOpContext.cpp - What a tile op lowers against ------------------===//

#include "TileOpContext.h"
#include "SharedAccess.h"

#include "flashtile/Target/Arch.h"
#include "flashtile/Target/PTX.h"

#include <climits>

using namespace mlir;
using namespace flashtile;
using namespace flashtile::attn;
using namespace flashtile::attn::lowering;

ScoreTileCoords::ScoreTileCoords(TileOpContext &ctx, int64_t rows,
                                 int64_t cols, Value mBlock, Value nBlock)
    : ctx(ctx), e(ctx.e) {
  ThreadCoords &thread = ctx.thread();
  rowBase = e.add(e.mul(mBlock, rows),
                  e.add(e.mul(thread.warp, ctx.layout.rowsPerWarp(rows)),
                        thread.g));
  // The KV tile is kv_warps slices of `cols` keys; this warp holds one.
  int64_t kvWarps = ctx.config.getKvWarps();
  colBase = e.add(e.mul(nBlock, cols * kvWarps), e.mul(thread.t, 2));
  if (kvWarps > 1)
    colBase = e.add(colBase, e.mul(thread.kvWarp, cols));
}

Value ScoreTileCoords::row(int64_t i, int64_t r) {
  if (!ctx.packed())
    return e.add(rowBase, rowOffset(i, r));
  auto &entry = unpacked[rowOffset(i, r)];
  if (!entry.first)
    entry = ctx.unpackRow(e.add(rowBase, rowOffset(i, r)));
  return entry.first;
}

Value ScoreTileCoords::headOffset(int64_t i, int64_t r) {
  if (!ctx.packed())
    return {};
  row(i, r);
  return unpacked[rowOffset(i, r)].second;
}

Value TileOpContext::groupSize() {
  if (!group)
    group = e.sdiv(getKernelParam(op, abi::kQuerySide.heads),
                   getKernelParam(op, abi::kKeySide.heads));
  return group;
}

std::pair<Value, Value>
TileOpContext::packedTilePositions(Value mBlock, Value seqlenQ, int64_t tileM) {
  Value first = e.mul(mBlock, tileM);
  Value rows = e.mul(seqlenQ, groupSize());
  Value last = e.sub(e.smin(e.add(first, tileM), rows), e.i32(1));
  return {unpackRow(first).first, unpackRow(last).first};
}

std::pair<Value, Value> TileOpContext::unpackRow(Value row) {
  Value g = groupSize();
  OpBuilder &b = e.builder();
  return {LLVM::UDivOp::create(b, e.location(), row, g),
          LLVM::URemOp::create(b, e.location(), row, g)};
}

Value ScoreTileCoords::col(int64_t j, int64_t r) {
  return e.add(colBase, 8 * j + FragmentLayout::accElementOffset(r).second);
}

SmallVector<Value> lowering::packAccumulatorAsA(Emitter &e, ArrayRef<Value> acc,
                                                int64_t mTiles, int64_t nTiles,
                                                Type dtype) {
  int64_t kTiles = nTiles / 2;
  SmallVector<Value> a(mTiles * kTiles * 4);
  for (int64_t i = 0; i < mTiles; ++i)
    for (int64_t k = 0; k < kTiles; ++k)
      for (int64_t r = 0; r < 4; ++r) {
        Value halves[2];
        for (int64_t half = 0; half < 2; ++half) {
          auto [tile, element] = FragmentLayout::accSourceOfA(r, half);
          halves[half] = acc[FragmentLayout::accIndex(i, 2 * k + tile, element,
                                                      nTiles)];
        }
        a[FragmentLayout::aIndex(i, k, r, kTiles)] =
            e.packPair(halves[0], halves[1], dtype);
      }
  return a;
}

void lowering::storeAccumulatorToShared(TileOpContext &ctx, ArrayRef<Value> acc,
                                        int64_t rows, int64_t cols, Type dtype,
                                        Value tile, int64_t b16Columns,
                                        Value firstChunk) {
  Emitter &e = ctx.e;
  ThreadCoords &thread = ctx.thread();
  int64_t mTiles = ctx.layout.mTiles(rows), nTiles = cols / 8;
  Value warpRow = e.mul(thread.warp, ctx.layout.rowsPerWarp(rows));
  SwizzledTileAccess staged(e, e.gep(tile, e.mul(thread.t, 4)),
                            e.add(warpRow, thread.g),
                            firstChunk ? firstChunk : e.i32(0), b16Columns);
  for (int64_t i = 0; i < mTiles; ++i)
    for (int64_t h = 0; h < 2; ++h)
      for (int64_t j = 0; j < nTiles; ++j)
        LLVM::StoreOp::create(
            e.builder(), e.location(),
            e.packPair(acc[FragmentLayout::accIndex(i, j, 2 * h, nTiles)],
                       acc[FragmentLayout::accIndex(i, j, 2 * h + 1, nTiles)],
                       dtype),
            staged.address(16 * i + 8 * h, j), /*alignment=*/4);
}

/// The lowest minimum PTX version of the chips on the sm80 path (7.0).
static int getLowestSm80PathPtxVersion() {
  int lowest = INT_MAX;
  for (const ArchInfo &arch : getAllArchs())
    if (arch.codePath == CodePath::Sm80)
      lowest = std::min(lowest, arch.minPtxVersion);
  return lowest;
}

void lowering::requirePtxVersion(RewriterBase &rewriter, Operation *op,
                                 int version) {
  auto func = op->getParentOfType<LLVM::LLVMFuncOp>();
  auto have = func->getAttrOfType<IntegerAttr>(kMinPtxVersionAttrName);
  if (version > getLowestSm80PathPtxVersion() &&
      (!have || have.getInt() < version))
    rewriter.modifyOpInPlace(func, [&] {
      func->setAttr(kMinPtxVersionAttrName, rewriter.getI64IntegerAttr(version));
    });
}
