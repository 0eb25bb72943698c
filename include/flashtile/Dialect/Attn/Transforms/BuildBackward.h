//===- BuildBackward.h - The backward family of an attention -----*- C++ -*-===//
//
// The backward of a kernel-level attention (FlashAttention-2's algorithm,
// Dao 2023, Algorithm 2) as an attn.family of three tile programs, built
// with the public tile builder as the forward's expansion is:
//   1. <name>_bwd_preprocess (query tiles): D = rowsum(dO * O) into the
//      workspace `d`, and for a mask_mod whose key interval is not known to
//      be monotone, the tile's KV tiles into `kv_first` / `kv_end` (and
//      when the interval is exact, its unmasked ones into
//      `kv_unmasked_first` / `kv_unmasked_end`);
//   2. <name>_bwd_main (grid = "keys"): block (n, h_kv, b) keeps key tile n
//      of K and V in shared memory and dK, dV in registers, and walks the
//      query tiles that see it, of every query head of h_kv's group (GQA's
//      dK / dV are reduced over the group in the registers' f32, never
//      through an expanded copy); dQ goes to the f32 workspace `dq_accum`
//      by f32 atomics; a mask_mod with no exact key interval adds a
//      run-time block mask of the group (attn.block_ranges key_grid) whose
//      kernels run before it;
//   3. <name>_bwd_convert (query tiles): dq_accum rounded into dQ.
// The family's tensors are the forward's q, k, v, o, lse and the upstream
// do, the workspaces d (kv_first, kv_end, kv_unmasked_first,
// kv_unmasked_end) and dq_accum, and the gradients
// dq, dk, dv. The
// deterministic family (BackwardOptions::deterministic) computes dQ in a
// query-parallel <name>_bwd_dq kernel instead of 2.'s atomics and 3., and
// has no dq_accum.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHTILE_DIALECT_ATTN_TRANSFORMS_BUILDBACKWARD_H
#define FLASHTILE_DIALECT_ATTN_TRANSFORMS_BUILDBACKWARD_H

#include "flashtile/Dialect/Attn/IR/Attn.h"

#include <optional>
#include <string>

namespace flashtile::attn {

/// Pins of the main kernel's shape: query rows per step (tile_m), keys per
/// block (tile_n), warps, the slots of Q and dO, and the KV warps that
/// split every product's columns (kv_warps). Unset ones are searched among
/// the candidates.
struct BackwardPins {
  std::optional<int64_t> tileM, tileN, warps, slots, kvWarps;
};

/// How the backward is built.
struct BackwardOptions {
  BackwardPins pins;
  /// dQ without atomics: the main kernel computes dK and dV only, and a
  /// query-parallel <name>_bwd_dq kernel recomputes P and dS per KV tile
  /// (FlashAttention-2's algorithm) into dQ, so every run gives the same
  /// bits; there is no dq_accum workspace and no convert.
  bool deterministic = false;
  /// Extra tensors of the forward (by argument name) whose gradient the
  /// family computes: a table the score_mod reads (a learned bias, ALiBi
  /// slopes, per-head temperatures). Each adds an f32 argument
  /// `<name>_grad` of the tensor's rank, role accumulate (the caller
  /// passes zeros, or a gradient to add to), after the forward's extra
  /// arguments; the main kernel adds seed * ∂f/∂read at each read's
  /// indices (attn.for_each).
  llvm::SmallVector<std::string> tensorGrads;
};

/// Appends the backward family of `forward` (a kernel-level attn.kernel) to
/// its module: the three kernels above and the attn.family
/// `<name>_bwd` (<name>: the forward's name without a `_fwd` suffix).
/// The config is the first candidate that agrees with the pins and whose
/// shared-memory plan fits the chip; when none fits, the last one is built
/// and attn-allocate-shared-memory reports it; with tile_m, tile_n and
/// warps pinned, the pinned shape is built. Fails with an error
/// at the attention, and adds nothing, for what the backward does not
/// cover yet or a pin no candidate has.
mlir::FailureOr<FamilyOp>
buildBackwardFamily(KernelOp forward, const BackwardOptions &options = {});

} // namespace flashtile::attn

#endif // FLASHTILE_DIALECT_ATTN_TRANSFORMS_BUILDBACKWARD_H
