//===- LaunchPlan.h - The kernel interface, shared by both sides -*- C++
//-*-===//
//
// The launch plan is the one definition of how a compiled attention kernel
// family is called. The compiler derives it from the `attn.kernel` op and
// writes it next to the cubins; the runtime only reads and runs it. This
// header and its implementation (lib/ABI/LaunchPlan.cpp) are LLVM-free,
// so both sides include the same code: the format has one owner.
//
// A plan describes:
//   * the user-facing arguments, in order: the kernel's sequence tensors
//     (Q, K, V, O, LSE for the forward), then any extra tensors and scalars
//     of the kernel (dtype, rank, role, the shape each dimension must have,
//     alignment and stride rules);
//   * named run-time sizes ("batch", "seqlen_q", ...), each bound to one
//     dimension of one argument;
//   * checks over those sizes, each with the message a user sees;
//   * the ordered kernels: cubin, symbol, block, dynamic shared memory, a
//     grid of size expressions, and the parameter list, each parameter saying
//     where its value comes from (a tensor's pointer, size or stride, a named
//     size, a scalar argument, a workspace);
//   * derived sizes: named expressions over the sizes (and "num_sms"),
//     evaluated in order after the checks, which later expressions may use
//     ("kv_splits", the split-KV rule of SplitKV.h); a launch may fix one
//     (runtime::LaunchOptions::sizes);
//   * workspaces, with their sizes as expressions;
//   * an optional dispatch rule: the first entry whose condition holds
//     (evaluated over the sizes and the device's properties, such as
//     "num_sms") names the kernels that run. Without one, every kernel runs
//     in order.
//
// Expressions are integer trees: a constant, a named size, or an operator
// over operands. In JSON: 128, "seqlen_q", {"ceil_div": ["seqlen_q", 128]}.
// Comparisons and logic yield 0 or 1.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHTILE_ABI_LAUNCHPLAN_H
#define FLASHTILE_ABI_LAUNCHPLAN_H

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace flashtile::plan {

/// The format this code writes and reads. A plan whose `version` differs is
/// refused with both numbers.
inline constexpr const char *kFormatName = "flashtile-launch-plan";
inline constexpr int kFormatVersion = 2;

//===----------------------------------------------------------------------===//
// Element types
//===----------------------------------------------------------------------===//

/// Element types of arguments: the attention dtypes, f32 and the integer
/// types of captures and tables, and the 8-bit operand types of attn.mma
/// (s8, e4m3, e5m2).
enum class DType { F16, BF16, F32, I32, I64, S8, E4M3, E5M2 };

/// "f16", "bf16", "f32", "i32", "i64", "s8", "e4m3", "e5m2".
const char *stringifyDType(DType dtype);
std::optional<DType> parseDType(std::string_view name);
/// Bytes per element.
int64_t getDTypeSize(DType dtype);

//===----------------------------------------------------------------------===//
// Expressions
//===----------------------------------------------------------------------===//

/// An integer expression over named run-time sizes.
struct Expr {
  enum class Op {
    Const,
    Name,
    Add,
    Sub,
    Mul,
    /// Floor division; division by zero is an evaluation error.
    Div,
    CeilDiv,
    Mod,
    Min,
    Max,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    And,
    Or,
    /// kv_splits(blocks, kv_tiles, blocks_per_sm, max_splits): the split
    /// count of runtime::chooseKVSplits on the device's "num_sms".
    KVSplits,
  };
  Op op = Op::Const;
  int64_t value = 0;
  std::string name;
  std::vector<Expr> operands;

  static Expr constant(int64_t value);
  static Expr named(std::string name);
  static Expr apply(Op op, std::vector<Expr> operands);
  static Expr ceilDiv(Expr a, Expr b) { return apply(Op::CeilDiv, {a, b}); }
};

/// The JSON key of an operator ("ceil_div", "mul", ...); Const and Name have
/// none.
const char *stringifyExprOp(Expr::Op op);

/// Values of the named sizes (and device properties) an expression may use.
using Env = std::map<std::string, int64_t, std::less<>>;

/// Evaluates `expr`. Fails (std::nullopt, `error` set) on an unknown name,
/// division by zero or signed overflow.
std::optional<int64_t> evaluate(const Expr &expr, const Env &env,
                                std::string &error);

/// "ceil_div(seqlen_q, 128)" for messages.
std::string toString(const Expr &expr);

/// Appends the names `expr` uses to `names`, each once, in order of first
/// appearance (for messages that show the values involved).
void collectNames(const Expr &expr, std::vector<std::string> &names);

//===----------------------------------------------------------------------===//
// Arguments and sizes
//===----------------------------------------------------------------------===//

enum class ArgKind { Tensor, Scalar };
/// Input: read. Output: written, allocated by the runtime when the caller
/// gives none. Accumulate: given by the caller and added to (f32 / i32
/// atomics), so it is both read and written.
enum class ArgRole { Input, Output, Accumulate };

/// "input", "output", "accumulate".
const char *stringifyArgRole(ArgRole role);

/// One user-facing argument of the family.
struct Argument {
  std::string name;
  ArgKind kind = ArgKind::Tensor;
  ArgRole role = ArgRole::Input;
  DType dtype = DType::F32;
  /// Tensors: the shape, one entry per dimension. An empty optional means
  /// any extent.
  std::vector<std::optional<Expr>> shape;
  /// Tensors: the data pointer must be a multiple of this.
  int64_t alignBytes = 1;
  /// Tensors: the last dimension must have stride 1.
  bool contiguousLastDim = false;
  /// Tensors: every stride but the last must be a multiple of this (elements).
  int64_t strideMultiple = 1;
  /// Scalars: the value used when the caller gives none. Without one the
  /// scalar is required.
  std::optional<double> defaultValue;
  /// Scalars: the value must be above 0 (the softmax scale: the kernel's
  /// online softmax takes the row max of the unscaled scores).
  bool positive = false;

  int64_t getRank() const { return static_cast<int64_t>(shape.size()); }
};

/// A named run-time size, read from one dimension of one tensor argument.
struct SizeBinding {
  std::string name;
  std::string arg;
  int64_t dim = 0;
};

/// A condition over the sizes that a launch must satisfy (non-zero).
struct Check {
  Expr condition;
  std::string message;
};

//===----------------------------------------------------------------------===//
// Kernels
//===----------------------------------------------------------------------===//

/// How one kernel parameter is passed.
enum class ParamType { Ptr, I32, I64, F32 };
const char *stringifyParamType(ParamType type);
std::optional<ParamType> parseParamType(std::string_view name);

/// Where a parameter's value comes from.
struct ParamSource {
  enum class Kind {
    /// A tensor argument's data pointer.
    Data,
    /// A tensor argument's extent in dimension `index`.
    Dim,
    /// A tensor argument's stride (elements) in dimension `index`.
    Stride,
    /// A scalar argument's value.
    Scalar,
    /// A named size (or any expression over sizes).
    Value,
    /// A workspace's device pointer.
    Workspace,
  };
  Kind kind = Kind::Data;
  /// The argument or workspace name (Data, Dim, Stride, Scalar, Workspace).
  std::string arg;
  /// The dimension (Dim, Stride).
  int64_t index = 0;
  /// The value (Value).
  Expr value;
};

struct Param {
  std::string name;
  ParamType type = ParamType::Ptr;
  ParamSource source;
};

/// One compiled kernel of the family.
struct Kernel {
  /// The kernel's symbol in its cubin.
  std::string symbol;
  /// The cubin's file, relative to the plan's folder.
  std::string cubin;
  int64_t block[3] = {1, 1, 1};
  int64_t dynamicSmemBytes = 0;
  Expr grid[3];
  std::vector<Param> params;
  /// The workspaces this kernel fills for later kernels ("writes"; absent:
  /// none). They depend only on the arguments the kernel reads and the
  /// sizes, so a launch may reuse them from an earlier one and skip the
  /// kernel (runtime::LaunchOptions).
  std::vector<std::string> writes;
  /// What ptxas reported; absent when unknown. Informative.
  std::optional<int64_t> registers, spillStores, spillLoads;
};

/// A named size computed from the others.
struct DerivedSize {
  std::string name;
  Expr value;
};

/// A device buffer the runtime allocates for the kernels of one launch.
struct Workspace {
  std::string name;
  Expr bytes;
  /// The runtime zero-fills it before the launch's first kernel ("zero";
  /// absent: false), unless the caller passes it as already filled.
  bool zeroed = false;
};

/// One entry of a dispatch rule: when `condition` holds, run `kernels`
/// (indices into LaunchPlan::kernels) in order.
struct DispatchCase {
  Expr condition;
  std::vector<int64_t> kernels;
};

/// The whole interface of a compiled kernel family.
struct LaunchPlan {
  int version = kFormatVersion;
  /// The family's name (the kernel op's symbol).
  std::string name;
  /// The chip of the configuration, the ISA of the cubins, the code path.
  std::string arch, isa, codePath;
  std::vector<Argument> arguments;
  std::vector<SizeBinding> sizes;
  std::vector<Check> checks;
  /// Evaluated in order after the checks.
  std::vector<DerivedSize> derived;
  std::vector<Kernel> kernels;
  std::vector<Workspace> workspaces;
  /// Empty: every kernel runs, in order.
  std::vector<DispatchCase> dispatch;
  /// What the kernel computes and how it is tiled (dtype, head dims, mask,
  /// softmax scale, config, smem plan), as a JSON object text. Informative:
  /// nothing above depends on it.
  std::string infoJson = "{}";

  /// The argument named `name`, or nullptr.
  const Argument *findArgument(std::string_view name) const;
  /// The index of argument `name`, or -1.
  int64_t indexOfArgument(std::string_view name) const;
  /// The index of workspace `name`, or -1.
  int64_t findWorkspace(std::string_view name) const;
};

/// Serializes `plan` (two-space indented JSON, newline-terminated; fields in
/// a fixed order, so equal plans give equal text). `plan` is assumed valid
/// (as parseJson returns them); `infoJson` that is not a JSON object is
/// written as {}.
std::string writeJson(const LaunchPlan &plan);

/// Parses and validates a plan: the format name and version, every field's
/// type, references between fields (sizes bind existing tensor dimensions,
/// parameters name existing arguments, dispatch indices exist). On failure
/// returns std::nullopt with `error` set to "<where>: <what is wrong>";
/// `where` names the field ("kernels[0].params[3].type"). Never throws.
std::optional<LaunchPlan> parseJson(std::string_view json, std::string &error);

} // namespace flashtile::plan

#endif // FLASHTILE_ABI_LAUNCHPLAN_H
