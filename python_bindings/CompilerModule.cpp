//===- CompilerModule.cpp - flashtile._compiler, the compile API ---------===//
//
// Exposes flashtile::compileSource (lib/Compiler) to Python: kernel-level
// IR text in, PTX, cubin, launch plan and resource report out. Built with
// the full project only (it needs MLIR and LLVM); flashtile/compiler.py is
// its Python face, with the cache. Failures raise flashtile.FlashTileError
// with the compiler's diagnostics (locations and source lines).
//
//===----------------------------------------------------------------------===//

#include "flashtile/ABI/LaunchPlan.h"
#include "flashtile/Compiler/Compiler.h"
#include "flashtile/Dialect/Attn/IR/Attn.h"
#include "flashtile/Target/Arch.h"
#include "flashtile/Target/PTX.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/raw_ostream.h"

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <string>

namespace py = pybind11;
using namespace flashtile;

namespace {

PyObject *errorType = nullptr;

[[noreturn]] void raise(const std::string &message) {
  PyErr_SetString(errorType, message.c_str());
  throw py::error_already_set();
}

/// Compiles `source` to a cubin; the plan names the cubin `cubinFile`.
py::dict compileKernel(const std::string &source,
                       const std::string &bufferName,
                       const std::optional<std::string> &isa,
                       const std::optional<int64_t> &tileM,
                       const std::optional<int64_t> &tileN,
                       const std::optional<int64_t> &stages,
                       const std::optional<int64_t> &warps,
                       const std::optional<bool> &qInRegs,
                       const std::string &cubinFile,
                       const std::string &ptxas, const std::string &family,
                       const std::optional<int64_t> &kvWarps,
                       const std::string &direction, bool deterministic,
                       const std::vector<std::string> &tensorGrads) {
  CompileOptions options;
  std::optional<Direction> parsedDirection = parseDirection(direction);
  if (!parsedDirection)
    raise("direction must be '" + stringifyDirection(Direction::Forward).str() +
          "' or '" + stringifyDirection(Direction::Backward).str() +
          "', got '" + direction + "'");
  options.direction = *parsedDirection;
  options.deterministic = deterministic;
  options.tensorGrads = tensorGrads;
  std::optional<attn::ConfigFamily> parsed = attn::parseConfigFamily(family);
  if (!parsed)
    raise("family must be 'prefill' or 'decode', got '" + family + "'");
  options.pins = {tileM, tileN, stages, warps, qInRegs, *parsed, kvWarps};
  options.cubinFileName = cubinFile;
  options.ptxasPath = ptxas;
  if (isa) {
    const ArchInfo *info = lookupArch(*isa);
    if (!info)
      raise("unknown ISA '" + *isa + "'; known: " + knownArchNames());
    options.isa = info->chip;
  }
  std::string diagnostics;
  std::optional<CompiledKernel> kernel;
  std::string report;
  {
    py::gil_scoped_release release;
    mlir::MLIRContext ctx;
    ctx.printOpOnDiagnostic(false);
    registerCompilerDialects(ctx);
    mlir::FailureOr<CompiledKernel> result =
        compileSource(ctx, source, bufferName, options, diagnostics);
    if (succeeded(result)) {
      kernel = std::move(*result);
      llvm::raw_string_ostream os(report);
      printResourceReport(os, *kernel);
      // The tile module lives in `ctx`: drop it before the context goes.
      kernel->tileModule = nullptr;
    }
  }
  if (!kernel)
    raise(diagnostics.empty() ? "the compile failed" : diagnostics);
  py::dict out;
  out["name"] = kernel->name;
  out["ptx"] = kernel->ptx;
  out["cubin"] = py::bytes(kernel->cubin->cubin);
  out["plan"] = plan::writeJson(*kernel->launchPlan);
  out["report"] = report;
  out["warnings"] = diagnostics;
  return out;
}

/// The ptxas the compiler runs (flashtile::findPtxas is the one owner of
/// where it is looked for).
std::string findPtxasPath() {
  mlir::MLIRContext ctx;
  std::string diagnostics;
  llvm::raw_string_ostream os(diagnostics);
  mlir::ScopedDiagnosticHandler handler(&ctx, [&](mlir::Diagnostic &d) {
    os << d.str();
    return mlir::success();
  });
  mlir::FailureOr<std::string> path =
      findPtxas("", mlir::UnknownLoc::get(&ctx));
  if (failed(path))
    raise(diagnostics);
  return *path;
}

} // namespace

PYBIND11_MODULE(_compiler, m) {
  m.doc() = "FlashTile's compile API (flashtile.compiler is the Python "
            "API, with the cache).";
  py::object error = py::module_::import("flashtile").attr("FlashTileError");
  errorType = error.ptr();
  Py_INCREF(errorType);
  m.attr("VERSION") = FLASHTILE_VERSION;
  m.def("compile", &compileKernel, py::arg("source"), py::arg("buffer_name"),
        py::arg("isa") = py::none(), py::arg("tile_m") = py::none(),
        py::arg("tile_n") = py::none(), py::arg("stages") = py::none(),
        py::arg("warps") = py::none(), py::arg("q_in_regs") = py::none(),
        py::arg("cubin_file") = "kernel.cubin", py::arg("ptxas") = "",
        py::arg("family") = "prefill", py::arg("kv_warps") = py::none(),
        py::arg("direction") = "fwd", py::arg("deterministic") = false,
        py::arg("tensor_grads") = std::vector<std::string>(),
        "Compiles kernel-level attn IR text (direction 'bwd': its backward "
        "family): {name, ptx, cubin, plan, report, warnings}. Raises "
        "FlashTileError with the diagnostics.");
  m.def("find_ptxas", &findPtxasPath,
        "The ptxas the compiler runs; raises FlashTileError naming where it "
        "looked.");
}
