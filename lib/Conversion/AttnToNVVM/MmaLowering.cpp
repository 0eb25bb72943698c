//===- MmaLowering.cpp - ldmatrix and mma.sync ----------------------------===//
//
// The instruction comes from the mma table (Attn/Utils/MmaFragments.h), by
// the chip and the operand and accumulator types; the products here are
// its 16-bit m16n8k16 entries.
//
// Operand addressing follows the PTX ISA's ldmatrix description: lanes
// 8q..8q+7 give the row addresses of matrix q of an .x4 load, and register q
// of every thread receives matrix q in the mma fragment layout. The swizzle
// of swizzledOffset() keeps each 8-row phase free of bank conflicts, and
// SwizzledTileAccess turns each lane's addresses into a few base registers
// plus immediates.
//
//===----------------------------------------------------------------------===//

#include "LoweringUtils.h"

#include "flashtile/Dialect/Attn/Utils/MmaFragments.h"

#include "mlir/Conversion/LLVMCommon/Pattern.h"
#include "mlir/Conversion/LLVMCommon/TypeConverter.h"

using namespace mlir;
using namespace flashtile;
using namespace flashtile::attn;
using namespace flashtile::attn::lowering;

/// ldmatrix.sync.aligned.m8n8.x4[.trans].b16 at `address`: four i32.
static SmallVector<Value, 4> loadMatrixX4(Emitter &e, Value address,
                                          bool transpose) {
  OpBuilder &b = e.builder();
  MLIRContext *ctx = b.getContext();
  Type i32 = b.getI32Type();
  auto resultType = LLVM::LLVMStructType::getLiteral(ctx, {i32, i32, i32, i32});
  Value result = NVVM::LdMatrixOp::create(
      b, e.location(), resultType, address, b.getI32IntegerAttr(4),
      NVVM::MMALayoutAttr::get(ctx, transpose ? NVVM::MMALayout::col
                                              : NVVM::MMALayout::row),
      NVVM::LdStMatrixShapeAttr::get(ctx, 8, 8),
      NVVM::LdStMatrixEltTypeAttr::get(ctx, NVVM::LdStMatrixEltType::B16));
  SmallVector<Value, 4> regs;
  for (int64_t r = 0; r < 4; ++r)
    regs.push_back(e.extract(result, r));
  return regs;
}

/// The mma.sync of the kernel `op` belongs to for `dtype` operands into
/// f32 accumulators. The tile verifiers admit only operand types the
/// sm80 path's chips multiply, so there always is one.
static MmaInstruction getMma(Operation *op, Type dtype) {
  std::optional<MmaInstruction> instr =
      selectMma(getKernelArch(op).getInfo(), dtype, dtype,
                Float32Type::get(op->getContext()));
  assert(instr && "the tile verifiers admit only multipliable types");
  return *instr;
}

/// d = a * b + c for one tile of `instr`: `a` four packed i32, `b` two, `c`
/// four f32. f16 operands go as vector<2xf16>; the others as i32 with
/// their PTX type given explicitly (nvgpu.mma.sync has no bf16).
static SmallVector<Value, 4> mmaSync(Emitter &e, const MmaInstruction &instr,
                                     ArrayRef<Value> a, ArrayRef<Value> b,
                                     ArrayRef<Value> c) {
  OpBuilder &builder = e.builder();
  MLIRContext *ctx = builder.getContext();
  Type f32 = builder.getF32Type();
  SmallVector<Value, 4> aOps(a), bOps(b);
  std::optional<NVVM::MMATypes> aType = NVVM::symbolizeMMATypes(instr.aType);
  std::optional<NVVM::MMATypes> bType = NVVM::symbolizeMMATypes(instr.bType);
  assert(aType && bType && "the mma table names NVVM's types");
  if (instr.aType == "f16") {
    auto half2 = VectorType::get({2}, builder.getF16Type());
    for (Value &v : aOps)
      v = LLVM::BitcastOp::create(builder, e.location(), half2, v);
    for (Value &v : bOps)
      v = LLVM::BitcastOp::create(builder, e.location(), half2, v);
  }
  auto resultType = LLVM::LLVMStructType::getLiteral(ctx, {f32, f32, f32, f32});
  Value d = NVVM::MmaOp::create(
      builder, e.location(), resultType, aOps, bOps, c,
      /*shape=*/
      {int(instr.shape.m), int(instr.shape.n), int(instr.shape.k)},
      /*b1Op=*/std::nullopt,
      /*intOverflow=*/std::nullopt,
      std::array<NVVM::MMATypes, 2>{*aType, *bType},
      std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row,
                                     NVVM::MMALayout::col});
  SmallVector<Value, 4> out;
  for (int64_t r = 0; r < 4; ++r)
    out.push_back(e.extract(d, r));
  return out;
}

/// acc(i, j) += a * (b0, b1) for one mma tile of a per-thread accumulator
/// array with `nTiles` n-tiles.
static void accumulate(Emitter &e, const MmaInstruction &instr,
                       ArrayRef<Value> a, Value b0, Value b1,
                       MutableArrayRef<Value> acc, int64_t i, int64_t j,
                       int64_t nTiles) {
  SmallVector<Value, 4> c;
  for (int64_t r = 0; r < 4; ++r)
    c.push_back(acc[FragmentLayout::accIndex(i, j, r, nTiles)]);
  SmallVector<Value, 4> d = mmaSync(e, instr, a, {b0, b1}, c);
  for (int64_t r = 0; r < 4; ++r)
    acc[FragmentLayout::accIndex(i, j, r, nTiles)] = d[r];
}


/// The lane's view of an A operand (Q) in shared memory: lanes 0-15 address
/// rows 0-15 of an m-tile at its k-tile's first 8 columns, lanes 16-31 the
/// same rows at the next 8.
static SwizzledTileAccess accessA(Emitter &e, ThreadCoords &thread,
                                  Value tileBase, Value warpRow, int64_t cols) {
  return SwizzledTileAccess(e, tileBase,
                            e.add(warpRow, e.bitAnd(thread.lane, 15)),
                            e.lshr(thread.lane, 4), cols);
}

/// The A fragment (four i32) of m-tile `i`, k-tile `k`.
static SmallVector<Value, 4> loadAFragment(Emitter &e, SwizzledTileAccess &a,
                                           int64_t i, int64_t k) {
  return loadMatrixX4(e, a.address(16 * i, 2 * k), /*transpose=*/false);
}

namespace {

/// Q into registers: one ldmatrix.x4 per (m-tile, k-tile).
struct LoadFragLowering : public AttnOpLoweringPattern<LoadFragOp> {
  using AttnOpLoweringPattern::AttnOpLoweringPattern;

  LogicalResult lower(LoadFragOp op, OpAdaptor adaptor,
                      ConversionPatternRewriter &rewriter,
                      TileOpContext &ctx) const override {
    FragType type = op.getResult().getType();
    const FragmentLayout &layout = ctx.layout;
    int64_t rows = type.getDimSize(0), cols = type.getDimSize(1);
    int64_t mTiles = layout.mTiles(rows), kTiles = cols / 16;

    Emitter &e = ctx.e;
    ThreadCoords &thread = ctx.thread();
    Value warpRow = e.mul(thread.warp, layout.rowsPerWarp(rows));
    SwizzledTileAccess q = accessA(e, thread, adaptor.getSrc(), warpRow, cols);
    SmallVector<Value> values(layout.numValues(type));
    for (int64_t i = 0; i < mTiles; ++i)
      for (int64_t k = 0; k < kTiles; ++k) {
        SmallVector<Value, 4> regs = loadAFragment(e, q, i, k);
        for (int64_t r = 0; r < 4; ++r)
          values[FragmentLayout::aIndex(i, k, r, kTiles)] = regs[r];
      }
    rewriter.replaceOp(op, e.pack(layout.convertType(type), values));
    return success();
  }
};

/// S = Q K^T. K rows are the mma's B columns, so K loads without .trans: one
/// ldmatrix.x4 gives the B fragments of two n-tiles for one k-tile.
struct MmaQKLowering : public AttnOpLoweringPattern<MmaQKOp> {
  using AttnOpLoweringPattern::AttnOpLoweringPattern;

  LogicalResult lower(MmaQKOp op, OpAdaptor adaptor,
                      ConversionPatternRewriter &rewriter,
                      TileOpContext &ctx) const override {
    const FragmentLayout &layout = ctx.layout;
    FragType sType = op.getS().getType();
    MemRefType kType = op.getK().getType();
    MmaInstruction mma = getMma(op, kType.getElementType());
    int64_t rows = sType.getDimSize(0), keys = sType.getDimSize(1);
    int64_t headDim = kType.getDimSize(2);
    int64_t mTiles = layout.mTiles(rows), nTiles = keys / 8,
            kTiles = headDim / 16;

    Emitter &e = ctx.e;
    ThreadCoords &thread = ctx.thread();
    Value warpRow = e.mul(thread.warp, layout.rowsPerWarp(rows));
    Value kBase = getSlotAddress(e, adaptor.getK(), kType, adaptor.getTile());
    bool qInRegs = isa<FragType>(op.getQ().getType());
    SmallVector<Value> qRegs;
    if (qInRegs)
      qRegs = e.unpack(adaptor.getQ());

    SmallVector<Value> acc(layout.numValues(sType), e.f32(0.0f));
    // Lanes 8q..8q+7 address matrix q: K rows 0-7 at chunk 0, rows 0-7 at
    // chunk 1, rows 8-15 at chunk 0, rows 8-15 at chunk 1 of a 16x16 block,
    // i.e. the B fragments (b0, b1) of two n-tiles.
    // A KV warp reads its slice of the tile: `keys` rows from kvWarp * keys.
    SwizzledTileAccess kAccess(
        e, kBase,
        e.add(e.add(e.bitAnd(thread.lane, 7), e.shl(e.lshr(thread.lane, 4), 3)),
              e.mul(thread.kvWarp, keys)),
        e.bitAnd(e.lshr(thread.lane, 3), 1), headDim);
    std::optional<SwizzledTileAccess> qAccess;
    if (!qInRegs)
      qAccess.emplace(accessA(e, thread, adaptor.getQ(), warpRow, headDim));
    auto [headBegin, headEnd] = op.getHeadRange();
    for (int64_t k = headBegin / 16; k < headEnd / 16; ++k) {
      SmallVector<SmallVector<Value, 4>> a(mTiles);
      for (int64_t i = 0; i < mTiles; ++i) {
        if (qInRegs) {
          for (int64_t r = 0; r < 4; ++r)
            a[i].push_back(qRegs[FragmentLayout::aIndex(i, k, r, kTiles)]);
        } else {
          a[i] = loadAFragment(e, *qAccess, i, k);
        }
      }
      for (int64_t np = 0; np < nTiles / 2; ++np) {
        SmallVector<Value, 4> b = loadMatrixX4(
            e, kAccess.address(16 * np, 2 * k), /*transpose=*/false);
        for (int64_t half = 0; half < 2; ++half)
          for (int64_t i = 0; i < mTiles; ++i)
            accumulate(e, mma, a[i], b[2 * half], b[2 * half + 1], acc, i,
                       2 * np + half, nTiles);
      }
    }
    rewriter.replaceOp(op, e.pack(layout.convertType(sType), acc));
    return success();
  }
};

/// acc += P V. V is stored [key][dim], so the B operand (k = key, n = dim)
/// loads with ldmatrix .trans; P is already an A fragment in registers.
struct MmaPVLowering : public AttnOpLoweringPattern<MmaPVOp> {
  using AttnOpLoweringPattern::AttnOpLoweringPattern;

  LogicalResult lower(MmaPVOp op, OpAdaptor adaptor,
                      ConversionPatternRewriter &rewriter,
                      TileOpContext &ctx) const override {
    const FragmentLayout &layout = ctx.layout;
    FragType pType = op.getP().getType();
    FragType accType = op.getAcc().getType();
    MemRefType vType = op.getV().getType();
    MmaInstruction mma = getMma(op, vType.getElementType());
    int64_t rows = pType.getDimSize(0), keys = pType.getDimSize(1);
    int64_t headDimV = vType.getDimSize(2);
    int64_t mTiles = layout.mTiles(rows), kTiles = keys / 16,
            nTiles = headDimV / 8;

    Emitter &e = ctx.e;
    ThreadCoords &thread = ctx.thread();
    Value vBase = getSlotAddress(e, adaptor.getV(), vType, adaptor.getTile());
    SmallVector<Value> p = e.unpack(adaptor.getP());
    SmallVector<Value> acc = e.unpack(adaptor.getAcc());
    // Lanes 8q..8q+7 address matrix q: V rows (keys) 0-7 at chunk 0, rows
    // 8-15 at chunk 0, rows 0-7 at chunk 1, rows 8-15 at chunk 1; .trans
    // makes them the B fragments (b0, b1) of two dim-tiles.
    // A KV warp multiplies by its slice of V: `keys` rows from kvWarp * keys.
    SwizzledTileAccess vAccess(
        e, vBase,
        e.add(e.add(e.bitAnd(thread.lane, 7),
                    e.shl(e.bitAnd(e.lshr(thread.lane, 3), 1), 3)),
              e.mul(thread.kvWarp, keys)),
        e.lshr(thread.lane, 4), headDimV);
    for (int64_t k = 0; k < kTiles; ++k) {
      for (int64_t np = 0; np < nTiles / 2; ++np) {
        SmallVector<Value, 4> b = loadMatrixX4(
            e, vAccess.address(16 * k, 2 * np), /*transpose=*/true);
        for (int64_t half = 0; half < 2; ++half)
          for (int64_t i = 0; i < mTiles; ++i) {
            ArrayRef<Value> a(&p[FragmentLayout::aIndex(i, k, 0, kTiles)], 4);
            accumulate(e, mma, a, b[2 * half], b[2 * half + 1], acc, i,
                       2 * np + half, nTiles);
          }
      }
    }
    rewriter.replaceOp(op, e.pack(layout.convertType(accType), acc));
    return success();
  }
};

} // namespace

void lowering::populateMmaPatterns(LLVMTypeConverter &converter,
                                 RewritePatternSet &patterns) {
  patterns.add<LoadFragLowering, MmaQKLowering, MmaPVLowering>(converter);
}
