//===- Runtime.cpp - Loading and launching FlashTile kernels --------------===//
//
// Three parts: the CUDA driver (reached through dlopen, so that no CUDA
// header or library is needed to build or to load kernels), the argument
// checks and parameter packing (pure functions of the plan and the argument
// descriptions, testable without a GPU), and the launch.
//
//===----------------------------------------------------------------------===//

#include "flashtile/Runtime/Runtime.h"
#include "../ABI/Messages.h"

#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <cfloat>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <utility>

using namespace flashtile;
using namespace flashtile::runtime;
using plan::ArgKind;
using plan::ArgRole;
using plan::Argument;
using plan::DType;
using plan::Expr;
using plan::ParamSource;
using plan::ParamType;

namespace {

//===----------------------------------------------------------------------===//
// Message helpers
//===----------------------------------------------------------------------===//

using flashtile::runtime_detail::concat;

std::string formatList(const std::vector<int64_t> &values) {
  std::string s = "[";
  for (size_t i = 0; i < values.size(); ++i)
    s += (i ? ", " : "") + std::to_string(values[i]);
  return s + "]";
}

std::string formatPointer(uintptr_t p) {
  std::ostringstream os;
  os << "0x" << std::hex << p;
  return os.str();
}

/// "%g" with enough digits to tell values apart.
std::string formatDouble(double v) {
  std::ostringstream os;
  os.precision(10);
  os << v;
  return os.str();
}

/// "(batch, seqlen_q, heads_q, 128)": what the plan says a shape is.
std::string describeShape(const Argument &arg) {
  std::string s = "(";
  for (size_t d = 0; d < arg.shape.size(); ++d)
    s += (d ? ", " : "") +
         (arg.shape[d] ? plan::toString(*arg.shape[d]) : std::string("*"));
  return s + ")";
}

constexpr int64_t kI32Min = std::numeric_limits<int32_t>::min();
constexpr int64_t kI32Max = std::numeric_limits<int32_t>::max();

bool isFloatDType(DType dtype) {
  return dtype == DType::F16 || dtype == DType::BF16 || dtype == DType::F32;
}

/// The largest finite value of a floating dtype.
double getFloatMax(DType dtype) {
  switch (dtype) {
  case DType::F16:
    return 65504.0;
  case DType::BF16:
    return 3.3895313892515355e38;
  default:
    return FLT_MAX;
  }
}

//===----------------------------------------------------------------------===//
// The CUDA driver, through dlopen
//===----------------------------------------------------------------------===//

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUhandle = void *; // CUcontext, CUmodule, CUfunction, CUstream

constexpr CUresult kCudaSuccess = 0;
constexpr CUresult kCudaErrorNoBinaryForGpu = 209;
constexpr int kFuncAttributeMaxDynamicSharedSizeBytes = 8;
constexpr int kDeviceAttributeMultiprocessorCount = 16;
constexpr int kDeviceAttributeComputeCapabilityMajor = 75;
constexpr int kDeviceAttributeComputeCapabilityMinor = 76;
constexpr int kDeviceAttributeMaxSharedMemoryPerBlockOptin = 97;

struct Driver {
  CUresult (*cuInit)(unsigned);
  CUresult (*cuGetErrorName)(CUresult, const char **);
  CUresult (*cuGetErrorString)(CUresult, const char **);
  CUresult (*cuDeviceGet)(CUdevice *, int);
  CUresult (*cuDeviceGetCount)(int *);
  CUresult (*cuDeviceGetAttribute)(int *, int, CUdevice);
  CUresult (*cuCtxGetCurrent)(CUhandle *);
  CUresult (*cuCtxGetDevice)(CUdevice *);
  CUresult (*cuCtxPushCurrent)(CUhandle);
  CUresult (*cuCtxPopCurrent)(CUhandle *);
  CUresult (*cuCtxSynchronize)();
  CUresult (*cuDevicePrimaryCtxRetain)(CUhandle *, CUdevice);
  CUresult (*cuModuleLoadData)(CUhandle *, const void *);
  CUresult (*cuModuleUnload)(CUhandle);
  CUresult (*cuModuleGetFunction)(CUhandle *, CUhandle, const char *);
  CUresult (*cuFuncSetAttribute)(CUhandle, int, int);
  CUresult (*cuLaunchKernel)(CUhandle, unsigned, unsigned, unsigned, unsigned,
                             unsigned, unsigned, unsigned, CUhandle, void **,
                             void **);
  CUresult (*cuMemAllocAsync)(CUdeviceptr *, size_t, CUhandle);
  CUresult (*cuMemFreeAsync)(CUdeviceptr, CUhandle);
  CUresult (*cuMemsetD8Async)(CUdeviceptr, unsigned char, size_t, CUhandle);
  CUresult (*cuMemAlloc)(CUdeviceptr *, size_t);
  CUresult (*cuMemFree)(CUdeviceptr);
  CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void *, size_t);
  CUresult (*cuMemcpyDtoH)(void *, CUdeviceptr, size_t);

  std::string errorText(CUresult code) const {
    const char *name = nullptr, *text = nullptr;
    if (cuGetErrorName(code, &name) != kCudaSuccess || !name)
      return concat("CUresult ", code);
    cuGetErrorString(code, &text);
    return concat(name, " (", code, "): ", text ? text : "");
  }

  /// False with `error` = "<what> failed: <name> (<code>): <text>".
  bool check(CUresult code, const std::string &what,
             std::string &error) const {
    if (code == kCudaSuccess)
      return true;
    error = concat(what, " failed: ", errorText(code));
    return false;
  }
};

struct DriverState {
  std::once_flag once;
  std::atomic<bool> loaded{false};
  std::string error;
  Driver driver{};
};

DriverState &getDriverState() {
  static DriverState *state = new DriverState(); // never destroyed
  return *state;
}

template <typename Fn>
bool bindSymbol(void *lib, const char *name, Fn &fn, std::string &error) {
  void *sym = dlsym(lib, name);
  if (!sym) {
    error = concat("the CUDA driver library has no ", name,
                   "; it is too old or not libcuda");
    return false;
  }
  fn = reinterpret_cast<Fn>(sym);
  return true;
}

/// The driver, opened on first use; nullptr with `error` set when there is
/// none. The library stays open for the process's lifetime.
const Driver *getDriver(std::string &error) {
  DriverState &state = getDriverState();
  std::call_once(state.once, [&state] {
    const char *override = std::getenv("FLASHTILE_CUDA_DRIVER");
    std::string name =
        override && *override ? std::string(override) : "libcuda.so.1";
    void *lib = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      const char *why = dlerror();
      state.error = concat("no CUDA driver: cannot load ", name, " (",
                           why ? why : "unknown reason",
                           "); FlashTile kernels need an NVIDIA GPU and its "
                           "driver");
      return;
    }
    Driver &d = state.driver;
    std::string &e = state.error;
    bool ok =
        bindSymbol(lib, "cuInit", d.cuInit, e) &&
        bindSymbol(lib, "cuGetErrorName", d.cuGetErrorName, e) &&
        bindSymbol(lib, "cuGetErrorString", d.cuGetErrorString, e) &&
        bindSymbol(lib, "cuDeviceGet", d.cuDeviceGet, e) &&
        bindSymbol(lib, "cuDeviceGetCount", d.cuDeviceGetCount, e) &&
        bindSymbol(lib, "cuDeviceGetAttribute", d.cuDeviceGetAttribute, e) &&
        bindSymbol(lib, "cuCtxGetCurrent", d.cuCtxGetCurrent, e) &&
        bindSymbol(lib, "cuCtxGetDevice", d.cuCtxGetDevice, e) &&
        bindSymbol(lib, "cuCtxPushCurrent_v2", d.cuCtxPushCurrent, e) &&
        bindSymbol(lib, "cuCtxPopCurrent_v2", d.cuCtxPopCurrent, e) &&
        bindSymbol(lib, "cuCtxSynchronize", d.cuCtxSynchronize, e) &&
        bindSymbol(lib, "cuDevicePrimaryCtxRetain", d.cuDevicePrimaryCtxRetain,
                   e) &&
        bindSymbol(lib, "cuModuleLoadData", d.cuModuleLoadData, e) &&
        bindSymbol(lib, "cuModuleUnload", d.cuModuleUnload, e) &&
        bindSymbol(lib, "cuModuleGetFunction", d.cuModuleGetFunction, e) &&
        bindSymbol(lib, "cuFuncSetAttribute", d.cuFuncSetAttribute, e) &&
        bindSymbol(lib, "cuLaunchKernel", d.cuLaunchKernel, e) &&
        bindSymbol(lib, "cuMemAllocAsync", d.cuMemAllocAsync, e) &&
        bindSymbol(lib, "cuMemFreeAsync", d.cuMemFreeAsync, e) &&
        bindSymbol(lib, "cuMemsetD8Async", d.cuMemsetD8Async, e) &&
        bindSymbol(lib, "cuMemAlloc_v2", d.cuMemAlloc, e) &&
        bindSymbol(lib, "cuMemFree_v2", d.cuMemFree, e) &&
        bindSymbol(lib, "cuMemcpyHtoD_v2", d.cuMemcpyHtoD, e) &&
        bindSymbol(lib, "cuMemcpyDtoH_v2", d.cuMemcpyDtoH, e);
    if (ok)
      ok = d.check(d.cuInit(0), "cuInit", e);
    state.loaded = ok;
  });
  if (!state.loaded) {
    error = state.error;
    return nullptr;
  }
  return &state.driver;
}

/// The driver if it is already open; never opens it.
const Driver *peekDriver() {
  DriverState &state = getDriverState();
  return state.loaded ? &state.driver : nullptr;
}

/// The primary context of `device`, retained once per process (never
/// released, so it stays valid).
CUhandle getPrimaryContext(const Driver &drv, CUdevice device,
                           std::string &error) {
  static std::mutex mutex;
  static auto *retained = new std::vector<std::pair<CUdevice, CUhandle>>();
  std::lock_guard<std::mutex> lock(mutex);
  for (const auto &entry : *retained)
    if (entry.first == device)
      return entry.second;
  CUhandle ctx = nullptr;
  if (!drv.check(drv.cuDevicePrimaryCtxRetain(&ctx, device),
                 concat("cuDevicePrimaryCtxRetain(device ", device, ")"),
                 error))
    return nullptr;
  retained->emplace_back(device, ctx);
  return ctx;
}

/// A device attribute, cached per (device, attribute).
std::optional<int> getDeviceAttribute(const Driver &drv, CUdevice device,
                                      int attribute, std::string &error) {
  static std::mutex mutex;
  static auto *cache = new std::map<std::pair<CUdevice, int>, int>();
  std::lock_guard<std::mutex> lock(mutex);
  auto it = cache->find({device, attribute});
  if (it != cache->end())
    return it->second;
  int value = 0;
  if (!drv.check(drv.cuDeviceGetAttribute(&value, attribute, device),
                 concat("cuDeviceGetAttribute(", attribute, ", device ",
                        device, ")"),
                 error))
    return std::nullopt;
  (*cache)[{device, attribute}] = value;
  return value;
}

/// Makes a context of device `ordinal` current for its lifetime: the
/// current one when it belongs to that device, otherwise the primary
/// context, pushed (and popped at the end).
class ScopedDeviceContext {
public:
  ScopedDeviceContext(const Driver &driver, int ordinal, std::string &error)
      : drv(driver) {
    if (!drv.check(drv.cuDeviceGet(&device, ordinal),
                   concat("cuDeviceGet(", ordinal, ")"), error))
      return;
    CUhandle primary = getPrimaryContext(drv, device, error);
    if (!primary)
      return;
    CUhandle current = nullptr;
    if (!drv.check(drv.cuCtxGetCurrent(&current), "cuCtxGetCurrent", error))
      return;
    if (current) {
      CUdevice currentDevice = -1;
      if (drv.cuCtxGetDevice(&currentDevice) == kCudaSuccess &&
          currentDevice == device) {
        context = current;
        primaryContext = current == primary;
        return;
      }
    }
    if (!drv.check(drv.cuCtxPushCurrent(primary), "cuCtxPushCurrent", error))
      return;
    pushed = true;
    context = primary;
    primaryContext = true;
  }
  ~ScopedDeviceContext() {
    if (pushed) {
      CUhandle popped;
      drv.cuCtxPopCurrent(&popped);
    }
  }
  ScopedDeviceContext(const ScopedDeviceContext &) = delete;
  ScopedDeviceContext &operator=(const ScopedDeviceContext &) = delete;

  /// nullptr when the constructor failed (and set the error).
  CUhandle get() const { return context; }
  bool isPrimary() const { return primaryContext; }
  CUdevice getDevice() const { return device; }

private:
  const Driver &drv;
  CUdevice device = -1;
  CUhandle context = nullptr;
  bool pushed = false;
  bool primaryContext = false;
};

//===----------------------------------------------------------------------===//
// Argument checks
//===----------------------------------------------------------------------===//

int64_t getNumElements(const TensorArg &t) {
  int64_t n = 1;
  for (int64_t s : t.sizes)
    n *= s; // sizes are checked non-negative and the product bounded first
  return n;
}

/// The byte range [begin, end) a non-empty tensor's elements lie in; fails
/// on overflow.
bool getByteRange(const TensorArg &t, uintptr_t &begin, uintptr_t &end) {
  int64_t last = 0; // offset of the last element, in elements
  for (size_t d = 0; d < t.sizes.size(); ++d) {
    int64_t step = 0;
    if (__builtin_mul_overflow(t.sizes[d] - 1, t.strides[d], &step) ||
        __builtin_add_overflow(last, step, &last))
      return false;
  }
  int64_t bytes = 0;
  if (__builtin_add_overflow(last, 1, &last) ||
      __builtin_mul_overflow(last, plan::getDTypeSize(t.dtype), &bytes))
    return false;
  begin = reinterpret_cast<uintptr_t>(t.data);
  return !__builtin_add_overflow(begin, static_cast<uintptr_t>(bytes), &end);
}

/// No two elements of `t` at one address (for outputs).
bool hasDistinctElements(const TensorArg &t) {
  std::vector<std::pair<int64_t, int64_t>> dims; // (stride, size)
  for (size_t d = 0; d < t.sizes.size(); ++d)
    if (t.sizes[d] > 1)
      dims.emplace_back(t.strides[d], t.sizes[d]);
  std::sort(dims.begin(), dims.end());
  int64_t span = 1;
  for (const auto &[stride, size] : dims) {
    if (stride < span)
      return false;
    // Saturate: a span past int64 only means "no later dim can overlap".
    if (__builtin_mul_overflow(stride, size, &span))
      span = std::numeric_limits<int64_t>::max();
  }
  return true;
}

/// "(heads_q = 6, heads_kv = 4)" for the names `expr` uses.
std::string describeValues(const Expr &expr, const plan::Env &env) {
  std::vector<std::string> names;
  plan::collectNames(expr, names);
  std::string s;
  for (const std::string &name : names) {
    auto it = env.find(name);
    if (it != env.end())
      s += (s.empty() ? "" : ", ") + concat(name, " = ", it->second);
  }
  return s.empty() ? s : " (" + s + ")";
}

/// "70000 (heads_q)", "2 (ceil_div(seqlen_q, 128) with seqlen_q = 200)",
/// "5": a computed value and where it came from.
std::string describeExprValue(const Expr &expr, int64_t value,
                              const plan::Env &env) {
  if (expr.op == Expr::Op::Const)
    return std::to_string(value);
  if (expr.op == Expr::Op::Name)
    return concat(value, " (", expr.name, ")");
  std::string values = describeValues(expr, env);
  if (!values.empty()) // " (a = 1, b = 2)" -> "a = 1, b = 2"
    values = " with " + values.substr(2, values.size() - 3);
  return concat(value, " (", plan::toString(expr), values, ")");
}

} // namespace

//===----------------------------------------------------------------------===//
// Argument values
//===----------------------------------------------------------------------===//

TensorArg TensorArg::contiguous(void *data, std::vector<int64_t> sizes,
                                DType dtype, int device) {
  TensorArg t;
  t.data = data;
  t.dtype = dtype;
  t.device = device;
  t.strides.assign(sizes.size(), 1);
  int64_t stride = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    t.strides[i] = stride;
    stride *= std::max<int64_t>(sizes[i], 1);
  }
  t.sizes = std::move(sizes);
  return t;
}

ArgValue ArgValue::of(TensorArg tensor) {
  ArgValue v;
  v.kind = Kind::Tensor;
  v.tensor = std::move(tensor);
  return v;
}

ArgValue ArgValue::scalar(double value) {
  ArgValue v;
  v.kind = Kind::Scalar;
  v.floatValue = value;
  return v;
}

ArgValue ArgValue::integer(int64_t value) {
  ArgValue v;
  v.kind = Kind::Scalar;
  v.isInteger = true;
  v.intValue = value;
  v.floatValue = static_cast<double>(value);
  return v;
}

//===----------------------------------------------------------------------===//
// KernelFamily: loading
//===----------------------------------------------------------------------===//

namespace {

bool readFile(const std::string &path, std::vector<char> &out,
              std::string &error, const char *what) {
  // A folder opens as a stream and then throws on read: refuse it first.
  std::error_code typeError;
  if (std::filesystem::exists(path, typeError) &&
      !std::filesystem::is_regular_file(path, typeError)) {
    error = concat(path, ": the ", what, " is not a regular file");
    return false;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::error_code ec;
    error = std::filesystem::exists(path, ec)
                ? concat(path, ": cannot read ", what)
                : concat(path, ": ", what, " not found");
    return false;
  }
  out.assign(std::istreambuf_iterator<char>(in),
             std::istreambuf_iterator<char>());
  if (in.bad()) {
    error = concat(path, ": cannot read ", what);
    return false;
  }
  return true;
}

} // namespace

KernelFamily::KernelFamily(plan::LaunchPlan launchPlan, std::string path,
                           std::vector<std::vector<char>> cubinImages,
                           std::vector<size_t> imageOfKernel)
    : plan(std::move(launchPlan)), planPath(std::move(path)),
      images(std::move(cubinImages)), kernelImage(std::move(imageOfKernel)) {}

KernelFamily::~KernelFamily() {
  const Driver *drv = peekDriver();
  if (!drv)
    return;
  for (const std::unique_ptr<LoadedContext> &loaded : contexts) {
    // Other contexts may be gone; their destruction frees their modules.
    if (!loaded->isPrimary ||
        drv->cuCtxPushCurrent(loaded->context) != kCudaSuccess)
      continue;
    for (void *module : loaded->modules)
      if (module)
        drv->cuModuleUnload(module);
    CUhandle popped;
    drv->cuCtxPopCurrent(&popped);
  }
}

std::unique_ptr<KernelFamily>
KernelFamily::create(plan::LaunchPlan launchPlan,
                     std::map<std::string, std::vector<char>> cubins,
                     std::string &error, std::string path) {
  std::vector<std::vector<char>> images;
  std::vector<std::string> imageNames;
  std::vector<size_t> kernelImage;
  std::string where = path.empty() ? std::string() : path + ": ";
  for (size_t k = 0; k < launchPlan.kernels.size(); ++k) {
    const std::string &name = launchPlan.kernels[k].cubin;
    auto known = std::find(imageNames.begin(), imageNames.end(), name);
    if (known != imageNames.end()) {
      kernelImage.push_back(known - imageNames.begin());
      continue;
    }
    auto it = cubins.find(name);
    if (it == cubins.end()) {
      error = concat(where, "kernels[", k, "].cubin: no image for \"", name,
                     "\"");
      return nullptr;
    }
    if (it->second.empty()) {
      error = concat(where, "cubin \"", name, "\" is empty");
      return nullptr;
    }
    kernelImage.push_back(images.size());
    imageNames.push_back(name);
    images.push_back(std::move(it->second));
  }
  return std::unique_ptr<KernelFamily>(
      new KernelFamily(std::move(launchPlan), std::move(path),
                       std::move(images), std::move(kernelImage)));
}

std::unique_ptr<KernelFamily> KernelFamily::load(const std::string &planPath,
                                                 std::string &error) {
  std::vector<char> text;
  if (!readFile(planPath, text, error, "plan"))
    return nullptr;
  std::string parseError;
  std::optional<plan::LaunchPlan> parsed =
      plan::parseJson(std::string_view(text.data(), text.size()), parseError);
  if (!parsed) {
    error = concat(planPath, ": ", parseError);
    return nullptr;
  }
  std::filesystem::path base = std::filesystem::path(planPath).parent_path();
  std::map<std::string, std::vector<char>> cubins;
  for (const plan::Kernel &kernel : parsed->kernels) {
    if (cubins.count(kernel.cubin))
      continue;
    std::filesystem::path cubin(kernel.cubin);
    if (cubin.is_relative())
      cubin = base / cubin;
    std::vector<char> image;
    std::string readError;
    if (!readFile(cubin.string(), image, readError, "cubin")) {
      error = concat(planPath, ": kernel ", kernel.symbol, ": ", readError);
      return nullptr;
    }
    if (image.empty()) {
      error = concat(planPath, ": kernel ", kernel.symbol, ": cubin ",
                     cubin.string(), " is empty");
      return nullptr;
    }
    cubins.emplace(kernel.cubin, std::move(image));
  }
  return create(std::move(*parsed), std::move(cubins), error, planPath);
}

//===----------------------------------------------------------------------===//
// KernelFamily: checks
//===----------------------------------------------------------------------===//

namespace {

/// Checks one tensor argument's kind-independent properties: dtype, rank,
/// stride count, non-negative sizes, device.
bool checkTensorDescription(const plan::LaunchPlan &plan, const Argument &a,
                            const TensorArg &t, std::string &error) {
  if (t.dtype != a.dtype) {
    error = concat(a.name, " has dtype ", plan::stringifyDType(t.dtype),
                   ", but ", plan.name, " takes ",
                   plan::stringifyDType(a.dtype));
    return false;
  }
  if (static_cast<int64_t>(t.sizes.size()) != a.getRank()) {
    error = concat(a.name, " has rank ", t.sizes.size(), " (shape ",
                   formatList(t.sizes), "), but ", plan.name, " takes rank ",
                   a.getRank(), " ", describeShape(a));
    return false;
  }
  if (t.strides.size() != t.sizes.size()) {
    error = concat(a.name, " has ", t.sizes.size(), " sizes but ",
                   t.strides.size(), " strides");
    return false;
  }
  for (int64_t s : t.sizes) {
    if (s < 0) {
      error = concat(a.name, " has a negative size: ", formatList(t.sizes));
      return false;
    }
  }
  // Bound the element count, so that later products cannot overflow.
  int64_t n = 1;
  for (int64_t s : t.sizes) {
    if (__builtin_mul_overflow(n, s, &n)) {
      error = concat(a.name, " has too many elements: shape ",
                     formatList(t.sizes));
      return false;
    }
  }
  if (t.device < 0) {
    error = concat(a.name, " is not on a CUDA device (device ", t.device,
                   ")");
    return false;
  }
  return true;
}

/// Layout rules of a tensor argument: null pointer, strides, alignment.
bool checkLayout(const Argument &a, const TensorArg &t, std::string &error) {
  if (getNumElements(t) == 0)
    return true; // nothing is read or written
  if (!t.data) {
    error = concat(a.name, " data pointer is null");
    return false;
  }
  size_t rank = t.sizes.size();
  for (size_t d = 0; d < rank; ++d) {
    if (t.strides[d] < 0) {
      error = concat(a.name, " has a negative stride ", t.strides[d],
                     " in dim ", d, " (strides ", formatList(t.strides),
                     "); strides must be >= 0");
      return false;
    }
  }
  if (a.contiguousLastDim && rank > 0 && t.sizes[rank - 1] > 1 &&
      t.strides[rank - 1] != 1) {
    error = concat(a.name,
                   " must be contiguous in its last dim (stride 1), but has "
                   "strides ",
                   formatList(t.strides), " for shape ", formatList(t.sizes));
    return false;
  }
  if (a.strideMultiple > 1) {
    for (size_t d = 0; d + 1 < rank; ++d) {
      if (t.sizes[d] <= 1)
        continue; // a size-1 dim is never stepped: its stride is unused
      if (t.strides[d] % a.strideMultiple != 0) {
        error = concat(a.name, " stride ", t.strides[d], " of dim ", d,
                       " is not a multiple of ", a.strideMultiple,
                       " elements (", a.strideMultiple *
                                          plan::getDTypeSize(a.dtype),
                       " bytes); strides ", formatList(t.strides),
                       ", shape ", formatList(t.sizes));
        return false;
      }
    }
  }
  uintptr_t address = reinterpret_cast<uintptr_t>(t.data);
  if (address % static_cast<uintptr_t>(a.alignBytes) != 0) {
    error = concat(a.name, " data pointer ", formatPointer(address),
                   " is not ", a.alignBytes, "-byte aligned");
    return false;
  }
  return true;
}

/// The value of a scalar argument, checked against its dtype.
bool resolveScalar(const Argument &a, const ArgValue &v, double &value,
                   int64_t &intValue, std::string &error) {
  if (isFloatDType(a.dtype)) {
    value = v.isInteger ? static_cast<double>(v.intValue) : v.floatValue;
    if (!std::isfinite(value) || std::fabs(value) > getFloatMax(a.dtype)) {
      error = concat(a.name, " = ", formatDouble(value),
                     " is not a finite ", plan::stringifyDType(a.dtype),
                     " value");
      return false;
    }
    if (a.positive && !(value > 0)) {
      error = concat(a.name, " = ", formatDouble(value),
                     " must be positive");
      return false;
    }
    intValue = 0;
    return true;
  }
  if (v.isInteger) {
    intValue = v.intValue;
  } else {
    double d = v.floatValue;
    if (!std::isfinite(d) || std::nearbyint(d) != d || std::fabs(d) > 9.0e18) {
      error = concat(a.name, " = ", formatDouble(d), " is not an integer (",
                     plan::stringifyDType(a.dtype), ")");
      return false;
    }
    intValue = static_cast<int64_t>(d);
  }
  if (a.dtype == DType::I32 && (intValue < kI32Min || intValue > kI32Max)) {
    error = concat(a.name, " = ", intValue, " does not fit i32");
    return false;
  }
  value = static_cast<double>(intValue);
  return true;
}

/// The message of a shape entry that differs from the sizes.
std::string describeShapeMismatch(const plan::LaunchPlan &plan,
                                  const std::vector<ArgValue> &args,
                                  const Argument &a, const TensorArg &t,
                                  size_t d, const Expr &expr,
                                  int64_t expected) {
  std::string head = concat(a.name, " has ", t.sizes[d], " in dim ", d,
                            " (shape ", formatList(t.sizes), ")");
  if (expr.op == Expr::Op::Name) {
    for (const plan::SizeBinding &size : plan.sizes) {
      if (size.name != expr.name)
        continue;
      int64_t other = plan.indexOfArgument(size.arg);
      const TensorArg &o = args[other].tensor;
      return concat(head, ", but ", size.arg, " has ", expected, " in dim ",
                    size.dim, " (shape ", formatList(o.sizes),
                    "); both are ", size.name);
    }
  }
  if (expr.op == Expr::Op::Const)
    return concat(head, ", expected ", expected, " ", describeShape(a));
  return concat(head, ", expected ", plan::toString(expr), " = ", expected,
                " ", describeShape(a));
}

/// The integer value of a non-pointer, non-float parameter.
bool getIntParamValue(const plan::LaunchPlan &plan, const plan::Param &param,
                      const std::vector<ArgValue> &args,
                      const CheckedLaunch &checked, int64_t &value,
                      std::string &error) {
  const ParamSource &src = param.source;
  switch (src.kind) {
  case ParamSource::Kind::Dim:
  case ParamSource::Kind::Stride: {
    const TensorArg &t = args[plan.indexOfArgument(src.arg)].tensor;
    value = src.kind == ParamSource::Kind::Dim ? t.sizes[src.index]
                                               : t.strides[src.index];
    return true;
  }
  case ParamSource::Kind::Scalar:
    value = checked.scalarInts[plan.indexOfArgument(src.arg)];
    return true;
  case ParamSource::Kind::Value: {
    std::optional<int64_t> v = plan::evaluate(src.value, checked.sizes, error);
    if (!v) {
      error = concat("parameter ", param.name, " = ",
                     plan::toString(src.value), ": ", error);
      return false;
    }
    value = *v;
    return true;
  }
  default:
    error = concat("parameter ", param.name, " is not an integer");
    return false;
  }
}

/// Checks the values of `kernel`'s parameters against their types.
bool checkParamValues(const plan::LaunchPlan &plan, const plan::Kernel &kernel,
                      const std::vector<ArgValue> &args,
                      const CheckedLaunch &checked, std::string &error) {
  for (const plan::Param &param : kernel.params) {
    if (param.type == ParamType::Ptr)
      continue;
    if (param.type == ParamType::F32) {
      double v = checked.scalarValues[plan.indexOfArgument(param.source.arg)];
      if (!std::isfinite(v) || std::fabs(v) > FLT_MAX) {
        error = concat("kernel parameter ", param.name, " = ",
                       formatDouble(v), " of ", kernel.symbol,
                       " does not fit f32");
        return false;
      }
      continue;
    }
    int64_t value = 0;
    if (!getIntParamValue(plan, param, args, checked, value, error))
      return false;
    if (param.type == ParamType::I32 && (value < kI32Min || value > kI32Max)) {
      error = concat("kernel parameter ", param.name, " = ", value, " of ",
                     kernel.symbol, " does not fit i32");
      return false;
    }
  }
  return true;
}

} // namespace

namespace {

// The phases of KernelFamily::check, in order; each fills its part of the
// checked launch or says, in `error`, what the caller got wrong.

/// Each argument's kind, dtype, rank and device, and each scalar's value.
bool checkArgumentValues(const plan::LaunchPlan &plan,
                         const std::vector<ArgValue> &args, CheckedLaunch &c,
                         std::string &error) {
  const std::vector<Argument> &arguments = plan.arguments;
  c.scalarValues.assign(args.size(), 0.0);
  c.scalarInts.assign(args.size(), 0);
  const Argument *deviceArg = nullptr;
  for (size_t i = 0; i < args.size(); ++i) {
    const Argument &a = arguments[i];
    const ArgValue &v = args[i];
    if (a.kind == ArgKind::Tensor) {
      if (v.kind != ArgValue::Kind::Tensor) {
        error = v.kind == ArgValue::Kind::Absent
                    ? concat("missing ",
                             a.role == ArgRole::Input ? "input"
                                                      : plan::stringifyArgRole(a.role),
                             " tensor ", a.name)
                    : concat(a.name, " must be a tensor, got a scalar");
        return false;
      }
      if (!checkTensorDescription(plan, a, v.tensor, error))
        return false;
      if (!deviceArg) {
        deviceArg = &a;
        c.device = v.tensor.device;
      } else if (v.tensor.device != c.device) {
        error = concat(a.name, " is on device ", v.tensor.device, " but ",
                       deviceArg->name, " is on device ", c.device,
                       "; all tensors must be on one device");
        return false;
      }
      continue;
    }
    ArgValue value = v;
    if (v.kind == ArgValue::Kind::Absent) {
      if (!a.defaultValue) {
        error = concat("missing scalar ", a.name, " (",
                       plan::stringifyDType(a.dtype), ")");
        return false;
      }
      value = ArgValue::scalar(*a.defaultValue);
    } else if (v.kind == ArgValue::Kind::Tensor) {
      error = concat(a.name, " must be a scalar (",
                     plan::stringifyDType(a.dtype), "), got a tensor");
      return false;
    }
    if (!resolveScalar(a, value, c.scalarValues[i], c.scalarInts[i], error))
      return false;
  }
  return true;
}

/// The named sizes, from the tensors that bind them, and every shape entry
/// against them.
bool bindSizes(const plan::LaunchPlan &plan, const std::vector<ArgValue> &args,
               CheckedLaunch &c, std::string &error) {
  const std::vector<Argument> &arguments = plan.arguments;
  for (const plan::SizeBinding &size : plan.sizes) {
    const TensorArg &t = args[plan.indexOfArgument(size.arg)].tensor;
    c.sizes[size.name] = t.sizes[size.dim];
  }
  for (size_t i = 0; i < args.size(); ++i) {
    const Argument &a = arguments[i];
    if (a.kind != ArgKind::Tensor)
      continue;
    const TensorArg &t = args[i].tensor;
    for (size_t d = 0; d < a.shape.size(); ++d) {
      if (!a.shape[d])
        continue;
      std::optional<int64_t> expected =
          plan::evaluate(*a.shape[d], c.sizes, error);
      if (!expected) {
        error = concat("the shape of ", a.name, " in dim ", d, " (",
                       plan::toString(*a.shape[d]), ") cannot be computed: ",
                       error);
        return false;
      }
      if (*expected != t.sizes[d]) {
        error = describeShapeMismatch(plan, args, a, t, d, *a.shape[d],
                                      *expected);
        return false;
      }
    }
  }
  return true;
}

/// The plan's checks over the sizes, with their messages.
bool checkPlanChecks(const plan::LaunchPlan &plan, const CheckedLaunch &c,
                     std::string &error) {
  for (const plan::Check &check : plan.checks) {
    std::optional<int64_t> holds =
        plan::evaluate(check.condition, c.sizes, error);
    if (!holds) {
      error = concat(check.message, ": the check ",
                     plan::toString(check.condition),
                     " cannot be evaluated: ", error,
                     describeValues(check.condition, c.sizes));
      return false;
    }
    if (*holds == 0) {
      error = check.message + describeValues(check.condition, c.sizes);
      return false;
    }
  }
  return true;
}

/// Each tensor's layout; then that no output overlaps itself or another
/// argument.
bool checkLayoutsAndOverlaps(const plan::LaunchPlan &plan,
                             const std::vector<ArgValue> &args,
                             std::string &error) {
  const std::vector<Argument> &arguments = plan.arguments;
  for (size_t i = 0; i < args.size(); ++i)
    if (arguments[i].kind == ArgKind::Tensor &&
        !checkLayout(arguments[i], args[i].tensor, error))
      return false;
  std::vector<std::pair<uintptr_t, uintptr_t>> ranges(args.size(), {0, 0});
  for (size_t i = 0; i < args.size(); ++i) {
    if (arguments[i].kind != ArgKind::Tensor ||
        getNumElements(args[i].tensor) == 0)
      continue;
    if (!getByteRange(args[i].tensor, ranges[i].first, ranges[i].second)) {
      error = concat(arguments[i].name, " spans more bytes than an address ",
                     "can hold (shape ", formatList(args[i].tensor.sizes),
                     ", strides ", formatList(args[i].tensor.strides), ")");
      return false;
    }
  }
  for (size_t i = 0; i < args.size(); ++i) {
    const Argument &a = arguments[i];
    if (a.kind != ArgKind::Tensor || a.role == ArgRole::Input ||
        ranges[i].first == ranges[i].second)
      continue;
    const TensorArg &t = args[i].tensor;
    if (!hasDistinctElements(t)) {
      error = concat(a.name, " has overlapping elements (strides ",
                     formatList(t.strides), " for shape ",
                     formatList(t.sizes),
                     "); an output needs distinct addresses");
      return false;
    }
    for (size_t j = 0; j < args.size(); ++j) {
      if (j == i || ranges[j].first == ranges[j].second)
        continue;
      if (ranges[i].first < ranges[j].second &&
          ranges[j].first < ranges[i].second) {
        error = concat(a.name, " overlaps ", arguments[j].name, ": ", a.name,
                       " spans [", formatPointer(ranges[i].first), ", ",
                       formatPointer(ranges[i].second), ") and ",
                       arguments[j].name, " spans [",
                       formatPointer(ranges[j].first), ", ",
                       formatPointer(ranges[j].second),
                       "); an output must not share memory with another "
                       "argument");
        return false;
      }
    }
  }
  return true;
}

/// The derived sizes, in order: evaluated, or given by a launch option.
bool deriveSizes(const plan::LaunchPlan &plan, CheckedLaunch &c,
                 std::string &error, std::optional<int64_t> numSms,
                 const LaunchOptions *options) {
  if (numSms)
    c.sizes["num_sms"] = *numSms;
  if (options)
    for (const auto &[name, value] : options->sizes) {
      bool derived = std::any_of(
          plan.derived.begin(), plan.derived.end(),
          [&](const plan::DerivedSize &d) { return d.name == name; });
      if (!derived) {
        error = concat("launch option sizes[", name, "]: ", plan.name,
                       " has no derived size '", name, "'");
        return false;
      }
      if (value < 1) {
        error = concat("launch option sizes[", name, "] = ", value,
                       " must be positive");
        return false;
      }
    }
  for (const plan::DerivedSize &derived : plan.derived) {
    if (options)
      if (auto it = options->sizes.find(derived.name);
          it != options->sizes.end()) {
        c.sizes[derived.name] = it->second;
        continue;
      }
    std::optional<int64_t> value =
        plan::evaluate(derived.value, c.sizes, error);
    if (!value) {
      error = concat("the size ", derived.name, " = ",
                     plan::toString(derived.value), " cannot be computed: ",
                     error);
      return false;
    }
    c.sizes[derived.name] = *value;
  }
  return true;
}

/// The kernels to run: every one, or the dispatch case that applies.
bool chooseKernels(const plan::LaunchPlan &plan, CheckedLaunch &c,
                   std::string &error, std::optional<int64_t> numSms) {
  if (plan.dispatch.empty() || !numSms) {
    for (size_t k = 0; k < plan.kernels.size(); ++k)
      c.kernels.push_back(static_cast<int64_t>(k));
  } else {
    bool found = false;
    for (const plan::DispatchCase &entry : plan.dispatch) {
      std::optional<int64_t> holds =
          plan::evaluate(entry.condition, c.sizes, error);
      if (!holds) {
        error = concat("the dispatch condition ",
                       plan::toString(entry.condition),
                       " cannot be evaluated: ", error);
        return false;
      }
      if (*holds) {
        c.kernels = entry.kernels;
        found = true;
        break;
      }
    }
    if (!found) {
      std::string values;
      for (const auto &[name, value] : c.sizes)
        values += (values.empty() ? "" : ", ") + concat(name, " = ", value);
      error = concat("no dispatch case of ", plan.name, " applies (", values,
                     ")");
      return false;
    }
  }
  return true;
}

/// Workspace sizes, grids (within CUDA's limits) and parameter values.
bool computeLaunch(const plan::LaunchPlan &plan,
                   const std::vector<ArgValue> &args, CheckedLaunch &c,
                   std::string &error) {
  for (const plan::Workspace &ws : plan.workspaces) {
    std::optional<int64_t> bytes = plan::evaluate(ws.bytes, c.sizes, error);
    if (!bytes) {
      error = concat("workspace ", ws.name, " (", plan::toString(ws.bytes),
                     " bytes): ", error);
      return false;
    }
    if (*bytes < 0) {
      error = concat("workspace ", ws.name, " has a negative size: ",
                     describeExprValue(ws.bytes, *bytes, c.sizes));
      return false;
    }
    c.workspaceBytes.push_back(*bytes);
  }
  c.grids.assign(plan.kernels.size(), {0, 0, 0});
  static const char *const kAxis[] = {"x", "y", "z"};
  for (int64_t k : c.kernels) {
    const plan::Kernel &kernel = plan.kernels[k];
    std::array<int64_t, 3> &grid = c.grids[k];
    bool empty = false;
    for (int d = 0; d < 3; ++d) {
      std::optional<int64_t> v = plan::evaluate(kernel.grid[d], c.sizes, error);
      if (!v) {
        error = concat("grid ", kAxis[d], " of ", kernel.symbol, " (",
                       plan::toString(kernel.grid[d]), "): ", error);
        return false;
      }
      if (*v < 0) {
        error = concat("grid ", kAxis[d], " of ", kernel.symbol, " is ",
                       describeExprValue(kernel.grid[d], *v, c.sizes),
                       ", which is negative");
        return false;
      }
      grid[d] = *v;
      empty = empty || *v == 0;
    }
    if (empty)
      continue; // not launched
    for (int d = 0; d < 3; ++d) {
      int64_t limit = d == 0 ? kGridXMax : kGridYZMax;
      if (grid[d] > limit) {
        error = concat("grid ", kAxis[d], " of ", kernel.symbol, " is ",
                       describeExprValue(kernel.grid[d], grid[d], c.sizes),
                       ", over the CUDA limit ", limit);
        return false;
      }
    }
    if (!checkParamValues(plan, kernel, args, c, error))
      return false;
  }
  return true;
}

} // namespace

bool KernelFamily::check(const std::vector<ArgValue> &args, std::string &error,
                         CheckedLaunch *checkedOut,
                         std::optional<int64_t> numSms,
                         const LaunchOptions *options) const {
  CheckedLaunch local;
  CheckedLaunch &c = checkedOut ? *checkedOut : local;
  c = CheckedLaunch();
  const std::vector<Argument> &arguments = plan.arguments;
  if (args.size() != arguments.size()) {
    std::string names;
    for (const Argument &a : arguments)
      names += (names.empty() ? "" : ", ") + a.name;
    error = concat(plan.name, " takes ", arguments.size(), " arguments (",
                   names, "), got ", args.size());
    return false;
  }

  return checkArgumentValues(plan, args, c, error) &&
         bindSizes(plan, args, c, error) && checkPlanChecks(plan, c, error) &&
         checkLayoutsAndOverlaps(plan, args, error) &&
         deriveSizes(plan, c, error, numSms, options) &&
         chooseKernels(plan, c, error, numSms) &&
         computeLaunch(plan, args, c, error);
}

std::optional<std::vector<OutputShape>>
KernelFamily::getOutputShapes(const std::vector<ArgValue> &args,
                              std::string &error) const {
  const std::vector<Argument> &arguments = plan.arguments;
  if (args.size() != arguments.size()) {
    error = concat(plan.name, " takes ", arguments.size(), " arguments, got ",
                   args.size());
    return std::nullopt;
  }
  // Every input (and accumulated tensor) must be given and well-formed;
  // the sizes come from them.
  for (size_t i = 0; i < arguments.size(); ++i) {
    const Argument &a = arguments[i];
    if (a.kind != ArgKind::Tensor || a.role == ArgRole::Output)
      continue;
    if (args[i].kind != ArgValue::Kind::Tensor) {
      error = concat("missing input tensor ", a.name);
      return std::nullopt;
    }
    if (!checkTensorDescription(plan, a, args[i].tensor, error))
      return std::nullopt;
  }
  plan::Env sizes;
  for (const plan::SizeBinding &size : plan.sizes) {
    int64_t index = plan.indexOfArgument(size.arg);
    if (arguments[index].role == ArgRole::Output)
      continue; // outputs are what is being computed
    sizes[size.name] = args[index].tensor.sizes[size.dim];
  }
  std::vector<OutputShape> outputs;
  for (size_t i = 0; i < arguments.size(); ++i) {
    const Argument &a = arguments[i];
    if (a.kind != ArgKind::Tensor || a.role != ArgRole::Output)
      continue;
    OutputShape out;
    out.argument = static_cast<int64_t>(i);
    out.name = a.name;
    out.dtype = a.dtype;
    for (size_t d = 0; d < a.shape.size(); ++d) {
      if (!a.shape[d]) {
        error = concat("the shape of output ", a.name, " ", describeShape(a),
                       " leaves dim ", d, " free; pass ", a.name,
                       " explicitly");
        return std::nullopt;
      }
      std::optional<int64_t> v = plan::evaluate(*a.shape[d], sizes, error);
      if (!v) {
        error = concat("the shape of output ", a.name, " in dim ", d, " (",
                       plan::toString(*a.shape[d]), ") cannot be computed: ",
                       error);
        return std::nullopt;
      }
      if (*v < 0) {
        error = concat("the shape of output ", a.name, " in dim ", d, " is ",
                       describeExprValue(*a.shape[d], *v, sizes),
                       ", which is negative");
        return std::nullopt;
      }
      out.sizes.push_back(*v);
    }
    outputs.push_back(std::move(out));
  }
  return outputs;
}

bool KernelFamily::packParams(size_t kernelIndex,
                              const std::vector<ArgValue> &args,
                              const CheckedLaunch &checked,
                              const std::vector<void *> &workspaces,
                              PackedParams &packed, std::string &error) const {
  if (kernelIndex >= plan.kernels.size()) {
    error = concat("kernel index ", kernelIndex, " is out of range (",
                   plan.kernels.size(), " kernels)");
    return false;
  }
  const plan::Kernel &kernel = plan.kernels[kernelIndex];
  size_t n = kernel.params.size();
  packed.slots.assign(n, 0);
  packed.pointers.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const plan::Param &param = kernel.params[i];
    uint64_t &slot = packed.slots[i];
    packed.pointers[i] = &slot;
    const ParamSource &src = param.source;
    switch (param.type) {
    case ParamType::Ptr: {
      void *ptr = nullptr;
      if (src.kind == ParamSource::Kind::Data) {
        ptr = args[plan.indexOfArgument(src.arg)].tensor.data;
      } else {
        size_t w = 0;
        while (w < plan.workspaces.size() && plan.workspaces[w].name != src.arg)
          ++w;
        if (w >= workspaces.size()) {
          error = concat("no device pointer for workspace ", src.arg);
          return false;
        }
        ptr = workspaces[w];
      }
      std::memcpy(&slot, &ptr, sizeof(ptr));
      break;
    }
    case ParamType::F32: {
      float f = static_cast<float>(
          checked.scalarValues[plan.indexOfArgument(src.arg)]);
      std::memcpy(&slot, &f, sizeof(f));
      break;
    }
    case ParamType::I32:
    case ParamType::I64: {
      int64_t value = 0;
      if (!getIntParamValue(plan, param, args, checked, value, error))
        return false;
      if (param.type == ParamType::I32) {
        if (value < kI32Min || value > kI32Max) {
          error = concat("kernel parameter ", param.name, " = ", value,
                         " of ", kernel.symbol, " does not fit i32");
          return false;
        }
        int32_t v32 = static_cast<int32_t>(value);
        std::memcpy(&slot, &v32, sizeof(v32));
      } else {
        std::memcpy(&slot, &value, sizeof(value));
      }
      break;
    }
    }
  }
  return true;
}

//===----------------------------------------------------------------------===//
// KernelFamily: launching
//===----------------------------------------------------------------------===//

const std::vector<void *> *
KernelFamily::getFunctions(void *context, bool isPrimary, int device,
                           const std::vector<int64_t> &kernels,
                           std::string &error) {
  // Called with `mutex` held.
  LoadedContext *loaded = nullptr;
  for (const std::unique_ptr<LoadedContext> &entry : contexts)
    if (entry->context == context)
      loaded = entry.get();
  if (!loaded) {
    contexts.push_back(std::make_unique<LoadedContext>());
    loaded = contexts.back().get();
    loaded->context = context;
    loaded->isPrimary = isPrimary;
    loaded->modules.assign(images.size(), nullptr);
    loaded->functions.assign(plan.kernels.size(), nullptr);
  }
  std::string ignored;
  const Driver *drv = getDriver(ignored);
  for (int64_t k : kernels) {
    if (loaded->functions[k])
      continue;
    const plan::Kernel &kernel = plan.kernels[k];
    size_t imageIndex = kernelImage[k];
    void *&module = loaded->modules[imageIndex];
    if (!module) {
      // A PTX image must be NUL-terminated; a cubin (ELF) is used as is.
      const std::vector<char> &image = images[imageIndex];
      std::vector<char> terminated;
      const void *data = image.data();
      bool isElf = image.size() >= 4 &&
                   std::memcmp(image.data(), "\x7f" "ELF", 4) == 0;
      if (!isElf) {
        terminated = image;
        terminated.push_back('\0');
        data = terminated.data();
      }
      CUresult code = drv->cuModuleLoadData(&module, data);
      if (code == kCudaErrorNoBinaryForGpu) {
        std::string ignoredError;
        std::optional<int> major = getDeviceAttribute(
            *drv, device, kDeviceAttributeComputeCapabilityMajor,
            ignoredError);
        std::optional<int> minor = getDeviceAttribute(
            *drv, device, kDeviceAttributeComputeCapabilityMinor,
            ignoredError);
        std::string capability =
            major && minor ? concat(*major, ".", *minor, " (sm_", *major,
                                    *minor, ")")
                           : std::string("unknown");
        error = concat("cuModuleLoadData(", kernel.cubin,
                       ") failed: ", drv->errorText(code), "; the cubin is ",
                       "for ", plan.isa, " but device ", device,
                       " has compute capability ", capability);
        module = nullptr;
        return nullptr;
      }
      if (!drv->check(code, concat("cuModuleLoadData(", kernel.cubin, ")"),
                      error)) {
        module = nullptr;
        return nullptr;
      }
    }
    CUhandle function = nullptr;
    if (!drv->check(
            drv->cuModuleGetFunction(&function, module, kernel.symbol.c_str()),
            concat("cuModuleGetFunction(\"", kernel.symbol, "\") in ",
                   kernel.cubin),
            error))
      return nullptr;
    // The device's opt-in limit is the most a block may ask for; a plan
    // over it (a configuration for a larger chip) is refused by name.
    if (kernel.dynamicSmemBytes > kStaticSmemLimitBytes) {
      std::optional<int> optin = getDeviceAttribute(
          *drv, device, kDeviceAttributeMaxSharedMemoryPerBlockOptin, error);
      if (!optin)
        return nullptr;
      if (kernel.dynamicSmemBytes > *optin) {
        error = concat(kernel.symbol, " needs ", kernel.dynamicSmemBytes,
                       " bytes of dynamic shared memory per block, but device ",
                       device, " allows at most ", *optin, " (its opt-in limit)");
        return nullptr;
      }
    }
    if (kernel.dynamicSmemBytes > kStaticSmemLimitBytes &&
        !drv->check(drv->cuFuncSetAttribute(
                        function, kFuncAttributeMaxDynamicSharedSizeBytes,
                        static_cast<int>(kernel.dynamicSmemBytes)),
                    concat("cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES"
                           " = ",
                           kernel.dynamicSmemBytes, ") for ", kernel.symbol),
                    error))
      return nullptr;
    loaded->functions[k] = function;
  }
  return &loaded->functions;
}

bool KernelFamily::getNumSms(const std::vector<ArgValue> &args,
                             std::optional<int64_t> &numSms,
                             std::string &error) const {
  numSms.reset();
  // The dispatch rule and derived sizes (kv_splits) need the
  // multiprocessor count of the tensors' device.
  if (plan.dispatch.empty() && plan.derived.empty())
    return true;
  int tensorDevice = -1;
  if (args.size() == plan.arguments.size())
    for (size_t i = 0; i < args.size() && tensorDevice < 0; ++i)
      if (plan.arguments[i].kind == ArgKind::Tensor &&
          args[i].kind == ArgValue::Kind::Tensor)
        tensorDevice = args[i].tensor.device;
  if (tensorDevice < 0)
    return true;
  const Driver *drv = getDriver(error);
  if (!drv)
    return false;
  CUdevice device = -1;
  if (!drv->check(drv->cuDeviceGet(&device, tensorDevice),
                  concat("cuDeviceGet(", tensorDevice, ")"), error))
    return false;
  std::optional<int> count = getDeviceAttribute(
      *drv, device, kDeviceAttributeMultiprocessorCount, error);
  if (!count)
    return false;
  numSms = *count;
  return true;
}

bool KernelFamily::launch(const std::vector<ArgValue> &args, void *stream,
                          std::string &error, const LaunchOptions &options) {
  CheckedLaunch checked;
  std::optional<int64_t> numSms;
  if (!getNumSms(args, numSms, error) ||
      !check(args, error, &checked, numSms, &options))
    return false;
  const Driver *drv = nullptr;
  for (size_t w = 0; w < options.workspaces.size() && w < plan.workspaces.size();
       ++w)
    if (reinterpret_cast<uintptr_t>(options.workspaces[w]) %
            kWorkspaceAlignBytes !=
        0) {
      error = concat("workspace ", plan.workspaces[w].name, " must start ",
                     kWorkspaceAlignBytes, "-byte aligned");
      return false;
    }
  auto given = [&](const std::string &name) {
    int64_t w = plan.findWorkspace(name);
    return w >= 0 && static_cast<size_t>(w) < options.workspaces.size() &&
           options.workspaces[w] != nullptr;
  };
  auto isFilled = [&](const std::string &name) {
    return std::find(options.filledWorkspaces.begin(),
                     options.filledWorkspaces.end(),
                     name) != options.filledWorkspaces.end();
  };
  for (const std::string &name : options.filledWorkspaces) {
    if (plan.findWorkspace(name) < 0) {
      error = concat(plan.name, " has no workspace '", name, "'");
      return false;
    }
    if (!given(name)) {
      error = concat("workspace ", name,
                     " is declared filled but no buffer is given for it");
      return false;
    }
  }
  std::vector<int64_t> toLaunch;
  for (int64_t k : checked.kernels) {
    const std::array<int64_t, 3> &g = checked.grids[k];
    const plan::Kernel &kernel = plan.kernels[k];
    bool writer = !kernel.writes.empty();
    if (options.writersOnly) {
      if (!writer)
        continue;
      for (const std::string &name : kernel.writes)
        if (!given(name)) {
          error = concat("writers_only needs a buffer for workspace ", name,
                         " (", kernel.symbol, " writes it)");
          return false;
        }
    }
    if (writer && std::all_of(kernel.writes.begin(), kernel.writes.end(),
                              isFilled))
      continue;
    if (g[0] > 0 && g[1] > 0 && g[2] > 0)
      toLaunch.push_back(k);
  }
  if (toLaunch.empty())
    return true; // empty problem: nothing to do, no GPU needed
  if (!drv && !(drv = getDriver(error)))
    return false;
  int device = checked.device;
  if (device < 0) {
    // No tensor argument: the current context's device, else device 0.
    CUdevice current = 0;
    CUhandle ctx = nullptr;
    if (drv->cuCtxGetCurrent(&ctx) == kCudaSuccess && ctx &&
        drv->cuCtxGetDevice(&current) == kCudaSuccess)
      device = current;
    else
      device = 0;
  }
  ScopedDeviceContext context(*drv, device, error);
  if (!context.get())
    return false;

  std::vector<void *> functions;
  {
    std::lock_guard<std::mutex> lock(mutex);
    const std::vector<void *> *loaded = getFunctions(
        context.get(), context.isPrimary(), device, toLaunch, error);
    if (!loaded)
      return false;
    functions = *loaded;
  }

  // Workspaces: the caller's, or stream-ordered allocations freed after the
  // kernels.
  std::vector<void *> workspaces(plan.workspaces.size(), nullptr);
  std::vector<CUdeviceptr> allocated;
  auto freeAllocated = [&] {
    for (CUdeviceptr ptr : allocated)
      drv->cuMemFreeAsync(ptr, stream);
  };
  for (size_t w = 0; w < plan.workspaces.size(); ++w) {
    if (w < options.workspaces.size() && options.workspaces[w]) {
      workspaces[w] = options.workspaces[w];
      continue;
    }
    if (checked.workspaceBytes[w] == 0)
      continue;
    CUdeviceptr ptr = 0;
    if (!drv->check(drv->cuMemAllocAsync(
                        &ptr, static_cast<size_t>(checked.workspaceBytes[w]),
                        stream),
                    concat("cuMemAllocAsync(", checked.workspaceBytes[w],
                           " bytes for workspace ", plan.workspaces[w].name,
                           ")"),
                    error)) {
      freeAllocated();
      return false;
    }
    allocated.push_back(ptr);
    workspaces[w] = reinterpret_cast<void *>(static_cast<uintptr_t>(ptr));
  }
  // Zero-filled workspaces (a declared workspace tensor the kernels add
  // into), in stream order before the first kernel; a caller's buffer
  // declared filled keeps its contents.
  for (size_t w = 0; w < plan.workspaces.size(); ++w) {
    const plan::Workspace &ws = plan.workspaces[w];
    if (!ws.zeroed || !workspaces[w] || checked.workspaceBytes[w] == 0 ||
        isFilled(ws.name))
      continue;
    if (!drv->check(drv->cuMemsetD8Async(
                        static_cast<CUdeviceptr>(
                            reinterpret_cast<uintptr_t>(workspaces[w])),
                        0, static_cast<size_t>(checked.workspaceBytes[w]),
                        stream),
                    concat("cuMemsetD8Async(workspace ", ws.name, ")"),
                    error)) {
      freeAllocated();
      return false;
    }
  }

  PackedParams packed;
  for (int64_t k : toLaunch) {
    const plan::Kernel &kernel = plan.kernels[k];
    if (!packParams(static_cast<size_t>(k), args, checked, workspaces, packed,
                    error)) {
      freeAllocated();
      return false;
    }
    const std::array<int64_t, 3> &g = checked.grids[k];
    const int64_t *b = kernel.block;
    CUresult code = drv->cuLaunchKernel(
        functions[k], static_cast<unsigned>(g[0]), static_cast<unsigned>(g[1]),
        static_cast<unsigned>(g[2]), static_cast<unsigned>(b[0]),
        static_cast<unsigned>(b[1]), static_cast<unsigned>(b[2]),
        static_cast<unsigned>(kernel.dynamicSmemBytes), stream,
        packed.pointers.empty() ? nullptr : packed.pointers.data(), nullptr);
    if (!drv->check(code,
                    concat("cuLaunchKernel(", kernel.symbol, ", grid [", g[0],
                           ", ", g[1], ", ", g[2], "], block [", b[0], ", ",
                           b[1], ", ", b[2], "], ", kernel.dynamicSmemBytes,
                           " B dynamic smem)"),
                    error)) {
      freeAllocated();
      return false;
    }
  }
  freeAllocated();
  return true;
}

//===----------------------------------------------------------------------===//
// Driver utilities
//===----------------------------------------------------------------------===//

bool flashtile::runtime::isDriverAvailable(std::string &error) {
  return getDriver(error) != nullptr;
}

std::optional<int> flashtile::runtime::getDeviceCount(std::string &error) {
  const Driver *drv = getDriver(error);
  if (!drv)
    return std::nullopt;
  int count = 0;
  if (!drv->check(drv->cuDeviceGetCount(&count), "cuDeviceGetCount", error))
    return std::nullopt;
  return count;
}

namespace {

/// Runs `fn(driver)` with a context of `device` current.
template <typename Fn>
bool withDevice(int device, std::string &error, Fn fn) {
  const Driver *drv = getDriver(error);
  if (!drv)
    return false;
  ScopedDeviceContext context(*drv, device, error);
  if (!context.get())
    return false;
  return fn(*drv);
}

CUdeviceptr toDevicePtr(const void *p) {
  return static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(p));
}

} // namespace

void *flashtile::runtime::allocateDeviceMemory(int device, size_t bytes,
                                               std::string &error) {
  if (bytes == 0)
    return nullptr;
  CUdeviceptr ptr = 0;
  bool ok = withDevice(device, error, [&](const Driver &drv) {
    return drv.check(drv.cuMemAlloc(&ptr, bytes),
                     concat("cuMemAlloc(", bytes, " bytes)"), error);
  });
  return ok ? reinterpret_cast<void *>(static_cast<uintptr_t>(ptr)) : nullptr;
}

bool flashtile::runtime::freeDeviceMemory(int device, void *ptr,
                                          std::string &error) {
  if (!ptr)
    return true;
  return withDevice(device, error, [&](const Driver &drv) {
    return drv.check(drv.cuMemFree(toDevicePtr(ptr)), "cuMemFree", error);
  });
}

bool flashtile::runtime::copyToDevice(int device, void *dst, const void *src,
                                      size_t bytes, std::string &error) {
  if (bytes == 0)
    return true;
  return withDevice(device, error, [&](const Driver &drv) {
    return drv.check(drv.cuMemcpyHtoD(toDevicePtr(dst), src, bytes),
                     "cuMemcpyHtoD", error);
  });
}

bool flashtile::runtime::copyToHost(int device, void *dst, const void *src,
                                    size_t bytes, std::string &error) {
  if (bytes == 0)
    return true;
  return withDevice(device, error, [&](const Driver &drv) {
    return drv.check(drv.cuMemcpyDtoH(dst, toDevicePtr(src), bytes),
                     "cuMemcpyDtoH", error);
  });
}

bool flashtile::runtime::synchronizeDevice(int device, std::string &error) {
  return withDevice(device, error, [&](const Driver &drv) {
    return drv.check(drv.cuCtxSynchronize(), "cuCtxSynchronize", error);
  });
}
