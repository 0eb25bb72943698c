//===- BuildBackward.cpp - The backward family of an attention ------------===//
//
// The main kernel works transposed, key rows first, so that dK and dV
// accumulate in registers (FlashAttention-2's backward, Algorithm 2). For
// the query tile i of head h that step j visits:
//   S^T  = K Q_i^T                     (A: K from shared memory)
//   P^T  = exp(scale S^T - LSE_i)      (LSE_i a `cols` vector: per query)
//   dP^T = V dO_i^T
//   dS^T = P^T (dP^T - D_i) scale
//   dV  += P^T dO_i,  dK += dS^T Q_i   (A: P^T, dS^T from registers)
//   dQ_i += dS K                       (dS^T through shared memory, read
//                                       back transposed; f32 atomics)
// Entries outside the problem (past either sequence, outside the window,
// a row whose LSE is -inf: it kept no key) have P = 0, so they add
// nothing, and a fully masked row's gradients stay 0.
//
// With a score_mod f, the forward's softmax saw s' = f(scale s, b, h, q,
// kv) (ExpandToTiles scales before the hook): P = exp(s' - LSE), and
// dS = P (dP - D) f'(scale s) scale, f' derived from the hook's region by
// differentiateScoreMod (HookGradient.h) and emitted per element in the
// map that forms dS. Where P = 0 the gradient is 0 whatever f' is there.
//
// A mask_mod is evaluated at every entry of the steps that need it. Where
// MaskAnalysis finds a key interval per row, the main kernel steps only
// through the query tiles whose rows' intervals meet its KV tile
// (attn.query_range: bisected when the interval is monotone, else read
// from the KV-tile ranges the preprocess kernel wrote per query tile), and
// the dQ kernel refines its KV tiles by attn.key_range as the forward does;
// an exact interval's steps all run the mask. Where there is no exact
// interval (document ids), a run-time block mask refines them further,
// the forward's in the dQ kernel and its key-grid form in the main kernel
// (per KV tile, the query tiles any head of the group keeps a key of, and
// the run every head keeps whole, which needs no mask).
//
// The walk over (head, query tile) pairs is one sequence of steps whose
// index names the step (copy_async's `slot`): the pipeline and the race
// proof see one sequence, and the tile and head are computed from it. It
// runs as two chained KV loops, the steps that need the mask and those
// that do not.
//
// The deterministic family drops dQ's staging, mma and atomics from the
// main kernel and adds a query-parallel dQ kernel (FlashAttention-2's dQ
// pass): per KV tile S = Q K^T, P from the LSE, dP = dO V^T,
// dS = P (dP - D) scale, dQ += dS K, all in registers.
//
//===----------------------------------------------------------------------===//

#include "flashtile/Dialect/Attn/Transforms/BuildBackward.h"
#include "flashtile/ABI/KernelRules.h"
#include "flashtile/Dialect/Attn/Analysis/HookGradient.h"
#include "flashtile/Dialect/Attn/Analysis/SharedMemoryAllocation.h"
#include "flashtile/Dialect/Attn/IR/TileBuilder.h"
#include "flashtile/Dialect/Attn/Transforms/MaskAnalysis.h"
#include "flashtile/Dialect/Attn/Transforms/Passes.h"
#include "flashtile/Dialect/Attn/Utils/KVBounds.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"

#include <cmath>
#include <limits>

namespace flashtile::attn {
#define GEN_PASS_DEF_ATTNBUILDBACKWARD
#include "flashtile/Dialect/Attn/Transforms/Passes.h.inc"
} // namespace flashtile::attn

using namespace mlir;
using namespace flashtile;
using namespace flashtile::attn;

namespace {

/// One candidate shape of the backward: the main kernel's tiles, the
/// query side's slots (2: the next step's Q and dO land while this one
/// computes), and its KV warps: with kvWarps > 1 the warps are
/// warps / kvWarps row warps by kvWarps column warps, each product's
/// columns split over the latter (S^T's queries, dK's, dV's and dQ's head
/// dims), with P^T and dS^T staged in shared memory for the products whose
/// K they are.
struct BackwardShape {
  int64_t tileM, tileN, warps, qSlots, doSlots, kvWarps = 1;

  /// Whether each KV warp's share of a product's columns is whole pairs
  /// of mma n-tiles: of the queries (S^T, dP^T) and of each head dim (dK,
  /// dV, dQ).
  bool splitsWhole(int64_t headDim, int64_t headDimV) const {
    auto whole = [&](int64_t cols) {
      return cols % kvWarps == 0 && (cols / kvWarps) % 16 == 0;
    };
    return kvWarps == 1 || (whole(headDim) && whole(headDimV) && whole(tileM));
  }
};

/// The deterministic family's dQ kernel: query tiles of tile_m rows, KV
/// tiles of tile_n keys in `slots` slots.
struct DQShape {
  int64_t tileM, tileN, warps, slots;
};
SmallVector<DQShape> getDQShapes() {
  return {{64, 64, 4, 2}, {64, 64, 4, 1}, {64, 32, 4, 1}};
}

/// The candidates, best first (FlashAttention-2's SM80 backward picks its
/// tiles from the opt-in shared-memory limit the same way), of those whose
/// KV warps split the head dims whole. Up to d = 128, 64 x 64 tiles of 4
/// row warps; for a `plain` attention (no hooks, no tensor gradients) with
/// d = d_v = 64 or 128, 2 row by 2 column warps first (32 keys and half of
/// dK's and dV's columns a warp; fewer ldmatrix per mma: 0.43 against
/// 0.56): on an H100 they ran 7-11% faster at d = 64 and 128, causal or
/// not, S = 1024 and 4096, and their gradients passed there. The hooked,
/// masked and other head-dim families keep 4 row warps until a GPU has
/// run them with KV warps. Past d = 128 the 64 x 64 tiles do not fit:
/// 32 x 32, first as 2 row by 2 column warps (each holds half of dK's and
/// dV's columns: 255 registers and no spill at d = 256, where 2 row warps
/// alone keep their accumulators in local memory).
SmallVector<BackwardShape> getBackwardShapes(int64_t headDim,
                                             int64_t headDimV, bool plain) {
  SmallVector<BackwardShape> shapes;
  if (std::max(headDim, headDimV) <= 128) {
    if (plain && headDim == headDimV && (headDim == 64 || headDim == 128))
      shapes = {{64, 64, 4, 2, 2, 2}, {64, 64, 4, 1, 1, 2}};
    shapes.append({{64, 64, 4, 2, 2}, {64, 64, 4, 1, 2}, {64, 64, 4, 1, 1}});
  } else {
    shapes = {{32, 32, 4, 1, 1, 2}, {32, 32, 2, 1, 1}};
  }
  llvm::erase_if(shapes, [&](const BackwardShape &s) {
    return !s.splitsWhole(headDim, headDimV);
  });
  return shapes;
}

/// The candidates that agree with `pins`; the pinned shape itself when it
/// pins the tiles and warps.
SmallVector<BackwardShape> pinShapes(ArrayRef<BackwardShape> shapes,
                                     const BackwardPins &pins) {
  if (pins.tileM && pins.tileN && pins.warps) {
    int64_t slots = pins.slots.value_or(2);
    return {{*pins.tileM, *pins.tileN, *pins.warps, slots, slots,
             pins.kvWarps.value_or(1)}};
  }
  SmallVector<BackwardShape> kept;
  for (const BackwardShape &s : shapes)
    if ((!pins.tileM || *pins.tileM == s.tileM) &&
        (!pins.tileN || *pins.tileN == s.tileN) &&
        (!pins.warps || *pins.warps == s.warps) &&
        (!pins.kvWarps || *pins.kvWarps == s.kvWarps) &&
        (!pins.slots || (*pins.slots == s.qSlots && *pins.slots == s.doSlots)))
      kept.push_back(s);
  return kept;
}

/// The columns of one piece of dQ = dS K in the main kernel, of its
/// `columns`: the largest of the tile extents (the widths a fragment may
/// have besides the head dims, TileProgramInvariants) that is at most 64,
/// splits `columns` into whole pieces of mma n-tile pairs and is smaller
/// than it; else `columns` whole. A warp of 16 rows then holds 32 of dQ's
/// accumulators a thread at a time instead of 64 at d = 128.
int64_t dQPieceColumns(int64_t columns, int64_t tileM, int64_t tileN) {
  int64_t best = 0;
  for (int64_t width : {tileM, tileN})
    if (width <= 64 && width % 16 == 0 && width < columns &&
        columns % width == 0)
      best = std::max(best, width);
  return best ? best : columns;
}

/// P = exp(score - LSE) in the exp2 domain: exp2(s c - lse log2(e)), `c`
/// the scale times log2(e). The main kernel and the dQ kernel share it.
Value probability(OpBuilder &b, Location loc, Value s, Value lse, Value c) {
  Value log2e = arith::ConstantOp::create(
      b, loc, b.getF32FloatAttr(static_cast<float>(M_LOG2E)));
  Value exponent = arith::SubFOp::create(
      b, loc, arith::MulFOp::create(b, loc, s, c),
      arith::MulFOp::create(b, loc, lse, log2e));
  return math::Exp2Op::create(b, loc, exponent);
}

/// Whether a row kept no key (its LSE is -inf): it has no gradient.
Value keptNoKey(OpBuilder &b, Location loc, Value lse) {
  Value ninf = arith::ConstantOp::create(
      b, loc, b.getF32FloatAttr(-std::numeric_limits<float>::infinity()));
  return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, lse, ninf);
}

/// 0 where `dropped`, else `p`.
Value zeroWhere(OpBuilder &b, Location loc, Value dropped, Value p) {
  Value zero = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.0f));
  return arith::SelectOp::create(b, loc, dropped, zero, p);
}

/// The map body of dS / scale = P (dP - D) over (P, dP, D). The softmax
/// scale, a factor of every dS, is applied once to what dS forms (dK in
/// the main kernel, dQ where it is rounded: scaledBy), not per entry.
Value scoreGradient(OpBuilder &b, Location loc, ValueRange x) {
  Value centred = arith::SubFOp::create(b, loc, x[1], x[2]);
  return arith::MulFOp::create(b, loc, x[0], centred);
}

/// `frag` times the softmax scale: dK and dQ, formed from dS / scale.
Value scaledBy(TileBuilder &t, Value frag, Value scaleValue) {
  return t.map({frag, scaleValue}, [](OpBuilder &b, Location loc,
                                      ValueRange x) {
    return arith::MulFOp::create(b, loc, x[0], x[1]).getResult();
  });
}

/// Of `shapes`, builds with `build` the first whose shared-memory plan
/// fits `limit` bytes, else the last (whose plan the allocator then
/// refuses); the ones that do not fit are erased. Returns the kernel and
/// the index of its shape.
template <typename Shape>
std::pair<KernelOp, size_t>
buildFirstThatFits(ArrayRef<Shape> shapes, int64_t limit,
                   llvm::function_ref<KernelOp(const Shape &)> build) {
  for (auto [index, shape] : llvm::enumerate(shapes)) {
    KernelOp kernel = build(shape);
    if (index + 1 == shapes.size() ||
        SharedMemoryPlan(kernel).getTotalBytes() <= limit)
      return {kernel, index};
    kernel.erase();
  }
  llvm_unreachable("no backward shape to build");
}

/// Index arithmetic at the builder's insertion point, one arith op per
/// call: the policy KVBounds.h's templates take in a tile program (index
/// is i32 in the kernel).
struct IndexArith {
  OpBuilder &b;
  Location loc;
  Value i32(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); }
  Value add(Value x, int64_t c) { return add(x, i32(c)); }
  Value sub(Value x, Value y) { return arith::SubIOp::create(b, loc, x, y); }
  Value mul(Value x, int64_t c) {
    return arith::MulIOp::create(b, loc, x, i32(c));
  }
  Value udiv(Value x, int64_t c) {
    return arith::DivUIOp::create(b, loc, x, i32(c));
  }
  Value smin(Value x, Value y) {
    return arith::MinSIOp::create(b, loc, x, y);
  }
  Value smax(Value x, Value y) {
    return arith::MaxSIOp::create(b, loc, x, y);
  }
  Value cmp(arith::CmpIPredicate pred, Value x, Value y) {
    return arith::CmpIOp::create(b, loc, pred, x, y);
  }
  Value slt(Value x, Value y) { return cmp(arith::CmpIPredicate::slt, x, y); }
  Value sle(Value x, Value y) { return cmp(arith::CmpIPredicate::sle, x, y); }
  Value sgt(Value x, Value y) { return cmp(arith::CmpIPredicate::sgt, x, y); }
  Value sge(Value x, Value y) { return cmp(arith::CmpIPredicate::sge, x, y); }
  Value select(Value c, Value x, Value y) {
    return arith::SelectOp::create(b, loc, c, x, y);
  }
  Value bitOr(Value x, Value y) { return arith::OrIOp::create(b, loc, x, y); }
};

/// Whether hook region `hook` (possibly empty) loads from a tensor that
/// `wanted` holds for.
bool hookReads(Region &hook, function_ref<bool(Value)> wanted) {
  bool reads = false;
  if (!hook.empty())
    hook.walk([&](memref::LoadOp load) { reads |= wanted(load.getMemRef()); });
  return reads;
}

/// The values the three kernels share.
struct BackwardBuilder {
  KernelOp forward;
  AttentionOp attention;
  Location loc;
  MemRefType qType, kType, vType, oType, lseType, accType;
  int64_t headDim, headDimV, windowLeft, windowRight;
  float scale;

  BackwardBuilder(KernelOp forward, AttentionOp attention)
      : forward(forward), attention(attention), loc(attention.getLoc()) {
    qType = cast<MemRefType>(forward.getQ().getType());
    kType = cast<MemRefType>(forward.getK().getType());
    vType = cast<MemRefType>(forward.getV().getType());
    oType = cast<MemRefType>(forward.getO().getType());
    lseType = cast<MemRefType>(forward.getLse().getType());
    MLIRContext *ctx = forward.getContext();
    int64_t dyn = ShapedType::kDynamic;
    accType = MemRefType::get(
        {dyn, dyn, dyn, qType.getDimSize(3)}, Float32Type::get(ctx),
        StridedLayoutAttr::get(ctx, 0, {dyn, dyn, dyn, 1}));
    headDim = getPaddedHeadDim(qType.getDimSize(3));
    headDimV = getPaddedHeadDim(vType.getDimSize(3));
    std::tie(windowLeft, windowRight) = attention.getEffectiveWindow();
    scale = attention.getScale();
    if (!attention.getScoreMod().empty())
      scoreMod = &attention.getScoreMod();
    if (!attention.getMaskMod().empty())
      maskMod = &attention.getMaskMod();
  }

  /// The attention's score_mod and mask_mod, or null.
  Region *scoreMod = nullptr;
  Region *maskMod = nullptr;

  /// Whether the mask_mod keeps key `key` for query `query` of `head`.
  Value keeps(OpBuilder &b, Value batch, Value head, Value query,
              Value key) {
    return emitHook(b, *maskMod, {batch, head, query, key}, &outside);
  }

  /// The exponent factor of P (probability's `c`): scale log2(e), or
  /// log2(e) alone with a score_mod, whose result the forward's softmax
  /// took unscaled.
  Value exponentFactor(OpBuilder &b, TileBuilder &t, Value scaleValue) {
    Value log2e = t.f32(static_cast<float>(M_LOG2E));
    if (scoreMod)
      return log2e;
    return arith::MulFOp::create(b, loc, scaleValue, log2e);
  }

  /// The score the forward's softmax saw for raw score `s` of query
  /// `query` and key `key`: s itself (the scale is in the exponent
  /// factor), or f(scale s, batch, head, query, key).
  Value softmaxScore(OpBuilder &b, Location loc, Value s, Value scaleValue,
                     Value batch, Value head, Value query, Value key) {
    if (!scoreMod)
      return s;
    Value scaled = arith::MulFOp::create(b, loc, s, scaleValue);
    return emitHook(b, *scoreMod, {scaled, batch, head, query, key},
                    &outside);
  }

  /// The operands of dS's map: (P, dP, D), which scoreGradient reads;
  /// with a score_mod also what differentiateAt reads after them: the
  /// scale, the raw scores, the batch, the head and the tiles' first query
  /// and key.
  SmallVector<Value> gradientOperands(Value p, Value dp, Value d,
                                      Value scaleValue, Value s, Value batch,
                                      Value head, Value q0, Value kv0) {
    if (!scoreMod)
      return {p, dp, d};
    return {p, dp, d, scaleValue, s, batch, head, q0, kv0};
  }

  /// The score_mod differentiated at one element: `x` is
  /// gradientOperands' elements, then the element's (row, col); the seed
  /// is dS' = P (dP - D), the gradient of the score the softmax saw.
  /// `keyRows`: the tile is transposed (rows are keys). Reads of the
  /// tensors `differentiated` holds for get adjoints.
  ScoreModGradient
  differentiateAt(OpBuilder &b, Location loc, ValueRange x, bool keyRows,
                  function_ref<bool(Value)> differentiated = nullptr) {
    Value p = x[0], scaleValue = x[3], row = x[9], col = x[10];
    Value seed = arith::MulFOp::create(
        b, loc, p, arith::SubFOp::create(b, loc, x[1], x[2]));
    Value query = arith::AddIOp::create(b, loc, x[7], keyRows ? col : row);
    Value key = arith::AddIOp::create(b, loc, x[8], keyRows ? row : col);
    Value scaled = arith::MulFOp::create(b, loc, x[4], scaleValue);
    FailureOr<ScoreModGradient> gradient =
        differentiateScoreMod(b, *scoreMod, {scaled, x[5], x[6], query, key},
                              seed, differentiated, &outside);
    assert(succeeded(gradient) && "checked by checkDifferentiable");
    return *gradient;
  }

  /// 0 where P is 0 (a masked or dropped entry: no gradient, whatever the
  /// hook's derivative is there), else `v`.
  static Value zeroWhereNoP(OpBuilder &b, Location loc, Value p, Value v) {
    Value zero = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.0f));
    Value dropped =
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, p, zero);
    return arith::SelectOp::create(b, loc, dropped, zero, v);
  }

  /// The map body of dS over gradientOperands and the element's (row,
  /// col): dS' f'(scale s) scale with a score_mod.
  Value scoreGradientBody(OpBuilder &b, Location loc, ValueRange x,
                          bool keyRows) {
    if (!scoreMod)
      return scoreGradient(b, loc, x);
    // The score_mod's argument is scale s, so dS / scale = ∂L/∂(scale s).
    ScoreModGradient gradient = differentiateAt(b, loc, x, keyRows);
    return zeroWhereNoP(b, loc, x[0], gradient.scoreAdjoint);
  }

  /// Whether dQ has its own query-parallel kernel (no atomics: the same
  /// bits every run) instead of f32 atomics from the main kernel.
  bool deterministic = false;
  /// Whether the mask_mod's key interval is not known to be monotone (a
  /// varlen mask): the preprocess kernel then writes each query tile's KV
  /// tiles into the kv_first / kv_end workspaces, which the main kernel's
  /// attn.query_range scans (a bisection needs monotone intervals, and a
  /// scan of every row per KV tile would cost a pass over the rows each).
  bool queryTables = false;
  /// Whether the mask_mod has no exact key interval (document ids): the
  /// main kernel then refines its query tiles by a run-time block mask
  /// (attn.block_ranges key_grid), and the deterministic dQ kernel its KV
  /// tiles by the forward's; the tiles a block mask finds kept whole run
  /// without the mask.
  bool blockMask = false;
  /// Whether the query tables also carry each query tile's unmasked KV
  /// tiles (kv_unmasked_first / kv_unmasked_end): with an exact interval,
  /// the main kernel's tiles every row keeps whole then need no mask_mod.
  bool exactTables = false;

  /// One of the family's tensors: its name, role, side and type.
  struct Tensor {
    StringRef name, role;
    bool keySide;
    MemRefType type;
    /// Stored in C-fragment tiles (#attn.tensor's "c_tiles"): the dQ
    /// accumulator, so that a warp's atomic adds of a C tile land in 512
    /// contiguous bytes and the convert reads them back the same way.
    bool cTiles = false;
  };
  /// The family's tensors, in argument order (the plan's argument names).
  SmallVector<Tensor> tensors() {
    SmallVector<Tensor> list = {
        {"q", "in", false, qType},          {"k", "in", true, kType},
        {"v", "in", true, vType},           {"o", "in", false, oType},
        {"lse", "in", false, lseType},      {"do", "in", false, oType},
        {"d", "workspace", false, lseType}};
    if (queryTables)
      list.append({{"kv_first", "workspace", false, lseType},
                   {"kv_end", "workspace", false, lseType}});
    if (queryTables && exactTables)
      list.append({{"kv_unmasked_first", "workspace", false, lseType},
                   {"kv_unmasked_end", "workspace", false, lseType}});
    if (!deterministic)
      list.push_back({"dq_accum", "workspace", false, accType, true});
    list.append({{"dq", "out", false, qType},
                 {"dk", "out", true, kType},
                 {"dv", "out", true, vType}});
    return list;
  }
  ArrayAttr tensorDecls(Builder &b) {
    SmallVector<Attribute> decls;
    for (const Tensor &tensor : tensors()) {
      const abi::SequenceSide &side =
          tensor.keySide ? abi::kKeySide : abi::kQuerySide;
      decls.push_back(TensorAttr::get(
          b.getContext(), b.getStringAttr(tensor.name),
          b.getStringAttr(tensor.role), b.getStringAttr(side.rows),
          b.getStringAttr(side.heads),
          tensor.cTiles ? b.getStringAttr(TensorAttr::kCTiles)
                        : StringAttr()));
    }
    return b.getArrayAttr(decls);
  }

  /// The family's name: the forward's, its `_fwd` suffix (the built-in
  /// kernel's default name, flash_fwd) dropped, then `_bwd`.
  std::string familyName() {
    StringRef base = forward.getSymName();
    base.consume_back("_fwd");
    return (base + "_bwd").str();
  }

  /// The forward's extra tensors whose gradient the family computes
  /// (BackwardOptions::tensorGrads), in order.
  SmallVector<Value> gradTensors;

  /// The `<name>_grad` argument of gradTensors[i]: f32, its rank, any
  /// sizes and strides.
  MemRefType gradType(unsigned i) {
    auto type = cast<MemRefType>(gradTensors[i].getType());
    int64_t dyn = ShapedType::kDynamic;
    SmallVector<int64_t> sizes(type.getRank(), dyn), strides(type.getRank(),
                                                             dyn);
    MLIRContext *ctx = forward.getContext();
    return MemRefType::get(sizes, Float32Type::get(ctx),
                           StridedLayoutAttr::get(ctx, 0, strides));
  }

  /// The extra arguments' names and roles: the forward's, then the
  /// gradients' (`<name>_grad`, accumulate).
  std::pair<ArrayAttr, ArrayAttr> extraNamesAndRoles(Builder &b) {
    if (gradTensors.empty())
      return {forward.getArgNamesAttr(), forward.getArgRolesAttr()};
    SmallVector<Attribute> names, roles;
    for (unsigned i = 0; i < forward.getExtraArgs().size(); ++i) {
      names.push_back(b.getStringAttr(forward.getExtraArgName(i)));
      roles.push_back(b.getStringAttr(forward.getExtraArgRole(i)));
    }
    for (Value tensor : gradTensors) {
      std::string name = forward
                             .getExtraArgName(static_cast<unsigned>(
                                 forward.getExtraArgIndex(tensor)))
                             .str();
      names.push_back(b.getStringAttr(name + "_grad"));
      roles.push_back(b.getStringAttr("accumulate"));
    }
    return {b.getArrayAttr(names), b.getArrayAttr(roles)};
  }

  KernelOp createKernel(OpBuilder &b, StringRef suffix, ConfigAttr config,
                        bool keyGrid) {
    std::string name = familyName() + suffix.str();
    // The forward's extra arguments (what its hooks read) follow the
    // tensors in every kernel, then the gradients of the tensors the
    // family differentiates: a family's kernels share their arguments.
    auto [names, roles] = extraNamesAndRoles(b);
    auto kernel = KernelOp::create(
        b, loc, b.getStringAttr(name), forward.getArch(), config,
        IntegerAttr(), names, roles, ProblemAttr(), tensorDecls(b),
        keyGrid ? b.getStringAttr("keys") : StringAttr());
    // What the attention said (causal, window, scale) is the plan's too.
    kernel.setProblemAttr(forward.getProblemInfo());
    Block *body = new Block();
    kernel.getBody().push_back(body);
    for (const Tensor &tensor : tensors())
      body->addArgument(tensor.type, loc);
    for (Value extra : forward.getExtraArgs())
      body->addArgument(extra.getType(), extra.getLoc());
    for (unsigned i = 0; i < gradTensors.size(); ++i)
      body->addArgument(gradType(i), gradTensors[i].getLoc());
    return kernel;
  }

  /// The forward's extra arguments -> `kernel`'s, for the score_mod's
  /// reads when it is emitted into `kernel`.
  IRMapping outside;
  /// gradTensors[i] in `kernel` -> its `<name>_grad` argument.
  llvm::DenseMap<Value, Value> gradArgs;
  void useExtrasOf(KernelOp kernel) {
    outside.clear();
    gradArgs.clear();
    auto extras = kernel.getExtraArgs();
    size_t count = forward.getExtraArgs().size();
    for (auto [from, to] :
         llvm::zip_equal(forward.getExtraArgs(), extras.take_front(count)))
      outside.map(from, to);
    for (auto [tensor, grad] :
         llvm::zip_equal(gradTensors, extras.drop_front(count)))
      gradArgs[outside.lookup(tensor)] = grad;
  }

  /// The for_each body over gradientOperands and (row, col) that adds, for
  /// each read of a differentiated tensor, dS' * ∂f/∂read at the read's
  /// indices into its gradient (dS' = P (dP - D): the gradient of the
  /// score the softmax saw). Nothing where P = 0.
  void accumulateReadGradients(OpBuilder &b, Location loc, ValueRange x,
                               bool keyRows) {
    ScoreModGradient gradient = differentiateAt(
        b, loc, x, keyRows,
        [&](Value tensor) { return isDifferentiated(tensor); });
    addToGradients(b, loc, gradient.reads, [&](Value adjoint) {
      return zeroWhereNoP(b, loc, x[0], adjoint);
    });
  }

  /// Whether `tensor` (this kernel's extra argument) has its gradient
  /// computed.
  bool isDifferentiated(Value tensor) { return gradArgs.contains(tensor); }

  /// Adds each read's adjoint (through `filter`, if given) into its
  /// tensor's `<name>_grad` at the read's indices.
  void addToGradients(OpBuilder &b, Location loc,
                      MutableArrayRef<TensorReadAdjoint> reads,
                      function_ref<Value(Value)> filter = nullptr) {
    for (TensorReadAdjoint &read : reads)
      memref::AtomicRMWOp::create(
          b, loc, arith::AtomicRMWKind::addf,
          filter ? filter(read.adjoint) : read.adjoint,
          gradArgs.lookup(read.read.getMemRef()), read.read.getIndices());
  }

  /// The kernel's tensor `name`.
  static Value arg(KernelOp kernel, StringRef name) {
    return kernel.getTensor(name);
  }

  void buildPreprocess(OpBuilder &b, KernelOp kernel, int64_t tileM,
                       int64_t tileN);
  /// Whether `hook` reads a tensor whose gradient the family computes.
  bool readsGradTensors(Region &hook) {
    return hookReads(hook, [&](Value tensor) {
      return llvm::is_contained(gradTensors, tensor);
    });
  }
  void accumulateSinkGradients(OpBuilder &b, TileBuilder &t, KernelOp kernel,
                               const TileBuilder::Block &blk, Value product,
                               Value row0, int64_t tileM);
  void buildMain(OpBuilder &b, KernelOp kernel, const BackwardShape &shape);
  void buildConvert(OpBuilder &b, KernelOp kernel, int64_t tileM);
  void buildDQ(OpBuilder &b, KernelOp kernel, const DQShape &shape);
};

} // namespace

void BackwardBuilder::buildPreprocess(OpBuilder &b, KernelOp kernel,
                                      int64_t tileM, int64_t tileN) {
  b.setInsertionPointToStart(&kernel.getBodyBlock());
  useExtrasOf(kernel);
  TileBuilder t(b, loc, kernel);
  TileBuilder::Block blk = t.blockContext();
  Value row = arith::MulIOp::create(b, loc, blk.mBlock, t.index(tileM));
  Value zero = t.index(0);
  Value o = t.loadTile(arg(kernel, "o"), {blk.batch, row, blk.head, zero}, tileM,
                       headDimV);
  Value dO = t.loadTile(arg(kernel, "do"), {blk.batch, row, blk.head, zero},
                        tileM, headDimV);
  Value product = t.map({dO, o}, [](OpBuilder &b, Location loc, ValueRange x) {
    return arith::MulFOp::create(b, loc, x[0], x[1]).getResult();
  });
  Value d = t.reduceRows(product, "sum");
  t.storeTile(d, arg(kernel, "d"), {blk.batch, blk.head, row});
  if (queryTables) {
    // The KV tiles of the main kernel's tiling this query tile visits, as
    // the forward finds them (the window's, refined by the mask's key
    // interval at every row), at its first row of kv_first and kv_end.
    TileBuilder::TileRange range =
        t.kvBounds(blk, tileM, tileN, windowLeft, windowRight);
    FailureOr<bool> exact =
        refineByKeyRange(t, forward, *maskMod, blk, range, tileM, tileN);
    assert(succeeded(exact) && "queryTables needs a key interval");
    (void)exact;
    auto asFloats = [&](Value tile) {
      return t.map({d, tile}, [](OpBuilder &b, Location loc, ValueRange x) {
        Value i = arith::IndexCastOp::create(b, loc, b.getI32Type(), x[1]);
        return arith::SIToFPOp::create(b, loc, b.getF32Type(), i).getResult();
      });
    };
    t.storeTile(asFloats(range.begin), arg(kernel, "kv_first"),
                {blk.batch, blk.head, row});
    t.storeTile(asFloats(range.end), arg(kernel, "kv_end"),
                {blk.batch, blk.head, row});
    if (exactTables) {
      t.storeTile(asFloats(range.unmaskedBegin), arg(kernel, "kv_unmasked_first"),
                  {blk.batch, blk.head, row});
      t.storeTile(asFloats(range.unmaskedEnd), arg(kernel, "kv_unmasked_end"),
                  {blk.batch, blk.head, row});
    }
  }
  if (readsGradTensors(attention.getSink()))
    accumulateSinkGradients(b, t, kernel, blk, product, row, tileM);
}

/// The gradients of what the sink hook reads (the sink logits). The sink
/// s_h takes the share exp(s_h - LSE_i) of row i's softmax and adds no
/// value, so dL/ds_h = -sum_i exp(s_h - LSE_i) D_i, D_i = rowsum(dO O)_i:
/// per element of the dO O tile, -exp(s_h - LSE_row) dO O, chained
/// through the hook to its reads (the head's entry: summed per warp, one
/// atomic). Rows past seqlen_q add nothing.
void BackwardBuilder::accumulateSinkGradients(OpBuilder &b, TileBuilder &t,
                                              KernelOp kernel,
                                              const TileBuilder::Block &blk,
                                              Value product, Value row0,
                                              int64_t tileM) {
  Value lse = t.loadVector(arg(kernel, "lse"), {blk.batch, blk.head, row0},
                           tileM, FragLayout::Rows);
  Region &sink = attention.getSink();
  t.forEach({product, lse, blk.batch, blk.head, row0, blk.seqlenQ},
            [&](OpBuilder &b, Location loc, ValueRange x) {
    Value logit = emitHook(b, sink, {x[2], x[3]}, &outside);
    Value share = math::ExpOp::create(
        b, loc, arith::SubFOp::create(b, loc, logit, x[1]));
    Value seed = arith::NegFOp::create(
        b, loc, arith::MulFOp::create(b, loc, share, x[0]));
    Value inside = arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::slt,
        arith::AddIOp::create(b, loc, x[4], x[6]), x[5]);
    Value zero = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.0f));
    seed = arith::SelectOp::create(b, loc, inside, seed, zero);
    FailureOr<ScoreModGradient> gradient = differentiateScoreMod(
        b, sink, {x[2], x[3]}, seed,
        [&](Value tensor) { return isDifferentiated(tensor); }, &outside);
    assert(succeeded(gradient) && "a sink reads f32 tensors");
    addToGradients(b, loc, gradient->reads);
  });
}

void BackwardBuilder::buildConvert(OpBuilder &b, KernelOp kernel,
                                   int64_t tileM) {
  b.setInsertionPointToStart(&kernel.getBodyBlock());
  TileBuilder t(b, loc, kernel);
  TileBuilder::Block blk = t.blockContext();
  Value row = arith::MulIOp::create(b, loc, blk.mBlock, t.index(tileM));
  SmallVector<Value> at = {blk.batch, row, blk.head, t.index(0)};
  Value dq = t.loadTile(arg(kernel, "dq_accum"), at, tileM, headDim);
  t.storeTile(scaledBy(t, dq, t.softmaxScale(scale)), arg(kernel, "dq"), at);
}

void BackwardBuilder::buildDQ(OpBuilder &b, KernelOp kernel,
                              const DQShape &shape) {
  b.setInsertionPointToStart(&kernel.getBodyBlock());
  useExtrasOf(kernel);
  TileBuilder t(b, loc, kernel);
  Type f32 = b.getF32Type(), dtype = qType.getElementType();
  int64_t tileM = shape.tileM, tileN = shape.tileN;
  TileBuilder::Block blk = t.blockContext();
  Value qs = t.buffer("Q", 1, tileM, headDim);
  Value dos = t.buffer("dO", 1, tileM, headDimV);
  Value ks = t.buffer("K", shape.slots, tileN, headDim);
  Value vs = t.buffer("V", shape.slots, tileN, headDimV);
  t.copy(arg(kernel, "q"), blk.batch, blk.mBlock, blk.head, qs);
  t.copy(arg(kernel, "do"), blk.batch, blk.mBlock, blk.head, dos);
  Value q0 = arith::MulIOp::create(b, loc, blk.mBlock, t.index(tileM));
  Value lse = t.loadVector(arg(kernel, "lse"), {blk.batch, blk.head, q0},
                           tileM, FragLayout::Rows);
  Value d = t.loadVector(arg(kernel, "d"), {blk.batch, blk.head, q0}, tileM,
                         FragLayout::Rows);
  TileBuilder::TileRange range =
      t.kvBounds(blk, tileM, tileN, windowLeft, windowRight);
  // A mask_mod with a key interval skips the tiles it drops whole, and
  // when the interval is exact the unmasked tiles run without it, as in
  // the forward.
  bool leftEdge = windowLeft >= 0, unmaskedNeedsMaskMod = maskMod;
  if (maskMod) {
    FailureOr<bool> exact =
        refineByKeyRange(t, forward, *maskMod, blk, range, tileM, tileN);
    if (succeeded(exact)) {
      leftEdge = true;
      unmaskedNeedsMaskMod = !*exact;
    }
    // What the interval does not bound, the forward's run-time block mask
    // does.
    if (blockMask) {
      refineByBlockMask(t, kernel, *maskMod, blk, range, tileM, tileN,
                        /*keyGrid=*/false, &outside);
      leftEdge = true;
      unmaskedNeedsMaskMod = false;
    }
  }
  Value scaleValue = t.softmaxScale(scale);
  Value scaleLog2 = exponentFactor(b, t, scaleValue);
  int64_t left = windowLeft, right = windowRight;
  // FlashAttention-2's dQ: per KV tile, S = Q K^T, P from the LSE,
  // dP = dO V^T, dS = P (dP - D) scale, dQ += dS K. The mask sets masked
  // scores to -inf, so their P is 0; a row that kept no key (LSE -inf) has
  // P = 0 everywhere.
  auto loop = [&](Value lower, Value upper, ValueRange carried, bool masked) {
    return t.loop(lower, upper, carried, masked,
                  [&](Value j, ValueRange acc) -> SmallVector<Value> {
      t.copy(arg(kernel, "k"), blk.batch, j, blk.kvHead, ks);
      Value raw = t.dot(qs, ks, j);
      Value s = raw, kv0;
      if (scoreMod || maskMod)
        kv0 = arith::MulIOp::create(b, loc, j, t.index(tileN));
      if (scoreMod)
        s = t.map({raw, scaleValue, blk.batch, blk.head, q0, kv0},
                  [&](OpBuilder &b, Location loc, ValueRange x) {
          Value query = arith::AddIOp::create(b, loc, x[4], x[6]);
          Value key = arith::AddIOp::create(b, loc, x[5], x[7]);
          return softmaxScore(b, loc, x[0], x[1], x[2], x[3], query, key);
        });
      if (masked)
        s = t.mask(s, blk, j, left, right);
      // The mask_mod: -inf where it drops the key.
      if (maskMod && (masked || unmaskedNeedsMaskMod))
        s = t.map({s, blk.batch, blk.head, q0, kv0},
                  [&](OpBuilder &b, Location loc, ValueRange x) {
          Value query = arith::AddIOp::create(b, loc, x[3], x[5]);
          Value key = arith::AddIOp::create(b, loc, x[4], x[6]);
          Value ninf = arith::ConstantOp::create(
              b, loc,
              b.getF32FloatAttr(-std::numeric_limits<float>::infinity()));
          return arith::SelectOp::create(
                     b, loc, keeps(b, x[1], x[2], query, key), x[0], ninf)
              .getResult();
        });
      Value p = t.map({s, lse, scaleLog2},
                      [](OpBuilder &b, Location loc, ValueRange x) {
        Value e = probability(b, loc, x[0], x[1], x[2]);
        return zeroWhere(b, loc, keptNoKey(b, loc, x[1]), e);
      });
      t.copy(arg(kernel, "v"), blk.batch, j, blk.kvHead, vs);
      Value dp = t.dot(dos, vs, j);
      Value ds = t.map(gradientOperands(p, dp, d, scaleValue, raw, blk.batch,
                                        blk.head, q0, kv0),
                       [&](OpBuilder &b, Location loc, ValueRange x) {
                         return scoreGradientBody(b, loc, x,
                                                  /*keyRows=*/false);
                       });
      return {t.mma(t.convert(ds, dtype), ks, j, acc[0], {})};
    });
  };
  SmallVector<Value> acc = {t.splat({tileM, headDim}, f32, 0.0f)};
  acc = llvm::to_vector(loop(range.unmaskedEnd, range.end, acc, true));
  acc = llvm::to_vector(
      loop(range.unmaskedBegin, range.unmaskedEnd, acc, false));
  if (leftEdge)
    acc = llvm::to_vector(loop(range.begin, range.unmaskedBegin, acc, true));
  t.storeTile(scaledBy(t, acc[0], scaleValue), arg(kernel, "dq"),
              {blk.batch, q0, blk.head, t.index(0)});
}

void BackwardBuilder::buildMain(OpBuilder &b, KernelOp kernel,
                                const BackwardShape &shape) {
  b.setInsertionPointToStart(&kernel.getBodyBlock());
  useExtrasOf(kernel);
  TileBuilder t(b, loc, kernel);
  Type f32 = b.getF32Type(), dtype = qType.getElementType();
  int64_t tileM = shape.tileM, tileN = shape.tileN;
  IndexArith ia{b, loc};
  auto add = [&](Value x, Value y) { return ia.add(x, y); };
  auto sub = [&](Value x, Value y) { return ia.sub(x, y); };
  auto max = [&](Value x, Value y) { return ia.smax(x, y); };
  auto mul = [&](Value x, int64_t y) { return ia.mul(x, y); };

  TileBuilder::Block blk = t.blockContext();
  int64_t kvWarps = shape.kvWarps;
  Value ks = t.buffer("K", 1, tileN, headDim);
  Value vs = t.buffer("V", 1, tileN, headDimV);
  Value qs = t.buffer("Q", shape.qSlots, tileM, headDim);
  Value dos = t.buffer("dO", shape.doSlots, tileM, headDimV);
  // dS^T's staging for dQ = dS K (not in the deterministic family, whose
  // dQ kernel recomputes dS). With KV warps, each warp holds its share of
  // P^T's and dS^T's columns (queries), while dV += P^T dO and
  // dK += dS^T Q run over all of them: both go through shared memory.
  Value dss = deterministic && kvWarps == 1 ? Value()
                                            : t.buffer("dS", 1, tileN, tileM);
  Value ps = kvWarps > 1 ? t.buffer("P", 1, tileN, tileM) : Value();
  Value n = blk.mBlock;
  t.copy(arg(kernel, "k"), blk.batch, n, blk.kvHead, ks);
  t.copy(arg(kernel, "v"), blk.batch, n, blk.kvHead, vs);

  // The query tiles [lo, hi) the window lets this KV tile see
  // (KVBounds.h).
  KVTiling tiling{tileM, tileN, windowLeft, windowRight};
  KeyGridTiles<Value> window = computeQueryTilesOfKeys(
      ia, n, blk.seqlenQ, blk.seqlenK, tiling);
  Value kv0 = window.kv0, tiles = window.tiles, shift = window.shift;
  Value lo = window.begin, hi = window.end;
  // The number of query heads that step through this KV head's tiles,
  // built where first needed (the IR of kernels without a mask_mod stays
  // as it was verified on the GPU).
  Value group;
  auto groupSize = [&] {
    if (!group) {
      Value headsQ = SizeOp::create(b, loc, b.getIndexType(),
                                    b.getStringAttr(abi::kQuerySide.heads));
      Value headsKV = SizeOp::create(b, loc, b.getIndexType(),
                                     b.getStringAttr(abi::kKeySide.heads));
      group = arith::DivUIOp::create(b, loc, headsQ, headsKV);
    }
    return group;
  };
  // Of those, the tiles [ulo, uhi) need no mask (KVBounds.h).
  UnmaskedTiles<Value> whole = computeUnmaskedQueryTiles(
      ia, kv0, shift, lo, hi, blk.seqlenQ, blk.seqlenK, tiling);
  TileBuilder::TileRange range{lo, whole.begin, whole.end, hi};
  if (maskMod) {
    // A mask_mod with a key interval: only the query tiles with a row
    // whose interval meets this KV tile (the transpose of the forward's
    // key_range); with an exact interval, the tiles every row of every
    // head of the group keeps whole need no mask_mod. The masked steps
    // evaluate it at every entry, so a superset of the tiles with a kept
    // key is correct; a subset would drop gradient.
    SmallVector<Value> tables;
    if (queryTables)
      tables = {arg(kernel, "kv_first"), arg(kernel, "kv_end")};
    if (queryTables && exactTables)
      tables.append(
          {arg(kernel, "kv_unmasked_first"), arg(kernel, "kv_unmasked_end")});
    FailureOr<bool> exact = refineByQueryRange(
        t, forward, *maskMod, blk, blk.head, groupSize(), range, tileM, tileN,
        tables);
    if (blockMask) {
      // What the interval does not bound, the run-time block mask of the
      // group's heads does: tiles no head keeps a key of are never
      // visited, and those every head keeps whole need no mask_mod.
      // Its whole tiles certify the mask_mod, so within the interval's
      // tiles they need only the window's: not the query_range's unmasked
      // ones, none where the interval is inexact.
      TileBuilder::Block keys = blk;
      keys.head = blk.kvHead;
      range = {range.begin, whole.begin, whole.end, range.end};
      refineByBlockMask(t, kernel, *maskMod, keys, range, tileM, tileN,
                        /*keyGrid=*/true, &outside);
    } else if (failed(exact) || !*exact) {
      range.unmaskedEnd = range.unmaskedBegin;
    }
  }
  lo = range.begin;
  hi = range.end;
  Value ulo = range.unmaskedBegin, uhi = range.unmaskedEnd;
  Value count = sub(hi, lo);
  Value unmasked = sub(uhi, ulo);
  Value masked = sub(count, unmasked);
  Value before = sub(ulo, lo);

  // The steps, numbered from `tiles` (a value the race proof cannot fold,
  // so that it gives both loops free trip counts; from a constant, the
  // second loop's count would follow from the first's): first the unmasked tiles of each
  // head of the group, then the masked ones. Step s < group * unmasked is
  // head h0 + s / unmasked, tile ulo + s mod unmasked; a later step r of
  // the masked part is head h0 + r / masked, and the r-th tile of
  // [lo, ulo) followed by [uhi, hi). Every loop computes this same map, so
  // the pipeline's copies for earlier steps read the right tiles across
  // the loops; steps before the first read its tile, and a count of 0
  // divides by 1.
  Value unmaskedSteps = arith::MulIOp::create(b, loc, groupSize(), unmasked);
  Value maskedSteps = arith::MulIOp::create(b, loc, groupSize(), masked);
  Value first = tiles;
  Value middle = add(first, unmaskedSteps);
  Value last = add(middle, maskedSteps);
  Value unmaskedDivisor = max(unmasked, t.index(1));
  Value maskedDivisor = max(masked, t.index(1));
  auto stepTile = [&](Value j) -> std::pair<Value, Value> {
    auto remainder = [&](Value x, Value y) {
      return arith::RemUIOp::create(b, loc, x, y).getResult();
    };
    auto quotient = [&](Value x, Value y) {
      return arith::DivUIOp::create(b, loc, x, y).getResult();
    };
    Value zero = t.index(0);
    Value s = max(sub(j, first), zero);
    Value r = max(sub(s, unmaskedSteps), zero);
    Value inUnmasked = arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::slt, s, unmaskedSteps);
    Value k = remainder(r, maskedDivisor);
    Value inBefore =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, k, before);
    Value maskedTile = arith::SelectOp::create(
        b, loc, inBefore, add(lo, k), add(uhi, sub(k, before)));
    Value tile = arith::SelectOp::create(
        b, loc, inUnmasked, add(ulo, remainder(s, unmaskedDivisor)),
        maskedTile);
    Value offset = arith::SelectOp::create(
        b, loc, inUnmasked, quotient(s, unmaskedDivisor),
        quotient(r, maskedDivisor));
    return {tile, add(blk.head, offset)};
  };

  Value scaleValue = t.softmaxScale(scale);
  Value scaleLog2 = exponentFactor(b, t, scaleValue);
  // Each KV warp accumulates its share of dK's and dV's columns.
  Value dK0 = t.splat({tileN, headDim / kvWarps}, f32, 0.0f);
  Value dV0 = t.splat({tileN, headDimV / kvWarps}, f32, 0.0f);
  int64_t left = windowLeft, right = windowRight;

  auto step = [&](Value j, ValueRange carried,
                  bool withMask) -> SmallVector<Value> {
    auto [i, h] = stepTile(j);
    t.copy(arg(kernel, "q"), blk.batch, i, h, qs, {}, {}, false, j);
    t.copy(arg(kernel, "do"), blk.batch, i, h, dos, {}, {}, false, j);
    Value q0 = mul(i, tileM);
    // Each row statistic is read where it is used: read before S^T's mma
    // (to overlap its latency), LSE and D cost 16 more live registers each
    // and spilled more (364 B at d = 128) for no measured gain on the H200.
    TileBuilder::MmaOptions transposedB;
    transposedB.transposeB = true;
    Value sT = t.mma(ks, qs, j, Value(), transposedB);
    Value lse = t.loadVector(arg(kernel, "lse"), {blk.batch, h, q0},
                             tileM / kvWarps, FragLayout::Cols);
    SmallVector<Value> pOperands = {sT,          lse,         scaleLog2, kv0,
                                    q0,          blk.seqlenQ, blk.seqlenK,
                                    shift};
    // The hooks read the scale, the batch and the step's head.
    if (scoreMod || maskMod)
      pOperands.append({scaleValue, blk.batch, h});
    Value pT = t.map(
        pOperands, [&](OpBuilder &b, Location loc, ValueRange x) {
          Value s = x[0], l = x[1], c = x[2], kb = x[3], qb = x[4];
          Value nq = x[5], nk = x[6], sh = x[7];
          Value row = x[x.size() - 2], col = x.back();
          // Rows are keys, columns queries.
          Value key, query;
          auto positions = [&] {
            if (key)
              return;
            key = arith::AddIOp::create(b, loc, kb, row);
            query = arith::AddIOp::create(b, loc, qb, col);
          };
          if (scoreMod || maskMod)
            positions();
          if (scoreMod)
            s = softmaxScore(b, loc, s, x[8], x[9], x[10], query, key);
          Value p = probability(b, loc, s, l, c);
          // A row that sees a key has a finite LSE, unless a score_mod
          // sent all its scores to -inf (masking by score): then the
          // unmasked steps need the -inf test too (exp2(-inf + inf) is
          // NaN).
          if (!withMask)
            return scoreMod ? zeroWhere(b, loc, keptNoKey(b, loc, l), p) : p;
          positions();
          IndexArith ia{b, loc};
          Value out = isEntryOutside(ia, query, key, nq, nk, sh, left, right);
          if (maskMod) {
            Value one = arith::ConstantOp::create(b, loc, b.getBoolAttr(true));
            Value drops = arith::XOrIOp::create(
                b, loc, keeps(b, x[9], x[10], query, key), one);
            out = ia.bitOr(out, drops);
          }
          return zeroWhere(b, loc, ia.bitOr(out, keptNoKey(b, loc, l)), p);
        });
    Value dpT = t.mma(vs, dos, j, Value(), transposedB);
    Value d = t.loadVector(arg(kernel, "d"), {blk.batch, h, q0},
                           tileM / kvWarps, FragLayout::Cols);
    Value dsT = t.map(gradientOperands(pT, dpT, d, scaleValue, sT, blk.batch,
                                       h, q0, kv0),
                      [&](OpBuilder &b, Location loc, ValueRange x) {
                        return scoreGradientBody(b, loc, x, /*keyRows=*/true);
                      });
    // The gradients of the tensors the score_mod reads, where wanted.
    if (readsGradTensors(attention.getScoreMod()))
      t.forEach(gradientOperands(pT, dpT, d, scaleValue, sT, blk.batch, h, q0,
                                 kv0),
                [&](OpBuilder &b, Location loc, ValueRange x) {
                  accumulateReadGradients(b, loc, x, /*keyRows=*/true);
                });
    Value dV, dK;
    TileBuilder::MmaOptions splitN;
    splitN.splitN = kvWarps > 1;
    if (kvWarps == 1) {
      dV = t.mma(t.convert(pT, dtype), dos, j, carried[1], {});
      dK = t.mma(t.convert(dsT, dtype), qs, j, carried[0], {});
      if (!deterministic)
        t.storeFrag(dsT, dss);
    } else {
      t.storeFrag(pT, ps);
      t.storeFrag(dsT, dss);
      dV = t.mma(ps, dos, j, carried[1], splitN);
      dK = t.mma(dss, qs, j, carried[0], splitN);
    }
    if (!deterministic) {
      // dQ = dS K in column pieces (dQPieceColumns), each added before
      // the next is formed: a warp then holds one piece's accumulators at
      // a time beside dK's and dV's (a whole 16 x 128 piece is 64
      // registers a thread). With KV warps a fragment's columns are the
      // warp's share, which attn.store_tile places at kv_warp times its
      // width, so a piece of a share cannot be stated: they form their
      // share whole.
      TileBuilder::MmaOptions transposedA = splitN;
      transposedA.transposeA = true;
      int64_t columns = headDim / kvWarps;
      int64_t piece =
          kvWarps == 1 ? dQPieceColumns(columns, tileM, tileN) : columns;
      for (int64_t begin = 0; begin < columns; begin += piece) {
        if (piece < columns) {
          transposedA.nBegin = begin;
          transposedA.nEnd = begin + piece;
        }
        Value dQ = t.mma(dss, ks, n, Value(), transposedA);
        t.storeTile(dQ, arg(kernel, "dq_accum"),
                    {blk.batch, q0, h, t.index(begin)}, /*accumulate=*/true);
      }
    }
    return {dK, dV};
  };
  // The masked steps first (the loops count down), then the unmasked.
  ValueRange grads = t.loop(middle, last, {dK0, dV0}, /*masked=*/true,
                            [&](Value j, ValueRange carried) {
                              return step(j, carried, true);
                            });
  grads = t.loop(first, middle, grads, /*masked=*/false,
                   [&](Value j, ValueRange carried) {
                     return step(j, carried, false);
                   });
  Value zero = t.index(0);
  t.storeTile(scaledBy(t, grads[0], scaleValue), arg(kernel, "dk"),
              {blk.batch, kv0, blk.kvHead, zero});
  t.storeTile(grads[1], arg(kernel, "dv"), {blk.batch, kv0, blk.kvHead, zero});
}

/// Why the backward cannot serve `forward` yet, or an empty string. Sinks
/// need nothing of the kernels: the forward's LSE counts the sink, so P is
/// right as it is (the sink logits' own gradient, -sum_i exp(sink - LSE_i)
/// D_i, is not computed here).
static std::string explainUnsupported(AttentionOp attention) {
  if (attention.getBlockTable())
    return "paged K and V";
  return "";
}

/// Differentiates `scoreMod` into a scratch block, then drops what was
/// emitted: the error at the op without a rule, or success.
static LogicalResult checkDifferentiable(Region &scoreMod) {
  Block scratch;
  SmallVector<Value> args;
  for (BlockArgument arg : scoreMod.front().getArguments())
    args.push_back(scratch.addArgument(arg.getType(), arg.getLoc()));
  OpBuilder b(scoreMod.getContext());
  b.setInsertionPointToEnd(&scratch);
  Value seed = scratch.addArgument(b.getF32Type(), scoreMod.getLoc());
  LogicalResult result =
      succeeded(differentiateScoreMod(b, scoreMod, args, seed)) ? success()
                                                                 : failure();
  scratch.clear();
  return result;
}

/// The forward's extra tensors named in `names`, into `tensors`: each a
/// float tensor a hook reads. One only the mask_mod reads has gradient 0
/// (a mask is piecewise constant in what it reads): its `<name>_grad` is
/// never added to. Fails with an error at the attention that lists the
/// ones there are.
static LogicalResult findGradTensors(KernelOp forward, AttentionOp attention,
                                     ArrayRef<std::string> names,
                                     SmallVector<Value> &tensors) {
  auto readsIt = [&](Value tensor) {
    return llvm::any_of(
        ArrayRef<Region *>{&attention.getScoreMod(), &attention.getMaskMod(),
                           &attention.getSink()},
        [&](Region *hook) {
          return hookReads(*hook, [&](Value t) { return t == tensor; });
        });
  };
  SmallVector<std::string> readable;
  for (auto [i, extra] : llvm::enumerate(forward.getExtraArgs())) {
    auto type = dyn_cast<MemRefType>(extra.getType());
    if (type && isa<FloatType>(type.getElementType()) && readsIt(extra))
      readable.push_back(forward.getExtraArgName(i).str());
  }
  for (const std::string &name : names) {
    if (!llvm::is_contained(readable, name)) {
      InFlightDiagnostic diag =
          attention.emitError()
          << "no gradient for '" << name
          << "': the backward differentiates the float tensors the hooks "
             "read, ";
      if (readable.empty())
        diag << "and they read none";
      else
        diag << "which are: " << llvm::join(readable, ", ");
      return diag;
    }
    for (auto [i, extra] : llvm::enumerate(forward.getExtraArgs()))
      if (forward.getExtraArgName(i) == name &&
          !llvm::is_contained(tensors, extra))
        tensors.push_back(extra);
  }
  return success();
}

FailureOr<FamilyOp> attn::buildBackwardFamily(KernelOp forward,
                                              const BackwardOptions &options) {
  const BackwardPins &pins = options.pins;
  auto attentions = forward.getBodyBlock().getOps<AttentionOp>();
  if (attentions.empty())
    return forward.emitOpError()
           << "has no attn.attention: the backward is built from a "
              "kernel-level attention";
  AttentionOp attention = *attentions.begin();
  if (std::string what = explainUnsupported(attention); !what.empty())
    return attention.emitError()
           << "the backward does not cover " << what
           << " yet; compile the forward alone (--direction=fwd)";

  // A score_mod without a derivative is refused at its op before any
  // kernel is built.
  if (!attention.getScoreMod().empty() &&
      failed(checkDifferentiable(attention.getScoreMod())))
    return failure();

  BackwardBuilder builder(forward, attention);
  builder.deterministic = options.deterministic;
  if (!attention.getMaskMod().empty()) {
    std::optional<KeyIntervalInfo> interval =
        analyzeKeyInterval(forward, attention.getMaskMod());
    builder.queryTables = interval && !interval->monotone;
    builder.blockMask = !interval || !interval->exact;
    builder.exactTables = builder.queryTables && interval->exact;
  }
  if (failed(findGradTensors(forward, attention, options.tensorGrads,
                             builder.gradTensors)))
    return failure();
  if (options.deterministic && !builder.gradTensors.empty())
    return attention.emitError()
           << "the gradients of captured tensors are added with f32 atomics "
              "in any order, so they are not the same bits every run: drop "
              "deterministic or the tensor gradients";
  OpBuilder b(forward.getContext());
  b.setInsertionPointAfter(forward);
  const ArchInfo &arch = forward.getArch().getInfo();
  SmallVector<BackwardShape> candidates =
      getBackwardShapes(builder.headDim, builder.headDimV,
                        /*plain=*/!builder.scoreMod && !builder.maskMod &&
                            builder.gradTensors.empty());
  SmallVector<BackwardShape> shapes = pinShapes(candidates, pins);
  if (shapes.empty()) {
    InFlightDiagnostic diag =
        attention.emitError()
        << "no backward candidate agrees with the pinned config; pin "
           "tile_m, tile_n and warps together for another shape, or one of:";
    for (const BackwardShape &s : candidates)
      diag << " (tile_m " << s.tileM << ", tile_n " << s.tileN << ", warps "
           << s.warps << ", kv_warps " << s.kvWarps << ", stages " << s.qSlots
           << ")";
    return diag;
  }
  if (pins.slots && *pins.slots < 1)
    return attention.emitError()
           << "the backward's Q and dO slots (stages) must be at least 1, got "
           << *pins.slots;
  // A pinned shape is checked like any config: the main kernel's, and the
  // query-tile kernels' (tile_m by tile_m, one stage).
  auto valid = [&](int64_t tileM, int64_t tileN, int64_t stages,
                   int64_t warps, int64_t kvWarps) {
    return bool(ConfigAttr::getChecked(
        [&] { return attention.emitError() << "invalid backward config: "; },
        b.getContext(), tileM, tileN, stages, warps, false, kvWarps, false));
  };
  // The query-tile kernels (preprocess, convert) have row warps only.
  for (const BackwardShape &s : shapes) {
    if (!valid(s.tileM, s.tileN, s.qSlots, s.warps, s.kvWarps) ||
        !valid(s.tileM, s.tileM, 1, s.warps / s.kvWarps, 1))
      return failure();
    if (!s.splitsWhole(builder.headDim, builder.headDimV))
      return attention.emitError()
             << "invalid backward config: kv_warps = " << s.kvWarps
             << " splits tile_m = " << s.tileM << " (the queries of a step) "
             << "and the head dims " << builder.headDim << " and "
             << builder.headDimV
             << " into shares that must each be a whole multiple of 16 (two "
                "mma n-tiles); pin kv_warps = 1, or a tile_m that splits so";
  }

  // The main kernel is the one whose buffers decide.
  auto [main, chosenIndex] = buildFirstThatFits<BackwardShape>(
      shapes, arch.smemPerBlock, [&](const BackwardShape &shape) {
        ConfigAttr config = ConfigAttr::get(
            b.getContext(), shape.tileM, shape.tileN,
            /*stages=*/shape.qSlots, shape.warps,
            /*q_in_regs=*/false, shape.kvWarps, /*pack_gqa=*/false);
        OpBuilder::InsertionGuard guard(b);
        KernelOp kernel =
            builder.createKernel(b, "_main", config, /*keyGrid=*/true);
        OpBuilder inner(b.getContext());
        builder.buildMain(inner, kernel, shape);
        return kernel;
      });
  const BackwardShape &chosen = shapes[chosenIndex];

  // The query-tile kernels run the main kernel's row warps.
  int64_t rowWarps = chosen.warps / chosen.kvWarps;
  ConfigAttr rowsConfig =
      ConfigAttr::get(b.getContext(), chosen.tileM, chosen.tileM, 1,
                      rowWarps, false);
  // A preprocess that writes the KV-tile tables finds them with the main
  // kernel's tiles: its config says tile_n too (its own tiles are tile_m
  // rows).
  ConfigAttr tablesConfig =
      ConfigAttr::get(b.getContext(), chosen.tileM, chosen.tileN, 1,
                      rowWarps, false);
  b.setInsertionPoint(main);
  KernelOp preprocess =
      builder.createKernel(b, "_preprocess",
                           builder.queryTables ? tablesConfig : rowsConfig,
                           false);
  b.setInsertionPointAfter(main);
  OpBuilder inner(b.getContext());
  builder.buildPreprocess(inner, preprocess, chosen.tileM, chosen.tileN);
  // The last kernel: dQ's convert, or in the deterministic family the dQ
  // kernel (its first shape that fits, as for the main kernel).
  KernelOp last;
  if (!builder.deterministic) {
    last = builder.createKernel(b, "_convert", rowsConfig, false);
    builder.buildConvert(inner, last, chosen.tileM);
  } else {
    SmallVector<DQShape> dqShapes = getDQShapes();
    last = buildFirstThatFits<DQShape>(
               dqShapes, arch.smemPerBlock,
               [&](const DQShape &shape) {
                 OpBuilder::InsertionGuard guard(b);
                 KernelOp kernel = builder.createKernel(
                     b, "_dq",
                     ConfigAttr::get(b.getContext(), shape.tileM, shape.tileN,
                                     1, shape.warps, false),
                     false);
                 builder.buildDQ(inner, kernel, shape);
                 return kernel;
               })
               .first;
  }

  b.setInsertionPointAfter(last);
  auto symbol = [&](KernelOp k) {
    return cast<Attribute>(FlatSymbolRefAttr::get(k.getSymNameAttr()));
  };
  auto family = FamilyOp::create(
      b, builder.loc,
      b.getStringAttr(builder.familyName()),
      b.getArrayAttr({symbol(preprocess), symbol(main), symbol(last)}));
  return family;
}

namespace {
struct AttnBuildBackwardPass
    : public attn::impl::AttnBuildBackwardBase<AttnBuildBackwardPass> {
  using AttnBuildBackwardBase::AttnBuildBackwardBase;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<KernelOp> kernels = llvm::to_vector(module.getOps<KernelOp>());
    if (kernels.size() != 1) {
      module.emitError() << "attn-build-backward takes a module of one "
                            "kernel-level attn.kernel; it has "
                         << kernels.size();
      return signalPassFailure();
    }
    BackwardOptions options;
    options.deterministic = deterministic;
    if (kvWarps > 0)
      options.pins.kvWarps = kvWarps;
    options.tensorGrads.assign(tensorGrads.begin(), tensorGrads.end());
    if (failed(buildBackwardFamily(kernels.front(), options)))
      return signalPassFailure();
    kernels.front().erase();
  }
};
} // namespace
