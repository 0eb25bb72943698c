//===- RuntimeTest.cpp - The C++ run side ---------------------------------===//
//
// Metadata parsing, argument checks and the no-driver path of
// FlashTileRuntime. None of it needs a GPU: launches are pointed at a
// driver library that does not exist.
//
//===----------------------------------------------------------------------===//

#include "flashtile/Runtime/Runtime.h"

#include "gtest/gtest.h"

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <unistd.h>

using namespace flashtile::runtime;
namespace fs = std::filesystem;

namespace {

std::string exampleParams() {
  std::string s = R"([{"name": "q", "type": "ptr"}, {"name": "k", "type": "ptr"},
    {"name": "v", "type": "ptr"}, {"name": "o", "type": "ptr"},
    {"name": "lse", "type": "ptr"},
    {"name": "seqlen_q", "type": "i32"}, {"name": "seqlen_k", "type": "i32"},
    {"name": "heads_q", "type": "i32"}, {"name": "heads_kv", "type": "i32"})";
  for (const char *t : {"q", "k", "v", "o"})
    for (const char *d : {"batch", "seq", "head"})
      s += std::string(", {\"name\": \"") + t + "_stride_" + d +
           "\", \"type\": \"i64\"}";
  s += R"(, {"name": "lse_stride_batch", "type": "i64"},
    {"name": "lse_stride_head", "type": "i64"},
    {"name": "softmax_scale", "type": "f32"}])";
  return s;
}

/// The schema's example with `field` replaced by `value` (the raw JSON text
/// of a value; empty removes the field).
std::string exampleJson(const std::string &field = "",
                        const std::string &value = "") {
  std::vector<std::pair<std::string, std::string>> fields = {
      {"format", "\"flashtile-kernel-v1\""},
      {"kernel", "\"flash_fwd_bf16_d128_causal\""},
      {"cubin", "\"flash_fwd_bf16_d128_causal.cubin\""},
      {"arch", "\"sm_120\""},
      {"isa", "\"sm_90\""},
      {"code_path", "\"sm80\""},
      {"dtype", "\"bf16\""},
      {"head_dim", "128"},
      {"head_dim_v", "128"},
      {"causal", "true"},
      {"window", "[-1, 0]"},
      {"softmax_scale", "0.08838834764831845"},
      {"config", R"({"tile_m": 128, "tile_n": 128, "stages": 1, "warps": 8,
                     "q_in_regs": true})"},
      {"block", "[256, 1, 1]"},
      {"grid", R"J(["ceil_div(seqlen_q, 128)", "heads_q", "batch"])J"},
      {"dynamic_smem_bytes", "65536"},
      {"params", exampleParams()},
      {"registers", "128"},
      {"spill_stores", "0"},
      {"spill_loads", "0"},
  };
  std::string json = "{\n";
  bool first = true;
  for (auto &[key, text] : fields) {
    if (key == field) {
      if (value.empty())
        continue;
      text = value;
    }
    json += (first ? "  \"" : ",\n  \"") + key + "\": " + text;
    first = false;
  }
  return json + "\n}\n";
}

/// A fresh folder under the system temp dir, removed on destruction.
class TempDir {
public:
  TempDir() {
    static std::atomic<int> counter{0};
    path = fs::temp_directory_path() /
           ("flashtile-runtime-test-" + std::to_string(::getpid()) + "-" +
            std::to_string(counter++));
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string write(const std::string &name, const std::string &content) {
    fs::path p = path / name;
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << content;
    return p.string();
  }
  fs::path path;
};

std::optional<KernelMetadata> parse(const std::string &json,
                                    std::string &error) {
  return KernelMetadata::parse(json, "/kernels/k.json", error);
}

/// Parses `json`, expects failure, and returns the message.
std::string parseError(const std::string &json) {
  std::string error;
  EXPECT_FALSE(parse(json, error).has_value()) << json;
  EXPECT_NE(error.find("/kernels/k.json"), std::string::npos) << error;
  return error;
}

#define EXPECT_CONTAINS(haystack, needle)                                      \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos)             \
      << "'" << (haystack) << "' does not contain '" << (needle) << "'"

TEST(RuntimeMetadataTest, ParsesTheSchemaExample) {
  std::string error;
  std::optional<KernelMetadata> m = parse(exampleJson(), error);
  ASSERT_TRUE(m.has_value()) << error;
  EXPECT_EQ(m->kernelName, "flash_fwd_bf16_d128_causal");
  EXPECT_EQ(m->cubinPath, "/kernels/flash_fwd_bf16_d128_causal.cubin");
  EXPECT_EQ(m->arch, "sm_120");
  EXPECT_EQ(m->isa, "sm_90");
  EXPECT_EQ(m->dtype, DType::BF16);
  EXPECT_EQ(m->headDim, 128);
  EXPECT_EQ(m->headDimV, 128);
  EXPECT_TRUE(m->causal);
  EXPECT_EQ(m->windowLeft, -1);
  EXPECT_EQ(m->windowRight, 0);
  EXPECT_DOUBLE_EQ(m->softmaxScale, 0.08838834764831845);
  EXPECT_EQ(m->config.tileM, 128);
  EXPECT_EQ(m->config.tileN, 128);
  EXPECT_EQ(m->config.warps, 8);
  EXPECT_EQ(m->config.qInRegs, true);
  EXPECT_EQ(m->block[0], 256);
  EXPECT_EQ(m->dynamicSmemBytes, 65536);
  ASSERT_EQ(m->params.size(), 24u);
  EXPECT_EQ(m->params[0].name, "q");
  EXPECT_EQ(m->params[0].type, ParamType::Ptr);
  EXPECT_EQ(m->params[5].type, ParamType::I32);
  EXPECT_EQ(m->params[9].name, "q_stride_batch");
  EXPECT_EQ(m->params[9].type, ParamType::I64);
  EXPECT_EQ(m->params[23].type, ParamType::F32);
  EXPECT_EQ(m->registers, 128);
}

TEST(RuntimeMetadataTest, NullRegisterCountsAndEscapes) {
  std::string error;
  std::string json = exampleJson("registers", "null");
  std::optional<KernelMetadata> m = parse(json, error);
  ASSERT_TRUE(m.has_value()) << error;
  EXPECT_FALSE(m->registers.has_value());

  m = parse(exampleJson("kernel", R"("a\u00e9\ud83d\ude00\n\/")"), error);
  ASSERT_TRUE(m.has_value()) << error;
  EXPECT_EQ(m->kernelName, "a\xc3\xa9\xf0\x9f\x98\x80\n/");

  m = parse(exampleJson("cubin", "\"/abs/k.cubin\""), error);
  ASSERT_TRUE(m.has_value()) << error;
  EXPECT_EQ(m->cubinPath, "/abs/k.cubin");
}

TEST(RuntimeMetadataTest, SyntaxErrorsHaveLineAndColumn) {
  EXPECT_CONTAINS(parseError("{\"format\": \"flashtile-kernel-v1\",\n  \"kernel\": }"),
                  "invalid JSON at line 2, column 13");
  EXPECT_CONTAINS(parseError("{\"a\": 1,}"), "expected a string key");
  EXPECT_CONTAINS(parseError("{\"a\": 1, \"a\": 2}"), "duplicate key \"a\"");
  EXPECT_CONTAINS(parseError("{\"a\": 01}"), "leading zero");
  EXPECT_CONTAINS(parseError("{\"a\": \"\\x\"}"), "bad escape");
  EXPECT_CONTAINS(parseError("{\"a\": \"\\ud800\"}"), "unpaired surrogate");
  EXPECT_CONTAINS(parseError("{} x"), "unexpected text after");
  EXPECT_CONTAINS(parseError(""), "unexpected end of input");
  EXPECT_CONTAINS(parseError("[1, 2]"), "JSON object at the top level");
}

TEST(RuntimeMetadataTest, UnknownFormat) {
  EXPECT_CONTAINS(parseError(exampleJson("format", "\"flashtile-kernel-v9\"")),
                  "unknown format \"flashtile-kernel-v9\"");
  EXPECT_CONTAINS(parseError(exampleJson("format", "")),
                  "unknown format (missing)");
}

TEST(RuntimeMetadataTest, FieldErrorsNameTheField) {
  struct Case {
    const char *field, *value, *expected;
  };
  const Case cases[] = {
      {"kernel", "", "field 'kernel': missing"},
      {"cubin", "3", "field 'cubin': expected a non-empty string, got 3"},
      {"dtype", "\"f32\"", "field 'dtype'"},
      {"head_dim", "0", "field 'head_dim': expected a positive integer, got 0"},
      {"head_dim", "true", "field 'head_dim': expected a positive integer, got true"},
      {"head_dim_v", "64.0", "field 'head_dim_v': expected a positive integer, got 64.0"},
      {"causal", "\"yes\"", "field 'causal': expected true or false"},
      {"window", "[-1]", "field 'window'"},
      {"window", "[-2, 0]", "field 'window'"},
      {"softmax_scale", "-1.0", "field 'softmax_scale': expected a positive"},
      {"config", "{\"tile_n\": 64}", "field 'config.tile_m': missing"},
      {"config", "{\"tile_m\": 128, \"warps\": \"8\"}",
       "field 'config.warps': expected a positive integer, got \"8\""},
      {"block", "[256, 1]", "field 'block'"},
      {"block", "[1024, 2, 1]", "exceeds the CUDA block limits"},
      {"dynamic_smem_bytes", "-1", "field 'dynamic_smem_bytes'"},
      {"params", "[]", "field 'params'"},
      {"params", "[{\"name\": \"output\", \"type\": \"ptr\"}]",
       "field 'params[0].name': \"output\" is not a value"},
      {"params", "[{\"name\": \"seqlen_q\", \"type\": \"u32\"}]",
       "field 'params[0].type'"},
      {"params", "[{\"name\": \"q\", \"type\": \"i64\"}]",
       "\"q\" cannot be passed as \"i64\""},
      {"params",
       "[{\"name\": \"q\", \"type\": \"ptr\"}, {\"name\": \"q\", \"type\": \"ptr\"}]",
       "field 'params[1].name': \"q\" appears twice"},
      {"registers", "\"many\"", "field 'registers'"},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(std::string(c.field) + " = " + c.value);
    EXPECT_CONTAINS(parseError(exampleJson(c.field, c.value)), c.expected);
  }
}

TEST(RuntimeLoadTest, LoadsMetadataAndCubin) {
  TempDir dir;
  std::string path = dir.write("sub/k.json", exampleJson());
  dir.write("sub/flash_fwd_bf16_d128_causal.cubin", "\x7f" "ELF fake");
  std::string error;
  std::unique_ptr<FlashKernel> kernel = FlashKernel::load(path, error);
  ASSERT_TRUE(kernel) << error;
  EXPECT_EQ(kernel->getMetadata().cubinPath,
            (dir.path / "sub" / "flash_fwd_bf16_d128_causal.cubin").string());
  EXPECT_EQ(kernel->getImage().size(), 9u);
}

TEST(RuntimeLoadTest, FileErrors) {
  TempDir dir;
  std::string error;
  EXPECT_FALSE(FlashKernel::load((dir.path / "none.json").string(), error));
  EXPECT_CONTAINS(error, "metadata file not found");

  std::string path = dir.write("k.json", exampleJson());
  EXPECT_FALSE(FlashKernel::load(path, error));
  EXPECT_CONTAINS(error, path);
  EXPECT_CONTAINS(error, "cubin \"flash_fwd_bf16_d128_causal.cubin\" not found");

  dir.write("flash_fwd_bf16_d128_causal.cubin", "");
  EXPECT_FALSE(FlashKernel::load(path, error));
  EXPECT_CONTAINS(error, "is empty");
}

/// A kernel from the schema example and arguments that pass its checks: the
/// (B, S, H, D) views of contiguous (B, H, S, D) buffers at fake, aligned
/// addresses.
class RuntimeCheckTest : public ::testing::Test {
protected:
  void SetUp() override {
    std::string error;
    std::optional<KernelMetadata> m =
        KernelMetadata::parse(exampleJson(), "/kernels/k.json", error);
    ASSERT_TRUE(m.has_value()) << error;
    kernel = std::make_unique<FlashKernel>(*m, std::vector<char>{'x'});
    q = bhsdView(0x100000, 2, 100, 8, 128);
    k = bhsdView(0x200000, 2, 300, 2, 128);
    v = bhsdView(0x300000, 2, 300, 2, 128);
    out = TensorArg::contiguous(reinterpret_cast<void *>(0x400000),
                                {2, 100, 8, 128}, DType::BF16);
    lse = LseArg::contiguous(reinterpret_cast<void *>(0x500000), 2, 8, 100);
  }

  static TensorArg bhsdView(uintptr_t address, int64_t b, int64_t s, int64_t h,
                            int64_t d) {
    TensorArg t;
    t.data = reinterpret_cast<void *>(address);
    t.dtype = DType::BF16;
    const int64_t sizes[4] = {b, s, h, d};
    const int64_t strides[4] = {h * s * d, d, s * d, 1};
    std::copy(sizes, sizes + 4, t.sizes);
    std::copy(strides, strides + 4, t.strides);
    return t;
  }

  /// Runs check() and returns its error ("" when it passed).
  std::string checkError(LaunchDims *dims = nullptr) {
    std::string error;
    bool ok = kernel->check(q, k, v, out, lse, error, dims);
    EXPECT_EQ(ok, error.empty()) << error;
    return ok ? "" : error;
  }

  std::unique_ptr<FlashKernel> kernel;
  TensorArg q, k, v, out;
  LseArg lse;
};

TEST_F(RuntimeCheckTest, TransposedViewsPass) {
  LaunchDims dims;
  EXPECT_EQ(checkError(&dims), "");
  EXPECT_EQ(dims.batch, 2);
  EXPECT_EQ(dims.seqlenQ, 100);
  EXPECT_EQ(dims.seqlenK, 300);
  EXPECT_EQ(dims.headsQ, 8);
  EXPECT_EQ(dims.headsKV, 2);
  EXPECT_EQ(dims.grid[0], 1);
  EXPECT_EQ(dims.grid[1], 8);
  EXPECT_EQ(dims.grid[2], 2);
  EXPECT_FALSE(dims.empty);
}

TEST_F(RuntimeCheckTest, BadDType) {
  q.dtype = DType::F16;
  EXPECT_CONTAINS(checkError(), "q has dtype f16, but kernel "
                                "flash_fwd_bf16_d128_causal takes bf16");
  q.dtype = DType::BF16;
  lse.dtype = DType::BF16;
  EXPECT_CONTAINS(checkError(), "lse has dtype bf16, expected f32");
}

TEST_F(RuntimeCheckTest, NonContiguousLastDim) {
  q.strides[3] = 8;
  q.strides[2] = 1;
  EXPECT_CONTAINS(checkError(), "q must be contiguous in its last dim");
  q.strides[3] = 1;
  q.strides[2] = 100 * 128;
  lse.strides[2] = 2;
  EXPECT_CONTAINS(checkError(), "lse must be contiguous in its last dim");
}

TEST_F(RuntimeCheckTest, MisalignedStrideAndPointer) {
  k.strides[1] = 132;
  EXPECT_CONTAINS(checkError(),
                  "k stride 132 of dim 1 is not a multiple of 8 elements");
  k.strides[1] = 128;
  v.data = reinterpret_cast<void *>(0x300008);
  EXPECT_CONTAINS(checkError(), "v data pointer 0x300008 is not 16-byte aligned");
  v.data = reinterpret_cast<void *>(0x300000);
  // A size-1 dim is never stepped, so its stride may be anything.
  q = bhsdView(0x100000, 1, 100, 8, 128);
  q.strides[0] = 3;
  k = bhsdView(0x200000, 1, 300, 2, 128);
  v = bhsdView(0x300000, 1, 300, 2, 128);
  out = TensorArg::contiguous(out.data, {1, 100, 8, 128}, DType::BF16);
  lse = LseArg::contiguous(lse.data, 1, 8, 100);
  EXPECT_EQ(checkError(), "");
}

TEST_F(RuntimeCheckTest, HeadRatioAndShapes) {
  q = bhsdView(0x100000, 2, 100, 6, 128);
  k = bhsdView(0x200000, 2, 300, 4, 128);
  v = bhsdView(0x300000, 2, 300, 4, 128);
  EXPECT_CONTAINS(checkError(), "q heads (6) must be a multiple of k/v heads (4)");
  SetUp();
  v = bhsdView(0x300000, 2, 299, 2, 128);
  EXPECT_CONTAINS(checkError(), "same seqlen, but k has 300 and v has 299");
  SetUp();
  k = bhsdView(0x200000, 3, 300, 2, 128);
  EXPECT_CONTAINS(checkError(), "batch sizes differ: q has 2, k has 3");
  SetUp();
  q.sizes[3] = 64;
  EXPECT_CONTAINS(checkError(), "q has last dim 64, but kernel "
                                "flash_fwd_bf16_d128_causal has head_dim = 128");
  SetUp();
  out.sizes[1] = 101;
  EXPECT_CONTAINS(checkError(), "out has shape [2, 101, 8, 128], expected "
                                "[2, 100, 8, 128]");
  SetUp();
  lse.sizes[1] = 4;
  EXPECT_CONTAINS(checkError(), "lse has shape [2, 4, 100]");
}

TEST_F(RuntimeCheckTest, DevicesOverlapAndSeqlens) {
  v.device = 1;
  EXPECT_CONTAINS(checkError(), "v is on device 1 but q is on device 0");
  v.device = 0;
  out.strides[0] = 0;
  EXPECT_CONTAINS(checkError(), "out has overlapping elements");
  SetUp();
  q.sizes[1] = 0;
  out.sizes[1] = 0;
  lse.sizes[2] = 0;
  EXPECT_CONTAINS(checkError(), "seqlens must be >= 1, got seqlen_q = 0");
}

TEST_F(RuntimeCheckTest, EmptyBatchLaunchesNothing) {
  q.sizes[0] = k.sizes[0] = v.sizes[0] = out.sizes[0] = lse.sizes[0] = 0;
  q.data = k.data = v.data = out.data = lse.data = nullptr;
  LaunchDims dims;
  EXPECT_EQ(checkError(&dims), "");
  EXPECT_TRUE(dims.empty);
  std::string error;
  EXPECT_TRUE(kernel->launch(q, k, v, out, lse, NAN, nullptr, error)) << error;
}

TEST_F(RuntimeCheckTest, LaunchWithoutADriverFailsCleanly) {
  // Point the runtime at a driver that does not exist (read once, at the
  // first driver use in this process).
  ::setenv("FLASHTILE_CUDA_DRIVER", "/nonexistent/libcuda.so.1", 1);
  std::string error;
  // Bad arguments are reported before the driver is looked for.
  q.dtype = DType::F16;
  EXPECT_FALSE(kernel->launch(q, k, v, out, lse, NAN, nullptr, error));
  EXPECT_CONTAINS(error, "q has dtype f16");
  q.dtype = DType::BF16;

  error.clear();
  EXPECT_FALSE(kernel->launch(q, k, v, out, lse, NAN, nullptr, error));
  EXPECT_CONTAINS(error, "no CUDA driver");
  EXPECT_CONTAINS(error, "/nonexistent/libcuda.so.1");
  std::string again;
  EXPECT_FALSE(isDriverAvailable(again));
  EXPECT_EQ(again, error);
}

} // namespace
