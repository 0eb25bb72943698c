//===- Compiler.cpp - The compile API: kernel to artifacts ----------------===//

#include "flashtile/Compiler/Compiler.h"
#include "flashtile/Compiler/Input.h"
#include "Reports.h"

#include "flashtile/Conversion/AttnToNVVM/KernelABI.h"
#include "flashtile/Conversion/Passes.h"
#include "flashtile/Dialect/Attn/Transforms/BuildBackward.h"
#include "flashtile/Dialect/Attn/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/SourceMgr.h"

#include <chrono>
#include <limits>

using namespace mlir;
using namespace flashtile;
using namespace flashtile::attn;

void flashtile::registerCompilerDialects(MLIRContext &ctx) {
  ctx.loadDialect<AttnDialect, arith::ArithDialect, math::MathDialect,
                  memref::MemRefDialect, LLVM::LLVMDialect,
                  NVVM::NVVMDialect>();
}

KernelOp CompiledKernel::getTileKernel() const {
  return *tileModule.get().getOps<KernelOp>().begin();
}

std::string CompiledKernel::printTileIR() const {
  std::string text;
  llvm::raw_string_ostream os(text);
  tileModule.get().print(os);
  os << "\n";
  return text;
}

//===----------------------------------------------------------------------===//
// Pipelines
//===----------------------------------------------------------------------===//

static bool isFullyPinned(const ConfigOverrides &pins) {
  return pins.isFullyPinned();
}

static AttnSelectConfigOptions toPassOptions(const ConfigOverrides &pins) {
  AttnSelectConfigOptions options;
  options.tileM = pins.tileM.value_or(0);
  options.tileN = pins.tileN.value_or(0);
  options.stages = pins.stages.value_or(0);
  options.warps = pins.warps.value_or(0);
  options.qInRegs = pins.qInRegs ? int(*pins.qInRegs) : -1;
  options.kvWarps = pins.kvWarps.value_or(0);
  options.family = stringifyConfigFamily(pins.family).str();
  return options;
}

static void addTilePasses(OpPassManager &kernelPm,
                          const AttnSelectConfigOptions &options) {
  kernelPm.addPass(createAttnSelectConfig(options));
  kernelPm.addPass(createAttnExpandToTiles());
  kernelPm.addPass(createAttnPipelineCopies());
  kernelPm.addPass(createAttnAllocateSharedMemory());
  kernelPm.addPass(createAttnInsertBarriers());
}

bool flashtile::isTileProgram(KernelOp kernel) {
  return kernel.getBodyBlock().getOps<AttentionOp>().empty();
}

LogicalResult flashtile::runTilePipeline(ModuleOp module,
                                         const ConfigOverrides &pins) {
  // Tile programs are written by hand or by the tile builder: they only
  // need their copies pipelined, bytes and syncs.
  if (llvm::all_of(module.getOps<KernelOp>(), isTileProgram)) {
    PassManager pm(module.getContext());
    OpPassManager &kernelPm = pm.nest<KernelOp>();
    kernelPm.addPass(createAttnPipelineCopies());
    kernelPm.addPass(createAttnAllocateSharedMemory());
    kernelPm.addPass(createAttnInsertBarriers());
    return pm.run(module);
  }
  if (isFullyPinned(pins)) {
    // An explicit config is taken as is: the allocator is its judge.
    for (KernelOp kernel : module.getOps<KernelOp>()) {
      ConfigAttr config = ConfigAttr::getChecked(
          [&] { return kernel.emitError() << "invalid config: "; },
          module.getContext(), *pins.tileM, *pins.tileN, *pins.stages,
          *pins.warps, *pins.qInRegs, pins.kvWarps.value_or(1),
          pins.family == ConfigFamily::Decode);
      if (!config)
        return failure();
      kernel.setConfigAttr(config);
    }
  }
  PassManager pm(module.getContext());
  addTilePasses(pm.nest<KernelOp>(), toPassOptions(pins));
  return pm.run(module);
}

namespace {
/// The options of the `attn-to-tiles` and `attn-to-nvvm` pipelines: the
/// config pins of attn-select-config.
struct TilePipelineOptions
    : public PassPipelineOptions<TilePipelineOptions> {
  Option<int64_t> tileM{*this, "tile-m", llvm::cl::desc("Pin tile_m (0: search)"),
                        llvm::cl::init(0)};
  Option<int64_t> tileN{*this, "tile-n", llvm::cl::desc("Pin tile_n (0: search)"),
                        llvm::cl::init(0)};
  Option<int64_t> stages{*this, "stages",
                         llvm::cl::desc("Pin stages (0: search)"),
                         llvm::cl::init(0)};
  Option<int64_t> warps{*this, "warps", llvm::cl::desc("Pin warps (0: search)"),
                        llvm::cl::init(0)};
  Option<int> qInRegs{*this, "q-in-regs",
                      llvm::cl::desc("Pin q_in_regs: 0 or 1 (-1: search)"),
                      llvm::cl::init(-1)};
  Option<int64_t> kvWarps{*this, "kv-warps",
                          llvm::cl::desc("Pin kv_warps (0: search)"),
                          llvm::cl::init(0)};
  Option<std::string> family{
      *this, "family",
      llvm::cl::desc("The kernel family to search: prefill or decode"),
      llvm::cl::init("prefill")};

  AttnSelectConfigOptions toSelectOptions() const {
    AttnSelectConfigOptions options;
    options.tileM = tileM;
    options.tileN = tileN;
    options.stages = stages;
    options.warps = warps;
    options.qInRegs = qInRegs;
    options.kvWarps = kvWarps;
    options.family = family;
    return options;
  }
};
} // namespace

void flashtile::registerPipelines() {
  PassPipelineRegistration<TilePipelineOptions>(
      "attn-to-tiles",
      "Kernel-level attn.kernel to an allocated tile program: "
      "attn-select-config, attn-expand-to-tiles, attn-pipeline-copies, "
      "attn-allocate-shared-memory, attn-insert-barriers",
      [](OpPassManager &pm, const TilePipelineOptions &options) {
        addTilePasses(pm, options.toSelectOptions());
      });
  PassPipelineRegistration<TilePipelineOptions>(
      "attn-to-nvvm",
      "Kernel-level module to the LLVM + NVVM dialects: attn-to-tiles on "
      "every attn.kernel, then convert-attn-to-nvvm",
      [](OpPassManager &pm, const TilePipelineOptions &options) {
        addTilePasses(pm.nest<KernelOp>(), options.toSelectOptions());
        pm.addPass(createConvertAttnToNVVM());
      });
}

//===----------------------------------------------------------------------===//
// The launch plan
//===----------------------------------------------------------------------===//

/// What the kernel computes and how it is tiled, for people and tools: the
/// plan's informative `info` object.
static std::string getInfoJson(KernelOp kernel) {
  llvm::json::Object info = getKernelFactsJson(kernel);
  info["smem_bytes"] = *kernel.getSmemBytes();
  info["smem_limit_bytes"] = kernel.getArch().getInfo().smemPerBlock;
  return llvm::formatv("{0}", llvm::json::Value(std::move(info))).str();
}

static plan::LaunchPlan buildLaunchPlan(KernelOp kernel, const ArchInfo &isa,
                                        StringRef cubinFile,
                                        const CubinResult &cubin) {
  const ArchInfo &arch = kernel.getArch().getInfo();
  plan::LaunchPlan p;
  p.name = kernel.getSymName().str();
  p.arch = arch.name.str();
  p.isa = isa.name.str();
  p.codePath = stringifyCodePath(arch.codePath).str();
  describeKernelArguments(kernel, p);
  // Declared workspace tensors come first; the extra kernels' follow.
  p.workspaces = getTensorWorkspaces(kernel);
  // One entry of the cubin; every kernel of the family takes the
  // parameters of getKernelParams.
  auto addKernel = [&](std::string symbol, int64_t threads, int64_t smem,
                       const std::array<plan::Expr, 3> &grid,
                       std::vector<std::string> writes = {}) {
    plan::Kernel k;
    k.writes = std::move(writes);
    k.symbol = std::move(symbol);
    k.cubin = cubinFile.str();
    k.block[0] = threads;
    k.dynamicSmemBytes = smem;
    for (int i = 0; i < 3; ++i)
      k.grid[i] = grid[i];
    k.params = getKernelParams(kernel);
    CubinResult::EntryResources used = getEntryResources(cubin, k.symbol);
    k.registers = used.registers;
    k.spillStores = used.spillStores;
    k.spillLoads = used.spillLoads;
    p.kernels.push_back(std::move(k));
  };
  // A run-time block mask: its kernel runs first and fills the workspace
  // the attention kernel reads.
  if (BlockRangesOp ranges = getBlockRanges(kernel)) {
    BlockMaskNames names = getBlockMaskNames(ranges);
    addKernel(p.name + names.tilesSuffix, kBlockTilesThreads, 0,
              getBlockTilesGrid(ranges), {names.tilesWorkspace});
    addKernel(p.name + names.rangesSuffix, kBlockRangesThreads, 0,
              getBlockRangesGrid(ranges), {names.rangesWorkspace});
    p.workspaces.push_back({names.rangesWorkspace, getBlockRangesBytes(ranges)});
    p.workspaces.push_back({names.tilesWorkspace, getBlockTilesBytes(ranges)});
    p.checks.push_back(getBlockTilesCheck(ranges));
  }
  // A diagonal table: its kernel runs first and fills the workspace the
  // attention kernel's score_mod reads.
  if (DiagonalTable table = getDiagonalTable(kernel)) {
    addKernel(p.name + kDiagonalTableKernelSuffix, kDiagonalTableThreads, 0,
              getDiagonalTableGrid(table), {kDiagonalTableWorkspace});
    p.workspaces.push_back(
        {kDiagonalTableWorkspace, getDiagonalTableBytes(table)});
  }
  addKernel(p.name, kernel.getConfigAttr().getWarps() * kWarpSize,
            *kernel.getSmemBytes(), getKernelGrid(kernel));
  // Split-KV: the split count from the SM count and this kernel's resident
  // blocks on its chip; with more than one split, the combine kernel runs
  // after the attention kernel.
  if (hasKVSplits(kernel)) {
    int64_t blocksPerSM = 1;
    if (cubin.registers)
      blocksPerSM = std::max<int64_t>(
          1, computeOccupancy(arch, kernel.getConfigAttr().getWarps(),
                              *cubin.registers, *kernel.getSmemBytes())
                 .blocks);
    p.derived.push_back({kKVSplitsSize, getKVSplitsRule(kernel, blocksPerSM)});
    p.workspaces.push_back({kPartialOWorkspace, getPartialOBytes(kernel)});
    p.workspaces.push_back({kPartialLseWorkspace, getPartialLseBytes(kernel)});
    int64_t attention = static_cast<int64_t>(p.kernels.size()) - 1;
    addKernel(p.name + kCombineKernelSuffix, kCombineRowsPerBlock * kWarpSize,
              0, getCombineGrid(kernel));
    using Op = plan::Expr::Op;
    p.dispatch.push_back(
        {plan::Expr::apply(Op::Gt, {plan::Expr::named(kKVSplitsSize),
                                    plan::Expr::constant(1)}),
         {attention, attention + 1}});
    p.dispatch.push_back({plan::Expr::constant(1), {attention}});
  }
  p.infoJson = getInfoJson(kernel);
  return p;
}

//===----------------------------------------------------------------------===//
// compile()
//===----------------------------------------------------------------------===//

static bool spills(const CubinResult &cubin) {
  return cubin.spillStores.value_or(0) > 0 || cubin.spillLoads.value_or(0) > 0;
}

/// The plan of a family: `first` (its first kernel's plan) with the later
/// kernels' kernels appended in order, and their workspaces and checks
/// where new. The kernels share the family's arguments (FamilyOp's
/// verifier), so their parameters and size bindings agree.
static FailureOr<plan::LaunchPlan>
joinFamilyPlans(FamilyOp family, ArrayRef<KernelOp> kernels,
                const ArchInfo &isa, StringRef cubinFile,
                const CubinResult &cubin, plan::LaunchPlan first) {
  first.name = family.getSymName().str();
  for (KernelOp kernel : kernels.drop_front()) {
    plan::LaunchPlan next = buildLaunchPlan(kernel, isa, cubinFile, cubin);
    if (!next.dispatch.empty() || !next.derived.empty())
      return family.emitOpError()
             << "lists @" << kernel.getSymName()
             << ", which splits KV; a family's kernels run every time, in "
                "order";
    for (plan::Kernel &k : next.kernels)
      first.kernels.push_back(std::move(k));
    for (plan::Workspace &ws : next.workspaces) {
      int64_t seen = first.findWorkspace(ws.name);
      if (seen < 0) {
        first.workspaces.push_back(std::move(ws));
        continue;
      }
      // The declared workspaces are the family's, the same in every
      // kernel; another of the same name is a second block mask or table.
      if (!first.workspaces[seen].zeroed || !ws.zeroed)
        return family.emitOpError()
               << "lists @" << kernel.getSymName() << ", whose workspace '"
               << ws.name
               << "' another kernel of the family has too; one kernel of a "
                  "family may have a run-time block mask, a diagonal table";
    }
    for (plan::Check &check : next.checks)
      if (llvm::none_of(first.checks, [&](const plan::Check &c) {
            return c.message == check.message;
          }))
        first.checks.push_back(std::move(check));
  }
  if (!first.dispatch.empty())
    return family.emitOpError()
           << "lists @" << KernelOp(kernels.front()).getSymName()
           << ", which splits KV; a family's kernels run every time, in order";
  return first;
}

/// One compile of a clone of the kernel-level `module` with `pins`, stage by
/// stage up to `options.stopAfter`.
namespace {
/// Seconds since it was made, or since the last lap.
class Stopwatch {
public:
  double lap() {
    auto now = std::chrono::steady_clock::now();
    double seconds = std::chrono::duration<double>(now - last).count();
    last = now;
    return seconds;
  }

private:
  std::chrono::steady_clock::time_point last =
      std::chrono::steady_clock::now();
};
} // namespace

static FailureOr<CompiledKernel> compileOnce(ModuleOp module,
                                             const ConfigOverrides &pins,
                                             const CompileOptions &options,
                                             StringRef ptxas) {
  CompiledKernel result;
  result.tileModule = module.clone();
  ModuleOp work = *result.tileModule;
  // One kernel, or a family's kernels in launch order (the first one's
  // figures are the report's).
  auto families = work.getOps<FamilyOp>();
  FamilyOp family = families.empty() ? FamilyOp() : *families.begin();
  SmallVector<KernelOp, 4> planKernels =
      family ? family.getKernelOps()
             : SmallVector<KernelOp, 4>{*work.getOps<KernelOp>().begin()};
  KernelOp kernel = planKernels.front();
  result.name = family ? family.getSymName().str() : kernel.getSymName().str();
  result.arch = &kernel.getArch().getInfo();
  result.isa = options.isa ? &getArchInfo(*options.isa) : result.arch;
  Stopwatch clock;
  if (failed(runTilePipeline(work, pins)))
    return failure();
  result.times.tile = clock.lap();
  if (options.stopAfter == CompileStage::Tile)
    return result;

  // Lower a copy: the tile module stays readable for reports and plans.
  OwningOpRef<ModuleOp> lowered = work.clone();
  // The family is the plan's; the code is its kernels'.
  for (FamilyOp f : llvm::make_early_inc_range(lowered->getOps<FamilyOp>()))
    f.erase();
  PassManager lower(work.getContext());
  lower.addPass(createConvertAttnToNVVM({result.isa->name.str()}));
  if (failed(lower.run(*lowered)))
    return failure();
  result.times.lowering = clock.lap();
  if (options.stopAfter == CompileStage::Nvvm) {
    llvm::raw_string_ostream os(result.nvvmIR);
    lowered->print(os);
    os << "\n";
    return result;
  }
  FailureOr<std::string> ptx = emitPTX(*lowered, *result.isa, &result.llvmIR);
  if (failed(ptx))
    return failure();
  result.ptx = std::move(*ptx);
  result.times.llvm = clock.lap();
  if (options.stopAfter != CompileStage::Cubin)
    return result;

  FailureOr<CubinResult> cubin =
      assembleCubin(ptxas, result.ptx, *result.isa, kernel.getLoc(),
                    options.ptxasTimeoutSeconds);
  if (failed(cubin))
    return failure();
  result.times.ptxas = clock.lap();
  result.cubin = std::move(*cubin);
  KernelOp tile = kernel;
  // The attention kernel's own figures, in a cubin with a block-mask kernel.
  CubinResult::EntryResources used =
      getEntryResources(*result.cubin, tile.getSymName());
  result.cubin->registers = used.registers;
  result.cubin->spillStores = used.spillStores;
  result.cubin->spillLoads = used.spillLoads;
  if (result.cubin->registers)
    result.occupancy = computeOccupancy(
        *result.arch, tile.getConfigAttr().getWarps(),
        *result.cubin->registers, *tile.getSmemBytes());
  std::string cubinFile = options.cubinFileName.empty()
                              ? result.name + ".cubin"
                              : options.cubinFileName;
  result.launchPlan =
      buildLaunchPlan(tile, *result.isa, cubinFile, *result.cubin);
  if (family) {
    FailureOr<plan::LaunchPlan> joined =
        joinFamilyPlans(family, planKernels, *result.isa, cubinFile,
                        *result.cubin, std::move(*result.launchPlan));
    if (failed(joined))
      return failure();
    result.launchPlan = std::move(*joined);
  }
  return result;
}

/// The ptxas feedback loop: the cost model's register estimate is a model,
/// ptxas is the truth. When the searched config spills, compile the next
/// feasible candidates in rank order whose register estimate is at most that
/// of every candidate seen spilling (at most `kMaxTries`; estimates are
/// coarse, so an equal one still gets its try), and take the first without
/// spills. Diagnostics of candidates that fail are not the user's
/// concern.
static void avoidSpills(const CompileOptions &options, ModuleOp kernelLevel,
                        const ConfigOverrides &pins, StringRef ptxas,
                        CompiledKernel &build) {
  constexpr int kMaxTries = 4;
  ConfigAttr chosen = build.getTileKernel().getConfigAttr();
  std::string spilled =
      llvm::formatv("({0}) spilled {1} B", formatConfig(chosen),
                    build.cubin->spillStores.value_or(0));
  KernelOp original = *kernelLevel.getOps<KernelOp>().begin();
  SmallVector<ConfigCandidate> ranked = rankConfigs(original, pins);
  int64_t ceiling = std::numeric_limits<int64_t>::max();
  for (const ConfigCandidate &candidate : ranked)
    if (candidate.config == chosen)
      ceiling = candidate.estimatedRegs;
  int tries = 0;
  for (const ConfigCandidate &candidate : ranked) {
    if (!candidate.isFeasible() || candidate.config == chosen ||
        candidate.estimatedRegs > ceiling)
      continue;
    if (++tries > kMaxTries)
      break;
    ScopedDiagnosticHandler quiet(kernelLevel.getContext(),
                                  [](Diagnostic &) { return success(); });
    ConfigAttr c = candidate.config;
    ConfigOverrides exact{c.getTileM(), c.getTileN(), c.getStages(),
                          c.getWarps(), c.getQInRegs(), pins.family,
                          c.getKvWarps()};
    FailureOr<CompiledKernel> alternative =
        compileOnce(kernelLevel, exact, options, ptxas);
    if (failed(alternative))
      continue;
    if (spills(*alternative->cubin)) {
      ceiling = candidate.estimatedRegs;
      continue;
    }
    build = std::move(*alternative);
    build.fallbackNote =
        spilled + "; took the next-ranked candidate without spills";
    return;
  }
  build.fallbackNote = spilled + "; no other candidate avoided spills";
}

/// Checks the chip and ISA can run `kernel`'s code path.
static LogicalResult checkCodePath(KernelOp kernel,
                                   const CompileOptions &options) {
  if (failed(checkCodePathImplemented(kernel, kernel.getArch())))
    return failure();
  if (!options.isa)
    return success();
  const ArchInfo &isa = getArchInfo(*options.isa);
  CodePath path = kernel.getArch().getInfo().codePath;
  if (isaSupportsCodePath(isa, path))
    return success();
  return kernel.emitError()
         << "ISA " << isa.name << " lacks the instructions of the "
         << stringifyCodePath(path) << " code path (cp.async, ldmatrix, "
         << "bf16 mma.sync.m16n8k16); use " << archNamesWithCodePath(path)
         << " or sm_100";
}

/// A family: its kernels, each a tile program with a stated config, in one
/// module, one PTX, one cubin and one plan.
static FailureOr<CompiledKernel>
compileFamily(ModuleOp module, ArrayRef<FamilyOp> families,
              ArrayRef<KernelOp> kernels, const CompileOptions &options) {
  if (families.size() != 1)
    return FamilyOp(families[1]).emitOpError()
           << "is the module's second family; the compile API builds one "
              "launch plan";
  FamilyOp family = families.front();
  SmallVector<KernelOp, 4> members = family.getKernelOps();
  for (KernelOp kernel : kernels)
    if (!llvm::is_contained(members, kernel))
      return kernel.emitError()
             << "is not in family @" << family.getSymName()
             << "; a module with a family holds only its kernels";
  if (options.pins.any())
    return family.emitOpError()
           << "takes no config options: its kernels state their configs";
  const ArchInfo &arch = members.front().getArch().getInfo();
  for (KernelOp kernel : members) {
    if (&kernel.getArch().getInfo() != &arch)
      return family.emitOpError()
             << "lists kernels for " << arch.name << " and "
             << kernel.getArch().getInfo().name << "; one plan has one chip";
    if (failed(checkCodePath(kernel, options)))
      return failure();
  }
  std::string ptxas;
  if (options.stopAfter == CompileStage::Cubin) {
    FailureOr<std::string> found =
        findPtxas(options.ptxasPath, family.getLoc());
    if (failed(found))
      return failure();
    ptxas = *found;
  }
  return compileOnce(module, ConfigOverrides(), options, ptxas);
}

StringRef flashtile::stringifyDirection(Direction direction) {
  return direction == Direction::Backward ? "bwd" : "fwd";
}

std::optional<Direction> flashtile::parseDirection(StringRef name) {
  for (Direction d : {Direction::Forward, Direction::Backward})
    if (name == stringifyDirection(d))
      return d;
  return std::nullopt;
}

/// The backward family of the module's one kernel-level attention, built
/// into a copy of the module and compiled as a family.
static FailureOr<CompiledKernel> compileBackward(ModuleOp module,
                                                 const CompileOptions &options) {
  SmallVector<KernelOp> kernels = llvm::to_vector(module.getOps<KernelOp>());
  if (!module.getOps<FamilyOp>().empty() || kernels.size() != 1 ||
      isTileProgram(kernels.front()))
    return emitError(kernels.empty() ? module.getLoc() : kernels.front().getLoc())
           << "the backward is built from one kernel-level attn.kernel (one "
              "that holds an attn.attention); a tile program or a family "
              "states its own kernels";
  // The forward's pins that shape the backward's main kernel; stages are
  // its Q and dO slots.
  const ConfigOverrides &pins = options.pins;
  if (pins.qInRegs || pins.family != ConfigFamily::Prefill)
    return kernels.front().emitError()
           << "the backward takes tile_m, tile_n, warps, kv_warps and stages "
              "(its Q and dO slots) only; drop q_in_regs and the family";
  attn::BackwardOptions backward;
  backward.pins = {pins.tileM, pins.tileN, pins.warps, pins.stages,
                   pins.kvWarps};
  backward.deterministic = options.deterministic;
  backward.tensorGrads.assign(options.tensorGrads.begin(),
                              options.tensorGrads.end());
  if (failed(checkCodePath(kernels.front(), options)))
    return failure();
  Stopwatch clock;
  OwningOpRef<ModuleOp> work = module.clone();
  KernelOp forward = *work->getOps<KernelOp>().begin();
  if (failed(buildBackwardFamily(forward, backward)))
    return failure();
  forward.erase();
  double built = clock.lap();
  CompileOptions family = options;
  family.direction = Direction::Forward;
  family.pins = ConfigOverrides();
  family.deterministic = false;
  family.tensorGrads.clear();
  FailureOr<CompiledKernel> result = compile(*work, family);
  // Building the family's tile programs is part of the tile pipeline
  // (flashtile::compile times the whole).
  if (succeeded(result))
    result->times.tile += built;
  return result;
}

static FailureOr<CompiledKernel> compileTimed(ModuleOp module,
                                              const CompileOptions &options);

FailureOr<CompiledKernel> flashtile::compile(ModuleOp module,
                                             const CompileOptions &options) {
  Stopwatch clock;
  FailureOr<CompiledKernel> result = compileTimed(module, options);
  if (succeeded(result))
    result->times.total = clock.lap();
  return result;
}

/// flashtile::compile but for the total time.
static FailureOr<CompiledKernel> compileTimed(ModuleOp module,
                                              const CompileOptions &options) {
  if (options.direction == Direction::Backward)
    return compileBackward(module, options);
  if (options.deterministic)
    return emitError(module.getLoc())
           << "a deterministic dQ is an option of the backward; compile with "
              "direction bwd (--direction=bwd)";
  if (!options.tensorGrads.empty())
    return emitError(module.getLoc())
           << "tensor gradients are an option of the backward; compile with "
              "direction bwd (--direction=bwd)";
  SmallVector<KernelOp> kernels = llvm::to_vector(module.getOps<KernelOp>());
  auto families = llvm::to_vector(module.getOps<FamilyOp>());
  if (!families.empty())
    return compileFamily(module, families, kernels, options);
  if (kernels.size() != 1)
    return emitError(module.getLoc())
           << "the compile API takes one attn.kernel, or the kernels of one "
              "attn.family; the input has "
           << kernels.size() << " kernels and no family";
  KernelOp kernel = kernels.front();
  if (isTileProgram(kernel)) {
    // A tile program's buffers and fragments are sized for its config.
    if (!kernel.getConfigAttr())
      return kernel.emitError()
             << "a tile program (an attn.kernel with no attn.attention) "
                "must state its config(#attn.config<...>): its buffers and "
                "fragments are sized for it";
  }
  // A stated config is the kernel's; a pin would be silently dropped (or
  // contradict it), so none is taken.
  if (ConfigAttr stated = kernel.getConfigAttr(); stated && options.pins.any())
    return kernel.emitError()
           << "config options do not apply to a kernel that states its "
              "config: it is the one it states, "
           << Attribute(stated) << "; drop the options or the config";
  if (failed(checkCodePath(kernel, options)))
    return failure();

  std::string ptxas;
  if (options.stopAfter == CompileStage::Cubin) {
    FailureOr<std::string> found = findPtxas(options.ptxasPath, kernel.getLoc());
    if (failed(found))
      return failure();
    ptxas = *found;
  }

  FailureOr<CompiledKernel> build =
      compileOnce(module, options.pins, options, ptxas);
  if (failed(build))
    return failure();
  bool searched = !isFullyPinned(options.pins) && !kernel.getConfigAttr();
  if (options.stopAfter == CompileStage::Cubin && searched &&
      options.spillFallback && spills(*build->cubin))
    avoidSpills(options, module, options.pins, ptxas, *build);
  return build;
}

FailureOr<CompiledKernel>
flashtile::compileSource(MLIRContext &ctx, StringRef source,
                         StringRef bufferName, const CompileOptions &options,
                         std::string &diagnostics) {
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(source, bufferName), llvm::SMLoc());
  llvm::raw_string_ostream os(diagnostics);
  SourceMgrDiagnosticHandler handler(sourceMgr, &ctx, os);
  OwningOpRef<ModuleOp> module = parseInput(ctx, sourceMgr);
  if (!module)
    return failure();
  return compile(*module, options);
}
