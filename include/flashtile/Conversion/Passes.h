//===- Passes.h - Conversion passes -----------------------------*- C++ -*-===//

#ifndef FLASHTILE_CONVERSION_PASSES_H
#define FLASHTILE_CONVERSION_PASSES_H

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace flashtile {

#define GEN_PASS_DECL
#include "flashtile/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "flashtile/Conversion/Passes.h.inc"

} // namespace flashtile

#endif // FLASHTILE_CONVERSION_PASSES_H
