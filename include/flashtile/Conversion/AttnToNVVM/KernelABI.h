//===- KernelABI.h - The interface of a compiled kernel ---------*- C++ -*-===//
//
// The one derivation of a compiled kernel's interface from its `attn.kernel`
// op: its parameters in order, its user-facing arguments with their shape
// and layout rules, the named run-time sizes, the checks a launch must pass
// and the grid. The lowering builds the kernel's signature and reads the
// grid from here; the compiler writes the same facts into the launch plan
// (flashtile/Runtime/LaunchPlan.h), which the runtime packs from. Nothing
// else lists parameters.
//
// Q, K, V, O are (batch, seq, heads, dim) with dim contiguous; LSE is
// (batch, heads, seq) with seq contiguous. Strides are in elements. The
// grid is (ceil(seqlen_q / tile_m), heads_q, batch).
//
// Extra tensor arguments pass their pointer, then their extent and stride
// (elements) per dimension, as i64; extra scalars pass their value. They
// follow the softmax scale, in the kernel's order.
//
// A kernel with a run-time block mask (attn.block_ranges) takes one more
// parameter last, the pointer of the `kv_ranges` workspace, and its plan
// runs the block-mask kernel `<name>_kv_ranges` first: same parameters,
// grid (ceil(seqlen_q / tile_m), heads_q or 1, batch), kBlockRangesThreads
// threads. The workspace holds 4 i32 per (batch, head or 0, query tile).
//
// A parameter derived from an argument is named "<argument>.<what>"
// ("q.stride_batch", "slopes.size0"): argument names are identifiers, so
// they can never collide with a derived name.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHTILE_CONVERSION_ATTNTONVVM_KERNELABI_H
#define FLASHTILE_CONVERSION_ATTNTONVVM_KERNELABI_H

#include "flashtile/Dialect/Attn/IR/Attn.h"
#include "flashtile/Runtime/LaunchPlan.h"

#include <array>
#include <vector>

namespace flashtile {

/// Bytes of one chunk the kernels move between global and shared memory
/// (one cp.async.cg, one 128-bit epilogue load or store). Q, K, V and O rows
/// must therefore start 16-byte aligned, which the launch plan requires of
/// their pointers and strides.
inline constexpr int64_t kCopyChunkBytes = 16;

/// Indices into the fixed prefix of the parameter list.
enum KernelParamIndex : unsigned {
  kParamQ = 0,
  kParamK,
  kParamV,
  kParamO,
  kParamLse,
  kParamSeqlenQ,
  kParamSeqlenK,
  kParamHeadsQ,
  kParamHeadsKV,
  /// Three strides (batch, seq, head) per tensor, Q K V O in that order.
  kParamFirstStride,
  kParamLseStrideBatch = kParamFirstStride + 12,
  kParamLseStrideHead,
  kParamSoftmaxScale,
  /// The first parameter of the extra arguments.
  kNumFixedKernelParams,
};

/// The grid axis that carries each coordinate of a block.
enum GridAxis : unsigned { kGridAxisMBlock = 0, kGridAxisHead, kGridAxisBatch };

/// The kernel's parameters, in order: the fixed prefix, then the extra
/// arguments'.
std::vector<plan::Param> getKernelParams(attn::KernelOp kernel);

/// The position in getKernelParams of each extra argument's first
/// parameter: a scalar's value, or a tensor's pointer (then its sizes and
/// strides).
std::vector<int64_t> getExtraArgParamIndices(attn::KernelOp kernel);
/// The grid, per axis of GridAxis, over the named sizes. `kernel` must have
/// a config.
std::array<plan::Expr, 3> getKernelGrid(attn::KernelOp kernel);

/// Fills `plan`'s arguments, sizes and checks from `kernel`.
void describeKernelArguments(attn::KernelOp kernel, plan::LaunchPlan &plan);

/// The run-time block mask of a tile-level kernel, if it has one.
attn::BlockRangesOp getBlockRanges(attn::KernelOp kernel);
/// The workspace of the block mask, its kernel's suffix and block size.
inline constexpr const char *kBlockRangesWorkspace = "kv_ranges";
inline constexpr const char *kBlockRangesKernelSuffix = "_kv_ranges";
inline constexpr int64_t kBlockRangesThreads = 128;
/// i32 entries per (batch, head, query tile): begin, unmasked begin,
/// unmasked end, end.
inline constexpr int64_t kBlockRangesFields = 4;
/// The block-mask kernel's grid and the workspace's size in bytes.
std::array<plan::Expr, 3> getBlockRangesGrid(attn::BlockRangesOp op);
plan::Expr getBlockRangesBytes(attn::BlockRangesOp op);

} // namespace flashtile

#endif // FLASHTILE_CONVERSION_ATTNTONVVM_KERNELABI_H
