"""flashtile.runtime on a GPU, with torch: launches of a reference kernel
compiled with NVRTC (naive attention, one thread per query row) through a
launch plan, compared against float64 torch attention; outputs allocated or
given, transposed views, GQA, causal rows that see no key, empty batches,
driver errors, side streams and CUDA graph capture. When
FLASHTILE_RUN_CHECK names the flashtile-run-check program, it is run on the
same plans.

Every test skips itself without torch, a GPU or NVRTC; the lit test that
runs this file requires all three and fails when anything was skipped.

    PYTHONPATH=<build>/python_bindings python3 -m unittest test_runtime_gpu
"""

import ctypes
import glob
import math
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from flashtile import FlashTileError, runtime  # noqa: E402
from flashtile_test_plans import attention_plan, write_plan  # noqa: E402

try:
    import torch
except ImportError:
    torch = None

_HAS_GPU = torch is not None and torch.cuda.is_available()

_NAIVE_KERNEL = r"""
typedef unsigned short u16;
__device__ float load_elem(const u16 *p) {
#if IS_BF16
  return __uint_as_float(((unsigned)*p) << 16);
#else
  float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(*p)); return f;
#endif
}
__device__ void store_elem(u16 *p, float f) {
#if IS_BF16
  unsigned u = __float_as_uint(f);
  u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest even (finite inputs)
  *p = (u16)(u >> 16);
#else
  u16 h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f)); *p = h;
#endif
}
extern "C" __global__ void KERNEL_NAME(
    const u16 *q, const u16 *k, const u16 *v, u16 *o, float *lse,
    int sq, int sk, int hq, int hkv,
    long long qsb, long long qss, long long qsh,
    long long ksb, long long kss, long long ksh,
    long long vsb, long long vss, long long vsh,
    long long osb, long long oss, long long osh,
    long long lsb, long long lsh, float scale) {
  extern __shared__ float smem[];  // requested, so the >48 KiB path is used
  smem[threadIdx.x] = 0.f;
  __syncthreads();
  int i = blockIdx.x * TILE_M + threadIdx.x;
  int h = blockIdx.y, b = blockIdx.z, hk = h / (hq / hkv);
  if (threadIdx.x >= TILE_M || i >= sq) return;
  const u16 *qr = q + b * qsb + i * qss + h * qsh;
  float acc[DV];
  for (int d = 0; d < DV; ++d) acc[d] = 0.f;
  float m = -INFINITY, l = 0.f;
  long long off = (long long)sk - sq;
  for (int j = 0; j < sk; ++j) {
    if (WL >= 0 && j < i + off - WL) continue;
    if (WR >= 0 && j > i + off + WR) continue;
    const u16 *kr = k + b * ksb + (long long)j * kss + hk * ksh;
    const u16 *vr = v + b * vsb + (long long)j * vss + hk * vsh;
    float s = 0.f;
    for (int d = 0; d < D; ++d) s += load_elem(qr + d) * load_elem(kr + d);
    s *= scale;
    float mn = fmaxf(m, s), c = expf(m - mn), p = expf(s - mn);
    l = l * c + p;
    for (int d = 0; d < DV; ++d) acc[d] = acc[d] * c + p * load_elem(vr + d);
    m = mn;
  }
  u16 *orow = o + b * osb + i * oss + h * osh;
  for (int d = 0; d < DV; ++d) store_elem(orow + d, l > 0.f ? acc[d] / l : 0.f);
  lse[b * lsb + h * lsh + i] = l > 0.f ? m + logf(l) : -INFINITY;
}
"""


def _find_nvrtc():
    names = ["libnvrtc.so"]
    for base in sys.path:
        names += sorted(glob.glob(os.path.join(base, "nvidia", "**",
                                               "libnvrtc.so*"), recursive=True))
    names += ["libnvrtc.so.13", "libnvrtc.so.12"]
    for name in names:
        if "builtins" in name or "alt" in os.path.basename(name):
            continue
        try:
            return ctypes.CDLL(name)
        except OSError:
            continue
    return None




def build_naive_kernel(out_dir, name, dtype="bf16", head_dim=64,
                       head_dim_v=None, causal=False, window=(-1, -1),
                       tile_m=64, dynamic_smem_bytes=64 * 1024, isa=None,
                       arch=None):
    """Writes NAME.plan.json + NAME.cubin for the reference kernel above,
    assembled for `isa` (default: this GPU's) and planned for `arch`
    (default: the ISA); raises unittest.SkipTest without NVRTC."""
    head_dim_v = head_dim if head_dim_v is None else head_dim_v
    nvrtc = _find_nvrtc()
    if nvrtc is None:
        raise unittest.SkipTest("NVRTC not found")
    capability = torch.cuda.get_device_capability()
    isa = isa or f"sm_{capability[0]}{capability[1]}"
    wl, wr = window
    if causal:
        wr = 0 if wr < 0 else min(wr, 0)
    defines = {"IS_BF16": int(dtype == "bf16"), "TILE_M": tile_m,
               "D": head_dim, "DV": head_dim_v, "WL": wl, "WR": wr,
               "INFINITY": "__int_as_float(0x7f800000)"}
    source = f"#define KERNEL_NAME {name}\n" + "".join(
        f"#define {k} ({v})\n" for k, v in defines.items()) + _NAIVE_KERNEL
    prog = ctypes.c_void_p()

    def check(code, what):
        if code != 0:
            raise RuntimeError(f"{what} failed ({code})")
    check(nvrtc.nvrtcCreateProgram(ctypes.byref(prog), source.encode(),
                                   f"{name}.cu".encode(), 0, None, None),
          "nvrtcCreateProgram")
    opts = [f"--gpu-architecture={isa}".encode()]
    opts_arr = (ctypes.c_char_p * len(opts))(*opts)
    if nvrtc.nvrtcCompileProgram(prog, len(opts), opts_arr) != 0:
        size = ctypes.c_size_t()
        nvrtc.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
        log = ctypes.create_string_buffer(size.value)
        nvrtc.nvrtcGetProgramLog(prog, log)
        raise RuntimeError("NVRTC: " + log.value.decode(errors="replace"))
    size = ctypes.c_size_t()
    check(nvrtc.nvrtcGetCUBINSize(prog, ctypes.byref(size)), "nvrtcGetCUBINSize")
    cubin = ctypes.create_string_buffer(size.value)
    check(nvrtc.nvrtcGetCUBIN(prog, cubin), "nvrtcGetCUBIN")
    nvrtc.nvrtcDestroyProgram(ctypes.byref(prog))
    plan = attention_plan(
        name=name, dtype=dtype, head_dim=head_dim, head_dim_v=head_dim_v,
        tile_m=tile_m, dynamic_smem_bytes=dynamic_smem_bytes,
        isa=isa, arch=arch, causal=causal, window=window)
    return write_plan(out_dir, plan, cubin.raw[:size.value])


def reference(q, k, v, scale, causal, window):
    """float64 attention on (B, H, S, D) tensors; returns (O, LSE)."""
    q, k, v = q.double(), k.double(), v.double()
    group = q.shape[1] // k.shape[1]
    k = k.repeat_interleave(group, dim=1)
    v = v.repeat_interleave(group, dim=1)
    sq, sk = q.shape[2], k.shape[2]
    i = torch.arange(sq, device=q.device)[:, None] + (sk - sq)
    j = torch.arange(sk, device=q.device)[None, :]
    wl, wr = window
    if causal:
        wr = 0 if wr < 0 else min(wr, 0)
    visible = torch.ones(sq, sk, dtype=torch.bool, device=q.device)
    if wl >= 0:
        visible &= j >= i - wl
    if wr >= 0:
        visible &= j <= i + wr
    s = (q @ k.transpose(-1, -2)) * scale
    s = s.masked_fill(~visible, float("-inf"))
    lse = torch.logsumexp(s, dim=-1)
    p = torch.exp(s - torch.where(torch.isinf(lse), 0.0, lse)[..., None])
    return p @ v, lse


@unittest.skipUnless(_HAS_GPU, "needs torch and a CUDA GPU")
class GpuTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="flashtile-gpu-test-")
        self.addCleanup(shutil.rmtree, self.dir, ignore_errors=True)

    def naive(self, name="naive_fwd", **kw):
        self.plan_path = build_naive_kernel(self.dir, name, **kw)
        return runtime.load(self.plan_path)

    def run_case(self, kernel, b, hq, hkv, sq, sk, scale=None, stream=None):
        info = kernel.info
        torch.manual_seed(0)
        d, dv = info["head_dim"], info["head_dim_v"]
        dt = torch.bfloat16 if info["dtype"] == "bf16" else torch.float16
        q = torch.randn(b, hq, sq, d, device="cuda").to(dt)
        k = torch.randn(b, hkv, sk, d, device="cuda").to(dt)
        v = torch.randn(b, hkv, sk, dv, device="cuda").to(dt)
        out = torch.full((b, hq, sq, dv), float("nan"), dtype=dt, device="cuda")
        lse = torch.full((b, hq, sq), float("nan"), device="cuda")
        kwargs = {} if scale is None else {"softmax_scale": scale}
        args = (q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2))
        if stream is None:
            o, l = kernel(*args, o=out.transpose(1, 2), lse=lse, **kwargs)
        else:
            o, l = kernel.launch(*args, o=out.transpose(1, 2), lse=lse,
                                 stream=stream, **kwargs)
        torch.cuda.synchronize()
        self.assertEqual(o.data_ptr(), out.data_ptr())
        self.assertIs(l, lse)
        ref_o, ref_lse = reference(q, k, v, scale or info["softmax_scale"],
                                   info["causal"], info["window"])
        self.assertFalse(torch.isnan(out).any().item())
        self.assertLess((out.double() - ref_o).abs().max().item(), 2e-2)
        self.assertTrue(torch.equal(torch.isneginf(l), torch.isneginf(ref_lse)))
        fin = torch.isfinite(ref_lse)
        if fin.any():
            self.assertLess((l.double()[fin] - ref_lse[fin]).abs().max().item(),
                            1e-3)

    def test_launch_reference_kernel(self):
        kernel = self.naive(dtype="bf16", head_dim=64)
        self.run_case(kernel, 2, 4, 2, 77, 130)
        self.run_case(kernel, 1, 2, 1, 1, 1, scale=0.3)

    def test_causal_with_rows_that_see_nothing(self):
        kernel = self.naive(dtype="f16", head_dim=64, causal=True,
                            window=(-1, 0))
        self.run_case(kernel, 1, 2, 2, 130, 70)  # 60 rows see no key

    def test_side_stream(self):
        kernel = self.naive(dtype="bf16", head_dim=64)
        stream = torch.cuda.Stream()
        self.run_case(kernel, 1, 2, 2, 65, 65, stream=stream)
        with torch.cuda.stream(stream):
            self.run_case(kernel, 1, 2, 2, 65, 65)

    def test_allocates_outputs(self):
        kernel = self.naive(dtype="bf16", head_dim=64, head_dim_v=32,
                            tile_m=32, dynamic_smem_bytes=1024)
        q = torch.randn(2, 10, 3, 64, device="cuda", dtype=torch.bfloat16)
        k = torch.randn(2, 20, 1, 64, device="cuda", dtype=torch.bfloat16)
        v = torch.randn(2, 20, 1, 32, device="cuda", dtype=torch.bfloat16)
        out, lse = kernel(q, k, v)
        torch.cuda.synchronize()
        self.assertEqual(tuple(out.shape), (2, 10, 3, 32))
        self.assertEqual(out.dtype, torch.bfloat16)
        self.assertEqual(tuple(lse.shape), (2, 3, 10))
        self.assertEqual(lse.dtype, torch.float32)
        ref_o, _ = reference(q.transpose(1, 2), k.transpose(1, 2),
                             v.transpose(1, 2), kernel.info["softmax_scale"],
                             False, (-1, -1))
        self.assertLess(
            (out.transpose(1, 2).double() - ref_o).abs().max().item(), 2e-2)

    def test_cuda_graph_capture(self):
        kernel = self.naive(dtype="bf16", head_dim=64)
        q = torch.randn(1, 33, 2, 64, device="cuda", dtype=torch.bfloat16)
        k = torch.randn(1, 40, 2, 64, device="cuda", dtype=torch.bfloat16)
        v = torch.randn(1, 40, 2, 64, device="cuda", dtype=torch.bfloat16)
        out = torch.zeros_like(q)
        lse = torch.zeros(1, 2, 33, device="cuda")
        kernel(q, k, v, o=out, lse=lse)  # loads the module before capture
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            kernel(q, k, v, o=out, lse=lse)
        out.zero_()
        graph.replay()
        torch.cuda.synchronize()
        ref_o, _ = reference(q.transpose(1, 2), k.transpose(1, 2),
                             v.transpose(1, 2), kernel.info["softmax_scale"],
                             False, (-1, -1))
        self.assertLess(
            (out.transpose(1, 2).double() - ref_o).abs().max().item(), 2e-2)

    def test_errors(self):
        path = write_plan(self.dir, attention_plan(name="garbage"),
                          b"not a cubin")
        kernel = runtime.load(path)
        q = torch.zeros(1, 16, 2, 64, dtype=torch.bfloat16, device="cuda")
        with self.assertRaisesRegex(FlashTileError, r"cuModuleLoadData\(garbage"):
            kernel(q, q, q)
        # An empty batch launches nothing, even with a bad cubin.
        e = torch.zeros(0, 5, 2, 64, dtype=torch.bfloat16, device="cuda")
        out, lse = kernel(e, e, e)
        self.assertEqual(tuple(out.shape), (0, 5, 2, 64))
        self.assertEqual(tuple(lse.shape), (0, 2, 5))
        # So does an empty query (Sq = 0).
        out, lse = kernel(torch.zeros(1, 0, 2, 64, dtype=torch.bfloat16,
                                      device="cuda"), q, q)
        self.assertEqual(tuple(out.shape), (1, 0, 2, 64))
        self.assertEqual(tuple(lse.shape), (1, 2, 0))
        flat = torch.zeros(1 + 4 * 64, dtype=torch.bfloat16, device="cuda")
        m = flat[1:].view(1, 4, 1, 64)
        with self.assertRaisesRegex(FlashTileError,
                                    "^q data pointer 0x[0-9a-f]+ is not "
                                    "16-byte aligned$"):
            kernel(m, m, m)
        c = torch.zeros(1, 4, 1, 64, dtype=torch.bfloat16)
        with self.assertRaisesRegex(FlashTileError,
                                    "^q is on cpu, expected a CUDA tensor$"):
            kernel(c, c, c)
        with self.assertRaisesRegex(FlashTileError,
                                    "^k has dtype f16, but garbage takes bf16$"):
            kernel(q, q.half(), q)

    def test_refuses_a_cubin_for_another_chip(self):
        # An SM120 cubin cannot run on an older GPU: the runtime says which
        # ISA the cubin has and which the device.
        major, minor = torch.cuda.get_device_capability()
        if (major, minor) >= (12, 0):
            self.skipTest("the GPU runs sm_120 cubins")
        kernel = self.naive("sm120_cubin", isa="sm_120", arch="sm_120")
        q = torch.randn(1, 16, 2, 64, device="cuda").to(torch.bfloat16)
        with self.assertRaisesRegex(
                FlashTileError,
                r"cuModuleLoadData\(sm120_cubin\.cubin\) failed: .*; the "
                r"cubin is for sm_120 but device 0 has compute capability "
                rf"{major}\.{minor} \(sm_{major}{minor}\)$"):
            kernel(q, q, q)

    def test_refuses_smem_over_the_opt_in_limit(self):
        # A plan asking for more dynamic shared memory than the device's
        # opt-in limit is refused with both numbers, before any launch.
        kernel = self.naive("big_smem", dynamic_smem_bytes=1 << 20)
        q = torch.randn(1, 16, 2, 64, device="cuda").to(torch.bfloat16)
        with self.assertRaisesRegex(
                FlashTileError,
                r"^big_smem needs 1048576 bytes of dynamic shared memory per "
                r"block, but device 0 allows at most \d+ \(its opt-in "
                r"limit\)$"):
            kernel(q, q, q)

    def test_runs_an_sm120_configuration_assembled_for_this_gpu(self):
        # The SM120 configuration (arch sm_120) assembled for this GPU's ISA
        # is how SM120 kernels are tested; the runtime must not refuse it.
        major, minor = torch.cuda.get_device_capability()
        kernel = self.naive("sm120_config", arch="sm_120",
                            dynamic_smem_bytes=99 * 1024)
        self.assertEqual((kernel.plan["arch"], kernel.plan["isa"]),
                         ("sm_120", f"sm_{major}{minor}"))
        self.run_case(kernel, 1, 2, 1, 17, 33)

    def test_run_check_program(self):
        program = os.environ.get("FLASHTILE_RUN_CHECK")
        if not program:
            self.skipTest("FLASHTILE_RUN_CHECK is not set")
        plans = [build_naive_kernel(self.dir, "rc_bf16", dtype="bf16"),
                 build_naive_kernel(self.dir, "rc_f16_causal", dtype="f16",
                                    causal=True, window=(-1, 0)),
                 build_naive_kernel(self.dir, "rc_window", dtype="bf16",
                                    head_dim=32, window=(20, 5))]
        result = subprocess.run([program] + plans, capture_output=True,
                                text=True)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        self.assertIn("15 passed, 0 failed", result.stdout)


if __name__ == "__main__":
    unittest.main()
