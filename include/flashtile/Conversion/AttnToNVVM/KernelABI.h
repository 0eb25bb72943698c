//===- KernelABI.h - The parameter list of compiled kernels -----*- C++ -*-===//
//
// The one definition of a compiled kernel's parameters, in order. The
// lowering builds the kernel's signature from it and the metadata writer
// lists it, so the runtimes pack parameters by the metadata rather than by a
// copy of this list.
//
// Q, K, V, O are (batch, seq, heads, dim) with dim contiguous; LSE is
// (batch, heads, seq) with seq contiguous. Strides are in elements. The
// grid is (ceil(seqlen_q / tile_m), heads_q, batch).
//
//===----------------------------------------------------------------------===//

#ifndef FLASHTILE_CONVERSION_ATTNTONVVM_KERNELABI_H
#define FLASHTILE_CONVERSION_ATTNTONVVM_KERNELABI_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

namespace flashtile {

enum class ParamKind { Ptr, I32, I64, F32 };

struct KernelParam {
  llvm::StringRef name;
  ParamKind kind;
};

/// Indices into the parameter list.
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
  kNumKernelParams,
};

/// The parameters, in order.
llvm::ArrayRef<KernelParam> getKernelParams();

/// "ptr", "i32", "i64", "f32".
llvm::StringRef stringifyParamKind(ParamKind kind);

} // namespace flashtile

#endif // FLASHTILE_CONVERSION_ATTNTONVVM_KERNELABI_H
