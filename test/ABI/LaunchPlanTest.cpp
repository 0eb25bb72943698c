//===- LaunchPlanTest.cpp - The launch plan format and expressions --------===//
//
// Reading, writing and validating plans (every class of parse error, with
// the field path it must name) and evaluating expressions, including
// overflow and division by zero.
//
//===----------------------------------------------------------------------===//

#include "flashtile/ABI/LaunchPlan.h"

#include "ExamplePlan.h"

#include "gtest/gtest.h"

#include <limits>

using namespace flashtile::plan;
using flashtile::test::getExamplePlanJson;

namespace {

#define EXPECT_CONTAINS(haystack, needle)                                      \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos)             \
      << "'" << (haystack) << "' does not contain '" << (needle) << "'"

/// The example with the first occurrence of `from` replaced by `to`.
std::string replaced(const std::string &from, const std::string &to) {
  std::string json = getExamplePlanJson();
  size_t at = json.find(from);
  EXPECT_NE(at, std::string::npos) << "the example has no '" << from << "'";
  if (at != std::string::npos)
    json.replace(at, from.size(), to);
  return json;
}

/// Parses `json`, expects failure, and returns the message.
std::string parseError(const std::string &json) {
  std::string error;
  EXPECT_FALSE(parseJson(json, error).has_value()) << json;
  EXPECT_FALSE(error.empty());
  return error;
}

LaunchPlan parseExample() {
  std::string error;
  std::optional<LaunchPlan> plan = parseJson(getExamplePlanJson(), error);
  EXPECT_TRUE(plan.has_value()) << error;
  return plan ? *plan : LaunchPlan();
}

TEST(LaunchPlanTest, ParsesTheExample) {
  LaunchPlan plan = parseExample();
  EXPECT_EQ(plan.name, "flash_fwd");
  EXPECT_EQ(plan.arch, "sm_120");
  EXPECT_EQ(plan.isa, "sm_90");
  EXPECT_EQ(plan.codePath, "sm80");
  ASSERT_EQ(plan.arguments.size(), 8u);
  const Argument &q = plan.arguments[0];
  EXPECT_EQ(q.dtype, DType::BF16);
  EXPECT_EQ(q.role, ArgRole::Input);
  EXPECT_EQ(q.getRank(), 4);
  EXPECT_EQ(q.alignBytes, 16);
  EXPECT_TRUE(q.contiguousLastDim);
  EXPECT_EQ(q.strideMultiple, 8);
  EXPECT_EQ(toString(*q.shape[1]), "seqlen_q");
  EXPECT_EQ(plan.arguments[3].role, ArgRole::Output);
  EXPECT_FALSE(plan.arguments[5].shape[0].has_value());
  EXPECT_EQ(plan.arguments[6].kind, ArgKind::Scalar);
  EXPECT_FALSE(plan.arguments[6].defaultValue.has_value());
  EXPECT_DOUBLE_EQ(*plan.arguments[7].defaultValue, 0.08838834764831845);
  EXPECT_EQ(plan.indexOfArgument("lse"), 4);
  EXPECT_EQ(plan.indexOfArgument("nope"), -1);
  ASSERT_EQ(plan.sizes.size(), 5u);
  EXPECT_EQ(plan.sizes[3].arg, "k");
  EXPECT_EQ(plan.sizes[3].dim, 1);
  ASSERT_EQ(plan.checks.size(), 2u);
  EXPECT_EQ(toString(plan.checks[1].condition), "(heads_q % heads_kv) == 0");
  ASSERT_EQ(plan.kernels.size(), 1u);
  const Kernel &k = plan.kernels[0];
  EXPECT_EQ(k.symbol, "flash_fwd");
  EXPECT_EQ(k.block[0], 256);
  EXPECT_EQ(k.dynamicSmemBytes, 65536);
  EXPECT_EQ(toString(k.grid[0]), "ceil_div(seqlen_q, 128)");
  ASSERT_EQ(k.params.size(), 20u);
  EXPECT_EQ(k.params[9].source.kind, ParamSource::Kind::Stride);
  EXPECT_EQ(k.params[9].source.arg, "q");
  EXPECT_EQ(k.params[15].source.kind, ParamSource::Kind::Dim);
  EXPECT_EQ(k.params[17].type, ParamType::F32);
  EXPECT_EQ(k.params[19].source.kind, ParamSource::Kind::Workspace);
  EXPECT_EQ(k.registers, 255);
  EXPECT_EQ(k.spillStores, 0);
  EXPECT_FALSE(k.spillLoads.has_value());
  ASSERT_EQ(plan.workspaces.size(), 1u);
  EXPECT_EQ(toString(plan.workspaces[0].bytes), "batch * 4");
  ASSERT_EQ(plan.dispatch.size(), 1u);
  EXPECT_EQ(plan.dispatch[0].kernels, std::vector<int64_t>{0});
  EXPECT_EQ(
      plan.infoJson.rfind("{\"kernel\":\"flash_fwd\",\"dtype\":\"bf16\"", 0),
      0u)
      << plan.infoJson;
}

TEST(LaunchPlanTest, RoundTrip) {
  LaunchPlan plan = parseExample();
  std::string text = writeJson(plan);
  std::string error;
  std::optional<LaunchPlan> again = parseJson(text, error);
  ASSERT_TRUE(again.has_value()) << error << "\n" << text;
  EXPECT_EQ(writeJson(*again), text);
  EXPECT_EQ(again->infoJson, plan.infoJson);
  EXPECT_EQ(text.rfind("{\n  \"format\": \"flashtile-launch-plan\",\n  "
                       "\"version\": 2,\n  \"name\": \"flash_fwd\",\n",
                       0),
            0u)
      << text;
  EXPECT_EQ(text.back(), '\n');
  EXPECT_CONTAINS(text, "\"default\": 0.08838834764831845");
  EXPECT_CONTAINS(text, "\"spill_loads\": null");
  // Field order of a tensor argument.
  EXPECT_CONTAINS(text, "\"name\": \"lse\",\n      \"kind\": \"tensor\",\n"
                        "      \"role\": \"output\",\n      \"dtype\": "
                        "\"f32\",\n      \"shape\": [");
}

// A zero-filled workspace says so ("zero": true) and reads back zeroed;
// the others write no "zero".
TEST(LaunchPlanTest, ZeroFilledWorkspace) {
  LaunchPlan plan = parseExample();
  ASSERT_EQ(plan.workspaces.size(), 1u);
  EXPECT_FALSE(plan.workspaces[0].zeroed);
  EXPECT_EQ(writeJson(plan).find("\"zero\""), std::string::npos);
  plan.workspaces[0].zeroed = true;
  std::string text = writeJson(plan);
  EXPECT_CONTAINS(text, "\"zero\": true");
  std::string error;
  std::optional<LaunchPlan> again = parseJson(text, error);
  ASSERT_TRUE(again.has_value()) << error;
  EXPECT_TRUE(again->workspaces[0].zeroed);
}

TEST(LaunchPlanTest, WritesAPlanBuiltInMemory) {
  LaunchPlan plan;
  plan.name = "tiny";
  plan.arch = plan.isa = "sm_90";
  plan.codePath = "sm80";
  Argument x;
  x.name = "x";
  x.dtype = DType::F16;
  x.shape = {Expr::named("n"), std::nullopt};
  plan.arguments.push_back(x);
  Argument s;
  s.name = "count";
  s.kind = ArgKind::Scalar;
  s.dtype = DType::I64;
  s.defaultValue = 7;
  plan.arguments.push_back(s);
  plan.sizes.push_back({"n", "x", 0});
  Kernel k;
  k.symbol = "tiny_kernel";
  k.cubin = "tiny.cubin";
  k.grid[0] = Expr::ceilDiv(Expr::named("n"), Expr::constant(64));
  k.grid[1] = k.grid[2] = Expr::constant(1);
  Param p;
  p.name = "x";
  p.source.arg = "x";
  k.params.push_back(p);
  plan.kernels.push_back(k);
  std::string text = writeJson(plan);
  EXPECT_CONTAINS(text, "\"default\": 7\n");
  EXPECT_CONTAINS(text, "\"workspaces\": [],\n  \"dispatch\": [],\n  "
                        "\"info\": {}\n}\n");
  std::string error;
  std::optional<LaunchPlan> parsed = parseJson(text, error);
  ASSERT_TRUE(parsed.has_value()) << error << "\n" << text;
  EXPECT_EQ(writeJson(*parsed), text);
}

struct ErrorCase {
  const char *from;
  const char *to;
  const char *message;
};

TEST(LaunchPlanTest, ParseErrorsNameTheField) {
  const ErrorCase cases[] = {
      {"\"format\": \"flashtile-launch-plan\"", "\"format\": \"other\"",
       "format: expected \"flashtile-launch-plan\", got \"other\""},
      {"\"version\": 2", "\"version\": 1",
       "version: this runtime reads version 2, the plan is version 1"},
      {"\"version\": 2", "\"version\": \"2\"",
       "version: expected an integer, got \"2\""},
      {"\"name\": \"flash_fwd\",", "", "name: missing"},
      {"\"isa\": \"sm_90\"", "\"isa\": \"\"",
       "isa: expected a non-empty string, got \"\""},
      {"\"code_path\": \"sm80\",", "\"code_path\": \"sm80\", \"extra\": 1,",
       "plan: unknown field 'extra'"},
      {"\"dtype\": \"bf16\"", "\"dtype\": \"f8\"",
       "arguments[0].dtype: unknown dtype \"f8\""},
      {"{\"name\": \"k\", \"kind\"", "{\"name\": \"q\", \"kind\"",
       "arguments[1].name: duplicate argument name 'q'"},
      {"\"kind\": \"tensor\"", "\"kind\": \"matrix\"",
       "arguments[0].kind: expected \"tensor\" or \"scalar\", got \"matrix\""},
      {"\"align_bytes\": 16", "\"align_bytes\": 12",
       "arguments[0].align_bytes: expected a power of two, got 12"},
      {"\"stride_multiple\": 8", "\"stride_multiple\": 0",
       "arguments[0].stride_multiple: expected an integer >= 1, got 0"},
      {"\"role\": \"input\"", "\"role\": \"inout\"",
       "arguments[0].role: expected \"input\", \"output\" or "
       "\"accumulate\", got \"inout\""},
      {"\"kind\": \"scalar\", \"dtype\": \"i32\"",
       "\"kind\": \"scalar\", \"role\": \"output\", \"dtype\": \"i32\"",
       "arguments[6].role: a scalar argument is always an input"},
      {"\"default\": 0.08838834764831845", "\"default\": \"x\"",
       "arguments[7].default: expected a number, got \"x\""},
      {"\"shape\": [\"batch\", \"seqlen_q\"", "\"shape\": [\"batch\", \"sq\"",
       "arguments[0].shape[1]: unknown size 'sq'"},
      {"\"shape\": [\"batch\", \"seqlen_q\"",
       "\"shape\": [\"batch\", {\"pow\": [2, 3]}",
       "arguments[0].shape[1]: unknown operator 'pow'"},
      {"\"shape\": [\"batch\", \"seqlen_q\"",
       "\"shape\": [\"batch\", {\"sub\": [2, 3, 4]}",
       "arguments[0].shape[1].sub: 'sub' takes exactly 2 operands, got 3"},
      {"\"shape\": [\"batch\", \"seqlen_q\"",
       "\"shape\": [\"batch\", {\"add\": [2]}",
       "arguments[0].shape[1].add: 'add' takes at least 2 operands, got 1"},
      {"\"shape\": [\"batch\", \"seqlen_q\"", "\"shape\": [\"batch\", 1.5",
       "arguments[0].shape[1]: expected an expression"},
      {"\"shape\": [\"batch\", \"seqlen_q\"",
       "\"shape\": [\"batch\", {\"add\": [1, 2], \"sub\": [1, 2]}",
       "arguments[0].shape[1]: expected an expression"},
      {"{\"name\": \"batch\", \"arg\": \"q\", \"dim\": 0}",
       "{\"name\": \"batch\", \"arg\": \"q\", \"dim\": 4}",
       "sizes[0].dim: dimension 4 is out of range: 'q' has rank 4"},
      {"{\"name\": \"batch\", \"arg\": \"q\"",
       "{\"name\": \"batch\", \"arg\": \"prefix_len\"",
       "sizes[0].arg: argument 'prefix_len' is a scalar, expected a tensor"},
      {"{\"name\": \"batch\", \"arg\": \"q\"",
       "{\"name\": \"batch\", \"arg\": \"x\"",
       "sizes[0].arg: unknown argument 'x'"},
      {"{\"name\": \"seqlen_q\", \"arg\"", "{\"name\": \"batch\", \"arg\"",
       "sizes[1].name: duplicate size name 'batch'"},
      {"{\"name\": \"batch\", \"arg\"", "{\"name\": \"num_sms\", \"arg\"",
       "sizes[0].name: 'num_sms' is reserved"},
      {"\"message\": \"heads_kv must be at least 1\"", "\"msg\": \"x\"",
       "checks[0]: unknown field 'msg'"},
      {"{\"ge\": [\"heads_kv\", 1]}", "{\"ge\": [\"num_sms\", 1]}",
       "checks[0].condition: 'num_sms' may only be used in dispatch "
       "conditions"},
      {"\"block\": [256, 1, 1]", "\"block\": [1024, 2, 1]",
       "kernels[0].block: [1024, 2, 1] exceeds the CUDA block limits"},
      {"\"block\": [256, 1, 1]", "\"block\": [256, 1]",
       "kernels[0].block: expected 3 integers, got 2"},
      {"\"block\": [256, 1, 1]", "\"block\": [0, 1, 1]",
       "kernels[0].block[0]: expected an integer in [1, 1024], got 0"},
      {"\"dynamic_smem_bytes\": 65536", "\"dynamic_smem_bytes\": -1",
       "kernels[0].dynamic_smem_bytes: expected an integer in [0, "
       "2147483647], got -1"},
      {"\"grid\": [{\"ceil_div\": [\"seqlen_q\", 128]}, \"heads_q\"",
       "\"grid\": [{\"ceil_div\": [\"seqlen_q\", 128]}, \"heads\"",
       "kernels[0].grid[1]: unknown size 'heads'"},
      {"{\"data\": \"q\"}", "{\"data\": \"x\"}",
       "kernels[0].params[0].from: unknown argument 'x'"},
      {"{\"data\": \"q\"}", "{\"data\": \"softmax_scale\"}",
       "kernels[0].params[0].from: argument 'softmax_scale' is a scalar, "
       "expected a tensor"},
      {"{\"scalar\": \"prefix_len\"}", "{\"scalar\": \"q\"}",
       "kernels[0].params[16].from: argument 'q' is a tensor, expected a "
       "scalar"},
      {"{\"stride\": [\"q\", 0]}", "{\"stride\": [\"q\", 4]}",
       "kernels[0].params[9].from.stride[1]: dimension 4 is out of range: "
       "'q' has rank 4"},
      {"{\"stride\": [\"q\", 0]}", "{\"stride\": [\"q\"]}",
       "kernels[0].params[9].from.stride: expected [argument, dimension]"},
      {"{\"workspace\": \"partials\"}", "{\"workspace\": \"scratch\"}",
       "kernels[0].params[19].from: unknown workspace 'scratch'"},
      {"{\"data\": \"q\"}", "{\"pointer\": \"q\"}",
       "kernels[0].params[0].from: unknown source 'pointer'"},
      {"\"type\": \"ptr\", \"from\": {\"data\": \"q\"}",
       "\"type\": \"i32\", \"from\": {\"data\": \"q\"}",
       "kernels[0].params[0].type: a 'data' parameter cannot be passed as "
       "i32"},
      {"\"type\": \"f32\", \"from\": {\"scalar\": \"softmax_scale\"}",
       "\"type\": \"i64\", \"from\": {\"scalar\": \"softmax_scale\"}",
       "kernels[0].params[17].type: a 'scalar' parameter cannot be passed "
       "as i64"},
      {"\"type\": \"i32\", \"from\": {\"value\": \"seqlen_q\"}",
       "\"type\": \"u8\", \"from\": {\"value\": \"seqlen_q\"}",
       "kernels[0].params[5].type: unknown type \"u8\""},
      {"{\"name\": \"k\", \"type\": \"ptr\"",
       "{\"name\": \"q\", \"type\": "
       "\"ptr\"",
       "kernels[0].params[1].name: duplicate parameter name 'q'"},
      {"{\"value\": \"seqlen_q\"}", "{\"value\": \"num_sms\"}",
       "kernels[0].params[5].from.value: 'num_sms' may only be used in "
       "dispatch conditions"},
      {"\"registers\": 255", "\"registers\": -1",
       "kernels[0].registers: expected an integer >= 0, got -1"},
      {"\"registers\": 255", "\"writes\": [\"scratch\"], \"registers\": 255",
       "kernels[0].writes[0]: unknown workspace 'scratch'"},
      {"\"registers\": 255", "\"writes\": \"partials\", \"registers\": 255",
       "kernels[0].writes: expected an array"},
      {"\"bytes\": {\"mul\": [\"batch\", 4]}",
       "\"bytes\": {\"mul\": [\"b\", "
       "4]}",
       "workspaces[0].bytes: unknown size 'b'"},
      {"\"bytes\": {\"mul\": [\"batch\", 4]}",
       "\"bytes\": {\"mul\": [\"batch\", 4]}, \"zero\": 1",
       "workspaces[0].zero: expected a boolean"},
      {"\"kernels\": [0]", "\"kernels\": [1]",
       "dispatch[0].kernels[0]: expected an integer in [0, 0], got 1"},
      {"\"kernels\": [0]", "\"kernels\": []",
       "dispatch[0].kernels: expected at least one kernel index"},
      {"{\"ge\": [\"num_sms\", 100]}", "{\"ge\": [\"sms\", 100]}",
       "dispatch[0].when: unknown size 'sms'"},
      {"\"info\": {", "\"info\": [], \"x\": {", "plan: unknown field 'x'"},
      {"\"info\": {\"kernel\"", "\"info\": 3, \"i\": {\"kernel\"",
       "plan: unknown field 'i'"},
  };
  for (const ErrorCase &c : cases) {
    std::string error = parseError(replaced(c.from, c.to));
    EXPECT_EQ(error.rfind(c.message, 0), 0u)
        << "got:      " << error << "\nexpected: " << c.message;
  }
}

TEST(LaunchPlanTest, StructuralErrors) {
  EXPECT_EQ(parseError("[1, 2]"), "plan: expected a JSON object, got an array");
  std::string error = parseError("{\n  \"format\": \n}");
  EXPECT_EQ(error.rfind("invalid JSON at line 3, column 1: ", 0), 0u) << error;
  EXPECT_EQ(parseError(""), parseError("")); // deterministic, no throw
  EXPECT_EQ(parseError(replaced("\"info\": {\"kernel\"",
                                "\"info\": 3, \"unused\": {\"kernel\""))
                .rfind("plan: unknown field", 0),
            0u);
  // A non-object info.
  std::string json = getExamplePlanJson();
  size_t at = json.find("\"info\": {");
  json = json.substr(0, at) + "\"info\": [1]\n}\n";
  EXPECT_EQ(parseError(json), "info: expected an object, got an array");
  // No kernels.
  json = getExamplePlanJson();
  size_t begin = json.find("\"kernels\": [\n");
  size_t end = json.find("\"workspaces\"");
  EXPECT_EQ(parseError(json.substr(0, begin) + "\"kernels\": [],\n  " +
                       json.substr(end)),
            "kernels: a plan needs at least one kernel");
  // An expression nested past the limit is refused, not recursed into.
  std::string deep;
  for (int i = 0; i < 1000; ++i)
    deep += "{\"add\": [";
  deep += "1";
  for (int i = 0; i < 1000; ++i)
    deep += ", 1]}";
  error = parseError(replaced("{\"ceil_div\": [\"seqlen_q\", 128]}", deep));
  EXPECT_NE(error.find("expression nested deeper than 64 levels"),
            std::string::npos)
      << error.substr(0, 200);
}

//===----------------------------------------------------------------------===//
// Expressions
//===----------------------------------------------------------------------===//

Expr c(int64_t v) { return Expr::constant(v); }
Expr n(const char *name) { return Expr::named(name); }
Expr op(Expr::Op o, std::vector<Expr> operands) {
  return Expr::apply(o, std::move(operands));
}

std::optional<int64_t> eval(const Expr &e, std::string *errorOut = nullptr) {
  Env env{{"a", 7}, {"b", -2}, {"zero", 0}};
  std::string error;
  std::optional<int64_t> v = evaluate(e, env, error);
  if (errorOut)
    *errorOut = error;
  return v;
}

TEST(LaunchPlanTest, EvaluatesExpressions) {
  using O = Expr::Op;
  EXPECT_EQ(eval(op(O::Add, {n("a"), c(1), c(2)})), 10);
  EXPECT_EQ(eval(op(O::Sub, {n("a"), n("b")})), 9);
  EXPECT_EQ(eval(op(O::Mul, {n("a"), n("b"), c(3)})), -42);
  EXPECT_EQ(eval(op(O::Div, {n("a"), c(2)})), 3);
  EXPECT_EQ(eval(op(O::Div, {c(-7), c(2)})), -4); // floor
  EXPECT_EQ(eval(op(O::CeilDiv, {n("a"), c(2)})), 4);
  EXPECT_EQ(eval(op(O::CeilDiv, {c(-7), c(2)})), -3);
  EXPECT_EQ(eval(op(O::CeilDiv, {c(8), c(2)})), 4);
  EXPECT_EQ(eval(op(O::Mod, {c(-7), c(2)})), 1); // the divisor's sign
  EXPECT_EQ(eval(op(O::Mod, {n("a"), n("b")})), -1);
  EXPECT_EQ(eval(op(O::Min, {n("a"), n("b"), c(0)})), -2);
  EXPECT_EQ(eval(op(O::Max, {n("a"), n("b"), c(9)})), 9);
  EXPECT_EQ(eval(op(O::Eq, {n("a"), c(7)})), 1);
  EXPECT_EQ(eval(op(O::Ne, {n("a"), c(7)})), 0);
  EXPECT_EQ(eval(op(O::Lt, {n("b"), c(0)})), 1);
  EXPECT_EQ(eval(op(O::Le, {c(0), c(0)})), 1);
  EXPECT_EQ(eval(op(O::Gt, {c(0), c(0)})), 0);
  EXPECT_EQ(eval(op(O::Ge, {n("a"), c(8)})), 0);
  EXPECT_EQ(eval(op(O::And, {c(1), n("a"), c(0)})), 0);
  EXPECT_EQ(eval(op(O::Or, {c(0), n("zero"), n("b")})), 1);
  // Short-circuit: the guard protects the division.
  EXPECT_EQ(eval(op(O::And, {op(O::Ne, {n("zero"), c(0)}),
                             op(O::Div, {c(1), n("zero")})})),
            0);
}

TEST(LaunchPlanTest, EvaluationErrors) {
  using O = Expr::Op;
  const int64_t max = std::numeric_limits<int64_t>::max();
  const int64_t min = std::numeric_limits<int64_t>::min();
  std::string error;
  EXPECT_FALSE(eval(op(O::Div, {n("a"), n("zero")}), &error));
  EXPECT_EQ(error, "division by zero in a / zero");
  EXPECT_FALSE(eval(op(O::CeilDiv, {n("a"), c(0)}), &error));
  EXPECT_EQ(error, "division by zero in ceil_div(a, 0)");
  EXPECT_FALSE(eval(op(O::Mod, {n("a"), c(0)}), &error));
  EXPECT_EQ(error, "division by zero in a % 0");
  EXPECT_FALSE(eval(op(O::Add, {c(max), c(1)}), &error));
  EXPECT_EQ(error, "integer overflow in 9223372036854775807 + 1 "
                   "(9223372036854775807 add 1)");
  EXPECT_FALSE(eval(op(O::Sub, {c(min), c(1)}), &error));
  EXPECT_FALSE(eval(op(O::Mul, {c(max / 2 + 1), c(2)}), &error));
  EXPECT_FALSE(eval(op(O::Div, {c(min), c(-1)}), &error));
  EXPECT_FALSE(eval(op(O::CeilDiv, {c(min), c(-1)}), &error));
  EXPECT_EQ(eval(op(O::CeilDiv, {c(max), c(2)})), max / 2 + 1);
  EXPECT_FALSE(eval(n("missing"), &error));
  EXPECT_EQ(error, "unknown size 'missing'");
}

TEST(LaunchPlanTest, KVSplitsAndDerivedSizes) {
  using O = Expr::Op;
  // FA2's rule on the device's SM count (SplitKVTest covers the rule).
  Expr rule = op(O::KVSplits, {n("blocks"), n("tiles"), c(1), c(128)});
  std::string error;
  Env env{{"blocks", 32}, {"tiles", 128}, {"num_sms", 132}};
  EXPECT_EQ(evaluate(rule, env, error), 4) << error;
  env["blocks"] = 256;
  EXPECT_EQ(evaluate(rule, env, error), 1) << error;
  env.erase("num_sms");
  EXPECT_FALSE(evaluate(rule, env, error));
  EXPECT_EQ(error, "'kv_splits' needs the device's multiprocessor count");
  EXPECT_FALSE(evaluate(op(O::KVSplits, {c(1), c(2)}), env, error));
  EXPECT_EQ(error, "'kv_splits' has 2 operands, expected 4");
  EXPECT_EQ(toString(op(O::Mul, {rule, c(2)})),
            "kv_splits(blocks, tiles, 1, 128) * 2");

  // A derived size reads sizes and num_sms, later fields read it, and it
  // round-trips.
  std::string json = replaced(
      "\"workspaces\": [",
      "\"derived\": [{\"name\": \"splits\", \"value\": {\"kv_splits\": "
      "[\"batch\", \"seqlen_k\", 1, 128]}}],\n  \"workspaces\": [");
  std::optional<LaunchPlan> plan = parseJson(json, error);
  ASSERT_TRUE(plan) << error;
  ASSERT_EQ(plan->derived.size(), 1u);
  EXPECT_EQ(plan->derived[0].name, "splits");
  std::optional<LaunchPlan> again = parseJson(writeJson(*plan), error);
  ASSERT_TRUE(again) << error;
  EXPECT_EQ(writeJson(*again), writeJson(*plan));

  // kv_splits reads num_sms: only derived sizes and dispatch may use it.
  EXPECT_EQ(parseError(replaced("{\"ge\": [\"heads_kv\", 1]}",
                                "{\"ge\": [{\"kv_splits\": [1, 2, 1, 8]}, "
                                "1]}")),
            "checks[0].condition: 'kv_splits' may only be used in derived "
            "sizes and dispatch conditions");
  EXPECT_EQ(parseError(replaced(
                "\"workspaces\": [",
                "\"derived\": [{\"name\": \"batch\", \"value\": 1}],\n  "
                "\"workspaces\": [")),
            "derived[0].name: duplicate size name 'batch'");
  EXPECT_EQ(parseError(replaced(
                "\"workspaces\": [",
                "\"derived\": [{\"name\": \"x\", \"value\": \"y\"}],\n  "
                "\"workspaces\": [")),
            "derived[0].value: unknown size 'y'");
}

TEST(LaunchPlanTest, PrintsExpressions) {
  using O = Expr::Op;
  EXPECT_EQ(toString(op(O::Mul, {op(O::Add, {n("a"), c(1)}), n("b")})),
            "(a + 1) * b");
  EXPECT_EQ(toString(op(O::Max, {n("a"), c(1), n("b")})), "max(a, 1, b)");
  EXPECT_EQ(toString(op(O::And, {op(O::Ge, {n("a"), c(1)}),
                                 op(O::Lt, {n("b"), c(2)})})),
            "(a >= 1) && (b < 2)");
  std::vector<std::string> names;
  collectNames(op(O::Add, {n("b"), n("a"), n("b")}), names);
  EXPECT_EQ(names, (std::vector<std::string>{"b", "a"}));
}

TEST(LaunchPlanTest, DTypes) {
  for (DType d : {DType::F16, DType::BF16, DType::F32, DType::I32, DType::I64,
                  DType::S8, DType::E4M3, DType::E5M2})
    EXPECT_EQ(parseDType(stringifyDType(d)), d);
  EXPECT_FALSE(parseDType("float").has_value());
  EXPECT_EQ(getDTypeSize(DType::BF16), 2);
  EXPECT_EQ(getDTypeSize(DType::I64), 8);
  EXPECT_EQ(getDTypeSize(DType::S8), 1);
  EXPECT_EQ(getDTypeSize(DType::E4M3), 1);
  EXPECT_STREQ(stringifyDType(DType::E5M2), "e5m2");
  EXPECT_STREQ(stringifyArgRole(ArgRole::Accumulate), "accumulate");
  EXPECT_EQ(parseParamType("f32"), ParamType::F32);
  EXPECT_FALSE(parseParamType("f64").has_value());
}

} // namespace
