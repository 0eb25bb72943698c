//===- Report.cpp - Plans, config rankings and resource reports -----------===//
//
// What the compiler tells people about a kernel: the shared-memory plan, the
// ranked config candidates and, after ptxas, registers, spills and
// occupancy. Every figure is read from the tile-level kernel, the chip table
// or ptxas; nothing here computes a limit of its own.
//
//===----------------------------------------------------------------------===//

#include "flashtile/Compiler/Compiler.h"
#include "Reports.h"

#include "flashtile/Dialect/Attn/Analysis/SharedMemoryAllocation.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

using namespace mlir;
using namespace flashtile;
using namespace flashtile::attn;

static std::string shapeString(MemRefType type) {
  std::string str;
  llvm::raw_string_ostream os(str);
  os << type.getDimSize(0) << "x" << type.getDimSize(1) << "x"
     << type.getDimSize(2) << "x" << type.getElementType();
  return str;
}

static std::string elementTypeName(Value tensor) {
  std::string name;
  llvm::raw_string_ostream(name)
      << cast<MemRefType>(tensor.getType()).getElementType();
  return name;
}

static int64_t headDimOf(Value tensor) {
  return cast<MemRefType>(tensor.getType()).getDimSize(3);
}

void flashtile::printSmemPlan(llvm::raw_ostream &os, KernelOp kernel) {
  const ArchInfo &arch = kernel.getArch().getInfo();
  ConfigAttr c = kernel.getConfigAttr();
  ProblemAttr problem = kernel.getProblemInfo();
  int64_t total = *kernel.getSmemBytes();
  os << "kernel @" << kernel.getSymName() << " for " << arch.name
     << " (code path " << stringifyCodePath(arch.codePath) << ")\n";
  os << "  " << elementTypeName(kernel.getQ()) << ", head_dim "
     << headDimOf(kernel.getQ()) << ", head_dim_v " << headDimOf(kernel.getV());
  if (problem.getCausal())
    os << ", causal";
  else if (problem.getWindowLeft() >= 0 || problem.getWindowRight() >= 0)
    os << ", window (" << problem.getWindowLeft() << ", "
       << problem.getWindowRight() << ")";
  if (int64_t table = kernel.getPageTableArg(); table >= 0)
    os << ", paged KV (block table '" << kernel.getExtraArgName(table)
       << "')";
  os << ", softmax_scale "
     << llvm::format("%g", problem.getSoftmaxScale().getValueAsDouble())
     << "\n";
  os << "  config: " << formatConfig(c) << "\n";
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

/// The config's fields; kv_warps and pack_gqa only where they are not the
/// defaults (the decode family).
static llvm::json::Object configJson(ConfigAttr c) {
  llvm::json::Object config{{"tile_m", c.getTileM()},
                            {"tile_n", c.getTileN()},
                            {"stages", c.getStages()},
                            {"warps", c.getWarps()},
                            {"q_in_regs", c.getQInRegs()}};
  if (c.getKvWarps() != 1)
    config["kv_warps"] = c.getKvWarps();
  if (c.getPackGqa())
    config["pack_gqa"] = true;
  return config;
}

/// The variant hooks the kernel runs ("score_mod", "mask_mod"), from the
/// attention op or, at the tile level, from its attn.modify_scores.
static llvm::json::Array hooksJson(KernelOp kernel) {
  bool scoreMod = false, maskMod = false;
  kernel.walk([&](Operation *op) {
    if (auto attention = dyn_cast<AttentionOp>(op)) {
      scoreMod |= !attention.getScoreMod().empty();
      maskMod |= !attention.getMaskMod().empty();
    } else if (auto modify = dyn_cast<ModifyScoresOp>(op)) {
      scoreMod |= !modify.getScoreMod().empty();
      maskMod |= !modify.getMaskMod().empty();
    }
  });
  llvm::json::Array hooks;
  if (scoreMod)
    hooks.push_back("score_mod");
  if (maskMod)
    hooks.push_back("mask_mod");
  return hooks;
}

llvm::json::Object flashtile::getKernelFactsJson(KernelOp kernel) {
  ProblemAttr problem = kernel.getProblemInfo();
  llvm::json::Object facts{
      {"hooks", hooksJson(kernel)},
      {"dtype", elementTypeName(kernel.getQ())},
      {"head_dim", headDimOf(kernel.getQ())},
      {"head_dim_v", headDimOf(kernel.getV())},
      {"causal", problem.getCausal()},
      {"window", llvm::json::Array{problem.getWindowLeft(),
                                   problem.getWindowRight()}},
      {"softmax_scale", problem.getSoftmaxScale().getValueAsDouble()},
      {"config", configJson(kernel.getConfigAttr())},
  };
  // Only on paged kernels: every other plan's facts stay as they were.
  if (int64_t table = kernel.getPageTableArg(); table >= 0)
    facts["paged_kv"] = kernel.getExtraArgName(table).str();
  // A tile program written by a user computes what its program says, not
  // softmax attention (the expansion records its problem; a user's program
  // has none): checkers with a softmax reference must not apply.
  if (kernel.getBodyBlock().getOps<AttentionOp>().empty() &&
      !kernel.getProblemAttr())
    facts["tile_program"] = true;
  return facts;
}

std::string flashtile::getSmemPlanJson(KernelOp kernel) {
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
  llvm::json::Object plan = getKernelFactsJson(kernel);
  plan["kernel"] = kernel.getSymName();
  plan["arch"] = arch.name;
  plan["code_path"] = stringifyCodePath(arch.codePath);
  plan["buffers"] = std::move(buffers);
  plan["smem_bytes"] = total;
  plan["smem_limit_bytes"] = arch.smemPerBlock;
  plan["smem_per_sm_bytes"] = arch.smemPerSM;
  plan["smem_reserved_per_block_bytes"] = arch.smemReservedPerBlock;
  plan["blocks_per_sm_by_smem"] = blocksPerSMBySmem(arch, total);
  return llvm::formatv("{0:2}\n", llvm::json::Value(std::move(plan))).str();
}

void flashtile::printConfigs(llvm::raw_ostream &os, KernelOp kernel,
                             const ConfigOverrides &pins, bool json) {
  SmallVector<ConfigCandidate> candidates = rankConfigs(kernel, pins);
  if (json) {
    llvm::json::Array list;
    for (const ConfigCandidate &c : candidates) {
      llvm::json::Object entry{{"config", configJson(c.config)},
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
      os << llvm::formatv("{0,7:F3} {1,8} {2,5} {3,6}", c.score, c.smemBytes,
                          c.estimatedRegs, c.residentWarps);
    else
      os << "rejected: " << c.rejection;
    if (c.config.getPackGqa())
      os << "  [kv_warps " << c.config.getKvWarps() << ", packed GQA rows]";
    os << "\n";
  }
}

void flashtile::printResourceReport(llvm::raw_ostream &os,
                                    const CompiledKernel &k) {
  KernelOp kernel = k.getTileKernel();
  printSmemPlan(os, kernel);
  if (!k.cubin)
    return;
  const ArchInfo &isa = *k.isa;
  int64_t warps = kernel.getConfigAttr().getWarps();
  os << "  cubin for " << isa.name << " (PTX " << isa.minPtxVersion / 10 << "."
     << isa.minPtxVersion % 10 << ", .target " << isa.ptxTarget << "), "
     << warps * kWarpSize << " threads per block\n";
  if (!k.cubin->registers || !k.occupancy) {
    os << "  registers: unknown (ptxas -v printed no count)\n";
  } else {
    os << "  registers: " << *k.cubin->registers << " per thread; spills: "
       << k.cubin->spillStores.value_or(0) << " B stores, "
       << k.cubin->spillLoads.value_or(0) << " B loads\n";
    const Occupancy &o = *k.occupancy;
    os << "  occupancy on " << k.arch->name << ": " << o.blocks
       << " block(s) per SM = " << o.getWarps(warps)
       << " warps (limits: registers " << o.byRegisters << ", shared memory "
       << o.bySharedMemory << ", threads " << o.byThreads << ")\n";
  }
  // A family's other kernels (a backward's main and convert): what ptxas
  // reported for each, from the plan.
  if (k.launchPlan && k.launchPlan->kernels.size() > 1) {
    os << "  kernels of the plan, in launch order:\n";
    for (const plan::Kernel &entry : k.launchPlan->kernels) {
      os << "    " << entry.symbol << ": " << entry.block[0]
         << " threads, " << entry.dynamicSmemBytes << " B shared memory, ";
      if (entry.registers)
        os << *entry.registers << " registers, spills "
           << entry.spillStores.value_or(0) << " B stores / "
           << entry.spillLoads.value_or(0) << " B loads\n";
      else
        os << "registers unknown\n";
    }
  }
  if (!k.fallbackNote.empty())
    os << "  config fallback: " << k.fallbackNote << "\n";
  const CompileTimes &t = k.times;
  os << llvm::formatv("  compile time: {0:f2} s (tile passes {1:f2}, "
                      "lowering {2:f2}, LLVM {3:f2}, ptxas {4:f2})\n",
                      t.total, t.tile, t.lowering, t.llvm, t.ptxas);
}
