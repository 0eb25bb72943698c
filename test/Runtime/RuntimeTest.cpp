//===- RuntimeTest.cpp - The C++ run side ---------------------------------===//
//
// Loading plans, argument checks (with their exact messages), output shapes,
// parameter packing and the no-driver path of FlashTileRuntime. None of it
// needs a GPU: tensors are fake device addresses (checks never dereference
// them) and the driver is pointed at a library that does not exist.
//
//===----------------------------------------------------------------------===//

#include "flashtile/Runtime/Runtime.h"

#include "ExamplePlan.h"

#include "gtest/gtest.h"

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <unistd.h>

using namespace flashtile;
using namespace flashtile::runtime;
using plan::DType;
namespace fs = std::filesystem;

namespace {

/// Every launch in this process sees no driver (set before the first use).
const bool kNoDriver =
    setenv("FLASHTILE_CUDA_DRIVER", "/nonexistent/libcuda.so", 1) == 0;

#define EXPECT_CONTAINS(haystack, needle)                                      \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos)             \
      << "'" << (haystack) << "' does not contain '" << (needle) << "'"

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
    std::ofstream(p, std::ios::binary) << content;
    return p.string();
  }
  fs::path path;
};

std::unique_ptr<KernelFamily> makeFamily(const std::string &json) {
  std::string error;
  std::optional<plan::LaunchPlan> parsed = plan::parseJson(json, error);
  EXPECT_TRUE(parsed.has_value()) << error;
  if (!parsed)
    return nullptr;
  std::unique_ptr<KernelFamily> family = KernelFamily::create(
      std::move(*parsed), {{"flash_fwd.cubin", {'n', 'o', 't'}}}, error);
  EXPECT_TRUE(family) << error;
  return family;
}

void *addr(uintptr_t a) { return reinterpret_cast<void *>(a); }

/// Valid arguments of the example plan: B = 1, Sq = 5, Hq = 2, Sk = 7,
/// Hkv = 1; q, k, v, o in (B, S, H, D) layout, lse (B, H, S), two slopes,
/// prefix_len = 3, softmax_scale left to its default.
struct Args {
  int64_t b = 1, sq = 5, hq = 2, sk = 7, hkv = 1;
  std::vector<ArgValue> values;

  Args() { build(); }
  void build() {
    values.clear();
    values.push_back(ArgValue::of(
        TensorArg::contiguous(addr(0x1000000), {b, sq, hq, 128}, DType::BF16)));
    values.push_back(ArgValue::of(
        TensorArg::contiguous(addr(0x2000000), {b, sk, hkv, 128}, DType::BF16)));
    values.push_back(ArgValue::of(
        TensorArg::contiguous(addr(0x3000000), {b, sk, hkv, 128}, DType::BF16)));
    values.push_back(ArgValue::of(
        TensorArg::contiguous(addr(0x4000000), {b, sq, hq, 128}, DType::BF16)));
    values.push_back(ArgValue::of(
        TensorArg::contiguous(addr(0x5000000), {b, hq, sq}, DType::F32)));
    values.push_back(ArgValue::of(
        TensorArg::contiguous(addr(0x6000000), {2}, DType::F32)));
    values.push_back(ArgValue::integer(3));
    values.push_back(ArgValue::absent());
  }
  TensorArg &t(size_t i) { return values[i].tensor; }
};

class RuntimeTest : public ::testing::Test {
protected:
  void SetUp() override {
    family = makeFamily(test::getExamplePlanJson());
    ASSERT_TRUE(family);
  }
  /// The check's message for `args` (empty when it passes).
  std::string checkError(const Args &args,
                         std::optional<int64_t> numSms = std::nullopt) {
    std::string error;
    bool ok = family->check(args.values, error, nullptr, numSms);
    EXPECT_EQ(ok, error.empty()) << error;
    return ok ? std::string() : error;
  }
  std::unique_ptr<KernelFamily> family;
};

TEST_F(RuntimeTest, ValidArgumentsPass) {
  Args args;
  std::string error;
  CheckedLaunch checked;
  ASSERT_TRUE(family->check(args.values, error, &checked)) << error;
  EXPECT_EQ(checked.sizes.at("batch"), 1);
  EXPECT_EQ(checked.sizes.at("seqlen_q"), 5);
  EXPECT_EQ(checked.sizes.at("heads_q"), 2);
  EXPECT_EQ(checked.sizes.at("seqlen_k"), 7);
  EXPECT_EQ(checked.sizes.at("heads_kv"), 1);
  EXPECT_EQ(checked.sizes.count("num_sms"), 0u);
  EXPECT_EQ(checked.device, 0);
  EXPECT_EQ(checked.kernels, std::vector<int64_t>{0});
  EXPECT_EQ(checked.grids[0], (std::array<int64_t, 3>{1, 2, 1}));
  EXPECT_EQ(checked.workspaceBytes, std::vector<int64_t>{4});
  EXPECT_DOUBLE_EQ(checked.scalarValues[7], 0.08838834764831845);
  EXPECT_EQ(checked.scalarInts[6], 3);
}

TEST_F(RuntimeTest, Dispatch) {
  Args args;
  std::string error;
  CheckedLaunch checked;
  ASSERT_TRUE(family->check(args.values, error, &checked, 132)) << error;
  EXPECT_EQ(checked.sizes.at("num_sms"), 132);
  EXPECT_EQ(checked.kernels, std::vector<int64_t>{0});
  EXPECT_EQ(checkError(args, 50),
            "no dispatch case of flash_fwd applies (batch = 1, heads_kv = 1, "
            "heads_q = 2, num_sms = 50, seqlen_k = 7, seqlen_q = 5)");
}

TEST_F(RuntimeTest, ArgumentCountKindsAndDtypes) {
  Args args;
  args.values.pop_back();
  EXPECT_EQ(checkError(args),
            "flash_fwd takes 8 arguments (q, k, v, o, lse, slopes, "
            "prefix_len, softmax_scale), got 7");
  args.build();
  args.values[3] = ArgValue::absent();
  EXPECT_EQ(checkError(args), "missing output tensor o");
  args.build();
  args.values[1] = ArgValue::scalar(1.0);
  EXPECT_EQ(checkError(args), "k must be a tensor, got a scalar");
  args.build();
  args.values[6] = ArgValue::absent();
  EXPECT_EQ(checkError(args), "missing scalar prefix_len (i32)");
  args.build();
  args.values[7] = ArgValue::of(args.t(5));
  EXPECT_EQ(checkError(args),
            "softmax_scale must be a scalar (f32), got a tensor");
  args.build();
  args.t(1).dtype = DType::F16;
  EXPECT_EQ(checkError(args), "k has dtype f16, but flash_fwd takes bf16");
  args.build();
  args.t(0).sizes.pop_back();
  args.t(0).strides.pop_back();
  EXPECT_EQ(checkError(args),
            "q has rank 3 (shape [1, 5, 2]), but flash_fwd takes rank 4 "
            "(batch, seqlen_q, heads_q, 128)");
  args.build();
  args.t(0).strides.pop_back();
  EXPECT_EQ(checkError(args), "q has 4 sizes but 3 strides");
  args.build();
  args.t(4).sizes[2] = -1;
  EXPECT_EQ(checkError(args), "lse has a negative size: [1, 2, -1]");
}

TEST_F(RuntimeTest, Devices) {
  Args args;
  args.t(2).device = 1;
  EXPECT_EQ(checkError(args), "v is on device 1 but q is on device 0; all "
                              "tensors must be on one device");
  args.build();
  args.t(0).device = -1;
  EXPECT_EQ(checkError(args), "q is not on a CUDA device (device -1)");
}

TEST_F(RuntimeTest, Scalars) {
  Args args;
  args.values[6] = ArgValue::integer(int64_t(1) << 40);
  EXPECT_EQ(checkError(args), "prefix_len = 1099511627776 does not fit i32");
  args.values[6] = ArgValue::scalar(1.5);
  EXPECT_EQ(checkError(args), "prefix_len = 1.5 is not an integer (i32)");
  args.values[6] = ArgValue::scalar(4.0); // integral: accepted
  EXPECT_EQ(checkError(args), "");
  args.values[7] = ArgValue::scalar(std::nan(""));
  EXPECT_EQ(checkError(args), "softmax_scale = nan is not a finite f32 value");
  args.values[7] = ArgValue::scalar(1e39);
  EXPECT_EQ(checkError(args), "softmax_scale = 1e+39 is not a finite f32 "
                              "value");
  args.values[7] = ArgValue::integer(2); // an integer for a float: accepted
  std::string error;
  CheckedLaunch checked;
  ASSERT_TRUE(family->check(args.values, error, &checked)) << error;
  EXPECT_EQ(checked.scalarValues[7], 2.0);
}

TEST_F(RuntimeTest, Shapes) {
  Args args;
  args.t(0).sizes[3] = 64;
  args.t(0) = TensorArg::contiguous(args.t(0).data, args.t(0).sizes,
                                    DType::BF16);
  EXPECT_EQ(checkError(args), "q has 64 in dim 3 (shape [1, 5, 2, 64]), "
                              "expected 128 (batch, seqlen_q, heads_q, 128)");
  args.build();
  args.t(2).sizes[1] = 6;
  EXPECT_EQ(checkError(args), "v has 6 in dim 1 (shape [1, 6, 1, 128]), but "
                              "k has 7 in dim 1 (shape [1, 7, 1, 128]); both "
                              "are seqlen_k");
  args.build();
  args.t(4).sizes[0] = 2;
  EXPECT_EQ(checkError(args), "lse has 2 in dim 0 (shape [2, 2, 5]), but q "
                              "has 1 in dim 0 (shape [1, 5, 2, 128]); both "
                              "are batch");
}

TEST_F(RuntimeTest, PlanChecksShowTheValues) {
  Args args;
  args.hq = 3;
  args.hkv = 2;
  args.build();
  EXPECT_EQ(checkError(args), "heads_q must be a multiple of heads_kv "
                              "(heads_q = 3, heads_kv = 2)");
  args.hkv = 0;
  args.build();
  EXPECT_EQ(checkError(args), "heads_kv must be at least 1 (heads_kv = 0)");
}

TEST_F(RuntimeTest, Layout) {
  Args args;
  args.t(0).data = addr(0x1000002);
  EXPECT_EQ(checkError(args),
            "q data pointer 0x1000002 is not 16-byte aligned");
  args.build();
  args.t(2).data = nullptr;
  EXPECT_EQ(checkError(args), "v data pointer is null");
  args.build();
  args.t(1).strides = {7 * 128, 128, 128, 2}; // last dim strided
  EXPECT_EQ(checkError(args),
            "k must be contiguous in its last dim (stride 1), but has "
            "strides [896, 128, 128, 2] for shape [1, 7, 1, 128]");
  args.build();
  args.t(0).strides = {5 * 260, 260, 130, 1};
  EXPECT_EQ(checkError(args),
            "q stride 260 of dim 1 is not a multiple of 8 elements (16 "
            "bytes); strides [1300, 260, 130, 1], shape [1, 5, 2, 128]");
  args.build();
  args.t(0).strides = {5 * 256, 256, -128, 1};
  EXPECT_EQ(checkError(args),
            "q has a negative stride -128 in dim 2 (strides [1280, 256, "
            "-128, 1]); strides must be >= 0");
  // Size-1 dims may have any stride; the lse stride multiple is 1.
  args.build();
  args.t(1).strides = {3, 128, 5, 1};
  args.t(4).strides = {11, 7, 1};
  EXPECT_EQ(checkError(args), "");
  // A transposed (B, H, S, D) view is accepted.
  args.build();
  args.t(0).strides = {2 * 5 * 128, 128, 5 * 128, 1};
  EXPECT_EQ(checkError(args), "");
}

TEST_F(RuntimeTest, Overlaps) {
  Args args;
  args.t(3).data = args.t(0).data;
  EXPECT_EQ(checkError(args),
            "o overlaps q: o spans [0x1000000, 0x1000a00) and q spans "
            "[0x1000000, 0x1000a00); an output must not share memory with "
            "another argument");
  args.build();
  args.t(4).data = addr(0x4000000 + 256); // inside o
  EXPECT_CONTAINS(checkError(args), "o overlaps lse");
  args.build();
  args.t(3).strides = {5 * 128, 128, 0, 1}; // both heads at one address
  EXPECT_EQ(checkError(args),
            "o has overlapping elements (strides [640, 128, 0, 1] for shape "
            "[1, 5, 2, 128]); an output needs distinct addresses");
  // Inputs may share memory: q, k and v from one buffer.
  args.hkv = 2;
  args.sk = 5;
  args.build();
  args.t(1).data = args.t(2).data = args.t(0).data;
  EXPECT_EQ(checkError(args), "");
}

TEST_F(RuntimeTest, LimitsOfParamsAndGrid) {
  // Tensors 2^40 bytes apart, so that large shapes do not overlap.
  auto spread = [](Args &args) {
    for (size_t i = 0; i < 6; ++i)
      args.t(i).data = addr(uintptr_t(i + 1) << 40);
  };
  // heads_q = 70000 > the grid y limit.
  Args args;
  args.hq = 70000;
  args.build();
  spread(args);
  EXPECT_EQ(checkError(args), "grid y of flash_fwd is 70000 (heads_q), over "
                              "the CUDA limit 65535");
  // seqlen_q = 2^31 does not fit the i32 parameter.
  args.hq = 1;
  args.sq = int64_t(1) << 31;
  args.build();
  spread(args);
  EXPECT_EQ(checkError(args), "kernel parameter seqlen_q = 2147483648 of "
                              "flash_fwd does not fit i32");
}

TEST_F(RuntimeTest, EmptyProblems) {
  Args args;
  args.b = 0;
  args.build();
  for (size_t i = 0; i < 5; ++i)
    args.t(i).data = nullptr; // allowed: nothing is read or written
  std::string error;
  CheckedLaunch checked;
  ASSERT_TRUE(family->check(args.values, error, &checked)) << error;
  EXPECT_EQ(checked.grids[0], (std::array<int64_t, 3>{1, 2, 0}));
  EXPECT_EQ(checked.workspaceBytes, std::vector<int64_t>{0});
}

TEST_F(RuntimeTest, OutputShapes) {
  Args args;
  args.values[3] = ArgValue::absent();
  args.values[4] = ArgValue::absent();
  std::string error;
  auto shapes = family->getOutputShapes(args.values, error);
  ASSERT_TRUE(shapes.has_value()) << error;
  ASSERT_EQ(shapes->size(), 2u);
  EXPECT_EQ((*shapes)[0].name, "o");
  EXPECT_EQ((*shapes)[0].argument, 3);
  EXPECT_EQ((*shapes)[0].dtype, DType::BF16);
  EXPECT_EQ((*shapes)[0].sizes, (std::vector<int64_t>{1, 5, 2, 128}));
  EXPECT_EQ((*shapes)[1].name, "lse");
  EXPECT_EQ((*shapes)[1].dtype, DType::F32);
  EXPECT_EQ((*shapes)[1].sizes, (std::vector<int64_t>{1, 2, 5}));
  args.values[1] = ArgValue::absent();
  EXPECT_FALSE(family->getOutputShapes(args.values, error));
  EXPECT_EQ(error, "missing input tensor k");
}

uint64_t ptrBits(uintptr_t p) { return p; }
uint64_t i32Bits(int32_t v) {
  uint32_t u;
  std::memcpy(&u, &v, 4);
  return u;
}
uint64_t f32Bits(float v) {
  uint32_t u;
  std::memcpy(&u, &v, 4);
  return u;
}

TEST_F(RuntimeTest, PacksParamsInPlanOrder) {
  Args args;
  args.t(0).strides = {2 * 5 * 128, 128, 5 * 128, 1}; // transposed view
  std::string error;
  CheckedLaunch checked;
  ASSERT_TRUE(family->check(args.values, error, &checked)) << error;
  PackedParams packed;
  ASSERT_TRUE(family->packParams(0, args.values, checked, {addr(0xabc000)},
                                 packed, error))
      << error;
  std::vector<uint64_t> expected = {
      ptrBits(0x1000000), ptrBits(0x2000000), ptrBits(0x3000000),
      ptrBits(0x4000000), ptrBits(0x5000000),
      i32Bits(5), i32Bits(7), i32Bits(2), i32Bits(1), // sizes
      1280, 128, 640,                                 // q strides
      128,                                            // k stride seq
      5,                                              // lse stride head
      ptrBits(0x6000000), 2,                          // slopes, size
      i32Bits(3), f32Bits(0.08838834764831845f),      // scalars
      i32Bits(2),                                     // tiles
      ptrBits(0xabc000)};                             // workspace
  EXPECT_EQ(packed.slots, expected);
  ASSERT_EQ(packed.pointers.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i)
    EXPECT_EQ(packed.pointers[i], &packed.slots[i]);
  EXPECT_FALSE(family->packParams(0, args.values, checked, {}, packed, error));
  EXPECT_EQ(error, "no device pointer for workspace partials");
  EXPECT_FALSE(family->packParams(1, args.values, checked, {}, packed, error));
}

TEST_F(RuntimeTest, LaunchWithoutADriverFailsCleanly) {
  ASSERT_TRUE(kNoDriver);
  std::string error;
  EXPECT_FALSE(isDriverAvailable(error));
  EXPECT_EQ(error.rfind("no CUDA driver: cannot load /nonexistent/libcuda.so",
                        0),
            0u)
      << error;
  Args args;
  error.clear();
  EXPECT_FALSE(family->launch(args.values, nullptr, error));
  EXPECT_EQ(error.rfind("no CUDA driver: cannot load", 0), 0u) << error;
  // With a dispatch rule, the driver is needed first (for num_sms).
  args.t(0).data = nullptr;
  EXPECT_FALSE(family->launch(args.values, nullptr, error));
  EXPECT_EQ(error.rfind("no CUDA driver", 0), 0u) << error;
  error.clear();
  EXPECT_FALSE(allocateDeviceMemory(0, 16, error));
  EXPECT_EQ(error.rfind("no CUDA driver", 0), 0u) << error;
}

TEST(RuntimeDerivedTest, DerivedSizesAndTheirOverrides) {
  // The example with a derived split count (FA2's rule on the SM count)
  // that sizes its workspace, as a split-KV plan has it.
  std::string json = test::getExamplePlanJson();
  std::string from = "\"workspaces\": [{\"name\": \"partials\", \"bytes\": "
                     "{\"mul\": [\"batch\", 4]}}]";
  ASSERT_NE(json.find(from), std::string::npos);
  json.replace(json.find(from), from.size(),
               "\"derived\": [{\"name\": \"kv_splits\", \"value\": "
               "{\"kv_splits\": [\"batch\", {\"ceil_div\": [\"seqlen_k\", "
               "1]}, 1, 128]}}],\n  \"workspaces\": [{\"name\": \"partials\", "
               "\"bytes\": {\"mul\": [\"kv_splits\", 4]}}]");
  std::unique_ptr<KernelFamily> family = makeFamily(json);
  ASSERT_TRUE(family);
  Args args;
  std::string error;
  CheckedLaunch checked;
  // One block over 132 SMs, 7 KV tiles: as many splits as tiles.
  ASSERT_TRUE(family->check(args.values, error, &checked, 132)) << error;
  EXPECT_EQ(checked.sizes.at("kv_splits"), 7);
  EXPECT_EQ(checked.workspaceBytes, std::vector<int64_t>{28});
  // Without the SM count the rule cannot run: an error that says why.
  EXPECT_FALSE(family->check(args.values, error, &checked));
  EXPECT_EQ(error, "the size kv_splits = kv_splits(batch, ceil_div(seqlen_k, "
                   "1), 1, 128) cannot be computed: 'kv_splits' needs the "
                   "device's multiprocessor count");
  // A fixed split count replaces the rule (CUDA graphs), with or without it.
  LaunchOptions fixed;
  fixed.sizes["kv_splits"] = 3;
  ASSERT_TRUE(family->check(args.values, error, &checked, std::nullopt,
                            &fixed))
      << error;
  EXPECT_EQ(checked.sizes.at("kv_splits"), 3);
  EXPECT_EQ(checked.workspaceBytes, std::vector<int64_t>{12});
  // Overrides name derived sizes and are positive.
  LaunchOptions bad;
  bad.sizes["batch"] = 2;
  EXPECT_FALSE(family->check(args.values, error, &checked, 132, &bad));
  EXPECT_EQ(error, "launch option sizes[batch]: flash_fwd has no derived "
                   "size 'batch'");
  bad.sizes = {{"kv_splits", 0}};
  EXPECT_FALSE(family->check(args.values, error, &checked, 132, &bad));
  EXPECT_EQ(error, "launch option sizes[kv_splits] = 0 must be positive");
}

TEST(RuntimeNoDispatchTest, EmptyLaunchNeedsNoDriverAndErrorsComeFirst) {
  // The example without its dispatch rule: launches check before opening
  // the driver, and an empty grid launches nothing.
  std::string json = test::getExamplePlanJson();
  std::string from = "[{\"when\": {\"ge\": [\"num_sms\", 100]}, \"kernels\": "
                     "[0]}]";
  json.replace(json.find(from), from.size(), "[]");
  std::unique_ptr<KernelFamily> family = makeFamily(json);
  ASSERT_TRUE(family);
  Args args;
  args.b = 0;
  args.build();
  std::string error;
  EXPECT_TRUE(family->launch(args.values, nullptr, error)) << error;
  args.b = 1;
  args.build();
  args.t(1).dtype = DType::F16;
  EXPECT_FALSE(family->launch(args.values, nullptr, error));
  EXPECT_EQ(error, "k has dtype f16, but flash_fwd takes bf16");
  args.build();
  EXPECT_FALSE(family->launch(args.values, nullptr, error));
  EXPECT_EQ(error.rfind("no CUDA driver", 0), 0u) << error;
  // A caller's workspace must be aligned: checked before the driver.
  LaunchOptions options;
  options.workspaces = {reinterpret_cast<void *>(uintptr_t(0x1008))};
  EXPECT_FALSE(family->launch(args.values, nullptr, error, options));
  EXPECT_EQ(error, "workspace partials must start 16-byte aligned");
}

TEST(RuntimeNoDispatchTest, ReusedWorkspacesSkipTheirWriters) {
  // The example's one kernel made a writer of `partials` (as a block-mask
  // kernel writes kv_ranges); no dispatch rule, so errors come before the
  // driver, and a launch with nothing left to run needs no driver.
  std::string json = test::getExamplePlanJson();
  std::string from = "[{\"when\": {\"ge\": [\"num_sms\", 100]}, \"kernels\": "
                     "[0]}]";
  json.replace(json.find(from), from.size(), "[]");
  std::string registers = "\"registers\": 255";
  json.replace(json.find(registers), registers.size(),
               "\"writes\": [\"partials\"], " + registers);
  std::unique_ptr<KernelFamily> family = makeFamily(json);
  ASSERT_TRUE(family);
  EXPECT_EQ(family->getPlan().kernels[0].writes,
            std::vector<std::string>{"partials"});
  Args args;
  args.build();
  std::string error;
  void *buffer = reinterpret_cast<void *>(uintptr_t(0x1000));

  LaunchOptions unknown;
  unknown.filledWorkspaces = {"scratch"};
  EXPECT_FALSE(family->launch(args.values, nullptr, error, unknown));
  EXPECT_EQ(error, "flash_fwd has no workspace 'scratch'");

  LaunchOptions notGiven;
  notGiven.filledWorkspaces = {"partials"};
  EXPECT_FALSE(family->launch(args.values, nullptr, error, notGiven));
  EXPECT_EQ(error,
            "workspace partials is declared filled but no buffer is given "
            "for it");

  LaunchOptions writersNoBuffer;
  writersNoBuffer.writersOnly = true;
  EXPECT_FALSE(family->launch(args.values, nullptr, error, writersNoBuffer));
  EXPECT_EQ(error, "writers_only needs a buffer for workspace partials "
                   "(flash_fwd writes it)");

  // Filled: its only writer is skipped, nothing is left to launch.
  LaunchOptions reused;
  reused.workspaces = {buffer};
  reused.filledWorkspaces = {"partials"};
  error.clear();
  EXPECT_TRUE(family->launch(args.values, nullptr, error, reused)) << error;
  // Not filled: the writer runs, which needs the driver here.
  LaunchOptions fill;
  fill.workspaces = {buffer};
  fill.writersOnly = true;
  EXPECT_FALSE(family->launch(args.values, nullptr, error, fill));
  EXPECT_EQ(error.rfind("no CUDA driver", 0), 0u) << error;
}

TEST(RuntimeLoadTest, LoadsPlansAndCubins) {
  TempDir dir;
  std::string path = dir.write("k.plan.json", test::getExamplePlanJson());
  std::string error;
  EXPECT_FALSE(KernelFamily::load(path, error));
  EXPECT_EQ(error, path + ": kernel flash_fwd: " +
                       (dir.path / "flash_fwd.cubin").string() +
                       ": cubin not found");
  dir.write("flash_fwd.cubin", "");
  EXPECT_FALSE(KernelFamily::load(path, error));
  EXPECT_EQ(error, path + ": kernel flash_fwd: cubin " +
                       (dir.path / "flash_fwd.cubin").string() +
                       " is empty");
  dir.write("flash_fwd.cubin", "\x7f" "ELF...");
  std::unique_ptr<KernelFamily> family = KernelFamily::load(path, error);
  ASSERT_TRUE(family) << error;
  EXPECT_EQ(family->getPlanPath(), path);
  EXPECT_EQ(family->getPlan().name, "flash_fwd");

  std::string missing = (dir.path / "none.plan.json").string();
  EXPECT_FALSE(KernelFamily::load(missing, error));
  EXPECT_EQ(error, missing + ": plan not found");
  std::string bad = dir.write("bad.plan.json", "{\"format\": 1}");
  EXPECT_FALSE(KernelFamily::load(bad, error));
  EXPECT_EQ(error, bad + ": format: expected \"flashtile-launch-plan\", got 1");
}

TEST(RuntimeLoadTest, CreateNeedsEveryImage) {
  std::string error;
  std::optional<plan::LaunchPlan> parsed =
      plan::parseJson(test::getExamplePlanJson(), error);
  ASSERT_TRUE(parsed) << error;
  EXPECT_FALSE(KernelFamily::create(*parsed, {}, error));
  EXPECT_EQ(error, "kernels[0].cubin: no image for \"flash_fwd.cubin\"");
}

TEST(RuntimeTensorTest, Contiguous) {
  TensorArg t = TensorArg::contiguous(nullptr, {2, 0, 3}, DType::F16, 1);
  EXPECT_EQ(t.strides, (std::vector<int64_t>{3, 3, 1}));
  EXPECT_EQ(t.device, 1);
}

} // namespace
