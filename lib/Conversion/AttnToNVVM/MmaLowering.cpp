//===- MmaLowering.cpp - ldmatrix and mma.sync ----------------------------===//
//
// attn.mma and attn.load_frag. The instruction comes from the mma table
// (Attn/Utils/MmaFragments.h), by the chip and the operand and accumulator
// types: m16n8k16 for 16-bit operands, m16n8k32 for 8-bit ones.
//
// Operand addressing follows the PTX ISA's ldmatrix description: lanes
// 8q..8q+7 give the row addresses of matrix q of an .x4 load, and register q
// of every thread receives matrix q. Which 8 x 8 b16 block of the stored
// tile matrix q is comes from the fragment tables (each register's
// origin), so the lane maps below are derived, not written out; an 8-bit
// operand loads the same way, as pairs of bytes, with K contiguous. The
// swizzle of swizzledOffset() keeps each 8-row phase free of bank
// conflicts, and SwizzledTileAccess turns each lane's addresses into a few
// base registers plus immediates.
//
//===----------------------------------------------------------------------===//

#include "Patterns.h"
#include "SharedAccess.h"
#include "TileOpContext.h"

#include "flashtile/Dialect/Attn/Utils/MmaFragments.h"
#include "flashtile/Target/PTX.h"

#include "mlir/Conversion/LLVMCommon/Pattern.h"
#include "mlir/Conversion/LLVMCommon/TypeConverter.h"
#include "llvm/Support/MathExtras.h"

#include <climits>

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

/// The mma.sync of the kernel `op` belongs to for `a` x `b` operands into
/// `acc`. The verifier of attn.mma admits only what the table has.
static MmaInstruction getMma(Operation *op, Type a, Type b, Type acc) {
  std::optional<MmaInstruction> instr =
      selectMma(getKernelArch(op).getInfo(), a, b, acc);
  assert(instr && "attn.mma's verifier admits only multipliable types");
  return *instr;
}

/// Whether nvvm.mma.sync takes `instr`: MLIR 22's verifier has no 8-bit
/// float types for it (the PTX ISA has them from sm_89), so e4m3 / e5m2
/// products are emitted as the PTX instruction itself.
static bool nvvmHasMma(const MmaInstruction &instr) {
  return instr.aType != "e4m3" && instr.aType != "e5m2";
}

/// d = a * b + c for one tile of `instr`: `a` four packed i32, `b` two, `c`
/// the accumulator's values (four f32 or i32, or two packed f16 pairs as
/// i32). f16 goes to mma.sync as vector<2xf16>; the other operand types as
/// i32 with their PTX type given explicitly (nvgpu.mma.sync has no bf16).
static SmallVector<Value, 4> mmaSync(Emitter &e, const MmaInstruction &instr,
                                     ArrayRef<Value> a, ArrayRef<Value> b,
                                     ArrayRef<Value> c) {
  OpBuilder &builder = e.builder();
  MLIRContext *ctx = builder.getContext();
  auto half2 = VectorType::get({2}, builder.getF16Type());
  SmallVector<Value, 4> aOps(a), bOps(b), cOps(c);
  std::optional<NVVM::MMATypes> aType = NVVM::symbolizeMMATypes(instr.aType);
  std::optional<NVVM::MMATypes> bType = NVVM::symbolizeMMATypes(instr.bType);
  assert(aType && bType && "the mma table names NVVM's types");
  if (instr.aType == "f16") {
    for (Value &v : aOps)
      v = LLVM::BitcastOp::create(builder, e.location(), half2, v);
    for (Value &v : bOps)
      v = LLVM::BitcastOp::create(builder, e.location(), half2, v);
  }
  bool f16Acc = instr.accType == "f16";
  if (f16Acc)
    for (Value &v : cOps)
      v = LLVM::BitcastOp::create(builder, e.location(), half2, v);
  Type accElement = f16Acc ? Type(half2)
                    : instr.accType == "s32" ? Type(builder.getI32Type())
                                             : Type(builder.getF32Type());
  SmallVector<Type, 4> fields(cOps.size(), accElement);
  auto resultType = LLVM::LLVMStructType::getLiteral(ctx, fields);
  if (!nvvmHasMma(instr)) {
    // mma.sync.aligned.<shape>.row.col.<d>.<a>.<b>.<c> {d}, {a}, {b}, {c}
    // with the accumulator tied to d.
    std::string ptx = ("mma.sync.aligned.m" + std::to_string(instr.shape.m) +
                       "n" + std::to_string(instr.shape.n) + "k" +
                       std::to_string(instr.shape.k) + ".row.col." +
                       instr.accType + "." + instr.aType + "." + instr.bType +
                       "." + instr.accType)
                          .str();
    std::string constraints;
    int64_t next = 0;
    auto list = [&](size_t n, StringRef kind, bool output) {
      ptx += " {";
      for (size_t i = 0; i < n; ++i) {
        ptx += (i ? ", $" : "$") + std::to_string(next++);
        constraints += (constraints.empty() ? "" : ",") +
                       std::string(output ? "=" : "") + kind.str();
      }
      ptx += "}";
    };
    StringRef accKind = instr.accType == "f32" ? "f" : "r";
    list(cOps.size(), accKind, /*output=*/true);
    ptx += ",";
    list(aOps.size(), "r", false);
    ptx += ",";
    list(bOps.size(), "r", false);
    ptx += ",";
    // The accumulator inputs are tied to the outputs: "0", "1", ...
    ptx += " {";
    for (size_t i = 0; i < cOps.size(); ++i) {
      ptx += (i ? ", $" : "$") + std::to_string(next++);
      constraints += "," + std::to_string(i);
    }
    ptx += "};";
    SmallVector<Value> operands(aOps.begin(), aOps.end());
    operands.append(bOps.begin(), bOps.end());
    operands.append(cOps.begin(), cOps.end());
    Value d = LLVM::InlineAsmOp::create(
                  builder, e.location(), resultType, operands, ptx,
                  constraints, /*has_side_effects=*/false,
                  /*is_align_stack=*/false, LLVM::TailCallKind::None,
                  /*asm_dialect=*/LLVM::AsmDialectAttr(),
                  /*operand_attrs=*/ArrayAttr())
                  .getResult(0);
    SmallVector<Value, 4> out;
    for (int64_t r = 0, n = cOps.size(); r < n; ++r)
      out.push_back(e.extract(d, r));
    return out;
  }
  std::optional<NVVM::MMAIntOverflow> overflow;
  if (instr.aType == "s8")
    overflow = NVVM::MMAIntOverflow::wrapped;
  Value d = NVVM::MmaOp::create(
      builder, e.location(), resultType, aOps, bOps, cOps,
      /*shape=*/
      {int(instr.shape.m), int(instr.shape.n), int(instr.shape.k)},
      /*b1Op=*/std::nullopt, overflow,
      std::array<NVVM::MMATypes, 2>{*aType, *bType},
      std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row,
                                     NVVM::MMALayout::col});
  SmallVector<Value, 4> out;
  for (int64_t r = 0, n = cOps.size(); r < n; ++r) {
    Value v = e.extract(d, r);
    if (f16Acc)
      v = LLVM::BitcastOp::create(builder, e.location(),
                                  builder.getI32Type(), v);
    out.push_back(v);
  }
  return out;
}

/// acc(i, j) += a * (b0, b1) for one mma tile of a per-thread accumulator
/// array with `nTiles` n-tiles of `perTile` values.
static void accumulate(Emitter &e, const MmaInstruction &instr,
                       ArrayRef<Value> a, Value b0, Value b1,
                       MutableArrayRef<Value> acc, int64_t i, int64_t j,
                       int64_t nTiles, int64_t perTile) {
  SmallVector<Value, 4> c;
  for (int64_t r = 0; r < perTile; ++r)
    c.push_back(acc[FragmentLayout::accIndex(i, j, r, nTiles, perTile)]);
  SmallVector<Value, 4> d = mmaSync(e, instr, a, {b0, b1}, c);
  for (int64_t r = 0; r < perTile; ++r)
    acc[FragmentLayout::accIndex(i, j, r, nTiles, perTile)] = d[r];
}

namespace {

/// Bits of one 16-byte chunk, the unit the swizzle and ldmatrix rows
/// address in.
constexpr int64_t kChunkBits = 8 * kCopyChunkBytes;

/// Where the four 8 x 8 b16 blocks of one ldmatrix.x4 lie in the stored
/// tile, as (row, 16-byte chunk) offsets of block q = 2 q1 + q0 from block
/// 0: `bit0` is the offset q0 adds, `bit1` the one q1 adds. Every operand's
/// x4 covers a 16 x 16 b16 square, so the offsets are powers of two.
struct LdmatrixBlocks {
  std::pair<int64_t, int64_t> bit0, bit1;
};

/// The blocks of an A tile (16 x k) of `shape` with `bits`-bit elements:
/// block q is register q.
/// Stored [M][K] the block's rows are A's rows; stored [K][M] (`transposed`,
/// loaded with .trans) its columns.
LdmatrixBlocks getABlocks(MmaShape shape, int64_t bits, bool transposed) {
  MmaFragment a(shape, MmaOperand::A, bits);
  int64_t chunk = kChunkBits / bits;
  auto at = [&](int64_t q) -> std::pair<int64_t, int64_t> {
    auto [row, col] = a.getRegisterOrigin(q);
    return transposed ? std::make_pair(col, row / chunk)
                      : std::make_pair(row, col / chunk);
  };
  assert(at(0) == std::make_pair(int64_t(0), int64_t(0)) &&
         at(3) == std::make_pair(at(1).first + at(2).first,
                                 at(1).second + at(2).second) &&
         "an A tile is two by two blocks");
  return {at(1), at(2)};
}

/// The blocks of the B fragments of two adjacent n-tiles: block q is
/// register q % 2 of n-tile q / 2. Stored [N][K] (`transposed`: K's rows in
/// Q K^T) the block's rows are B's columns; stored [K][N] (loaded with
/// .trans) its rows.
LdmatrixBlocks getBBlocks(const MmaInstruction &instr, bool transposed) {
  MmaFragment b(instr.shape, MmaOperand::B, instr.bBits);
  assert(b.getRegistersPerLane() == 2 && "B is two registers per n-tile");
  int64_t chunk = kChunkBits / instr.bBits;
  auto at = [&](int64_t q) -> std::pair<int64_t, int64_t> {
    auto [row, col] = b.getRegisterOrigin(q % 2);
    col += instr.shape.n * (q / 2);
    return transposed ? std::make_pair(col, row / chunk)
                      : std::make_pair(row, col / chunk);
  };
  return {at(1), at(2)};
}

/// `bit`'s share of a lane's offset: ((lane >> shift) & mask) * delta, as
/// a shift (delta is 0 or a power of two).
Value laneBitOffset(Emitter &e, Value lane, int64_t shift, bool masked,
                    int64_t delta) {
  if (delta == 0)
    return Value();
  assert(llvm::isPowerOf2_64(delta) && "block offsets are powers of two");
  Value bit = e.lshr(lane, shift);
  if (masked)
    bit = e.bitAnd(bit, 1);
  int64_t log = llvm::Log2_64(delta);
  return log ? e.shl(bit, log) : bit;
}

/// A lane's view of one operand's ldmatrix.x4 loads: lane L gives row L % 8
/// of block L / 8, from (rowBase, chunkBase), the lane's origin in
/// `base`'s stored tile of `b16Cols` 16-bit columns per row. With
/// `fusedRows`, blocks 0 and 1 are rows 0-7 and 8-15 and lane L's row is
/// written as one mask, rowBase + L % 16 (the form A's loads have had since
/// the forward's kernels were pinned byte for byte; LLVM emits the two
/// forms differently).
SwizzledTileAccess accessBlocks(Emitter &e, Value lane, Value base,
                                const LdmatrixBlocks &blocks,
                                llvm::function_ref<Value()> rowBase,
                                Value chunkBase, int64_t b16Cols,
                                bool fusedRows = false) {
  Value row, chunk;
  auto addTo = [&](Value &sum, Value term) {
    if (term)
      sum = sum ? e.add(sum, term) : term;
  };
  // The chunk first, then the row (the order the pinned kernels have).
  addTo(chunk, laneBitOffset(e, lane, 4, false, blocks.bit1.second));
  addTo(chunk, laneBitOffset(e, lane, 3, true, blocks.bit0.second));
  addTo(chunk, chunkBase);
  if (fusedRows) {
    assert(blocks.bit0.first == 8 && blocks.bit1.first == 0 &&
           "lanes 0-15 give rows 0-15");
    if (rowBase)
      addTo(row, rowBase());
    addTo(row, e.bitAnd(lane, 15));
  } else {
    // The base, the block offsets, then lane % 8 (again the pinned order).
    Value base = rowBase ? rowBase() : Value();
    Value high = laneBitOffset(e, lane, 4, false, blocks.bit1.first);
    Value low = laneBitOffset(e, lane, 3, true, blocks.bit0.first);
    row = e.bitAnd(lane, 7);
    addTo(row, high);
    addTo(row, low);
    addTo(row, base);
  }
  if (!chunk)
    chunk = e.i32(0);
  return SwizzledTileAccess(e, base, row, chunk, b16Cols);
}

/// Q (or any A tile) into registers: one ldmatrix.x4 per (m-tile, k-tile).
struct LoadFragLowering : public AttnOpLoweringPattern<LoadFragOp> {
  using AttnOpLoweringPattern::AttnOpLoweringPattern;

  LogicalResult lower(LoadFragOp op, OpAdaptor adaptor,
                      ConversionPatternRewriter &rewriter,
                      TileOpContext &ctx) const override {
    FragType type = op.getResult().getType();
    MemRefType srcType = op.getSrc().getType();
    const FragmentLayout &layout = ctx.layout;
    int64_t rows = type.getDimSize(0), cols = type.getDimSize(1);
    int64_t kStep = FragmentLayout::aTileCols(type);
    int64_t mTiles = layout.mTiles(rows), kTiles = cols / kStep;
    int64_t bits = srcType.getElementTypeBitWidth();
    std::optional<MmaShape> shape = getOperandShape(bits);
    assert(shape && shape->k == kStep && "A fragments hold mma types");

    Emitter &e = ctx.e;
    ThreadCoords &thread = ctx.thread();
    Value warpRow = e.mul(thread.warp, layout.rowsPerWarp(rows));
    SwizzledTileAccess a =
        accessBlocks(e, thread.lane, adaptor.getSrc(),
                     getABlocks(*shape, bits, /*transposed=*/false),
                     [&] { return warpRow; }, Value(), getB16Columns(srcType),
                     /*fusedRows=*/true);
    int64_t kChunks = kStep * bits / kChunkBits;
    SmallVector<Value> values(layout.numValues(type));
    for (int64_t i = 0; i < mTiles; ++i)
      for (int64_t k = 0; k < kTiles; ++k) {
        SmallVector<Value, 4> regs = loadMatrixX4(
            e, a.address(16 * i, kChunks * k), /*transpose=*/false);
        for (int64_t r = 0; r < 4; ++r)
          values[FragmentLayout::aIndex(i, k, r, kTiles)] = regs[r];
      }
    rewriter.replaceOp(op, e.pack(layout.convertType(type), values));
    return success();
  }
};

/// D = A B (+ C). Per k-step: A's fragments of every m-tile (from
/// registers, or one ldmatrix.x4 each), then per pair of n-tiles one
/// ldmatrix.x4 of B (its fragments for both) and one mma per (n-tile,
/// m-tile). A transposed operand loads with .trans.
struct MmaLowering : public AttnOpLoweringPattern<MmaOp> {
  using AttnOpLoweringPattern::AttnOpLoweringPattern;

  LogicalResult lower(MmaOp op, OpAdaptor adaptor,
                      ConversionPatternRewriter &rewriter,
                      TileOpContext &ctx) const override {
    const FragmentLayout &layout = ctx.layout;
    FragType dType = op.getD().getType();
    MemRefType bType = op.getB().getType();
    MmaInstruction mma = getMma(op, op.getAElementType(),
                                bType.getElementType(),
                                dType.getElementType());
    requirePtxVersion(rewriter, op, mma.minPtxVersion);
    // M and N from the result: the kernel op (and its config's KV warps)
    // may already be converted.
    int64_t m = dType.getDimSize(0), n = dType.getDimSize(1), k = op.getK();
    int64_t mTiles = layout.mTiles(m), nTiles = n / mma.shape.n,
            kTiles = k / mma.shape.k;
    int64_t perTile = FragmentLayout::accValuesPerTile(dType);
    // 16-byte chunks one k-step spans; 16-row (b16) blocks of N or M.
    int64_t kChunks = mma.shape.k * mma.aBits / kChunkBits;
    bool aInRegs = isa<FragType>(op.getA().getType());
    bool transposeA = op.getTransposeA(), transposeB = op.getTransposeB();

    Emitter &e = ctx.e;
    ThreadCoords &thread = ctx.thread();
    Value warpRow;
    if (!aInRegs)
      warpRow = e.mul(thread.warp, layout.rowsPerWarp(m));
    Value bBase = getSlotAddress(e, adaptor.getB(), bType, adaptor.getBTile());
    SmallVector<Value> aRegs;
    if (aInRegs)
      aRegs = e.unpack(adaptor.getA());
    SmallVector<Value> acc;
    if (op.getAcc())
      acc = e.unpack(adaptor.getAcc());
    else
      acc.assign(layout.numValues(dType),
                 dType.getElementType().isF32() ? e.f32(0.0f) : e.i32(0));

    // A KV warp reads its slice of B's buffer rows (N with transpose_b,
    // else K): rows from kvWarp * (the op's extent along them); with
    // split_n its slice of the columns (N), from chunk kvWarp * N's chunks.
    bool splitN = op.getSplitN();
    // D may be a slice [nBegin, nBegin + n) of the warp's share of N
    // (fullN columns): the shares' offsets count the whole of it. The
    // share comes from the context's config, not the op's (its kernel may
    // already be converted).
    int64_t fullN =
        MmaOp::getProductShape(op.getA().getType(), bType, transposeA,
                               transposeB, ctx.config.getKvWarps(), splitN)[2];
    int64_t nBegin = op.getNBegin();
    auto bRows = [&] {
      return e.mul(thread.kvWarp, transposeB ? fullN : k);
    };
    Value bChunk =
        splitN ? e.mul(thread.kvWarp, fullN * mma.aBits / kChunkBits)
               : Value();
    SwizzledTileAccess bAccess = accessBlocks(
        e, thread.lane, bBase, getBBlocks(mma, transposeB),
        splitN ? llvm::function_ref<Value()>() : bRows, bChunk,
        getB16Columns(bType));
    std::optional<SwizzledTileAccess> aAccess;
    if (!aInRegs) {
      auto aType = cast<MemRefType>(op.getA().getType());
      Value aBase = adaptor.getA();
      if (op.getATile())
        aBase = getSlotAddress(e, aBase, aType, adaptor.getATile());
      // The warp's rows of A: its M rows, stored as rows, or as chunks of
      // columns with transpose_a.
      Value chunkBase = transposeA ? e.lshr(warpRow, 3) : Value();
      auto rowBase = [&] { return warpRow; };
      aAccess.emplace(accessBlocks(
          e, thread.lane, aBase, getABlocks(mma.shape, mma.aBits, transposeA),
          transposeA ? llvm::function_ref<Value()>() : rowBase, chunkBase,
          getB16Columns(aType), /*fusedRows=*/!transposeA));
    }
    auto [kBegin, kEnd] = op.getKRange();
    for (int64_t kk = kBegin / mma.shape.k; kk < kEnd / mma.shape.k; ++kk) {
      SmallVector<SmallVector<Value, 4>> a(mTiles);
      for (int64_t i = 0; i < mTiles; ++i) {
        if (aInRegs) {
          for (int64_t r = 0; r < 4; ++r)
            a[i].push_back(aRegs[FragmentLayout::aIndex(i, kk, r, kTiles)]);
        } else if (transposeA) {
          a[i] = loadMatrixX4(e, aAccess->address(16 * kk, 2 * i),
                              /*transpose=*/true);
        } else {
          a[i] = loadMatrixX4(e, aAccess->address(16 * i, kChunks * kk),
                              /*transpose=*/false);
        }
      }
      for (int64_t np = 0; np < nTiles / 2; ++np) {
        SmallVector<Value, 4> b =
            transposeB
                ? loadMatrixX4(e,
                               bAccess.address(nBegin + 16 * np, kChunks * kk),
                               /*transpose=*/false)
                : loadMatrixX4(e,
                               bAccess.address(16 * kk,
                                               nBegin * mma.bBits / kChunkBits +
                                                   2 * np),
                               /*transpose=*/true);
        for (int64_t half = 0; half < 2; ++half)
          for (int64_t i = 0; i < mTiles; ++i)
            accumulate(e, mma, a[i], b[2 * half], b[2 * half + 1], acc, i,
                       2 * np + half, nTiles, perTile);
      }
    }
    rewriter.replaceOp(op, e.pack(layout.convertType(dType), acc));
    return success();
  }
};

} // namespace

void lowering::populateMmaPatterns(LLVMTypeConverter &converter,
                                 RewritePatternSet &patterns) {
  patterns.add<LoadFragLowering, MmaLowering>(converter);
}
