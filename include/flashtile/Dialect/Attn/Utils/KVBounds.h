//===- KVBounds.h - Which tiles a block visits, and how --------*- C++ -*-===//
//
// The one owner of the window arithmetic: the KV-tile ranges of
// `attn.kv_bounds` and the per-element decision of `attn.mask` (query-grid
// kernels: the forward, the backward's dQ kernel), the query-tile ranges
// and the per-element decision of the backward's key-grid main kernel, and
// the searches of `attn.key_range` / `attn.query_range` over a mask_mod's
// key intervals.
//
// Visibility. With o = seqlen_k - seqlen_q (bottom-right alignment) and the
// window (left, right), -1 meaning unbounded, key j is visible to query row i
// when
//
//   j < seqlen_k,  i + o - left <= j (left >= 0),  j <= i + o + right
//   (right >= 0).
//
// Causal attention is right = 0. Rows of a query tile at or past seqlen_q
// are computed but never stored, so only rows [lo, hi] of tile m_block count:
// lo = m_block * tile_m, hi = min(lo + tile_m, seqlen_q) - 1.
//
// The functions are templates over an integer-arithmetic policy so that one
// formula serves the lowering, which instantiates it with its IR emitter
// (values are mlir::Value, every call emits one LLVM op), the backward's
// tile program, which instantiates it with index arith ops, and CPU tests,
// which instantiate it with plain integers. A policy `A` over value type V
// provides, with the semantics of the LLVM i32 ops:
//
//   V i32(int64_t)                        a constant
//   V add(V, V), add(V, int64_t), sub(V, V), mul(V, int64_t)   wrapping
//   V sdiv(V, V)                          rounding toward zero
//   V udiv(V, int64_t)                    of a non-negative value
//   V smin(V, V), smax(V, V)
//   B slt(V, V), sge(V, V), sgt(V, V), sle(V, V)   signed comparisons
//   V select(B, V, V)
//   B bitOr(B, B)                         of two comparison results
//
// (each template names the ones it uses). The emitters emit ops in the
// order of these calls (the IR, and so the PTX, depends on it), so
// reordering them is not a neutral change.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHTILE_DIALECT_ATTN_UTILS_KVBOUNDS_H
#define FLASHTILE_DIALECT_ATTN_UTILS_KVBOUNDS_H

#include <array>
#include <cstddef>
#include <cstdint>
#include <utility>

namespace flashtile::attn {

/// floor(x / c) for c > 0 and any sign of x, from a truncating division:
/// (x - (x < 0 ? c - 1 : 0)) / c.
template <typename A, typename V> V floorDiv(A &a, V x, int64_t c) {
  auto negative = a.slt(x, a.i32(0));
  V adjusted = a.sub(x, a.select(negative, a.i32(c - 1), a.i32(0)));
  return a.sdiv(adjusted, a.i32(c));
}

/// ceil(x / c) for c > 0 and any sign of x.
template <typename A, typename V> V ceilDiv(A &a, V x, int64_t c) {
  return floorDiv(a, a.add(x, c - 1), c);
}

/// The static part of `attn.kv_bounds`: tile sizes and the window (-1:
/// unbounded side; causal is windowRight = 0).
struct KVTiling {
  int64_t tileM, tileN;
  int64_t windowLeft, windowRight;
};

/// The KV tiles query tile m_block visits, as `attn.kv_bounds` returns them.
/// Invariants, for 0 <= m_block < ceil(seqlen_q / tile_m), seqlen_q >= 1 and
/// seqlen_k >= 0:
///
/// * begin <= unmaskedBegin <= unmaskedEnd <= end, within [0, tiles) where
///   tiles = ceil(seqlen_k / tile_n).
/// * [begin, end) is exactly the set of tiles holding a key visible to some
///   row in [lo, hi]: no visible key is skipped, no visited tile is wholly
///   invisible. (Visible keys of consecutive rows form one interval, since
///   each row's window is non-empty and shifts by one per row.)
/// * [unmaskedBegin, unmaskedEnd) is exactly the set of tiles whose every
///   key is below seqlen_k and visible to every row in [lo, hi]; the other
///   visited tiles need `attn.mask`.
/// * With windowLeft < 0, unmaskedBegin == begin: the tile program has no
///   masked loop on the left edge then.
template <typename V> struct KVTileRange {
  V begin, unmaskedBegin, unmaskedEnd, end;
};

/// The KV tiles of the query rows [lo, hi] (hi < seqlen_q), with the
/// invariants above: the arithmetic of `attn.kv_bounds`, whose rows are a
/// query tile's (computeKVTileRange) or, with packed rows, the positions of
/// its first and last packed rows.
/// `offset` is seqlen_k - seqlen_q, the bottom-right alignment.
template <typename A, typename V>
KVTileRange<V> computeKVTileRangeOfRows(A &a, V lo, V hi, V offset,
                                        V seqlenK, const KVTiling &tiling) {
  int64_t tileN = tiling.tileN;
  int64_t left = tiling.windowLeft, right = tiling.windowRight;
  V zero = a.i32(0);
  V tiles = ceilDiv(a, seqlenK, tileN);

  // Visible tiles: from the tile of row lo's first key to the tile of row
  // hi's last one, clamped to [0, tiles).
  V end = tiles, begin = zero;
  if (right >= 0)
    end = a.smax(zero, a.smin(tiles, ceilDiv(a, a.add(a.add(hi, offset),
                                                      right + 1),
                                             tileN)));
  if (left >= 0)
    begin = a.smin(end, a.smax(zero, floorDiv(a, a.sub(a.add(lo, offset),
                                                       a.i32(left)),
                                              tileN)));
  // Tiles every row sees whole: before the last partial tile, right of the
  // diagonal's reach, left of the window's left edge.
  V unmaskedEnd = floorDiv(a, seqlenK, tileN);
  if (right >= 0)
    unmaskedEnd = a.smin(unmaskedEnd,
                         floorDiv(a, a.add(a.add(lo, offset), right + 1),
                                  tileN));
  unmaskedEnd = a.smax(begin, a.smin(unmaskedEnd, end));
  V unmaskedBegin = begin;
  if (left >= 0)
    unmaskedBegin = a.smin(
        unmaskedEnd,
        a.smax(begin, ceilDiv(a, a.sub(a.add(hi, offset), a.i32(left)),
                              tileN)));
  return {begin, unmaskedBegin, unmaskedEnd, end};
}

/// The KV tiles of query tile m_block.
template <typename A, typename V>
KVTileRange<V> computeKVTileRange(A &a, V mBlock, V seqlenQ, V seqlenK,
                                  const KVTiling &tiling) {
  V offset = a.sub(seqlenK, seqlenQ);
  V lo = a.mul(mBlock, tiling.tileM);
  V hi = a.sub(a.smin(a.add(lo, tiling.tileM), seqlenQ), a.i32(1));
  return computeKVTileRangeOfRows(a, lo, hi, offset, seqlenK, tiling);
}

/// The keys one query row may see: lowest <= j < limit, where `lowest` only
/// applies when hasLowest (windowLeft >= 0).
/// The KV tiles a mask_mod allows a query tile, from the key interval
/// [lo(q), hi(q)] of its first row (lo0, hi0) and its last row (lo1, hi1),
/// lo and hi monotone in q (attn.key_range). Keys any row keeps lie in
/// [min(lo0, lo1), max(hi0, hi1)]; when the interval is exact, keys every
/// row keeps are [max(lo0, lo1), min(hi0, hi1)], and the tiles wholly inside
/// that (and before seqlen_k) need no per-element mask. Inexact intervals
/// have no such tiles: unmaskedBegin = unmaskedEnd = end. Sides may be the
/// sentinels +-attn::kKeyRangeUnbounded (Attn.h).

template <typename A, typename V>
KVTileRange<V> computeKeyRangeTiles(A &a, V lo0, V hi0, V lo1, V hi1,
                                    V seqlenK, int64_t tileN, bool exact) {
  V zero = a.i32(0);
  V lastKey = a.sub(seqlenK, a.i32(1));
  V anyLo = a.smax(zero, a.smin(lo0, lo1));
  V anyHi = a.smin(lastKey, a.smax(hi0, hi1));
  V begin = floorDiv(a, anyLo, tileN);
  // The tile after the last key any row keeps; no tile when anyHi < anyLo.
  V end = a.smax(begin, a.add(floorDiv(a, anyHi, tileN), 1));
  end = a.select(a.slt(anyHi, anyLo), begin, end);
  if (!exact)
    return {begin, end, end, end};
  V allLo = a.smax(zero, a.smax(lo0, lo1));
  V allEnd = a.add(a.smin(hi0, hi1), 1); // one past the last key all keep
  V fullBegin = a.smin(end, a.smax(begin, ceilDiv(a, allLo, tileN)));
  V fullEnd = floorDiv(a, a.smin(allEnd, seqlenK), tileN);
  fullEnd = a.smax(fullBegin, a.smin(end, fullEnd));
  return {begin, fullBegin, fullEnd, end};
}

/// The tiles both `x` and `y` allow: visible where both are, unmasked where
/// both are unmasked; keeps begin <= unmaskedBegin <= unmaskedEnd <= end.
template <typename A, typename V>
KVTileRange<V> intersectTileRanges(A &a, const KVTileRange<V> &x,
                                   const KVTileRange<V> &y) {
  V begin = a.smax(x.begin, y.begin);
  V end = a.smax(begin, a.smin(x.end, y.end));
  V unmaskedBegin =
      a.smin(end, a.smax(begin, a.smax(x.unmaskedBegin, y.unmaskedBegin)));
  V unmaskedEnd = a.smax(unmaskedBegin,
                         a.smin(end, a.smin(x.unmaskedEnd, y.unmaskedEnd)));
  return {begin, unmaskedBegin, unmaskedEnd, end};
}

template <typename V> struct KeyWindow {
  V lowest, limit;
  bool hasLowest;
};

/// The key window of the row whose diagonal is `diagonal` = i + seqlen_k -
/// seqlen_q.
template <typename A, typename V>
KeyWindow<V> computeKeyWindow(A &a, V diagonal, V seqlenK, int64_t windowLeft,
                              int64_t windowRight) {
  KeyWindow<V> window{V(), seqlenK, windowLeft >= 0};
  if (windowRight >= 0)
    window.limit = a.smin(window.limit, a.add(diagonal, windowRight + 1));
  if (window.hasLowest)
    window.lowest = a.sub(diagonal, a.i32(windowLeft));
  return window;
}

/// Whether `attn.mask` sets the score of key `col` to -inf for a row with
/// `window`: exactly when the key is not visible.
template <typename A, typename V>
auto isKeyMasked(A &a, const KeyWindow<V> &window, V col)
    -> decltype(a.sge(col, col)) {
  auto masked = a.sge(col, window.limit);
  if (window.hasLowest)
    masked = a.bitOr(masked, a.slt(col, window.lowest));
  return masked;
}

//===----------------------------------------------------------------------===//
// The query tiles of one KV tile (key-grid kernels)
//===----------------------------------------------------------------------===//

/// The query tiles the window lets KV tile n of a key-grid block see:
/// kv0 = n tile_n, its first key; `tiles` = ceil(seqlen_q / tile_m);
/// `shift` = seqlen_k - seqlen_q; [begin, end) the query tiles with a row
/// that sees a key of [kv0, kv0 + tile_n) (query q sees key k when
/// q + shift - left <= k <= q + shift + right), begin <= end <= tiles.
template <typename V> struct KeyGridTiles {
  V kv0, tiles, shift, begin, end;
};
template <typename A, typename V>
KeyGridTiles<V> computeQueryTilesOfKeys(A &a, V nBlock, V seqlenQ, V seqlenK,
                                        const KVTiling &tiling) {
  int64_t tileM = tiling.tileM, tileN = tiling.tileN;
  int64_t left = tiling.windowLeft, right = tiling.windowRight;
  KeyGridTiles<V> r;
  r.kv0 = a.mul(nBlock, tileN);
  r.tiles = a.udiv(a.add(seqlenQ, a.i32(tileM - 1)), tileM);
  r.shift = a.sub(seqlenK, seqlenQ);
  r.begin = a.i32(0);
  r.end = r.tiles;
  // The first query that sees kv0 is kv0 - shift - right, clamped at 0.
  if (right >= 0) {
    V first = a.sub(a.sub(r.kv0, r.shift), a.i32(right));
    r.begin = a.smin(a.udiv(a.smax(first, a.i32(0)), tileM), r.tiles);
  }
  // The last query that sees the tile's last key is kv0 + tile_n - 1 -
  // shift + left.
  if (left >= 0) {
    V last = a.add(a.sub(a.add(r.kv0, a.i32(tileN - 1)), r.shift),
                   a.i32(left));
    V end = a.udiv(a.add(a.smax(a.add(last, a.i32(1)), a.i32(0)),
                         a.i32(tileM - 1)),
                   tileM);
    r.end = a.smax(a.smin(end, r.tiles), r.begin);
  }
  return r;
}

/// Of the query tiles [begin, end) of KV tile kv0 (begin and end possibly
/// refined further by a mask), those [unmaskedBegin, unmaskedEnd) whose
/// every row is below seqlen_q and sees every key of the tile, which is
/// whole (below seqlen_k): they need no per-element test (a row that sees
/// a key has a finite LSE). begin <= unmaskedBegin <= unmaskedEnd <= end.
template <typename V> struct UnmaskedTiles {
  V begin, end;
};
template <typename A, typename V>
UnmaskedTiles<V> computeUnmaskedQueryTiles(A &a, V kv0, V shift, V begin,
                                           V end, V seqlenQ, V seqlenK,
                                           const KVTiling &tiling) {
  int64_t tileM = tiling.tileM, tileN = tiling.tileN;
  int64_t left = tiling.windowLeft, right = tiling.windowRight;
  V ulo = begin;
  // i tile_m >= kv0 + tile_n - 1 - shift - right: the tile's first row
  // sees its last key.
  if (right >= 0) {
    V first = a.sub(a.sub(a.add(kv0, a.i32(tileN - 1)), shift),
                    a.i32(right));
    ulo = a.udiv(a.add(a.smax(first, a.i32(0)), a.i32(tileM - 1)), tileM);
  }
  // (i + 1) tile_m <= seqlen_q, and <= kv0 + 1 - shift + left: the tile's
  // last row is valid and sees its first key.
  V uhi = a.udiv(seqlenQ, tileM);
  if (left >= 0) {
    V last = a.add(a.sub(a.add(kv0, a.i32(1)), shift), a.i32(left));
    uhi = a.smin(uhi, a.udiv(a.smax(last, a.i32(0)), tileM));
  }
  ulo = a.smin(a.smax(ulo, begin), end);
  uhi = a.smax(a.smin(uhi, end), ulo);
  // A key tile past seqlen_k's end masks every tile.
  auto wholeKeys = a.sle(a.add(kv0, a.i32(tileN)), seqlenK);
  uhi = a.select(wholeKeys, uhi, ulo);
  return {ulo, uhi};
}

/// Whether entry (query, key) of a key-grid block's tile is outside the
/// problem: past either sequence or outside the window (`shift` = seqlen_k
/// - seqlen_q). Exactly the complement of visibility for a row below
/// seqlen_q.
template <typename A, typename V>
auto isEntryOutside(A &a, V query, V key, V seqlenQ, V seqlenK, V shift,
                    int64_t windowLeft, int64_t windowRight)
    -> decltype(a.sge(key, key)) {
  V diagonal = a.add(query, shift);
  auto pastKeys = a.sge(key, seqlenK);
  auto pastQueries = a.sge(query, seqlenQ);
  auto out = a.bitOr(pastKeys, pastQueries);
  if (windowRight >= 0)
    out = a.bitOr(out, a.sgt(key, a.add(diagonal, a.i32(windowRight))));
  if (windowLeft >= 0)
    out = a.bitOr(out, a.slt(key, a.sub(diagonal, a.i32(windowLeft))));
  return out;
}

//===----------------------------------------------------------------------===//
// The query tiles of one KV tile a mask_mod allows (attn.query_range)
//===----------------------------------------------------------------------===//
//
// A key-grid block owns the keys [k0, k1] of its KV tile and visits query
// rows. Row q has the key interval [lo(q), hi(q)] of a key_range body; the
// rows whose interval meets the tile are those where
//
//   starts(q): lo(q) <= k1   and   ends(q): hi(q) >= k0.
//
// With lo and hi monotone in q, each predicate changes at most once along
// the rows, so the rows where both hold are one interval, found by
// bisecting each predicate for its change. Otherwise the query-grid kernel
// of the family writes each query tile's KV tiles [first, end), and the
// same test, with query tiles for rows, [first, end - 1] for the interval
// and k0 = k1 = the KV tile, is scanned over them. Rows travel as an
// inclusive [first, last], empty when first > last. The templates take,
// beyond the policy of the window arithmetic above:
//
//   B bitXor(B, B)                        of two comparison results
//   V ctlz(V)                             leading zeros of an i32 (32 for 0)
//   std::array<V, N> loop(V count, std::array<V, N> init, Body body)
//                                         `count` times state = body(i, state)
//
// and `interval(q)`, which returns the pair (lo, hi) of row q. The same
// searches find the rows that keep a whole tile (attn.query_range exact):
// those whose interval holds [k0, k1], lo(q) <= k0 and hi(q) >= k1, one
// run when the intervals are monotone; scanned otherwise, and kept only
// where the scan finds one run.

/// Rows [first, last] of [r0, r1] where a predicate that changes at most
/// once holds, from its values p0 at r0 and p1 at r1 and `change`, the
/// first row whose value differs from p0 (used only when p0 != p1).
template <typename A, typename V, typename B>
std::pair<V, V> monotoneRows(A &a, V r0, V r1, B p0, B p1, V change) {
  V first = a.select(p0, r0, a.select(p1, change, a.add(r1, 1)));
  V last = a.select(p1, r1,
                    a.select(p0, a.sub(change, a.i32(1)),
                             a.sub(r0, a.i32(1))));
  return {first, last};
}

/// The rows of [r0, r1] (r0 <= r1, all valid rows to evaluate) whose
/// monotone interval meets keys [k0, k1]: both predicates at both ends,
/// then a bisection per predicate for its change, one evaluation of each
/// per step, bit_length(r1 - r0) steps: 2 + 2 bit_length(r1 - r0)
/// evaluations in all. Invariant of each search (lo, hi) when the predicate
/// differs at r0 and r1 (otherwise its result is not used): the predicate
/// at lo equals its value at r0 and at hi differs from it; the step count
/// takes hi - lo down to 1, so hi is the change.
template <typename A, typename V, typename IntervalFn, typename LoopFn>
std::pair<V, V> bisectMeetingRows(A &a, V r0, V r1, V k0, V k1,
                                  IntervalFn interval, LoopFn loop) {
  auto starts = [&](V q) { return a.sge(k1, interval(q).first); };
  auto ends = [&](V q) { return a.sge(interval(q).second, k0); };
  auto [lo0, hi0] = interval(r0);
  auto [lo1, hi1] = interval(r1);
  auto s0 = a.sge(k1, lo0), s1 = a.sge(k1, lo1);
  auto e0 = a.sge(hi0, k0), e1 = a.sge(hi1, k0);
  V steps = a.sub(a.i32(32), a.ctlz(a.sub(r1, r0)));
  auto bisect = [&](V lo, V hi, auto value, auto atR0) -> std::pair<V, V> {
    V mid = a.add(lo, a.sdiv(a.sub(hi, lo), a.i32(2)));
    auto differs = a.bitXor(value(mid), atR0);
    return {a.select(differs, lo, mid), a.select(differs, mid, hi)};
  };
  std::array<V, 4> found = loop(
      steps, std::array<V, 4>{r0, r1, r0, r1},
      [&](V, const std::array<V, 4> &x) {
        auto [sLo, sHi] = bisect(x[0], x[1], starts, s0);
        auto [eLo, eHi] = bisect(x[2], x[3], ends, e0);
        return std::array<V, 4>{sLo, sHi, eLo, eHi};
      });
  auto [sFirst, sLast] = monotoneRows(a, r0, r1, s0, s1, found[1]);
  auto [eFirst, eLast] = monotoneRows(a, r0, r1, e0, e1, found[3]);
  return {a.smax(sFirst, eFirst), a.smin(sLast, eLast)};
}

/// The rows of [r0, r1] whose monotone interval holds every key of [k0,
/// k1] (lo <= k0 and hi >= k1): bisectMeetingRows with the keys swapped,
/// as each predicate still changes at most once along the rows.
template <typename A, typename V, typename IntervalFn, typename LoopFn>
std::pair<V, V> bisectCoveringRows(A &a, V r0, V r1, V k0, V k1,
                                   IntervalFn interval, LoopFn loop) {
  return bisectMeetingRows(a, r0, r1, k1, k0, interval, loop);
}

/// The rows of [r0, r1] (r0 <= r1) whose interval, monotone or not, meets
/// keys [k0, k1], as one lane of `lanes` sees them: it evaluates rows r0 +
/// lane, r0 + lane + lanes, ... (past r1 clamped to r1, which changes
/// nothing), `unroll` of them per step so that their loads are in flight
/// together, and returns the first and last meeting row among them (r1 + 1
/// and r0 - 1 when none); the caller takes the minimum and maximum over the
/// lanes. With `counted`, also how many rows meet (a clamped row counts
/// once), which the caller sums over the lanes: the rows are one run
/// exactly when that is last - first + 1.
template <int64_t unroll, bool counted = false, typename A, typename V,
          typename IntervalFn, typename LoopFn>
auto scanMeetingRows(A &a, V r0, V r1, V k0, V k1, V lane, int64_t lanes,
                     IntervalFn interval, LoopFn loop) {
  constexpr std::size_t n = counted ? 3 : 2;
  int64_t stride = lanes * unroll;
  V steps = a.sdiv(a.add(a.sub(r1, r0), stride), a.i32(stride));
  std::array<V, n> init;
  init[0] = a.add(r1, 1);
  init[1] = a.sub(r0, a.i32(1));
  if constexpr (counted)
    init[2] = a.i32(0);
  return loop(steps, init, [&](V i, const std::array<V, n> &x) {
    V base = a.add(a.add(r0, lane), a.mul(i, stride));
    std::array<V, n> next = x;
    for (int64_t u = 0; u < unroll; ++u) {
      V unclamped = a.add(base, u * lanes);
      V q = a.smin(unclamped, r1);
      auto [lo, hi] = interval(q);
      auto misses = a.bitOr(a.slt(k1, lo), a.slt(hi, k0));
      next[0] = a.select(misses, next[0], a.smin(next[0], q));
      next[1] = a.select(misses, next[1], a.smax(next[1], q));
      if constexpr (counted)
        next[2] = a.select(a.bitOr(misses, a.slt(r1, unclamped)), next[2],
                           a.add(next[2], 1));
    }
    return next;
  });
}

/// Rows [first, last] (lanes reduced) of `count` meeting rows, if they are
/// one run; otherwise none (last + 1, last).
template <typename A, typename V>
std::pair<V, V> wholeRunOrNone(A &a, V first, V last, V count) {
  V span = a.add(a.sub(last, first), a.i32(1));
  auto differs = a.bitOr(a.slt(count, span), a.slt(span, count));
  return {a.select(differs, a.add(last, a.i32(1)), first), last};
}

/// The query tiles whose every row is in [first, last] (empty when last <
/// first), as [begin, end) with begin <= end; first >= 0 when not empty.
template <typename A, typename V>
std::pair<V, V> rowsToWholeQueryTiles(A &a, V first, V last, int64_t tileM) {
  V begin = ceilDiv(a, a.smax(first, a.i32(0)), tileM);
  V end = floorDiv(a, a.add(last, a.i32(1)), tileM);
  return {begin, a.smax(begin, end)};
}

/// The query tiles [begin, end) of `within` that hold a row of [first,
/// last] (begin == end when the rows are empty). first >= 0 when not empty.
template <typename A, typename V>
std::pair<V, V> rowsToQueryTiles(A &a, V first, V last, V withinBegin,
                                 V withinEnd, int64_t tileM) {
  auto empty = a.slt(last, first);
  V begin = a.smax(withinBegin, floorDiv(a, a.smax(first, a.i32(0)), tileM));
  V end = a.smin(withinEnd, a.add(floorDiv(a, a.smax(last, a.i32(0)), tileM),
                                  1));
  end = a.smax(begin, end);
  begin = a.select(empty, withinBegin, begin);
  end = a.select(empty, withinBegin, end);
  return {begin, end};
}

} // namespace flashtile::attn

#endif // FLASHTILE_DIALECT_ATTN_UTILS_KVBOUNDS_H
