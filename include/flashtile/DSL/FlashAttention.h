//===- FlashAttention.h - C++ DSL: attention kernels -------------*- C++ -*-===//
//
// The C++ entry point for writing attention kernels. A spec names what to
// compute (dtype, head dims, masking, scale) and, optionally, which tile
// parameters to pin; `buildAttentionKernel` emits the kernel-level
// `attn.kernel` that the compiler takes from there. The driver's built-in
// FlashAttention-forward kernel is exactly this builder.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHTILE_DSL_FLASHATTENTION_H
#define FLASHTILE_DSL_FLASHATTENTION_H

#include "flashtile/ABI/LaunchPlan.h"
#include "flashtile/DSL/Hooks.h"
#include "flashtile/Dialect/Attn/IR/Attn.h"
#include "flashtile/Dialect/Attn/Transforms/ConfigSelection.h"

#include "mlir/IR/BuiltinOps.h"
#include <optional>
#include <string>
#include <vector>

namespace flashtile::dsl {

/// Element types: the launch plan's, so that a new one (fp8) is added once.
using DType = plan::DType;

/// An argument after Q, K, V, O and LSE, for variant hooks to read.
struct ExtraArg {
  std::string name;
  DType dtype = DType::F32;
  /// -1: a scalar; otherwise a tensor of this rank with dynamic extents and
  /// strides.
  int64_t rank = -1;
};

/// The extra tensor and scalar arguments of a kernel (after Q, K, V, O and
/// LSE), in order, with the calls that declare them: shared by the
/// attention spec and the tile-program spec.
struct KernelArgs {
  std::vector<ExtraArg> extraArgs;

  /// Declares an extra tensor argument of `rank` dynamic extents and
  /// strides, and returns the handle hooks read it through.
  Tensor addTensor(std::string name, DType dtype, int64_t rank) {
    extraArgs.push_back({name, dtype, rank});
    return Tensor(std::move(name));
  }
  /// Declares an extra scalar argument (I32, I64 or F32).
  Scalar addScalar(std::string name, DType dtype) {
    extraArgs.push_back({name, dtype, -1});
    return Scalar(std::move(name));
  }
};

/// What an attention kernel computes.
struct AttentionSpec : KernelArgs {
  std::string name = "flash_fwd";
  Chip chip = Chip::sm_120;
  DType dtype = DType::F16;
  int64_t headDim = 128;
  /// 0 means "same as headDim".
  int64_t headDimV = 0;
  bool causal = false;
  /// -1: unbounded on that side.
  int64_t windowLeft = -1, windowRight = -1;
  /// Defaults to 1/sqrt(headDim).
  std::optional<float> softmaxScale;
  /// Paged KV: the extra i32 (batch, max_pages) tensor that lists each
  /// sequence's pages (pageKV); empty means K and V are contiguous.
  std::string blockTable;
  /// Variant hooks (Hooks.h); empty means none.
  ScoreModFn scoreMod;
  MaskModFn maskMod;
  SinkFn sink;

  /// Pages K and V, as vLLM does: they become page pools (num_pages,
  /// page_size, heads_kv, dim), and key j of batch b is row j mod page_size
  /// of page table[b][j / page_size], with `table` the i32 (batch,
  /// max_pages) extra tensor this declares. Hooks may read it too.
  Tensor pageKV(std::string name = "block_table") {
    blockTable = name;
    return addTensor(std::move(name), DType::I32, 2);
  }
};

/// Appends the `attn.kernel` of `spec` to `module` and verifies it. On a bad
/// spec the verifier's diagnostic is emitted at `loc` and the kernel is
/// removed again.
mlir::FailureOr<attn::KernelOp> buildAttentionKernel(mlir::ModuleOp module,
                                                     const AttentionSpec &spec,
                                                     mlir::Location loc);

} // namespace flashtile::dsl

#endif // FLASHTILE_DSL_FLASHATTENTION_H
