//===- TileOpContext.h - What a tile op lowers against ----------*- C++ -*-===//
//
// Private to lib/Conversion/AttnToNVVM: the context a tile-level pattern gets
// (the kernel's config, its fragment layout, an Emitter, the thread's
// coordinates), the positions of score elements, and the base of the
// patterns.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHTILE_LIB_CONVERSION_ATTNTONVVM_TILEOPCONTEXT_H
#define FLASHTILE_LIB_CONVERSION_ATTNTONVVM_TILEOPCONTEXT_H

#include "Emitter.h"
#include "KernelParams.h"

#include "flashtile/Conversion/AttnToNVVM/FragmentLayout.h"
#include "flashtile/Dialect/Attn/Utils/KVBounds.h"

#include "mlir/Conversion/LLVMCommon/Pattern.h"

#include <optional>

namespace flashtile::attn::lowering {

/// What a tile-level op of a kernel lowers against: the kernel's tile
/// configuration, the fragment layout of its warps, and an Emitter at the
/// op. The thread's coordinates are emitted on first use, once per op, so a
/// pattern that never asks for them emits none.
class TileOpContext {
public:
  TileOpContext(ConfigAttr config, mlir::OpBuilder &b, mlir::Operation *op)
      : config(config), layout(config.getRowWarps()), e(b, op->getLoc()),
        op(op) {}

  /// Threads per block.
  int64_t threads() const { return config.getWarps() * kWarpSize; }
  ThreadCoords &thread() {
    if (!coords)
      coords = ThreadCoords::get(e, config.getKvWarps());
    return *coords;
  }
  /// Whether rows are packed (position, head) pairs (#attn.config pack_gqa).
  bool packed() const { return config.getPackGqa(); }
  /// G = heads_q / heads_kv, the rows of one position when packed.
  mlir::Value groupSize();
  /// Packed row `row` as (position, head offset in the KV head's group).
  std::pair<mlir::Value, mlir::Value> unpackRow(mlir::Value row);
  /// The positions of the first and last valid packed rows of query tile
  /// `mBlock` (tile_m rows; seqlen_q * G of them in all): the query rows a
  /// packed tile's KV bounds and key range are taken at.
  std::pair<mlir::Value, mlir::Value>
  packedTilePositions(mlir::Value mBlock, mlir::Value seqlenQ, int64_t tileM);

  const ConfigAttr config;
  const FragmentLayout layout;
  Emitter e;
  mlir::Operation *const op;

private:
  std::optional<ThreadCoords> coords;
  mlir::Value group;
};

/// The query head of packed row group offset `offset` in the block whose
/// first query head is `firstHead`, or `firstHead` itself unpacked.
inline mlir::Value getRowHead(Emitter &e, mlir::Value firstHead,
                              mlir::Value offset) {
  return offset ? e.add(firstHead, offset) : firstHead;
}

/// The sequence positions of the score elements one thread holds in a
/// `rows x cols` accumulator tile (cols: the warp's slice of the KV tile) of
/// query tile `mBlock` and KV tile `nBlock`: element r of (m-tile i, n-tile
/// j) is query position row(i, r) and key col(j, r), as
/// FragmentLayout::accElementOffset places it within the warp's rows and
/// slice. With packed rows, row(i, r) is the position of the packed row and
/// headOffset(i, r) its head's offset in the KV head's group.
class ScoreTileCoords {
public:
  ScoreTileCoords(TileOpContext &ctx, int64_t rows, int64_t cols,
                  mlir::Value mBlock, mlir::Value nBlock);
  mlir::Value row(int64_t i, int64_t r);
  mlir::Value col(int64_t j, int64_t r);
  /// Null when rows are not packed.
  mlir::Value headOffset(int64_t i, int64_t r);
  /// row(i, r) and col(j, r) as a per-thread base plus a compile-time
  /// constant (packed rows: the position and 0).
  std::pair<mlir::Value, int64_t> rowParts(int64_t i, int64_t r) {
    if (ctx.packed())
      return {row(i, r), 0};
    return {rowBase, rowOffset(i, r)};
  }
  std::pair<mlir::Value, int64_t> colParts(int64_t j, int64_t r) {
    return {colBase, 8 * j + FragmentLayout::accElementOffset(r).second};
  }

private:
  static int64_t rowOffset(int64_t i, int64_t r) {
    return 16 * i + FragmentLayout::accElementOffset(r).first;
  }
  TileOpContext &ctx;
  Emitter &e;
  mlir::Value rowBase, colBase;
  /// Packed rows: (position, head offset) per row offset, emitted once.
  llvm::SmallDenseMap<int64_t, std::pair<mlir::Value, mlir::Value>, 8> unpacked;
};

/// Base of the patterns of ops inside an allocated kernel: finds the
/// kernel's config (no match without one) and hands `lower` the op's
/// TileOpContext, so that patterns start from what they share instead of
/// rebuilding it.
template <typename OpTy>
class AttnOpLoweringPattern : public mlir::ConvertOpToLLVMPattern<OpTy> {
public:
  using Base = mlir::ConvertOpToLLVMPattern<OpTy>;
  using OpAdaptor = typename Base::OpAdaptor;
  using Base::Base;

  mlir::LogicalResult
  matchAndRewrite(OpTy op, OpAdaptor adaptor,
                  mlir::ConversionPatternRewriter &rewriter) const final {
    ConfigAttr config = getKernelConfig(op);
    if (!config)
      return rewriter.notifyMatchFailure(op, "no kernel config");
    TileOpContext ctx(config, rewriter, op.getOperation());
    return lower(op, adaptor, rewriter, ctx);
  }

protected:
  /// Rewrites `op`; `ctx.e` emits at the op.
  virtual mlir::LogicalResult lower(OpTy op, OpAdaptor adaptor,
                                    mlir::ConversionPatternRewriter &rewriter,
                                    TileOpContext &ctx) const = 0;
};

/// Raises the PTX ISA version of the function `op` lowers into to
/// `version` where that is newer than what every sm80-path chip's PTX has
/// (emitPTX takes the highest of it and the ISA's): an instruction newer
/// than them (an e4m3 mma.sync, a vector reduction) needs it.
void requirePtxVersion(mlir::RewriterBase &rewriter, mlir::Operation *op,
                       int version);

/// The f32 accumulator values `acc` of an M x N fragment (`mTiles` m-tiles,
/// `nTiles` 8-column n-tiles per thread) rounded to `dtype` and packed as the
/// A operand of an mma: the C fragments of n-tiles 2k and 2k + 1 are the A
/// fragment of k-tile k (FragmentLayout.h).
llvm::SmallVector<mlir::Value> packAccumulatorAsA(Emitter &e,
                                                  llvm::ArrayRef<mlir::Value> acc,
                                                  int64_t mTiles, int64_t nTiles,
                                                  mlir::Type dtype);

/// Stores the f32 accumulator values `acc` of a `rows x cols` fragment,
/// rounded to `dtype`, into the swizzled row-major shared tile at `tile`
/// (`b16Columns` 16-bit columns a row): each thread its pairs of adjacent
/// columns as one 32-bit store at the address every reader of the tile uses.
/// attn.store_frag is this; attn.store stages its tile with it.
/// `firstChunk` (none: 0) is the 16-byte chunk the fragment's columns start
/// at: a KV warp's share of the tile's columns.
void storeAccumulatorToShared(TileOpContext &ctx, llvm::ArrayRef<mlir::Value> acc,
                              int64_t rows, int64_t cols, mlir::Type dtype,
                              mlir::Value tile, int64_t b16Columns,
                              mlir::Value firstChunk = {});

} // namespace flashtile::attn::lowering

#endif // FLASHTILE_LIB_CONVERSION_ATTNTONVVM_TILEOPCONTEXT_H
