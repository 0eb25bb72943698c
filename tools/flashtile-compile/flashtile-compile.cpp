//===- flashtile-compile.cpp - The FlashTile compiler driver --------------===//
//
// Takes an attention kernel, from an .mlir file or from the flags of the
// built-in FlashAttention-forward spec, runs the compile pipeline and emits
// what was asked:
//
//   flashtile-compile --arch=sm_120 --dtype=f16 --head-dim=128 --emit=plan
//   flashtile-compile kernel.mlir --emit=plan --format=json
//   flashtile-compile --head-dim=128 --causal --emit=cubin -o k.cubin \
//       --metadata k.json --report
//
// Every problem is a diagnostic with a location and a non-zero exit code.
//
//===----------------------------------------------------------------------===//

#include "flashtile/Conversion/AttnToNVVM/KernelABI.h"
#include "flashtile/Conversion/Passes.h"
#include "flashtile/DSL/FlashAttention.h"
#include "flashtile/Dialect/Attn/Analysis/SharedMemoryAllocation.h"
#include "flashtile/Dialect/Attn/IR/Attn.h"
#include "flashtile/Dialect/Attn/Transforms/ConfigSelection.h"
#include "flashtile/Dialect/Attn/Transforms/Passes.h"
#include "flashtile/Target/PTX.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"

#include <limits>

using namespace mlir;
using namespace flashtile;
using namespace flashtile::attn;
namespace cl = llvm::cl;

//===----------------------------------------------------------------------===//
// Command line
//===----------------------------------------------------------------------===//

static cl::OptionCategory specCat("Built-in FlashAttention-forward spec "
                                  "(when no input file is given)");
static cl::OptionCategory configCat("Tile configuration (unset: chosen by "
                                    "config selection)");
static cl::OptionCategory outputCat("Output");

static cl::opt<std::string> inputFile(cl::Positional,
                                      cl::desc("[kernel.mlir]"),
                                      cl::init(""));
static cl::opt<std::string> archName("arch", cl::desc("Target chip"),
                                     cl::init("sm_120"), cl::cat(specCat));
static cl::opt<std::string> dtypeName("dtype", cl::desc("f16 or bf16"),
                                      cl::init("f16"), cl::cat(specCat));
static cl::opt<int64_t> headDim("head-dim", cl::desc("Head dim of Q and K"),
                                cl::init(0), cl::cat(specCat));
static cl::opt<int64_t> headDimV("head-dim-v",
                                 cl::desc("Head dim of V and O (default: "
                                          "--head-dim)"),
                                 cl::init(0), cl::cat(specCat));
static cl::opt<bool> causal("causal",
                            cl::desc("Causal mask, aligned bottom-right"),
                            cl::init(false), cl::cat(specCat));
static cl::opt<std::string> window(
    "window",
    cl::desc("Sliding window LEFT,RIGHT in keys (-1: unbounded on that side)"),
    cl::init(""), cl::cat(specCat));
static cl::opt<std::string> kernelName("kernel-name",
                                       cl::desc("Symbol of the kernel"),
                                       cl::init("flash_fwd"),
                                       cl::cat(specCat));

static cl::opt<int64_t> tileM("tile-m", cl::desc("Query rows per block"),
                              cl::init(0), cl::cat(configCat));
static cl::opt<int64_t> tileN("tile-n", cl::desc("KV rows per loop step"),
                              cl::init(0), cl::cat(configCat));
static cl::opt<int64_t> stages("stages", cl::desc("K/V shared-memory slots"),
                               cl::init(0), cl::cat(configCat));
static cl::opt<int64_t> warps("warps", cl::desc("Warps per block"),
                              cl::init(0), cl::cat(configCat));
static cl::opt<std::string> qInRegs("q-in-regs",
                                    cl::desc("true or false: keep Q in "
                                             "registers during the KV loop"),
                                    cl::init(""), cl::cat(configCat));

enum class Emit { Plan, Configs, Mlir, Nvvm, Llvm, Ptx, Cubin };
static cl::opt<Emit> emit(
    "emit", cl::desc("What to emit"), cl::init(Emit::Plan),
    cl::values(clEnumValN(Emit::Plan, "plan",
                          "the chosen config and the shared-memory plan"),
               clEnumValN(Emit::Configs, "configs",
                          "every candidate config, ranked, with its score or "
                          "the reason it was rejected"),
               clEnumValN(Emit::Mlir, "mlir", "the tile-level IR"),
               clEnumValN(Emit::Nvvm, "nvvm",
                          "the LLVM + NVVM dialect IR of the sm80 path"),
               clEnumValN(Emit::Llvm, "llvm", "the optimized LLVM IR"),
               clEnumValN(Emit::Ptx, "ptx", "PTX from LLVM's NVPTX backend"),
               clEnumValN(Emit::Cubin, "cubin", "a cubin assembled by ptxas")),
    cl::cat(outputCat));
enum class Format { Text, Json };
static cl::opt<Format> format(
    "format", cl::desc("Format of --emit=plan|configs"), cl::init(Format::Text),
    cl::values(clEnumValN(Format::Text, "text", "for people"),
               clEnumValN(Format::Json, "json", "one JSON object")),
    cl::cat(outputCat));
static cl::opt<std::string> outputFile("o", cl::desc("Output file"),
                                       cl::value_desc("file"), cl::init("-"),
                                       cl::cat(outputCat));
static cl::opt<std::string> isaName(
    "isa",
    cl::desc("Instruction set of the PTX and cubin (default: the chip's). "
             "--arch=sm_120 --isa=sm_90 builds the SM120 configuration (tiles, "
             "code path, 99 KiB budget) for an sm_90 GPU"),
    cl::init(""), cl::cat(outputCat));
static cl::opt<std::string> ptxasPath(
    "ptxas", cl::desc("ptxas to use (default: $CUDA_HOME/bin, "
                      "/usr/local/cuda/bin, then PATH)"),
    cl::init(""), cl::cat(outputCat));
static cl::opt<std::string> metadataFile(
    "metadata",
    cl::desc("With --emit=cubin: write the kernel's launch metadata (JSON) "
             "here, for the runtimes"),
    cl::value_desc("file"), cl::init(""), cl::cat(outputCat));
static cl::opt<bool> spillFallback(
    "spill-fallback",
    cl::desc("With --emit=cubin and a searched config: when ptxas reports "
             "spills, try the next-ranked candidates and keep the first that "
             "does not spill (default: on)"),
    cl::init(true), cl::cat(configCat));
static cl::opt<bool> report(
    "report",
    cl::desc("With --emit=cubin: print the resource report (smem plan, "
             "registers, spills, occupancy) to stdout"),
    cl::init(false), cl::cat(outputCat));

//===----------------------------------------------------------------------===//
// Input
//===----------------------------------------------------------------------===//

/// True when any built-in spec flag was given.
static bool specFlagsGiven() {
  return archName.getNumOccurrences() || dtypeName.getNumOccurrences() ||
         headDim.getNumOccurrences() || headDimV.getNumOccurrences() ||
         causal.getNumOccurrences() || kernelName.getNumOccurrences() ||
         window.getNumOccurrences();
}

/// The module to compile: parsed from the input file, or built from flags.
static OwningOpRef<ModuleOp> loadInput(MLIRContext &ctx,
                                       llvm::SourceMgr &sourceMgr) {
  if (!inputFile.empty()) {
    if (specFlagsGiven()) {
      emitError(UnknownLoc::get(&ctx))
          << "--arch/--dtype/--head-dim/--head-dim-v/--causal/--window/"
             "--kernel-name "
             "describe the built-in kernel and cannot be combined with an "
             "input file; the file's attn.kernel carries them";
      return nullptr;
    }
    std::string message;
    std::unique_ptr<llvm::MemoryBuffer> buffer =
        openInputFile(inputFile, &message);
    if (!buffer) {
      emitError(UnknownLoc::get(&ctx))
          << "cannot read '" << inputFile << "': " << message;
      return nullptr;
    }
    sourceMgr.AddNewSourceBuffer(std::move(buffer), SMLoc());
    return parseSourceFile<ModuleOp>(sourceMgr, &ctx);
  }

  Location loc = FileLineColLoc::get(&ctx, "<flashtile-compile flags>", 0, 0);
  if (headDim == 0) {
    emitError(loc) << "give an .mlir file, or --head-dim=N (with --arch, "
                      "--dtype, ...) for the built-in FlashAttention forward";
    return nullptr;
  }
  const ArchInfo *arch = lookupArch(archName);
  if (!arch) {
    emitError(loc) << "unknown chip '" << archName
                   << "'; known chips: " << knownArchNames();
    return nullptr;
  }
  dsl::AttentionSpec spec;
  spec.name = kernelName;
  spec.chip = arch->chip;
  if (dtypeName == "f16" || dtypeName == "bf16") {
    spec.dtype = dtypeName == "f16" ? dsl::DType::F16 : dsl::DType::BF16;
  } else {
    emitError(loc) << "unknown dtype '" << dtypeName
                   << "'; supported: f16, bf16";
    return nullptr;
  }
  spec.headDim = headDim;
  spec.headDimV = headDimV;
  spec.causal = causal;
  if (!window.empty()) {
    StringRef leftText, rightText;
    std::tie(leftText, rightText) = StringRef(window).split(',');
    int64_t left, right;
    if (leftText.trim().getAsInteger(10, left) ||
        rightText.trim().getAsInteger(10, right)) {
      emitError(loc) << "--window must be LEFT,RIGHT (integers, -1 for "
                        "unbounded), got '"
                     << window << "'";
      return nullptr;
    }
    spec.windowLeft = left;
    spec.windowRight = right;
  }
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  if (failed(dsl::buildAttentionKernel(*module, spec, loc)))
    return nullptr;
  return module;
}

/// The config flags as pins for config selection.
static FailureOr<ConfigOverrides> readOverrides(MLIRContext &ctx) {
  ConfigOverrides pins;
  for (auto [flag, value] :
       {std::pair<StringRef, int64_t>{"--tile-m", tileM},
        {"--tile-n", tileN}, {"--stages", stages}, {"--warps", warps}})
    if (value < 0)
      return emitError(UnknownLoc::get(&ctx))
             << flag << " must be positive (or 0 to let config selection "
             << "choose), got " << value;
  auto pin = [](int64_t value) {
    return value ? std::optional<int64_t>(value) : std::nullopt;
  };
  pins.tileM = pin(tileM);
  pins.tileN = pin(tileN);
  pins.stages = pin(stages);
  pins.warps = pin(warps);
  if (qInRegs == "true" || qInRegs == "false")
    pins.qInRegs = qInRegs == "true";
  else if (!qInRegs.empty())
    return emitError(UnknownLoc::get(&ctx))
           << "--q-in-regs must be true or false, got '" << qInRegs << "'";
  return pins;
}

//===----------------------------------------------------------------------===//
// Output
//===----------------------------------------------------------------------===//

/// What the kernel-level op said, kept before expansion erases it.
struct KernelSummary {
  std::string name;
  std::string dtype;
  int64_t headDim, headDimV;
  bool causal;
  int64_t windowLeft, windowRight;
  float scale;
};

static KernelSummary summarize(KernelOp kernel) {
  KernelSummary s;
  s.name = kernel.getSymName().str();
  auto qType = cast<MemRefType>(kernel.getQ().getType());
  llvm::raw_string_ostream(s.dtype) << qType.getElementType();
  s.headDim = qType.getDimSize(3);
  s.headDimV = cast<MemRefType>(kernel.getV().getType()).getDimSize(3);
  AttentionOp attention = *kernel.getBodyBlock().getOps<AttentionOp>().begin();
  s.causal = attention.getCausal();
  std::tie(s.windowLeft, s.windowRight) = attention.getEffectiveWindow();
  s.scale = attention.getScale();
  return s;
}

static std::string shapeString(MemRefType type) {
  std::string str;
  llvm::raw_string_ostream os(str);
  os << type.getDimSize(0) << "x" << type.getDimSize(1) << "x"
     << type.getDimSize(2) << "x" << type.getElementType();
  return str;
}

static void printPlanText(llvm::raw_ostream &os, KernelOp kernel,
                          const KernelSummary &s) {
  const ArchInfo &arch = kernel.getArch().getInfo();
  ConfigAttr c = kernel.getConfigAttr();
  int64_t total = *kernel.getSmemBytes();
  os << "kernel @" << s.name << " for " << arch.name << " (code path "
     << stringifyCodePath(arch.codePath) << ")\n";
  os << "  " << s.dtype << ", head_dim " << s.headDim << ", head_dim_v "
     << s.headDimV;
  if (s.causal)
    os << ", causal";
  else if (s.windowLeft >= 0 || s.windowRight >= 0)
    os << ", window (" << s.windowLeft << ", " << s.windowRight << ")";
  os << ", softmax_scale " << llvm::format("%g", s.scale) << "\n";
  os << "  config: tile_m=" << c.getTileM() << " tile_n=" << c.getTileN()
     << " stages=" << c.getStages() << " warps=" << c.getWarps()
     << " q_in_regs=" << (c.getQInRegs() ? "true" : "false") << "\n";
  os << "  shared memory plan:\n";
  os << llvm::formatv("    {0,-6} {1,8} {2,8}  {3,-18} {4}\n", "buffer",
                      "offset", "bytes", "shape", "shares bytes with");
  SmallVector<BufferPlacement> buffers = *readAllocatedBuffers(kernel);
  for (const BufferPlacement &b : buffers) {
    std::string shares = llvm::join(getBuffersSharingBytes(buffers, b), ", ");
    os << llvm::formatv("    {0,-6} {1,8} {2,8}  {3,-18} {4}\n",
                        b.alloc.getName(), b.offset, b.bytes,
                        shapeString(b.alloc.getType()),
                        shares.empty() ? "-" : shares);
  }
  os << llvm::formatv("  total: {0} B of {1} B per block ({2:F1} of {3:F1} "
                      "KiB)\n",
                      total, arch.smemPerBlock, total / 1024.0,
                      arch.smemPerBlock / 1024.0);
  os << "  blocks per SM by shared memory: " << blocksPerSMBySmem(arch, total)
     << " (" << arch.smemPerSM << " B per SM, " << arch.smemReservedPerBlock
     << " B reserved per block)\n";
}

static llvm::json::Object configJson(ConfigAttr c) {
  return llvm::json::Object{{"tile_m", c.getTileM()},
                            {"tile_n", c.getTileN()},
                            {"stages", c.getStages()},
                            {"warps", c.getWarps()},
                            {"q_in_regs", c.getQInRegs()}};
}

/// What a kernel computes and how it is tiled: the keys the plan and the
/// launch metadata share.
static llvm::json::Object kernelJson(KernelOp kernel, const KernelSummary &s) {
  const ArchInfo &arch = kernel.getArch().getInfo();
  return llvm::json::Object{
      {"kernel", s.name},
      {"arch", arch.name},
      {"code_path", stringifyCodePath(arch.codePath)},
      {"dtype", s.dtype},
      {"head_dim", s.headDim},
      {"head_dim_v", s.headDimV},
      {"causal", s.causal},
      {"window", llvm::json::Array{s.windowLeft, s.windowRight}},
      {"softmax_scale", s.scale},
      {"config", configJson(kernel.getConfigAttr())},
  };
}

static llvm::json::Object planJson(KernelOp kernel, const KernelSummary &s) {
  const ArchInfo &arch = kernel.getArch().getInfo();
  int64_t total = *kernel.getSmemBytes();
  llvm::json::Array buffers;
  SmallVector<BufferPlacement> placements = *readAllocatedBuffers(kernel);
  for (const BufferPlacement &b : placements) {
    MemRefType type = b.alloc.getType();
    buffers.push_back(llvm::json::Object{
        {"name", b.alloc.getName()},
        {"offset", b.offset},
        {"bytes", b.bytes},
        {"shape", llvm::json::Array{type.getDimSize(0), type.getDimSize(1),
                                    type.getDimSize(2)}},
        {"live", llvm::json::Array{b.live.begin, b.live.end}}});
  }
  llvm::json::Object plan = kernelJson(kernel, s);
  plan["buffers"] = std::move(buffers);
  plan["smem_bytes"] = total;
  plan["smem_limit_bytes"] = arch.smemPerBlock;
  plan["smem_per_sm_bytes"] = arch.smemPerSM;
  plan["smem_reserved_per_block_bytes"] = arch.smemReservedPerBlock;
  plan["blocks_per_sm_by_smem"] = blocksPerSMBySmem(arch, total);
  return plan;
}

static void printConfigs(llvm::raw_ostream &os, KernelOp kernel,
                         ArrayRef<ConfigCandidate> candidates) {
  if (format == Format::Json) {
    llvm::json::Array list;
    for (const ConfigCandidate &c : candidates) {
      llvm::json::Object entry{
          {"config", configJson(c.config)},
          {"feasible", c.isFeasible()},
          {"smem_bytes", c.smemBytes}};
      if (c.isFeasible()) {
        entry["score"] = c.score;
        entry["estimated_regs"] = c.estimatedRegs;
        entry["blocks_per_sm"] = c.blocksPerSM;
        entry["resident_warps"] = c.residentWarps;
      } else {
        entry["rejection"] = c.rejection;
      }
      list.push_back(std::move(entry));
    }
    os << llvm::formatv("{0:2}", llvm::json::Value(llvm::json::Object{
                                     {"kernel", kernel.getSymName()},
                                     {"arch", kernel.getArch().getInfo().name},
                                     {"candidates", std::move(list)}}))
       << "\n";
    return;
  }
  os << "config candidates for @" << kernel.getSymName() << " on "
     << kernel.getArch().getInfo().name << ", best first:\n";
  os << llvm::formatv("  {0,6} {1,6} {2,6} {3,5} {4,9}  {5,7} {6,8} {7,5} "
                      "{8,6}  {9}\n",
                      "tile_m", "tile_n", "stages", "warps", "q_in_regs",
                      "score", "smem B", "regs", "warps", "(per SM)");
  for (const ConfigCandidate &c : candidates) {
    os << llvm::formatv("  {0,6} {1,6} {2,6} {3,5} {4,9}  ", c.config.getTileM(),
                        c.config.getTileN(), c.config.getStages(),
                        c.config.getWarps(),
                        c.config.getQInRegs() ? "true" : "false");
    if (c.isFeasible())
      os << llvm::formatv("{0,7:F3} {1,8} {2,5} {3,6}\n", c.score, c.smemBytes,
                          c.estimatedRegs, c.residentWarps);
    else
      os << "rejected: " << c.rejection << "\n";
  }
}

/// The launch metadata of a compiled kernel, for the runtimes.
static llvm::json::Object metadataJson(KernelOp kernel, const KernelSummary &s,
                                       const ArchInfo &isa,
                                       StringRef cubinFile,
                                       const CubinResult &cubin) {
  ConfigAttr c = kernel.getConfigAttr();
  llvm::json::Array params;
  for (const KernelParam &param : getKernelParams())
    params.push_back(llvm::json::Object{
        {"name", param.name}, {"type", stringifyParamKind(param.kind)}});
  auto optional = [](std::optional<int64_t> value) -> llvm::json::Value {
    if (value)
      return *value;
    return nullptr;
  };
  llvm::json::Object metadata = kernelJson(kernel, s);
  metadata["format"] = "flashtile-kernel-v1";
  metadata["cubin"] = cubinFile;
  metadata["isa"] = isa.name;
  metadata["block"] = llvm::json::Array{c.getWarps() * 32, 1, 1};
  metadata["grid"] = llvm::json::Array{
      "ceil_div(seqlen_q, " + std::to_string(c.getTileM()) + ")", "heads_q",
      "batch"};
  metadata["dynamic_smem_bytes"] = *kernel.getSmemBytes();
  metadata["params"] = std::move(params);
  metadata["registers"] = optional(cubin.registers);
  metadata["spill_stores"] = optional(cubin.spillStores);
  metadata["spill_loads"] = optional(cubin.spillLoads);
  return metadata;
}

/// Registers, spills and occupancy of the cubin, after the smem plan.
static void printResourceReport(llvm::raw_ostream &os, KernelOp kernel,
                                const ArchInfo &isa, const CubinResult &cubin) {
  const ArchInfo &arch = kernel.getArch().getInfo();
  int64_t threads = kernel.getConfigAttr().getWarps() * 32;
  os << "  cubin for " << isa.name << " (PTX " << isa.minPtxVersion / 10 << "."
     << isa.minPtxVersion % 10 << ", .target " << isa.ptxTarget << "), "
     << threads << " threads per block\n";
  if (!cubin.registers) {
    os << "  registers: unknown (ptxas -v printed no count)\n";
    return;
  }
  os << "  registers: " << *cubin.registers << " per thread; spills: "
     << cubin.spillStores.value_or(0) << " B stores, "
     << cubin.spillLoads.value_or(0) << " B loads\n";
  // Occupancy on the configuration's chip: registers are granted per warp
  // in units of 256, shared memory per the plan above.
  int64_t regsPerWarp = llvm::alignTo(*cubin.registers * 32, 256);
  int64_t byRegs = arch.regsPerSM / (regsPerWarp * (threads / 32));
  int64_t bySmem = blocksPerSMBySmem(arch, *kernel.getSmemBytes());
  int64_t byThreads = arch.maxThreadsPerSM / threads;
  int64_t blocks = std::min({byRegs, bySmem, byThreads, arch.maxBlocksPerSM});
  os << "  occupancy on " << arch.name << ": " << blocks
     << " block(s) per SM = " << blocks * threads / 32
     << " warps (limits: registers " << byRegs << ", shared memory "
     << bySmem << ", threads " << byThreads << ")\n";
}

/// Writes `data` to `path` ("-" is stdout).
static LogicalResult writeFile(MLIRContext &ctx, StringRef path,
                               StringRef data) {
  std::string error;
  std::unique_ptr<llvm::ToolOutputFile> file = openOutputFile(path, &error);
  if (!file)
    return emitError(UnknownLoc::get(&ctx)) << error;
  file->os() << data;
  file->keep();
  return success();
}

/// The tile pipeline: config selection (skipped where a kernel has a
/// config), expansion, allocation, barriers.
static LogicalResult runTilePipeline(ModuleOp module,
                                     const AttnSelectConfigOptions &options) {
  PassManager pm(module.getContext());
  OpPassManager &kernelPm = pm.nest<KernelOp>();
  kernelPm.addPass(createAttnSelectConfig(options));
  kernelPm.addPass(createAttnExpandToTiles());
  kernelPm.addPass(createAttnAllocateSharedMemory());
  kernelPm.addPass(createAttnInsertBarriers());
  return pm.run(module);
}

/// A tile-level module lowered to a cubin, and the facts about it that the
/// lowering erases.
struct CubinBuild {
  /// The tile-level kernel, detached, for the metadata and the report.
  OwningOpRef<KernelOp> tileKernel;
  std::string planText;
  CubinResult cubin;
};

/// Lowers the single-kernel tile-level `module` to PTX and runs ptxas.
static FailureOr<CubinBuild> buildCubin(ModuleOp module,
                                        const KernelSummary &summary,
                                        const ArchInfo &isa,
                                        StringRef ptxas) {
  CubinBuild build;
  KernelOp kernel = *module.getOps<KernelOp>().begin();
  llvm::raw_string_ostream planOs(build.planText);
  printPlanText(planOs, kernel, summary);
  build.tileKernel = cast<KernelOp>(kernel->clone());
  PassManager lower(module.getContext());
  lower.addPass(createConvertAttnToNVVM());
  if (failed(lower.run(module)))
    return failure();
  FailureOr<std::string> ptx = emitPTX(module, isa);
  if (failed(ptx))
    return failure();
  FailureOr<CubinResult> cubin =
      assembleCubin(ptxas, *ptx, isa, module.getLoc());
  if (failed(cubin))
    return failure();
  build.cubin = std::move(*cubin);
  return build;
}

static bool spills(const CubinResult &cubin) {
  return cubin.spillStores.value_or(0) > 0 || cubin.spillLoads.value_or(0) > 0;
}

/// The ptxas feedback loop: the cost model's register estimate is a model,
/// ptxas is the truth. When the searched config spills, compile the next
/// feasible candidates in rank order whose register estimate is below that of
/// every candidate seen spilling (at most `kMaxTries`), and take the first
/// without spills. Diagnostics of candidates that fail are not the user's
/// concern.
static void avoidSpills(ModuleOp kernelLevel, const ConfigOverrides &pins,
                        const KernelSummary &summary, const ArchInfo &isa,
                        StringRef ptxas, CubinBuild &build,
                        std::string &note) {
  constexpr int kMaxTries = 4;
  ConfigAttr chosen = build.tileKernel->getConfigAttr();
  std::string spilled = llvm::formatv(
      "{0}x{1} st{2} w{3} q_in_regs={4} spilled {5} B",
      chosen.getTileM(), chosen.getTileN(), chosen.getStages(),
      chosen.getWarps(), chosen.getQInRegs() ? "true" : "false",
      build.cubin.spillStores.value_or(0));
  KernelOp original = *kernelLevel.getOps<KernelOp>().begin();
  SmallVector<ConfigCandidate> ranked = rankConfigs(original, pins);
  int64_t ceiling = std::numeric_limits<int64_t>::max();
  for (const ConfigCandidate &candidate : ranked)
    if (candidate.config == chosen)
      ceiling = candidate.estimatedRegs;
  int tries = 0;
  for (const ConfigCandidate &candidate : ranked) {
    if (!candidate.isFeasible() || candidate.estimatedRegs >= ceiling)
      continue;
    if (++tries > kMaxTries)
      break;
    ScopedDiagnosticHandler quiet(kernelLevel.getContext(),
                                  [](Diagnostic &) { return success(); });
    OwningOpRef<ModuleOp> trial = kernelLevel.clone();
    (*trial->getOps<KernelOp>().begin()).setConfigAttr(candidate.config);
    if (failed(runTilePipeline(*trial, AttnSelectConfigOptions())))
      continue;
    FailureOr<CubinBuild> alternative =
        buildCubin(*trial, summary, isa, ptxas);
    if (failed(alternative))
      continue;
    if (spills(alternative->cubin)) {
      ceiling = candidate.estimatedRegs;
      continue;
    }
    note = spilled + "; took the next-ranked candidate without spills";
    build = std::move(*alternative);
    return;
  }
  note = spilled + "; no other candidate avoided spills";
}

/// Writes the cubin, its metadata and the report.
static int emitCubin(MLIRContext &ctx, CubinBuild &build,
                     const KernelSummary &summary, const ArchInfo &isa,
                     StringRef fallbackNote) {
  Location loc = build.tileKernel->getLoc();
  if (outputFile == "-" && !metadataFile.empty()) {
    emitError(loc) << "--metadata needs the cubin in a file: give -o FILE.cubin";
    return 1;
  }
  if (failed(writeFile(ctx, outputFile, build.cubin.cubin)))
    return 1;
  if (!metadataFile.empty()) {
    std::string cubinFile = llvm::sys::path::filename(outputFile).str();
    llvm::json::Object metadata = metadataJson(*build.tileKernel, summary, isa,
                                               cubinFile, build.cubin);
    std::string text =
        llvm::formatv("{0:2}\n", llvm::json::Value(std::move(metadata))).str();
    if (failed(writeFile(ctx, metadataFile, text)))
      return 1;
  }
  if (report) {
    llvm::outs() << build.planText;
    printResourceReport(llvm::outs(), *build.tileKernel, isa, build.cubin);
    if (!fallbackNote.empty())
      llvm::outs() << "  config fallback: " << fallbackNote << "\n";
  } else if (spills(build.cubin) && !fallbackNote.empty()) {
    emitWarning(loc) << "the kernel spills registers (" << fallbackNote << ")";
  }
  return 0;
}

//===----------------------------------------------------------------------===//
// main
//===----------------------------------------------------------------------===//

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  // The chip names come from the target table, which is initialised by now.
  static const std::string archHelp =
      "Target chip: " + knownArchNames() + " (default sm_120)";
  archName.setDescription(archHelp);
  cl::HideUnrelatedOptions({&specCat, &configCat, &outputCat});
  cl::ParseCommandLineOptions(
      argc, argv,
      "FlashTile: compiles FlashAttention-style kernels for NVIDIA GPUs.\n\n"
      "  flashtile-compile --arch=sm_120 --dtype=f16 --head-dim=128 "
      "[--causal] --emit=plan\n"
      "  flashtile-compile kernel.mlir --emit=plan --format=json\n"
      "  flashtile-compile --head-dim=128 --emit=cubin -o k.cubin "
      "--metadata k.json --report\n");

  MLIRContext ctx;
  // Diagnostics name the problem; a dump of the whole kernel buries it.
  ctx.printOpOnDiagnostic(false);
  ctx.loadDialect<AttnDialect, arith::ArithDialect, LLVM::LLVMDialect,
                  NVVM::NVVMDialect>();
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler diagHandler(sourceMgr, &ctx);

  OwningOpRef<ModuleOp> module = loadInput(ctx, sourceMgr);
  if (!module)
    return 1;
  FailureOr<ConfigOverrides> pins = readOverrides(ctx);
  if (failed(pins))
    return 1;

  SmallVector<KernelOp> kernels = llvm::to_vector(module->getOps<KernelOp>());
  if (kernels.empty()) {
    emitError(module->getLoc()) << "the input has no attn.kernel";
    return 1;
  }
  bool lowering = emit == Emit::Nvvm || emit == Emit::Llvm ||
                  emit == Emit::Ptx || emit == Emit::Cubin;
  if ((!metadataFile.empty() || report) && emit != Emit::Cubin) {
    emitError(module->getLoc()) << "--metadata and --report need --emit=cubin";
    return 1;
  }
  if (emit == Emit::Cubin && kernels.size() != 1) {
    emitError(module->getLoc())
        << "--emit=cubin takes one attn.kernel, the input has "
        << kernels.size();
    return 1;
  }

  // The instruction set: the chip's own unless --isa names another. The
  // configuration, code path and budget stay the chip's.
  const ArchInfo *isa = nullptr;
  if (!isaName.empty()) {
    isa = lookupArch(isaName);
    if (!isa) {
      emitError(module->getLoc()) << "unknown ISA '" << isaName
                                  << "'; known: " << knownArchNames();
      return 1;
    }
    // The kernels' code path is the chip's; today every lowered kernel
    // takes the sm80 path.
    if (!isaSupportsCodePath(*isa, CodePath::Sm80)) {
      emitError(module->getLoc())
          << "ISA " << isa->name << " lacks the instructions of the sm80 "
          << "code path (cp.async, ldmatrix, bf16 mma.sync.m16n8k16); use "
          << archNamesWithCodePath(CodePath::Sm80) << " or sm_100";
      return 1;
    }
  }

  if (emit == Emit::Configs) {
    std::string text;
    llvm::raw_string_ostream os(text);
    for (KernelOp kernel : kernels) {
      if (failed(checkCodePathImplemented(kernel, kernel.getArch())))
        return 1;
      printConfigs(os, kernel, rankConfigs(kernel, *pins));
    }
    return failed(writeFile(ctx, outputFile, text)) ? 1 : 0;
  }

  SmallVector<KernelSummary> summaries;
  for (KernelOp kernel : kernels) {
    if (kernel.getBodyBlock().getOps<AttentionOp>().empty()) {
      kernel.emitError() << "flashtile-compile expects kernel-level input "
                            "(an attn.attention op)";
      return 1;
    }
    summaries.push_back(summarize(kernel));
  }

  AttnSelectConfigOptions selectOptions;
  selectOptions.tileM = pins->tileM.value_or(0);
  selectOptions.tileN = pins->tileN.value_or(0);
  selectOptions.stages = pins->stages.value_or(0);
  selectOptions.warps = pins->warps.value_or(0);
  selectOptions.qInRegs = pins->qInRegs ? int(*pins->qInRegs) : -1;
  bool fullyPinned = pins->tileM && pins->tileN && pins->stages &&
                     pins->warps && pins->qInRegs;
  bool searched = !fullyPinned && !kernels.front().getConfigAttr();
  if (fullyPinned) {
    // An explicit config is taken as is: the allocator is its judge.
    for (KernelOp kernel : kernels) {
      ConfigAttr config = ConfigAttr::getChecked(
          [&] { return kernel.emitError() << "invalid config: "; }, &ctx,
          *pins->tileM, *pins->tileN, *pins->stages, *pins->warps,
          *pins->qInRegs);
      if (!config)
        return 1;
      kernel.setConfigAttr(config);
    }
  }
  // The kernel-level input, for compiling other candidates if the searched
  // config spills.
  OwningOpRef<ModuleOp> kernelLevel;
  if (emit == Emit::Cubin && searched && spillFallback)
    kernelLevel = module->clone();
  if (failed(runTilePipeline(*module, selectOptions)))
    return 1;

  if (!isa)
    isa = &kernels.front().getArch().getInfo();

  if (emit == Emit::Plan) {
    std::string text;
    llvm::raw_string_ostream os(text);
    llvm::json::Array plans;
    for (auto [kernel, summary] : llvm::zip(kernels, summaries)) {
      if (format == Format::Json)
        plans.push_back(planJson(kernel, summary));
      else
        printPlanText(os, kernel, summary);
    }
    if (format == Format::Json) {
      llvm::json::Value value =
          plans.size() == 1 ? llvm::json::Value(std::move(plans[0]))
                            : llvm::json::Value(std::move(plans));
      os << llvm::formatv("{0:2}\n", value);
    }
    return failed(writeFile(ctx, outputFile, text)) ? 1 : 0;
  }
  if (emit == Emit::Mlir) {
    std::string text;
    llvm::raw_string_ostream os(text);
    module->print(os);
    os << "\n";
    return failed(writeFile(ctx, outputFile, text)) ? 1 : 0;
  }
  assert(lowering && "every other emit kind returned above");
  (void)lowering;

  if (emit == Emit::Cubin) {
    FailureOr<std::string> ptxas = findPtxas(ptxasPath, module->getLoc());
    if (failed(ptxas))
      return 1;
    FailureOr<CubinBuild> build =
        buildCubin(*module, summaries.front(), *isa, *ptxas);
    if (failed(build))
      return 1;
    std::string fallbackNote;
    if (kernelLevel && spills(build->cubin))
      avoidSpills(*kernelLevel, *pins, summaries.front(), *isa, *ptxas, *build,
                  fallbackNote);
    return emitCubin(ctx, *build, summaries.front(), *isa, fallbackNote);
  }

  PassManager lower(&ctx);
  lower.addPass(createConvertAttnToNVVM());
  if (failed(lower.run(*module)))
    return 1;
  if (emit == Emit::Nvvm) {
    std::string text;
    llvm::raw_string_ostream os(text);
    module->print(os);
    os << "\n";
    return failed(writeFile(ctx, outputFile, text)) ? 1 : 0;
  }
  std::string llvmIR;
  FailureOr<std::string> ptx = emitPTX(*module, *isa, &llvmIR);
  if (failed(ptx))
    return 1;
  return failed(writeFile(ctx, outputFile, emit == Emit::Llvm ? llvmIR : *ptx))
             ? 1
             : 0;
}
