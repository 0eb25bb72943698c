//===- Module.cpp - flashtile._runtime, the Python binding ----------------===//
//
// Exposes FlashTileRuntime to Python: the module, its Kernel class and the
// kernel rules. What a call does with its Python arguments is
// Arguments.cpp's. Every failure raises flashtile.FlashTileError (a
// RuntimeError subclass defined in flashtile/__init__.py) with the
// runtime's message.
//
//===----------------------------------------------------------------------===//

#include "Arguments.h"

#include "flashtile/ABI/KernelRules.h"
#include "flashtile/Runtime/Runtime.h"

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

namespace py = pybind11;
using namespace flashtile;
using runtime::ArgValue;
using runtime::KernelFamily;
using runtime::TensorArg;
using namespace flashtile::python;


/// What launch checks, with the SM count of the tensors' device where the
/// plan needs one (derived kv_splits, the dispatch rule).
static bool checkOnDevice(const KernelFamily &f,
                          const std::vector<ArgValue> &values,
                          std::string &error,
                          runtime::CheckedLaunch *checked = nullptr) {
  std::optional<int64_t> numSms;
  return f.getNumSms(values, numSms, error) &&
         f.check(values, error, checked, numSms);
}

PYBIND11_MODULE(_runtime, m) {
  m.doc() = "FlashTile's C++ runtime: load launch plans, check arguments "
            "and launch kernels (see flashtile.runtime for the torch API).";
  py::object error = py::module_::import("flashtile").attr("FlashTileError");
  Py_INCREF(error.ptr()); // kept for the module's lifetime
  setErrorType(error.ptr());

  m.attr("FORMAT_NAME") = plan::kFormatName;
  m.attr("FORMAT_VERSION") = plan::kFormatVersion;

  // The rules a front end traces by (flashtile/ABI/KernelRules.h), here in
  // the LLVM-free extension so that a runtime-only installation traces the
  // IR, and so the cache key, the compiler would.
  py::list dtypes;
  for (plan::DType d : flashtile::abi::kAttentionDTypes)
    dtypes.append(plan::stringifyDType(d));
  m.attr("ATTENTION_DTYPES") = py::tuple(dtypes);
  py::list sizes;
  for (const char *size : flashtile::abi::kSizeNames)
    sizes.append(size);
  m.attr("SIZE_NAMES") = py::tuple(sizes);
  m.def("padded_head_dim", &flashtile::abi::getPaddedHeadDim, py::arg("head_dim"),
        "The head dim as shared buffers and fragments hold it.");
  m.def("default_softmax_scale", &flashtile::abi::getDefaultSoftmaxScale,
        py::arg("head_dim"),
        "The softmax scale a kernel takes when none is given.");

  m.def(
      "parse_plan",
      [](const std::string &text) {
        std::string error;
        std::optional<plan::LaunchPlan> parsed = plan::parseJson(text, error);
        if (!parsed)
          raise(error);
        return plan::writeJson(*parsed);
      },
      py::arg("text"),
      "Validates a plan's JSON text; returns it normalised (as the compiler "
      "writes plans). Raises FlashTileError.");
  m.def(
      "driver_available",
      [] {
        std::string error;
        bool ok = runtime::isDriverAvailable(error);
        return py::make_tuple(ok, error);
      },
      "(True, '') when the CUDA driver loads, else (False, why).");

  py::class_<KernelFamily>(m, "Kernel")
      .def(py::init(&loadFamily), py::arg("path"),
           "Loads a plan and its cubins (no GPU needed). Raises "
           "FlashTileError.")
      .def_property_readonly("path", &KernelFamily::getPlanPath)
      .def_property_readonly(
          "name", [](const KernelFamily &f) { return f.getPlan().name; })
      .def_property_readonly(
          "plan_json",
          [](const KernelFamily &f) { return plan::writeJson(f.getPlan()); },
          "The plan as JSON text.")
      .def("call", &call, py::arg("args"), py::arg("kwargs"),
           py::arg("hooks") = py::none(), py::arg("stream") = py::none(),
           py::arg("workspaces") = std::vector<uint64_t>(),
           py::arg("filled") = std::vector<std::string>(),
           py::arg("writers_only") = false,
           py::arg("sizes") = std::map<std::string, int64_t>())
      .def(
          "workspaces",
          [](const KernelFamily &f, const py::tuple &args,
             const py::dict &kwargs) {
            std::vector<ArgValue> values =
                bindValues(f.getPlan(), args, kwargs);
            std::string error;
            runtime::CheckedLaunch checked;
            if (!checkOnDevice(f, values, error, &checked))
              raise(error);
            const plan::LaunchPlan &plan = f.getPlan();
            py::list result;
            for (size_t w = 0; w < plan.workspaces.size(); ++w) {
              bool written = false;
              for (const plan::Kernel &k : plan.kernels)
                for (const std::string &name : k.writes)
                  written |= name == plan.workspaces[w].name;
              result.append(py::make_tuple(plan.workspaces[w].name,
                                           checked.workspaceBytes[w],
                                           written));
            }
            return result;
          },
          py::arg("args"), py::arg("kwargs"),
          "[(name, bytes, written by a kernel for reuse)] of the plan's "
          "workspaces for these arguments.")
      .def(
          "check",
          [](const KernelFamily &f, const py::tuple &args,
             const py::dict &kwargs) {
            std::vector<ArgValue> values =
                bindValues(f.getPlan(), args, kwargs);
            std::string error;
            if (!checkOnDevice(f, values, error))
              raise(error);
          },
          py::arg("args"), py::arg("kwargs"),
          "Checks arguments without launching. Raises FlashTileError.")
      .def(
          "output_shapes",
          [](const KernelFamily &f, const py::tuple &args,
             const py::dict &kwargs) {
            std::vector<ArgValue> values =
                bindValues(f.getPlan(), args, kwargs);
            std::string error;
            auto shapes = f.getOutputShapes(values, error);
            if (!shapes)
              raise(error);
            py::list result;
            for (const runtime::OutputShape &out : *shapes)
              result.append(py::make_tuple(
                  out.name, py::tuple(py::cast(out.sizes)),
                  plan::stringifyDType(out.dtype)));
            return result;
          },
          py::arg("args"), py::arg("kwargs"),
          "[(name, shape, dtype)] of the outputs for the given inputs.")
      .def(
          "pack_params",
          [](const KernelFamily &f, int64_t kernel, const py::tuple &args,
             const py::dict &kwargs, const std::vector<uint64_t> &workspaces) {
            if (kernel < 0 ||
                static_cast<uint64_t>(kernel) >= f.getPlan().kernels.size())
              raise("kernel index " + std::to_string(kernel) +
                    " is out of range (" +
                    std::to_string(f.getPlan().kernels.size()) + " kernels)");
            std::vector<ArgValue> values =
                bindValues(f.getPlan(), args, kwargs);
            std::string error;
            runtime::CheckedLaunch checked;
            if (!checkOnDevice(f, values, error, &checked))
              raise(error);
            std::vector<void *> pointers;
            for (uint64_t w : workspaces)
              pointers.push_back(
                  reinterpret_cast<void *>(static_cast<uintptr_t>(w)));
            runtime::PackedParams packed;
            if (!f.packParams(kernel, values, checked, pointers, packed,
                              error))
              raise(error);
            return packed.slots;
          },
          py::arg("kernel"), py::arg("args"), py::arg("kwargs"),
          py::arg("workspaces") = std::vector<uint64_t>(),
          "The 8-byte parameter slots of kernel `kernel` (for tests).");
}
