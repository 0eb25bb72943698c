//===- CombineKernel.cpp - Split-KV's combine kernel ----------------------===//
//
// The `<name>_combine` kernel of a split-KV kernel (KernelABI.h): same
// parameters, written directly as an llvm.func. It merges the kv_splits
// partial (O, LSE) of every (batch, head, query) row, one warp per row:
//
//   M   = max(max_s LSE_s, z)            (z: the sink logit, when there is one)
//   L   = M + ln(sum_s e^(LSE_s - M) + e^(z - M))
//   O   = sum_s e^(LSE_s - L) O_s
//
// in fp32, as FlashAttention-2's combine_attn_seqk_parallel does. A row no
// split saw a key of (every LSE_s = -inf) gets O = 0 and LSE = -inf, or
// LSE = z with a sink: the contract of attn.epilogue.
//
//===----------------------------------------------------------------------===//

#include "HookEmitter.h"
#include "Patterns.h"

#include "mlir/IR/PatternMatch.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace flashtile;
using namespace flashtile::attn;
using namespace flashtile::attn::lowering;

namespace {

Value warpReduce(Emitter &e, Value x, bool max) {
  warpAllReduce(e, x, [&](size_t, Value a, Value b) {
    return max ? e.fmax(a, b) : e.fadd(a, b);
  });
  return x;
}

} // namespace

LogicalResult lowering::buildCombineKernel(KernelOp kernel) {
  MLIRContext *ctx = kernel.getContext();
  Location loc = kernel.getLoc();
  // One rewriter builds everything: emitIf and emitForLoop move its
  // insertion point.
  IRRewriter b(ctx);
  b.setInsertionPoint(kernel);
  auto func = createKernelFunc(b, kernel, kCombineKernelSuffix,
                               kCombineRowsPerBlock * kWarpSize, loc);
  Emitter e(b, loc);
  using P = LLVM::ICmpPredicate;
  Type i32 = b.getI32Type(), f32 = b.getF32Type();

  Value tid = NVVM::ThreadIdXOp::create(b, loc, i32);
  Operation *anchor = tid.getDefiningOp();
  Value lane = e.urem(tid, kWarpSize);
  Value row = e.add(e.mul(NVVM::BlockIdXOp::create(b, loc, i32),
                          kCombineRowsPerBlock),
                    e.udiv(tid, kWarpSize));
  Value rows = getSplitRowsParam(anchor);
  Value splits = getKVSplitsParam(anchor);
  Value seqlenQ = getKernelParam(func, abi::kQuerySide.rows),
        headsQ = getKernelParam(func, abi::kQuerySide.heads);
  auto vType = cast<MemRefType>(kernel.getV().getType());
  int64_t headDimV = vType.getDimSize(3);
  int64_t cols = getPaddedHeadDim(headDimV);
  Type dtype = vType.getElementType();
  Value oPartial = getWorkspaceParam(func, kPartialOWorkspace);
  Value lsePartial = getWorkspaceParam(func, kPartialLseWorkspace);
  Value negInf = e.f32(-std::numeric_limits<float>::infinity());
  Value zero = e.f32(0.0f);
  Value log2e = e.f32(static_cast<float>(M_LOG2E));
  auto lseOf = [&](Value split) {
    Value entry = e.add64(e.mul64(e.sext64(split), e.sext64(rows)),
                          e.sext64(row));
    return LLVM::LoadOp::create(b, loc, f32,
                                e.gep(lsePartial, e.mul64(entry, e.i64(4))),
                                /*alignment=*/4)
        .getResult();
  };

  emitIf(b, loc, e.slt(row, rows), [&] {
    Value position = LLVM::URemOp::create(b, loc, row, seqlenQ);
    Value bh = LLVM::UDivOp::create(b, loc, row, seqlenQ);
    Value head = LLVM::URemOp::create(b, loc, bh, headsQ);
    Value batch = LLVM::UDivOp::create(b, loc, bh, headsQ);

    // M over the splits (lanes stride them), then the sink.
    Value best = emitForLoop(b, loc, lane, splits, kWarpSize, {negInf},
                          [&](Value s, ValueRange acc) -> SmallVector<Value> {
                            return {e.fmax(acc[0], lseOf(s))};
                          })[0];
    best = warpReduce(e, best, /*max=*/true);
    Value sink;
    if (!kernel.getBodyBlock().getOps<EpilogueOp>().empty()) {
      EpilogueOp epilogue = *kernel.getBodyBlock().getOps<EpilogueOp>().begin();
      if (!epilogue.getSink().empty()) {
        HookEmitter hooks(e, anchor);
        sink = hooks.emit(epilogue.getSink(), {batch, head});
        best = e.fmax(best, sink);
      }
    }
    best = e.select(e.fcmp(LLVM::FCmpPredicate::oeq, best, negInf), zero, best);
    auto weight = [&](Value lse, Value of) {
      return e.exp2(e.fmul(e.fadd(lse, e.fmul(of, e.f32(-1.0f))), log2e));
    };
    Value sum = emitForLoop(b, loc, lane, splits, kWarpSize, {zero},
                         [&](Value s, ValueRange acc) -> SmallVector<Value> {
                           return {e.fadd(acc[0], weight(lseOf(s), best))};
                         })[0];
    sum = warpReduce(e, sum, /*max=*/false);
    if (sink)
      sum = e.fadd(sum, weight(sink, best));
    Value empty = e.fcmp(LLVM::FCmpPredicate::oeq, sum, zero);
    Value total = e.select(
        empty, negInf,
        e.fadd(best, e.fmul(e.log2(sum), e.f32(static_cast<float>(M_LN2)))));

    // O: lane takes column pairs lane + 32 k.
    int64_t pairs = cols / 2;
    int64_t steps = (pairs + kWarpSize - 1) / kWarpSize;
    SmallVector<Value> pairIndex, inits;
    for (int64_t k = 0; k < steps; ++k) {
      // Clamped so that every load is in bounds; stores are guarded.
      pairIndex.push_back(e.add(lane, e.i32(k * kWarpSize)));
      inits.append({zero, zero});
    }
    auto pairType = VectorType::get({2}, f32);
    SmallVector<Value> acc = emitForLoop(
        b, loc, e.i32(0), splits, 1, inits,
        [&](Value s, ValueRange acc) -> SmallVector<Value> {
          Value w = e.select(empty, zero, weight(lseOf(s), total));
          Value entry = e.add64(e.mul64(e.sext64(s), e.sext64(rows)),
                                e.sext64(row));
          SmallVector<Value> next;
          for (int64_t k = 0; k < steps; ++k) {
            Value p = e.smin(pairIndex[k], e.i32(pairs - 1));
            Value address = e.gep(
                oPartial,
                e.mul64(e.add64(e.mul64(entry, e.i64(cols)),
                                e.sext64(e.mul(p, 2))),
                        e.i64(4)));
            Value o = LLVM::LoadOp::create(b, loc, pairType, address,
                                           /*alignment=*/8);
            for (int64_t h = 0; h < 2; ++h)
              next.push_back(e.fma(
                  w,
                  LLVM::ExtractElementOp::create(b, loc, o, e.i32(h)),
                  acc[2 * k + h]));
          }
          return next;
        });

    Value oDesc = getKernelParam(func, "o");
    Value base = e.add64(
        e.add64(
            e.mul64(e.sext64(batch), getKernelParam(func, "o.stride_batch")),
            e.mul64(e.sext64(position), getKernelParam(func, "o.stride_seq"))),
        e.mul64(e.sext64(head), getKernelParam(func, "o.stride_head")));
    for (int64_t k = 0; k < steps; ++k) {
      Value column = e.mul(pairIndex[k], 2);
      emitIf(b, loc, e.slt(column, e.i32(headDimV)), [&] {
        Value element = e.add64(base, e.sext64(column));
        LLVM::StoreOp::create(
            b, loc, e.packPair(acc[2 * k], acc[2 * k + 1], dtype),
            e.gep(oDesc, e.mul64(element, e.i64(2))), /*alignment=*/4);
      });
    }
    emitIf(b, loc, e.cmp(P::eq, lane, e.i32(0)), [&] {
      Value element =
          e.add64(e.add64(e.mul64(e.sext64(batch),
                                  getKernelParam(func, "lse.stride_batch")),
                          e.mul64(e.sext64(head),
                                  getKernelParam(func, "lse.stride_head"))),
                  e.sext64(position));
      LLVM::StoreOp::create(
          b, loc, total,
          e.gep(getKernelParam(func, "lse"), e.mul64(element, e.i64(4))),
          /*alignment=*/4);
    });
  });
  LLVM::ReturnOp::create(b, loc, ValueRange());
  return success();
}
