//===- FragmentLayout.cpp - Per-thread layout of !attn.frag ---------------===//

#include "flashtile/Conversion/AttnToNVVM/FragmentLayout.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

using namespace mlir;
using namespace flashtile;
using namespace flashtile::attn;

int64_t FragmentLayout::accValuesPerTile(FragType type) {
  return MmaFragment(kShape, MmaOperand::C,
                     type.getElementType().getIntOrFloatBitWidth())
      .getRegistersPerLane();
}

int64_t FragmentLayout::aTileCols(FragType type) {
  std::optional<MmaShape> shape =
      getOperandShape(type.getElementType().getIntOrFloatBitWidth());
  assert(shape && "A fragments hold types the mma table multiplies");
  return shape->k;
}

int64_t FragmentLayout::numValues(FragType type) const {
  ArrayRef<int64_t> shape = type.getShape();
  int64_t tiles = mTiles(shape[0]);
  switch (type.getLayout()) {
  case FragLayout::Rows:
    return tiles * 2;
  case FragLayout::Cols:
    return shape[0] / kShape.n * 2;
  case FragLayout::Acc:
    return tiles * (shape[1] / kShape.n) * accValuesPerTile(type);
  case FragLayout::A:
    return tiles * (shape[1] / aTileCols(type)) * 4;
  }
  llvm_unreachable("every layout kind has a size");
}

Type FragmentLayout::convertType(FragType type) const {
  MLIRContext *ctx = type.getContext();
  // 32-bit elements are one value each, in their own type; narrower ones
  // are packed into i32.
  Type element = IntegerType::get(ctx, 32);
  if (type.getElementType().isF32())
    element = Float32Type::get(ctx);
  return LLVM::LLVMArrayType::get(element, numValues(type));
}
