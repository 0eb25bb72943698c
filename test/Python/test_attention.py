"""flashtile.attention's Python side without torch or a GPU: which kernel a
call gets (the in-memory memo of traced hooks) and which tensors it passes
(captures bound per call). The compiler and the runtime are replaced by
fakes that record the traced IR and the launch arguments.

    PYTHONPATH=<build>/python_bindings python3 -m unittest test_attention
"""

import importlib
import unittest

import flashtile
from flashtile import FlashTileError
from flashtile import compiler as ftc
from flashtile import _seqlens

# The module (flashtile.attention the name is the function).
fa = importlib.import_module("flashtile.attention")


class FakeDevice:
    type = "cuda"
    index = 0


class FakeTensor:
    """What flashtile.attention reads of a torch tensor."""

    def __init__(self, shape, dtype="torch.bfloat16"):
        self.shape = tuple(shape)
        self.dtype = dtype
        self.is_cuda = True
        self.device = FakeDevice()

    def get_device(self):
        return 0

    def dim(self):
        return len(self.shape)

    def data_ptr(self):
        return 0

    def transpose(self, a, b):
        shape = list(self.shape)
        shape[a], shape[b] = shape[b], shape[a]
        return FakeTensor(shape, self.dtype)


class FakeLaunch:
    def __init__(self, record):
        self.record = record

    def __call__(self, *args, **kwargs):
        self.record.launches.append(kwargs)
        if self.record.during_launch:
            hook, self.record.during_launch = self.record.during_launch, None
            hook()
        return FakeTensor((1, 1, 1, 1)), None


class FakeCompiled:
    def __init__(self, request, record):
        self.extras = request.extras
        self.ir = request.ir
        self.kernel = FakeLaunch(record)

    def runtime_kernel(self):
        return self.kernel


class Recorder:
    """Stands in for compile_request: records each traced IR compiled."""

    def __init__(self):
        self.compiled = []
        self.launches = []
        self.during_compile = None
        self.during_launch = None

    def __call__(self, request, cache=None, verbose=None):
        self.compiled.append(request.ir)
        if self.during_compile:
            hook, self.during_compile = self.during_compile, None
            hook()
        return FakeCompiled(request, self)


class FakeCallsTest(unittest.TestCase):
    def setUp(self):
        self.record = Recorder()
        self.saved = ftc.compile_request
        ftc.compile_request = self.record
        fa._archs[0] = "sm_90"
        self.forget()

    def tearDown(self):
        ftc.compile_request = self.saved
        self.forget()
        fa._archs.pop(0, None)

    @staticmethod
    def forget():
        """Empties the in-memory kernel memos."""
        for memo in ("_compiled", "_traced"):
            getattr(fa, memo, {}).clear()

    def qkv(self, sq=128, sk=128, h=4):
        return (FakeTensor((1, h, sq, 64)), FakeTensor((1, h, sk, 64)),
                FakeTensor((1, h, sk, 64)))


class StaleKernelTest(FakeCallsTest):
    """A hook whose captured constant changes gets a new kernel
    (PyTorch's test_recompile_changed_score_mod flips ADD)."""

    def test_changed_closure_constant_recompiles(self):
        add = True

        def score_mod(score, b, h, q_idx, kv_idx):
            return score + 1.0 if add else score * 2.0

        q, k, v = self.qkv()
        fa.attention(q, k, v, score_mod=score_mod)
        fa.attention(q, k, v, score_mod=score_mod)
        self.assertEqual(len(self.record.compiled), 1)  # memoized
        add = False
        fa.attention(q, k, v, score_mod=score_mod)
        self.assertEqual(len(self.record.compiled), 2)
        self.assertIn("arith.addf", self.record.compiled[0])
        self.assertIn("arith.mulf", self.record.compiled[1])
        self.assertNotIn("arith.addf", self.record.compiled[1])
        add = True  # back: the first kernel again, not a third compile
        fa.attention(q, k, v, score_mod=score_mod)
        self.assertEqual(len(self.record.compiled), 2)

    def test_changed_global_and_helper_recompile(self):
        q, k, v = self.qkv()
        global BIAS
        BIAS = 0.5
        fa.attention(q, k, v, score_mod=_biased)
        BIAS = 0.25
        fa.attention(q, k, v, score_mod=_biased)
        self.assertEqual(len(self.record.compiled), 2)
        self.assertIn("0.5", self.record.compiled[0])
        self.assertIn("0.25", self.record.compiled[1])

    def test_unguardable_capture_is_traced_each_call(self):
        class Config:
            scale = 3.0
        config = Config()

        def score_mod(score, b, h, q_idx, kv_idx):
            return score * config.scale

        q, k, v = self.qkv()
        fa.attention(q, k, v, score_mod=score_mod)
        config.scale = 5.0
        fa.attention(q, k, v, score_mod=score_mod)
        self.assertEqual(len(self.record.compiled), 2)
        self.assertIn("3.0", self.record.compiled[0])
        self.assertIn("5.0", self.record.compiled[1])
        fa.attention(q, k, v, score_mod=score_mod)  # the IR finds it
        self.assertEqual(len(self.record.compiled), 2)

    def test_dtypes_come_from_the_kernel_rules(self):
        q, k, v = self.qkv()
        q.dtype = "torch.float32"
        with self.assertRaises(FlashTileError) as e:
            fa.attention(q, k, v)
        self.assertIn("q has dtype torch.float32; flashtile.attention takes "
                      "float16 or bfloat16", str(e.exception))
        self.assertEqual(flashtile.hooks.attention_dtypes(), ("f16", "bf16"))

    def test_window_must_be_a_pair(self):
        q, k, v = self.qkv()
        with self.assertRaises(FlashTileError) as e:
            fa.attention(q, k, v, window=512)
        self.assertIn("window must be a (left, right) pair", str(e.exception))
        self.assertIn("window=(512, 0)", str(e.exception))


BIAS = 0.5


def _bias():
    return BIAS


def _biased(score, b, h, q_idx, kv_idx):
    return score + _bias()


class PerCallBindingTest(FakeCallsTest):
    """flashtile.decode's cache lengths reach the kernel per call: a second
    call that runs in the middle of the first (another thread) cannot swap
    them."""

    def test_interleaved_calls_keep_their_lengths(self):
        q, kc, vc = (FakeTensor((2, 1, 4, 64)), FakeTensor((2, 256, 4, 64)),
                     FakeTensor((2, 256, 4, 64)))
        mine = FakeTensor((2,), "torch.int32")
        theirs = FakeTensor((2,), "torch.int32")

        def other_thread():
            flashtile.decode(q, kc, vc, cache_seqlens=theirs)

        self.record.during_compile = other_thread
        flashtile.decode(q, kc, vc, cache_seqlens=mine)
        # The nested call launched first, then this one: each with its own.
        self.assertEqual(len(self.record.launches), 2)
        self.assertIs(self.record.launches[0]["cache_seqlens"], theirs)
        self.assertIs(self.record.launches[1]["cache_seqlens"], mine)
        self.assertIsNone(_seqlens.cache_seqlens)  # no module global is set

    def test_sinks_are_bound_per_call(self):
        q, k, v = self.qkv(sq=512)
        mine = FakeTensor((4,), "torch.float32")
        theirs = FakeTensor((4,), "torch.float32")
        self.record.during_compile = lambda: fa.attention(q, k, v,
                                                          sinks=theirs)
        fa.attention(q, k, v, sinks=mine)
        self.assertIs(self.record.launches[0]["sinks"], theirs)
        self.assertIs(self.record.launches[1]["sinks"], mine)


if __name__ == "__main__":
    unittest.main()
