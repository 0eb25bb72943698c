//===- KernelRules.h - Rules both sides of a kernel follow ------*- C++ -*-===//
//
// LLVM-free and header-only: the rules of a kernel's interface that the
// compiler applies and that a front end must follow to trace the same IR
// without the compiler (a runtime-only installation tracing a Python tile
// program for its cache key). This file owns them; the dialect
// (attn::getPaddedHeadDim, attn::getDefaultSoftmaxScale) and both Python
// extensions ask it.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHTILE_ABI_KERNELRULES_H
#define FLASHTILE_ABI_KERNELRULES_H

#include "flashtile/ABI/LaunchPlan.h"

#include <cmath>
#include <cstdint>
#include <string>

namespace flashtile::abi {

/// The element types of Q, K, V and O (their plan names: "f16", "bf16").
inline constexpr plan::DType kAttentionDTypes[] = {plan::DType::F16,
                                                   plan::DType::BF16};
inline bool isAttentionDType(plan::DType dtype) {
  for (plan::DType d : kAttentionDTypes)
    if (d == dtype)
      return true;
  return false;
}
/// "f16, bf16", for messages.
inline std::string getAttentionDTypeList() {
  std::string list;
  for (plan::DType d : kAttentionDTypes)
    list += (list.empty() ? "" : ", ") + std::string(plan::stringifyDType(d));
  return list;
}

/// The run-time sizes a kernel's tensors are declared over (#attn.tensor):
/// this list owns their names. The dialect checks declarations and
/// attn.size against it, the kernel ABI names its parameters and launch-plan
/// sizes after it, and Python reads it through its runtime extension
/// (SIZE_NAMES). A sequence tensor's rows and heads are those of one side.
inline constexpr const char *kBatchSize = "batch";
struct SequenceSide {
  const char *rows;
  const char *heads;
};
inline constexpr SequenceSide kQuerySide{"seqlen_q", "heads_q"};
inline constexpr SequenceSide kKeySide{"seqlen_k", "heads_kv"};
inline constexpr SequenceSide kSequenceSides[] = {kQuerySide, kKeySide};
/// Every size a hook may read (attn.size), in this order.
inline constexpr const char *kSizeNames[] = {kBatchSize, kQuerySide.rows,
                                             kKeySide.rows, kQuerySide.heads,
                                             kKeySide.heads};

/// Bytes of one chunk the kernels move between global and shared memory
/// (one cp.async.cg, one 128-bit epilogue load or store). Rows the kernels
/// copy must therefore start 16-byte aligned, which the launch plan
/// requires of their pointers and strides.
inline constexpr int64_t kCopyChunkBytes = 16;

/// The head dims a kernel takes: multiples of kHeadDimGranule up to
/// kMaxHeadDim. A row of Q, K, V or O in global memory is whole 16-byte
/// chunks (8 elements of f16/bf16): what one cp.async or 128-bit store
/// moves.
inline constexpr int64_t kHeadDimGranule = 8;
inline constexpr int64_t kMaxHeadDim = 256;
constexpr bool isSupportedHeadDim(int64_t dim) {
  return dim > 0 && dim % kHeadDimGranule == 0 && dim <= kMaxHeadDim;
}

/// In shared memory and registers a row is whole groups of four 16-byte
/// chunks that the swizzle permutes, which are also whole 16-wide mma
/// k-steps: 32 elements.
inline constexpr int64_t kPaddedHeadDimGranule = 32;

/// The head dim as buffers and fragments hold it.
constexpr int64_t getPaddedHeadDim(int64_t dim) {
  return (dim + kPaddedHeadDimGranule - 1) / kPaddedHeadDimGranule *
         kPaddedHeadDimGranule;
}

/// The softmax scale of a kernel that states none: 1 / sqrt(head_dim), in
/// f32 as the kernel computes with it.
inline float getDefaultSoftmaxScale(int64_t headDim) {
  return 1.0f / std::sqrt(static_cast<float>(headDim));
}

} // namespace flashtile::abi

#endif // FLASHTILE_ABI_KERNELRULES_H
