//===- ExpandToTiles.cpp - attn.attention -> tile program -----------------===//
//
// Builds the block-level tile program of FlashAttention-2's forward pass
// (Dao, "FlashAttention-2", 2023, Algorithm 1) for one config. The program is
// what the allocator reasons about, so the order of ops here *is* the
// liveness: Q's last read before the loop (q_in_regs) is what lets V reuse
// its bytes.
//
//===----------------------------------------------------------------------===//

#include "flashtile/Dialect/Attn/Analysis/DiagonalTerm.h"
#include "flashtile/Dialect/Attn/IR/TileBuilder.h"
#include "flashtile/Dialect/Attn/Transforms/ExpandToTiles.h"
#include "flashtile/Dialect/Attn/Transforms/MaskAnalysis.h"
#include "flashtile/Dialect/Attn/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include <cmath>
#include <limits>

namespace flashtile::attn {
#define GEN_PASS_DEF_ATTNEXPANDTOTILES
#include "flashtile/Dialect/Attn/Transforms/Passes.h.inc"
} // namespace flashtile::attn

using namespace mlir;
using namespace flashtile;
using namespace flashtile::attn;

namespace {

using TileRange = TileBuilder::TileRange;

/// The values every part of the tile program refers to.
struct TileProgramBuilder {
  OpBuilder &b;
  Location loc;
  KernelOp kernel;
  AttentionOp attention;
  ConfigAttr config;
  /// Every tile op of the program is created through the public builder.
  TileBuilder t;
  Type dtype;
  int64_t headDim, headDimV;
  int64_t windowLeft, windowRight;

  // Set while building.
  Value qs, ks, vs, os, merge;
  TileBuilder::Block blk;
  Value qOperand;
  Value scale, scaleLog2;
  /// One past the last key any row of the block may keep, when a key range
  /// bounds the mask (null: seqlen_k).
  Value keyEnd;

  TileProgramBuilder(OpBuilder &b, Location loc, KernelOp kernel,
                     AttentionOp attention, ConfigAttr config)
      : b(b), loc(loc), kernel(kernel), attention(attention), config(config),
        t(b, loc, kernel) {}

  /// The block's query tile into Q's buffer.
  void copyQ() {
    t.copy(kernel.getQ(), blk.batch, blk.mBlock, blk.head, qs,
           /*pages=*/Value(), /*limit=*/Value(), config.getPackGqa());
  }
  /// KV tile `tile` of `src` (K or V) into `dst`: through the page table
  /// when K and V are paged, zero-filled from the key range's end on.
  void copyKV(Value src, Value tile, Value dst) {
    t.copy(src, blk.batch, tile, blk.kvHead, dst, attention.getBlockTable(),
           keyEnd, /*packed=*/false);
  }

  bool hasScoreMod() { return !attention.getScoreMod().empty(); }
  bool hasMaskMod() { return !attention.getMaskMod().empty(); }
  /// The hooks on the scores of KV tile `j`; the mask_mod only when
  /// `withMaskMod`.
  Value modifyScores(Value s, Value j, bool withMaskMod);
  /// Whether the tiles attn.kv_bounds (refined by attn.key_range) calls
  /// unmasked still need the mask_mod: unless the mask's interval is exact.
  bool unmaskedNeedsMaskMod = true;

  void buildBuffers();
  void buildPrologue();
  ValueRange buildLoop(Value lower, Value upper, ValueRange inits,
                       bool masked);
  void build();
};

} // namespace

void TileProgramBuilder::buildBuffers() {
  int64_t tileM = config.getTileM(), tileN = config.getTileN();
  int64_t stages = config.getStages();
  qs = t.buffer("Q", 1, tileM, headDim);
  ks = t.buffer("K", stages, tileN, headDim);
  vs = t.buffer("V", stages, tileN, headDimV);
  os = t.buffer("O", 1, tileM, headDimV);
  // KV warps meet in f32 after the loop (attn.epilogue).
  if (int64_t kvWarps = config.getKvWarps(); kvWarps > 1)
    merge = t.buffer("merge", kvWarps, tileM, headDimV + kMergeRowPadding,
                     b.getF32Type());
}

void TileProgramBuilder::buildPrologue() {
  copyQ();
  qOperand = qs;
  if (config.getQInRegs()) {
    // Moving Q to registers before the loop frees Q's bytes for V.
    qOperand = t.load(qs);
  }
}

/// Clones hook region `from` into `to`, with each kernel argument the hook
/// reads replaced by an attn.kernel_arg at the top of the hook: the tile-level
/// op is isolated from above.
static void cloneHook(KernelOp kernel, Region &from, Region &to) {
  if (from.empty())
    return;
  IRMapping mapping;
  from.cloneInto(&to, mapping);
  readKernelArgsThroughKernelArgOps(to, kernel);
}

Value TileProgramBuilder::modifyScores(Value s, Value j, bool withMaskMod) {
  if (!hasScoreMod() && !(withMaskMod && hasMaskMod()))
    return s;
  ModifyScoresOp op = t.modifyScores(s, blk, j, scale);
  cloneHook(kernel, attention.getScoreMod(), op.getScoreMod());
  // A costly term of k - q comes from a table (DiagonalTerm.h), whose rows
  // are per block head: not with packed rows, which mix heads.
  if (!config.getPackGqa())
    if (Operation *term = findDiagonalTerm(op.getScoreMod()))
      term->setAttr(kDiagonalTermAttrName, b.getUnitAttr());
  if (withMaskMod)
    cloneHook(kernel, attention.getMaskMod(), op.getMaskMod());
  return op.getResult();
}

ValueRange TileProgramBuilder::buildLoop(Value lower, Value upper,
                                         ValueRange inits, bool masked) {
  // Each tile is copied where it is used; attn-pipeline-copies issues the
  // copies ahead (FlashAttention-2's schedule: V's next copy overlaps
  // S = Q K^T and the softmax, K's overlaps P V).
  return t.loop(lower, upper, inits, masked,
                [&](Value j, ValueRange carried) -> SmallVector<Value> {
    Value rowMax = carried[0], rowSum = carried[1], acc = carried[2];
    copyKV(kernel.getK(), j, ks);
    Value s = t.dot(qOperand, ks, j);
    // The hooks first: a score_mod may map -inf to a finite score (a
    // softcap does), so the window and the sequence end are applied after
    // it.
    s = modifyScores(s, j, /*withMaskMod=*/masked || unmaskedNeedsMaskMod);
    if (masked)
      s = t.mask(s, blk, j, windowLeft, windowRight);
    OnlineSoftmaxOp softmax =
        t.onlineSoftmax(s, rowMax, rowSum, acc, scaleLog2, dtype);
    copyKV(kernel.getV(), j, vs);
    Value newAcc =
        t.dotAccumulate(softmax.getP(), vs, j, softmax.getNewAcc());
    return {softmax.getNewRowMax(), softmax.getNewRowSum(), newAcc};
  });
}

void TileProgramBuilder::build() {
  auto qType = cast<MemRefType>(kernel.getQ().getType());
  auto vType = cast<MemRefType>(kernel.getV().getType());
  dtype = qType.getElementType();
  // Buffers and fragments hold padded rows (getPaddedHeadDim).
  headDim = getPaddedHeadDim(qType.getDimSize(3));
  headDimV = getPaddedHeadDim(vType.getDimSize(3));
  std::tie(windowLeft, windowRight) = attention.getEffectiveWindow();
  int64_t tileM = config.getTileM(), tileN = config.getTileN();

  buildBuffers();
  blk = t.blockContext();
  TileRange range = t.kvBounds(blk, tileM, tileN, windowLeft, windowRight);
  // A mask_mod with a key interval skips the tiles it masks whole and runs
  // the ones it keeps whole without itself.
  bool maskBounded = false;
  // Packed rows mix heads and positions in one tile. The key interval is
  // evaluated at a tile's first and last positions, so it serves them when
  // the mask does not read the head (a per-sequence length, a window); the
  // block mask (per query tile and head) never does. Otherwise the decode
  // family runs the mask_mod on every visited tile.
  bool packed = config.getPackGqa();
  bool maskReadsHead =
      hasMaskMod() && !attention.getMaskMod().front().getArgument(1).use_empty();
  if (hasMaskMod() && !(packed && maskReadsHead)) {
    FailureOr<bool> exact =
        refineByKeyRange(t, kernel, attention.getMaskMod(), blk, range,
                         tileM, tileN, &keyEnd);
    if (succeeded(exact)) {
      maskBounded = true;
      unmaskedNeedsMaskMod = !*exact;
    }
    // What the compiler cannot bound, a run-time block mask does (not in
    // the decode family: its tiles would need one per packed row).
    if (!packed && (failed(exact) || !*exact)) {
      refineByBlockMask(t, kernel, attention.getMaskMod(), blk, range, tileM,
                        tileN, /*keyGrid=*/false);
      maskBounded = true;
      unmaskedNeedsMaskMod = false;
    }
  }

  // The decode family splits each row's KV tiles over kv_splits blocks.
  if (config.getPackGqa())
    range = t.kvSplit(range);

  buildPrologue();

  // The scale is a kernel parameter; the exp2 domain folds log2(e) into it.
  // A score_mod sees scaled scores (attn.modify_scores applies the scale),
  // so the softmax and the LSE then work on them unscaled.
  scale = t.softmaxScale(attention.getScale());
  Value log2e = t.f32(static_cast<float>(M_LOG2E));
  bool scoresScaled = !attention.getScoreMod().empty();
  Value softmaxScale = scoresScaled ? t.f32(1.0f) : scale;
  scaleLog2 = arith::MulFOp::create(b, loc, softmaxScale, log2e);

  Type f32 = b.getF32Type();
  Value rowMax =
      t.splat({tileM}, f32, -std::numeric_limits<float>::infinity());
  Value rowSum = t.splat({tileM}, f32, 0.0f);
  Value acc = t.splat({tileM, headDimV}, f32, 0.0f);
  SmallVector<Value> state = {rowMax, rowSum, acc};

  // The tiles at the end of the row (causal diagonal, the partial last tile)
  // first, then the unmasked middle, then the left edge of a local window.
  state = llvm::to_vector(
      buildLoop(range.unmaskedEnd, range.end, state, /*masked=*/true));
  state = llvm::to_vector(buildLoop(range.unmaskedBegin, range.unmaskedEnd,
                                    state, /*masked=*/false));
  if (windowLeft >= 0 || maskBounded)
    state = llvm::to_vector(buildLoop(range.begin, range.unmaskedBegin, state,
                                      /*masked=*/true));

  // Every wait and barrier, the drain before the epilogue's writes
  // included, comes from attn-insert-barriers.
  EpilogueOp epilogue = t.epilogue(state[2], state[0], state[1], os, blk,
                                   softmaxScale, merge);
  cloneHook(kernel, attention.getSink(), epilogue.getSink());
}

LogicalResult attn::expandAttentionToTiles(KernelOp kernel, ConfigAttr config) {
  auto attentions = kernel.getBodyBlock().getOps<AttentionOp>();
  if (attentions.empty())
    return kernel.emitOpError()
           << "has no attn.attention to expand (already at tile level?)";
  AttentionOp attention = *attentions.begin();
  OpBuilder b(attention);
  TileProgramBuilder builder(b, attention.getLoc(), kernel, attention,
                             config);
  builder.build();
  // What the attention said outlives it, on the kernel.
  kernel.setProblemAttr(kernel.getProblemInfo());
  attention.erase();
  kernel.setConfigAttr(config);
  return success();
}

namespace {
struct AttnExpandToTilesPass
    : public attn::impl::AttnExpandToTilesBase<AttnExpandToTilesPass> {
  void runOnOperation() override {
    KernelOp kernel = getOperation();
    if (failed(checkCodePathImplemented(kernel, kernel.getArch())))
      return signalPassFailure();
    ConfigAttr config = kernel.getConfigAttr();
    if (!config) {
      kernel.emitOpError() << "has no config; run attn-select-config first "
                              "or give config(#attn.config<...>)";
      return signalPassFailure();
    }
    if (failed(expandAttentionToTiles(kernel, config)))
      signalPassFailure();
  }
};
} // namespace
