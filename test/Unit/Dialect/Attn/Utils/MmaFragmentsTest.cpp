//===- MmaFragmentsTest.cpp - mma.sync instructions and fragments ---------===//
//
// The fragment coordinates against the PTX ISA's figures (PTX ISA 8.7,
// "Matrix Fragments for mma.m16n8k16 with floating point type" and "Matrix
// Fragments for mma.m16n8k32"), read off for lane 5 (groupID 1,
// threadID_in_group 1) and lane 30 (groupID 7, threadID_in_group 2); that
// every fragment covers its matrix exactly once; that ldmatrix's lane
// addresses load what the coordinates say; and the instruction table.
//
//===----------------------------------------------------------------------===//

#include "flashtile/Dialect/Attn/Utils/MmaFragments.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/DenseSet.h"
#include "gtest/gtest.h"

using namespace mlir;
using namespace flashtile;
using namespace flashtile::attn;

namespace {
using Coord = std::pair<int64_t, int64_t>;
constexpr MmaShape k16 = {16, 8, 16}, k32 = {16, 8, 32};
} // namespace

TEST(MmaFragmentsTest, SixteenBitAMatchesThePtxFigure) {
  MmaFragment a(k16, MmaOperand::A, 16);
  EXPECT_EQ(a.getElementsPerLane(), 8);
  EXPECT_EQ(a.getRegistersPerLane(), 4);
  // a0, a1: (groupID, 2 threadID + {0, 1}); a2, a3: row + 8; a4..a7: col + 8.
  EXPECT_EQ(a.getCoord(5, 0), Coord(1, 2));
  EXPECT_EQ(a.getCoord(5, 1), Coord(1, 3));
  EXPECT_EQ(a.getCoord(5, 2), Coord(9, 2));
  EXPECT_EQ(a.getCoord(5, 3), Coord(9, 3));
  EXPECT_EQ(a.getCoord(5, 4), Coord(1, 10));
  EXPECT_EQ(a.getCoord(5, 7), Coord(9, 11));
  EXPECT_EQ(a.getCoord(30, 6), Coord(15, 12));
}

TEST(MmaFragmentsTest, EightBitAMatchesThePtxFigure) {
  MmaFragment a(k32, MmaOperand::A, 8);
  EXPECT_EQ(a.getElementsPerLane(), 16);
  EXPECT_EQ(a.getRegistersPerLane(), 4);
  // a0..a3: (groupID, 4 threadID + {0..3}); a4..a7: row + 8; a8..a15:
  // col + 16.
  EXPECT_EQ(a.getCoord(5, 0), Coord(1, 4));
  EXPECT_EQ(a.getCoord(5, 3), Coord(1, 7));
  EXPECT_EQ(a.getCoord(5, 4), Coord(9, 4));
  EXPECT_EQ(a.getCoord(5, 8), Coord(1, 20));
  EXPECT_EQ(a.getCoord(5, 15), Coord(9, 23));
  EXPECT_EQ(a.getCoord(30, 13), Coord(15, 25));
}

TEST(MmaFragmentsTest, BMatchesThePtxFigures) {
  MmaFragment b16(k16, MmaOperand::B, 16);
  EXPECT_EQ(b16.getElementsPerLane(), 4);
  // b0, b1: (2 threadID + {0, 1}, groupID); b2, b3: row + 8.
  EXPECT_EQ(b16.getCoord(5, 0), Coord(2, 1));
  EXPECT_EQ(b16.getCoord(5, 1), Coord(3, 1));
  EXPECT_EQ(b16.getCoord(5, 2), Coord(10, 1));
  EXPECT_EQ(b16.getCoord(30, 3), Coord(13, 7));
  MmaFragment b8(k32, MmaOperand::B, 8);
  EXPECT_EQ(b8.getElementsPerLane(), 8);
  EXPECT_EQ(b8.getRegistersPerLane(), 2);
  // b0..b3: (4 threadID + {0..3}, groupID); b4..b7: row + 16.
  EXPECT_EQ(b8.getCoord(5, 0), Coord(4, 1));
  EXPECT_EQ(b8.getCoord(5, 3), Coord(7, 1));
  EXPECT_EQ(b8.getCoord(5, 4), Coord(20, 1));
  EXPECT_EQ(b8.getCoord(30, 7), Coord(27, 7));
}

TEST(MmaFragmentsTest, AccumulatorsMatchThePtxFigure) {
  // c0, c1: (groupID, 2 threadID + {0, 1}); c2, c3: row + 8; the same for
  // f32, s32 and (two per register) f16 accumulators, and both shapes.
  for (MmaShape shape : {k16, k32})
    for (int64_t bits : {32, 16}) {
      MmaFragment c(shape, MmaOperand::C, bits);
      EXPECT_EQ(c.getElementsPerLane(), 4);
      EXPECT_EQ(c.getRegistersPerLane(), bits == 32 ? 4 : 2);
      EXPECT_EQ(c.getCoord(5, 0), Coord(1, 2));
      EXPECT_EQ(c.getCoord(5, 1), Coord(1, 3));
      EXPECT_EQ(c.getCoord(5, 2), Coord(9, 2));
      EXPECT_EQ(c.getCoord(30, 3), Coord(15, 5));
    }
}

// Every (row, column) of the operand's matrix is held by exactly one lane.
TEST(MmaFragmentsTest, FragmentsCoverTheirMatrixOnce) {
  struct Case {
    MmaShape shape;
    MmaOperand operand;
    int64_t bits;
  };
  for (Case c : {Case{k16, MmaOperand::A, 16}, Case{k16, MmaOperand::B, 16},
                 Case{k16, MmaOperand::C, 32}, Case{k16, MmaOperand::C, 16},
                 Case{k32, MmaOperand::A, 8}, Case{k32, MmaOperand::B, 8},
                 Case{k32, MmaOperand::C, 32}}) {
    MmaFragment f(c.shape, c.operand, c.bits);
    auto [rows, cols] = f.getMatrixShape();
    llvm::DenseSet<int64_t> seen;
    for (int64_t lane = 0; lane < 32; ++lane)
      for (int64_t i = 0; i < f.getElementsPerLane(); ++i) {
        auto [row, col] = f.getCoord(lane, i);
        ASSERT_GE(row, 0);
        ASSERT_LT(row, rows);
        ASSERT_GE(col, 0);
        ASSERT_LT(col, cols);
        EXPECT_TRUE(seen.insert(row * cols + col).second)
            << "(" << row << ", " << col << ") twice";
      }
    EXPECT_EQ(int64_t(seen.size()), rows * cols);
  }
}

// ldmatrix gives thread (g, t) the 32 bits at row g, b16 columns 2t, 2t + 1
// of matrix r in register r; the rows' addresses come from lanes 8r + g.
// What it loads must be what the fragment's coordinates say.
TEST(MmaFragmentsTest, LdmatrixAddressesLoadTheFragment) {
  for (auto [shape, operand, bits] :
       {std::tuple(k16, MmaOperand::A, 16), std::tuple(k16, MmaOperand::B, 16),
        std::tuple(k32, MmaOperand::A, 8), std::tuple(k32, MmaOperand::B, 8)}) {
    MmaFragment f(shape, operand, bits);
    int64_t e = f.getElementsPerRegister();
    for (int64_t lane = 0; lane < 32; ++lane)
      for (int64_t i = 0; i < f.getElementsPerLane(); ++i) {
        int64_t g = lane / 4, t = lane % 4, r = i / e, j = i % e;
        // The stored row (A: m, B: n) and column (k) this lane receives.
        auto [row, col] = f.getLdmatrixRowAddress(8 * r + g);
        Coord loaded = operand == MmaOperand::A
                           ? Coord(row, col + t * e + j)
                           : Coord(col + t * e + j, row);
        EXPECT_EQ(f.getCoord(lane, i), loaded)
            << "lane " << lane << " element " << i;
      }
  }
}

TEST(MmaFragmentsTest, InstructionsByTypesAndChip) {
  MLIRContext ctx;
  Builder b(&ctx);
  Type f16 = b.getF16Type(), bf16 = b.getBF16Type(), f32 = b.getF32Type();
  Type s8 = b.getIntegerType(8), s32 = b.getI32Type();
  Type e4m3 = Float8E4M3FNType::get(&ctx), e5m2 = Float8E5M2Type::get(&ctx);
  const ArchInfo &sm80 = getArchInfo(Chip::sm_80);
  const ArchInfo &sm120 = getArchInfo(Chip::sm_120);
  auto shapeOf = [](std::optional<MmaInstruction> instr) {
    return instr ? instr->shape : MmaShape{0, 0, 0};
  };
  EXPECT_EQ(shapeOf(selectMma(sm80, bf16, bf16, f32)), k16);
  EXPECT_EQ(shapeOf(selectMma(sm80, f16, f16, f16)), k16);
  EXPECT_EQ(shapeOf(selectMma(sm80, s8, s8, s32)), k32);
  // fp8 mma.sync needs sm_89.
  EXPECT_FALSE(selectMma(sm80, e4m3, e4m3, f32));
  EXPECT_EQ(shapeOf(selectMma(sm120, e4m3, e4m3, f32)), k32);
  EXPECT_EQ(shapeOf(selectMma(sm120, e5m2, e5m2, f32)), k32);
  EXPECT_EQ(selectMma(sm120, e4m3, e4m3, f32)->accType, "f32");
  // No mma multiplies f32 (that is TF32's), mixes types or accumulates s8
  // into f32.
  EXPECT_FALSE(selectMma(sm120, f32, f32, f32));
  EXPECT_FALSE(selectMma(sm120, f16, bf16, f32));
  EXPECT_FALSE(selectMma(sm120, s8, s8, f32));
  // The table's widths agree with its shapes: a 32-bit register of A packs
  // 32 / bits elements and A's k is 8 of them per thread group.
  for (const MmaInstruction &instr : getMmaInstructions())
    EXPECT_EQ(instr.shape.k * instr.aBits, 256) << instr.aType.str();
}
