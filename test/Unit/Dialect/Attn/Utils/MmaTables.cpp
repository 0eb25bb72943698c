//===- MmaTables.cpp - The fragment tables, for the GPU check -------------===//
//
// Prints, as JSON, every instruction of the mma table (MmaFragments.h) with
// the (row, column) of each element each lane holds of A, B and C. The GPU
// check (tools/gpu/check_mma.py) loads tiles by these tables, runs the
// instruction and compares with torch: the hardware's word on the tables.
//
//===----------------------------------------------------------------------===//

#include "flashtile/Dialect/Attn/Utils/MmaFragments.h"

#include "llvm/Support/raw_ostream.h"

using namespace flashtile;
using namespace flashtile::attn;

static void printTable(llvm::raw_ostream &os, const MmaFragment &f) {
  os << "[";
  for (int64_t lane = 0; lane < 32; ++lane)
    for (int64_t i = 0; i < f.getElementsPerLane(); ++i) {
      auto [row, col] = f.getCoord(lane, i);
      os << (lane || i ? ", " : "") << "[" << row << ", " << col << "]";
    }
  os << "]";
}

int main() {
  llvm::raw_ostream &os = llvm::outs();
  os << "[\n";
  bool first = true;
  for (const MmaInstruction &instr : getMmaInstructions()) {
    os << (first ? "" : ",\n") << "{\"a\": \"" << instr.aType
       << "\", \"b\": \"" << instr.bType << "\", \"acc\": \"" << instr.accType
       << "\", \"shape\": [" << instr.shape.m << ", " << instr.shape.n << ", "
       << instr.shape.k << "], \"min_cc\": " << instr.minComputeCapability
       << ",\n \"A\": ";
    printTable(os, MmaFragment(instr.shape, MmaOperand::A, instr.aBits));
    os << ",\n \"B\": ";
    printTable(os, MmaFragment(instr.shape, MmaOperand::B, instr.bBits));
    os << ",\n \"C\": ";
    printTable(os, MmaFragment(instr.shape, MmaOperand::C, instr.accBits));
    os << "}";
    first = false;
  }
  os << "\n]\n";
  return 0;
}
