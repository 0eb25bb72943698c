//===- KernelABITest.cpp - The parameters of a kernel's interface --------===//

#include "flashtile/Conversion/AttnToNVVM/KernelABI.h"
#include "flashtile/ABI/LaunchPlan.h"
#include "flashtile/DSL/FlashAttention.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "gtest/gtest.h"

#include <string>
#include <vector>

using namespace mlir;
using namespace flashtile;
using namespace flashtile::attn;

static std::vector<std::string> names(const std::vector<plan::Param> &params,
                                      size_t count) {
  std::vector<std::string> out;
  for (size_t i = 0; i < count && i < params.size(); ++i)
    out.push_back(params[i].name);
  return out;
}

// The forward's order is the ABI every kernel built so far has: the
// pointers, the sizes (rows, then heads), the strides, the scale, then the
// extra arguments.
TEST(KernelABITest, ForwardParameters) {
  MLIRContext ctx;
  ctx.loadDialect<AttnDialect, arith::ArithDialect>();
  OwningOpRef<ModuleOp> module = ModuleOp::create(UnknownLoc::get(&ctx));
  dsl::AttentionSpec spec;
  spec.extraArgs = {{"slopes", dsl::DType::F32, 2},
                    {"cap", dsl::DType::I32, -1}};
  FailureOr<KernelOp> kernel =
      dsl::buildAttentionKernel(*module, spec, UnknownLoc::get(&ctx));
  ASSERT_TRUE(succeeded(kernel));
  std::vector<plan::Param> params = getKernelParams(*kernel);
  std::vector<std::string> expected = {"q",
                                       "k",
                                       "v",
                                       "o",
                                       "lse",
                                       "seqlen_q",
                                       "seqlen_k",
                                       "heads_q",
                                       "heads_kv",
                                       "q.stride_batch",
                                       "q.stride_seq",
                                       "q.stride_head",
                                       "k.stride_batch",
                                       "k.stride_seq",
                                       "k.stride_head",
                                       "v.stride_batch",
                                       "v.stride_seq",
                                       "v.stride_head",
                                       "o.stride_batch",
                                       "o.stride_seq",
                                       "o.stride_head",
                                       "lse.stride_batch",
                                       "lse.stride_head",
                                       "softmax_scale",
                                       "slopes",
                                       "slopes.size0",
                                       "slopes.size1",
                                       "slopes.stride0",
                                       "slopes.stride1",
                                       "cap",
                                       "batch"};
  EXPECT_EQ(names(params, params.size()), expected);
  EXPECT_EQ(getNumTensorParams(*kernel), 24);
  EXPECT_EQ(params[5].source.kind, plan::ParamSource::Kind::Value);
  EXPECT_EQ(params[20].source.arg, "o");
  EXPECT_EQ(params[20].source.index, 2);
  EXPECT_EQ(params[22].source.arg, "lse");
  EXPECT_EQ(params[22].source.index, 1);
  EXPECT_EQ(params[23].type, plan::ParamType::F32);
  EXPECT_EQ(params[29].type, plan::ParamType::I32);
  // Every kernel takes the batch size, after the extra arguments.
  EXPECT_EQ(getBatchParamIndex(*kernel), 30);
  EXPECT_EQ(params[30].type, plan::ParamType::I32);
  EXPECT_EQ(params[30].source.kind, plan::ParamSource::Kind::Value);
  TensorParams lse = getTensorParams(*kernel, "lse");
  EXPECT_EQ(lse.rank, 3);
  EXPECT_EQ(lse.pointer, 4);
  EXPECT_EQ(lse.rows, 5);
  EXPECT_EQ(lse.heads, 7);
  EXPECT_EQ(lse.strides, (std::vector<int64_t>{21, 22}));
  EXPECT_EQ(getParamIndex(*kernel, "softmax_scale"), 23);
  EXPECT_EQ(getParamIndex(*kernel, "dq"), -1);
}

// A kernel that declares its own tensors (a backward's) gets parameters
// and a plan from the declaration: no fixed prefix.
TEST(KernelABITest, DeclaredTensors) {
  MLIRContext ctx;
  ctx.loadDialect<AttnDialect, arith::ArithDialect>();
  const char *source = R"mlir(
    attn.kernel @bwd arch(#attn.arch<sm_120>) attributes {
      tensors = [#attn.tensor<"k", "in", "seqlen_k", "heads_kv">,
                 #attn.tensor<"do", "in", "seqlen_q", "heads_q">,
                 #attn.tensor<"d", "out", "seqlen_q", "heads_q">,
                 #attn.tensor<"dq", "accumulate", "seqlen_q", "heads_q">],
      arg_names = ["bias"]} {
    ^bb0(%k: memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>,
         %do: memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>,
         %d: memref<?x?x?xf32, strided<[?, ?, 1]>>,
         %dq: memref<?x?x?x64xf32, strided<[?, ?, ?, 1]>>,
         %bias: memref<?xf32, strided<[?]>>):
    }
  )mlir";
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(source, &ctx);
  ASSERT_TRUE(module);
  auto kernel = *module->getOps<KernelOp>().begin();
  EXPECT_EQ(kernel.getNumTensors(), 4u);
  EXPECT_EQ(kernel.getExtraArgs().size(), 1u);
  EXPECT_FALSE(kernel.getQ());
  EXPECT_EQ(kernel.getK(), kernel.getBodyBlock().getArgument(0));
  EXPECT_EQ(kernel.getExtraArgIndex(kernel.getBodyBlock().getArgument(4)), 0);
  EXPECT_EQ(kernel.getExtraArgIndex(kernel.getK()), -1);
  std::vector<plan::Param> params = getKernelParams(kernel);
  std::vector<std::string> expected = {"k",
                                       "do",
                                       "d",
                                       "dq",
                                       "seqlen_k",
                                       "seqlen_q",
                                       "heads_kv",
                                       "heads_q",
                                       "k.stride_batch",
                                       "k.stride_seq",
                                       "k.stride_head",
                                       "do.stride_batch",
                                       "do.stride_seq",
                                       "do.stride_head",
                                       "d.stride_batch",
                                       "d.stride_head",
                                       "dq.stride_batch",
                                       "dq.stride_seq",
                                       "dq.stride_head",
                                       "softmax_scale",
                                       "bias",
                                       "bias.size0",
                                       "bias.stride0",
                                       "batch"};
  EXPECT_EQ(names(params, params.size()), expected);
  TensorParams d = getTensorParams(kernel, "d");
  EXPECT_EQ(d.rows, 5);
  EXPECT_EQ(d.heads, 7);

  plan::LaunchPlan plan;
  describeKernelArguments(kernel, plan);
  ASSERT_GE(plan.arguments.size(), 4u);
  EXPECT_EQ(plan.arguments[1].name, "do");
  EXPECT_EQ(plan.arguments[2].role, plan::ArgRole::Output);
  EXPECT_EQ(plan.arguments[2].shape.size(), 3u);
  EXPECT_EQ(plan.arguments[3].role, plan::ArgRole::Accumulate);
  EXPECT_EQ(plan.arguments[3].dtype, plan::DType::F32);
  std::vector<std::string> sizes;
  for (const plan::SizeBinding &b : plan.sizes)
    sizes.push_back(b.name + "=" + b.arg + "." + std::to_string(b.dim));
  EXPECT_EQ(sizes, (std::vector<std::string>{"batch=k.0", "seqlen_k=k.1",
                                             "heads_kv=k.2", "seqlen_q=do.1",
                                             "heads_q=do.2"}));
}
