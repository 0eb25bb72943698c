//===- PlanJson.cpp - The launch plan's JSON format ----------------------===//
//
// The JSON encoding of a launch plan (format "flashtile-launch-plan"), read
// and written with nlohmann::json. Both the compiler (which writes plans) and
// the runtime (which reads them) link this file, so the format has one
// implementation. nlohmann reports errors with exceptions; every one is
// caught here: the API returns errors, it never throws.
//
// Parsing is strict: unknown fields, wrong types, dangling references and
// duplicate names are errors naming the field's path, so that a plan that
// parses can be run without further validation of its structure.
//
//===----------------------------------------------------------------------===//

// GCC 13's -Wdangling-reference flags every `const Json &x = f(doc, "name")`
// below: f returns a reference into its first argument (the parsed document,
// which outlives x), never into the temporary string. A false positive of
// that heuristic; GCC 14 narrowed it.
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 13
#pragma GCC diagnostic ignored "-Wdangling-reference"
#endif

#include "flashtile/ABI/LaunchPlan.h"
#include "ExprOps.h"
#include "Messages.h"
#include "flashtile/ABI/SplitKV.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <sstream>
#include <utility>

using namespace flashtile::plan;
using namespace flashtile::plan::detail;

namespace {

// Ordered objects everywhere: the writer's field order is fixed and the info
// object keeps the order it was written in.
using Json = nlohmann::ordered_json;

using flashtile::runtime_detail::concat;

/// A short description of a JSON value's type for messages.
std::string describeType(const Json &value) {
  switch (value.type()) {
  case Json::value_t::null:
    return "null";
  case Json::value_t::boolean:
    return value.get<bool>() ? "true" : "false";
  case Json::value_t::string:
    return concat("\"", value.get<std::string>(), "\"");
  case Json::value_t::number_integer:
  case Json::value_t::number_unsigned:
  case Json::value_t::number_float:
    return value.dump();
  case Json::value_t::array:
    return "an array";
  case Json::value_t::object:
    return "an object";
  default:
    return "a value of another type";
  }
}

//===----------------------------------------------------------------------===//
// Reading: typed access with field paths
//===----------------------------------------------------------------------===//

/// Thrown inside the parser only (caught by parseJson): carries the message.
struct PlanError {
  std::string message;
};

[[noreturn]] void fail(const std::string &path, const std::string &what) {
  throw PlanError{concat(path, ": ", what)};
}

std::string join(const std::string &path, std::string_view key) {
  return path.empty() ? std::string(key) : concat(path, ".", key);
}
std::string index(const std::string &path, size_t i) {
  return concat(path, "[", i, "]");
}

/// Refuses keys of `object` not in `known`.
void checkKeys(const Json &object, const std::string &path,
               std::initializer_list<const char *> known) {
  for (auto it = object.begin(); it != object.end(); ++it) {
    bool found = std::any_of(known.begin(), known.end(),
                             [&](const char *k) { return it.key() == k; });
    if (!found)
      fail(path.empty() ? std::string("plan") : path,
           concat("unknown field '", it.key(), "'"));
  }
}

const Json &require(const Json &object, const std::string &path,
                    const char *key) {
  auto it = object.find(key);
  if (it == object.end())
    fail(join(path, key), "missing");
  return *it;
}

const Json &expectObject(const Json &value, const std::string &path) {
  if (!value.is_object())
    fail(path, concat("expected an object, got ", describeType(value)));
  return value;
}

const Json &expectArray(const Json &value, const std::string &path) {
  if (!value.is_array())
    fail(path, concat("expected an array, got ", describeType(value)));
  return value;
}

std::string getString(const Json &value, const std::string &path,
                      bool nonEmpty = true) {
  if (!value.is_string() || (nonEmpty && value.get<std::string>().empty()))
    fail(path,
         concat("expected a non-empty string, got ", describeType(value)));
  return value.get<std::string>();
}

int64_t getInt(const Json &value, const std::string &path, int64_t min,
               int64_t max = std::numeric_limits<int64_t>::max()) {
  bool ok = value.is_number_integer();
  if (ok && value.is_number_unsigned() &&
      value.get<uint64_t>() >
          static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
    ok = false;
  if (!ok)
    fail(path, concat("expected an integer, got ", describeType(value)));
  int64_t v = value.get<int64_t>();
  if (v < min || v > max) {
    if (max == std::numeric_limits<int64_t>::max())
      fail(path, concat("expected an integer >= ", min, ", got ", v));
    fail(path,
         concat("expected an integer in [", min, ", ", max, "], got ", v));
  }
  return v;
}

bool getBool(const Json &value, const std::string &path) {
  if (!value.is_boolean())
    fail(path, concat("expected true or false, got ", describeType(value)));
  return value.get<bool>();
}

/// Deeper expressions are refused: evaluation and printing recurse, and a
/// plan is input that must not overflow the stack.
constexpr int kMaxExprDepth = 64;

/// Parses an expression; names are checked later (checkNames), once the
/// sizes are known.
Expr parseExpr(const Json &value, const std::string &path, int depth = 0) {
  if (depth > kMaxExprDepth)
    fail(path,
         concat("expression nested deeper than ", kMaxExprDepth, " levels"));
  if (value.is_number_integer())
    return Expr::constant(
        getInt(value, path, std::numeric_limits<int64_t>::min()));
  if (value.is_string())
    return Expr::named(getString(value, path));
  if (!value.is_object() || value.size() != 1)
    fail(path, concat("expected an expression (an integer, a size name or "
                      "an object with one operator key), got ",
                      describeType(value)));
  auto it = value.begin();
  const OpName *op = findOp(it.key());
  if (!op)
    fail(path, concat("unknown operator '", it.key(), "'"));
  std::string opPath = join(path, it.key());
  const Json &list = expectArray(it.value(), opPath);
  if (op->variadic ? list.size() < 2 : list.size() != 2)
    fail(opPath, concat("'", op->key, "' takes ",
                        op->variadic ? "at least 2" : "exactly 2",
                        " operands, got ", list.size()));
  std::vector<Expr> operands;
  for (size_t i = 0; i < list.size(); ++i)
    operands.push_back(parseExpr(list[i], index(opPath, i), depth + 1));
  return Expr::apply(op->op, std::move(operands));
}

bool usesKVSplits(const Expr &expr) {
  if (expr.op == Expr::Op::KVSplits)
    return true;
  for (const Expr &operand : expr.operands)
    if (usesKVSplits(operand))
      return true;
  return false;
}

/// Refuses names that are not declared sizes; "num_sms" and kv_splits (which
/// reads it) only where `allowNumSms` (derived sizes, dispatch conditions).
void checkNames(const Expr &expr, const std::string &path,
                const std::set<std::string, std::less<>> &sizes,
                bool allowNumSms) {
  if (!allowNumSms && usesKVSplits(expr))
    fail(path, "'kv_splits' may only be used in derived sizes and dispatch "
               "conditions");
  std::vector<std::string> names;
  collectNames(expr, names);
  for (const std::string &name : names) {
    if (sizes.count(name) || (allowNumSms && name == kNumSms))
      continue;
    if (name == kNumSms)
      fail(path, "'num_sms' may only be used in dispatch conditions");
    fail(path, concat("unknown size '", name, "'"));
  }
}

std::optional<int64_t>
getOptionalCount(const Json &object, const std::string &path, const char *key) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null())
    return std::nullopt;
  return getInt(*it, join(path, key), 0);
}

Argument parseArgument(const Json &value, const std::string &path) {
  expectObject(value, path);
  Argument arg;
  arg.name = getString(require(value, path, "name"), join(path, "name"));
  std::string kind =
      getString(require(value, path, "kind"), join(path, "kind"));
  std::string dtypePath = join(path, "dtype");
  std::string dtype = getString(require(value, path, "dtype"), dtypePath);
  std::optional<DType> parsed = parseDType(dtype);
  if (!parsed)
    fail(dtypePath,
         concat("unknown dtype \"", dtype,
                "\" (expected f16, bf16, f32, i32, i64, s8, e4m3 or e5m2)"));
  arg.dtype = *parsed;
  auto role = value.find("role");
  std::string rolePath = join(path, "role");
  if (role != value.end()) {
    std::string r = getString(*role, rolePath);
    bool known = false;
    for (ArgRole candidate :
         {ArgRole::Input, ArgRole::Output, ArgRole::Accumulate})
      if (r == stringifyArgRole(candidate)) {
        arg.role = candidate;
        known = true;
      }
    if (!known)
      fail(rolePath, concat("expected \"input\", \"output\" or "
                            "\"accumulate\", got \"",
                            r, "\""));
  }
  if (kind == "scalar") {
    checkKeys(value, path,
              {"name", "kind", "role", "dtype", "default", "positive"});
    arg.kind = ArgKind::Scalar;
    if (arg.role != ArgRole::Input)
      fail(rolePath, "a scalar argument is always an input");
    auto def = value.find("default");
    if (def != value.end() && !def->is_null()) {
      if (!def->is_number())
        fail(join(path, "default"),
             concat("expected a number, got ", describeType(*def)));
      double v = def->get<double>();
      if (!std::isfinite(v))
        fail(join(path, "default"), "expected a finite number");
      arg.defaultValue = v;
    }
    if (auto positive = value.find("positive"); positive != value.end()) {
      if (!positive->is_boolean())
        fail(join(path, "positive"),
             concat("expected true or false, got ", describeType(*positive)));
      arg.positive = positive->get<bool>();
    }
    if (arg.positive && arg.defaultValue && !(*arg.defaultValue > 0))
      fail(join(path, "default"), "expected a positive number");
    return arg;
  }
  if (kind != "tensor")
    fail(join(path, "kind"),
         concat("expected \"tensor\" or \"scalar\", got \"", kind, "\""));
  checkKeys(value, path,
            {"name", "kind", "role", "dtype", "shape", "align_bytes",
             "contiguous_last_dim", "stride_multiple"});
  arg.kind = ArgKind::Tensor;
  if (role == value.end())
    fail(rolePath, "missing");
  std::string shapePath = join(path, "shape");
  const Json &shape = expectArray(require(value, path, "shape"), shapePath);
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i].is_null())
      arg.shape.emplace_back(std::nullopt);
    else
      arg.shape.emplace_back(parseExpr(shape[i], index(shapePath, i)));
  }
  if (auto it = value.find("align_bytes"); it != value.end()) {
    arg.alignBytes = getInt(*it, join(path, "align_bytes"), 1);
    if ((arg.alignBytes & (arg.alignBytes - 1)) != 0)
      fail(join(path, "align_bytes"),
           concat("expected a power of two, got ", arg.alignBytes));
  }
  if (auto it = value.find("contiguous_last_dim"); it != value.end())
    arg.contiguousLastDim = getBool(*it, join(path, "contiguous_last_dim"));
  if (auto it = value.find("stride_multiple"); it != value.end())
    arg.strideMultiple = getInt(*it, join(path, "stride_multiple"), 1);
  return arg;
}

/// The argument `name` of kind `kind`, for the parameter source at `path`.
const Argument &findSourceArg(const LaunchPlan &plan, const std::string &name,
                              ArgKind kind, const std::string &path) {
  const Argument *arg = plan.findArgument(name);
  if (!arg)
    fail(path, concat("unknown argument '", name, "'"));
  if (arg->kind != kind)
    fail(path, concat("argument '", name, "' is a ",
                      arg->kind == ArgKind::Tensor ? "tensor" : "scalar",
                      ", expected a ",
                      kind == ArgKind::Tensor ? "tensor" : "scalar"));
  return *arg;
}

bool isFloatDType(DType dtype) {
  return dtype == DType::F16 || dtype == DType::BF16 || dtype == DType::F32;
}

Param parseParam(const Json &value, const std::string &path,
                 const LaunchPlan &plan,
                 const std::set<std::string, std::less<>> &sizes) {
  expectObject(value, path);
  checkKeys(value, path, {"name", "type", "from"});
  Param param;
  param.name = getString(require(value, path, "name"), join(path, "name"));
  std::string typePath = join(path, "type");
  std::string type = getString(require(value, path, "type"), typePath);
  std::optional<ParamType> parsedType = parseParamType(type);
  if (!parsedType)
    fail(typePath,
         concat("unknown type \"", type, "\" (expected ptr, i32, i64 or f32)"));
  param.type = *parsedType;
  std::string fromPath = join(path, "from");
  const Json &from = expectObject(require(value, path, "from"), fromPath);
  if (from.size() != 1)
    fail(fromPath, "expected an object with one key (data, dim, stride, "
                   "scalar, value or workspace)");
  auto it = from.begin();
  const std::string &key = it.key();
  ParamSource &src = param.source;
  auto expectType = [&](std::initializer_list<ParamType> allowed) {
    if (std::find(allowed.begin(), allowed.end(), param.type) == allowed.end())
      fail(typePath, concat("a '", key, "' parameter cannot be passed as ",
                            stringifyParamType(param.type)));
  };
  // [argument, dimension] of a tensor, the dimension within its rank.
  auto parseTensorDim = [&]() {
    std::string p = join(fromPath, key);
    const Json &pair = expectArray(it.value(), p);
    if (pair.size() != 2)
      fail(p, "expected [argument, dimension]");
    src.arg = getString(pair[0], index(p, 0));
    const Argument &arg =
        findSourceArg(plan, src.arg, ArgKind::Tensor, index(p, 0));
    src.index = getInt(pair[1], index(p, 1), 0);
    if (src.index >= arg.getRank())
      fail(index(p, 1), concat("dimension ", src.index, " is out of range: '",
                               src.arg, "' has rank ", arg.getRank()));
  };
  if (key == "data") {
    src.kind = ParamSource::Kind::Data;
    src.arg = getString(it.value(), join(fromPath, key));
    findSourceArg(plan, src.arg, ArgKind::Tensor, fromPath);
    expectType({ParamType::Ptr});
  } else if (key == "dim" || key == "stride") {
    src.kind =
        key == "dim" ? ParamSource::Kind::Dim : ParamSource::Kind::Stride;
    parseTensorDim();
    expectType({ParamType::I32, ParamType::I64});
  } else if (key == "scalar") {
    src.kind = ParamSource::Kind::Scalar;
    src.arg = getString(it.value(), join(fromPath, key));
    const Argument &arg =
        findSourceArg(plan, src.arg, ArgKind::Scalar, fromPath);
    if (isFloatDType(arg.dtype))
      expectType({ParamType::F32});
    else
      expectType({ParamType::I32, ParamType::I64});
  } else if (key == "value") {
    src.kind = ParamSource::Kind::Value;
    src.value = parseExpr(it.value(), join(fromPath, key));
    checkNames(src.value, join(fromPath, key), sizes, false);
    expectType({ParamType::I32, ParamType::I64});
  } else if (key == "workspace") {
    src.kind = ParamSource::Kind::Workspace;
    src.arg = getString(it.value(), join(fromPath, key));
    bool found =
        std::any_of(plan.workspaces.begin(), plan.workspaces.end(),
                    [&](const Workspace &w) { return w.name == src.arg; });
    if (!found)
      fail(fromPath, concat("unknown workspace '", src.arg, "'"));
    expectType({ParamType::Ptr});
  } else {
    fail(fromPath, concat("unknown source '", key,
                          "' (expected data, dim, stride, scalar, value or "
                          "workspace)"));
  }
  return param;
}

Kernel parseKernel(const Json &value, const std::string &path,
                   const LaunchPlan &plan,
                   const std::set<std::string, std::less<>> &sizes) {
  expectObject(value, path);
  checkKeys(value, path,
            {"symbol", "cubin", "block", "dynamic_smem_bytes", "grid", "params",
             "writes", "registers", "spill_stores", "spill_loads"});
  Kernel kernel;
  kernel.symbol =
      getString(require(value, path, "symbol"), join(path, "symbol"));
  kernel.cubin = getString(require(value, path, "cubin"), join(path, "cubin"));
  std::string blockPath = join(path, "block");
  const Json &block = expectArray(require(value, path, "block"), blockPath);
  if (block.size() != 3)
    fail(blockPath, concat("expected 3 integers, got ", block.size()));
  for (size_t i = 0; i < 3; ++i)
    kernel.block[i] = getInt(block[i], index(blockPath, i), 1, 1024);
  if (kernel.block[2] > 64 ||
      kernel.block[0] * kernel.block[1] * kernel.block[2] > 1024)
    fail(blockPath, concat("[", kernel.block[0], ", ", kernel.block[1], ", ",
                           kernel.block[2],
                           "] exceeds the CUDA block limits (at most 1024 "
                           "threads, z at most 64)"));
  kernel.dynamicSmemBytes = getInt(require(value, path, "dynamic_smem_bytes"),
                                   join(path, "dynamic_smem_bytes"), 0,
                                   std::numeric_limits<int32_t>::max());
  std::string gridPath = join(path, "grid");
  const Json &grid = expectArray(require(value, path, "grid"), gridPath);
  if (grid.size() != 3)
    fail(gridPath, concat("expected 3 expressions, got ", grid.size()));
  for (size_t i = 0; i < 3; ++i) {
    kernel.grid[i] = parseExpr(grid[i], index(gridPath, i));
    checkNames(kernel.grid[i], index(gridPath, i), sizes, false);
  }
  std::string paramsPath = join(path, "params");
  const Json &params = expectArray(require(value, path, "params"), paramsPath);
  for (size_t i = 0; i < params.size(); ++i) {
    Param param = parseParam(params[i], index(paramsPath, i), plan, sizes);
    for (const Param &seen : kernel.params)
      if (seen.name == param.name)
        fail(join(index(paramsPath, i), "name"),
             concat("duplicate parameter name '", param.name, "'"));
    kernel.params.push_back(std::move(param));
  }
  if (auto it = value.find("writes"); it != value.end()) {
    std::string writesPath = join(path, "writes");
    const Json &writes = expectArray(*it, writesPath);
    for (size_t i = 0; i < writes.size(); ++i) {
      std::string name = getString(writes[i], index(writesPath, i));
      if (std::none_of(plan.workspaces.begin(), plan.workspaces.end(),
                       [&](const Workspace &w) { return w.name == name; }))
        fail(index(writesPath, i), concat("unknown workspace '", name, "'"));
      kernel.writes.push_back(std::move(name));
    }
  }
  kernel.registers = getOptionalCount(value, path, "registers");
  kernel.spillStores = getOptionalCount(value, path, "spill_stores");
  kernel.spillLoads = getOptionalCount(value, path, "spill_loads");
  return kernel;
}

LaunchPlan parsePlan(const Json &root) {
  if (!root.is_object())
    fail("plan", concat("expected a JSON object, got ", describeType(root)));
  const std::string top;
  const Json &format = require(root, top, "format");
  if (!format.is_string() || format.get<std::string>() != kFormatName)
    fail("format",
         concat("expected \"", kFormatName, "\", got ", describeType(format)));
  const Json &versionJson = require(root, top, "version");
  int64_t version =
      getInt(versionJson, "version", std::numeric_limits<int32_t>::min(),
             std::numeric_limits<int32_t>::max());
  if (version != kFormatVersion)
    fail("version", concat("this runtime reads version ", kFormatVersion,
                           ", the plan is version ", version));
  checkKeys(root, top,
            {"format", "version", "name", "arch", "isa", "code_path",
             "arguments", "sizes", "checks", "derived", "kernels", "workspaces",
             "dispatch", "info"});
  LaunchPlan plan;
  plan.version = static_cast<int>(version);
  plan.name = getString(require(root, top, "name"), "name");
  plan.arch = getString(require(root, top, "arch"), "arch");
  plan.isa = getString(require(root, top, "isa"), "isa");
  plan.codePath = getString(require(root, top, "code_path"), "code_path");

  // Arguments.
  const Json &args = expectArray(require(root, top, "arguments"), "arguments");
  for (size_t i = 0; i < args.size(); ++i) {
    Argument arg = parseArgument(args[i], index("arguments", i));
    if (plan.findArgument(arg.name))
      fail(index("arguments", i) + ".name",
           concat("duplicate argument name '", arg.name, "'"));
    plan.arguments.push_back(std::move(arg));
  }

  // Sizes: each binds an existing dimension of a tensor argument.
  std::set<std::string, std::less<>> sizeNames;
  const Json &sizes = expectArray(require(root, top, "sizes"), "sizes");
  for (size_t i = 0; i < sizes.size(); ++i) {
    std::string path = index("sizes", i);
    expectObject(sizes[i], path);
    checkKeys(sizes[i], path, {"name", "arg", "dim"});
    SizeBinding size;
    size.name = getString(require(sizes[i], path, "name"), join(path, "name"));
    if (size.name == kNumSms)
      fail(join(path, "name"), "'num_sms' is reserved for the device's "
                               "multiprocessor count");
    if (!sizeNames.insert(size.name).second)
      fail(join(path, "name"), concat("duplicate size name '", size.name, "'"));
    size.arg = getString(require(sizes[i], path, "arg"), join(path, "arg"));
    const Argument &arg =
        findSourceArg(plan, size.arg, ArgKind::Tensor, join(path, "arg"));
    size.dim = getInt(require(sizes[i], path, "dim"), join(path, "dim"), 0);
    if (size.dim >= arg.getRank())
      fail(join(path, "dim"),
           concat("dimension ", size.dim, " is out of range: '", size.arg,
                  "' has rank ", arg.getRank()));
    plan.sizes.push_back(std::move(size));
  }
  for (size_t i = 0; i < plan.arguments.size(); ++i)
    for (size_t d = 0; d < plan.arguments[i].shape.size(); ++d)
      if (plan.arguments[i].shape[d])
        checkNames(*plan.arguments[i].shape[d],
                   index(index("arguments", i) + ".shape", d), sizeNames,
                   false);

  // Checks.
  const Json &checks = expectArray(require(root, top, "checks"), "checks");
  for (size_t i = 0; i < checks.size(); ++i) {
    std::string path = index("checks", i);
    expectObject(checks[i], path);
    checkKeys(checks[i], path, {"condition", "message"});
    Check check;
    check.condition = parseExpr(require(checks[i], path, "condition"),
                                join(path, "condition"));
    checkNames(check.condition, join(path, "condition"), sizeNames, false);
    check.message =
        getString(require(checks[i], path, "message"), join(path, "message"));
    plan.checks.push_back(std::move(check));
  }

  // Derived sizes: each may use the sizes, the earlier ones and num_sms.
  if (auto it = root.find("derived"); it != root.end()) {
    const Json &list = expectArray(*it, "derived");
    for (size_t i = 0; i < list.size(); ++i) {
      std::string path = index("derived", i);
      expectObject(list[i], path);
      checkKeys(list[i], path, {"name", "value"});
      DerivedSize derived;
      derived.name =
          getString(require(list[i], path, "name"), join(path, "name"));
      derived.value =
          parseExpr(require(list[i], path, "value"), join(path, "value"));
      checkNames(derived.value, join(path, "value"), sizeNames, true);
      if (derived.name == kNumSms || !sizeNames.insert(derived.name).second)
        fail(join(path, "name"),
             concat("duplicate size name '", derived.name, "'"));
      plan.derived.push_back(std::move(derived));
    }
  }

  // Workspaces (before kernels: parameters refer to them).
  if (auto it = root.find("workspaces"); it != root.end()) {
    const Json &list = expectArray(*it, "workspaces");
    for (size_t i = 0; i < list.size(); ++i) {
      std::string path = index("workspaces", i);
      expectObject(list[i], path);
      checkKeys(list[i], path, {"name", "bytes", "zero"});
      Workspace ws;
      ws.name = getString(require(list[i], path, "name"), join(path, "name"));
      for (const Workspace &seen : plan.workspaces)
        if (seen.name == ws.name)
          fail(join(path, "name"),
               concat("duplicate workspace name '", ws.name, "'"));
      ws.bytes =
          parseExpr(require(list[i], path, "bytes"), join(path, "bytes"));
      checkNames(ws.bytes, join(path, "bytes"), sizeNames, false);
      if (auto zero = list[i].find("zero"); zero != list[i].end()) {
        if (!zero->is_boolean())
          fail(join(path, "zero"), "expected a boolean");
        ws.zeroed = zero->get<bool>();
      }
      plan.workspaces.push_back(std::move(ws));
    }
  }

  // Kernels.
  const Json &kernels = expectArray(require(root, top, "kernels"), "kernels");
  if (kernels.empty())
    fail("kernels", "a plan needs at least one kernel");
  for (size_t i = 0; i < kernels.size(); ++i)
    plan.kernels.push_back(
        parseKernel(kernels[i], index("kernels", i), plan, sizeNames));

  // Dispatch.
  if (auto it = root.find("dispatch"); it != root.end()) {
    const Json &list = expectArray(*it, "dispatch");
    for (size_t i = 0; i < list.size(); ++i) {
      std::string path = index("dispatch", i);
      expectObject(list[i], path);
      checkKeys(list[i], path, {"when", "kernels"});
      DispatchCase entry;
      entry.condition =
          parseExpr(require(list[i], path, "when"), join(path, "when"));
      checkNames(entry.condition, join(path, "when"), sizeNames, true);
      std::string kernelsPath = join(path, "kernels");
      const Json &indices =
          expectArray(require(list[i], path, "kernels"), kernelsPath);
      if (indices.empty())
        fail(kernelsPath, "expected at least one kernel index");
      for (size_t k = 0; k < indices.size(); ++k)
        entry.kernels.push_back(
            getInt(indices[k], index(kernelsPath, k), 0,
                   static_cast<int64_t>(plan.kernels.size()) - 1));
      plan.dispatch.push_back(std::move(entry));
    }
  }

  if (auto it = root.find("info"); it != root.end()) {
    expectObject(*it, "info");
    plan.infoJson = it->dump();
  }
  return plan;
}

/// "line L, column C" of byte offset `byte` (1-based, as nlohmann counts:
/// the offset of the character after the error).
std::string lineColumn(std::string_view text, size_t byte) {
  size_t line = 1, column = 1;
  size_t end = std::min(byte > 0 ? byte - 1 : 0, text.size());
  for (size_t i = 0; i < end; ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return concat("line ", line, ", column ", column);
}

//===----------------------------------------------------------------------===//
// Writing
//===----------------------------------------------------------------------===//

Json writeExpr(const Expr &expr) {
  switch (expr.op) {
  case Expr::Op::Const:
    return expr.value;
  case Expr::Op::Name:
    return expr.name;
  default: {
    Json operands = Json::array();
    for (const Expr &operand : expr.operands)
      operands.push_back(writeExpr(operand));
    Json object = Json::object();
    object[stringifyExprOp(expr.op)] = std::move(operands);
    return object;
  }
  }
}

Json writeSource(const ParamSource &src) {
  Json object = Json::object();
  switch (src.kind) {
  case ParamSource::Kind::Data:
    object["data"] = src.arg;
    break;
  case ParamSource::Kind::Dim:
    object["dim"] = Json::array({src.arg, src.index});
    break;
  case ParamSource::Kind::Stride:
    object["stride"] = Json::array({src.arg, src.index});
    break;
  case ParamSource::Kind::Scalar:
    object["scalar"] = src.arg;
    break;
  case ParamSource::Kind::Value:
    object["value"] = writeExpr(src.value);
    break;
  case ParamSource::Kind::Workspace:
    object["workspace"] = src.arg;
    break;
  }
  return object;
}

Json optionalCount(const std::optional<int64_t> &value) {
  return value ? Json(*value) : Json(nullptr);
}

} // namespace

std::string flashtile::plan::writeJson(const LaunchPlan &plan) {
  Json root = Json::object();
  root["format"] = kFormatName;
  root["version"] = plan.version;
  root["name"] = plan.name;
  root["arch"] = plan.arch;
  root["isa"] = plan.isa;
  root["code_path"] = plan.codePath;

  Json args = Json::array();
  for (const Argument &arg : plan.arguments) {
    Json a = Json::object();
    a["name"] = arg.name;
    if (arg.kind == ArgKind::Scalar) {
      a["kind"] = "scalar";
      a["dtype"] = stringifyDType(arg.dtype);
      if (arg.defaultValue) {
        double v = *arg.defaultValue;
        // Integral defaults of integer scalars stay integers in the text.
        if (!isFloatDType(arg.dtype) && std::nearbyint(v) == v &&
            std::fabs(v) < 9.0e18)
          a["default"] = static_cast<int64_t>(v);
        else
          a["default"] = v;
      }
      if (arg.positive)
        a["positive"] = true;
    } else {
      a["kind"] = "tensor";
      a["role"] = stringifyArgRole(arg.role);
      a["dtype"] = stringifyDType(arg.dtype);
      Json shape = Json::array();
      for (const std::optional<Expr> &dim : arg.shape)
        shape.push_back(dim ? writeExpr(*dim) : Json(nullptr));
      a["shape"] = std::move(shape);
      a["align_bytes"] = arg.alignBytes;
      a["contiguous_last_dim"] = arg.contiguousLastDim;
      a["stride_multiple"] = arg.strideMultiple;
    }
    args.push_back(std::move(a));
  }
  root["arguments"] = std::move(args);

  Json sizes = Json::array();
  for (const SizeBinding &size : plan.sizes)
    sizes.push_back(
        Json{{"name", size.name}, {"arg", size.arg}, {"dim", size.dim}});
  root["sizes"] = std::move(sizes);

  Json checks = Json::array();
  for (const Check &check : plan.checks) {
    Json c = Json::object();
    c["condition"] = writeExpr(check.condition);
    c["message"] = check.message;
    checks.push_back(std::move(c));
  }
  root["checks"] = std::move(checks);

  if (!plan.derived.empty()) {
    Json derived = Json::array();
    for (const DerivedSize &d : plan.derived) {
      Json entry = Json::object();
      entry["name"] = d.name;
      entry["value"] = writeExpr(d.value);
      derived.push_back(std::move(entry));
    }
    root["derived"] = std::move(derived);
  }

  Json kernels = Json::array();
  for (const Kernel &kernel : plan.kernels) {
    Json k = Json::object();
    k["symbol"] = kernel.symbol;
    k["cubin"] = kernel.cubin;
    k["block"] =
        Json::array({kernel.block[0], kernel.block[1], kernel.block[2]});
    k["dynamic_smem_bytes"] = kernel.dynamicSmemBytes;
    k["grid"] =
        Json::array({writeExpr(kernel.grid[0]), writeExpr(kernel.grid[1]),
                     writeExpr(kernel.grid[2])});
    Json params = Json::array();
    for (const Param &param : kernel.params) {
      Json p = Json::object();
      p["name"] = param.name;
      p["type"] = stringifyParamType(param.type);
      p["from"] = writeSource(param.source);
      params.push_back(std::move(p));
    }
    k["params"] = std::move(params);
    if (!kernel.writes.empty())
      k["writes"] = kernel.writes;
    k["registers"] = optionalCount(kernel.registers);
    k["spill_stores"] = optionalCount(kernel.spillStores);
    k["spill_loads"] = optionalCount(kernel.spillLoads);
    kernels.push_back(std::move(k));
  }
  root["kernels"] = std::move(kernels);

  Json workspaces = Json::array();
  for (const Workspace &ws : plan.workspaces) {
    Json w = Json::object();
    w["name"] = ws.name;
    w["bytes"] = writeExpr(ws.bytes);
    if (ws.zeroed)
      w["zero"] = true;
    workspaces.push_back(std::move(w));
  }
  root["workspaces"] = std::move(workspaces);

  Json dispatch = Json::array();
  for (const DispatchCase &entry : plan.dispatch) {
    Json d = Json::object();
    d["when"] = writeExpr(entry.condition);
    d["kernels"] = entry.kernels;
    dispatch.push_back(std::move(d));
  }
  root["dispatch"] = std::move(dispatch);

  // The info object keeps its own key order.
  Json info = Json::object();
  try {
    Json parsed = Json::parse(plan.infoJson);
    if (parsed.is_object())
      info = std::move(parsed);
  } catch (const Json::exception &) {
    // Not valid JSON: written as {} (documented).
  }
  root["info"] = std::move(info);
  return root.dump(2) + "\n";
}

std::optional<LaunchPlan> flashtile::plan::parseJson(std::string_view json,
                                                     std::string &error) {
  try {
    Json root;
    try {
      root = Json::parse(json.begin(), json.end());
    } catch (const Json::parse_error &e) {
      // nlohmann's text: "[json.exception.parse_error.101] parse error at
      // line 1, column 2: syntax error while parsing ..."; keep what follows
      // the position, and compute the position ourselves.
      std::string what = e.what();
      size_t colon = what.find(": ", what.find("parse error"));
      std::string detail =
          colon == std::string::npos ? what : what.substr(colon + 2);
      error =
          concat("invalid JSON at ", lineColumn(json, e.byte), ": ", detail);
      return std::nullopt;
    }
    return parsePlan(root);
  } catch (const PlanError &e) {
    error = e.message;
  } catch (const std::exception &e) {
    error = concat("invalid plan: ", e.what());
  }
  return std::nullopt;
}
