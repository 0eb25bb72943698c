//===- Reports.h - JSON facts shared by the reports and the plan -*- C++ -*-===//
//
// Private to lib/Compiler.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHTILE_LIB_COMPILER_REPORTS_H
#define FLASHTILE_LIB_COMPILER_REPORTS_H

#include "flashtile/Dialect/Attn/IR/Attn.h"

#include "llvm/Support/JSON.h"

namespace flashtile {

/// What a tile-level kernel computes and how it is tiled: dtype, head dims,
/// causal, window, softmax scale and config. The shared-memory plan's JSON
/// and the launch plan's `info` both start from it.
llvm::json::Object getKernelFactsJson(attn::KernelOp tileKernel);

} // namespace flashtile

#endif // FLASHTILE_LIB_COMPILER_REPORTS_H
