//===- Arch.cpp - The one table of target facts ---------------------------===//
//
// Sources: the CUDA C++ Programming Guide, "Compute Capabilities" table
// (shared memory per SM / per block, registers, threads and blocks per SM),
// and the PTX ISA release notes for the first PTX version of each target
// (sm_90: 7.8, sm_100: 8.6, sm_120: 8.7, sm_121: 8.8).
//
// sm_75 (Turing) is known so that it is refused by name: it has no cp.async
// and no bf16 mma.sync, which the sm80 path needs.
//
// SM120/121 have the RTX Blackwell SM: a 128 KiB L1+shared array of which at
// most 100 KiB is shared memory, 99 KiB of it for one block. They have no wgmma
// and no tcgen05, so their fast path is the SM80 one (ldmatrix, mma.sync,
// cp.async) while the PTX still targets sm_120.
//
//===----------------------------------------------------------------------===//

#include "flashtile/Target/Arch.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/MathExtras.h"
#include <algorithm>
#include <cassert>

using namespace flashtile;

#include "flashtile/Target/ArchEnums.cpp.inc"

static constexpr int64_t KiB = 1024;

// clang-format off
static const ArchInfo kArchTable[] = {
  // chip         name     cc   path            /blk       /SM        rsv      regs   maxR thr   blk ptx       minPTX
  {Chip::sm_75,  "sm_75",  75, CodePath::None,   64 * KiB,  64 * KiB, 0 * KiB, 65536, 255, 1024, 16, "sm_75",  63},
  {Chip::sm_80,  "sm_80",  80, CodePath::Sm80,  163 * KiB, 164 * KiB, 1 * KiB, 65536, 255, 2048, 32, "sm_80",  70},
  {Chip::sm_86,  "sm_86",  86, CodePath::Sm80,   99 * KiB, 100 * KiB, 1 * KiB, 65536, 255, 1536, 16, "sm_86",  71},
  {Chip::sm_89,  "sm_89",  89, CodePath::Sm80,   99 * KiB, 100 * KiB, 1 * KiB, 65536, 255, 1536, 24, "sm_89",  78},
  // sm_90 takes the SM80 path until a wgmma/TMA path exists.
  {Chip::sm_90,  "sm_90",  90, CodePath::Sm80,  227 * KiB, 228 * KiB, 1 * KiB, 65536, 255, 2048, 32, "sm_90",  78},
  {Chip::sm_100, "sm_100", 100, CodePath::Sm100, 227 * KiB, 228 * KiB, 1 * KiB, 65536, 255, 2048, 32, "sm_100", 86},
  {Chip::sm_120, "sm_120", 120, CodePath::Sm80,   99 * KiB, 100 * KiB, 1 * KiB, 65536, 255, 1536, 32, "sm_120", 87},
  {Chip::sm_121, "sm_121", 121, CodePath::Sm80,   99 * KiB, 100 * KiB, 1 * KiB, 65536, 255, 1536, 32, "sm_121", 88},
};
// clang-format on

llvm::ArrayRef<ArchInfo> flashtile::getAllArchs() { return kArchTable; }

static_assert(std::size(kArchTable) == getMaxEnumValForChip() + 1,
              "kArchTable has one row per Chip");

const ArchInfo &flashtile::getArchInfo(Chip chip) {
  const ArchInfo &info = kArchTable[static_cast<unsigned>(chip)];
  assert(info.chip == chip && "kArchTable must follow the order of Chip");
  assert(info.name == stringifyChip(chip) && "a row's name is its chip's");
  return info;
}

const ArchInfo *flashtile::lookupArch(llvm::StringRef name) {
  std::optional<Chip> chip = symbolizeChip(name);
  return chip ? &getArchInfo(*chip) : nullptr;
}

std::string flashtile::knownArchNames() {
  std::string names;
  for (const ArchInfo &info : kArchTable) {
    if (!names.empty())
      names += ", ";
    names += info.name.str();
  }
  return names;
}

bool flashtile::isaSupportsCodePath(const ArchInfo &isa, CodePath path) {
  switch (path) {
  case CodePath::None:
    return false;
  case CodePath::Sm80:
    return isa.computeCapability >= 80;
  case CodePath::Sm100:
    return isa.chip == Chip::sm_100;
  }
  llvm_unreachable("unknown code path");
}

bool flashtile::isaHasVectorF32Reductions(const ArchInfo &isa) {
  return isa.computeCapability >= 90;
}

std::string flashtile::archNamesWithCodePath(CodePath path) {
  std::string names;
  for (const ArchInfo &info : kArchTable) {
    if (info.codePath != path)
      continue;
    if (!names.empty())
      names += ", ";
    names += info.name.str();
  }
  return names;
}

int64_t flashtile::blocksPerSMBySmem(const ArchInfo &arch,
                                     int64_t bytesPerBlock) {
  if (bytesPerBlock > arch.smemPerBlock)
    return 0;
  int64_t perBlock = bytesPerBlock + arch.smemReservedPerBlock;
  return std::min(arch.smemPerSM / perBlock, arch.maxBlocksPerSM);
}

Occupancy flashtile::computeOccupancy(const ArchInfo &arch, int64_t warps,
                                      int64_t regsPerThread,
                                      int64_t smemBytes) {
  assert(warps > 0 && regsPerThread > 0 && "a block has warps and registers");
  int64_t regsPerWarp = llvm::alignTo(
      llvm::alignTo(regsPerThread, kRegsPerThreadGranule) * kWarpSize,
      kRegsPerWarpGranule);
  Occupancy o;
  o.byRegisters = arch.regsPerSM / (regsPerWarp * warps);
  o.bySharedMemory = blocksPerSMBySmem(arch, smemBytes);
  o.byThreads = arch.maxThreadsPerSM / (warps * kWarpSize);
  o.blocks = std::min(
      {o.byRegisters, o.bySharedMemory, o.byThreads, arch.maxBlocksPerSM});
  return o;
}
