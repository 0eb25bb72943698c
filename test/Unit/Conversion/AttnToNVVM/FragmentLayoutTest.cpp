//===- FragmentLayoutTest.cpp - Fragment layout ---------------------------===//

#include "flashtile/Conversion/AttnToNVVM/FragmentLayout.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/BuiltinOps.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/DenseSet.h"
#include "gtest/gtest.h"

using namespace mlir;
using namespace flashtile;
using namespace flashtile::attn;

TEST(FragmentLayoutTest, ValuesPerThread) {
  MLIRContext ctx;
  ctx.loadDialect<AttnDialect>();
  FragmentLayout layout(/*warps=*/8);
  Type f32 = Float32Type::get(&ctx), bf16 = BFloat16Type::get(&ctx);
  // 128 rows over 8 warps: one m-tile per warp.
  EXPECT_EQ(layout.mTiles(128), 1);
  // S of 128 x 128: 16 n-tiles of 4 floats.
  EXPECT_EQ(layout.numValues(FragType::get(&ctx, {128, 128}, f32)), 64);
  // P / Q of 128 x 128 in bf16: 8 k-tiles of 4 packed registers.
  EXPECT_EQ(layout.numValues(FragType::get(&ctx, {128, 128}, bf16)), 32);
  // Row state: 2 rows per thread and m-tile.
  EXPECT_EQ(layout.numValues(FragType::get(&ctx, {128}, f32)), 2);
  EXPECT_EQ(FragmentLayout(4).mTiles(128), 2);
}

// The layout kind, not the element type, decides the register count: an
// f16 accumulator packs each 16 x 8 tile's 4 elements in 2 registers, an
// i32 one holds 4, and an 8-bit A operand has k-tiles of 32.
TEST(FragmentLayoutTest, ValuesPerThreadByLayoutKind) {
  MLIRContext ctx;
  ctx.loadDialect<AttnDialect, LLVM::LLVMDialect>();
  FragmentLayout layout(/*warps=*/8);
  Type f16 = Float16Type::get(&ctx), i32 = IntegerType::get(&ctx, 32),
       i8 = IntegerType::get(&ctx, 8), e4m3 = Float8E4M3FNType::get(&ctx);
  auto acc16 = FragType::get(&ctx, {128, 128}, f16, FragLayout::Acc);
  EXPECT_EQ(layout.numValues(acc16), 16 * 2);
  EXPECT_TRUE(isa<IntegerType>(
      cast<LLVM::LLVMArrayType>(layout.convertType(acc16)).getElementType()));
  EXPECT_EQ(layout.numValues(FragType::get(&ctx, {128, 128}, i32)), 16 * 4);
  EXPECT_EQ(layout.numValues(FragType::get(&ctx, {128, 128}, f16)), 8 * 4);
  EXPECT_EQ(layout.numValues(FragType::get(&ctx, {128, 128}, i8)), 4 * 4);
  EXPECT_EQ(layout.numValues(FragType::get(&ctx, {128, 128}, e4m3)), 4 * 4);
  // Defaults: rows for rank 1, acc for 32-bit types, a for narrower ones.
  EXPECT_EQ(FragType::get(&ctx, {128}, Float32Type::get(&ctx)).getLayout(),
            FragLayout::Rows);
  EXPECT_TRUE(FragType::get(&ctx, {128, 64}, i32).isAccumulator());
  EXPECT_EQ(FragType::get(&ctx, {128, 64}, i8).getLayout(), FragLayout::A);
}

TEST(FragmentLayoutTest, IndicesAreABijection) {
  const int64_t mTiles = 2, nTiles = 16, kTiles = 8;
  llvm::DenseSet<int64_t> acc, a;
  for (int64_t i = 0; i < mTiles; ++i) {
    for (int64_t j = 0; j < nTiles; ++j)
      for (int64_t r = 0; r < 4; ++r)
        acc.insert(FragmentLayout::accIndex(i, j, r, nTiles));
    for (int64_t k = 0; k < kTiles; ++k)
      for (int64_t r = 0; r < 4; ++r)
        a.insert(FragmentLayout::aIndex(i, k, r, kTiles));
  }
  EXPECT_EQ(acc.size(), size_t(mTiles * nTiles * 4));
  EXPECT_EQ(a.size(), size_t(mTiles * kTiles * 4));
  // Distinct and in range: a bijection onto [0, size).
  for (int64_t index : acc) {
    EXPECT_GE(index, 0);
    EXPECT_LT(index, mTiles * nTiles * 4);
  }
  for (int64_t index : a) {
    EXPECT_GE(index, 0);
    EXPECT_LT(index, mTiles * kTiles * 4);
  }
}

// P = softmax(S) feeds the PV mma from the registers of S: element `half`
// of A register r of k-tile k must be the accumulator element at the same
// (row, column) of n-tile 2k + first.
TEST(FragmentLayoutTest, AccumulatorsOfTwoNTilesAreOneATile) {
  for (int64_t r = 0; r < 4; ++r)
    for (int64_t half = 0; half < 2; ++half) {
      auto [tile, element] = FragmentLayout::accSourceOfA(r, half);
      auto [accRow, accCol] = FragmentLayout::accElementOffset(element);
      auto [aRow, aCol] = FragmentLayout::aElementOffset(r, half);
      EXPECT_EQ(accRow, aRow) << "r=" << r << " half=" << half;
      EXPECT_EQ(8 * tile + accCol, aCol) << "r=" << r << " half=" << half;
    }
}
