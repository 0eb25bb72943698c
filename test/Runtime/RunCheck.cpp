//===- RunCheck.cpp - flashtile-run-check: plans against a CPU reference --===//
//
//   flashtile-run-check [--seed N] [--quick] PLAN.json...
//
// Loads each plan (an attention forward family: arguments q, k, v, o, lse,
// then only scalars with defaults) with FlashTileRuntime, launches it on
// random data for a few small shapes (GQA, Sq != Sk, rows that see no key
// when causal) with k and v passed as transposed views, copies the outputs
// back and compares them against float64 attention computed on the CPU from
// the same rounded inputs. The mask and softmax scale come from the plan's
// info ("causal", "window": [left, right], -1 unbounded; "softmax_scale"),
// bottom-right aligned: query i sees key j iff j >= i + Sk - Sq - left and
// j <= i + Sk - Sq + right (causal: right = 0).
//
// Tolerances: O max|o - ref| / max|ref| below 1e-2 (bf16) or 2e-3 (f16);
// LSE |lse - ref| <= 2e-3 * max(1, |ref|); rows that see no key must give
// O = 0 and LSE = -inf exactly; any NaN fails.
//
// Exit status: 0 when every case passed, 1 when one failed (or a plan could
// not be loaded or launched), 2 on bad usage, 77 ("SKIP: ...") when there is
// no CUDA driver or device, or when no plan had the interface above.
//
//===----------------------------------------------------------------------===//

#include "flashtile/Runtime/Runtime.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <limits>
#include <random>
#include <string>
#include <vector>

using namespace flashtile;
using namespace flashtile::runtime;
using plan::DType;

namespace {

//===----------------------------------------------------------------------===//
// 16-bit floats
//===----------------------------------------------------------------------===//

uint32_t floatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

/// float -> IEEE half, round to nearest even.
uint16_t toHalf(float f) {
  uint32_t x = floatBits(f);
  uint32_t sign = (x >> 16) & 0x8000u;
  if ((x & 0x7fffffffu) > 0x7f800000u)
    return static_cast<uint16_t>(sign | 0x7e00u);
  int32_t exp = static_cast<int32_t>((x >> 23) & 0xffu) - 127 + 15;
  uint32_t mant = x & 0x7fffffu;
  if (exp >= 31)
    return static_cast<uint16_t>(sign | 0x7c00u);
  if (exp <= 0) {
    if (exp < -10)
      return static_cast<uint16_t>(sign);
    mant |= 0x800000u;
    uint32_t shift = static_cast<uint32_t>(14 - exp);
    uint32_t half = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1);
    uint32_t mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1u)))
      ++half;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t half = (static_cast<uint32_t>(exp) << 10) | (mant >> 13);
  uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (half & 1u)))
    ++half; // a carry into the exponent is the correct rounding
  return static_cast<uint16_t>(sign | half);
}

double fromHalf(uint16_t h) {
  double sign = (h & 0x8000u) ? -1.0 : 1.0;
  int exp = (h >> 10) & 0x1f;
  int mant = h & 0x3ff;
  if (exp == 0)
    return sign * std::ldexp(mant, -24);
  if (exp == 31)
    return mant ? std::nan("") : sign * INFINITY;
  return sign * std::ldexp(1024 + mant, exp - 25);
}

/// float -> bfloat16, round to nearest even.
uint16_t toBf16(float f) {
  uint32_t x = floatBits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u)
    return static_cast<uint16_t>((x >> 16) | 0x40u);
  x += 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(x >> 16);
}

double fromBf16(uint16_t b) {
  uint32_t x = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

//===----------------------------------------------------------------------===//
// One plan
//===----------------------------------------------------------------------===//

struct Mask {
  bool causal = false;
  int64_t left = -1, right = -1;
};

struct Shape {
  int64_t b, hq, hkv, sq, sk;
};

const Shape kShapes[] = {
    {1, 1, 1, 1, 1},     {2, 4, 2, 77, 130},   {1, 2, 2, 130, 70},
    {1, 3, 1, 200, 333}, {2, 2, 2, 128, 128},
};
const Shape kQuickShapes[] = {{1, 2, 1, 77, 130}};

/// Device buffers freed at scope exit.
class DeviceBuffers {
public:
  ~DeviceBuffers() {
    std::string ignored;
    for (void *p : buffers)
      freeDeviceMemory(0, p, ignored);
  }
  void *allocate(size_t bytes, std::string &error) {
    void *p = allocateDeviceMemory(0, bytes, error);
    if (p)
      buffers.push_back(p);
    return p;
  }

private:
  std::vector<void *> buffers;
};

struct CaseResult {
  bool ok = false;
  double oErr = NAN, lseErr = NAN;
  std::string problems;
};

/// Runs one shape; returns the comparison.
CaseResult runCase(KernelFamily &family, DType dtype, int64_t d, int64_t dv,
                   const Mask &mask, double scale, const Shape &s,
                   uint64_t seed) {
  CaseResult result;
  std::string error;
  const size_t nq = s.b * s.sq * s.hq * d, nk = s.b * s.hkv * s.sk * d,
               nv = s.b * s.hkv * s.sk * dv, no = s.b * s.sq * s.hq * dv,
               nl = s.b * s.hq * s.sq;
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  bool bf16 = dtype == DType::BF16;
  auto round = [&](float f) { return bf16 ? toBf16(f) : toHalf(f); };
  auto value = [&](uint16_t h) { return bf16 ? fromBf16(h) : fromHalf(h); };
  std::vector<uint16_t> q(nq), k(nk), v(nv);
  for (auto *buf : {&q, &k, &v})
    for (uint16_t &x : *buf)
      x = round(normal(rng));
  std::vector<uint16_t> o(no, bf16 ? 0x7fc0 : 0x7e00); // NaN poison
  std::vector<float> lse(nl, NAN);

  DeviceBuffers buffers;
  void *dq = buffers.allocate(nq * 2, error), *dk = nullptr, *dv_ = nullptr,
       *dout = nullptr, *dlse = nullptr;
  bool ok = dq && (dk = buffers.allocate(nk * 2, error)) &&
            (dv_ = buffers.allocate(nv * 2, error)) &&
            (dout = buffers.allocate(no * 2, error)) &&
            (dlse = buffers.allocate(nl * 4, error)) &&
            copyToDevice(0, dq, q.data(), nq * 2, error) &&
            copyToDevice(0, dk, k.data(), nk * 2, error) &&
            copyToDevice(0, dv_, v.data(), nv * 2, error) &&
            copyToDevice(0, dout, o.data(), no * 2, error) &&
            copyToDevice(0, dlse, lse.data(), nl * 4, error);
  if (!ok) {
    result.problems = error;
    return result;
  }
  // q, o: (B, S, H, D) dense. k, v: (B, H, S, D) in memory, passed as the
  // (B, S, H, D) view. lse: (B, H, S) dense.
  std::vector<ArgValue> args(family.getPlan().arguments.size());
  args[0] = ArgValue::of(
      TensorArg::contiguous(dq, {s.b, s.sq, s.hq, d}, dtype));
  TensorArg kt, vt;
  kt.data = dk;
  vt.data = dv_;
  kt.dtype = vt.dtype = dtype;
  kt.sizes = {s.b, s.sk, s.hkv, d};
  kt.strides = {s.hkv * s.sk * d, d, s.sk * d, 1};
  vt.sizes = {s.b, s.sk, s.hkv, dv};
  vt.strides = {s.hkv * s.sk * dv, dv, s.sk * dv, 1};
  args[1] = ArgValue::of(kt);
  args[2] = ArgValue::of(vt);
  args[3] = ArgValue::of(
      TensorArg::contiguous(dout, {s.b, s.sq, s.hq, dv}, dtype));
  args[4] = ArgValue::of(
      TensorArg::contiguous(dlse, {s.b, s.hq, s.sq}, DType::F32));
  if (!family.launch(args, nullptr, error) || !synchronizeDevice(0, error) ||
      !copyToHost(0, o.data(), dout, no * 2, error) ||
      !copyToHost(0, lse.data(), dlse, nl * 4, error)) {
    result.problems = error;
    return result;
  }

  // float64 reference and comparison.
  int64_t group = s.hq / s.hkv, off = s.sk - s.sq;
  int64_t right = mask.right;
  if (mask.causal)
    right = right < 0 ? 0 : std::min<int64_t>(right, 0);
  double maxRef = 0, maxDiff = 0, lseErr = 0, lseRel = 0;
  int64_t nanO = 0, nanL = 0, infMismatch = 0, nonZeroEmpty = 0;
  std::vector<double> p(s.sk), acc(dv);
  for (int64_t b = 0; b < s.b; ++b) {
    for (int64_t h = 0; h < s.hq; ++h) {
      int64_t hk = h / group;
      for (int64_t i = 0; i < s.sq; ++i) {
        const uint16_t *qr = &q[((b * s.sq + i) * s.hq + h) * d];
        double m = -INFINITY;
        for (int64_t j = 0; j < s.sk; ++j) {
          bool visible = (mask.left < 0 || j >= i + off - mask.left) &&
                         (right < 0 || j <= i + off + right);
          if (!visible) {
            p[j] = -INFINITY;
            continue;
          }
          const uint16_t *kr = &k[((b * s.hkv + hk) * s.sk + j) * d];
          double dot = 0;
          for (int64_t c = 0; c < d; ++c)
            dot += value(qr[c]) * value(kr[c]);
          p[j] = dot * scale;
          m = std::max(m, p[j]);
        }
        double l = 0;
        std::fill(acc.begin(), acc.end(), 0.0);
        if (m > -INFINITY) {
          for (int64_t j = 0; j < s.sk; ++j) {
            if (p[j] == -INFINITY)
              continue;
            double e = std::exp(p[j] - m);
            l += e;
            const uint16_t *vr = &v[((b * s.hkv + hk) * s.sk + j) * dv];
            for (int64_t c = 0; c < dv; ++c)
              acc[c] += e * value(vr[c]);
          }
        }
        double refLse = l > 0 ? m + std::log(l) : -INFINITY;
        double gotLse = lse[(b * s.hq + h) * s.sq + i];
        const uint16_t *orow = &o[((b * s.sq + i) * s.hq + h) * dv];
        for (int64_t c = 0; c < dv; ++c) {
          double ref = l > 0 ? acc[c] / l : 0.0;
          double got = value(orow[c]);
          if (std::isnan(got)) {
            ++nanO;
            continue;
          }
          if (l == 0 && got != 0)
            ++nonZeroEmpty;
          maxRef = std::max(maxRef, std::fabs(ref));
          maxDiff = std::max(maxDiff, std::fabs(got - ref));
        }
        if (std::isnan(gotLse)) {
          ++nanL;
        } else if (std::isinf(refLse) || std::isinf(gotLse)) {
          if (refLse != gotLse)
            ++infMismatch;
        } else {
          double err = std::fabs(gotLse - refLse);
          lseErr = std::max(lseErr, err);
          lseRel = std::max(lseRel, err / std::max(1.0, std::fabs(refLse)));
        }
      }
    }
  }
  result.oErr = maxRef > 0 ? maxDiff / maxRef : maxDiff;
  result.lseErr = lseErr;
  double tol = bf16 ? 1e-2 : 2e-3;
  std::string problems;
  auto add = [&](const std::string &p) {
    problems += (problems.empty() ? "" : "; ") + p;
  };
  if (nanO)
    add(std::to_string(nanO) + " NaN in O");
  if (nanL)
    add(std::to_string(nanL) + " NaN in LSE");
  if (!(result.oErr < tol))
    add("O rel err " + std::to_string(result.oErr) + " >= " +
        std::to_string(tol));
  if (lseRel > 2e-3)
    add("LSE rel err " + std::to_string(lseRel) + " > 0.002");
  if (infMismatch)
    add(std::to_string(infMismatch) + " LSE -inf/+inf positions differ");
  if (nonZeroEmpty)
    add(std::to_string(nonZeroEmpty) + " O values != 0 in rows that see no "
                                       "key");
  result.problems = problems;
  result.ok = problems.empty();
  return result;
}

/// Why the plan's interface is not the one this program fills, or "".
std::string checkInterface(const plan::LaunchPlan &p, DType &dtype, int64_t &d,
                           int64_t &dv) {
  const char *names[] = {"q", "k", "v", "o", "lse"};
  if (p.arguments.size() < 5)
    return "fewer than 5 arguments";
  for (size_t i = 0; i < 5; ++i)
    if (p.arguments[i].name != names[i] ||
        p.arguments[i].kind != plan::ArgKind::Tensor)
      return "argument " + std::to_string(i) + " is not the tensor " +
             names[i];
  for (size_t i = 5; i < p.arguments.size(); ++i)
    if (p.arguments[i].kind != plan::ArgKind::Scalar ||
        !p.arguments[i].defaultValue)
      return "argument " + p.arguments[i].name +
             " is not a scalar with a default";
  dtype = p.arguments[0].dtype;
  if (dtype != DType::BF16 && dtype != DType::F16)
    return "q is neither bf16 nor f16";
  auto constDim = [&](size_t arg, size_t dim) -> int64_t {
    const auto &shape = p.arguments[arg].shape;
    if (shape.size() != 4 || !shape[dim] ||
        shape[dim]->op != plan::Expr::Op::Const)
      return -1;
    return shape[dim]->value;
  };
  d = constDim(0, 3);
  dv = constDim(2, 3);
  if (d <= 0 || dv <= 0)
    return "the head dims of q and v are not constants";
  return "";
}

} // namespace

int main(int argc, char **argv) {
  uint64_t seed = 1234;
  bool quick = false;
  std::vector<std::string> plans;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--seed" && i + 1 < argc) {
      seed = std::strtoull(argv[++i], nullptr, 10);
    } else if (a == "--quick") {
      quick = true;
    } else if (a == "-h" || a == "--help" || a.rfind("--", 0) == 0) {
      std::cerr << "usage: flashtile-run-check [--seed N] [--quick] "
                   "PLAN.json...\n";
      return a.rfind("--", 0) == 0 && a != "--help" ? 2 : 0;
    } else {
      plans.push_back(a);
    }
  }
  if (plans.empty()) {
    std::cerr << "usage: flashtile-run-check [--seed N] [--quick] "
                 "PLAN.json...\n";
    return 2;
  }
  std::string error;
  std::optional<int> devices = getDeviceCount(error);
  if (!devices) {
    std::cout << "SKIP: no CUDA driver (" << error << ")\n";
    return 77;
  }
  if (*devices < 1) {
    std::cout << "SKIP: no CUDA device\n";
    return 77;
  }

  int passed = 0, failed = 0, skipped = 0;
  for (const std::string &path : plans) {
    std::unique_ptr<KernelFamily> family = KernelFamily::load(path, error);
    if (!family) {
      std::cout << "FAIL " << path << ": " << error << "\n";
      ++failed;
      continue;
    }
    const plan::LaunchPlan &p = family->getPlan();
    DType dtype = DType::BF16;
    int64_t d = 0, dv = 0;
    std::string why = checkInterface(p, dtype, d, dv);
    if (!why.empty()) {
      std::cout << "SKIP " << p.name << ": " << why << "\n";
      ++skipped;
      continue;
    }
    // The reference here has no hooks; tools/gpu/check_variants.py checks
    // hooked kernels against their PyTorch twins.
    if (auto info = nlohmann::json::parse(p.infoJson, nullptr, false);
        info.is_object() && info.contains("hooks") &&
        !info["hooks"].empty()) {
      std::cout << "SKIP " << p.name << ": has " << info["hooks"].dump()
                << " hooks (checked by check_variants.py)\n";
      ++skipped;
      continue;
    }
    // A tile program computes what its program says: its twin is in
    // tools/gpu/check_tiles.py.
    if (auto info = nlohmann::json::parse(p.infoJson, nullptr, false);
        info.is_object() && info.value("tile_program", false)) {
      std::cout << "SKIP " << p.name
                << ": a tile program (checked by check_tiles.py)\n";
      ++skipped;
      continue;
    }
    Mask mask;
    double scale = 1.0 / std::sqrt(static_cast<double>(d));
    if (const plan::Argument *a = p.findArgument("softmax_scale"))
      scale = a->defaultValue.value_or(scale);
    try {
      auto info = nlohmann::json::parse(p.infoJson);
      mask.causal = info.value("causal", false);
      if (info.contains("window") && info["window"].is_array() &&
          info["window"].size() == 2) {
        mask.left = info["window"][0].get<int64_t>();
        mask.right = info["window"][1].get<int64_t>();
      }
      if (info.contains("softmax_scale") && info["softmax_scale"].is_number())
        scale = info["softmax_scale"].get<double>();
    } catch (const std::exception &e) {
      std::cout << "FAIL " << p.name << ": cannot read the plan's info: "
                << e.what() << "\n";
      ++failed;
      continue;
    }
    std::cout << "== " << p.name << " (" << plan::stringifyDType(dtype)
              << ", d " << d << "/" << dv << ", causal " << mask.causal
              << ", window [" << mask.left << ", " << mask.right
              << "], scale " << scale << ")\n";
    bool unusable = false;
    size_t n = quick ? std::size(kQuickShapes) : std::size(kShapes);
    for (size_t i = 0; i < n; ++i) {
      const Shape &s = quick ? kQuickShapes[i] : kShapes[i];
      char shapeText[96];
      std::snprintf(shapeText, sizeof shapeText, "B=%lld Hq=%lld Hkv=%lld "
                    "Sq=%lld Sk=%lld", (long long)s.b, (long long)s.hq,
                    (long long)s.hkv, (long long)s.sq, (long long)s.sk);
      if (unusable) {
        std::cout << "   " << shapeText << ": NOT RUN\n";
        ++failed;
        continue;
      }
      auto start = std::chrono::steady_clock::now();
      CaseResult r = runCase(*family, dtype, d, dv, mask, scale, s,
                             seed + 7919 * i);
      double secs = std::chrono::duration<double>(
                        std::chrono::steady_clock::now() - start)
                        .count();
      char line[256];
      std::snprintf(line, sizeof line, "   %s: O rel err %.3e, LSE abs err "
                    "%.3e, %.2f s: %s", shapeText, r.oErr, r.lseErr, secs,
                    r.ok ? "PASS" : "FAIL");
      std::cout << line << (r.ok ? "" : " (" + r.problems + ")") << "\n";
      if (r.ok) {
        ++passed;
      } else {
        ++failed;
        // A kernel that cannot be loaded fails every shape the same way.
        unusable = r.problems.find("cuModule") != std::string::npos ||
                   r.problems.find("cuFuncSetAttribute") != std::string::npos;
      }
    }
  }
  std::cout << "flashtile-run-check: " << passed << " passed, " << failed
            << " failed, " << skipped << " plan(s) skipped\n";
  if (failed)
    return 1;
  if (!passed) {
    std::cout << "SKIP: no plan with the attention interface\n";
    return 77;
  }
  return 0;
}
