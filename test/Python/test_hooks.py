"""flashtile.hooks: Python score_mod / mask_mod functions traced into attn IR.

Pure Python: captured tensors are stand-ins with a dtype and a shape (no
torch). Each traced kernel is also handed to flashtile-compile --emit=plan,
which parses and verifies it.

    PYTHONPATH=<build>/python_bindings python3 -m unittest test_hooks
"""

import os
import shutil
import subprocess
import tempfile
import unittest

import flashtile
from flashtile import FlashTileError
from flashtile.hooks import kernel_ir


class FakeTensor:
    """What tracing reads of a torch tensor: dtype, shape, data_ptr."""

    def __init__(self, dtype, shape):
        self.dtype = dtype
        self.shape = shape

    def data_ptr(self):
        return 0


def softcap(score, b, h, q_idx, kv_idx):
    return 50 * flashtile.tanh(score / 50)


SLOPES = FakeTensor("torch.float32", (32,))


def alibi(score, b, h, q_idx, kv_idx):
    return score + SLOPES[h] * (kv_idx - q_idx)


def make_document(doc):
    def document(b, h, q_idx, kv_idx):
        return doc[b, q_idx] == doc[b, kv_idx]
    return document


def make_prefix(prefix):
    def prefix_lm(b, h, q_idx, kv_idx):
        return (kv_idx <= q_idx) | (kv_idx < prefix)
    return prefix_lm


def chunked(b, h, q_idx, kv_idx):
    return q_idx // 1024 == kv_idx // 1024


BIAS = FakeTensor("torch.float32", (32, 32))


def t5(score, b, h, q_idx, kv_idx):
    rel = kv_idx - q_idx
    side = flashtile.where(rel > 0, 16, 0)
    n = abs(rel)
    far = 8 + flashtile.to_index(
        flashtile.log(flashtile.maximum(n, 8) / 8.0) / 2.5257287 * 8.0)
    return score + BIAS[h, side + flashtile.where(n < 8, n, flashtile.minimum(far, 15))]


def noop_mask(b, h, q_idx, kv_idx):
    return True


def inverted(b, h, q_idx, kv_idx):
    return ~(q_idx < kv_idx) & True


# attention-gym's block-diffusion mask: Python booleans and conditions.
def block_diffusion(b, h, q_idx, kv_idx):
    n, size = 256, 32
    x0_q, x0_kv = q_idx >= n, kv_idx >= n
    block_q = flashtile.where(x0_q, (q_idx - n) // size, q_idx // size)
    block_kv = flashtile.where(x0_kv, (kv_idx - n) // size, kv_idx // size)
    diagonal = (block_q == block_kv) & (x0_q == x0_kv)
    offset = (block_q > block_kv) & x0_kv & (x0_q == False)  # noqa: E712
    causal = (block_q >= block_kv) & x0_kv & x0_q
    return diagonal | offset | causal


BIAS0 = FakeTensor("torch.float32", ())
SCALE0 = FakeTensor("torch.float32", ())


def zero_dim_bias(score, b, h, q_idx, kv_idx):
    return score * SCALE0[()] + BIAS0


def tiny_constant(score, b, h, q_idx, kv_idx):
    return score + 1e-6 * flashtile.to_float(kv_idx)


def this_line(offset=0):
    import inspect
    frame = inspect.currentframe().f_back
    return f"{__file__}:{frame.f_lineno + offset}"


class TraceTest(unittest.TestCase):
    def test_softcap(self):
        ir, extras = kernel_ir("softcap", 128, score_mod=softcap, causal=True)
        self.assertEqual(extras, [])
        self.assertIn("attn.kernel @softcap arch(#attn.arch<sm_120>) {", ir)
        self.assertIn("{causal} :", ir)
        self.assertIn("^bb0(%score: f32, %b: index, %h: index, "
                      "%q_idx: index, %kv_idx: index):", ir)
        body = ["%0 = arith.constant 50.0 : f32",
                "%1 = arith.divf %score, %0 : f32",
                "%2 = math.tanh %1 : f32",
                "%3 = arith.mulf %0, %2 : f32",
                "attn.yield %3 : f32"]
        lines = [line.strip() for line in ir.splitlines()]
        start = lines.index(body[0])
        self.assertEqual(lines[start:start + len(body)], body)

    def test_captured_tensor_is_an_extra_argument(self):
        ir, extras = kernel_ir("alibi", 64, score_mod=alibi)
        self.assertEqual([e[:2] for e in extras], [("SLOPES", "tensor")])
        self.assertIs(extras[0][2], SLOPES)
        self.assertIn('attributes {arg_names = ["SLOPES"]}', ir)
        self.assertIn("%x0: memref<?xf32, strided<[?]>>)", ir)
        self.assertIn("memref.load %x0[%h] : memref<?xf32, strided<[?]>>", ir)
        # An index next to a float becomes a float, as in torch.
        self.assertIn("arith.sitofp", ir)

    def test_int_tensor_reads_are_indices(self):
        doc = FakeTensor("torch.int32", (2, 100))
        ir, extras = kernel_ir("docs", 128, mask_mod=make_document(doc))
        self.assertEqual([e[:2] for e in extras], [("doc", "tensor")])
        self.assertIn("memref.load %x0[%b, %q_idx] : "
                      "memref<?x?xi32, strided<[?, ?]>>", ir)
        self.assertIn("arith.index_cast %0 : i32 to index", ir)
        self.assertIn("arith.cmpi eq, %1, %3 : index", ir)
        self.assertIn("attn.yield %4 : i1", ir)

    def test_run_time_scalar(self):
        limit = flashtile.scalar(512)
        ir, extras = kernel_ir("prefix", 128, mask_mod=make_prefix(limit))
        self.assertEqual(extras, [("prefix", "scalar", limit, "prefix")])
        # Values are read at each call: a changed Scalar, a rebound capture.
        hook = make_prefix(limit)
        limit.value = 7
        self.assertEqual(flashtile.hooks.read_captures((hook,), extras),
                         {"prefix": 7})
        named = flashtile.scalar(3, name="prefix_len")
        ir, extras = kernel_ir("prefix", 128, mask_mod=make_prefix(named))
        self.assertIn('arg_names = ["prefix_len"]', ir)
        self.assertEqual(flashtile.hooks.read_captures(
            (make_prefix(flashtile.scalar(9)),), extras), {"prefix_len": 9})
        self.assertIn("%x0: i32)", ir)
        self.assertIn("arith.index_cast %x0 : i32 to index", ir)
        # A plain captured number is a constant.
        ir, extras = kernel_ir("prefix", 128, mask_mod=make_prefix(512))
        self.assertEqual(extras, [])
        self.assertIn("arith.constant 512 : index", ir)

    def test_size_functions_are_the_kernel_rules(self):
        # The sizes hooks read are the kernel rules' (the C++ list,
        # flashtile/ABI/KernelRules.h, through the runtime extension): each
        # function traces one of them, and each of them has its function.
        from flashtile import _runtime
        traced = set()
        for fn in (flashtile.seqlen_q, flashtile.seqlen_k, flashtile.heads_q,
                   flashtile.heads_kv, flashtile.batch_size):
            def score_mod(score, b, h, q, k, fn=fn):
                return score + flashtile.to_float(fn())
            ir, _ = kernel_ir("size", 64, score_mod=score_mod)
            traced.add(ir.split('attn.size "')[1].split('"')[0])
        self.assertEqual(traced, set(_runtime.SIZE_NAMES))

    def test_sizes_pow_and_two_hooks(self):
        def mod(score, b, h, q_idx, kv_idx):
            return score * flashtile.pow(2.0, flashtile.seqlen_k() - kv_idx)
        ir, _ = kernel_ir("both", 64, score_mod=mod, mask_mod=chunked,
                          window=(256, 0), scale=0.125, head_dim_v=32)
        self.assertIn('attn.size "seqlen_k" : index', ir)
        self.assertIn("math.powf", ir)
        self.assertIn("window_left = 256, window_right = 0, "
                      "softmax_scale = 0.125 : f32}", ir)
        self.assertIn("} mask_mod {", ir)
        self.assertIn("arith.floordivsi %q_idx, %0 : index", ir)
        self.assertIn("memref<?x?x?x32xbf16", ir)

    def test_index_mod_floors(self):
        # Python's and torch's %: (-3) % 5 is 2, where arith.remsi gives -3.
        # So a % b is a - (a // b) * b, with // the flooring division.
        def mod(score, b, h, q_idx, kv_idx):
            return score + flashtile.to_float((q_idx - kv_idx) % 5)
        ir, _ = kernel_ir("mod", 64, score_mod=mod)
        self.assertNotIn("remsi", ir)
        body = ir.split("score_mod {")[1]
        self.assertRegex(body, r"(%\w+) = arith.subi %q_idx, %kv_idx : index"
                         r"(.|\n)*(%\w+) = arith.floordivsi \1, (%\w+) : "
                         r"index(.|\n)*(%\w+) = arith.muli \3, \4 : index"
                         r"(.|\n)*arith.subi \1, \6 : index")

    def test_sink(self):
        sinks = FakeTensor("torch.float32", (8,))

        def sink(b, h):
            return sinks[h]
        ir, extras = kernel_ir("sinks", 64, causal=True, sink=sink)
        self.assertEqual([e[:2] for e in extras], [("sinks", "tensor")])
        self.assertIn("memref<?x?x?xf32> sink {", ir)
        self.assertIn("^bb0(%b: index, %h: index):", ir)
        self.assertIn("memref.load %x0[%h] : memref<?xf32, strided<[?]>>", ir)

    def test_python_booleans(self):
        # torch's noop_mask and masks that combine Python booleans: the
        # constant has no `: i1` (the parser refuses one after `true`).
        ir, _ = kernel_ir("k", 64, mask_mod=noop_mask)
        self.assertIn("arith.constant true\n", ir)
        self.assertNotIn("true : i1", ir)
        ir, _ = kernel_ir("k", 64, mask_mod=inverted)
        self.assertIn("arith.xori", ir)

    def test_float_literals_parse(self):
        from flashtile.hooks import _float_literal
        self.assertEqual(_float_literal(1e-6), "1.0e-06")
        self.assertEqual(_float_literal(30), "30.0")
        self.assertEqual(_float_literal(2.5e20), "2.5e+20")
        self.assertEqual(_float_literal(float("-inf")), "0xFF800000")

    def test_zero_dim_capture(self):
        ir, extras = kernel_ir("k", 64, score_mod=zero_dim_bias)
        self.assertIn("%x0: memref<f32>, %x1: memref<f32>", ir)
        self.assertIn("memref.load %x1[] : memref<f32>", ir)
        self.assertEqual([e[0] for e in extras], ["SCALE0", "BIAS0"])

    def test_tracing_is_deterministic(self):
        first = kernel_ir("t5", 128, score_mod=t5)[0]
        self.assertEqual(first, kernel_ir("t5", 128, score_mod=t5)[0])


class ErrorTest(unittest.TestCase):
    def assertErrorAt(self, line, text, fn):
        with self.assertRaises(FlashTileError) as e:
            fn()
        message = str(e.exception)
        if line:
            self.assertTrue(message.startswith(line + ": "), message)
        self.assertIn(text, message)

    def test_python_control_flow_on_a_hook_value(self):
        def branchy(score, b, h, q_idx, kv_idx):
            if score > 0:  # the error points here
                return score
            return -score
        line = f"{__file__}:{branchy.__code__.co_firstlineno + 1}"
        self.assertErrorAt(line, "use flashtile.where",
                           lambda: kernel_ir("k", 64, score_mod=branchy))

    def test_wrong_return_types(self):
        bad = self.bad_mask()
        self.assertErrorAt(f"{__file__}:{bad.__code__.co_firstlineno}",
                           "mask_mod bad must return a condition",
                           lambda: kernel_ir("k", 64, mask_mod=bad))
        self.assertErrorAt(None, "got f32",
                           lambda: kernel_ir("k", 64, mask_mod=bad))
        self.assertErrorAt(None, "returned None",
                           lambda: kernel_ir("k", 64,
                                             score_mod=lambda *a: None))

    def test_wrong_signatures(self):
        def causal(b, h, q_idx, kv_idx):
            return q_idx >= kv_idx
        line = f"{__file__}:{causal.__code__.co_firstlineno}"
        self.assertErrorAt(line, "score_mod causal must take (score, b, h, "
                           "q_idx, kv_idx); it takes 4 arguments, as a "
                           "mask_mod does: was it meant as mask_mod=?",
                           lambda: kernel_ir("k", 64, score_mod=causal))
        self.assertErrorAt(None, "mask_mod must be a Python function",
                           lambda: kernel_ir("k", 64, mask_mod=42))
        self.assertErrorAt(None, "mask_mod <lambda> must take (b, h, q_idx, "
                           "kv_idx)", lambda: kernel_ir(
                               "k", 64, mask_mod=lambda b, h, q: q > 0))

    def test_python_math_names_the_hook_function(self):
        import math

        def capped(score, b, h, q_idx, kv_idx):
            return 30 * math.tanh(score / 30)
        line = f"{__file__}:{capped.__code__.co_firstlineno + 1}"
        self.assertErrorAt(line, "Python's math.tanh cannot take it; use "
                           "flashtile.tanh",
                           lambda: kernel_ir("k", 64, score_mod=capped))

    def test_error_inside_torch_points_at_the_user_line(self):
        # A torch function that reaches __torch_function__ from torch's own
        # files (F.gelu -> torch/overrides.py): the error names the user's
        # line, not torch's.
        namespace = {}
        exec(compile("def gelu(x):\n"
                     "    return type(x).__torch_function__(gelu, (), (x,))\n",
                     "/site-packages/torch/nn/functional.py", "exec"),
             namespace)
        gelu = namespace["gelu"]

        def activated(score, b, h, q_idx, kv_idx):
            return gelu(score)
        line = f"{__file__}:{activated.__code__.co_firstlineno + 1}"
        self.assertErrorAt(line, "torch.gelu is not supported in hooks",
                           lambda: kernel_ir("k", 64, score_mod=activated))

    def test_unset_capture_names_captures(self):
        global UNSET
        UNSET = None

        def lengths(b, h, q_idx, kv_idx):
            return kv_idx < UNSET[b]
        line = f"{__file__}:{lengths.__code__.co_firstlineno + 1}"
        self.assertErrorAt(line, "UNSET is None while the hook is traced",
                           lambda: kernel_ir("k", 64, mask_mod=lengths))
        self.assertErrorAt(None, "`captures`",
                           lambda: kernel_ir("k", 64, mask_mod=lengths))
        ir, extras = kernel_ir("k", 64, mask_mod=lengths, captures={
            "UNSET": flashtile.TensorSpec("int32", 1)})
        self.assertIn("memref<?xi32, strided<[?]>>", ir)

    def bad_mask(self):
        def bad(b, h, q_idx, kv_idx):
            return flashtile.to_float(q_idx)
        return bad

    def test_tensor_misuse(self):
        table = FakeTensor("torch.float32", (4, 4))

        def one_index(score, b, h, q_idx, kv_idx):
            return score + table[h]
        line = f"{__file__}:{one_index.__code__.co_firstlineno + 1}"
        self.assertErrorAt(line, "tensor table has 2 dimension(s), read with "
                           "1 index(es)",
                           lambda: kernel_ir("k", 64, score_mod=one_index))
        half = FakeTensor("torch.float16", (4,))

        def reads_half(score, b, h, q_idx, kv_idx):
            return score + half[h]
        self.assertErrorAt(None, "hook tensor half has dtype torch.float16",
                           lambda: kernel_ir("k", 64, score_mod=reads_half))

        def float_index(score, b, h, q_idx, kv_idx):
            return score + table[h, score]
        self.assertErrorAt(None, "is indexed by an f32",
                           lambda: kernel_ir("k", 64, score_mod=float_index))

    def test_outside_tracing_and_bad_scalars(self):
        self.assertErrorAt(this_line(1), "work only while a hook is traced",
                           lambda: flashtile.tanh(1.0))
        with self.assertRaises(FlashTileError):
            flashtile.scalar("x")
        self.assertErrorAt(None, "dtype must be one of 'f16', 'bf16', got "
                           "'f32'",
                           lambda: kernel_ir("k", 64, dtype="f32"))


@unittest.skipIf(shutil.which("flashtile-compile") is None,
                 "no flashtile-compile on PATH")
class CompilerAcceptsTest(unittest.TestCase):
    def test_every_example_compiles_to_a_plan(self):
        doc = FakeTensor("torch.int32", (2, 100))
        cases = {"softcap": dict(score_mod=softcap, causal=True),
                 "alibi": dict(score_mod=alibi),
                 "document": dict(mask_mod=make_document(doc), causal=True),
                 "prefix": dict(mask_mod=make_prefix(flashtile.scalar(8))),
                 "chunked": dict(mask_mod=chunked, causal=True),
                 "t5": dict(score_mod=t5),
                 "noop": dict(mask_mod=noop_mask),
                 "inverted": dict(mask_mod=inverted),
                 "block_diffusion": dict(mask_mod=block_diffusion),
                 "zero_dim": dict(score_mod=zero_dim_bias),
                 "tiny_constant": dict(score_mod=tiny_constant)}
        with tempfile.TemporaryDirectory() as tmp:
            for name, kw in cases.items():
                path = os.path.join(tmp, name + ".mlir")
                with open(path, "w") as f:
                    f.write(kernel_ir(name, 128, **kw)[0])
                proc = subprocess.run(
                    ["flashtile-compile", path, "--emit=plan"],
                    capture_output=True, text=True)
                self.assertEqual(proc.returncode, 0, proc.stderr)
                self.assertIn(f"kernel @{name}", proc.stdout)


if __name__ == "__main__":
    unittest.main()
