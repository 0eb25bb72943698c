//===- FlashAttention.cpp - C++ DSL: attention kernels --------------------===//

#include "flashtile/DSL/FlashAttention.h"

#include "HookTracer.h"
#include "KernelShell.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Verifier.h"

using namespace mlir;
using namespace flashtile;
using namespace flashtile::attn;

/// Traces one hook lambda into `region`: a block of `argTypes`, the lambda's
/// result yielded as `resultType`.
template <typename Fn, size_t... I>
static LogicalResult traceHook(KernelOp kernel, Region &region,
                               StringRef name, const Fn &fn,
                               ArrayRef<Type> argTypes, Type resultType,
                               StringRef resultName,
                               std::index_sequence<I...>) {
  Block *block = new Block();
  region.push_back(block);
  for (Type type : argTypes)
    block->addArgument(type, kernel.getLoc());
  dsl::detail::HookTracer tracer(kernel, block, name);
  dsl::Expr result = fn(tracer.argument(block->getArgument(I))...);
  FailureOr<Value> value = tracer.finish(result, resultType, resultName);
  if (failed(value))
    return failure();
  OpBuilder b = OpBuilder::atBlockEnd(block);
  YieldOp::create(b, tracer.locOf(result), ValueRange{*value});
  return success();
}

static LogicalResult traceHooks(KernelOp kernel, AttentionOp attention,
                                const dsl::AttentionSpec &spec) {
  Builder b(kernel.getContext());
  Type index = b.getIndexType();
  if (spec.scoreMod &&
      failed(traceHook(kernel, attention.getScoreMod(), "score_mod",
                       spec.scoreMod,
                       {b.getF32Type(), index, index, index, index},
                       b.getF32Type(), "a score (f32)",
                       std::make_index_sequence<5>())))
    return failure();
  if (spec.maskMod &&
      failed(traceHook(kernel, attention.getMaskMod(), "mask_mod",
                       spec.maskMod, {index, index, index, index},
                       b.getI1Type(), "a condition (i1), e.g. q >= k",
                       std::make_index_sequence<4>())))
    return failure();
  if (spec.sink &&
      failed(traceHook(kernel, attention.getSink(), "sink", spec.sink,
                       {index, index}, b.getF32Type(), "a logit (f32)",
                       std::make_index_sequence<2>())))
    return failure();
  return success();
}

Type dsl::detail::elementTypeOf(Builder &b, DType t) {
  switch (t) {
  case DType::F16:
    return b.getF16Type();
  case DType::BF16:
    return b.getBF16Type();
  case DType::F32:
    return b.getF32Type();
  case DType::I32:
    return b.getI32Type();
  case DType::I64:
    return b.getI64Type();
  case DType::S8:
    return b.getI8Type();
  case DType::E4M3:
    return b.getType<Float8E4M3FNType>();
  case DType::E5M2:
    return b.getType<Float8E5M2Type>();
  }
  llvm_unreachable("unknown dtype");
}

KernelOp dsl::detail::createKernelShell(ModuleOp module, StringRef name,
                                        Chip chip, DType dtypeOfQ,
                                        int64_t headDim, int64_t headDimV,
                                        ArrayRef<ExtraArg> extraArgs,
                                        ConfigAttr config, Location loc) {
  MLIRContext *ctx = module.getContext();
  OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
  Type dtype = elementTypeOf(b, dtypeOfQ);
  // (batch, seqlen, heads, dim): dynamic sizes and strides, contiguous rows.
  int64_t dyn = ShapedType::kDynamic;
  auto tensorType = [&](int64_t dim) {
    return MemRefType::get({dyn, dyn, dyn, dim}, dtype,
                           StridedLayoutAttr::get(ctx, 0, {dyn, dyn, dyn, 1}));
  };
  // (batch, heads, seqlen_q), contiguous.
  auto lseType = MemRefType::get({dyn, dyn, dyn}, b.getF32Type());

  SmallVector<StringRef> extraNames;
  for (const ExtraArg &extra : extraArgs)
    extraNames.push_back(extra.name);
  auto kernel = KernelOp::create(
      b, loc, b.getStringAttr(name), ArchAttr::get(ctx, chip), config,
      IntegerAttr(),
      extraNames.empty() ? ArrayAttr() : b.getStrArrayAttr(extraNames),
      /*arg_roles=*/ArrayAttr(), ProblemAttr(), /*tensors=*/ArrayAttr(),
      /*grid=*/StringAttr());
  Block *body = new Block();
  kernel.getBody().push_back(body);
  for (Type type : {Type(tensorType(headDim)), Type(tensorType(headDim)),
                    Type(tensorType(headDimV)), Type(tensorType(headDimV)),
                    Type(lseType)})
    body->addArgument(type, loc);
  for (const ExtraArg &extra : extraArgs) {
    Type elt = elementTypeOf(b, extra.dtype);
    if (extra.rank < 0) {
      body->addArgument(elt, loc);
      continue;
    }
    SmallVector<int64_t> shape(extra.rank, dyn), strides(extra.rank, dyn);
    body->addArgument(
        MemRefType::get(shape, elt, StridedLayoutAttr::get(ctx, 0, strides)),
        loc);
  }
  return kernel;
}

FailureOr<KernelOp> dsl::buildAttentionKernel(ModuleOp module,
                                              const AttentionSpec &spec,
                                              Location loc) {
  int64_t headDimV = spec.headDimV ? spec.headDimV : spec.headDim;
  KernelOp kernel = detail::createKernelShell(
      module, spec.name, spec.chip, spec.dtype, spec.headDim, headDimV,
      spec.extraArgs, ConfigAttr(), loc);
  OpBuilder b(module.getContext());
  Block *body = &kernel.getBodyBlock();

  // Verify the kernel's signature before building into it: an impossible
  // head dim is the kernel's error, not the attention op's.
  if (failed(verify(kernel))) {
    kernel.erase();
    return failure();
  }

  b.setInsertionPointToStart(body);
  FloatAttr scale;
  if (spec.softmaxScale)
    scale = b.getF32FloatAttr(*spec.softmaxScale);
  Value blockTable;
  if (!spec.blockTable.empty()) {
    for (auto [i, extra] : llvm::enumerate(spec.extraArgs))
      if (extra.name == spec.blockTable)
        blockTable = kernel.getExtraArgs()[i];
    if (!blockTable || !isa<MemRefType>(blockTable.getType()) ||
        cast<MemRefType>(blockTable.getType()).getRank() != 2 ||
        !cast<MemRefType>(blockTable.getType()).getElementType().isInteger(32)) {
      emitError(loc) << "the block table '" << spec.blockTable
                     << "' must be an extra i32 tensor of rank 2 (declare it "
                        "with AttentionSpec::pageKV)";
      kernel.erase();
      return failure();
    }
  }
  auto attention = AttentionOp::create(
      b, loc, kernel.getQ(), kernel.getK(), kernel.getV(), kernel.getO(),
      kernel.getLse(), blockTable, spec.causal, spec.windowLeft,
      spec.windowRight, scale);
  if (failed(traceHooks(kernel, attention, spec)) ||
      failed(verify(kernel))) {
    kernel.erase();
    return failure();
  }
  return kernel;
}
