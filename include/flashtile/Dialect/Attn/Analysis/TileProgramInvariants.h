//===- TileProgramInvariants.h - What the lowering relies on -----*- C++
//-*-===//
//
// A tile program carries facts twice: the kernel's config and smem_bytes,
// and the ops' own attributes and types (a kv_bound's tile sizes, a
// fragment's rows, a buffer's offset). The passes that wrote them keep
// them consistent; a hand-written or edited program may not, and the
// lowering would then build a kernel that contradicts itself. This check
// states the agreement the lowering relies on, so that it runs only on
// programs that keep it.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHTILE_DIALECT_ATTN_ANALYSIS_TILEPROGRAMINVARIANTS_H
#define FLASHTILE_DIALECT_ATTN_ANALYSIS_TILEPROGRAMINVARIANTS_H

#include "flashtile/Dialect/Attn/IR/Attn.h"

namespace flashtile::attn {

/// Checks an allocated tile program: it has a config and smem_bytes within
/// the chip's per-block limit; every buffer lies inside smem_bytes; every
/// op's tile_m / tile_n attribute is the config's; every fragment has the
/// config's tile_m rows and tile_n (per KV warp) or a (padded) head dim
/// of columns.
/// Emits an error at the first op that breaks one, with the numbers.
mlir::LogicalResult verifyTileProgramInvariants(KernelOp kernel);

/// Config selection, the invariants above and the lowering size a kernel by
/// attention's tensors (Q's and V's head dims, Q's dtype): a kernel that
/// declares its own tensors must include q, k, v, o and lse to enter them.
/// Emits an error at the kernel otherwise.
mlir::LogicalResult verifyAttentionTensors(KernelOp kernel);

} // namespace flashtile::attn

#endif // FLASHTILE_DIALECT_ATTN_ANALYSIS_TILEPROGRAMINVARIANTS_H
