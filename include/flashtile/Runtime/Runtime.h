//===- Runtime.h - Loading and launching FlashTile kernels ------*- C++ -*-===//
//
// The run side of FlashTile, for C++ hosts. `flashtile-compile` writes, per
// kernel, a cubin and a metadata JSON file (format "flashtile-kernel-v1");
// this library reads the pair and launches the kernel through the CUDA
// driver API.
//
// It depends on neither MLIR/LLVM nor the CUDA headers: the few driver types
// and entry points it uses are declared in Runtime.cpp, and libcuda.so.1 is
// opened with dlopen at the first launch. Loading a kernel therefore works
// on machines without a GPU; launching there fails with a clear message.
//
// Tensors are described by `TensorArg` (q, k, v, out: batch, seq, heads, dim
// with dim contiguous; strides in elements) and `LseArg` (batch, heads, seq
// with seq contiguous). Every argument is checked before anything is
// launched; a failed check names the argument and the numbers involved.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHTILE_RUNTIME_RUNTIME_H
#define FLASHTILE_RUNTIME_RUNTIME_H

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace flashtile::runtime {

/// The format string this runtime reads.
inline constexpr const char *kMetadataFormat = "flashtile-kernel-v1";

/// Element types of kernel arguments.
enum class DType { F16, BF16, F32 };

/// "f16", "bf16" or "f32".
const char *stringifyDType(DType dtype);
/// Parses "f16" / "bf16" / "f32".
std::optional<DType> parseDType(std::string_view name);
/// Bytes per element.
int64_t getDTypeSize(DType dtype);

/// How one kernel parameter is passed.
enum class ParamType { Ptr, I32, I64, F32 };

/// One entry of the metadata's "params" list, in launch order.
struct KernelParam {
  std::string name;
  ParamType type;
};

/// The metadata's "config" object. Only `tileM` is needed to launch.
struct KernelConfig {
  int64_t tileM = 0;
  std::optional<int64_t> tileN, stages, warps;
  std::optional<bool> qInRegs;
};

/// The parsed and checked contents of a kernel's metadata JSON.
class KernelMetadata {
public:
  /// Parses `json`; `path` names the file in messages and is the folder the
  /// cubin path is relative to. On failure returns std::nullopt and sets
  /// `error` to "<path>: field '<name>': <what is wrong>" (or the JSON
  /// syntax error with its line and column).
  static std::optional<KernelMetadata> parse(std::string_view json,
                                             const std::string &path,
                                             std::string &error);
  /// Reads and parses the file at `path`.
  static std::optional<KernelMetadata> readFile(const std::string &path,
                                                std::string &error);

  /// The metadata file this came from.
  std::string path;
  /// The kernel's symbol in the cubin.
  std::string kernelName;
  /// The cubin's path as written in the metadata, and resolved against the
  /// metadata file's folder.
  std::string cubin, cubinPath;
  std::string arch, isa, codePath;
  DType dtype = DType::BF16;
  int64_t headDim = 0, headDimV = 0;
  bool causal = false;
  /// -1: unbounded on that side.
  int64_t windowLeft = -1, windowRight = -1;
  double softmaxScale = 0.0;
  KernelConfig config;
  int64_t block[3] = {0, 0, 0};
  int64_t dynamicSmemBytes = 0;
  std::vector<KernelParam> params;
  /// Absent (null) when ptxas -v output was not parsed.
  std::optional<int64_t> registers, spillStores, spillLoads;
};

/// A (batch, seq, heads, dim) tensor in device memory; strides in elements.
struct TensorArg {
  void *data = nullptr;
  int64_t sizes[4] = {0, 0, 0, 0};
  int64_t strides[4] = {0, 0, 0, 0};
  DType dtype = DType::BF16;
  /// CUDA device ordinal.
  int device = 0;

  /// A densely packed tensor of the given sizes.
  static TensorArg contiguous(void *data, std::initializer_list<int64_t> sizes,
                              DType dtype, int device = 0);
};

/// The (batch, heads, seq) float32 log-sum-exp output; strides in elements.
struct LseArg {
  void *data = nullptr;
  int64_t sizes[3] = {0, 0, 0};
  int64_t strides[3] = {0, 0, 0};
  /// Must be F32; stated so that a wrong buffer is caught.
  DType dtype = DType::F32;
  int device = 0;

  /// A densely packed (batch, heads, seq) buffer.
  static LseArg contiguous(void *data, int64_t batch, int64_t heads,
                           int64_t seqlen, int device = 0);
};

/// The problem size a checked set of arguments describes.
struct LaunchDims {
  int64_t batch = 0, seqlenQ = 0, seqlenK = 0, headsQ = 0, headsKV = 0;
  /// Grid (ceil(seqlenQ / tile_m), headsQ, batch).
  int64_t grid[3] = {0, 0, 0};
  /// Zero batch or heads: there is nothing to launch.
  bool empty = false;
};

/// One compiled kernel: its metadata and its cubin image, plus the modules it
/// has been loaded as (one per CUDA context, on first launch there).
class FlashKernel {
public:
  /// Reads the metadata JSON and the cubin it names. Touches no GPU and
  /// works without a CUDA driver. On failure returns nullptr and sets
  /// `error`.
  static std::unique_ptr<FlashKernel> load(const std::string &metadataPath,
                                           std::string &error);

  /// Builds a kernel from metadata and a cubin image already in memory.
  FlashKernel(KernelMetadata meta, std::vector<char> cubinImage);
  ~FlashKernel();
  FlashKernel(const FlashKernel &) = delete;
  FlashKernel &operator=(const FlashKernel &) = delete;

  const KernelMetadata &getMetadata() const { return metadata; }
  const std::vector<char> &getImage() const { return image; }

  /// Checks the arguments against the kernel without launching: dtypes,
  /// devices, ranks, head dims, matching batch / seqlen / heads, the GQA
  /// head ratio, contiguous last dims, strides that are multiples of 8
  /// elements and 16-byte aligned pointers (cp.async moves 16-byte chunks),
  /// non-overlapping outputs, seqlens >= 1 and sizes that fit the kernel's
  /// parameter types and the grid. Returns false and sets `error` on the
  /// first problem.
  bool check(const TensorArg &q, const TensorArg &k, const TensorArg &v,
             const TensorArg &out, const LseArg &lse, std::string &error,
             LaunchDims *dims = nullptr) const;

  /// Checks the arguments, then launches on `stream` (a CUstream; nullptr is
  /// the legacy default stream) in q's device: the current context when it
  /// belongs to that device, otherwise the device's primary context. A NaN
  /// `softmaxScale` uses the metadata's. Zero batch or heads launches
  /// nothing. Returns false and sets `error` on a failed check or a driver
  /// error (with the driver's error name and text). The launch is
  /// asynchronous: errors inside the kernel surface at the next
  /// synchronisation.
  bool launch(const TensorArg &q, const TensorArg &k, const TensorArg &v,
              const TensorArg &out, const LseArg &lse, float softmaxScale,
              void *stream, std::string &error);

private:
  struct LoadedModule {
    void *context;
    void *module;
    void *function;
  };

  /// The kernel's function in `context` (current on this thread), loading
  /// the module there on first use.
  void *getFunction(void *context, int device, std::string &error);

  KernelMetadata metadata;
  std::vector<char> image;
  std::mutex mutex;
  std::vector<LoadedModule> loaded;
};

/// Whether libcuda could be opened and initialised (opens it on first call;
/// sets `error` when not). FLASHTILE_CUDA_DRIVER, when set, names the
/// library to open instead of libcuda.so.1.
bool isDriverAvailable(std::string &error);

} // namespace flashtile::runtime

#endif // FLASHTILE_RUNTIME_RUNTIME_H
