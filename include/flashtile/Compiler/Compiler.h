//===- Compiler.h - The compile API: kernel to artifacts --------*- C++ -*-===//
//
// One call takes an attention kernel (a module holding one kernel-level
// `attn.kernel`) through the whole compiler and returns every
// stage: the tile IR, the LLVM + NVVM dialect IR, the LLVM IR, the PTX, the
// cubin with ptxas's resource figures, the occupancy and the launch plan.
// The driver, flashtile-opt, the Python binding and the tests are clients of
// this API; none of them holds compiler logic of its own.
//
//   MLIRContext ctx;
//   flashtile::registerCompilerDialects(ctx);
//   std::string diagnostics;
//   FailureOr<flashtile::CompiledKernel> k = flashtile::compileSource(
//       ctx, text, "kernel.mlir", flashtile::CompileOptions(), diagnostics);
//   k->ptx, k->cubin->cubin, plan::writeJson(k->launchPlan)
//
// A DSL spec compiles through flashtile/DSL/Compile.h: the DSL sits above
// the compiler, which never includes it.
//
// Errors are MLIR diagnostics at the kernel's location; a failed compile
// returns failure() and leaves nothing behind.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHTILE_COMPILER_COMPILER_H
#define FLASHTILE_COMPILER_COMPILER_H

#include "flashtile/ABI/LaunchPlan.h"
#include "flashtile/Dialect/Attn/IR/Attn.h"
#include "flashtile/Dialect/Attn/Transforms/ConfigSelection.h"
#include "flashtile/Target/Arch.h"
#include "flashtile/Target/PTX.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>
#include <string>
#include <vector>

namespace flashtile {

/// How far a compile goes. Each stage includes the ones before it.
enum class CompileStage {
  /// Config selection, expansion, allocation, barriers: the tile IR.
  Tile,
  /// The LLVM + NVVM dialect IR of the code path.
  Nvvm,
  /// LLVM IR, optimized.
  Llvm,
  /// PTX from LLVM's NVPTX backend.
  Ptx,
  /// A cubin from ptxas, with its resource figures and the launch plan.
  Cubin,
};

/// Which pass of the attention a compile builds.
enum class Direction {
  /// The kernel as written: the forward of a kernel-level attention, or a
  /// tile program or family.
  Forward,
  /// The backward family of a kernel-level attention
  /// (flashtile/Dialect/Attn/Transforms/BuildBackward.h): one plan of
  /// three kernels that takes the forward's tensors, O, LSE and dO, and
  /// writes dQ, dK and dV.
  Backward,
};

/// The names of the directions ("fwd", "bwd"), which the driver and the
/// Python binding take: this pair owns them.
llvm::StringRef stringifyDirection(Direction direction);
std::optional<Direction> parseDirection(llvm::StringRef name);

struct CompileOptions {
  Direction direction = Direction::Forward;
  /// The backward's dQ without atomics, by a kernel of its own
  /// (attn::BackwardOptions::deterministic).
  bool deterministic = false;
  /// The backward's gradients of extra tensors the score_mod reads, by
  /// name (attn::BackwardOptions::tensorGrads).
  std::vector<std::string> tensorGrads;
  /// Tile parameters to pin; the rest are searched. When all five are given
  /// the config is taken as is and the allocator is its only judge.
  attn::ConfigOverrides pins;
  /// The instruction set of the PTX and the cubin; unset: the kernel's chip.
  /// `--arch=sm_120 --isa=sm_90` builds the SM120 configuration for an H200.
  std::optional<Chip> isa;
  CompileStage stopAfter = CompileStage::Cubin;
  /// ptxas to run; empty: found by findPtxas().
  std::string ptxasPath;
  /// The limit on one ptxas run (0: none).
  unsigned ptxasTimeoutSeconds = kDefaultPtxasTimeoutSeconds;
  /// When ptxas reports spills for a searched config, compile the
  /// next-ranked candidates with register estimates no higher and keep the
  /// first that does not spill. A pinned config is never replaced.
  bool spillFallback = true;
  /// The cubin's file name as the launch plan records it (relative to the
  /// plan's folder); empty: "<kernel name>.cubin".
  std::string cubinFileName;
};

/// Where a compile's wall-clock time went, in seconds: the tile pipeline
/// (config selection, expansion or the backward's tile programs,
/// allocation, barriers), the lowering to the LLVM and NVVM dialects,
/// LLVM (translation, O3, NVPTX's code generation) and ptxas. `total` is
/// the whole compile, the tries of the spill fallback included, which the
/// stages count only for the build that was kept.
struct CompileTimes {
  double tile = 0, lowering = 0, llvm = 0, ptxas = 0, total = 0;
};

/// Everything one compile produced. Stages after `stopAfter` are empty.
struct CompiledKernel {
  /// The kernel's symbol (its PTX entry).
  std::string name;
  /// The tile-level module, allocated and with its barriers.
  mlir::OwningOpRef<mlir::ModuleOp> tileModule;
  std::string nvvmIR, llvmIR, ptx;
  /// The chip of the configuration and the ISA of the code.
  const ArchInfo *arch = nullptr, *isa = nullptr;
  /// ptxas's output and resource figures (CompileStage::Cubin).
  std::optional<CubinResult> cubin;
  /// Blocks per SM on `arch` from ptxas's registers (CompileStage::Cubin).
  std::optional<Occupancy> occupancy;
  /// The launch plan (CompileStage::Cubin).
  std::optional<plan::LaunchPlan> launchPlan;
  /// Set when the spill fallback ran: what spilled and what was taken.
  std::string fallbackNote;
  /// The compile's time, by stage.
  CompileTimes times;

  /// The tile-level kernel op.
  attn::KernelOp getTileKernel() const;
  /// The tile IR as text.
  std::string printTileIR() const;
};

/// Loads the dialects the compiler creates ops of into `ctx`.
void registerCompilerDialects(mlir::MLIRContext &ctx);

/// Compiles the single kernel-level `attn.kernel` of `module`. `module` is
/// not changed.
mlir::FailureOr<CompiledKernel> compile(mlir::ModuleOp module,
                                        const CompileOptions &options);

/// Parses `source`, a kernel-level module with one `attn.kernel` (named
/// `bufferName` in diagnostics), and compiles it. Every diagnostic, with its
/// location and source line, is appended to `diagnostics`. `ctx` must have
/// the compiler's dialects (registerCompilerDialects).
mlir::FailureOr<CompiledKernel> compileSource(mlir::MLIRContext &ctx,
                                              llvm::StringRef source,
                                              llvm::StringRef bufferName,
                                              const CompileOptions &options,
                                              std::string &diagnostics);

/// Whether `kernel` is a tile program (the tile language's, or an expanded
/// kernel): it holds no attn.attention.
bool isTileProgram(attn::KernelOp kernel);

/// Runs the tile pipeline (config selection unless the kernels have a
/// config, expansion, allocation, barriers) on every kernel of `module`.
/// Fully pinned overrides are set as the config without a search. Tile
/// programs get allocation and barriers only.
mlir::LogicalResult runTilePipeline(mlir::ModuleOp module,
                                    const attn::ConfigOverrides &pins);

/// Registers the named pipelines `attn-to-tiles` (on attn.kernel; options:
/// tile-m, tile-n, stages, warps, q-in-regs as for attn-select-config) and
/// `attn-to-nvvm` (on the module: the tile pipeline, then the lowering).
void registerPipelines();

//===----------------------------------------------------------------------===//
// Reports
//===----------------------------------------------------------------------===//

/// The shared-memory plan of an allocated tile-level kernel, for people.
void printSmemPlan(llvm::raw_ostream &os, attn::KernelOp tileKernel);

/// The same as one JSON object (two-space indent, newline-terminated).
std::string getSmemPlanJson(attn::KernelOp tileKernel);

/// Every candidate config of a kernel-level kernel, ranked, with its score or
/// the reason it was rejected; as text or as JSON.
void printConfigs(llvm::raw_ostream &os, attn::KernelOp kernel,
                  const attn::ConfigOverrides &pins, bool json);

/// The resource report of a compiled kernel: the smem plan, the cubin's
/// registers and spills, and the occupancy.
void printResourceReport(llvm::raw_ostream &os, const CompiledKernel &kernel);

//===----------------------------------------------------------------------===//
// Writing artifacts
//===----------------------------------------------------------------------===//

/// The cubin's path as a launch plan written to `planPath` names it: the file
/// name when both are in one folder, the absolute path otherwise (the
/// runtime resolves it against the plan's folder).
std::string getCubinPathForPlan(llvm::StringRef cubinPath,
                                llvm::StringRef planPath);

/// One file to write; "-" is stdout.
struct OutputFile {
  std::string path;
  std::string contents;
};

/// Writes every file or none: each goes to a temporary file next to its
/// destination and is renamed into place only when all were written. Two
/// outputs naming the same file are an error. Nothing is left behind on
/// failure, temporary files included.
mlir::LogicalResult writeOutputs(llvm::ArrayRef<OutputFile> files,
                                 mlir::Location loc);

} // namespace flashtile

#endif // FLASHTILE_COMPILER_COMPILER_H
