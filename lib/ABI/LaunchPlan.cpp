//===- LaunchPlan.cpp - The launch plan: types and expressions ------------===//
//
// The launch plan's model (flashtile/ABI/LaunchPlan.h) apart from its JSON
// encoding (PlanJson.cpp): the element and parameter types, expressions
// (building, printing, evaluation with overflow checks) and the plan's
// lookups. Linked by the compiler and the runtime alike.
//
//===----------------------------------------------------------------------===//

#include "flashtile/ABI/LaunchPlan.h"
#include "ExprOps.h"
#include "Messages.h"
#include "flashtile/ABI/SplitKV.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <sstream>
#include <utility>

using namespace flashtile::plan;
using namespace flashtile::plan::detail;

namespace {

using flashtile::runtime_detail::concat;

/// Floor division and modulo (the divisor's sign), overflow-checked.
bool floorDivMod(int64_t a, int64_t b, int64_t &quot, int64_t &rem) {
  if (a == std::numeric_limits<int64_t>::min() && b == -1)
    return false;
  quot = a / b;
  rem = a % b;
  if (rem != 0 && ((rem < 0) != (b < 0))) {
    quot -= 1;
    rem += b;
  }
  return true;
}

} // namespace

//===----------------------------------------------------------------------===//
// Element and parameter types
//===----------------------------------------------------------------------===//

const char *flashtile::plan::stringifyDType(DType dtype) {
  switch (dtype) {
  case DType::F16:
    return "f16";
  case DType::BF16:
    return "bf16";
  case DType::F32:
    return "f32";
  case DType::I32:
    return "i32";
  case DType::I64:
    return "i64";
  case DType::S8:
    return "s8";
  case DType::E4M3:
    return "e4m3";
  case DType::E5M2:
    return "e5m2";
  }
  return "?";
}

const char *flashtile::plan::stringifyArgRole(ArgRole role) {
  switch (role) {
  case ArgRole::Input:
    return "input";
  case ArgRole::Output:
    return "output";
  case ArgRole::Accumulate:
    return "accumulate";
  }
  return "?";
}

std::optional<DType> flashtile::plan::parseDType(std::string_view name) {
  for (DType d : {DType::F16, DType::BF16, DType::F32, DType::I32, DType::I64,
                  DType::S8, DType::E4M3, DType::E5M2})
    if (name == stringifyDType(d))
      return d;
  return std::nullopt;
}

int64_t flashtile::plan::getDTypeSize(DType dtype) {
  switch (dtype) {
  case DType::F16:
  case DType::BF16:
    return 2;
  case DType::F32:
  case DType::I32:
    return 4;
  case DType::I64:
    return 8;
  case DType::S8:
  case DType::E4M3:
  case DType::E5M2:
    return 1;
  }
  return 1;
}

const char *flashtile::plan::stringifyParamType(ParamType type) {
  switch (type) {
  case ParamType::Ptr:
    return "ptr";
  case ParamType::I32:
    return "i32";
  case ParamType::I64:
    return "i64";
  case ParamType::F32:
    return "f32";
  }
  return "?";
}

std::optional<ParamType>
flashtile::plan::parseParamType(std::string_view name) {
  for (ParamType t :
       {ParamType::Ptr, ParamType::I32, ParamType::I64, ParamType::F32})
    if (name == stringifyParamType(t))
      return t;
  return std::nullopt;
}

//===----------------------------------------------------------------------===//
// Expressions
//===----------------------------------------------------------------------===//

Expr Expr::constant(int64_t value) {
  Expr e;
  e.op = Op::Const;
  e.value = value;
  return e;
}

Expr Expr::named(std::string name) {
  Expr e;
  e.op = Op::Name;
  e.name = std::move(name);
  return e;
}

Expr Expr::apply(Op op, std::vector<Expr> operands) {
  Expr e;
  e.op = op;
  e.operands = std::move(operands);
  return e;
}

const char *flashtile::plan::stringifyExprOp(Expr::Op op) {
  for (const OpName &entry : kOpNames)
    if (entry.op == op)
      return entry.key;
  return "";
}

std::optional<int64_t> flashtile::plan::evaluate(const Expr &expr,
                                                 const Env &env,
                                                 std::string &error) {
  using Op = Expr::Op;
  switch (expr.op) {
  case Op::Const:
    return expr.value;
  case Op::Name: {
    auto it = env.find(expr.name);
    if (it == env.end()) {
      error = concat("unknown size '", expr.name, "'");
      return std::nullopt;
    }
    return it->second;
  }
  case Op::And:
  case Op::Or: {
    // Short-circuit, so that a guard can protect a later operand.
    for (const Expr &operand : expr.operands) {
      std::optional<int64_t> v = evaluate(operand, env, error);
      if (!v)
        return std::nullopt;
      if ((*v != 0) == (expr.op == Op::Or))
        return expr.op == Op::Or ? 1 : 0;
    }
    return expr.op == Op::And ? 1 : 0;
  }
  case Op::KVSplits: {
    if (expr.operands.size() != kKVSplitsOperands) {
      error = concat("'kv_splits' has ", expr.operands.size(),
                     " operands, expected ", kKVSplitsOperands);
      return std::nullopt;
    }
    auto sms = env.find(kNumSms);
    if (sms == env.end()) {
      error = "'kv_splits' needs the device's multiprocessor count";
      return std::nullopt;
    }
    int64_t values[kKVSplitsOperands];
    for (size_t i = 0; i < kKVSplitsOperands; ++i) {
      std::optional<int64_t> v = evaluate(expr.operands[i], env, error);
      if (!v)
        return std::nullopt;
      values[i] = *v;
    }
    flashtile::runtime::SplitKVProblem problem;
    problem.blocks = values[0];
    problem.kvTiles = values[1];
    problem.blocksPerSM = values[2];
    problem.maxSplits = values[3];
    problem.numSMs = sms->second;
    return flashtile::runtime::chooseKVSplits(problem);
  }
  default:
    break;
  }
  if (expr.operands.size() < 2 ||
      (!isVariadic(expr.op) && expr.operands.size() != 2)) {
    error = concat("'", stringifyExprOp(expr.op), "' has ",
                   expr.operands.size(), " operands");
    return std::nullopt;
  }
  std::optional<int64_t> first = evaluate(expr.operands[0], env, error);
  if (!first)
    return std::nullopt;
  int64_t acc = *first;
  for (size_t i = 1; i < expr.operands.size(); ++i) {
    std::optional<int64_t> next = evaluate(expr.operands[i], env, error);
    if (!next)
      return std::nullopt;
    int64_t a = acc, b = *next;
    bool overflow = false;
    switch (expr.op) {
    case Op::Add:
      overflow = __builtin_add_overflow(a, b, &acc);
      break;
    case Op::Sub:
      overflow = __builtin_sub_overflow(a, b, &acc);
      break;
    case Op::Mul:
      overflow = __builtin_mul_overflow(a, b, &acc);
      break;
    case Op::Div:
    case Op::CeilDiv:
    case Op::Mod: {
      if (b == 0) {
        error = concat("division by zero in ", toString(expr));
        return std::nullopt;
      }
      int64_t quot = 0, rem = 0;
      overflow = !floorDivMod(a, b, quot, rem);
      if (expr.op == Op::Div)
        acc = quot;
      else if (expr.op == Op::Mod)
        acc = rem;
      else // ceil(a / b) = floor(a / b) + (a % b != 0)
        overflow = overflow || __builtin_add_overflow(quot, rem != 0, &acc);
      break;
    }
    case Op::Min:
      acc = std::min(a, b);
      break;
    case Op::Max:
      acc = std::max(a, b);
      break;
    case Op::Eq:
      acc = a == b;
      break;
    case Op::Ne:
      acc = a != b;
      break;
    case Op::Lt:
      acc = a < b;
      break;
    case Op::Le:
      acc = a <= b;
      break;
    case Op::Gt:
      acc = a > b;
      break;
    case Op::Ge:
      acc = a >= b;
      break;
    default:
      error = "malformed expression";
      return std::nullopt;
    }
    if (overflow) {
      error = concat("integer overflow in ", toString(expr), " (", a, " ",
                     stringifyExprOp(expr.op), " ", b, ")");
      return std::nullopt;
    }
  }
  return acc;
}

std::string flashtile::plan::toString(const Expr &expr) {
  using Op = Expr::Op;
  switch (expr.op) {
  case Op::Const:
    return std::to_string(expr.value);
  case Op::Name:
    return expr.name;
  case Op::CeilDiv:
  case Op::Min:
  case Op::Max:
  case Op::KVSplits: {
    std::string s = concat(stringifyExprOp(expr.op), "(");
    for (size_t i = 0; i < expr.operands.size(); ++i)
      s += (i ? ", " : "") + toString(expr.operands[i]);
    return s + ")";
  }
  default:
    break;
  }
  const char *symbol = "?";
  switch (expr.op) {
  case Op::Add:
    symbol = " + ";
    break;
  case Op::Sub:
    symbol = " - ";
    break;
  case Op::Mul:
    symbol = " * ";
    break;
  case Op::Div:
    symbol = " / ";
    break;
  case Op::Mod:
    symbol = " % ";
    break;
  case Op::Eq:
    symbol = " == ";
    break;
  case Op::Ne:
    symbol = " != ";
    break;
  case Op::Lt:
    symbol = " < ";
    break;
  case Op::Le:
    symbol = " <= ";
    break;
  case Op::Gt:
    symbol = " > ";
    break;
  case Op::Ge:
    symbol = " >= ";
    break;
  case Op::And:
    symbol = " && ";
    break;
  case Op::Or:
    symbol = " || ";
    break;
  default:
    break;
  }
  std::string s;
  for (size_t i = 0; i < expr.operands.size(); ++i) {
    const Expr &operand = expr.operands[i];
    bool leaf = operand.op == Op::Const || operand.op == Op::Name ||
                operand.op == Op::CeilDiv || operand.op == Op::Min ||
                operand.op == Op::Max || operand.op == Op::KVSplits;
    std::string text = toString(operand);
    s += (i ? symbol : "") + (leaf ? text : "(" + text + ")");
  }
  return s;
}

void flashtile::plan::collectNames(const Expr &expr,
                                   std::vector<std::string> &names) {
  if (expr.op == Expr::Op::Name) {
    if (std::find(names.begin(), names.end(), expr.name) == names.end())
      names.push_back(expr.name);
    return;
  }
  for (const Expr &operand : expr.operands)
    collectNames(operand, names);
}

//===----------------------------------------------------------------------===//
// LaunchPlan
//===----------------------------------------------------------------------===//

const Argument *LaunchPlan::findArgument(std::string_view name) const {
  for (const Argument &arg : arguments)
    if (arg.name == name)
      return &arg;
  return nullptr;
}

int64_t LaunchPlan::indexOfArgument(std::string_view name) const {
  for (size_t i = 0; i < arguments.size(); ++i)
    if (arguments[i].name == name)
      return static_cast<int64_t>(i);
  return -1;
}

int64_t LaunchPlan::findWorkspace(std::string_view name) const {
  for (size_t i = 0; i < workspaces.size(); ++i)
    if (workspaces[i].name == name)
      return static_cast<int64_t>(i);
  return -1;
}

