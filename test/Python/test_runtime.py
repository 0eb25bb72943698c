"""flashtile.runtime without a GPU: loading plans, their errors, argument
checks through the binding (fake tensors: checks never read device memory),
output shapes, parameter packing and launches without a driver.

Nothing here needs torch or a GPU, and nothing is skipped: the CUDA driver is
pointed at a library that does not exist, before flashtile is imported.

    PYTHONPATH=<build>/python_bindings python3 -m unittest test_runtime
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

os.environ["FLASHTILE_CUDA_DRIVER"] = "/nonexistent/libcuda.so"

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import flashtile  # noqa: E402
from flashtile import FlashTileError, runtime  # noqa: E402
from flashtile_test_plans import attention_plan, write_plan  # noqa: E402


class FakeDevice:
    def __init__(self, type="cuda", index=0):
        self.type = type
        self.index = index

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"


class FakeTensor:
    """What the runtime reads of a tensor: data_ptr(), shape, stride(),
    dtype, device."""

    def __init__(self, ptr, shape, dtype="bf16", strides=None, device=None):
        self.ptr = ptr
        self.shape = tuple(shape)
        if strides is None:
            strides, step = [], 1
            for s in reversed(self.shape):
                strides.insert(0, step)
                step *= max(s, 1)
        self.strides = tuple(strides)
        self.dtype = dtype
        self.device = FakeDevice() if device is None else device

    def data_ptr(self):
        return self.ptr

    def stride(self):
        return self.strides


def qkv(b=1, sq=5, hq=2, sk=7, hkv=1, d=64):
    """Valid q, k, v, o, lse at distinct fake addresses."""
    return (FakeTensor(0x1000000, (b, sq, hq, d)),
            FakeTensor(0x2000000, (b, sk, hkv, d)),
            FakeTensor(0x3000000, (b, sk, hkv, d)),
            FakeTensor(0x4000000, (b, sq, hq, d)),
            FakeTensor(0x5000000, (b, hq, sq), dtype="float32"))


class TempDirTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="flashtile-py-test-")
        self.addCleanup(shutil.rmtree, self.dir, ignore_errors=True)

    def write(self, plan=None, **kw):
        return write_plan(self.dir, plan or attention_plan(**kw))

    def load(self, **kw):
        return runtime.load(self.write(**kw))


class PlanTest(TempDirTest):
    def test_error_is_a_runtime_error(self):
        self.assertTrue(issubclass(FlashTileError, RuntimeError))
        self.assertIs(runtime.FlashTileError, flashtile.FlashTileError)

    def test_loads_and_exposes_the_plan(self):
        kernel = self.load(dtype="f16", head_dim=128, causal=True,
                           window=(-1, 0))
        self.assertEqual(kernel.name, "attn_fwd")
        self.assertEqual([a["name"] for a in kernel.arguments],
                         ["q", "k", "v", "o", "lse", "softmax_scale"])
        self.assertEqual(kernel.kernels[0]["symbol"], "attn_fwd")
        self.assertEqual(kernel.kernels[0]["grid"][0],
                         {"ceil_div": ["seqlen_q", 64]})
        self.assertEqual(kernel.info["dtype"], "f16")
        self.assertEqual(kernel.info["window"], [-1, 0])
        self.assertTrue(kernel.info["causal"])
        self.assertTrue(kernel.path.endswith("attn_fwd.plan.json"))
        self.assertIn("attn_fwd(q, k, v, o, lse, softmax_scale)", repr(kernel))

    def test_cubin_is_relative_to_the_plan(self):
        sub = os.path.join(self.dir, "sub")
        os.makedirs(sub)
        path = write_plan(sub, attention_plan())
        cwd = os.getcwd()
        os.chdir(self.dir)
        try:
            runtime.load(path)
            runtime.load(os.path.join("sub", "attn_fwd.plan.json"))
        finally:
            os.chdir(cwd)

    def test_load_errors(self):
        missing = os.path.join(self.dir, "none.plan.json")
        with self.assertRaises(FlashTileError) as e:
            runtime.load(missing)
        self.assertEqual(str(e.exception), missing + ": plan not found")

        # A folder opens as a stream and throws on read; it is refused first.
        with self.assertRaises(FlashTileError) as e:
            runtime.load(self.dir)
        self.assertEqual(str(e.exception),
                         self.dir + ": the plan is not a regular file")

        path = os.path.join(self.dir, "bad.plan.json")
        with open(path, "w") as fh:
            fh.write('{"format": "flashtile-launch-plan",\n "version": }')
        with self.assertRaisesRegex(FlashTileError, "^" + path +
                                    ": invalid JSON at line 2, column 13"):
            runtime.load(path)

        plan = attention_plan()
        plan["version"] = 1
        with self.assertRaisesRegex(
                FlashTileError, "version: this runtime reads version 2, the "
                "plan is version 1$"):
            runtime.load(self.write(plan))

        plan = attention_plan()
        plan["kernels"][0]["params"][3]["from"] = {"data": "x"}
        with self.assertRaisesRegex(
                FlashTileError,
                r"kernels\[0\]\.params\[3\]\.from: unknown argument 'x'$"):
            runtime.load(self.write(plan))

        plan = attention_plan()
        plan["arguments"][5]["positive"] = "yes"
        with self.assertRaisesRegex(
                FlashTileError,
                r'arguments\[5\]\.positive: expected true or false, got "yes"$'):
            runtime.load(self.write(plan))
        plan = attention_plan()
        plan["arguments"][5]["default"] = -1.0
        with self.assertRaisesRegex(
                FlashTileError,
                r"arguments\[5\]\.default: expected a positive number$"):
            runtime.load(self.write(plan))

        path = write_plan(self.dir, attention_plan(name="nocubin"),
                          cubin_bytes=None)
        with self.assertRaisesRegex(FlashTileError,
                                    "kernel nocubin: .*nocubin.cubin: cubin "
                                    "not found$"):
            runtime.load(path)

    def test_parse_plan(self):
        plan = attention_plan()
        parsed = runtime.parse_plan(json.dumps(plan))
        self.assertEqual(parsed["arguments"], plan["arguments"])
        self.assertEqual(parsed["info"], plan["info"])
        plan["sizes"][0]["dim"] = 9
        with self.assertRaisesRegex(FlashTileError, r"sizes\[0\]\.dim: "
                                    "dimension 9 is out of range"):
            runtime.parse_plan(json.dumps(plan))

    def test_import_and_load_need_neither_torch_nor_a_driver(self):
        path = self.write()
        code = ("import sys; sys.modules['torch'] = None\n"
                "from flashtile import runtime\n"
                f"k = runtime.load({path!r})\n"
                "print(k.name, runtime.driver_available()[0])\n")
        env = dict(os.environ, FLASHTILE_CUDA_DRIVER="/nonexistent/lib.so")
        out = subprocess.run([sys.executable, "-c", code], env=env,
                             capture_output=True, text=True)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(out.stdout.strip(), "attn_fwd False")


class CheckTest(TempDirTest):
    def setUp(self):
        super().setUp()
        self.kernel = self.load()

    def error(self, *args, **kwargs):
        with self.assertRaises(FlashTileError) as e:
            self.kernel.check(*args, **kwargs)
        return str(e.exception)

    def test_valid_arguments(self):
        q, k, v, o, lse = qkv()
        self.kernel.check(q, k, v, o, lse)
        self.kernel.check(q, k, v, o=o, lse=lse, softmax_scale=0.5)
        self.kernel.check(q, k=k, v=v, o=o, lse=lse, softmax_scale=2)
        self.kernel.check(q, k, v, o, lse, None)  # None: the default

    def test_binding_errors(self):
        q, k, v, o, lse = qkv()
        self.assertEqual(
            self.error(q, k, v, o, lse, 1.0, 2),
            "attn_fwd takes at most 6 arguments (q, k, v, o, lse, "
            "softmax_scale), got 7")
        self.assertEqual(
            self.error(q, k, v, o, lse, scale=1.0),
            "attn_fwd got an unexpected keyword argument 'scale' (its "
            "arguments: q, k, v, o, lse, softmax_scale)")
        self.assertEqual(self.error(q, k, v, o, lse, q=q),
                         "attn_fwd got multiple values for argument 'q'")
        self.assertEqual(self.error(q, k, v, lse=lse),
                         "missing output tensor o")
        self.assertEqual(self.error(q, k, v, o, lse, True),
                         "softmax_scale must be a number, got a bool")
        self.assertEqual(self.error(q, k, v, o, lse, "x"),
                         "softmax_scale must be a number, got str")
        self.assertEqual(self.error(q, k, v, o, lse, softmax_scale=q),
                         "softmax_scale must be a scalar (f32), got a tensor")
        self.assertEqual(self.error(q, 3, v, o, lse),
                         "k must be a tensor, got a scalar")
        self.assertEqual(
            self.error(q, "k", v, o, lse),
            "k must be a tensor (an object with data_ptr(), shape, stride(), "
            "dtype and device), got str")
        self.assertEqual(
            self.error(q, k, v, o, lse, float("inf")),
            "softmax_scale = inf is not a finite f32 value")
        # The kernel's row max is of the unscaled scores: the scale must be
        # positive (the plan says so: "positive": true).
        self.assertEqual(self.error(q, k, v, o, lse, -0.5),
                         "softmax_scale = -0.5 must be positive")
        self.assertEqual(self.error(q, k, v, o, lse, 0),
                         "softmax_scale = 0 must be positive")

    def test_dtype_and_device(self):
        q, k, v, o, lse = qkv()
        k.dtype = "torch.float16"
        self.assertEqual(self.error(q, k, v, o, lse),
                         "k has dtype f16, but attn_fwd takes bf16")
        k.dtype = "torch.complex64"
        self.assertEqual(
            self.error(q, k, v, o, lse),
            "k has dtype torch.complex64, which FlashTile does not take "
            "(float16, bfloat16, float32, int32 or int64)")
        q, k, v, o, lse = qkv()
        v.device = FakeDevice("cpu", None)
        self.assertEqual(self.error(q, k, v, o, lse),
                         "v is on cpu, expected a CUDA tensor")
        v.device = 1
        self.assertEqual(self.error(q, k, v, o, lse),
                         "v is on device 1 but q is on device 0; all tensors "
                         "must be on one device")

    def test_shapes(self):
        q, k, v, o, lse = qkv()
        q2 = FakeTensor(q.ptr, (1, 5, 2, 32))
        self.assertEqual(
            self.error(q2, k, v, o, lse),
            "q has 32 in dim 3 (shape [1, 5, 2, 32]), expected 64 (batch, "
            "seqlen_q, heads_q, 64)")
        v2 = FakeTensor(v.ptr, (1, 6, 1, 64))
        self.assertEqual(
            self.error(q, k, v2, o, lse),
            "v has 6 in dim 1 (shape [1, 6, 1, 64]), but k has 7 in dim 1 "
            "(shape [1, 7, 1, 64]); both are seqlen_k")
        q, k, v, o, lse = qkv(hq=3, hkv=2)
        self.assertEqual(self.error(q, k, v, o, lse),
                         "heads_q must be a multiple of heads_kv (heads_q = 3, "
                         "heads_kv = 2)")
        q, k, v, o, lse = qkv()
        self.assertEqual(
            self.error(q, k, v, o, FakeTensor(lse.ptr, (1, 5), "float32")),
            "lse has rank 2 (shape [1, 5]), but attn_fwd takes rank 3 "
            "(batch, heads_q, seqlen_q)")

    def test_layout(self):
        q, k, v, o, lse = qkv()
        q.ptr += 2
        self.assertEqual(self.error(q, k, v, o, lse),
                         "q data pointer 0x1000002 is not 16-byte aligned")
        q, k, v, o, lse = qkv()
        k.strides = (7 * 64, 64, 64, 2)
        self.assertEqual(
            self.error(q, k, v, o, lse),
            "k must be contiguous in its last dim (stride 1), but has strides "
            "[448, 64, 64, 2] for shape [1, 7, 1, 64]")
        q, k, v, o, lse = qkv()
        q.strides = (5 * 2 * 66, 2 * 66, 66, 1)
        self.assertEqual(
            self.error(q, k, v, o, lse),
            "q stride 132 of dim 1 is not a multiple of 8 elements (16 "
            "bytes); strides [660, 132, 66, 1], shape [1, 5, 2, 64]")
        q, k, v, o, lse = qkv()
        v.ptr = 0
        self.assertEqual(self.error(q, k, v, o, lse), "v data pointer is null")
        # A transposed (B, H, S, D) buffer is fine.
        q, k, v, o, lse = qkv()
        q.strides = (2 * 5 * 64, 64, 5 * 64, 1)
        self.kernel.check(q, k, v, o, lse)

    def test_values_that_do_not_fit(self):
        # Shapes, strides, pointers and device indices come from Python
        # objects: out-of-range or non-int values are FlashTileErrors that
        # name the tensor, never OverflowError or TypeError.
        q, k, v, o, lse = qkv()
        q.shape = (1, 2**64, 2, 64)
        self.assertEqual(self.error(q, k, v, o, lse),
                         "q shape[1] = 18446744073709551616 does not fit in "
                         "64 bits")
        q, k, v, o, lse = qkv()
        k.strides = (448, 64, "64", 1)
        self.assertEqual(self.error(q, k, v, o, lse),
                         "k stride()[2] must be an int, got str")
        q, k, v, o, lse = qkv()
        v.shape = 7
        self.assertEqual(self.error(q, k, v, o, lse),
                         "v shape must be a sequence of ints, got int")
        q, k, v, o, lse = qkv()
        v.ptr = -16
        self.assertEqual(self.error(q, k, v, o, lse),
                         "v.data_ptr() = -16 is not an address (an int in "
                         "[0, 2^64))")
        q, k, v, o, lse = qkv()
        o.device = 2**40
        self.assertEqual(self.error(q, k, v, o, lse),
                         "o's device index 1099511627776 is not a device "
                         "ordinal")
        q, k, v, o, lse = qkv()
        with self.assertRaisesRegex(FlashTileError,
                                    r"^kernel index -1 is out of range \(1 "
                                    r"kernels\)$"):
            self.kernel.pack_params(-1, q, k, v, o, lse)

    def test_overlaps(self):
        q, k, v, o, lse = qkv()
        o.ptr = q.ptr
        self.assertRegex(self.error(q, k, v, o, lse),
                         r"^o overlaps q: o spans \[0x1000000, 0x1000500\) "
                         r"and q spans \[0x1000000, 0x1000500\)")
        q, k, v, o, lse = qkv()
        o.strides = (640, 128, 0, 1)
        self.assertEqual(
            self.error(q, k, v, o, lse),
            "o has overlapping elements (strides [640, 128, 0, 1] for shape "
            "[1, 5, 2, 64]); an output needs distinct addresses")

    def test_output_shapes(self):
        q, k, v, _, _ = qkv(b=2, sq=9, hq=4, sk=3, hkv=2)
        self.assertEqual(self.kernel.output_shapes(q, k, v),
                         [("o", (2, 9, 4, 64), "bf16"),
                          ("lse", (2, 4, 9), "f32")])
        with self.assertRaisesRegex(FlashTileError, "^missing input tensor v$"):
            self.kernel.output_shapes(q, k)

    def test_pack_params(self):
        q, k, v, o, lse = qkv()
        q.strides = (2 * 5 * 64, 64, 5 * 64, 1)
        slots = self.kernel.pack_params(0, q, k, v, o, lse, softmax_scale=0.5)
        self.assertEqual(slots[:5], [q.ptr, k.ptr, v.ptr, o.ptr, lse.ptr])
        self.assertEqual(slots[5:9], [5, 7, 2, 1])  # seqlens, heads
        self.assertEqual(slots[9:12], [640, 64, 320])  # q strides
        self.assertEqual(slots[-3:-1], [10, 5])  # lse strides
        self.assertEqual(slots[-1], 0x3F000000)  # 0.5f
        self.assertEqual(len(slots), len(self.kernel.kernels[0]["params"]))


class LaunchWithoutDriverTest(TempDirTest):
    def test_launch_fails_cleanly(self):
        kernel = self.load()
        q, k, v, o, lse = qkv()
        self.assertFalse(runtime.driver_available()[0])
        with self.assertRaisesRegex(FlashTileError,
                                    "^no CUDA driver: cannot load "
                                    "/nonexistent/libcuda.so"):
            kernel._impl.call((q, k, v, o, lse), {}, None, 0)
        # Argument errors come before the driver.
        with self.assertRaisesRegex(FlashTileError, "^missing output tensor o"):
            kernel._impl.call((q, k, v), {}, None, 0)

    def test_empty_problem_allocates_and_launches_nothing(self):
        kernel = self.load()
        q, k, v, _, _ = qkv(b=0)
        calls = []

        def allocate(shape, dtype, device, like):
            calls.append((shape, dtype, device))
            return FakeTensor(0, shape, dtype)
        o, lse = kernel._impl.call((q, k, v), {}, (lambda d: 0, allocate))
        self.assertEqual(calls, [((0, 5, 2, 64), "bf16", 0),
                                 ((0, 2, 5), "f32", 0)])
        self.assertEqual(o.shape, (0, 5, 2, 64))
        self.assertEqual(lse.dtype, "f32")


if __name__ == "__main__":
    unittest.main()
