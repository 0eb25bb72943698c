//===- MaskAnalysis.h - Key intervals of a mask_mod -------------*- C++ -*-===//
//
// Block sparsity for masks known at compile time: finds, symbolically, an
// interval of keys [lo(q), hi(q)] per query row that holds every key a
// mask_mod keeps, as the causal and window masks have. Comparisons of the
// key index (or the key index divided by a positive constant) against
// expressions of the row, the batch, the head, the kernel's scalars and
// sizes are understood, joined by `and` and `or`: causal and window masks,
// prefix-LM with a run-time prefix length, chunked / local attention. The
// interval is exact when the mask keeps exactly its keys; anything else
// (a data-dependent mask such as document ids) has no interval, and every
// tile then runs with the per-element mask.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHTILE_DIALECT_ATTN_TRANSFORMS_MASKANALYSIS_H
#define FLASHTILE_DIALECT_ATTN_TRANSFORMS_MASKANALYSIS_H

#include "flashtile/Dialect/Attn/IR/Attn.h"
#include "flashtile/Dialect/Attn/IR/TileBuilder.h"

#include "mlir/IR/IRMapping.h"

#include <optional>

namespace flashtile::attn {

/// Builds, into the empty region `body` of an attn.key_range, the block
/// (batch, head, q_idx) -> (lo, hi) of `maskMod`, a mask_mod region of an
/// attention in `kernel`. Returns whether the interval is exact, or failure
/// (body left empty) when the mask has no such interval. `monotone` is set
/// to whether lo and hi are provably monotone in q_idx; when they are not
/// (they read tensors at q_idx, as a varlen mask reads each token's
/// sequence), the key range must be evaluated at every row of a tile.
mlir::FailureOr<bool> buildKeyRange(KernelOp kernel, mlir::Region &maskMod,
                                    mlir::Region &body, bool &monotone);

/// What buildKeyRange finds of `maskMod`'s key interval, building
/// nothing: whether it is exact and provably monotone in q_idx; nullopt
/// when the mask has none.
struct KeyIntervalInfo {
  bool exact = false, monotone = false;
};
std::optional<KeyIntervalInfo> analyzeKeyInterval(KernelOp kernel,
                                                  mlir::Region &maskMod);

/// Refines `range`, the KV tiles query tile block.mBlock visits, by the key
/// interval of `maskMod` (an attn.key_range built with buildKeyRange at
/// t's insertion point). On success `range` (and `keyEnd`, if given) take
/// its results, and the result says whether the interval is exact: the
/// tiles of the unmasked range then need no mask_mod. Failure, with
/// nothing built, when the mask has no key interval.
mlir::FailureOr<bool> refineByKeyRange(TileBuilder &t, KernelOp kernel,
                                       mlir::Region &maskMod,
                                       const TileBuilder::Block &block,
                                       TileBuilder::TileRange &range,
                                       int64_t tileM, int64_t tileN,
                                       mlir::Value *keyEnd = nullptr);

/// Refines `range`, the query tiles a key-grid block (whose KV tile is
/// block.mBlock) visits, for `maskMod` (an attn.query_range): to those with
/// a row of one of the `group` query heads from `head` whose key interval
/// meets the KV tile, and when the interval is exact, the unmasked ones to
/// those every row of every head keeps whole. With `tables` (the KV tiles'
/// first and end per query tile, which a query-grid kernel wrote, and with
/// an exact interval its unmasked first and end), from those; otherwise by
/// bisection of the mask's key interval. Returns whether the interval is
/// exact; failure, with nothing built, when the mask has no key interval,
/// or without tables when it is not known to be monotone.
mlir::FailureOr<bool>
refineByQueryRange(TileBuilder &t, KernelOp kernel, mlir::Region &maskMod,
                   const TileBuilder::Block &block, mlir::Value head,
                   mlir::Value group, TileBuilder::TileRange &range,
                   int64_t tileM, int64_t tileN, mlir::ValueRange tables = {});

/// Refines `range` (KV tiles of query tile block.mBlock, or with keyGrid
/// query tiles of KV tile block.mBlock, whose block.head is then the KV
/// head) by a run-time block mask of `maskMod`: an attn.block_ranges with
/// the hook cloned in and `kernel`'s arguments read through
/// attn.kernel_arg. `outside` maps what the hook reads to `kernel`'s
/// arguments where the hook is another kernel's (the backward's is the
/// forward's). The mask is per head when the hook reads the head.
void refineByBlockMask(TileBuilder &t, KernelOp kernel, mlir::Region &maskMod,
                       const TileBuilder::Block &block,
                       TileBuilder::TileRange &range, int64_t tileM,
                       int64_t tileN, bool keyGrid,
                       const mlir::IRMapping *outside = nullptr);

} // namespace flashtile::attn

#endif // FLASHTILE_DIALECT_ATTN_TRANSFORMS_MASKANALYSIS_H
