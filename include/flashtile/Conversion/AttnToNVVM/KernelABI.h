//===- KernelABI.h - The interface of a compiled kernel ---------*- C++ -*-===//
//
// The one derivation of a compiled kernel's interface from its `attn.kernel`
// op: its parameters in order, its user-facing arguments with their shape
// and layout rules, the named run-time sizes, the checks a launch must pass
// and the grid. The lowering builds the kernel's signature and reads the
// grid from here; the compiler writes the same facts into the launch plan
// (flashtile/ABI/LaunchPlan.h), which the runtime packs from. Nothing
// else lists parameters.
//
// The kernel's sequence tensors come first (attn.kernel's `tensors`; by
// default the forward's Q, K, V, O, LSE): a rank-4 one is (batch, rows,
// heads, dim) with dim contiguous, a rank-3 one (batch, heads, rows) with
// rows contiguous. Strides are in elements. The parameters begin with every
// tensor's pointer, in order; then the sizes they are declared over, the
// rows sizes first and then the heads sizes, each once, in the order the
// tensors first name them; then each tensor's strides but the unit one
// (batch, rows, heads; or batch, heads); then the softmax scale. For the
// forward that is q, k, v, o, lse, seqlen_q, seqlen_k, heads_q, heads_kv,
// 14 strides, softmax_scale. The batch size comes last.
// A tensor declared "workspace" is not an argument but a plan workspace
// (getTensorWorkspaces): its pointer is the workspace's and its strides are
// values, those of a contiguous tensor of its sizes; its place in the list
// is the same.
//
// The grid is (ceil(seqlen_q / tile_m), heads_q, batch); with a key grid
// (attn.kernel's grid = "keys") it is (ceil(seqlen_k / tile_n), heads_kv,
// batch); with packed rows
// (#attn.config pack_gqa) it is (ceil(seqlen_q * G / tile_m), heads_kv,
// batch), G = heads_q / heads_kv.
//
// Extra tensor arguments pass their pointer, then their extent and stride
// (elements) per dimension, as i64; extra scalars pass their value. They
// follow the softmax scale, in the kernel's order. Every kernel's last
// parameter is the batch size (i32; getBatchParamIndex).
//
// A kernel with a run-time block mask (attn.block_ranges) takes two more
// parameters after the extra arguments: the pointers of the `kv_ranges`
// and `kv_tiles` workspaces. Its plan runs two kernels first, with the same
// parameters:
//   1. `<name>_kv_tiles` classifies every (query tile, KV tile) pair the
//      window allows, one block of kBlockTilesThreads threads per pair: grid
//      (ceil(seqlen_q / tile_m) * ceil(seqlen_k / tile_n), heads_q or 1,
//      batch). `kv_tiles` holds one byte per (batch, head or 0, query tile,
//      KV tile): bit 0 if the mask keeps a visible key, bit 1 if it keeps
//      every key visible to a valid row. Each query tile's row of bytes is
//      padded to a multiple of kBlockTilesRowAlign, so that it is read 16
//      bytes at a time.
//   2. `<name>_kv_ranges` turns the bytes of each query tile into a range,
//      one thread per query tile: grid (ceil(query tiles /
//      kBlockRangesThreads), heads_q or 1, batch). `kv_ranges` holds 4 i32
//      per (batch, head or 0, query tile).
// A key-grid kernel's block mask (attn.block_ranges with key_grid: the
// backward's main kernel) has the same two parameters and kernels under
// other names, `q_ranges` and `q_tiles`: `<name>_q_tiles` is the tiles
// kernel above, and `<name>_q_ranges` scans, one thread per KV tile, the
// bytes of its column over the query tiles of every query head of the KV
// head's group: grid (ceil(KV tiles / kBlockRangesThreads), heads_kv or 1,
// batch). `q_ranges` holds 4 i32 per (batch, KV head or 0, KV tile).
//
// A kernel whose score_mod has a diagonal term (Attn/Analysis/DiagonalTerm.h)
// takes the pointer of the `diagonal_table` workspace next (after
// kv_ranges, if any), and its plan runs `<name>_diagonal_table` first: same
// parameters, kDiagonalTableThreads threads, grid (ceil(row / threads),
// heads_q or 1, batch or 1). The workspace holds one f32 row per (batch or
// 0, head or 0) of `row` = ceil(seqlen_q / tile_m) * tile_m +
// ceil(seqlen_k / tile_n) * tile_n entries: entry i is the term at
// k - q = i - (ceil(seqlen_q / tile_m) * tile_m - 1), which covers every
// position of every score tile.
//
// A kernel with packed rows (#attn.config pack_gqa, the decode family) can
// split each query tile's KV tiles `kv_splits` ways (attn.kv_split): it
// takes the i32 `kv_splits` and `kv_split_rows` (batch * heads_q *
// seqlen_q) after the extra arguments and the pointers of the `o_partial`
// and `lse_partial` workspaces last, and its grid's x axis
// is kv_splits * ceil(seqlen_q * G / tile_m) (split-major). Its plan derives
// kv_splits from the SM count (SplitKV.h; at most kMaxKVSplits) and
// dispatches: with one split the kernel writes O and LSE itself; with more,
// every split writes its normalised fp32 O rows and LSE to the workspaces,
// entry ((s * batch + b) * heads_q + h) * seqlen_q + q (times head_dim_v
// padded for O), and `<name>_combine` merges them, one warp per (batch,
// head, query) row, kCombineRowsPerBlock rows per block: grid
// (ceil(batch * heads_q * seqlen_q / kCombineRowsPerBlock), 1, 1). A sink
// joins there, once.
//
// A parameter derived from an argument is named "<argument>.<what>"
// ("q.stride_batch", "slopes.size0"): argument names are identifiers, so
// they can never collide with a derived name.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHTILE_CONVERSION_ATTNTONVVM_KERNELABI_H
#define FLASHTILE_CONVERSION_ATTNTONVVM_KERNELABI_H

#include "flashtile/ABI/KernelRules.h"
#include "flashtile/ABI/LaunchPlan.h"
#include "flashtile/Dialect/Attn/Analysis/DiagonalTerm.h"
#include "flashtile/Dialect/Attn/IR/Attn.h"

#include <array>
#include <string>
#include <utility>
#include <vector>

namespace flashtile {

/// The copy chunk (16 bytes), owned by the kernel rules.
using abi::kCopyChunkBytes;

/// Where a sequence tensor's parameters are in getKernelParams: its
/// pointer, the sizes of its rows and heads, and its strides (batch, rows,
/// heads for rank 4; batch, heads for rank 3).
struct TensorParams {
  std::string name;
  int64_t rank = 0;
  int64_t pointer = -1, rows = -1, heads = -1;
  std::vector<int64_t> strides;
};
/// One per sequence tensor, in argument order.
std::vector<TensorParams> getTensorParams(attn::KernelOp kernel);
/// Of the tensor named `name`; asserts that the kernel declares it.
TensorParams getTensorParams(attn::KernelOp kernel, llvm::StringRef name);
/// The parameter named `name` (a size, "softmax_scale", ...), or -1.
int64_t getParamIndex(attn::KernelOp kernel, llvm::StringRef name);
/// The softmax scale's parameter (and launch-plan scalar).
inline constexpr const char *kSoftmaxScaleParam = "softmax_scale";
/// The number of parameters before the extra arguments'.
int64_t getNumTensorParams(attn::KernelOp kernel);

/// The grid axis that carries each coordinate of a block.
enum GridAxis : unsigned { kGridAxisMBlock = 0, kGridAxisHead, kGridAxisBatch };

/// Paged KV (#attn.problem's page_table >= 0): K and V are page pools of
/// `num_pages` pages of `page_size` rows (their first two extents), and the
/// block table is (batch, `max_pages`). The kernel takes page_size and
/// num_pages as two i32 parameters after the extra arguments.
inline constexpr const char *kPageSizeSize = "page_size";
inline constexpr const char *kNumPagesSize = "num_pages";
inline constexpr const char *kMaxPagesSize = "max_pages";
bool isPagedKV(attn::KernelOp kernel);
/// seqlen_k over the plan's sizes: the size itself, or max_pages *
/// page_size with paged KV (a product, not a derived size, so that no
/// launch option can override it).
plan::Expr getSeqlenK(attn::KernelOp kernel);
/// The index in getKernelParams of page_size (num_pages follows), or -1.
int64_t getPagedKVParamIndex(attn::KernelOp kernel);

/// The index in getKernelParams of `batch`, the last parameter (an i32):
/// every kernel of a plan reads the batch size (attn.size "batch", a
/// tensor's batch extent) from there, since no grid axis carries it in all
/// of them (the combine kernel's z is 1, and so is a diagonal table's whose
/// term does not read b). It is last so that the parameters every kernel
/// had before it was one keep their numbers (and the code ptxas makes of
/// them).
int64_t getBatchParamIndex(attn::KernelOp kernel);

/// The formulas a kernel's plan and its code share. Each is written once,
/// over named sizes: the plan evaluates it (with seqlen_k as getSeqlenK, a
/// product with paged KV) and the lowering emits it as IR over the
/// kernel's parameters of those names (lowering::emitPlanExpr, seqlen_k
/// being the parameter the plan fills with that product).
namespace formula {
/// ceil(length / tile) * tile.
plan::Expr padded(plan::Expr length, int64_t tile);
/// ceil(seqlen_q / tile_m), or with packed rows ceil(seqlen_q * (heads_q /
/// heads_kv) / tile_m): the query tiles of one (split, head, batch).
plan::Expr queryTiles(int64_t tileM, bool packed);
/// ceil(seqlenK / tile_n).
plan::Expr keyTiles(int64_t tileN, plan::Expr seqlenK);
/// Query heads, or 1: the head axis of a per-head (or shared) workspace.
plan::Expr heads(bool perHead);
/// The tiles and heads axes of a block mask's ranges entries: per query
/// tile and query head (or 1), or with keyGrid per KV tile and KV head (or
/// 1).
struct BlockRangesAxes {
  plan::Expr tiles, heads;
};
BlockRangesAxes blockRangesAxes(bool keyGrid, bool perHead, int64_t tileM,
                                int64_t tileN, plan::Expr seqlenK);
/// Bytes of one query tile's row of kv_tiles: whole kBlockTilesRowAlign
/// groups of key tiles.
plan::Expr blockTilesRowBytes(int64_t tileN, plan::Expr seqlenK);
/// Entries of one diagonal-table row, and the entry of k - q = 0.
plan::Expr diagonalTableRow(int64_t tileM, int64_t tileN, plan::Expr seqlenK);
plan::Expr diagonalTableOrigin(int64_t tileM);
} // namespace formula

/// The kernel's parameters, in order: the tensors', sizes and scale (see
/// above), then the extra arguments', then page_size and num_pages with
/// paged KV, then kv_splits and the split rows with split-KV, then the
/// workspaces, then batch.
std::vector<plan::Param> getKernelParams(attn::KernelOp kernel);

/// The position in getKernelParams of each extra argument's first
/// parameter: a scalar's value, or a tensor's pointer (then its sizes and
/// strides).
std::vector<int64_t> getExtraArgParamIndices(attn::KernelOp kernel);
/// Of an extra tensor of rank `rank` whose pointer is parameter `first`:
/// the parameter of its extent, and of its stride, in dimension `d`.
inline int64_t getExtraTensorSizeParam(int64_t first, int64_t d) {
  return first + 1 + d;
}
inline int64_t getExtraTensorStrideParam(int64_t first, int64_t rank,
                                         int64_t d) {
  return first + 1 + rank + d;
}
/// The grid, per axis of GridAxis, over the named sizes. `kernel` must have
/// a config.
std::array<plan::Expr, 3> getKernelGrid(attn::KernelOp kernel);

/// Fills `plan`'s arguments, sizes and checks from `kernel`.
void describeKernelArguments(attn::KernelOp kernel, plan::LaunchPlan &plan);

/// The workspaces `kernel` declares as tensors (#attn.tensor role
/// "workspace"): contiguous, of their declared sizes, zero-filled. Such a
/// tensor passes its workspace's pointer where an argument passes its data
/// pointer, and its contiguous strides as values over the sizes.
std::vector<plan::Workspace> getTensorWorkspaces(attn::KernelOp kernel);

/// The run-time block mask of a tile-level kernel, if it has one.
attn::BlockRangesOp getBlockRanges(attn::KernelOp kernel);
/// The workspaces of the block mask, its kernels' suffixes and block sizes.
inline constexpr const char *kBlockRangesWorkspace = "kv_ranges";
inline constexpr const char *kBlockRangesKernelSuffix = "_kv_ranges";
inline constexpr int64_t kBlockRangesThreads = 128;
inline constexpr const char *kBlockTilesWorkspace = "kv_tiles";
inline constexpr const char *kBlockTilesKernelSuffix = "_kv_tiles";
inline constexpr int64_t kBlockTilesThreads = 256;
inline constexpr int64_t kBlockTilesRowAlign = 16;
/// A key-grid block mask's (attn.block_ranges key_grid).
inline constexpr const char *kKeyGridRangesWorkspace = "q_ranges";
inline constexpr const char *kKeyGridRangesKernelSuffix = "_q_ranges";
inline constexpr const char *kKeyGridTilesWorkspace = "q_tiles";
inline constexpr const char *kKeyGridTilesKernelSuffix = "_q_tiles";
/// The names of `op`'s workspaces and kernels: the query grid's or the key
/// grid's above.
struct BlockMaskNames {
  const char *tilesWorkspace, *tilesSuffix, *rangesWorkspace, *rangesSuffix;
};
BlockMaskNames getBlockMaskNames(attn::BlockRangesOp op);
/// i32 entries per (batch, head, query tile), or with key_grid per (batch,
/// KV head, KV tile): begin, unmasked begin, unmasked end, end.
inline constexpr int64_t kBlockRangesFields = 4;
/// The bits of a kv_tiles byte.
inline constexpr int64_t kBlockTileAnyKept = 1, kBlockTileAllKept = 2;
/// The block-mask kernels' grids and the workspaces' sizes in bytes.
std::array<plan::Expr, 3> getBlockRangesGrid(attn::BlockRangesOp op);
plan::Expr getBlockRangesBytes(attn::BlockRangesOp op);
std::array<plan::Expr, 3> getBlockTilesGrid(attn::BlockRangesOp op);
plan::Expr getBlockTilesBytes(attn::BlockRangesOp op);
/// The launch check of a block mask: (query tile, KV tile) pairs fit the
/// grid's x axis.
plan::Check getBlockTilesCheck(attn::BlockRangesOp op);

/// The diagonal table of a tile-level kernel, if its score_mod has a
/// diagonal term: the attn.modify_scores op (its score tile gives the tile
/// sizes) and the term.
struct DiagonalTable {
  attn::ModifyScoresOp op;
  attn::DiagonalTerm term;
  int64_t tileM = 0, tileN = 0;
  explicit operator bool() const { return bool(term); }
};
DiagonalTable getDiagonalTable(attn::KernelOp kernel);
DiagonalTable getDiagonalTable(attn::ModifyScoresOp op);
inline constexpr const char *kDiagonalTableWorkspace = "diagonal_table";
inline constexpr const char *kDiagonalTableKernelSuffix = "_diagonal_table";
inline constexpr int64_t kDiagonalTableThreads = 128;
/// The table kernel's grid and the workspace's size in bytes.
std::array<plan::Expr, 3> getDiagonalTableGrid(const DiagonalTable &table);
plan::Expr getDiagonalTableBytes(const DiagonalTable &table);

/// Split-KV (decode family): whether `kernel` takes kv_splits, the names of
/// its size, workspaces and combine kernel, and their sizes.
bool hasKVSplits(attn::KernelOp kernel);
inline constexpr const char *kKVSplitsSize = "kv_splits";
inline constexpr const char *kSplitRowsParam = "kv_split_rows";
/// batch * heads_q * seqlen_q: the rows of one split's partial results.
plan::Expr getSplitRowCount();
inline constexpr const char *kPartialOWorkspace = "o_partial";
inline constexpr const char *kPartialLseWorkspace = "lse_partial";
inline constexpr const char *kCombineKernelSuffix = "_combine";
inline constexpr int64_t kCombineRowsPerBlock = 4;
inline constexpr int64_t kMaxKVSplits = 128;
/// The position of the kv_splits parameter in getKernelParams.
int64_t getKVSplitsParamIndex(attn::KernelOp kernel);
/// ceil(seqlen_q * G / tile_m): the query tiles of one split.
plan::Expr getQueryTileCount(attn::KernelOp kernel);
/// kv_splits' rule, from the kernel's resident blocks per SM.
plan::Expr getKVSplitsRule(attn::KernelOp kernel, int64_t blocksPerSM);
/// Bytes of o_partial and lse_partial (0 with one split).
plan::Expr getPartialOBytes(attn::KernelOp kernel);
plan::Expr getPartialLseBytes(attn::KernelOp kernel);
std::array<plan::Expr, 3> getCombineGrid(attn::KernelOp kernel);

/// The workspaces of the kernel's extra kernels (block masks, diagonal
/// table, split KV), past its tensors' parameters: name and position in
/// getKernelParams. (A declared workspace tensor is a tensor: its pointer
/// is among the tensors' and its descriptor is built like theirs.)
std::vector<std::pair<std::string, int64_t>>
getWorkspaceParamIndices(attn::KernelOp kernel);

} // namespace flashtile

#endif // FLASHTILE_CONVERSION_ATTNTONVVM_KERNELABI_H
