//===- KVBoundsTest.cpp - Tile ranges and masks against brute force -------===//
//
// Evaluates the window arithmetic of KVBounds.h, the same templates the
// lowering and the backward's tile program emit as IR, on the host with i32
// semantics, and checks the contract of attn.kv_bounds and attn.mask, of
// the key-grid kernel's query-tile ranges and entry test, and of the
// key-interval searches, against a per-element reference of visibility,
// for many sequence lengths, windows and tile shapes.
//
//===----------------------------------------------------------------------===//

#include "flashtile/Dialect/Attn/Utils/KVBounds.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <functional>
#include <cstdint>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

using namespace flashtile::attn;

namespace {

/// The LLVM i32 ops the lowering emits, on the host: values are int64_t
/// holding i32 values, add / sub / mul wrap modulo 2^32, sdiv rounds toward
/// zero like llvm.sdiv (and C++ `/`), comparisons give bool.
struct HostI32 {
  static int64_t wrap(int64_t v) {
    return static_cast<int32_t>(static_cast<uint32_t>(v));
  }
  int64_t i32(int64_t v) { return wrap(v); }
  int64_t add(int64_t a, int64_t c) { return wrap(a + c); }
  int64_t sub(int64_t a, int64_t c) { return wrap(a - c); }
  int64_t mul(int64_t a, int64_t c) { return wrap(a * c); }
  int64_t sdiv(int64_t a, int64_t c) { return wrap(a / c); }
  int64_t smin(int64_t a, int64_t c) { return std::min(a, c); }
  int64_t smax(int64_t a, int64_t c) { return std::max(a, c); }
  int64_t udiv(int64_t a, int64_t c) {
    return wrap(int64_t(uint32_t(a) / uint32_t(c)));
  }
  bool slt(int64_t a, int64_t c) { return a < c; }
  bool sle(int64_t a, int64_t c) { return a <= c; }
  bool sgt(int64_t a, int64_t c) { return a > c; }
  bool sge(int64_t a, int64_t c) { return a >= c; }
  int64_t select(bool cond, int64_t a, int64_t c) { return cond ? a : c; }
  bool bitOr(bool a, bool c) { return a || c; }
  bool bitXor(bool a, bool c) { return a != c; }
  int64_t ctlz(int64_t a) {
    uint32_t v = static_cast<uint32_t>(a);
    int64_t zeros = 0;
    for (uint32_t bit = 1u << 31; bit && !(v & bit); bit >>= 1)
      ++zeros;
    return zeros;
  }
};

/// The loop of the query-tile search, on the host: `count` times state =
/// body(i, state).
auto hostLoop = [](int64_t count, auto state, auto body) {
  for (int64_t i = 0; i < count; ++i)
    state = body(i, state);
  return state;
};

/// One problem and tiling; causal attention is windowRight = 0.
struct Case {
  int64_t seqlenQ, seqlenK;
  KVTiling tiling;

  std::string str() const {
    std::ostringstream os;
    os << "seqlen_q=" << seqlenQ << " seqlen_k=" << seqlenK
       << " window=(" << tiling.windowLeft << "," << tiling.windowRight
       << ") tile_m=" << tiling.tileM << " tile_n=" << tiling.tileN;
    return os.str();
  }
};

/// The reference: key j is visible to query row i.
bool isVisible(const Case &c, int64_t i, int64_t j) {
  int64_t offset = c.seqlenK - c.seqlenQ;
  if (j < 0 || j >= c.seqlenK)
    return false;
  if (c.tiling.windowLeft >= 0 && j < i + offset - c.tiling.windowLeft)
    return false;
  if (c.tiling.windowRight >= 0 && j > i + offset + c.tiling.windowRight)
    return false;
  return true;
}

int64_t ceilDivHost(int64_t a, int64_t c) { return (a + c - 1) / c; }

/// Checks query tile `mBlock` of `c`; returns the first violation, or an
/// empty string. The tile program (ExpandToTiles.cpp) visits KV tiles in
/// three kv_loops: masked [unmasked_end, end), unmasked [unmasked_begin,
/// unmasked_end), and, only when window_left >= 0, masked [begin,
/// unmasked_begin). A masked tile gets attn.mask; an unmasked one none.
/// Only rows below seqlen_q count: the others are never stored.
std::string checkBlock(const Case &c, int64_t mBlock) {
  HostI32 a;
  const KVTiling &t = c.tiling;
  KVTileRange<int64_t> r =
      computeKVTileRange(a, mBlock, c.seqlenQ, c.seqlenK, t);
  int64_t lo = mBlock * t.tileM;
  int64_t hi = std::min(lo + t.tileM, c.seqlenQ) - 1;
  int64_t tiles = ceilDivHost(c.seqlenK, t.tileN);

  std::ostringstream err;
  err << c.str() << " m_block=" << mBlock << " -> begin=" << r.begin
      << " unmasked=[" << r.unmaskedBegin << "," << r.unmaskedEnd
      << ") end=" << r.end << ": ";
  if (!(0 <= r.begin && r.begin <= r.unmaskedBegin &&
        r.unmaskedBegin <= r.unmaskedEnd && r.unmaskedEnd <= r.end &&
        r.end <= tiles))
    return err.str() + "ranges out of order or outside [0, tiles)";
  // Without a left edge there is no masked loop below unmasked_begin.
  if (t.windowLeft < 0 && r.unmaskedBegin != r.begin)
    return err.str() + "unmasked_begin != begin without a left window";

  for (int64_t tile = 0; tile < tiles; ++tile) {
    bool visited = r.begin <= tile && tile < r.end;
    bool unmasked = r.unmaskedBegin <= tile && tile < r.unmaskedEnd;
    bool anyVisible = false, allVisible = true;
    for (int64_t i = lo; i <= hi; ++i) {
      // As the mask lowering forms it: row + (seqlen_k - seqlen_q).
      KeyWindow<int64_t> window =
          computeKeyWindow(a, a.add(i, a.sub(c.seqlenK, c.seqlenQ)), c.seqlenK,
                           t.windowLeft, t.windowRight);
      for (int64_t j = tile * t.tileN; j < (tile + 1) * t.tileN; ++j) {
        bool visible = isVisible(c, i, j);
        anyVisible |= visible;
        allVisible &= visible;
        if (visited && !unmasked && isKeyMasked(a, window, j) == visible) {
          std::ostringstream os;
          os << "attn.mask " << (visible ? "masks visible" : "keeps invisible")
             << " (row " << i << ", key " << j << ") of masked tile " << tile;
          return err.str() + os.str();
        }
      }
    }
    std::ostringstream os;
    if (anyVisible && !visited)
      os << "tile " << tile << " holds a visible key but is not visited";
    else if (!anyVisible && visited)
      os << "tile " << tile << " is visited but holds no visible key";
    else if (unmasked && !allVisible)
      os << "tile " << tile << " is unmasked but holds an invisible key";
    else if (!unmasked && allVisible)
      os << "tile " << tile << " is wholly visible but masked";
    if (!os.str().empty())
      return err.str() + os.str();
  }
  return "";
}

/// Checks every query tile of `c`; at most one failure per case.
void checkCase(const Case &c) {
  int64_t mBlocks = ceilDivHost(c.seqlenQ, c.tiling.tileM);
  for (int64_t m = 0; m < mBlocks; ++m) {
    std::string failure = checkBlock(c, m);
    if (!failure.empty()) {
      ADD_FAILURE() << failure;
      return;
    }
  }
}

const std::vector<KVTiling> kTileShapes = {
    {16, 16, 0, 0},  {16, 128, 0, 0}, {32, 48, 0, 0},  {64, 32, 0, 0},
    {64, 64, 0, 0},  {128, 16, 0, 0}, {128, 64, 0, 0}, {128, 128, 0, 0},
};

} // namespace

TEST(KVBoundsTest, HostDivisionRoundsLikeTheEmitter) {
  HostI32 a;
  for (int64_t c : {1, 3, 16, 64, 128})
    for (int64_t x = -300; x <= 300; ++x) {
      int64_t floor = x >= 0 ? x / c : -((-x + c - 1) / c);
      EXPECT_EQ(floorDiv(a, x, c), floor) << x << " / " << c;
      EXPECT_EQ(ceilDiv(a, x, c), floor + (floor * c != x)) << x << " / " << c;
    }
}

/// Causal, seqlen_q = seqlen_k = 128, 64 x 32 tiles, worked by hand.
TEST(KVBoundsTest, CausalExample) {
  HostI32 a;
  KVTiling tiling{64, 32, -1, 0};
  // Rows 0-63 see keys up to 63: tiles 0-1, all cut by the diagonal.
  KVTileRange<int64_t> r0 = computeKVTileRange(a, int64_t(0), int64_t(128),
                                               int64_t(128), tiling);
  EXPECT_EQ(r0.begin, 0);
  EXPECT_EQ(r0.unmaskedBegin, 0);
  EXPECT_EQ(r0.unmaskedEnd, 0);
  EXPECT_EQ(r0.end, 2);
  // Rows 64-127: tiles 0-1 whole, tiles 2-3 cut.
  KVTileRange<int64_t> r1 = computeKVTileRange(a, int64_t(1), int64_t(128),
                                               int64_t(128), tiling);
  EXPECT_EQ(r1.begin, 0);
  EXPECT_EQ(r1.unmaskedBegin, 0);
  EXPECT_EQ(r1.unmaskedEnd, 2);
  EXPECT_EQ(r1.end, 4);
  // seqlen_q > seqlen_k: bottom-right alignment leaves rows 0-63 of
  // seqlen_q = 200, seqlen_k = 100 with no key at all.
  KVTileRange<int64_t> empty = computeKVTileRange(a, int64_t(0), int64_t(200),
                                                  int64_t(100), tiling);
  EXPECT_EQ(empty.begin, empty.end);
}

/// Every pair of a list of sequence lengths (odd ones, tile multiples and
/// their neighbours, seqlen_q above and below seqlen_k) with every window
/// and tile shape.
TEST(KVBoundsTest, MatchesBruteForce) {
  const int64_t seqlens[] = {1,  2,   3,   15,  16,  17,  33,  63,
                             64, 65,  127, 128, 129, 200, 257, 300};
  const int64_t sides[] = {-1, 0, 1, 7, 64, 300};
  for (int64_t sq : seqlens)
    for (int64_t sk : seqlens)
      for (int64_t left : sides)
        for (int64_t right : sides)
          for (KVTiling shape : kTileShapes) {
            shape.windowLeft = left;
            shape.windowRight = right;
            checkCase({sq, sk, shape});
          }
}

/// Random lengths in [1, 300] and random windows, including sides that are
/// not tile multiples.
TEST(KVBoundsTest, MatchesBruteForceRandom) {
  std::mt19937 rng(20240611);
  std::uniform_int_distribution<int64_t> seqlen(1, 300), side(-1, 150),
      shape(0, kTileShapes.size() - 1), coin(0, 3);
  for (int n = 0; n < 3000; ++n) {
    KVTiling tiling = kTileShapes[shape(rng)];
    // Unbounded sides and causal (right = 0) come up often.
    tiling.windowLeft = coin(rng) == 0 ? -1 : side(rng);
    int64_t right = coin(rng);
    tiling.windowRight = right == 0 ? -1 : right == 1 ? 0 : side(rng);
    checkCase({seqlen(rng), seqlen(rng), tiling});
  }
}

/// computeKeyRangeTiles and intersectTileRanges (attn.key_range) against
/// brute force, for masks with a monotone key interval: prefix-LM
/// (k <= max(q, P - 1)), chunked (q / C == k / C), a band, each alone and
/// intersected with causal. Tiles outside [begin, end) keep no key; tiles in
/// [unmaskedBegin, unmaskedEnd) are kept whole (and visible whole) by every
/// valid row.
TEST(KVBoundsTest, KeyRangeMatchesBruteForce) {
  HostI32 a;
  const int64_t kUnbounded = int64_t(1) << 30;
  struct Mask {
    const char *name;
    std::function<std::pair<int64_t, int64_t>(int64_t)> interval;
  };
  std::mt19937 rng(7);
  std::uniform_int_distribution<int64_t> seqlen(1, 300), param(1, 200),
      shape(0, kTileShapes.size() - 1), coin(0, 1);
  for (int n = 0; n < 3000; ++n) {
    int64_t sq = seqlen(rng), sk = seqlen(rng), p = param(rng);
    KVTiling tiling = kTileShapes[shape(rng)];
    bool causal = coin(rng);
    tiling.windowLeft = -1;
    tiling.windowRight = causal ? 0 : -1;
    Mask masks[] = {
        {"prefix_lm",
         [&](int64_t q) {
           return std::make_pair(-kUnbounded, std::max(q, p - 1));
         }},
        {"chunked",
         [&](int64_t q) {
           return std::make_pair(q / p * p, q / p * p + p - 1);
         }},
        {"band", [&](int64_t q) { return std::make_pair(q - p, q + p / 2); }},
    };
    for (const Mask &mask : masks) {
      Case c{sq, sk, tiling};
      std::string what = c.str() + " mask=" + mask.name + " p=" +
                         std::to_string(p);
      int64_t tiles = (sk + tiling.tileN - 1) / tiling.tileN;
      int64_t mBlocks = (sq + tiling.tileM - 1) / tiling.tileM;
      for (int64_t m = 0; m < mBlocks; ++m) {
        int64_t first = m * tiling.tileM;
        int64_t last = std::min(first + tiling.tileM, sq) - 1;
        auto [lo0, hi0] = mask.interval(first);
        auto [lo1, hi1] = mask.interval(last);
        KVTileRange<int64_t> window =
            computeKVTileRange(a, m, sq, sk, tiling);
        KVTileRange<int64_t> keys = computeKeyRangeTiles(
            a, lo0, hi0, lo1, hi1, sk, tiling.tileN, /*exact=*/true);
        KVTileRange<int64_t> r = intersectTileRanges(a, window, keys);
        ASSERT_LE(r.begin, r.unmaskedBegin) << what;
        ASSERT_LE(r.unmaskedBegin, r.unmaskedEnd) << what;
        ASSERT_LE(r.unmaskedEnd, r.end) << what;
        for (int64_t t = 0; t < tiles; ++t) {
          bool any = false, all = true;
          for (int64_t i = first; i <= last; ++i) {
            auto [lo, hi] = mask.interval(i);
            for (int64_t j = t * tiling.tileN; j < (t + 1) * tiling.tileN;
                 ++j) {
              bool kept = j < sk && isVisible(c, i, j) && lo <= j && j <= hi;
              any |= kept;
              all &= kept;
            }
          }
          bool inRange = r.begin <= t && t < r.end;
          bool unmasked = r.unmaskedBegin <= t && t < r.unmaskedEnd;
          EXPECT_TRUE(!any || inRange)
              << what << " m=" << m << ": tile " << t
              << " keeps keys but lies outside [" << r.begin << ", "
              << r.end << ")";
          EXPECT_TRUE(!unmasked || all)
              << what << " m=" << m << ": tile " << t
              << " runs unmasked but is not kept whole";
        }
      }
    }
  }
}

/// bisectMeetingRows, scanMeetingRows and rowsToQueryTiles (attn.query_range)
/// against brute force: for each KV tile and a random range of query tiles,
/// the tiles found are exactly those holding a row below seqlen_q whose
/// interval meets a key of the tile below seqlen_k. Bisection is checked on
/// the monotone masks (and costs 2 + 2 bit_length(r1 - r0) evaluations),
/// the scan, lane by lane, on those and on intervals that are not monotone
/// (a varlen mask's per-sequence ranges, random ones).
TEST(KVBoundsTest, QueryTilesMatchBruteForce) {
  HostI32 a;
  const int64_t kUnbounded = int64_t(1) << 30;
  std::mt19937 rng(11);
  std::uniform_int_distribution<int64_t> seqlen(1, 300), param(1, 200),
      shape(0, kTileShapes.size() - 1);
  for (int n = 0; n < 1500; ++n) {
    int64_t sq = seqlen(rng), sk = seqlen(rng), p = param(rng);
    KVTiling tiling = kTileShapes[shape(rng)];
    int64_t tileM = tiling.tileM, tileN = tiling.tileN;
    // Sequences of a packed batch: row q belongs to sequence q / p and sees
    // its keys [start, end); random intervals per row.
    std::vector<std::pair<int64_t, int64_t>> randomRows(sq);
    for (auto &row : randomRows) {
      int64_t lo = int64_t(rng() % (sk + 20)) - 10;
      row = {lo, lo + int64_t(rng() % 40) - 5};
    }
    struct Mask {
      const char *name;
      bool monotone;
      std::function<std::pair<int64_t, int64_t>(int64_t)> interval;
    };
    Mask masks[] = {
        {"prefix_lm", true,
         [&](int64_t q) {
           return std::make_pair(-kUnbounded, std::max(q, p - 1));
         }},
        {"chunked", true,
         [&](int64_t q) {
           return std::make_pair(q / p * p, q / p * p + p - 1);
         }},
        {"band", true,
         [&](int64_t q) { return std::make_pair(q - p, q + p / 2); }},
        {"reversed", true,
         [&](int64_t q) { return std::make_pair(sk - q - p, sk - q); }},
        {"packed", false,
         [&](int64_t q) {
           int64_t start = q / p * p * sk / std::max<int64_t>(sq, 1);
           return std::make_pair(start, start + p / 2);
         }},
        {"random", false, [&](int64_t q) { return randomRows[q]; }},
    };
    int64_t mTiles = (sq + tileM - 1) / tileM;
    int64_t nTiles = (sk + tileN - 1) / tileN;
    for (const Mask &mask : masks) {
      for (int64_t t = 0; t < nTiles; ++t) {
        int64_t withinBegin = int64_t(rng() % (mTiles + 1));
        int64_t withinEnd =
            withinBegin + int64_t(rng() % (mTiles - withinBegin + 1));
        int64_t r0 = withinBegin * tileM;
        int64_t r1 = std::min(withinEnd * tileM, sq) - 1;
        int64_t k0 = t * tileN, k1 = std::min(k0 + tileN, sk) - 1;
        std::string what = std::string(mask.name) + " sq=" +
                           std::to_string(sq) + " sk=" + std::to_string(sk) +
                           " p=" + std::to_string(p) + " tile " +
                           std::to_string(t) + " within [" +
                           std::to_string(withinBegin) + ", " +
                           std::to_string(withinEnd) + ")";
        // The brute-force tiles: first and one past the last that meet.
        int64_t want0 = withinBegin, want1 = withinBegin;
        bool found = false;
        for (int64_t q = r0; q <= r1; ++q) {
          auto [lo, hi] = mask.interval(q);
          if (lo <= k1 && hi >= k0) {
            if (!found)
              want0 = q / tileM;
            want1 = q / tileM + 1;
            found = true;
          }
        }
        if (r1 < r0)
          continue; // the lowering evaluates nothing then
        int64_t calls = 0;
        auto interval = [&](int64_t q) {
          EXPECT_TRUE(r0 <= q && q <= r1) << what << ": evaluates row " << q;
          ++calls;
          return mask.interval(q);
        };
        if (mask.monotone) {
          auto [first, last] =
              bisectMeetingRows(a, r0, r1, k0, k1, interval, hostLoop);
          auto [begin, end] =
              rowsToQueryTiles(a, first, last, withinBegin, withinEnd, tileM);
          EXPECT_EQ(begin, want0) << what << " (bisection)";
          EXPECT_EQ(end, want1) << what << " (bisection)";
          int64_t bits = 32 - a.ctlz(r1 - r0);
          EXPECT_EQ(calls, 2 + 2 * bits) << what;
        }
        // The scan, each of 32 lanes, then the warp's reduction; one row
        // and four per lane and step.
        auto scan = [&](auto unroll) {
          int64_t first = r1 + 1, last = r0 - 1;
          for (int64_t lane = 0; lane < 32; ++lane) {
            auto rows = scanMeetingRows<decltype(unroll)::value>(
                a, r0, r1, k0, k1, lane, 32, interval, hostLoop);
            first = std::min(first, rows[0]);
            last = std::max(last, rows[1]);
          }
          auto [begin, end] =
              rowsToQueryTiles(a, first, last, withinBegin, withinEnd, tileM);
          EXPECT_EQ(begin, want0) << what << " (scan by " << unroll << ")";
          EXPECT_EQ(end, want1) << what << " (scan by " << unroll << ")";
        };
        scan(std::integral_constant<int64_t, 1>());
        scan(std::integral_constant<int64_t, 4>());

        // The rows that keep the whole tile (query_range exact): lo <= k0
        // and hi >= k1. Brute force: the set, whether it is one run, and
        // the tiles of `within` whose every row (all below seqlen_q) is in
        // it.
        std::vector<int64_t> covering;
        for (int64_t q = r0; q <= r1; ++q) {
          auto [lo, hi] = mask.interval(q);
          if (lo <= k0 && hi >= k1)
            covering.push_back(q);
        }
        bool oneRun = !covering.empty() &&
                      covering.back() - covering.front() + 1 ==
                          int64_t(covering.size());
        auto wholeTiles = [&](int64_t first, int64_t last) {
          auto [begin, end] = rowsToWholeQueryTiles(a, first, last, tileM);
          begin = std::min(std::max(begin, withinBegin), withinEnd);
          end = std::max(begin, std::min(end, withinEnd));
          return std::make_pair(begin, end);
        };
        std::set<int64_t> wantWhole;
        for (int64_t m = withinBegin; m < withinEnd; ++m) {
          bool whole = (m + 1) * tileM - 1 <= r1;
          for (int64_t q = m * tileM; whole && q < (m + 1) * tileM; ++q)
            whole = std::find(covering.begin(), covering.end(), q) !=
                    covering.end();
          if (whole)
            wantWhole.insert(m);
        }
        if (mask.monotone) {
          // Monotone intervals: one run (or none), found by bisection.
          EXPECT_TRUE(covering.empty() || oneRun) << what;
          auto [first, last] =
              bisectCoveringRows(a, r0, r1, k0, k1, mask.interval, hostLoop);
          if (covering.empty()) {
            EXPECT_LT(last, first) << what << " (covering bisection)";
          } else {
            EXPECT_EQ(first, covering.front()) << what << " (covering)";
            EXPECT_EQ(last, covering.back()) << what << " (covering)";
          }
          auto [begin, end] = wholeTiles(first, last);
          std::set<int64_t> got;
          for (int64_t m = begin; m < end; ++m)
            got.insert(m);
          EXPECT_EQ(got, wantWhole) << what << " (whole tiles)";
        }
        // The counted scan, lanes reduced: the run where the covering rows
        // are one, none otherwise.
        int64_t first = r1 + 1, last = r0 - 1, count = 0;
        for (int64_t lane = 0; lane < 32; ++lane) {
          auto rows = scanMeetingRows<4, true>(a, r0, r1, k1, k0, lane, 32,
                                               mask.interval, hostLoop);
          first = std::min(first, rows[0]);
          last = std::max(last, rows[1]);
          count += rows[2];
        }
        EXPECT_EQ(count, int64_t(covering.size())) << what << " (count)";
        auto [runFirst, runLast] = wholeRunOrNone(a, first, last, count);
        if (oneRun) {
          EXPECT_EQ(runFirst, covering.front()) << what << " (run)";
          EXPECT_EQ(runLast, covering.back()) << what << " (run)";
        } else {
          EXPECT_LT(runLast, runFirst) << what << " (no run)";
        }
      }
    }
  }
}

/// The key-grid kernel's window arithmetic (the backward's main kernel:
/// one block per KV tile, stepping over query tiles) against brute force:
/// [begin, end) holds every query tile with a valid row that sees a key of
/// the tile; [unmaskedBegin, unmaskedEnd) lies within it and holds only
/// tiles whose every row is valid and sees every key of the tile, all below
/// seqlen_k; and the per-entry test is exactly invisibility.
TEST(KVBoundsTest, KeyGridMatchesBruteForce) {
  HostI32 a;
  std::mt19937 rng(13);
  std::uniform_int_distribution<int64_t> seqlen(1, 300), side(-1, 150),
      shape(0, kTileShapes.size() - 1);
  for (int n = 0; n < 4000; ++n) {
    int64_t sq = seqlen(rng), sk = seqlen(rng);
    KVTiling tiling = kTileShapes[shape(rng)];
    tiling.windowLeft = side(rng);
    tiling.windowRight = n % 3 == 0 ? 0 : side(rng);
    Case c{sq, sk, tiling};
    std::string what = c.str();
    int64_t tileM = tiling.tileM, tileN = tiling.tileN;
    int64_t nTiles = (sk + tileN - 1) / tileN;
    for (int64_t t = 0; t < nTiles; ++t) {
      KeyGridTiles<int64_t> r = computeQueryTilesOfKeys(a, t, sq, sk, tiling);
      UnmaskedTiles<int64_t> u = computeUnmaskedQueryTiles(
          a, r.kv0, r.shift, r.begin, r.end, sq, sk, tiling);
      ASSERT_EQ(r.kv0, t * tileN) << what;
      ASSERT_EQ(r.shift, sk - sq) << what;
      ASSERT_LE(0, r.begin) << what;
      ASSERT_LE(r.begin, u.begin) << what << " key tile " << t;
      ASSERT_LE(u.begin, u.end) << what << " key tile " << t;
      ASSERT_LE(u.end, r.end) << what << " key tile " << t;
      ASSERT_LE(r.end, r.tiles) << what;
      for (int64_t m = 0; m < r.tiles; ++m) {
        bool any = false, all = true;
        for (int64_t i = m * tileM; i < (m + 1) * tileM; ++i)
          for (int64_t j = t * tileN; j < (t + 1) * tileN; ++j) {
            bool seen = i < sq && isVisible(c, i, j);
            any |= seen;
            all &= seen;
            EXPECT_EQ(isEntryOutside(a, i, j, sq, sk, r.shift,
                                     tiling.windowLeft, tiling.windowRight),
                      !seen)
                << what << " entry (" << i << ", " << j << ")";
          }
        bool visited = r.begin <= m && m < r.end;
        bool unmasked = u.begin <= m && m < u.end;
        EXPECT_TRUE(!any || visited)
            << what << " key tile " << t << ": query tile " << m
            << " sees a key but lies outside [" << r.begin << ", " << r.end
            << ")";
        EXPECT_TRUE(!unmasked || all)
            << what << " key tile " << t << ": query tile " << m
            << " runs unmasked but does not see the whole tile";
      }
    }
  }
}
