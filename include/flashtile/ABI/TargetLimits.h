//===- TargetLimits.h - The limits every NVIDIA chip shares ------*- C++ -*-===//
//
// LLVM-free and header-only: the fixed limits of CUDA and of the chips
// FlashTile targets that do not vary by chip, for the compiler (the
// allocator, config selection, reports) and the runtime (its launch
// checks) alike. This file owns them. What varies by chip (shared memory
// per block, registers, SM counts, rates) is the Arch table's
// (flashtile/Target/Arch.h).
//
//===----------------------------------------------------------------------===//

#ifndef FLASHTILE_ABI_TARGETLIMITS_H
#define FLASHTILE_ABI_TARGETLIMITS_H

#include <cstdint>

namespace flashtile {

/// Threads per warp.
inline constexpr int64_t kWarpSize = 32;

/// The largest grid: x up to 2^31 - 1 blocks, y and z up to 65535.
inline constexpr int64_t kGridXMax = 2147483647;
inline constexpr int64_t kGridYZMax = 65535;

/// Dynamic shared memory above this needs the kernel's opt-in attribute
/// (CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) before the launch.
inline constexpr int64_t kStaticSmemLimitBytes = 48 * 1024;

/// Shared-memory buffer offsets are multiples of this: 128 B is the period
/// of the shared-memory banks, which the swizzled layouts of the sm80 path
/// assume.
inline constexpr int64_t kSmemAlignment = 128;

/// The alignment kernels may assume of a workspace (they read some 16
/// bytes at a time).
inline constexpr int64_t kWorkspaceAlignBytes = 16;

} // namespace flashtile

#endif // FLASHTILE_ABI_TARGETLIMITS_H
