//===- Hooks.cpp - What a score_mod / mask_mod region may contain ---------===//
//
// The hook contract, checked where hooks enter (the verifiers of
// attn.attention and attn.modify_scores), so that no lowering sees a hook it
// cannot emit. The lowering (HookLowering.cpp) emits exactly these ops; a
// builder inlines a hook where it needs its value (emitHook).
//
//===----------------------------------------------------------------------===//

#include "flashtile/Dialect/Attn/IR/Attn.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

using namespace mlir;
using namespace flashtile;
using namespace flashtile::attn;

namespace {
/// The one list of the ops a hook may contain.
template <typename... Ops> struct OpList {
  static bool contains(Operation *op) { return isa<Ops...>(op); }
  static SmallVector<StringRef> names() {
    return {Ops::getOperationName()...};
  }
};
using HookOps = OpList<
    // Integer and index arithmetic.
    arith::ConstantOp, arith::AddIOp, arith::SubIOp, arith::MulIOp,
    arith::DivSIOp, arith::DivUIOp, arith::RemSIOp, arith::RemUIOp,
    arith::FloorDivSIOp, arith::CeilDivSIOp, arith::MaxSIOp, arith::MinSIOp,
    arith::MaxUIOp, arith::MinUIOp, arith::AndIOp, arith::OrIOp,
    arith::XOrIOp, arith::ShLIOp, arith::ShRSIOp, arith::ShRUIOp,
    arith::CmpIOp, arith::SelectOp,
    // Floating point.
    arith::AddFOp, arith::SubFOp, arith::MulFOp, arith::DivFOp,
    arith::NegFOp, arith::MaximumFOp, arith::MinimumFOp, arith::MaxNumFOp,
    arith::MinNumFOp, arith::CmpFOp,
    // Conversions.
    arith::IndexCastOp, arith::IndexCastUIOp, arith::SIToFPOp,
    arith::UIToFPOp, arith::FPToSIOp, arith::FPToUIOp, arith::ExtFOp,
    arith::TruncFOp, arith::ExtSIOp, arith::ExtUIOp, arith::TruncIOp,
    // Math.
    math::TanhOp, math::ExpOp, math::Exp2Op, math::LogOp, math::Log2Op,
    math::SqrtOp, math::RsqrtOp, math::AbsFOp, math::AbsIOp, math::PowFOp,
    math::ErfOp, math::FmaOp, math::FloorOp, math::CeilOp, math::SinOp,
    math::CosOp,
    // Reads.
    memref::LoadOp, SizeOp, KernelArgOp, YieldOp>;
} // namespace

bool attn::isSupportedHookOp(Operation *op) { return HookOps::contains(op); }

Value attn::emitHook(OpBuilder &b, Region &hook, ValueRange args,
                     const IRMapping *outside) {
  Block &body = hook.front();
  assert(body.getNumArguments() == args.size() &&
         "a value for each of the hook's arguments");
  IRMapping map = outside ? *outside : IRMapping();
  map.map(body.getArguments(), args);
  for (Operation &op : body) {
    if (auto yield = dyn_cast<YieldOp>(op))
      return map.lookup(yield.getValues().front());
    b.clone(op, map);
  }
  llvm_unreachable("a hook region ends in attn.yield");
}

SmallVector<StringRef> attn::getSupportedHookOpNames() {
  return HookOps::names();
}

/// Types a hook value may have: index, integers up to 64 bits, f16, bf16,
/// f32, and (for reads) the kernel's extra tensors.
static bool isHookValueType(Type type) {
  if (type.isIndex() || type.isF16() || type.isBF16() || type.isF32())
    return true;
  if (auto integer = dyn_cast<IntegerType>(type))
    return integer.getWidth() <= 64;
  return isa<MemRefType>(type);
}

/// True when `value` is an extra argument (after the tensors) of `kernel`.
static bool isExtraArg(KernelOp kernel, Value value) {
  return kernel.getExtraArgIndex(value) >= 0;
}

void attn::readKernelArgsThroughKernelArgOps(Region &hook, KernelOp kernel) {
  if (hook.empty())
    return;
  Block &body = hook.front();
  OpBuilder b = OpBuilder::atBlockBegin(&body);
  llvm::SmallDenseMap<Value, Value> replacements;
  body.walk([&](Operation *op) {
    for (OpOperand &operand : op->getOpOperands()) {
      auto arg = dyn_cast<BlockArgument>(operand.get());
      if (!arg || arg.getOwner() != &kernel.getBodyBlock())
        continue;
      Value &replacement = replacements[arg];
      if (!replacement)
        replacement = KernelArgOp::create(b, arg.getLoc(), kernel, arg);
      operand.set(replacement);
    }
  });
}

/// The role of extra argument `memref` of `kernel` (directly, or through
/// an attn.kernel_arg), or "" when it is not one.
static StringRef getExtraArgRoleOf(KernelOp kernel, Value memref) {
  int64_t extra = -1;
  if (auto arg = memref.getDefiningOp<KernelArgOp>())
    extra = arg.getIndex();
  else
    extra = kernel.getExtraArgIndex(memref);
  if (extra < 0 || extra >= static_cast<int64_t>(kernel.getExtraArgs().size()))
    return "";
  return kernel.getExtraArgRole(extra);
}

/// An atomic add of an attn.for_each body: f32 addf into an extra tensor
/// of role `accumulate`, one index per dimension.
static LogicalResult verifyAccumulation(memref::AtomicRMWOp op,
                                        KernelOp kernel) {
  if (op.getKind() != arith::AtomicRMWKind::addf || !op.getType().isF32())
    return op.emitOpError() << "must add f32 values (addf): a for_each "
                               "accumulates gradients";
  if (!op.getResult().use_empty())
    return op.emitOpError() << "result (the old value) must be unused: "
                               "other elements add to it concurrently";
  if (!kernel || getExtraArgRoleOf(kernel, op.getMemref()) != "accumulate")
    return op.emitOpError()
           << "adds into a memref that is not one of the kernel's extra "
              "tensors of role 'accumulate'";
  return success();
}

LogicalResult attn::verifyHookBody(Operation *owner, Region &region,
                                   StringRef name, bool accumulates) {
  if (region.empty())
    return success();
  auto kernel = owner->getParentOfType<KernelOp>();
  for (Operation &op : region.front()) {
    if (auto add = dyn_cast<memref::AtomicRMWOp>(op); add && accumulates) {
      if (failed(verifyAccumulation(add, kernel)))
        return failure();
    } else if (!isSupportedHookOp(&op))
      return op.emitOpError()
             << "is not supported in a " << name
             << " hook: hooks are scalar functions of arith, math (tanh, "
                "exp, exp2, log, log2, sqrt, rsqrt, absf, absi, powf, erf, "
                "fma, floor, ceil, sin, cos), memref.load from the kernel's "
                "extra tensors, and attn.size";
    for (Type type : op.getResultTypes())
      if (!isHookValueType(type))
        return op.emitOpError() << "result type " << type << " is not "
                                << "supported in a " << name
                                << " hook (index, i1..i64, f16, bf16, f32)";
    for (Value operand : op.getOperands()) {
      if (region.isAncestor(operand.getParentRegion()))
        continue;
      // A value from outside the hook: only the kernel's extra arguments.
      if (!kernel || !isExtraArg(kernel, operand))
        return op.emitOpError()
               << "uses a value defined outside the " << name
               << " hook; hooks may read only their own arguments and the "
                  "kernel's extra arguments (after LSE)";
    }
    if (auto load = dyn_cast<memref::LoadOp>(op)) {
      Value memref = load.getMemRef();
      if (!memref.getDefiningOp<KernelArgOp>() &&
          !(kernel && isExtraArg(kernel, memref)))
        return op.emitOpError()
               << "reads a memref that is not one of the kernel's extra "
                  "tensor arguments; hooks may load only from those";
      // Hook reads are invariant loads: never of what the kernel adds to.
      if (kernel && getExtraArgRoleOf(kernel, memref) == "accumulate")
        return op.emitOpError()
               << "reads an extra tensor of role 'accumulate', which the "
                  "kernel adds to; hooks read only its inputs";
    }
  }
  return success();
}
