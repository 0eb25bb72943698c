//===- flashtile-compile.cpp - The FlashTile compiler driver --------------===//
//
// Takes an attention kernel, from an .mlir file or from the flags of the
// built-in FlashAttention-forward spec, runs the compile pipeline and emits
// what was asked:
//
//   flashtile-compile --arch=sm_120 --dtype=f16 --head-dim=128 --emit=plan
//   flashtile-compile kernel.mlir --emit=plan --format=json
//   flashtile-compile --head-dim=128 --causal --emit=cubin -o k.cubin \
//       --launch-plan k.plan.json --report
//
// A thin client of the compile API (flashtile/Compiler/Compiler.h): flags
// become CompileOptions, the result is printed or written. Every problem is a
// diagnostic with a location and a non-zero exit code, and a failed run
// writes no file.
//
//===----------------------------------------------------------------------===//

#include "flashtile/ABI/KernelRules.h"
#include "flashtile/Compiler/Compiler.h"
#include "flashtile/DSL/FlashAttention.h"
#include "flashtile/Compiler/Input.h"
#include "flashtile/Target/PTX.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ThreadPool.h"

#include <cstdio>
#include <optional>
#include <unistd.h>

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
static cl::opt<bool> pagedKV(
    "paged-kv",
    cl::desc("Paged KV: K and V are page pools (pages, page_size, heads_kv, "
             "dim) addressed through an i32 (batch, max_pages) block_table "
             "argument"),
    cl::init(false), cl::cat(specCat));
static cl::opt<std::string> direction(
    "direction",
    cl::desc("Which pass of the attention to build: fwd (O, LSE) or bwd (one "
             "plan of preprocess, main and convert kernels: dQ, dK, dV from "
             "O, LSE and dO)"),
    cl::init("fwd"), cl::cat(specCat));
static cl::opt<bool> deterministic(
    "deterministic",
    cl::desc("With --direction=bwd: dQ by a query-parallel kernel of its own "
             "instead of f32 atomics, the same bits every run"),
    cl::init(false), cl::cat(specCat));
static cl::list<std::string> tensorGrads(
    "grad-of",
    cl::desc("With --direction=bwd: also the gradient of this extra tensor "
             "the score_mod reads (a learned bias, slopes), added into the "
             "plan's <name>_grad argument (f32, role accumulate); "
             "comma-separated or repeated"),
    cl::CommaSeparated, cl::cat(specCat));
static cl::opt<std::string> kernelName("kernel-name",
                                       cl::desc("Symbol of the kernel"),
                                       cl::init("flash_fwd"),
                                       cl::cat(specCat));

static cl::opt<int64_t> tileM("tile-m",
                              cl::desc("Query rows per block (0 or unset: "
                                       "searched)"),
                              cl::init(0), cl::cat(configCat));
static cl::opt<int64_t> tileN("tile-n",
                              cl::desc("KV rows per loop step (0 or unset: "
                                       "searched)"),
                              cl::init(0), cl::cat(configCat));
static cl::opt<int64_t> stages("stages",
                               cl::desc("K/V shared-memory slots (0 or unset: "
                                        "searched)"),
                               cl::init(0), cl::cat(configCat));
static cl::opt<int64_t> warps("warps",
                              cl::desc("Warps per block (0 or unset: "
                                       "searched)"),
                              cl::init(0), cl::cat(configCat));
static cl::opt<std::string> family(
    "family",
    cl::desc("The kernel family: prefill (128/64-row query tiles) or decode "
             "(a 16-row tile of packed GQA rows with KV warps, for decode "
             "steps and short queries)"),
    cl::init("prefill"), cl::cat(configCat));
static cl::opt<int64_t> kvWarps("kv-warps",
                                cl::desc("Warps that split each KV tile "
                                         "(0 or unset: searched)"),
                                cl::init(0), cl::cat(configCat));
static cl::opt<std::string> qInRegs("q-in-regs",
                                    cl::desc("true or false: keep Q in "
                                             "registers during the KV loop "
                                             "(unset: searched)"),
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
static cl::opt<bool> printPtxas(
    "print-ptxas",
    cl::desc("Print the ptxas a cubin would be built with (--ptxas, else "
             "the search above) and exit; an error when there is none"),
    cl::init(false), cl::cat(outputCat));
static cl::opt<std::string> launchPlanFile(
    "launch-plan",
    cl::desc("With --emit=cubin: write the kernel's launch plan (JSON: "
             "arguments, sizes, checks, kernels with their parameters, block, "
             "grid and shared memory) here, for the runtime"),
    cl::value_desc("file"), cl::init(""), cl::cat(outputCat));
static cl::opt<unsigned> ptxasTimeout(
    "ptxas-timeout",
    cl::desc("Seconds one ptxas run may take before it is killed (0: no "
             "limit)"),
    cl::init(flashtile::kDefaultPtxasTimeoutSeconds), cl::cat(outputCat));
static cl::opt<bool> spillFallback(
    "spill-fallback",
    cl::desc("With --emit=cubin and a searched config: when ptxas reports "
             "spills, try the next-ranked candidates and keep the first that "
             "does not spill (default: on)"),
    cl::init(true), cl::cat(configCat));
/// More threads than any machine this runs on has cores.
constexpr unsigned kMaxCompileThreads = 1024;
static cl::opt<unsigned> threads(
    "compile-threads",
    cl::desc("Threads the compiler's passes may use (0: one per core; 1: "
             "none besides the main one). The output does not depend on it"),
    cl::init(0), cl::cat(outputCat));
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
         window.getNumOccurrences() || pagedKV.getNumOccurrences();
}

/// The module to compile: parsed from the input file, or built from flags.
/// Where diagnostics about the command line point.
static Location flagsLocation(MLIRContext &ctx) {
  return FileLineColLoc::get(&ctx, "<flashtile-compile flags>", 0, 0);
}

static OwningOpRef<ModuleOp> loadInput(MLIRContext &ctx,
                                       llvm::SourceMgr &sourceMgr) {
  if (!inputFile.empty()) {
    if (specFlagsGiven()) {
      emitError(flagsLocation(ctx))
          << "--arch/--dtype/--head-dim/--head-dim-v/--causal/--window/"
             "--paged-kv/--kernel-name "
             "describe the built-in kernel and cannot be combined with an "
             "input file; the file's attn.kernel carries them";
      return nullptr;
    }
    std::string message;
    std::unique_ptr<llvm::MemoryBuffer> buffer =
        readInputFile(inputFile, message);
    if (!buffer) {
      emitError(FileLineColLoc::get(&ctx, inputFile, 0, 0))
          << "cannot read '" << inputFile << "': " << message;
      return nullptr;
    }
    sourceMgr.AddNewSourceBuffer(std::move(buffer), SMLoc());
    return parseInput(ctx, sourceMgr);
  }

  Location loc = flagsLocation(ctx);
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
  std::optional<plan::DType> dtype = plan::parseDType(dtypeName);
  if (!dtype || !abi::isAttentionDType(*dtype)) {
    emitError(loc) << "unknown dtype '" << dtypeName
                   << "'; supported: " << abi::getAttentionDTypeList();
    return nullptr;
  }
  spec.dtype = *dtype;
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
  if (pagedKV)
    spec.pageKV();
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
        {"--tile-n", tileN}, {"--stages", stages}, {"--warps", warps},
        {"--kv-warps", kvWarps}})
    if (value < 0)
      return emitError(flagsLocation(ctx))
             << flag << " must be positive (or 0 to let config selection "
             << "choose), got " << value;
  auto pin = [](int64_t value) {
    return value ? std::optional<int64_t>(value) : std::nullopt;
  };
  pins.tileM = pin(tileM);
  pins.tileN = pin(tileN);
  pins.stages = pin(stages);
  pins.warps = pin(warps);
  pins.kvWarps = pin(kvWarps);
  std::optional<ConfigFamily> parsed = parseConfigFamily(family);
  if (!parsed)
    return emitError(flagsLocation(ctx))
           << "--family must be prefill or decode, got '" << family << "'";
  pins.family = *parsed;
  if (qInRegs == "true" || qInRegs == "false")
    pins.qInRegs = qInRegs == "true";
  else if (!qInRegs.empty())
    return emitError(flagsLocation(ctx))
           << "--q-in-regs must be true or false, got '" << qInRegs << "'";
  return pins;
}

//===----------------------------------------------------------------------===//
// main
//===----------------------------------------------------------------------===//

static CompileStage stageOf(Emit kind) {
  switch (kind) {
  case Emit::Plan:
  case Emit::Configs:
  case Emit::Mlir:
    return CompileStage::Tile;
  case Emit::Nvvm:
    return CompileStage::Nvvm;
  case Emit::Llvm:
    return CompileStage::Llvm;
  case Emit::Ptx:
    return CompileStage::Ptx;
  case Emit::Cubin:
    return CompileStage::Cubin;
  }
  llvm_unreachable("unknown emit kind");
}

/// The files of a compile, by --emit.
static SmallVector<OutputFile> outputsOf(const CompiledKernel &k) {
  switch (emit) {
  case Emit::Plan: {
    std::string text;
    llvm::raw_string_ostream os(text);
    if (format == Format::Json)
      os << getSmemPlanJson(k.getTileKernel());
    else
      printSmemPlan(os, k.getTileKernel());
    return {{outputFile, text}};
  }
  case Emit::Mlir:
    return {{outputFile, k.printTileIR()}};
  case Emit::Nvvm:
    return {{outputFile, k.nvvmIR}};
  case Emit::Llvm:
    return {{outputFile, k.llvmIR}};
  case Emit::Ptx:
    return {{outputFile, k.ptx}};
  case Emit::Cubin: {
    SmallVector<OutputFile> files = {{outputFile, k.cubin->cubin}};
    if (!launchPlanFile.empty())
      files.push_back({launchPlanFile, plan::writeJson(*k.launchPlan)});
    return files;
  }
  case Emit::Configs:
    break;
  }
  llvm_unreachable("--emit=configs does not compile");
}

/// LLVM's option parser, with every message it has for bad options in
/// `errors`: it words them "flashtile-compile: message" and writes some to
/// stderr itself, so stderr is captured while it runs. The caller reports
/// them as error diagnostics like every other.
static bool parseOptions(int argc, char **argv, const char *overview,
                         std::string &errors) {
  llvm::raw_string_ostream os(errors);
  llvm::errs().flush();
  std::fflush(stderr);
  std::FILE *capture = std::tmpfile();
  int saved = capture ? ::dup(2) : -1;
  if (saved >= 0)
    ::dup2(::fileno(capture), 2);
  bool parsed = cl::ParseCommandLineOptions(argc, argv, overview, &os);
  if (saved >= 0) {
    llvm::errs().flush();
    std::fflush(stderr);
    ::dup2(saved, 2);
    ::close(saved);
    std::rewind(capture);
    char chunk[4096];
    while (size_t n = std::fread(chunk, 1, sizeof(chunk), capture))
      errors.append(chunk, n);
  }
  if (capture)
    std::fclose(capture);
  return parsed;
}

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  // The chip names come from the target table, which is initialised by now.
  static const std::string archHelp =
      "Target chip: " + knownArchNames() + " (default sm_120)";
  archName.setDescription(archHelp);
  cl::HideUnrelatedOptions({&specCat, &configCat, &outputCat});
  std::string optionErrors;
  bool optionsParsed = parseOptions(
      argc, argv,
      "FlashTile: compiles FlashAttention-style kernels for NVIDIA GPUs.\n\n"
      "  flashtile-compile --arch=sm_120 --dtype=f16 --head-dim=128 "
      "[--causal] --emit=plan\n"
      "  flashtile-compile kernel.mlir --emit=plan --format=json\n"
      "  flashtile-compile --head-dim=128 --emit=cubin -o k.cubin "
      "--launch-plan k.plan.json --report\n",
      optionErrors);

  // The pool outlives the context that uses it.
  std::optional<llvm::DefaultThreadPool> threadPool;
  MLIRContext ctx(MLIRContext::Threading::DISABLED);
  if (threads != 1 && threads <= kMaxCompileThreads) {
    threadPool.emplace(llvm::hardware_concurrency(threads));
    ctx.setThreadPool(*threadPool);
  }
  // Diagnostics name the problem; a dump of the whole kernel buries it.
  ctx.printOpOnDiagnostic(false);
  registerCompilerDialects(ctx);
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler diagHandler(sourceMgr, &ctx);
  Location flagsLoc = flagsLocation(ctx);
  if (!optionsParsed) {
    SmallVector<StringRef> lines;
    StringRef(optionErrors).trim().split(lines, '\n', -1, false);
    auto strip = [](StringRef line) {
      line.consume_front("flashtile-compile: ");
      return line.trim();
    };
    InFlightDiagnostic diag = emitError(flagsLoc);
    diag << (lines.empty() ? StringRef("invalid command line")
                           : strip(lines.front()));
    for (size_t i = 1; i < lines.size(); ++i)
      diag.attachNote() << strip(lines[i]);
    return 1;
  }

  if (printPtxas) {
    FailureOr<std::string> found = findPtxas(ptxasPath, flagsLoc);
    if (failed(found))
      return 1;
    llvm::outs() << *found << "\n";
    return 0;
  }
  if (threads > kMaxCompileThreads) {
    emitError(flagsLoc) << "--compile-threads=" << threads.getValue() << " is more than "
                        << kMaxCompileThreads;
    return 1;
  }
  if ((!launchPlanFile.empty() || report) && emit != Emit::Cubin) {
    emitError(flagsLoc) << "--launch-plan and --report need --emit=cubin";
    return 1;
  }
  if (emit == Emit::Cubin && outputFile == "-" && !launchPlanFile.empty()) {
    emitError(flagsLoc)
        << "--launch-plan needs the cubin in a file: give -o FILE.cubin";
    return 1;
  }
  FailureOr<ConfigOverrides> pins = readOverrides(ctx);
  if (failed(pins))
    return 1;
  CompileOptions options;
  options.pins = *pins;
  std::optional<Direction> parsedDirection = parseDirection(direction);
  if (!parsedDirection) {
    emitError(flagsLoc) << "--direction must be "
                        << stringifyDirection(Direction::Forward) << " or "
                        << stringifyDirection(Direction::Backward) << ", got '"
                        << direction << "'";
    return 1;
  }
  options.direction = *parsedDirection;
  options.deterministic = deterministic;
  options.tensorGrads.assign(tensorGrads.begin(), tensorGrads.end());
  options.stopAfter = stageOf(emit);
  options.ptxasPath = ptxasPath;
  options.ptxasTimeoutSeconds = ptxasTimeout;
  options.spillFallback = spillFallback;
  if (emit == Emit::Cubin && !launchPlanFile.empty())
    options.cubinFileName = getCubinPathForPlan(outputFile, launchPlanFile);
  if (!isaName.empty()) {
    const ArchInfo *isa = lookupArch(isaName);
    if (!isa) {
      emitError(flagsLoc) << "unknown ISA '" << isaName
                          << "'; known: " << knownArchNames();
      return 1;
    }
    options.isa = isa->chip;
  }

  OwningOpRef<ModuleOp> module = loadInput(ctx, sourceMgr);
  if (!module)
    return 1;
  SmallVector<KernelOp> kernels = llvm::to_vector(module->getOps<KernelOp>());
  if (kernels.empty()) {
    emitError(module->getLoc()) << "the input has no attn.kernel";
    return 1;
  }

  if (emit == Emit::Configs && options.direction == Direction::Backward) {
    emitError(flagsLoc) << "--emit=configs ranks the forward's candidates; "
                           "the backward's config is in --emit=plan";
    return 1;
  }
  if (emit == Emit::Configs) {
    std::string text;
    llvm::raw_string_ostream os(text);
    for (KernelOp kernel : kernels) {
      if (failed(checkCodePathImplemented(kernel, kernel.getArch())))
        return 1;
      printConfigs(os, kernel, *pins, format == Format::Json);
    }
    return failed(writeOutputs({{outputFile, text}}, module->getLoc())) ? 1 : 0;
  }

  // A family is one compile: its kernels in one cubin and one plan. So is
  // a backward.
  bool family = !module->getOps<FamilyOp>().empty() ||
                options.direction == Direction::Backward;
  // Else each kernel is compiled on its own; the outputs are concatenated
  // (one kernel per cubin).
  if (!family && kernels.size() != 1 && emit != Emit::Plan &&
      emit != Emit::Mlir) {
    // Located at the second kernel; the note names every kernel's chip, as
    // one PTX or cubin cannot hold code for two.
    InFlightDiagnostic diag =
        (kernels.size() > 1 ? emitError(kernels[1].getLoc())
                            : emitError(module->getLoc()))
        << "--emit=" << (emit == Emit::Cubin ? "cubin" : "nvvm|llvm|ptx")
        << " takes one attn.kernel, the input has " << kernels.size();
    for (KernelOp kernel : kernels)
      diag.attachNote(kernel.getLoc())
          << "@" << kernel.getSymName() << " for "
          << kernel.getArch().getInfo().name;
    return 1;
  }
  std::vector<CompiledKernel> compiled;
  if (family) {
    FailureOr<CompiledKernel> k = compile(*module, options);
    if (failed(k))
      return 1;
    compiled.push_back(std::move(*k));
    kernels.clear();
  }
  for (KernelOp kernel : kernels) {
    OwningOpRef<ModuleOp> single = ModuleOp::create(module->getLoc());
    single->getBody()->push_back(kernel->clone());
    FailureOr<CompiledKernel> k = compile(*single, options);
    if (failed(k))
      return 1;
    compiled.push_back(std::move(*k));
  }

  SmallVector<OutputFile> files;
  if (compiled.size() == 1) {
    files = outputsOf(compiled.front());
  } else {
    // Several kernels: one text output, the plans or the tile IR in order
    // (JSON plans as one array).
    std::string text = format == Format::Json && emit == Emit::Plan ? "[\n" : "";
    for (auto [i, k] : llvm::enumerate(compiled)) {
      if (i && format == Format::Json && emit == Emit::Plan)
        text += ",\n";
      text += outputsOf(k).front().contents;
    }
    if (format == Format::Json && emit == Emit::Plan)
      text += "]\n";
    files.push_back({outputFile, text});
  }
  if (failed(writeOutputs(files, module->getLoc())))
    return 1;

  if (emit == Emit::Cubin) {
    const CompiledKernel &k = compiled.front();
    if (report)
      printResourceReport(llvm::outs(), k);
    else if (!k.fallbackNote.empty() &&
             (k.cubin->spillStores.value_or(0) || k.cubin->spillLoads.value_or(0)))
      emitWarning(k.getTileKernel().getLoc())
          << "the kernel spills registers (" << k.fallbackNote << ")";
    // A family's configs are stated, so no fallback ran: say which of its
    // kernels spill.
    if (!report && k.launchPlan && k.launchPlan->kernels.size() > 1)
      for (const plan::Kernel &entry : k.launchPlan->kernels)
        if (entry.spillStores.value_or(0) || entry.spillLoads.value_or(0))
          emitWarning(k.getTileKernel().getLoc())
              << "kernel " << entry.symbol << " spills registers ("
              << entry.spillStores.value_or(0) << " B stores, "
              << entry.spillLoads.value_or(0)
              << " B loads)";
  }
  return 0;
}
