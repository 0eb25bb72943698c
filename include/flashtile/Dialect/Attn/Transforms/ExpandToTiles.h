//===- ExpandToTiles.h - attn.attention -> tile program ----------*- C++ -*-===//

#ifndef FLASHTILE_DIALECT_ATTN_TRANSFORMS_EXPANDTOTILES_H
#define FLASHTILE_DIALECT_ATTN_TRANSFORMS_EXPANDTOTILES_H

#include "flashtile/Dialect/Attn/IR/Attn.h"

namespace flashtile::attn {

/// Replaces the `attn.attention` of `kernel` by the tile program of
/// `config` and records `config` on the kernel. Emits an error and fails when
/// the kernel has no attention op or uses a feature the tile program does not
/// implement yet.
mlir::LogicalResult expandAttentionToTiles(KernelOp kernel, ConfigAttr config);

} // namespace flashtile::attn

#endif // FLASHTILE_DIALECT_ATTN_TRANSFORMS_EXPANDTOTILES_H
