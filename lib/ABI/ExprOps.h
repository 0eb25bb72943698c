//===- ExprOps.h - The launch plan's expression operators -------*- C++ -*-===//
//
// Private to lib/ABI: the expression operators with their JSON keys and
// arities, which both the expressions (LaunchPlan.cpp: printing,
// evaluation) and the JSON format (PlanJson.cpp: parsing) use.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHTILE_LIB_ABI_EXPROPS_H
#define FLASHTILE_LIB_ABI_EXPROPS_H

#include "flashtile/ABI/LaunchPlan.h"

#include <string_view>

namespace flashtile::plan::detail {

struct OpName {
  Expr::Op op;
  const char *key;
  /// Operand count: 2 exactly, or at least 2 (variadic).
  bool variadic;
};

inline constexpr OpName kOpNames[] = {
    {Expr::Op::Add, "add", true},
    {Expr::Op::Sub, "sub", false},
    {Expr::Op::Mul, "mul", true},
    {Expr::Op::Div, "div", false},
    {Expr::Op::CeilDiv, "ceil_div", false},
    {Expr::Op::Mod, "mod", false},
    {Expr::Op::Min, "min", true},
    {Expr::Op::Max, "max", true},
    {Expr::Op::Eq, "eq", false},
    {Expr::Op::Ne, "ne", false},
    {Expr::Op::Lt, "lt", false},
    {Expr::Op::Le, "le", false},
    {Expr::Op::Gt, "gt", false},
    {Expr::Op::Ge, "ge", false},
    {Expr::Op::And, "and", true},
    {Expr::Op::Or, "or", true},
    {Expr::Op::KVSplits, "kv_splits", true},
};

/// Operands of kv_splits: blocks, kv_tiles, blocks_per_sm, max_splits.
inline constexpr size_t kKVSplitsOperands = 4;

inline const OpName *findOp(std::string_view key) {
  for (const OpName &entry : kOpNames)
    if (key == entry.key)
      return &entry;
  return nullptr;
}

inline bool isVariadic(Expr::Op op) {
  for (const OpName &entry : kOpNames)
    if (entry.op == op)
      return entry.variadic;
  return false;
}

/// The device property dispatch conditions may use besides the sizes.
inline constexpr const char *kNumSms = "num_sms";

} // namespace flashtile::plan::detail

#endif // FLASHTILE_LIB_ABI_EXPROPS_H
