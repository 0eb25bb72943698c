//===- EpilogueLowering.cpp - Normalise, stage and store O and LSE --------===//

#include "HookEmitter.h"
#include "LoweringUtils.h"

#include "mlir/Conversion/LLVMCommon/Pattern.h"
#include "mlir/Conversion/LLVMCommon/TypeConverter.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace flashtile;
using namespace flashtile::attn;
using namespace flashtile::attn::lowering;

namespace {

/// O = acc / l goes to the staging buffer in the swizzled layout (4-byte
/// stores, conflict-free), then every thread copies 16-byte chunks of whole
/// rows to global memory, so that stores are 128-bit and coalesced. Threads
/// with t = 0 store the LSE of their rows. Rows past seqlen_q are skipped.
/// A sink region's logit joins l first (attn.epilogue's description).
struct EpilogueLowering : public AttnOpLoweringPattern<EpilogueOp> {
  using AttnOpLoweringPattern::AttnOpLoweringPattern;

  LogicalResult lower(EpilogueOp op, OpAdaptor adaptor,
                      ConversionPatternRewriter &rewriter,
                      TileOpContext &ctx) const override {
    const FragmentLayout &layout = ctx.layout;
    FragType accType = op.getAcc().getType();
    Type dtype = op.getStage().getType().getElementType();
    int64_t rows = accType.getDimSize(0), cols = accType.getDimSize(1);
    int64_t mTiles = layout.mTiles(rows), nTiles = cols / 8;
    int64_t threads = ctx.threads();
    Location loc = op.getLoc();
    using P = LLVM::ICmpPredicate;

    Emitter &e = ctx.e;
    ThreadCoords &thread = ctx.thread();
    SmallVector<Value> acc = e.unpack(adaptor.getAcc());
    SmallVector<Value> rowMax = e.unpack(adaptor.getRowMax());
    SmallVector<Value> rowSum = e.unpack(adaptor.getRowSum());
    Value scale = adaptor.getSoftmaxScale();
    Value zero = e.f32(0.0f);
    Value negInf = e.f32(-std::numeric_limits<float>::infinity());
    Value warpRow = e.mul(thread.warp, layout.rowsPerWarp(rows));
    Value stage = adaptor.getStage();

    // This thread's 4 bytes of each 16-byte chunk of its rows.
    SwizzledTileAccess staged(e, e.gep(stage, e.mul(thread.t, 4)),
                              e.add(warpRow, thread.g), e.i32(0), cols);
    // The sink logit z: one per block, whose rows all belong to its head.
    Value sink;
    if (!op.getSink().empty()) {
      HookEmitter hooks(e, op);
      sink = hooks.emit(op.getSink(), {adaptor.getBatch(), adaptor.getHead()});
    }
    SmallVector<Value> lse(rowSum.size());
    for (int64_t i = 0; i < mTiles; ++i)
      for (int64_t h = 0; h < 2; ++h) {
        int64_t index = FragmentLayout::rowIndex(i, h);
        Value sum = rowSum[index];
        sum = e.fadd(sum, e.shflXor(sum, 1));
        sum = e.fadd(sum, e.shflXor(sum, 2));
        Value empty = e.fcmp(LLVM::FCmpPredicate::oeq, sum, zero);
        Value noKey = negInf;
        if (sink) {
          // The denominator e^(m * scale) * l gains e^z: l += e^(z - m *
          // scale). A row with no key keeps O = 0 and takes LSE = z.
          Value exponent = e.fma(rowMax[index], e.fmul(scale, e.f32(-1.0f)),
                                 sink);
          Value extra =
              e.exp2(e.fmul(exponent, e.f32(static_cast<float>(M_LOG2E))));
          sum = e.select(empty, sum, e.fadd(sum, extra));
          noKey = sink;
        }
        Value inverse = e.select(empty, zero, e.rcp(sum));
        lse[index] = e.select(
            empty, noKey,
            e.fma(rowMax[index], scale,
                  e.fmul(e.log2(sum), e.f32(static_cast<float>(M_LN2)))));
        for (int64_t j = 0; j < nTiles; ++j) {
          Value lo = e.fmul(acc[FragmentLayout::accIndex(i, j, 2 * h, nTiles)],
                            inverse);
          Value hi = e.fmul(
              acc[FragmentLayout::accIndex(i, j, 2 * h + 1, nTiles)], inverse);
          LLVM::StoreOp::create(rewriter, loc, e.packPair(lo, hi, dtype),
                                staged.address(16 * i + 8 * h, j),
                                /*alignment=*/4);
        }
      }
    NVVM::Barrier0Op::create(rewriter, loc);

    // Whole rows out, 16 bytes per thread and step.
    TensorRows out(e, adaptor.getO(), adaptor.getBatch(), adaptor.getHead());
    Value firstRow = e.mul(adaptor.getMBlock(), rows);
    auto vectorType = VectorType::get({4}, rewriter.getI32Type());
    TileChunkWalk walk(e, thread.tid, threads, rows, cols);
    int64_t elementsPerChunk =
        kCopyChunkBytes * 8 / dtype.getIntOrFloatBitWidth();
    int64_t outChunks =
        op.getO().getType().getDimSize(3) / elementsPerChunk;
    for (int64_t step = 0; step < walk.numSteps(); ++step) {
      Value row = walk.row(step);
      Value globalRow = e.add(firstRow, row);
      Value store = e.cmp(P::slt, globalRow, out.seqlen());
      // Pad columns (getPaddedHeadDim) stay in shared memory.
      if (outChunks * elementsPerChunk < cols)
        store = LLVM::AndOp::create(rewriter, loc, store,
                                    e.slt(walk.chunk(step), e.i32(outChunks)));
      if (walk.isPartial(step))
        store = LLVM::AndOp::create(rewriter, loc, store, walk.isActive(step));
      emitIf(rewriter, loc, store, [&] {
        Value data = LLVM::LoadOp::create(rewriter, loc, vectorType,
                                          e.gep(stage, walk.smemOffset(step)),
                                          /*alignment=*/kCopyChunkBytes);
        LLVM::StoreOp::create(rewriter, loc, data,
                              out.chunkAddress(globalRow, walk.chunk(step)),
                              /*alignment=*/kCopyChunkBytes);
      });
    }

    // LSE, by the first thread of each quad.
    Value lseDesc = adaptor.getLse();
    Value lseBase = e.add64(
        e.mul64(e.sext64(adaptor.getBatch()),
                e.extract(lseDesc, kLseStrideBatch)),
        e.mul64(e.sext64(adaptor.getHead()), e.extract(lseDesc, kLseStrideHead)));
    Value lsePtr = e.extract(lseDesc, kLsePtr);
    Value quadLeader = e.cmp(P::eq, thread.t, e.i32(0));
    for (int64_t i = 0; i < mTiles; ++i)
      for (int64_t h = 0; h < 2; ++h) {
        Value row = e.add(e.add(firstRow, warpRow),
                          e.add(thread.g, e.i32(16 * i + 8 * h)));
        Value store = LLVM::AndOp::create(rewriter, loc, quadLeader,
                                          e.cmp(P::slt, row, out.seqlen()));
        Value value = lse[FragmentLayout::rowIndex(i, h)];
        emitIf(rewriter, loc, store, [&] {
          Value element = e.add64(lseBase, e.sext64(row));
          LLVM::StoreOp::create(rewriter, loc, value,
                                e.gep(lsePtr, e.mul64(element, e.i64(4))),
                                /*alignment=*/4);
        });
      }
    rewriter.eraseOp(op);
    return success();
  }
};

} // namespace

void lowering::populateEpiloguePatterns(LLVMTypeConverter &converter,
                                      RewritePatternSet &patterns) {
  patterns.add<EpilogueLowering>(converter);
}
