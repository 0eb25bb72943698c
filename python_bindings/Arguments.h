//===- Arguments.h - Python arguments to a launch ----------------*- C++ -*-===//
//
// Private to python_bindings: what flashtile._runtime's Kernel methods do
// with a call's Python arguments. Nothing here knows torch: tensors are any
// objects with data_ptr(), shape, stride(), dtype and device, and the two
// things that need torch (the current stream and allocating missing
// outputs) are callables the caller passes ("hooks", see
// flashtile/runtime.py). Every failure raises flashtile.FlashTileError.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHTILE_PYTHON_BINDINGS_ARGUMENTS_H
#define FLASHTILE_PYTHON_BINDINGS_ARGUMENTS_H

#include "flashtile/Runtime/Runtime.h"

#include <pybind11/pybind11.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace flashtile::python {

/// The exception type raise() raises (flashtile.FlashTileError, a
/// RuntimeError subclass defined in flashtile/__init__.py), set when the
/// module is imported.
void setErrorType(PyObject *type);
/// Raises it with `message` (as pybind11's error_already_set).
[[noreturn]] void raise(const std::string &message);

/// Python's call arguments as the plan's argument values, in plan order.
std::vector<runtime::ArgValue> bindValues(const plan::LaunchPlan &plan,
                                          const pybind11::tuple &args,
                                          const pybind11::dict &kwargs);

/// Launches with the Python arguments. `hooks` is None or a pair
/// (stream(device) -> int, allocate(shape, dtype name, device, like) ->
/// tensor, `like` being the first tensor argument or None); `stream`, when
/// not None, overrides the hook's stream. Returns the outputs (given or
/// allocated) in plan order: None, the one output, or a tuple.
pybind11::object call(runtime::KernelFamily &family,
                      const pybind11::tuple &args,
                      const pybind11::dict &kwargs,
                      const pybind11::object &hooks,
                      const pybind11::object &stream,
                      const std::vector<uint64_t> &workspaces,
                      const std::vector<std::string> &filled, bool writersOnly,
                      const std::map<std::string, int64_t> &sizes);

/// The kernel family of the plan at `path`.
std::unique_ptr<runtime::KernelFamily> loadFamily(const std::string &path);

} // namespace flashtile::python

#endif // FLASHTILE_PYTHON_BINDINGS_ARGUMENTS_H
