"""Tests of flashtile.runtime (the run side: metadata, checks, launch).

Runs with the standard library alone:

    python3 -m unittest discover -s test/Python -v     # or: python3 -m pytest test/Python

Tests that need torch skip without it; tests that need a GPU skip without
one. The GPU tests compile a small reference attention kernel with NVRTC (from
the CUDA toolkit or torch's nvidia-cuda-nvrtc wheel) so that the launch path
is tested independently of the compiler; they skip when NVRTC is missing.
"""

import ctypes
import glob
import json
import math
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_BINDINGS = os.path.join(_ROOT, "python_bindings")
if _BINDINGS not in sys.path:
    sys.path.insert(0, _BINDINGS)

from flashtile import runtime  # noqa: E402
from flashtile.runtime import FlashTileError, TensorInfo  # noqa: E402


def _params():
    names = [("q", "ptr"), ("k", "ptr"), ("v", "ptr"), ("o", "ptr"),
             ("lse", "ptr"), ("seqlen_q", "i32"), ("seqlen_k", "i32"),
             ("heads_q", "i32"), ("heads_kv", "i32")]
    for t in ("q", "k", "v", "o"):
        for s in ("batch", "seq", "head"):
            names.append((f"{t}_stride_{s}", "i64"))
    names += [("lse_stride_batch", "i64"), ("lse_stride_head", "i64"),
              ("softmax_scale", "f32")]
    return [{"name": n, "type": t} for n, t in names]


def example_metadata(**overrides):
    """The schema's example, with `overrides` applied (None deletes a key)."""
    meta = {
        "format": "flashtile-kernel-v1",
        "kernel": "flash_fwd_bf16_d128_causal",
        "cubin": "flash_fwd_bf16_d128_causal.cubin",
        "arch": "sm_120", "isa": "sm_90", "code_path": "sm80",
        "dtype": "bf16", "head_dim": 128, "head_dim_v": 128,
        "causal": True, "window": [-1, 0],
        "softmax_scale": 0.08838834764831845,
        "config": {"tile_m": 128, "tile_n": 128, "stages": 1, "warps": 8,
                   "q_in_regs": True},
        "block": [256, 1, 1],
        "grid": ["ceil_div(seqlen_q, 128)", "heads_q", "batch"],
        "dynamic_smem_bytes": 65536,
        "params": _params(),
        "registers": 128, "spill_stores": 0, "spill_loads": 0,
    }
    for key, value in overrides.items():
        if value is None:
            meta.pop(key, None)
        else:
            meta[key] = value
    return meta


class _TempDirTest(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory()
        self.dir = self._tmp.name

    def tearDown(self):
        self._tmp.cleanup()

    def write(self, name, content, binary=False):
        path = os.path.join(self.dir, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb" if binary else "w") as fh:
            fh.write(content)
        return path

    def write_kernel(self, meta=None, cubin=b"\x7fELF fake cubin", name="k.json"):
        meta = example_metadata() if meta is None else meta
        path = self.write(name, json.dumps(meta))
        if cubin is not None and isinstance(meta.get("cubin"), str):
            self.write(os.path.join(os.path.dirname(name), meta["cubin"]),
                       cubin, binary=True)
        return path

    def assertLoadError(self, meta, *fragments, cubin=b"x"):
        path = self.write_kernel(meta, cubin=cubin)
        with self.assertRaises(FlashTileError) as cm:
            runtime.load_kernel(path)
        message = str(cm.exception)
        self.assertIn(path, message)
        for fragment in fragments:
            self.assertIn(fragment, message)
        return message


class ErrorTypeTest(unittest.TestCase):
    def test_error_is_a_runtime_error(self):
        self.assertTrue(issubclass(FlashTileError, RuntimeError))
        self.assertIs(runtime.FlashTileError, FlashTileError)


class MetadataTest(_TempDirTest):
    def test_loads_the_schema_example(self):
        path = self.write_kernel()
        kernel = runtime.load_kernel(path)
        m = kernel.metadata
        self.assertEqual(kernel.name, "flash_fwd_bf16_d128_causal")
        self.assertEqual((m.dtype, m.head_dim, m.head_dim_v), ("bf16", 128, 128))
        self.assertTrue(m.causal)
        self.assertEqual(m.window, (-1, 0))
        self.assertEqual(m.config.tile_m, 128)
        self.assertEqual(m.block, (256, 1, 1))
        self.assertEqual(m.dynamic_smem_bytes, 65536)
        self.assertEqual(len(m.params), 24)
        self.assertEqual(m.params[0], runtime.Param("q", "ptr"))
        self.assertEqual(m.params[-1], runtime.Param("softmax_scale", "f32"))
        self.assertEqual(m.registers, 128)
        self.assertEqual(m.mask_description, "causal")
        self.assertIn("flash_fwd_bf16_d128_causal", repr(kernel))
        self.assertIn("128x128", repr(kernel))

    def test_cubin_is_relative_to_the_json_folder(self):
        meta = example_metadata(cubin="sub/kernel.cubin")
        path = self.write_kernel(meta, name="deep/k.json")
        old = os.getcwd()
        os.chdir(tempfile.gettempdir())
        try:
            kernel = runtime.load_kernel(path)
        finally:
            os.chdir(old)
        self.assertEqual(kernel.metadata.cubin_path,
                         os.path.join(self.dir, "deep", "sub", "kernel.cubin"))

    def test_null_register_counts_are_accepted(self):
        meta = example_metadata(registers=None, spill_stores=None)
        meta["spill_loads"] = None
        kernel = runtime.load_kernel(self.write_kernel(meta))
        self.assertIsNone(kernel.metadata.registers)
        self.assertIsNone(kernel.metadata.spill_loads)

    def test_mask_descriptions(self):
        def describe(causal, window):
            meta = example_metadata(causal=causal, window=window)
            return runtime.load_kernel(self.write_kernel(meta)).metadata.mask_description
        self.assertEqual(describe(False, [-1, -1]), "none")
        self.assertEqual(describe(True, [-1, 0]), "causal")
        self.assertEqual(describe(True, [256, 0]), "causal+window[256,0]")
        self.assertEqual(describe(False, [64, 32]), "window[64,32]")

    def test_missing_file(self):
        path = os.path.join(self.dir, "nope.json")
        with self.assertRaisesRegex(FlashTileError, "metadata file not found"):
            runtime.load_kernel(path)

    def test_invalid_json(self):
        path = self.write("bad.json", '{"format": "flashtile-kernel-v1",\n  "kernel": }')
        with self.assertRaises(FlashTileError) as cm:
            runtime.load_kernel(path)
        self.assertIn("invalid JSON at line 2", str(cm.exception))
        self.assertIn(path, str(cm.exception))

    def test_top_level_must_be_an_object(self):
        path = self.write("list.json", "[1, 2]")
        with self.assertRaisesRegex(FlashTileError, "JSON object at the top level"):
            runtime.load_kernel(path)

    def test_unknown_format(self):
        self.assertLoadError(example_metadata(format="flashtile-kernel-v9"),
                             "unknown format", "flashtile-kernel-v9")
        self.assertLoadError(example_metadata(format=None), "unknown format")

    def test_missing_cubin(self):
        self.assertLoadError(example_metadata(), "not found",
                             "flash_fwd_bf16_d128_causal.cubin", cubin=None)

    def test_empty_cubin(self):
        self.assertLoadError(example_metadata(), "is empty", cubin=b"")

    def test_field_errors_name_the_field(self):
        cases = [
            (dict(kernel=None), "'kernel'", "missing"),
            (dict(cubin=3), "'cubin'", "non-empty string"),
            (dict(dtype="f32"), "'dtype'", "'f32'"),
            (dict(head_dim=0), "'head_dim'", "positive integer"),
            (dict(head_dim=True), "'head_dim'", "True"),
            (dict(head_dim_v=64.0), "'head_dim_v'", "64.0"),
            (dict(causal="yes"), "'causal'", "true or false"),
            (dict(window=[-1]), "'window'", "[-1]"),
            (dict(window=[-2, 0]), "'window'", ">= -1"),
            (dict(softmax_scale=-1.0), "'softmax_scale'", "positive"),
            (dict(config={"tile_n": 64}), "'config.tile_m'", "missing"),
            (dict(config={"tile_m": 128, "warps": "8"}), "'config.warps'", "'8'"),
            (dict(block=[256, 1]), "'block'", "3 positive integers"),
            (dict(block=[1024, 2, 1]), "'block'", "2048 threads"),
            (dict(dynamic_smem_bytes=-1), "'dynamic_smem_bytes'", "non-negative"),
            (dict(params=[]), "'params'", "non-empty list"),
            (dict(registers="many"), "'registers'", "'many'"),
        ]
        for overrides, field, fragment in cases:
            with self.subTest(overrides=overrides):
                self.assertLoadError(example_metadata(**overrides), field, fragment)

    def test_param_errors(self):
        bad_name = _params()
        bad_name[3] = {"name": "output", "type": "ptr"}
        self.assertLoadError(example_metadata(params=bad_name),
                             "'params[3].name'", "'output'")
        bad_type = _params()
        bad_type[5] = {"name": "seqlen_q", "type": "u32"}
        self.assertLoadError(example_metadata(params=bad_type),
                             "'params[5].type'", "'u32'")
        wrong_kind = _params()
        wrong_kind[0] = {"name": "q", "type": "i64"}
        self.assertLoadError(example_metadata(params=wrong_kind),
                             "'params[0].type'", "'q' cannot be passed as 'i64'")
        twice = _params() + [{"name": "q", "type": "ptr"}]
        self.assertLoadError(example_metadata(params=twice),
                             "'params[24].name'", "appears twice")
        not_object = _params()
        not_object[1] = "k"
        self.assertLoadError(example_metadata(params=not_object), "'params[1]'")


class LazyImportTest(_TempDirTest):
    def test_import_and_load_need_neither_torch_nor_a_driver(self):
        path = self.write_kernel()
        script = textwrap.dedent(f"""
            import sys
            sys.modules["torch"] = None  # any "import torch" now fails
            sys.path.insert(0, {_BINDINGS!r})
            import flashtile.runtime as rt
            kernel = rt.load_kernel({path!r})
            assert rt._driver is None, "the driver was loaded"
            try:
                kernel(None, None, None)
            except rt.FlashTileError as e:
                assert "needs PyTorch" in str(e), str(e)
            else:
                raise AssertionError("no error without torch")
            assert rt._driver is None, "the driver was loaded"
            print("ok")
        """)
        result = subprocess.run([sys.executable, "-c", script],
                                capture_output=True, text=True)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(result.stdout.strip(), "ok")


class DriverTest(unittest.TestCase):
    def test_missing_driver_is_a_clear_error(self):
        saved_driver = runtime._driver
        saved_env = os.environ.get("FLASHTILE_CUDA_DRIVER")
        runtime._driver = None
        os.environ["FLASHTILE_CUDA_DRIVER"] = "/nonexistent/libcuda.so.1"
        try:
            with self.assertRaisesRegex(FlashTileError, "no CUDA driver"):
                runtime._get_driver()
        finally:
            runtime._driver = saved_driver
            if saved_env is None:
                del os.environ["FLASHTILE_CUDA_DRIVER"]
            else:
                os.environ["FLASHTILE_CUDA_DRIVER"] = saved_env


def _info(name, shape, strides=None, dtype="bf16", device="cuda:0",
          data_ptr=0x7F0000000000):
    if strides is None:  # contiguous
        strides, acc = [], 1
        for size in reversed(shape):
            strides.insert(0, acc)
            acc *= max(size, 1)
    return TensorInfo(name=name, shape=tuple(shape), strides=tuple(strides),
                      dtype=dtype, element_size=4 if dtype == "f32" else 2,
                      device=device, is_cuda=device.startswith("cuda"),
                      data_ptr=data_ptr)


def _bhsd_view(name, b, s, h, d, dtype="bf16"):
    """(B, S, H, D) view of a contiguous (B, H, S, D) tensor."""
    return _info(name, (b, s, h, d), (h * s * d, d, s * d, 1), dtype=dtype)


class CheckArgumentsTest(_TempDirTest):
    def setUp(self):
        super().setUp()
        self.meta = runtime.load_kernel(self.write_kernel()).metadata

    def args(self, b=2, sq=100, sk=300, hq=8, hkv=2, d=128, **replace):
        args = {
            "q": _bhsd_view("q", b, sq, hq, d),
            "k": _bhsd_view("k", b, sk, hkv, d),
            "v": _bhsd_view("v", b, sk, hkv, d),
            "out": _info("out", (b, sq, hq, d)),
            "lse": _info("lse", (b, hq, sq), dtype="f32"),
        }
        args.update(replace)
        return args

    def check(self, **kw):
        a = self.args(**kw) if "a" not in kw else kw["a"]
        return runtime.check_arguments(self.meta, a["q"], a["k"], a["v"],
                                       a["out"], a["lse"])

    def assertRejected(self, a, *fragments):
        with self.assertRaises(FlashTileError) as cm:
            runtime.check_arguments(self.meta, a["q"], a["k"], a["v"],
                                    a["out"], a["lse"])
        for fragment in fragments:
            self.assertIn(fragment, str(cm.exception))

    def test_transposed_views_are_accepted(self):
        plan = self.check()
        self.assertEqual(plan, runtime.LaunchPlan(2, 100, 300, 8, 2, False))
        a = self.args()
        a["out"] = a["lse"] = None
        self.assertFalse(runtime.check_arguments(
            self.meta, a["q"], a["k"], a["v"], None, None).empty)

    def test_dtype(self):
        a = self.args()
        a["q"] = a["q"]._replace(dtype="f16")
        self.assertRejected(a, "q has dtype f16", "bf16")
        a = self.args()
        a["out"] = a["out"]._replace(dtype="f32", element_size=4)
        self.assertRejected(a, "out has dtype f32")
        a = self.args()
        a["lse"] = a["lse"]._replace(dtype="f16", element_size=2)
        self.assertRejected(a, "lse has dtype f16", "float32")

    def test_device(self):
        a = self.args()
        a["k"] = a["k"]._replace(device="cpu", is_cuda=False)
        self.assertRejected(a, "k must be a CUDA tensor", "cpu")
        a = self.args()
        a["v"] = a["v"]._replace(device="cuda:1")
        self.assertRejected(a, "v is on cuda:1", "cuda:0")
        a = self.args()
        a["lse"] = a["lse"]._replace(device="cuda:1")
        self.assertRejected(a, "lse is on cuda:1")

    def test_rank_and_head_dims(self):
        a = self.args()
        a["q"] = _info("q", (2, 100, 8 * 128))
        self.assertRejected(a, "q must have 4 dims", "[2, 100, 1024]")
        self.assertRejected(self.args(d=64), "last dim 64", "head_dim = 128")
        a = self.args()
        a["v"] = _bhsd_view("v", 2, 300, 2, 64)
        self.assertRejected(a, "v has last dim 64", "head_dim_v = 128")

    def test_shapes_must_agree(self):
        a = self.args()
        a["k"] = _bhsd_view("k", 3, 300, 2, 128)
        self.assertRejected(a, "batch sizes differ", "k has 3")
        a = self.args()
        a["v"] = _bhsd_view("v", 2, 299, 2, 128)
        self.assertRejected(a, "same seqlen", "300", "299")
        a = self.args()
        a["v"] = _bhsd_view("v", 2, 300, 4, 128)
        self.assertRejected(a, "same number of heads", "2", "4")
        self.assertRejected(self.args(hq=6, hkv=4), "q heads (6)", "k/v heads (4)")
        a = self.args()
        a["out"] = _info("out", (2, 100, 8, 64))
        self.assertRejected(a, "out has last dim 64")
        a = self.args()
        a["out"] = _info("out", (2, 101, 8, 128))
        self.assertRejected(a, "out has shape [2, 101, 8, 128]", "[2, 100, 8, 128]")
        a = self.args()
        a["lse"] = _info("lse", (2, 100, 8), dtype="f32")
        self.assertRejected(a, "lse has shape [2, 100, 8]", "[2, 8, 100]")

    def test_layout(self):
        a = self.args()
        a["q"] = _info("q", (2, 100, 8, 128), (102400, 1024, 1, 8))
        self.assertRejected(a, "q must be contiguous in its last dim")
        a = self.args()
        a["k"] = _info("k", (2, 300, 2, 128), (2 * 300 * 132, 132, 300 * 132, 1))
        self.assertRejected(a, "k stride 132 of dim 1", "multiple of 8")
        a = self.args()
        a["v"] = a["v"]._replace(data_ptr=0x7F0000000008)
        self.assertRejected(a, "v data pointer 0x7f0000000008", "16-byte aligned")
        a = self.args()
        a["lse"] = _info("lse", (2, 8, 100), (800, 100, 2), dtype="f32")
        self.assertRejected(a, "lse must be contiguous in its last dim")

    def test_size_one_dims_may_have_any_stride(self):
        a = self.args(b=1, sq=1)
        a["q"] = _info("q", (1, 1, 8, 128), (3, 5, 128, 1))
        self.assertFalse(runtime.check_arguments(
            self.meta, a["q"], a["k"], a["v"], a["out"], a["lse"]).empty)

    def test_outputs_must_not_overlap(self):
        a = self.args()
        a["out"] = _info("out", (2, 100, 8, 128), (0, 1024, 128, 1))
        self.assertRejected(a, "out has overlapping elements")
        a = self.args()
        a["lse"] = _info("lse", (2, 8, 100), (800, 8, 1), dtype="f32")
        self.assertRejected(a, "lse has overlapping elements")

    def test_seqlens_and_empty_problems(self):
        self.assertRejected(self.args(sq=0), "seqlens must be >= 1", "seqlen_q = 0")
        self.assertRejected(self.args(sk=0), "seqlen_k = 0")
        self.assertTrue(self.check(b=0).empty)
        self.assertTrue(self.check(hq=0, hkv=0).empty)
        self.assertTrue(self.check(b=0, sq=0).empty)
        self.assertRejected(self.args(hq=2, hkv=0), "0 heads")

    def test_sizes_must_fit_i32(self):
        big = 2**31
        a = self.args()
        a["k"] = _info("k", (2, big, 2, 128))
        a["v"] = _info("v", (2, big, 2, 128))
        self.assertRejected(a, "seqlen_k = 2147483648", "32-bit")
        self.assertRejected(self.args(b=70000, hq=2, hkv=2), "batch = 70000",
                            "grid z")


class PackingTest(_TempDirTest):
    def test_params_follow_the_metadata_list(self):
        params = [runtime.Param("softmax_scale", "f32"),
                  runtime.Param("seqlen_q", "i32"),
                  runtime.Param("q_stride_seq", "i64"),
                  runtime.Param("o", "ptr")]
        values = {"softmax_scale": 0.5, "seqlen_q": 77,
                  "q_stride_seq": 2**40, "o": 0xDEADBEEF0, "unused": 1}
        array, keep = runtime.pack_params(params, values)
        self.assertEqual(len(array), 4)
        read = [ctypes.cast(array[0], ctypes.POINTER(ctypes.c_float))[0],
                ctypes.cast(array[1], ctypes.POINTER(ctypes.c_int32))[0],
                ctypes.cast(array[2], ctypes.POINTER(ctypes.c_int64))[0],
                ctypes.cast(array[3], ctypes.POINTER(ctypes.c_void_p))[0]]
        self.assertEqual(read, [0.5, 77, 2**40, 0xDEADBEEF0])
        self.assertEqual(len(keep), 4)

    def test_values_must_fit_their_types(self):
        with self.assertRaisesRegex(FlashTileError, "q_stride_seq = 2147483648 does not fit i32"):
            runtime.pack_params([runtime.Param("q_stride_seq", "i32")],
                                {"q_stride_seq": 2**31})
        with self.assertRaisesRegex(FlashTileError, "'heads_q' has no value"):
            runtime.pack_params([runtime.Param("heads_q", "i32")], {})

    def test_param_values_map_strides(self):
        meta = runtime.load_kernel(self.write_kernel()).metadata
        q = _bhsd_view("q", 2, 100, 8, 128)
        k = _bhsd_view("k", 2, 300, 2, 128)
        v = _bhsd_view("v", 2, 300, 2, 128)._replace(data_ptr=0x1000)
        out = _info("out", (2, 100, 8, 128))
        lse = _info("lse", (2, 8, 100), dtype="f32")
        plan = runtime.check_arguments(meta, q, k, v, out, lse)
        values = runtime.param_values(plan, meta, q, k, v, out, lse, 0.25)
        self.assertEqual(values["q_stride_batch"], 8 * 100 * 128)
        self.assertEqual(values["q_stride_seq"], 128)
        self.assertEqual(values["q_stride_head"], 100 * 128)
        self.assertEqual(values["o_stride_seq"], 8 * 128)
        self.assertEqual(values["lse_stride_head"], 100)
        self.assertEqual(values["v"], 0x1000)
        self.assertEqual((values["seqlen_q"], values["seqlen_k"],
                          values["heads_q"], values["heads_kv"]), (100, 300, 8, 2))
        # Every name the metadata lists has a value.
        runtime.pack_params(meta.params, values)

    def test_softmax_scale(self):
        meta = runtime.load_kernel(self.write_kernel()).metadata
        self.assertEqual(runtime.resolve_softmax_scale(meta, None),
                         meta.softmax_scale)
        self.assertEqual(runtime.resolve_softmax_scale(meta, 2), 2.0)
        for bad in (float("nan"), float("inf"), 1e39, "x", True):
            with self.subTest(bad=bad), self.assertRaises(FlashTileError):
                runtime.resolve_softmax_scale(meta, bad)


def _torch():
    try:
        import torch
    except ImportError:
        return None
    return torch


torch = _torch()


@unittest.skipIf(torch is None, "needs torch")
class TorchTest(_TempDirTest):
    def test_cpu_tensors_are_rejected(self):
        kernel = runtime.load_kernel(self.write_kernel())
        q = torch.zeros(1, 4, 1, 128, dtype=torch.bfloat16)
        with self.assertRaisesRegex(FlashTileError, "q must be a CUDA tensor"):
            kernel(q, q, q)
        with self.assertRaisesRegex(FlashTileError, "k must be a torch.Tensor"):
            kernel(q, [1, 2], q)


# ---------------------------------------------------------------------------
# GPU: a reference kernel built with NVRTC, launched through the runtime
# ---------------------------------------------------------------------------

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
        names += sorted(glob.glob(os.path.join(base, "nvidia", "*", "lib",
                                               "libnvrtc.so*")))
    names += ["libnvrtc.so.13", "libnvrtc.so.12"]
    for name in names:
        if "builtins" in name or "alt" in os.path.basename(name):
            continue
        try:
            return ctypes.CDLL(name)
        except OSError:
            continue
    return None


def build_naive_kernel(out_dir, name, dtype="bf16", head_dim=64, head_dim_v=None,
                       causal=False, window=(-1, -1), tile_m=64,
                       dynamic_smem_bytes=64 * 1024, capability=None):
    """Writes NAME.json + NAME.cubin for the reference kernel above.

    Needs NVRTC and a GPU (for the capability); raises RuntimeError otherwise.
    """
    head_dim_v = head_dim if head_dim_v is None else head_dim_v
    nvrtc = _find_nvrtc()
    if nvrtc is None:
        raise RuntimeError("NVRTC not found")
    if capability is None:
        capability = torch.cuda.get_device_capability()
    wl, wr = window
    if causal:
        wr = 0 if wr < 0 else min(wr, 0)
    defines = {"KERNEL_NAME": name, "IS_BF16": int(dtype == "bf16"),
               "TILE_M": tile_m, "D": head_dim, "DV": head_dim_v,
               "WL": wl, "WR": wr, "INFINITY": "__int_as_float(0x7f800000)"}
    source = "".join(f"#define {k} ({v})\n" if k != "KERNEL_NAME" else
                     f"#define {k} {v}\n" for k, v in defines.items())
    source += _NAIVE_KERNEL
    prog = ctypes.c_void_p()

    def check(code, what):
        if code != 0:
            raise RuntimeError(f"{what} failed ({code})")
    check(nvrtc.nvrtcCreateProgram(ctypes.byref(prog), source.encode(),
                                   f"{name}.cu".encode(), 0, None, None),
          "nvrtcCreateProgram")
    opts = [f"--gpu-architecture=sm_{capability[0]}{capability[1]}".encode(),
            b"-lineinfo"]
    opts_arr = (ctypes.c_char_p * len(opts))(*opts)
    code = nvrtc.nvrtcCompileProgram(prog, len(opts), opts_arr)
    if code != 0:
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
    with open(os.path.join(out_dir, name + ".cubin"), "wb") as fh:
        fh.write(cubin.raw[:size.value])
    meta = example_metadata(
        kernel=name, cubin=name + ".cubin", dtype=dtype, head_dim=head_dim,
        head_dim_v=head_dim_v, causal=causal, window=list(window),
        softmax_scale=1.0 / math.sqrt(head_dim),
        config={"tile_m": tile_m, "tile_n": 1, "stages": 1,
                "warps": max(1, tile_m // 32), "q_in_regs": True},
        block=[tile_m, 1, 1], dynamic_smem_bytes=dynamic_smem_bytes,
        isa=f"sm_{capability[0]}{capability[1]}",
        grid=[f"ceil_div(seqlen_q, {tile_m})", "heads_q", "batch"],
        registers=None, spill_stores=None, spill_loads=None)
    path = os.path.join(out_dir, name + ".json")
    with open(path, "w") as fh:
        json.dump(meta, fh, indent=2)
    return path


def _reference(q, k, v, scale, causal, window):
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
        wr = 0
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


_HAS_GPU = torch is not None and torch.cuda.is_available()


@unittest.skipUnless(_HAS_GPU, "needs a CUDA GPU")
class GpuTest(_TempDirTest):
    def naive(self, **kw):
        try:
            return runtime.load_kernel(build_naive_kernel(self.dir, "naive_fwd", **kw))
        except RuntimeError as e:
            if "NVRTC" in str(e):
                self.skipTest(str(e))
            raise

    def test_garbage_cubin_is_a_driver_error(self):
        kernel = runtime.load_kernel(self.write_kernel())
        q = torch.zeros(1, 1, 16, 128, dtype=torch.bfloat16, device="cuda").transpose(1, 2)
        with self.assertRaisesRegex(FlashTileError, "cuModuleLoadData"):
            kernel(q, q, q)

    def test_empty_batch_does_not_launch(self):
        kernel = runtime.load_kernel(self.write_kernel())  # garbage cubin
        q = torch.zeros(0, 5, 2, 128, dtype=torch.bfloat16, device="cuda")
        out, lse = kernel(q, q, q)
        self.assertEqual(tuple(out.shape), (0, 5, 2, 128))
        self.assertEqual(tuple(lse.shape), (0, 2, 5))

    def test_misaligned_pointer(self):
        kernel = runtime.load_kernel(self.write_kernel())
        flat = torch.zeros(1 + 4 * 128, dtype=torch.bfloat16, device="cuda")
        q = flat[1:].view(1, 4, 1, 128)
        with self.assertRaisesRegex(FlashTileError, "q data pointer .* not 16-byte"):
            kernel(q, q, q)

    def run_case(self, kernel, b, hq, hkv, sq, sk, causal=False, window=(-1, -1),
                 scale=None):
        torch.manual_seed(0)
        d, dv = kernel.head_dim, kernel.head_dim_v
        dt = torch.bfloat16 if kernel.dtype == "bf16" else torch.float16
        q = torch.randn(b, hq, sq, d, device="cuda").to(dt)
        k = torch.randn(b, hkv, sk, d, device="cuda").to(dt)
        v = torch.randn(b, hkv, sk, dv, device="cuda").to(dt)
        out = torch.full((b, hq, sq, dv), float("nan"), dtype=dt, device="cuda")
        lse = torch.full((b, hq, sq), float("nan"), device="cuda")
        o, l = kernel(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                      softmax_scale=scale, out=out.transpose(1, 2), lse=lse)
        torch.cuda.synchronize()
        self.assertEqual(o.data_ptr(), out.data_ptr())
        ref_o, ref_lse = _reference(q, k, v, scale or kernel.metadata.softmax_scale,
                                    causal, window)
        self.assertFalse(torch.isnan(out).any().item())
        err = (out.double() - ref_o).abs().max().item()
        self.assertLess(err, 2e-2)
        self.assertTrue(torch.equal(torch.isneginf(l), torch.isneginf(ref_lse)))
        fin = torch.isfinite(ref_lse)
        if fin.any():
            self.assertLess((l.double()[fin] - ref_lse[fin]).abs().max().item(), 1e-3)

    def test_launch_reference_kernel(self):
        kernel = self.naive(dtype="bf16", head_dim=64)
        self.run_case(kernel, 2, 4, 2, 77, 130)
        self.run_case(kernel, 1, 2, 1, 1, 1, scale=0.3)

    def test_launch_causal_with_empty_rows(self):
        kernel = self.naive(dtype="f16", head_dim=64, causal=True, window=(-1, 0))
        self.run_case(kernel, 1, 2, 2, 130, 70, causal=True)  # 60 rows see nothing

    def test_allocates_outputs(self):
        kernel = self.naive(dtype="bf16", head_dim=64, head_dim_v=32, tile_m=32,
                            dynamic_smem_bytes=1024)
        q = torch.randn(2, 10, 3, 64, device="cuda", dtype=torch.bfloat16)
        k = torch.randn(2, 20, 1, 64, device="cuda", dtype=torch.bfloat16)
        v = torch.randn(2, 20, 1, 32, device="cuda", dtype=torch.bfloat16)
        out, lse = kernel(q, k, v)
        torch.cuda.synchronize()
        self.assertEqual(tuple(out.shape), (2, 10, 3, 32))
        self.assertEqual(lse.dtype, torch.float32)
        ref_o, _ = _reference(q.transpose(1, 2), k.transpose(1, 2),
                              v.transpose(1, 2), kernel.metadata.softmax_scale,
                              False, (-1, -1))
        self.assertLess((out.transpose(1, 2).double() - ref_o).abs().max().item(), 2e-2)


if __name__ == "__main__":
    unittest.main()
