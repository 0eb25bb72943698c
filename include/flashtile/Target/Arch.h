//===- Arch.h - The one table of target facts -------------------*- C++ -*-===//
//
// Every number FlashTile knows about a chip lives in the table behind this
// header (lib/Target/Arch.cpp). Passes ask `getArchInfo(chip)`; none keeps its
// own copy of a limit.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHTILE_TARGET_ARCH_H
#define FLASHTILE_TARGET_ARCH_H

#include "flashtile/ABI/TargetLimits.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/DenseMapInfo.h"
#include "llvm/Support/raw_ostream.h"
#include "mlir/Support/LLVM.h"
#include <cstdint>
#include <optional>
#include <string>

// Chip and CodePath, with stringifyChip / symbolizeChip / stringifyCodePath /
// symbolizeCodePath, generated from ArchEnums.td.
#include "flashtile/Target/ArchEnums.h.inc"

namespace flashtile {

/// One row of the target table.
struct ArchInfo {
  Chip chip;
  /// The name in IR and on the command line, e.g. "sm_120".
  llvm::StringRef name;
  /// Compute capability, major * 10 + minor (120 for sm_120).
  int computeCapability;
  /// The code path the compiler lowers through for this chip.
  CodePath codePath;
  /// Opt-in maximum dynamic shared memory per block, in bytes.
  int64_t smemPerBlock;
  /// Shared memory an SM can give to resident blocks, in bytes.
  int64_t smemPerSM;
  /// Shared memory the hardware reserves for each resident block, in bytes.
  int64_t smemReservedPerBlock;
  /// 32-bit registers per SM.
  int64_t regsPerSM;
  /// Registers one thread may use before spilling.
  int64_t maxRegsPerThread;
  /// Resident threads per SM.
  int64_t maxThreadsPerSM;
  /// Resident blocks per SM.
  int64_t maxBlocksPerSM;
  /// The PTX `.target` string, e.g. "sm_120".
  llvm::StringRef ptxTarget;
  /// The lowest PTX ISA version (major*10 + minor) that knows the target.
  /// LLVM aborts on a lower one, so callers check this before LLVM runs.
  int minPtxVersion;
};

/// The whole table, in the order of `Chip`.
llvm::ArrayRef<ArchInfo> getAllArchs();

/// The row for `chip`.
const ArchInfo &getArchInfo(Chip chip);

/// The row named `name` ("sm_120"), or nullptr when the name is unknown.
const ArchInfo *lookupArch(llvm::StringRef name);

/// "sm_80, sm_86, ..." for error messages.
std::string knownArchNames();

/// Whether `isa` has the instructions of `path`; the sm80 path needs
/// cp.async and bf16 mma.sync.m16n8k16, i.e. compute capability 8.0 or later.
bool isaSupportsCodePath(const ArchInfo &isa, CodePath path);

/// Whether `isa` has the vector f32 reductions to global memory
/// (red.global.add.v2.f32 / .v4.f32): compute capability 9.0 or later.
bool isaHasVectorF32Reductions(const ArchInfo &isa);
/// ...which need PTX ISA 8.1.
inline constexpr int kVectorF32ReductionPtxVersion = 81;

/// "sm_80, sm_86, ..." for the chips whose code path is `path`.
std::string archNamesWithCodePath(CodePath path);

/// Registers are granted per thread in multiples of this...
inline constexpr int64_t kRegsPerThreadGranule = 8;
/// ...and per warp in multiples of this.
inline constexpr int64_t kRegsPerWarpGranule = 256;

/// Blocks of one kernel that fit on an SM, and which resource limits it.
struct Occupancy {
  int64_t blocks = 0;
  int64_t byRegisters = 0, bySharedMemory = 0, byThreads = 0;
  int64_t getWarps(int64_t warpsPerBlock) const {
    return blocks * warpsPerBlock;
  }
};

/// The occupancy of a block of `warps` warps, `regsPerThread` registers per
/// thread and `smemBytes` of dynamic shared memory on `arch`: the least of
/// the register, shared-memory, thread and block limits. Registers are
/// granted in the granules above. `regsPerThread` must be positive.
Occupancy computeOccupancy(const ArchInfo &arch, int64_t warps,
                           int64_t regsPerThread, int64_t smemBytes);

/// Blocks per SM allowed by shared memory alone, counting the per-block
/// reservation: floor(smemPerSM / (bytes + reserved)), capped by
/// maxBlocksPerSM. Returns 0 when one block does not fit.
int64_t blocksPerSMBySmem(const ArchInfo &arch, int64_t bytesPerBlock);

} // namespace flashtile

#endif // FLASHTILE_TARGET_ARCH_H
