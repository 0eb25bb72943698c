//===- FragmentLayout.h - Per-thread layout of !attn.frag -------*- C++ -*-===//
//
// The register layout of tile fragments on the sm80 path: how a block's
// fragments are spread over its warps and indexed. The coordinates within
// one mma tile come from MmaFragments.h, which owns them for every mma
// shape and element width; the layout kind of the type (!attn.frag's
// `acc`, `a` or `rows`) says which operand's coordinates apply. Warps are
// stacked along the rows: warp w owns rows [w * R, (w + 1) * R) of an
// M-row fragment, R = M / warps, as R / 16 "m-tiles" of 16 rows.
//
// * Accumulator (acc), M x N: (m-tile i, n-tile j) is one 16 x 8 C tile,
//   whose 4 elements a lane holds as 4 values (f32, i32) or 2 packed i32
//   (f16). A thread holds (R / 16) * (N / 8) such tiles.
// * A operand (a), M x K of 16- or 8-bit elements: (m-tile i, k-tile k) is
//   one 16 x k A tile of the width's mma shape (k = 16 or 32), 4 i32 per
//   lane. A thread holds (R / 16) * (K / k) * 4 i32.
// * Row state (rows), M: element h (0..1) of m-tile i is the row of C
//   element 2 h. A thread holds (R / 16) * 2 floats.
// * Column vector (cols), N: element c (0..1) of n-tile j is the column of
//   C element c, the same in every warp and m-tile. A thread holds
//   (N / 8) * 2 floats.
//
// The C layout of two adjacent n-tiles is the A layout of one 16-bit
// k-tile, which is why P = softmax(S) feeds the PV mma with no
// shared-memory round trip.
//
// With `kv_warps` > 1 (#attn.config), `warps` here counts the row warps, and
// each has kv_warps KV warps that hold the same rows: a score fragment is
// the warp's slice of the KV tile (its type has tile_n / kv_warps columns),
// and an accumulator or row state is that warp's partial one, which
// attn.epilogue merges.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHTILE_CONVERSION_ATTNTONVVM_FRAGMENTLAYOUT_H
#define FLASHTILE_CONVERSION_ATTNTONVVM_FRAGMENTLAYOUT_H

#include "flashtile/Dialect/Attn/IR/Attn.h"
#include "flashtile/Dialect/Attn/Utils/MmaFragments.h"

namespace flashtile::attn {

class FragmentLayout {
public:
  explicit FragmentLayout(int64_t warps) : warps(warps) {}

  int64_t getWarps() const { return warps; }
  /// Rows of an M-row fragment one warp owns.
  int64_t rowsPerWarp(int64_t rows) const { return rows / warps; }
  /// 16-row mma tiles per warp.
  int64_t mTiles(int64_t rows) const { return rows / (16 * warps); }

  /// Number of 32-bit values one thread holds for `type`.
  int64_t numValues(FragType type) const;
  /// The LLVM type one thread holds `type` in: an array of f32 (accumulators,
  /// row state) or of i32 (packed f16/bf16 pairs, A operands).
  mlir::Type convertType(FragType type) const;

  /// Accumulator value r of (m-tile i, n-tile j), with `nTiles` n-tiles of
  /// `perTile` values (4 for 32-bit accumulators, 2 for packed f16).
  static int64_t accIndex(int64_t i, int64_t j, int64_t r, int64_t nTiles,
                          int64_t perTile = 4) {
    return (i * nTiles + j) * perTile + r;
  }
  /// The values one lane holds of one 16 x 8 tile of accumulator `type`.
  static int64_t accValuesPerTile(FragType type);
  /// The k of one A tile of `type`'s element width (16 or 32).
  static int64_t aTileCols(FragType type);
  /// A-operand register r of (m-tile i, k-tile k), with `kTiles` k-tiles.
  static int64_t aIndex(int64_t i, int64_t k, int64_t r, int64_t kTiles) {
    return (i * kTiles + k) * 4 + r;
  }
  /// Row-state element h of m-tile i.
  static int64_t rowIndex(int64_t i, int64_t h) { return i * 2 + h; }
  /// Column-vector element of accumulator element r of n-tile j (the
  /// column C element r sits in).
  static int64_t colIndex(int64_t j, int64_t r) {
    return j * 2 + accElementOffset(r).second;
  }

  /// The shape of the mma tiles of 16-bit fragments.
  static constexpr MmaShape kShape = {16, 8, 16};
  /// (row, column) of accumulator element r relative to (16 i + g,
  /// 8 j + 2 t): lane 0's coordinate (g = t = 0).
  static std::pair<int64_t, int64_t> accElementOffset(int64_t r) {
    return MmaFragment(kShape, MmaOperand::C, 32).getCoord(0, r);
  }
  /// (row, column) of element `half` of A register r relative to
  /// (16 i + g, 16 k + 2 t).
  static std::pair<int64_t, int64_t> aElementOffset(int64_t r, int64_t half) {
    MmaFragment a(kShape, MmaOperand::A, 16);
    return a.getCoord(0, r * a.getElementsPerRegister() + half);
  }
  /// Where element `half` of A register r of k-tile k is found among the
  /// accumulators: n-tile 2 k + first, element second. This is how P reuses
  /// the registers of S with no shuffle: the accumulator element at the
  /// same (row, column).
  static std::pair<int64_t, int64_t> accSourceOfA(int64_t r, int64_t half) {
    auto [row, col] = aElementOffset(r, half);
    MmaFragment c(kShape, MmaOperand::C, 32);
    for (int64_t i = 0; i < c.getElementsPerLane(); ++i)
      if (c.getCoord(0, i) == std::make_pair(row, col % kShape.n))
        return {col / kShape.n, i};
    llvm_unreachable("the C layout of two n-tiles is the A layout of one "
                     "k-tile");
  }

private:
  int64_t warps;
};

} // namespace flashtile::attn

#endif // FLASHTILE_CONVERSION_ATTNTONVVM_FRAGMENTLAYOUT_H
