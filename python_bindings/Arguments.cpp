//===- Arguments.cpp - Python arguments to a launch ----------------------===//
//
// The per-call work of flashtile._runtime (Arguments.h), in C++: binding
// positional and keyword arguments to the plan's arguments and reading each
// tensor's data_ptr(), shape, stride(), dtype and device, so that a launch
// costs few Python operations.
//
//===----------------------------------------------------------------------===//

#include "Arguments.h"

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

using flashtile::python::raise;

namespace {

/// flashtile.FlashTileError, looked up when the module is imported.
PyObject *errorType = nullptr;

} // namespace

void flashtile::python::setErrorType(PyObject *type) { errorType = type; }

void flashtile::python::raise(const std::string &message) {
  PyErr_SetString(errorType, message.c_str());
  throw py::error_already_set();
}

namespace {


std::optional<plan::DType> parseDTypeName(std::string name) {
  if (name.rfind("torch.", 0) == 0)
    name = name.substr(6);
  if (name == "float16" || name == "half" || name == "f16")
    return plan::DType::F16;
  if (name == "bfloat16" || name == "bf16")
    return plan::DType::BF16;
  if (name == "float32" || name == "float" || name == "f32")
    return plan::DType::F32;
  if (name == "int32" || name == "int" || name == "i32")
    return plan::DType::I32;
  if (name == "int64" || name == "long" || name == "i64")
    return plan::DType::I64;
  if (name == "int8" || name == "s8")
    return plan::DType::S8;
  if (name == "float8_e4m3fn" || name == "e4m3")
    return plan::DType::E4M3;
  if (name == "float8_e5m2" || name == "e5m2")
    return plan::DType::E5M2;
  return std::nullopt;
}

/// The dtype of `dtype` (a torch.dtype, or any object whose str() names
/// one). Dtype objects are cached by identity: torch's are singletons. The
/// cache is never destroyed, so no reference is dropped after the
/// interpreter has finalised.
plan::DType toDType(const std::string &argName, py::handle dtype) {
  static auto *cache =
      new std::vector<std::pair<py::object, plan::DType>>();
  for (const auto &entry : *cache)
    if (entry.first.ptr() == dtype.ptr())
      return entry.second;
  std::string name = py::str(dtype);
  std::optional<plan::DType> parsed = parseDTypeName(name);
  if (!parsed)
    raise(argName + " has dtype " + name +
          ", which FlashTile does not take (float16, bfloat16, float32, "
          "int32 or int64)");
  cache->emplace_back(py::reinterpret_borrow<py::object>(dtype), *parsed);
  return *parsed;
}

std::string typeName(py::handle obj) {
  return py::str(py::type::handle_of(obj).attr("__name__"));
}

/// A Python int as int64; `what` names it in the error (a FlashTileError:
/// a value that does not fit, or not an int, is the caller's mistake).
int64_t toInt64(PyObject *value, const std::function<std::string()> &what) {
  if (!PyLong_Check(value) || PyBool_Check(value)) {
    PyObject *index = PyNumber_Index(value);
    if (!index || PyBool_Check(value)) {
      PyErr_Clear();
      Py_XDECREF(index);
      raise(what() + " must be an int, got " + typeName(value));
    }
    py::object owned = py::reinterpret_steal<py::object>(index);
    return toInt64(owned.ptr(), what);
  }
  int overflow = 0;
  long long v = PyLong_AsLongLongAndOverflow(value, &overflow);
  if (overflow)
    raise(what() + " = " + std::string(py::str(value)) +
          " does not fit in 64 bits");
  if (v == -1 && PyErr_Occurred())
    throw py::error_already_set();
  return v;
}

/// The ints of a tensor's shape or strides (`what`: "q shape").
std::vector<int64_t> toInts(py::handle sequence, const std::string &what) {
  std::vector<int64_t> values;
  auto element = [&](size_t i) {
    return [&what, i] { return what + "[" + std::to_string(i) + "]"; };
  };
  // torch.Size and stride() are tuples: read them without iterator objects.
  if (PyTuple_Check(sequence.ptr())) {
    Py_ssize_t n = PyTuple_GET_SIZE(sequence.ptr());
    values.reserve(n);
    for (Py_ssize_t i = 0; i < n; ++i) {
      PyObject *item = PyTuple_GET_ITEM(sequence.ptr(), i);
      if (PyLong_CheckExact(item)) {
        long long v = PyLong_AsLongLong(item);
        if (!(v == -1 && PyErr_Occurred())) {
          values.push_back(v);
          continue;
        }
        PyErr_Clear();
      }
      values.push_back(toInt64(item, element(i)));
    }
    return values;
  }
  if (!PySequence_Check(sequence.ptr()))
    raise(what + " must be a sequence of ints, got " + typeName(sequence));
  for (py::handle item : sequence)
    values.push_back(toInt64(item.ptr(), element(values.size())));
  return values;
}

/// An interned attribute name, made once: attribute lookups by a C string
/// would build and hash a new Python string on every call.
struct Names {
  py::object getDevice, dataPtr, shape, stride, dtype, device;
  static const Names &get() {
    // Leaked on purpose: never released after the interpreter finalised.
    static const Names *names = new Names{
        intern("get_device"), intern("data_ptr"), intern("shape"),
        intern("stride"),     intern("dtype"),    intern("device")};
    return *names;
  }
  static py::object intern(const char *name) {
    return py::reinterpret_steal<py::object>(PyUnicode_InternFromString(name));
  }
};

/// obj.name() with an interned name.
py::object callMethod(py::handle obj, const py::object &name) {
  PyObject *result = PyObject_CallMethodNoArgs(obj.ptr(), name.ptr());
  if (!result)
    throw py::error_already_set();
  return py::reinterpret_steal<py::object>(result);
}

py::object getAttr(py::handle obj, const py::object &name) {
  PyObject *result = PyObject_GetAttr(obj.ptr(), name.ptr());
  if (!result)
    throw py::error_already_set();
  return py::reinterpret_steal<py::object>(result);
}

/// A device ordinal from Python, as an int (-1: the CPU).
int toDeviceIndex(const std::string &name, py::handle index) {
  int64_t v = toInt64(index.ptr(), [&] { return name + "'s device index"; });
  if (v < -1 || v > std::numeric_limits<int>::max())
    raise(name + "'s device index " + std::to_string(v) +
          " is not a device ordinal");
  return static_cast<int>(v);
}

/// A tensor-like object as a TensorArg: data_ptr(), shape, stride(), dtype
/// and device (a torch.device, or an int ordinal).
TensorArg toTensor(const std::string &name, py::handle obj) {
  const Names &names = Names::get();
  TensorArg t;
  // torch tensors first: get_device() is one call that returns the CUDA
  // ordinal (-1 on the CPU), cheaper than building a torch.device.
  if (PyObject *getDevice = PyObject_GetAttr(obj.ptr(), names.getDevice.ptr())) {
    py::object method = py::reinterpret_steal<py::object>(getDevice);
    py::object index = method();
    if (!PyLong_Check(index.ptr()))
      raise(name + ".get_device() did not return an int");
    t.device = toDeviceIndex(name, index);
    if (t.device < 0)
      raise(name + " is on " + std::string(py::str(obj.attr("device"))) +
            ", expected a CUDA tensor");
  } else {
    PyErr_Clear();
    if (!py::hasattr(obj, "data_ptr") || !py::hasattr(obj, "stride"))
      raise(name + " must be a tensor (an object with data_ptr(), shape, "
                   "stride(), dtype and device), got " +
            typeName(obj));
    py::object device = getAttr(obj, names.device);
    if (PyLong_Check(device.ptr())) {
      t.device = toDeviceIndex(name, device);
    } else {
      std::string type = py::str(device.attr("type"));
      if (type != "cuda")
        raise(name + " is on " + std::string(py::str(device)) +
              ", expected a CUDA tensor");
      py::object index = device.attr("index");
      t.device = index.is_none() ? 0 : toDeviceIndex(name, index);
    }
  }
  py::object dataPtr = callMethod(obj, names.dataPtr);
  int overflow = 0;
  unsigned long long address =
      PyLong_Check(dataPtr.ptr()) && !PyBool_Check(dataPtr.ptr())
          ? PyLong_AsUnsignedLongLong(dataPtr.ptr())
          : (overflow = 1, 0);
  if (overflow || PyErr_Occurred()) {
    PyErr_Clear();
    raise(name + ".data_ptr() = " + std::string(py::str(dataPtr)) +
          " is not an address (an int in [0, 2^64))");
  }
  t.data = reinterpret_cast<void *>(static_cast<uintptr_t>(address));
  t.sizes = toInts(getAttr(obj, names.shape), name + " shape");
  t.strides = toInts(callMethod(obj, names.stride), name + " stride()");
  t.dtype = toDType(name, getAttr(obj, names.dtype));
  return t;
}

/// One Python value as the plan argument `arg` (None: absent).
ArgValue toArgValue(const plan::Argument &arg, py::handle obj) {
  if (!obj || obj.is_none())
    return ArgValue::absent();
  PyObject *p = obj.ptr();
  bool isNumber = PyLong_Check(p) || PyFloat_Check(p);
  if (arg.kind == plan::ArgKind::Tensor || (!isNumber && !PyBool_Check(p) &&
                                            py::hasattr(obj, "data_ptr"))) {
    if (isNumber) // the check reports "must be a tensor, got a scalar"
      return PyLong_Check(p) ? ArgValue::integer(0) : ArgValue::scalar(0.0);
    return ArgValue::of(toTensor(arg.name, obj));
  }
  if (PyBool_Check(p))
    raise(arg.name + " must be a number, got a bool");
  if (PyLong_Check(p)) {
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(p, &overflow);
    if (overflow)
      raise(arg.name + " = " + std::string(py::str(obj)) +
            " does not fit in 64 bits");
    return ArgValue::integer(v);
  }
  if (PyFloat_Check(p))
    return ArgValue::scalar(PyFloat_AS_DOUBLE(p));
  // Other numbers (numpy scalars, ...): integers first, then floats.
  if (PyObject *index = PyNumber_Index(p)) {
    py::object owned = py::reinterpret_steal<py::object>(index);
    return toArgValue(arg, owned);
  }
  PyErr_Clear();
  if (PyObject *f = PyNumber_Float(p)) {
    py::object owned = py::reinterpret_steal<py::object>(f);
    return ArgValue::scalar(PyFloat_AS_DOUBLE(f));
  }
  PyErr_Clear();
  raise(arg.name + " must be a number, got " + typeName(obj));
}

/// Python's call arguments bound to the plan's arguments, in plan order
/// (null handles for those not given).
std::vector<py::handle> bindArguments(const plan::LaunchPlan &plan,
                                      const py::tuple &args,
                                      const py::dict &kwargs) {
  size_t n = plan.arguments.size();
  auto names = [&] {
    std::string s;
    for (const plan::Argument &a : plan.arguments)
      s += (s.empty() ? "" : ", ") + a.name;
    return s;
  };
  if (args.size() > n)
    raise(plan.name + " takes at most " + std::to_string(n) + " arguments (" +
          names() + "), got " + std::to_string(args.size()));
  std::vector<py::handle> slots(n);
  for (size_t i = 0; i < args.size(); ++i)
    slots[i] = args[i];
  for (auto item : kwargs) {
    std::string key = py::str(item.first);
    int64_t index = plan.indexOfArgument(key);
    if (index < 0)
      raise(plan.name + " got an unexpected keyword argument '" + key +
            "' (its arguments: " + names() + ")");
    if (slots[index])
      raise(plan.name + " got multiple values for argument '" + key + "'");
    slots[index] = item.second;
  }
  return slots;
}

std::vector<ArgValue> toArgValues(const plan::LaunchPlan &plan,
                                  const std::vector<py::handle> &slots) {
  std::vector<ArgValue> values;
  values.reserve(slots.size());
  for (size_t i = 0; i < slots.size(); ++i)
    values.push_back(toArgValue(plan.arguments[i], slots[i]));
  return values;
}

} // namespace

std::vector<ArgValue> flashtile::python::bindValues(const plan::LaunchPlan &plan,
                                 const py::tuple &args,
                                 const py::dict &kwargs) {
  return toArgValues(plan, bindArguments(plan, args, kwargs));
}

namespace {

int firstDevice(const std::vector<ArgValue> &values) {
  for (const ArgValue &v : values)
    if (v.kind == ArgValue::Kind::Tensor)
      return v.tensor.device;
  return 0;
}

} // namespace

py::object flashtile::python::call(KernelFamily &family, const py::tuple &args,
                const py::dict &kwargs, const py::object &hooks,
                const py::object &stream,
                const std::vector<uint64_t> &workspaces,
                const std::vector<std::string> &filled, bool writersOnly,
                const std::map<std::string, int64_t> &sizes) {
  const plan::LaunchPlan &plan = family.getPlan();
  std::vector<py::handle> slots = bindArguments(plan, args, kwargs);
  std::vector<ArgValue> values = toArgValues(plan, slots);
  std::vector<py::object> allocated(slots.size());

  bool missingOutput = false;
  for (size_t i = 0; i < values.size(); ++i)
    missingOutput |= plan.arguments[i].role == plan::ArgRole::Output &&
                     values[i].kind == ArgValue::Kind::Absent;
  int device = firstDevice(values);
  py::handle like;
  for (size_t i = 0; i < values.size() && !like; ++i)
    if (values[i].kind == ArgValue::Kind::Tensor)
      like = slots[i];
  if (missingOutput && !hooks.is_none()) {
    std::string error;
    auto shapes = family.getOutputShapes(values, error);
    if (!shapes)
      raise(error);
    py::handle allocate = hooks[py::int_(1)];
    for (const runtime::OutputShape &out : *shapes) {
      if (values[out.argument].kind != ArgValue::Kind::Absent)
        continue;
      py::tuple shape(out.sizes.size());
      for (size_t d = 0; d < out.sizes.size(); ++d)
        shape[d] = py::int_(out.sizes[d]);
      py::object tensor = allocate(shape, plan::stringifyDType(out.dtype),
                                   device, like ? like : py::none());
      values[out.argument] = ArgValue::of(toTensor(out.name, tensor));
      slots[out.argument] = tensor;
      allocated[out.argument] = std::move(tensor);
    }
  }

  void *cuStream = nullptr;
  py::object streamValue = stream;
  if (streamValue.is_none() && !hooks.is_none())
    streamValue = hooks[py::int_(0)](device);
  if (!streamValue.is_none())
    cuStream = reinterpret_cast<void *>(
        static_cast<uintptr_t>(streamValue.cast<uint64_t>()));

  runtime::LaunchOptions options;
  for (uint64_t w : workspaces)
    options.workspaces.push_back(
        reinterpret_cast<void *>(static_cast<uintptr_t>(w)));
  options.filledWorkspaces = filled;
  options.writersOnly = writersOnly;
  options.sizes.insert(sizes.begin(), sizes.end());
  std::string error;
  bool ok;
  {
    py::gil_scoped_release release;
    ok = family.launch(values, cuStream, error, options);
  }
  if (!ok)
    raise(error);

  std::vector<py::object> outputs;
  for (size_t i = 0; i < slots.size(); ++i)
    if (plan.arguments[i].role == plan::ArgRole::Output &&
        plan.arguments[i].kind == plan::ArgKind::Tensor)
      outputs.push_back(py::reinterpret_borrow<py::object>(slots[i]));
  if (outputs.empty())
    return py::none();
  if (outputs.size() == 1)
    return outputs[0];
  py::tuple result(outputs.size());
  for (size_t i = 0; i < outputs.size(); ++i)
    result[i] = outputs[i];
  return result;
}


std::unique_ptr<KernelFamily> flashtile::python::loadFamily(const std::string &path) {
  std::string error;
  std::unique_ptr<KernelFamily> family = KernelFamily::load(path, error);
  if (!family)
    raise(error);
  return family;
}

