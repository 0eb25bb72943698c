//===- Tile.cpp - C++ DSL: kernels written in the tile language -----------===//

#include "flashtile/DSL/Tile.h"

#include "HookTracer.h"
#include "KernelShell.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Verifier.h"

using namespace mlir;
using namespace flashtile;
using namespace flashtile::attn;

int64_t dsl::TileProgram::headDim() {
  return getPaddedHeadDim(
      cast<MemRefType>(getKernel().getQ().getType()).getDimSize(3));
}

int64_t dsl::TileProgram::headDimV() {
  return getPaddedHeadDim(
      cast<MemRefType>(getKernel().getV().getType()).getDimSize(3));
}

Value dsl::TileProgram::map(ValueRange operands, const MapFn &fn,
                            const char *file, unsigned line) {
  MapOp op = createMap(operands, file, line);
  mlir::Block *body = &op.getBody().front();
  bool rank2 = op.getResult().getType().getRank() == 2;
  Value result;
  {
    detail::HookTracer tracer(getKernel(), body, "map");
    SmallVector<Expr> args;
    for (unsigned i = 0; i < operands.size(); ++i)
      args.push_back(tracer.argument(body->getArgument(i)));
    Expr row = tracer.argument(body->getArgument(operands.size()));
    Expr col = rank2 ? tracer.argument(body->getArgument(operands.size() + 1))
                     : Expr(-1);
    Expr value = fn(args, row, col);
    FailureOr<Value> traced =
        tracer.finish(value, builder().getF32Type(), "an element (f32)");
    if (succeeded(traced))
      result = *traced;
  }
  OpBuilder inner = OpBuilder::atBlockEnd(body);
  if (!result) {
    // The tracer reported the error; keep the IR whole until the kernel is
    // dropped.
    failed = true;
    result = arith::ConstantOp::create(inner, op.getLoc(),
                                       inner.getF32FloatAttr(0.0f));
  }
  YieldOp::create(inner, op.getLoc(), ValueRange{result});
  return op.getResult();
}

FailureOr<KernelOp> dsl::buildTileKernel(ModuleOp module,
                                         const TileKernelSpec &spec,
                                         Location loc) {
  MLIRContext *ctx = module.getContext();
  ConfigAttr config = ConfigAttr::getChecked(
      [&] { return emitError(loc) << "tile program '" << spec.name << "': "; },
      ctx, spec.tileM, spec.tileN, spec.stages, spec.warps, spec.qInRegs,
      /*kvWarps=*/int64_t(1), /*packGqa=*/false);
  if (!config)
    return failure();
  int64_t headDimV = spec.headDimV ? spec.headDimV : spec.headDim;
  KernelOp kernel = detail::createKernelShell(
      module, spec.name, spec.chip, spec.dtype, spec.headDim, headDimV,
      spec.extraArgs, config, loc);
  if (failed(verify(kernel))) {
    kernel.erase();
    return failure();
  }
  if (!spec.body) {
    emitError(loc) << "tile program '" << spec.name << "' has no body";
    kernel.erase();
    return failure();
  }
  OpBuilder b = OpBuilder::atBlockEnd(&kernel.getBodyBlock());
  TileProgram program(b, loc, kernel, spec);
  spec.body(program);
  if (program.hasFailed() || failed(verify(kernel))) {
    kernel.erase();
    return failure();
  }
  return kernel;
}
