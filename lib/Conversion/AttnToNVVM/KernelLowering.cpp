//===- KernelLowering.cpp - Kernel, block context, bounds, KV loop --------===//
//
// The control structure of a kernel: its signature (KernelABI.h), the
// block's coordinates, the KV-tile bounds and the KV loop.
//
//===----------------------------------------------------------------------===//

#include "GlobalAccess.h"
#include "Patterns.h"
#include "TileOpContext.h"

#include "flashtile/ABI/KernelRules.h"
#include "flashtile/Conversion/AttnToNVVM/KernelABI.h"

#include "mlir/Conversion/LLVMCommon/MemRefBuilder.h"
#include "mlir/Conversion/LLVMCommon/Pattern.h"
#include "mlir/Conversion/LLVMCommon/TypeConverter.h"

using namespace mlir;
using namespace flashtile;
using namespace flashtile::attn;
using namespace flashtile::attn::lowering;

namespace {

/// attn.kernel -> llvm.func with the nvvm.kernel attribute. The tensors'
/// block arguments become descriptor structs built from the parameters.
struct KernelOpLowering : public ConvertOpToLLVMPattern<KernelOp> {
  using ConvertOpToLLVMPattern::ConvertOpToLLVMPattern;

  LogicalResult
  matchAndRewrite(KernelOp op, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ConfigAttr config = op.getConfigAttr();
    if (!config || !op.getSmemBytes())
      return rewriter.notifyMatchFailure(op, "kernel is not allocated");
    MLIRContext *ctx = op.getContext();
    Location loc = op.getLoc();

    std::vector<plan::Param> abi = getKernelParams(op);
    // The plan's extra kernels are built on the same function.
    auto func = createKernelFunc(rewriter, op, /*suffix=*/"",
                                 config.getWarps() * kWarpSize, loc);
    func->setAttr(kConfigAttrName, config);
    func->setAttr(kArchAttrName, op.getArchAttr());
    func->setAttr("attn.smem_bytes", op.getSmemBytesAttr());
    if (op.hasKeyGrid())
      func->setAttr(kKeyGridAttrName, rewriter.getUnitAttr());

    // createKernelFunc leaves the rewriter at the start of the entry block.
    Block *entry = &func.getBody().front();
    Emitter e(rewriter, loc);
    auto arg = [&](int64_t index) { return entry->getArgument(index); };
    // Every tensor argument becomes the memref descriptor of its type
    // (getGlobalTensorDescType), filled from its parameters.
    auto descriptor = [&](int64_t rank, Value data) {
      MemRefDescriptor desc = MemRefDescriptor::poison(
          rewriter, loc, getGlobalTensorDescType(ctx, rank));
      desc.setAllocatedPtr(rewriter, loc, data);
      desc.setAlignedPtr(rewriter, loc, data);
      desc.setConstantOffset(rewriter, loc, 0);
      return desc;
    };
    int64_t batchParam = getBatchParamIndex(op);
    SmallVector<Value> tensors;
    for (auto [i, t] : llvm::enumerate(getTensorParams(op))) {
      auto type = cast<MemRefType>(op.getBodyBlock().getArgument(i).getType());
      MemRefDescriptor desc = descriptor(t.rank, arg(t.pointer));
      // Extents: (batch, rows, heads, dim) or (batch, heads, rows).
      bool rank3 = t.rank == 3;
      desc.setSize(rewriter, loc, 0, e.sext64(arg(batchParam)));
      desc.setSize(rewriter, loc, rank3 ? 2 : 1, e.sext64(arg(t.rows)));
      desc.setSize(rewriter, loc, rank3 ? 1 : 2, e.sext64(arg(t.heads)));
      if (!rank3)
        desc.setConstantSize(rewriter, loc, 3, type.getDimSize(3));
      for (auto [d, stride] : llvm::enumerate(t.strides))
        desc.setStride(rewriter, loc, d, arg(stride));
      desc.setConstantStride(rewriter, loc, t.rank - 1, 1);
      tensors.push_back(desc);
    }
    // Extra arguments: a tensor's descriptor is its pointer, extents and
    // strides; a scalar is its parameter.
    int64_t next = getNumTensorParams(op);
    for (BlockArgument extra : op.getExtraArgs()) {
      auto memref = dyn_cast<MemRefType>(extra.getType());
      if (!memref) {
        tensors.push_back(arg(next++));
        continue;
      }
      int64_t rank = memref.getRank();
      int64_t first = next;
      MemRefDescriptor desc = descriptor(rank, arg(first));
      for (int64_t d = 0; d < rank; ++d)
        desc.setSize(rewriter, loc, d, arg(getExtraTensorSizeParam(first, d)));
      for (int64_t d = 0; d < rank; ++d)
        desc.setStride(rewriter, loc, d,
                       arg(getExtraTensorStrideParam(first, rank, d)));
      next = getExtraTensorStrideParam(first, rank, rank);
      tensors.push_back(desc);
    }
    // Paged KV's sizes, kv_splits, the workspaces and batch are read by
    // the ops that use them (getPagedKVParamIndex, getKVSplitsParamIndex,
    // getWorkspaceParam, getBatchParamIndex).
    if (isPagedKV(op))
      next += 2;
    if (hasKVSplits(op))
      next += 2;
    next += getWorkspaceParamIndices(op).size();
    next += 1;
    assert(next == static_cast<int64_t>(abi.size()) &&
           "every parameter is consumed");

    rewriter.inlineBlockBefore(&op.getBodyBlock(), entry, entry->end(),
                               tensors);
    rewriter.setInsertionPointToEnd(entry);
    LLVM::ReturnOp::create(rewriter, loc, ValueRange());
    rewriter.eraseOp(op);
    return success();
  }
};

/// (m_block, head, kv_head, batch) from the grid; lengths from the
/// descriptors. GQA: kv_head = head / (heads_q / heads_kv). Packed rows
/// (pack_gqa) and key grids: the grid's head axis is the KV head, and
/// `head` is the first query head of its group.
struct BlockContextLowering : public AttnOpLoweringPattern<BlockContextOp> {
  using AttnOpLoweringPattern::AttnOpLoweringPattern;

  LogicalResult lower(BlockContextOp op, OpAdaptor adaptor,
                      ConversionPatternRewriter &rewriter,
                      TileOpContext &ctx) const override {
    Emitter &e = ctx.e;
    Type i32 = rewriter.getI32Type();
    // The axes of getKernelGrid.
    static_assert(kGridAxisMBlock == 0 && kGridAxisHead == 1 &&
                  kGridAxisBatch == 2);
    Value mBlock = NVVM::BlockIdXOp::create(rewriter, op.getLoc(), i32);
    Value head = NVVM::BlockIdYOp::create(rewriter, op.getLoc(), i32);
    Value batch = NVVM::BlockIdZOp::create(rewriter, op.getLoc(), i32);
    // Q and K are (batch, rows, heads, dim).
    MemRefDescriptor q(adaptor.getQ()), k(adaptor.getK());
    Location loc = op.getLoc();
    Value headsQ = e.trunc32(q.size(rewriter, loc, 2));
    Value headsKV = e.trunc32(k.size(rewriter, loc, 2));
    Value group = e.sdiv(headsQ, headsKV);
    // Split-KV: x = split * query tiles + m_block (attn.kv_split).
    if (hasKVSplitsParam(op))
      mBlock = LLVM::URemOp::create(rewriter, op.getLoc(), mBlock,
                                    getQueryTiles(e, op));
    Value kvHead;
    // A key grid's head axis is the KV head (getKernelGrid), as packed
    // rows' is.
    if (ctx.packed() || hasKeyGrid(op)) {
      kvHead = head;
      head = e.mul(kvHead, group);
    } else {
      kvHead = e.sdiv(head, group);
    }
    rewriter.replaceOp(op, {mBlock, head, kvHead, batch,
                            e.trunc32(q.size(rewriter, loc, 1)),
                            e.trunc32(k.size(rewriter, loc, 1))});
    return success();
  }
};

/// The KV tiles of one query tile; the arithmetic and its contract are in
/// KVBounds.h. Packed rows: the tile's positions are those of its first
/// and last valid packed rows.
struct KVBoundsLowering : public AttnOpLoweringPattern<KVBoundsOp> {
  using AttnOpLoweringPattern::AttnOpLoweringPattern;

  LogicalResult lower(KVBoundsOp op, OpAdaptor adaptor,
                      ConversionPatternRewriter &rewriter,
                      TileOpContext &ctx) const override {
    Emitter &e = ctx.e;
    // The I64Attr getters return uint64_t; a window side of -1 comes back
    // as -1 through int64_t.
    KVTiling tiling;
    tiling.tileM = op.getTileM();
    tiling.tileN = op.getTileN();
    tiling.windowLeft = op.getWindowLeft();
    tiling.windowRight = op.getWindowRight();
    KVTileRange<Value> range;
    if (ctx.packed()) {
      Value offset = e.sub(adaptor.getSeqlenK(), adaptor.getSeqlenQ());
      auto [first, last] = ctx.packedTilePositions(
          adaptor.getMBlock(), adaptor.getSeqlenQ(), tiling.tileM);
      range = computeKVTileRangeOfRows(e, first, last, offset,
                                       adaptor.getSeqlenK(), tiling);
    } else {
      range = computeKVTileRange(e, adaptor.getMBlock(), adaptor.getSeqlenQ(),
                                 adaptor.getSeqlenK(), tiling);
    }
    rewriter.replaceOp(op, {range.begin, range.unmaskedBegin,
                            range.unmaskedEnd, range.end});
    return success();
  }
};

/// The KV tiles of the block's split (attn.kv_split): run `split` of S runs
/// of ceil((end - begin) / S) tiles, and the unmasked tiles within it.
struct KVSplitLowering : public AttnOpLoweringPattern<KVSplitOp> {
  using AttnOpLoweringPattern::AttnOpLoweringPattern;

  LogicalResult lower(KVSplitOp op, OpAdaptor adaptor,
                      ConversionPatternRewriter &rewriter,
                      TileOpContext &ctx) const override {
    Emitter &e = ctx.e;
    Value splits = getKVSplitsParam(op);
    Value split = LLVM::UDivOp::create(
        rewriter, op.getLoc(),
        NVVM::BlockIdXOp::create(rewriter, op.getLoc(), rewriter.getI32Type()),
        getQueryTiles(e, op));
    Value begin = adaptor.getBegin(), end = adaptor.getEnd();
    Value perSplit = e.sdiv(e.add(e.sub(end, begin), e.sub(splits, e.i32(1))),
                            splits);
    Value lo = e.smin(e.add(begin, e.mul(split, perSplit)), end);
    Value hi = e.smax(lo, e.smin(end, e.add(lo, perSplit)));
    Value unmaskedBegin = e.smin(e.smax(adaptor.getUnmaskedBegin(), lo), hi);
    Value unmaskedEnd =
        e.smax(unmaskedBegin, e.smin(adaptor.getUnmaskedEnd(), hi));
    rewriter.replaceOp(op, {lo, unmaskedBegin, unmaskedEnd, hi});
    return success();
  }
};

/// The run-time scale: the kernel's softmax_scale parameter.
struct SoftmaxScaleLowering : public ConvertOpToLLVMPattern<SoftmaxScaleOp> {
  using ConvertOpToLLVMPattern::ConvertOpToLLVMPattern;

  LogicalResult
  matchAndRewrite(SoftmaxScaleOp op, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, getKernelParam(op, kSoftmaxScaleParam));
    return success();
  }
};

/// attn.size in a tile program's body (a backward's GQA group): the
/// launch's value, as in hooks (HookEmitter::size).
struct SizeLowering : public ConvertOpToLLVMPattern<SizeOp> {
  using ConvertOpToLLVMPattern::ConvertOpToLLVMPattern;

  LogicalResult
  matchAndRewrite(SizeOp op, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    StringRef name = op.getName();
    rewriter.replaceOp(op, name == abi::kBatchSize ? getBatchParam(op)
                                                   : getKernelParam(op, name));
    return success();
  }
};

/// attn.kv_loop -> emitForLoop counting j from upper - 1 down to lower,
/// its body the op's block, inlined with j and the carried state.
struct KVLoopLowering : public ConvertOpToLLVMPattern<KVLoopOp> {
  using ConvertOpToLLVMPattern::ConvertOpToLLVMPattern;

  LogicalResult
  matchAndRewrite(KVLoopOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    if (failed(rewriter.convertRegionTypes(&op.getBody(), *getTypeConverter())))
      return rewriter.notifyMatchFailure(op, "cannot convert loop body");
    Block *body = &op.getBody().front();
    auto yield = cast<YieldOp>(body->getTerminator());
    bool remapped = true;
    SmallVector<Value> results = emitForLoop(
        rewriter, loc, adaptor.getLower(), adaptor.getUpper(), /*step=*/1,
        adaptor.getInits(),
        [&](Value j, ValueRange state) {
          SmallVector<Value> args = {j};
          llvm::append_range(args, state);
          rewriter.inlineBlockBefore(body, rewriter.getInsertionBlock(),
                                     rewriter.getInsertionPoint(), args);
          // The yielded values are converted later; carry their converted
          // form, which the framework materializes now and resolves then.
          SmallVector<Value> yielded;
          remapped = succeeded(
              rewriter.getRemappedValues(yield.getValues(), yielded));
          rewriter.eraseOp(yield);
          return yielded;
        },
        LoopDirection::Down);
    if (!remapped)
      return rewriter.notifyMatchFailure(op, "cannot convert yielded values");
    rewriter.replaceOp(op, results);
    return success();
  }
};

} // namespace

void lowering::populateKernelPatterns(LLVMTypeConverter &converter,
                                    RewritePatternSet &patterns) {
  patterns.add<KernelOpLowering, BlockContextLowering, KVBoundsLowering,
               KVSplitLowering, SoftmaxScaleLowering, SizeLowering,
               KVLoopLowering>(
      converter);
}
