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

} // namespace flashtile::attn

#endif // FLASHTILE_DIALECT_ATTN_TRANSFORMS_MASKANALYSIS_H
