//===- MmaFragments.h - mma.sync instructions and fragments -----*- C++ -*-===//
//
// The one owner of the warp-level mma maths on the sm80 code path: which
// mma.sync instruction multiplies given operand and accumulator types on a
// chip, and which lane holds which (row, column) of each operand, for every
// shape and element width FlashTile emits. Lowerings ask it; none writes
// `2 * t + 1` or `g + 8` on its own.
//
// The coordinates follow the PTX ISA's figures "Matrix Fragments for
// mma.m16n8k16 with floating point type" and "Matrix Fragments for
// mma.m16n8k32" (section 9.7.14.5.8 / .10 of PTX ISA 8.7). With lane =
// 4 g + t (g = groupID = lane / 4, t = threadID_in_group = lane % 4) and
// e = 32 / bits the elements one 32-bit register packs, K the instruction's
// k (16 for 16-bit operands, 32 for 8-bit ones):
//
// * A (16 x K, row-major): register r (0..3) holds row g + 8 (r % 2),
//   columns t e + (K / 2) (r / 2) + {0 .. e - 1}.
// * B (K x 8, "col": each lane's elements run along k): register r (0..1)
//   holds column g, rows t e + (K / 2) r + {0 .. e - 1}.
// * C / D (16 x 8): element i (0..3) is row g + 8 (i / 2), column 2 t +
//   i % 2, whatever the accumulator type; a 16-bit accumulator packs
//   elements 2 r and 2 r + 1 in register r.
//
// An ldmatrix.x4 (x2 for B) loads one register per 8 x 8 b16 matrix: the
// matrix of register r is the 8-row block at registerOrigin(r), and lane L
// gives the address of row L % 8 of matrix L / 8. An 8-bit operand loads
// the same way, as pairs of bytes.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHTILE_DIALECT_ATTN_UTILS_MMAFRAGMENTS_H
#define FLASHTILE_DIALECT_ATTN_UTILS_MMAFRAGMENTS_H

#include "flashtile/Target/Arch.h"

#include "mlir/IR/Types.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>
#include <utility>

namespace flashtile::attn {

/// The operands of D = A B + C.
enum class MmaOperand { A, B, C };

/// An mma.sync shape: D is m x n, the product runs over k.
struct MmaShape {
  int64_t m, n, k;
  bool operator==(const MmaShape &o) const {
    return m == o.m && n == o.n && k == o.k;
  }
};

/// One mma.sync instruction of the table: its shape, the PTX type names of
/// A, B and C/D (as #nvvm.mma_type spells them), the element widths, the
/// lowest compute capability that has it, and the PTX ISA version that
/// introduced it (as the NVPTX backend's "+ptxNN": 84 is 8.4).
struct MmaInstruction {
  MmaShape shape;
  llvm::StringLiteral aType, bType, accType;
  int64_t aBits, bBits, accBits;
  int minComputeCapability;
  int minPtxVersion;
};

/// The table, every instruction FlashTile emits.
llvm::ArrayRef<MmaInstruction> getMmaInstructions();

/// The instruction that multiplies `a` by `b` into `acc` on `isa` (element
/// types: f16, bf16, f8E4M3FN, f8E5M2, i8 as s8; accumulators f32, f16,
/// i32 as s32), or nullopt when the chip has none.
std::optional<MmaInstruction> selectMma(const ArchInfo &isa, mlir::Type a,
                                        mlir::Type b, mlir::Type acc);

/// The mma shape FlashTile multiplies operands of `bits` bits with (the
/// table's: m16n8k16 for 16-bit types, m16n8k32 for 8-bit ones), or nullopt
/// for a width the table has no instruction for.
std::optional<MmaShape> getOperandShape(int64_t bits);

/// What one lane holds of one operand of an mma.sync of `shape` with
/// elements of `bits` bits.
class MmaFragment {
public:
  MmaFragment(MmaShape shape, MmaOperand operand, int64_t bits)
      : shape(shape), operand(operand), bits(bits) {}

  /// Rows and columns of the operand's matrix (A: m x k, B: k x n, C: m x n).
  std::pair<int64_t, int64_t> getMatrixShape() const;
  /// Elements one lane holds.
  int64_t getElementsPerLane() const;
  /// Elements one 32-bit register packs.
  int64_t getElementsPerRegister() const { return 32 / bits; }
  /// 32-bit registers one lane holds.
  int64_t getRegistersPerLane() const {
    return getElementsPerLane() / getElementsPerRegister();
  }
  /// (row, column) in the operand's matrix of element `i` of lane `lane`
  /// (element i is element i % e of register i / e).
  std::pair<int64_t, int64_t> getCoord(int64_t lane, int64_t i) const;
  /// (row, column) of element 0 of register `r` in lane 0: the corner of
  /// the 8 x 8 b16 matrix an ldmatrix loads into register r.
  std::pair<int64_t, int64_t> getRegisterOrigin(int64_t r) const {
    return getCoord(0, r * getElementsPerRegister());
  }
  /// (row, column) whose address lane `lane` gives to an ldmatrix that
  /// loads this fragment (x4 for A, x2 for B), of a matrix stored with
  /// rows along the fragment's rows (A, C) or its columns (B: [n][k]).
  std::pair<int64_t, int64_t> getLdmatrixRowAddress(int64_t lane) const;

private:
  MmaShape shape;
  MmaOperand operand;
  int64_t bits;
};

} // namespace flashtile::attn

#endif // FLASHTILE_DIALECT_ATTN_UTILS_MMAFRAGMENTS_H
