//===- MmaFragments.cpp - mma.sync instructions and fragments -------------===//

#include "flashtile/Dialect/Attn/Utils/MmaFragments.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/STLExtras.h"

#include <cassert>

using namespace mlir;
using namespace flashtile;
using namespace flashtile::attn;

// PTX ISA 8.7, "Warp-level Matrix Multiply-Accumulate Instructions":
// mma.sync.aligned.m16n8k16 on f16 / bf16 needs sm_80 and PTX 7.0;
// m16n8k32 on s8 needs sm_80 (sm_75 has only k16) and PTX 7.0; on e4m3 /
// e5m2 it needs sm_89 and PTX 8.4.
static const MmaInstruction kMmaInstructions[] = {
    {{16, 8, 16}, "f16", "f16", "f32", 16, 16, 32, 80, 70},
    {{16, 8, 16}, "bf16", "bf16", "f32", 16, 16, 32, 80, 70},
    {{16, 8, 16}, "f16", "f16", "f16", 16, 16, 16, 80, 70},
    {{16, 8, 32}, "s8", "s8", "s32", 8, 8, 32, 80, 70},
    {{16, 8, 32}, "e4m3", "e4m3", "f32", 8, 8, 32, 89, 84},
    {{16, 8, 32}, "e5m2", "e5m2", "f32", 8, 8, 32, 89, 84},
};

ArrayRef<MmaInstruction> attn::getMmaInstructions() {
  return kMmaInstructions;
}

std::optional<MmaShape> attn::getOperandShape(int64_t bits) {
  for (const MmaInstruction &instr : kMmaInstructions)
    if (instr.aBits == bits)
      return instr.shape;
  return std::nullopt;
}

/// The PTX name of an mma operand type, or "" when mma.sync takes none.
static StringRef getPtxTypeName(Type type) {
  if (type.isF16())
    return "f16";
  if (type.isBF16())
    return "bf16";
  if (type.isF32())
    return "f32";
  if (isa<Float8E4M3FNType>(type))
    return "e4m3";
  if (isa<Float8E5M2Type>(type))
    return "e5m2";
  if (type.isInteger(8))
    return "s8";
  if (type.isInteger(32))
    return "s32";
  return "";
}

std::optional<MmaInstruction> attn::selectMma(const ArchInfo &isa, Type a,
                                              Type b, Type acc) {
  StringRef aName = getPtxTypeName(a), bName = getPtxTypeName(b),
            accName = getPtxTypeName(acc);
  for (const MmaInstruction &instr : kMmaInstructions)
    if (instr.aType == aName && instr.bType == bName &&
        instr.accType == accName &&
        isa.computeCapability >= instr.minComputeCapability)
      return instr;
  return std::nullopt;
}

std::pair<int64_t, int64_t> MmaFragment::getMatrixShape() const {
  switch (operand) {
  case MmaOperand::A:
    return {shape.m, shape.k};
  case MmaOperand::B:
    return {shape.k, shape.n};
  case MmaOperand::C:
    return {shape.m, shape.n};
  }
  llvm_unreachable("unknown operand");
}

int64_t MmaFragment::getElementsPerLane() const {
  auto [rows, cols] = getMatrixShape();
  return rows * cols / 32;
}

std::pair<int64_t, int64_t> MmaFragment::getCoord(int64_t lane,
                                                  int64_t i) const {
  assert(lane >= 0 && lane < 32 && i >= 0 && i < getElementsPerLane() &&
         "a lane's element");
  int64_t g = lane / 4, t = lane % 4;
  int64_t e = getElementsPerRegister(), r = i / e, j = i % e;
  switch (operand) {
  case MmaOperand::A:
    return {g + 8 * (r % 2), t * e + j + (shape.k / 2) * (r / 2)};
  case MmaOperand::B:
    return {t * e + j + (shape.k / 2) * r, g};
  case MmaOperand::C:
    // By element, whatever the packing: 32-bit accumulators hold one per
    // register, 16-bit ones two.
    return {g + 8 * (i / 2), 2 * t + i % 2};
  }
  llvm_unreachable("unknown operand");
}

std::pair<int64_t, int64_t>
MmaFragment::getLdmatrixRowAddress(int64_t lane) const {
  assert(operand != MmaOperand::C && "ldmatrix loads A and B operands");
  int64_t matrices = getRegistersPerLane();
  auto [row, col] = getRegisterOrigin((lane / 8) % matrices);
  // A is stored [m][k]: the matrix's rows are the fragment's rows. B is
  // stored [n][k] (K rows of keys): its rows are the fragment's columns.
  if (operand == MmaOperand::A)
    return {row + lane % 8, col};
  return {col + lane % 8, row};
}
