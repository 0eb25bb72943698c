//===- Passes.h - attn passes -----------------------------------*- C++ -*-===//

#ifndef FLASHTILE_DIALECT_ATTN_TRANSFORMS_PASSES_H
#define FLASHTILE_DIALECT_ATTN_TRANSFORMS_PASSES_H

#include "flashtile/Dialect/Attn/IR/Attn.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Pass/Pass.h"

namespace flashtile::attn {

#define GEN_PASS_DECL
#include "flashtile/Dialect/Attn/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "flashtile/Dialect/Attn/Transforms/Passes.h.inc"

} // namespace flashtile::attn

#endif // FLASHTILE_DIALECT_ATTN_TRANSFORMS_PASSES_H
