//===- Runtime.h - Loading and launching FlashTile kernels ------*- C++ -*-===//
//
// The run side of FlashTile, for C++ hosts. `flashtile-compile` writes a
// launch plan (NAME.plan.json, see LaunchPlan.h) and the cubins it names;
// this library reads them and launches the kernels through the CUDA driver
// API. Everything it knows about a kernel's interface comes from the plan:
// there is no list of parameter names here.
//
// It depends on neither MLIR/LLVM nor the CUDA headers: the few driver types
// and entry points it uses are declared in Runtime.cpp, and the driver
// library (libcuda.so.1, or the one FLASHTILE_CUDA_DRIVER names) is opened
// with dlopen at the first use of a GPU. Loading a plan therefore works on
// machines without a GPU; launching there fails with a clear message.
//
// Arguments are checked without reading device memory, so a launch can be
// captured in a CUDA graph. No function of this header throws: failures are
// a false / empty result and an error sentence.
//
// Modules: a kernel's cubin is loaded once per CUDA context, on its first
// launch there. The destructor unloads the modules it loaded in devices'
// primary contexts (which the runtime retains for the process's lifetime, so
// they are alive); modules loaded in other contexts are left to those
// contexts, whose destruction frees them.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHTILE_RUNTIME_RUNTIME_H
#define FLASHTILE_RUNTIME_RUNTIME_H

#include "flashtile/ABI/LaunchPlan.h"
#include "flashtile/ABI/TargetLimits.h"

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace flashtile::runtime {

/// A tensor in device memory. Sizes and strides are in elements, outermost
/// dimension first. Checks never dereference `data`.
struct TensorArg {
  void *data = nullptr;
  plan::DType dtype = plan::DType::F32;
  /// CUDA device ordinal.
  int device = 0;
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;

  /// A densely packed (row-major) tensor of the given sizes.
  static TensorArg contiguous(void *data, std::vector<int64_t> sizes,
                              plan::DType dtype, int device = 0);
};

/// The value of one argument of a launch, given in the plan's argument order.
struct ArgValue {
  enum class Kind {
    /// Not given: allowed for scalars with a default (and, for
    /// getOutputShapes, for outputs).
    Absent,
    Tensor,
    Scalar,
  };
  Kind kind = Kind::Absent;
  TensorArg tensor;
  /// Scalars: whether the value was given as an integer (exact in
  /// `intValue`) or as a floating-point number (in `floatValue`).
  bool isInteger = false;
  int64_t intValue = 0;
  double floatValue = 0.0;

  static ArgValue absent() { return ArgValue(); }
  static ArgValue of(TensorArg tensor);
  static ArgValue scalar(double value);
  static ArgValue integer(int64_t value);
};

/// What a successful check derives from the arguments: everything a launch
/// needs besides the device.
struct CheckedLaunch {
  /// The plan's sizes, bound from the arguments (plus "num_sms" when the
  /// check was given one).
  plan::Env sizes;
  /// Per argument: the scalar's value (defaults filled in), as the double
  /// and, for integer dtypes, the exact integer. Unused for tensors.
  std::vector<double> scalarValues;
  std::vector<int64_t> scalarInts;
  /// The device of the tensors; -1 when there is no tensor.
  int device = -1;
  /// The kernels to run, in order (indices into the plan's kernels): the
  /// dispatch rule's choice when the check had a multiprocessor count (or
  /// the plan has no rule), otherwise every kernel.
  std::vector<int64_t> kernels;
  /// The grid of each kernel of the plan (zeros for kernels not run).
  std::vector<std::array<int64_t, 3>> grids;
  /// The bytes of each workspace of the plan.
  std::vector<int64_t> workspaceBytes;
};

/// The shape and dtype an output must have for given inputs.
struct OutputShape {
  /// Index into the plan's arguments.
  int64_t argument = 0;
  std::string name;
  plan::DType dtype = plan::DType::F32;
  std::vector<int64_t> sizes;
};

/// A kernel's parameters, packed for cuLaunchKernel: one 8-byte slot per
/// parameter holding the value in its type's representation (i32 and f32 in
/// the low 4 bytes, little-endian), and the pointer to each slot.
struct PackedParams {
  std::vector<uint64_t> slots;
  std::vector<void *> pointers;
};

/// Options of one launch.
struct LaunchOptions {
  /// Caller-provided device buffers for the plan's workspaces, in the plan's
  /// order; an absent or null entry is allocated by the launch (stream
  /// ordered, freed after the kernels on the same stream). A given buffer
  /// must hold at least the workspace's bytes and start
  /// kWorkspaceAlignBytes-aligned.
  std::vector<void *> workspaces;
  /// Workspaces, by name, that the caller provides in `workspaces` already
  /// filled by an earlier launch of this family on the same inputs and
  /// sizes (a block mask reused across layers): the kernels that write only
  /// those (plan::Kernel::writes) are skipped.
  std::vector<std::string> filledWorkspaces;
  /// Runs only the kernels that write workspaces, into the caller's buffers
  /// (each must be given): fills them for later launches.
  bool writersOnly = false;
  /// Values for the plan's derived sizes instead of their rules, each a
  /// positive integer. {"kv_splits", S} fixes the split count: the grid and
  /// the workspaces then depend only on the shapes, so that one CUDA-graph
  /// capture serves every length the shapes allow.
  std::map<std::string, int64_t, std::less<>> sizes;
};

/// One compiled kernel family: its plan and cubin images, and the modules
/// they have been loaded as (one per CUDA context, on first launch there).
/// Thread-safe: launches may come from several threads.
class KernelFamily {
public:
  /// Reads the plan at `planPath` and the cubins it names (relative to the
  /// plan's folder). Touches no GPU. On failure returns nullptr and sets
  /// `error` ("<path>: <what>").
  static std::unique_ptr<KernelFamily> load(const std::string &planPath,
                                            std::string &error);

  /// A family from a parsed plan and the images of its cubins, keyed by the
  /// `cubin` field of its kernels. Fails when a kernel's image is missing.
  static std::unique_ptr<KernelFamily>
  create(plan::LaunchPlan plan, std::map<std::string, std::vector<char>> cubins,
         std::string &error, std::string planPath = "");

  ~KernelFamily();
  KernelFamily(const KernelFamily &) = delete;
  KernelFamily &operator=(const KernelFamily &) = delete;

  const plan::LaunchPlan &getPlan() const { return plan; }
  /// The plan file this came from ("" when created in memory).
  const std::string &getPlanPath() const { return planPath; }

  /// Checks `args` (one per plan argument, in order) without reading device
  /// memory: kinds, dtypes, ranks, one device for all tensors, every shape
  /// entry against the sizes, the plan's checks, alignment, contiguous last
  /// dimensions, stride multiples, null pointers of non-empty tensors,
  /// outputs that overlap an input, another output or themselves, scalar
  /// values that do not fit their dtype, parameter values that do not fit
  /// their type, and grids over the CUDA limits. `numSms`, when given,
  /// selects the kernels by the plan's dispatch rule; without it every
  /// kernel is checked. Derived sizes are computed after the plan's checks
  /// (from `options->sizes` where given; a rule that needs `numSms` fails
  /// without it). Returns false and sets `error` (one sentence with
  /// the numbers involved) on the first problem.
  bool check(const std::vector<ArgValue> &args, std::string &error,
             CheckedLaunch *checked = nullptr,
             std::optional<int64_t> numSms = std::nullopt,
             const LaunchOptions *options = nullptr) const;

  /// The multiprocessor count `check` needs for these arguments: that of
  /// the device of their first tensor, when the plan has a dispatch rule or
  /// derived sizes (kv_splits); std::nullopt when it needs none or no
  /// tensor is given. Loads the driver only then; false (and `error`) when
  /// the driver fails.
  bool getNumSms(const std::vector<ArgValue> &args,
                 std::optional<int64_t> &numSms, std::string &error) const;

  /// The shape of every output argument for the given inputs (outputs in
  /// `args` may be absent; they are ignored). Fails when an input is
  /// missing or malformed, or an output's shape has a dimension the plan
  /// leaves free.
  std::optional<std::vector<OutputShape>>
  getOutputShapes(const std::vector<ArgValue> &args, std::string &error) const;

  /// Packs the parameters of kernel `kernelIndex` from checked arguments and
  /// the workspaces' device pointers (in the plan's order). Fails when a
  /// value does not fit its type.
  bool packParams(size_t kernelIndex, const std::vector<ArgValue> &args,
                  const CheckedLaunch &checked,
                  const std::vector<void *> &workspaces, PackedParams &packed,
                  std::string &error) const;

  /// Checks the arguments, then launches the dispatched kernels on `stream`
  /// (a CUstream; nullptr is the legacy default stream) in the tensors'
  /// device: the current context when it belongs to that device, otherwise
  /// the device's primary context, made current for the call. A kernel with
  /// an empty grid is not launched. Returns false and sets `error` on a
  /// failed check or a driver error (with the driver's error name and
  /// text). Launches are asynchronous: faults inside a kernel surface at
  /// the next synchronisation.
  bool launch(const std::vector<ArgValue> &args, void *stream,
              std::string &error, const LaunchOptions &options = {});

private:
  KernelFamily(plan::LaunchPlan plan, std::string planPath,
               std::vector<std::vector<char>> images,
               std::vector<size_t> kernelImage);

  struct LoadedContext {
    void *context = nullptr;
    /// Whether `context` is a primary context the runtime retains.
    bool isPrimary = false;
    /// Per image: the module (null until loaded).
    std::vector<void *> modules;
    /// Per kernel: the function (null until loaded).
    std::vector<void *> functions;
  };

  /// The functions of the kernels in `context` (current on this thread),
  /// loading the modules of `kernels` there on first use.
  const std::vector<void *> *getFunctions(void *context, bool isPrimary,
                                          int device,
                                          const std::vector<int64_t> &kernels,
                                          std::string &error);

  plan::LaunchPlan plan;
  std::string planPath;
  /// The distinct cubin images and, per kernel, the index of its image.
  std::vector<std::vector<char>> images;
  std::vector<size_t> kernelImage;
  std::mutex mutex;
  std::vector<std::unique_ptr<LoadedContext>> contexts;
};

/// Whether the CUDA driver could be opened and initialised (opens it on the
/// first call; sets `error` when not). FLASHTILE_CUDA_DRIVER, when set,
/// names the library to open instead of libcuda.so.1.
bool isDriverAvailable(std::string &error);

/// Number of CUDA devices, or std::nullopt (with `error`) without a driver.
std::optional<int> getDeviceCount(std::string &error);

//===----------------------------------------------------------------------===//
// Device memory, for tests and tools (a launch needs none of it)
//===----------------------------------------------------------------------===//

/// cuMemAlloc in `device`'s context; `bytes` == 0 gives nullptr.
void *allocateDeviceMemory(int device, size_t bytes, std::string &error);
/// cuMemFree; nullptr is a no-op.
bool freeDeviceMemory(int device, void *ptr, std::string &error);
/// Synchronous copies between host and device memory.
bool copyToDevice(int device, void *dst, const void *src, size_t bytes,
                  std::string &error);
bool copyToHost(int device, void *dst, const void *src, size_t bytes,
                std::string &error);
/// Waits for all work in `device`'s context; reports asynchronous faults.
bool synchronizeDevice(int device, std::string &error);

} // namespace flashtile::runtime

#endif // FLASHTILE_RUNTIME_RUNTIME_H
