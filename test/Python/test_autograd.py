"""flashtile.attention's autograd on the CPU, with torch: the compiler and
the runtime are replaced by torch stand-ins for the plans' contracts, so
that what is tested is the Python layer (flashtile/_autograd.py): which
tensors reach the backward family, in which layout, with which scale and
extra arguments; GQA; the sinks' gradient; the deterministic switch; what
raises.

* The forward stand-in computes O and the LSE in float64 from the kernel's
  (B, S, H, D) arguments (ftgpu.reference.attention, the GPU checks'
  reference), the hooks run on tensors.
* The backward stand-in computes dQ, dK, dV as the backward family does
  (FlashAttention-2's formulas from the given O, LSE and dO: P =
  exp(f(scale s) - LSE), D = rowsum(dO O), dS = P (dP - D) f' scale, GQA
  summed over the group), and checks that every extra argument of the
  forward reached it, as the runtime would.
* The user-level gradients are compared with float64 autograd through the
  reference (sinks included), which shares no code with the stand-ins'
  gradient formulas.

    PYTHONPATH=<build>/python_bindings python3 -m unittest test_autograd
"""

import importlib
import os
import sys
import unittest

import torch

import flashtile
from flashtile import FlashTileError
from flashtile import compiler as ftc

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "tools", "gpu"))
import ftgpu.reference  # noqa: E402

fa = importlib.import_module("flashtile.attention")
autograd = importlib.import_module("flashtile._autograd")

SLOPES = None  # captured by alibi


def softcap(score, b, h, q_idx, kv_idx):
    return 20 * flashtile.tanh(score / 20)


def alibi(score, b, h, q_idx, kv_idx):
    return score + SLOPES[h] * (kv_idx - q_idx)


def document(b, h, q_idx, kv_idx):
    return (q_idx // 7) == (kv_idx // 7)


class bound:
    """Binds, while active, the globals the spec's hooks capture to the
    call's arguments (`extras`: kernel_ir's list), as the kernels read them:
    the package's own hooks (flashtile.varlen's) are bound per call."""

    def __init__(self, spec, extras, kwargs):
        self.saved = []
        for fn in (spec.score_mod, spec.mask_mod, spec.sink):
            for name, kind, traced, variable in extras:
                if fn is not None and variable in fn.__globals__:
                    self.saved.append((fn.__globals__, variable,
                                       fn.__globals__[variable]))
                    value = kwargs[name]
                    if getattr(value, "dtype", None) == torch.int32:
                        value = value.long()  # an index, to torch
                    fn.__globals__[variable] = value

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for scope, variable, value in reversed(self.saved):
            scope[variable] = value


def reference(q, k, v, kwargs, spec):
    """float64 O and LSE of the kernel's (B, S, H, D) arguments."""
    scale = kwargs.get("softmax_scale", spec.scale)
    return ftgpu.reference.attention(
        *(x.transpose(1, 2) for x in (q, k, v)), scale, causal=spec.causal,
        window=spec.window or (-1, -1), score_mod=spec.score_mod,
        mask_mod=spec.mask_mod, sinks=kwargs.get("sinks"))


class Forward:
    def __init__(self, spec, extras):
        self.spec, self.extras = spec, extras

    def __call__(self, q, k, v, **kwargs):
        with bound(self.spec, self.extras, kwargs):
            o, lse = reference(q, k, v, kwargs, self.spec)
        return o.transpose(1, 2).to(q.dtype), lse.float()


class Backward:
    """The backward family's contract, by FlashAttention-2's formulas."""

    def __init__(self, spec, extras, record):
        self.spec, self.extras, self.record = spec, extras, record
        # The plan's gradients of captured tensors, as BuildBackward names
        # them, role accumulate.
        self.arguments = [{"name": name + "_grad", "role": "accumulate"}
                          for name in spec.tensor_grads]

    def __call__(self, q, k, v, o, lse, do, **kwargs):
        self.record.backward_calls.append(kwargs)
        for name, kind, *_ in self.extras:
            if name not in kwargs:
                raise FlashTileError(f"argument '{name}' is missing")
        spec = self.spec
        scale = kwargs.get("softmax_scale", spec.scale)
        if scale is None:
            scale = q.shape[-1] ** -0.5
        qd, kd, vd, od, dod = (x.double().transpose(1, 2)
                               for x in (q, k, v, o, do))
        group = qd.shape[1] // kd.shape[1]
        ke, ve = (x.repeat_interleave(group, 1) for x in (kd, vd))
        B, Hq, Sq, _ = qd.shape
        Sk = kd.shape[2]
        raw = (qd @ ke.transpose(-1, -2)) * scale
        idx = (torch.arange(B).view(-1, 1, 1, 1),
               torch.arange(Hq).view(1, -1, 1, 1),
               torch.arange(Sq).view(1, 1, -1, 1),
               torch.arange(Sk).view(1, 1, 1, -1))
        x = raw.detach().requires_grad_()
        # The tensors whose gradients the plan adds into <name>_grad, as
        # float64 leaves the hook reads.
        leaves = {name: kwargs[name].detach().double().requires_grad_()
                  for name in spec.tensor_grads}
        with torch.enable_grad(), bound(spec, self.extras,
                                        dict(kwargs, **leaves)):
            s = spec.score_mod(x, *idx) if spec.score_mod else x * 1.0
            (fprime,) = torch.autograd.grad(s.sum(), x, retain_graph=True)
            keep = ftgpu.reference.visible(Sq, Sk, spec.causal,
                                           spec.window or (-1, -1))
            if spec.mask_mod is not None:
                keep = keep & spec.mask_mod(*idx)
            p = torch.exp(s.detach() - lse.double()[..., None])
            p = torch.where(keep, p, torch.zeros_like(p))
            dp = dod @ ve.transpose(-1, -2)
            d = (dod * od).sum(-1, keepdim=True)
            seed = p * (dp - d)
            for name, leaf in leaves.items():
                (g,) = torch.autograd.grad((s * seed).sum(), leaf,
                                           retain_graph=True,
                                           allow_unused=True)
                if g is not None:
                    kwargs[name + "_grad"].add_(g.float())
                if name == "sinks":  # what the preprocess kernel adds
                    share = torch.exp(leaf.detach().view(1, -1, 1) -
                                      lse.double())
                    kwargs[name + "_grad"].add_(
                        -(share * d[..., 0]).sum((0, 2)).float())
        ds = seed * fprime * scale
        dq = ds @ ke
        dk = (ds.transpose(-1, -2) @ qd).view(B, -1, group, Sk, qd.shape[-1])
        dv = (p.transpose(-1, -2) @ dod).view(B, -1, group, Sk, vd.shape[-1])
        return (dq.transpose(1, 2).to(q.dtype),
                dk.sum(2).transpose(1, 2).to(k.dtype),
                dv.sum(2).transpose(1, 2).to(v.dtype))


class FakeCompiled:
    def __init__(self, request, record):
        self.extras = request.extras
        self.spec = request.spec
        self.key = request.ir + repr(sorted(request.pins.items()))
        self.record = record
        if self.spec.direction == "bwd":
            self.kernel = Backward(self.spec, self.extras, record)
        else:
            self.kernel = Forward(self.spec, self.extras)

    def runtime_kernel(self):
        return self.kernel

    def backward(self, deterministic=False, verbose=None, tensor_grads=()):
        return ftc.CompiledKernel.backward(self, deterministic, verbose,
                                           tensor_grads)

    @property
    def path(self):
        return "/cache/xx/" + str(abs(hash(self.key)))


class Recorder:
    """Stands in for compile_request."""

    def __init__(self):
        self.specs = []
        self.backward_calls = []
        self.refuse = None  # a score_mod whose backward the fake refuses

    def __call__(self, request, cache=None, verbose=None):
        self.specs.append(request.spec)
        if (request.spec.direction == "bwd" and self.refuse is not None and
                request.spec.score_mod is self.refuse):
            raise FlashTileError("the backward does not cover this hook")
        return FakeCompiled(request, self)


def rel(out, ref):
    return ((out.double() - ref).abs().max() / ref.abs().max()).item()


class StandInTest(unittest.TestCase):
    """The stand-ins in place of the compiler and the runtime."""

    def setUp(self):
        self.record = Recorder()
        self.saved = (ftc.compile_request, fa._check)
        ftc.compile_request = self.record
        fa._check = lambda q, k, v: {torch.bfloat16: "bf16",
                                     torch.float16: "f16"}[q.dtype]
        fa._archs[-1] = "sm_90"
        self.forget()
        self.gen = torch.Generator().manual_seed(0)

    def tearDown(self):
        ftc.compile_request, fa._check = self.saved
        fa._archs.pop(-1, None)
        self.forget()
        torch.use_deterministic_algorithms(False)

    @staticmethod
    def forget():
        fa._compiled.clear()
        fa._traced.clear()
        autograd._backwards.clear()

    def rand(self, *shape, grad=True):
        x = torch.randn(*shape, generator=self.gen).to(torch.bfloat16)
        return x.requires_grad_(grad)

    def check(self, q, k, v, sinks=None, tolerance=2e-2, tensors=(),
              **kwargs):
        """flashtile.attention's gradients against float64 autograd; those
        of the captured `tensors` (module globals the hook reads) too."""
        do = self.rand(*q.shape[:3], v.shape[-1], grad=False)
        out = flashtile.attention(q, k, v, sinks=sinks, **kwargs)
        self.assertIsNotNone(out.grad_fn)
        out.backward(do)
        inputs = [x.detach().double().requires_grad_() for x in (q, k, v)]
        if sinks is not None:
            inputs.append(sinks.detach().double().requires_grad_())
        # The reference reads float64 twins of the captured tensors.
        names = [n for n, value in globals().items()
                 if any(value is t for t in tensors)]
        saved = {n: globals()[n] for n in names}
        twins = [globals()[n].detach().double().requires_grad_()
                 for n in names]
        globals().update(zip(names, twins))
        try:
            ref, _ = ftgpu.reference.attention(
                *inputs[:3], kwargs.get("scale"),
                causal=kwargs.get("causal", False),
                score_mod=kwargs.get("score_mod"),
                mask_mod=kwargs.get("mask_mod"),
                sinks=inputs[3] if sinks is not None else None)
            grads = torch.autograd.grad(ref, inputs + twins, do.double())
        finally:
            globals().update(saved)
        targets = [q, k, v] + ([sinks] if sinks is not None else []) + [
            saved[n] for n in names]
        for x, g in zip(targets, grads):
            self.assertIsNotNone(x.grad)
            self.assertEqual(x.grad.shape, x.shape)
            self.assertLess(rel(x.grad, g), tolerance)


class AutogradTest(StandInTest):
    def test_gqa_causal_with_a_scale(self):
        # (B, H, S, D) in SDPA's layout; GQA 4/2; Sq != Sk; the scale
        # reaches the backward as softmax_scale.
        q, k, v = (self.rand(2, 4, 37, 16), self.rand(2, 2, 53, 16),
                   self.rand(2, 2, 53, 8))
        self.check(q, k, v, causal=True, scale=0.3)
        self.assertEqual(self.record.backward_calls[-1]["softmax_scale"], 0.3)
        # The backward is the forward's spec, direction "bwd".
        bwd = [s for s in self.record.specs if s.direction == "bwd"]
        self.assertEqual(len(bwd), 1)
        self.assertTrue(bwd[0].causal)
        self.assertFalse(bwd[0].deterministic)

    def test_score_mod(self):
        q, k, v = (self.rand(1, 2, 20, 16), self.rand(1, 2, 20, 16),
                   self.rand(1, 2, 20, 16))
        self.check(q, k, v, score_mod=softcap)

    def test_captured_tensors_reach_the_backward(self):
        global SLOPES
        SLOPES = torch.rand(4, generator=self.gen) * -0.5
        q, k, v = (self.rand(1, 4, 24, 16), self.rand(1, 2, 24, 16),
                   self.rand(1, 2, 24, 16))
        self.check(q, k, v, causal=True, score_mod=alibi)
        self.assertIs(self.record.backward_calls[-1]["SLOPES"], SLOPES)
        # One that requires grad gets its gradient: the backward family is
        # built with tensor_grads, and the plan adds it into SLOPES_grad.
        SLOPES = SLOPES.clone().requires_grad_()
        for x in (q, k, v):
            x.grad = None
        self.check(q, k, v, causal=True, score_mod=alibi, tensors=[SLOPES])
        bwd = [s for s in self.record.specs if s.direction == "bwd"]
        self.assertEqual(bwd[-1].tensor_grads, ("SLOPES",))
        self.assertIn("SLOPES_grad", self.record.backward_calls[-1])
        # Without a gradient wanted, it is read as any tensor.
        with torch.no_grad():
            flashtile.attention(q, k, v, score_mod=alibi)

    def test_mask_mod(self):
        q, k, v = (self.rand(1, 2, 30, 16), self.rand(1, 2, 30, 16),
                   self.rand(1, 2, 30, 16))
        self.check(q, k, v, causal=True, mask_mod=document)

    def test_sinks_get_their_gradient(self):
        # The kernels' dQ, dK, dV from the LSE that counts the sink, and
        # the sinks' own gradient from the plan's sinks_grad (tensor_grads).
        q, k, v = (self.rand(2, 4, 19, 16), self.rand(2, 2, 19, 16),
                   self.rand(2, 2, 19, 16))
        sinks = torch.randn(4, generator=self.gen).requires_grad_()
        self.check(q, k, v, sinks=sinks, causal=True)
        bwd = [s for s in self.record.specs if s.direction == "bwd"]
        self.assertEqual(bwd[-1].tensor_grads, ("sinks",))
        # Only the sinks want a gradient: the Function still runs.
        q2, k2, v2 = (x.detach() for x in (q, k, v))
        sinks.grad = None
        flashtile.attention(q2, k2, v2, sinks=sinks, causal=True).sum().backward()
        self.assertIsNotNone(sinks.grad)

    def test_varlen(self):
        lens_q, lens_k = [5, 1, 12], [5, 9, 12]
        q, k, v = (self.rand(sum(lens_q), 4, 16), self.rand(sum(lens_k), 2, 16),
                   self.rand(sum(lens_k), 2, 16))
        cu_q = torch.tensor([0] + lens_q).cumsum(0).to(torch.int32)
        cu_k = torch.tensor([0] + lens_k).cumsum(0).to(torch.int32)
        do = self.rand(sum(lens_q), 4, 16, grad=False)
        flashtile.varlen(q, k, v, cu_q, cu_k, causal=True).backward(do)
        for i in range(len(lens_q)):
            sq = slice(int(cu_q[i]), int(cu_q[i + 1]))
            sk = slice(int(cu_k[i]), int(cu_k[i + 1]))
            inputs = [x.detach()[sq if x is q else sk].double().transpose(0, 1)
                      [None].requires_grad_() for x in (q, k, v)]
            ref, _ = ftgpu.reference.attention(*inputs, causal=True)
            grads = torch.autograd.grad(
                ref, inputs, do[sq].double().transpose(0, 1)[None])
            for x, g, rows in zip((q, k, v), grads, (sq, sk, sk)):
                self.assertLess(rel(x.grad[rows], g[0].transpose(0, 1)), 2e-2)

    def test_deterministic_switch(self):
        q, k, v = (self.rand(1, 2, 8, 16), self.rand(1, 2, 8, 16),
                   self.rand(1, 2, 8, 16))
        flashtile.attention(q, k, v, deterministic=True).sum().backward()
        torch.use_deterministic_algorithms(True)
        flashtile.attention(q, k, v, causal=True).sum().backward()
        bwd = [s for s in self.record.specs if s.direction == "bwd"]
        self.assertEqual([s.deterministic for s in bwd], [True, True])

    def test_no_grad_needs_no_backward(self):
        q, k, v = (self.rand(1, 2, 8, 16), self.rand(1, 2, 8, 16),
                   self.rand(1, 2, 8, 16))
        with torch.no_grad():
            out = flashtile.attention(q, k, v)
        self.assertIsNone(out.grad_fn)
        out = flashtile.attention(*(x.detach() for x in (q, k, v)))
        self.assertIsNone(out.grad_fn)
        self.assertEqual([s.direction for s in self.record.specs], ["fwd"])

    def test_which_captures_the_torch_op_differentiates(self):
        # The custom op's second backward plan derives every captured
        # float tensor (TorchOp; torch_ops itself needs torch >= 2.4): the
        # captures that can require grad, and those a call wants.
        self.assertTrue(autograd.is_float_capture(torch.zeros(3)))
        self.assertTrue(autograd.is_float_capture(
            torch.zeros(3, dtype=torch.bfloat16)))
        self.assertFalse(autograd.is_float_capture(
            torch.zeros(3, dtype=torch.int32)))
        self.assertEqual(autograd.tensors_wanting_grad(
            {"table": torch.zeros(3, requires_grad=True),
             "doc": torch.zeros(3, dtype=torch.int32),
             "slopes": torch.zeros(2)}), ("table",))

    def test_lse_is_not_differentiable(self):
        q, k, v = (self.rand(1, 2, 8, 16), self.rand(1, 2, 8, 16),
                   self.rand(1, 2, 8, 16))
        out, lse = flashtile.attention(q, k, v, return_lse=True)
        self.assertTrue(out.requires_grad)
        self.assertFalse(lse.requires_grad)

    def test_what_has_no_backward_raises_at_backward(self):
        q, k, v = (self.rand(1, 2, 8, 16), self.rand(1, 2, 8, 16),
                   self.rand(1, 2, 8, 16))
        self.record.refuse = softcap
        out = flashtile.attention(q, k, v, score_mod=softcap)  # no error yet
        with self.assertRaises(FlashTileError) as e:
            out.sum().backward()
        self.assertIn("no backward for this attention", str(e.exception))
        self.assertIn("does not cover this hook", str(e.exception))
        self.assertIn("torch.no_grad()", str(e.exception))
        # The decode call is inference only.
        out = flashtile.decode(*(x.transpose(1, 2) for x in (q, k, v)))
        with self.assertRaises(FlashTileError) as e:
            out.sum().backward()
        self.assertIn("inference call", str(e.exception))


class Module:
    """What flashtile.hf reads of a transformers attention layer."""

    def __init__(self, training=True, is_causal=True):
        self.training, self.is_causal = training, is_causal


class HfTest(StandInTest):
    """flashtile.hf.attention_forward, transformers' attention interface."""

    def run_hf(self, q, k, v, mask=None, **kwargs):
        hf = importlib.import_module("flashtile.hf")
        out, weights = hf.attention_forward(Module(), q, k, v, mask, **kwargs)
        self.assertIsNone(weights)
        return out

    def test_padding_mask_and_its_gradients(self):
        # A left-padded batch: row 0 keeps every key, row 1 drops its first
        # 5 (a bool mask, causal included, over a longer static cache).
        B, Hq, Hkv, S, D = 2, 4, 2, 16, 16
        q, k, v = (self.rand(B, Hq, S, D), self.rand(B, Hkv, S, D),
                   self.rand(B, Hkv, S, D))
        keep = torch.ones(B, 1, S, S, dtype=torch.bool).tril()
        keep[1, :, :, :5] = False
        longer = torch.cat([keep, torch.zeros(B, 1, S, 3, dtype=torch.bool)],
                           -1)
        out = self.run_hf(q, k, v, longer, scaling=0.25)
        self.assertEqual(out.shape, (B, S, Hq, D))  # (B, Sq, Hq, Dv)
        do = self.rand(B, S, Hq, D, grad=False)
        out.backward(do)
        inputs = [x.detach().double().requires_grad_() for x in (q, k, v)]
        ref, _ = ftgpu.reference.attention(
            *inputs, 0.25, causal=True,
            mask_mod=lambda b, h, i, j: keep[b, 0, i, j])
        grads = torch.autograd.grad(ref, inputs, do.double().transpose(1, 2))
        self.assertLess(rel(out.transpose(1, 2), ref), 2e-2)
        for x, g in zip((q, k, v), grads):
            self.assertLess(rel(x.grad, g), 2e-2)
        # The mask reached both plans as an int32 tensor.
        self.assertEqual(self.record.backward_calls[-1]["mask"].dtype,
                         torch.int32)

    def test_additive_mask_is_added(self):
        # An additive float mask with a bias in it is added to the scores,
        # after the softcap, as eager attention does.
        B, H, S, D = 1, 2, 12, 16
        q, k, v = (self.rand(B, H, S, D), self.rand(B, H, S, D),
                   self.rand(B, H, S, D))
        bias = torch.randn(B, 1, S, S, generator=self.gen).masked_fill(
            ~torch.ones(S, S, dtype=torch.bool).tril(),
            torch.finfo(torch.float32).min)
        out = self.run_hf(q, k, v, bias, softcap=20.0)
        do = self.rand(B, S, H, D, grad=False)
        out.backward(do)
        inputs = [x.detach().double().requires_grad_() for x in (q, k, v)]
        ref, _ = ftgpu.reference.attention(
            *inputs, causal=True,
            score_mod=lambda s, b, h, i, j: 20 * torch.tanh(s / 20) +
            bias.double()[b, 0, i, j])
        grads = torch.autograd.grad(ref, inputs, do.double().transpose(1, 2))
        self.assertLess(rel(out.transpose(1, 2), ref), 2e-2)
        for x, g in zip((q, k, v), grads):
            self.assertLess(rel(x.grad, g), 2e-2)

    def test_softcap_is_a_runtime_scalar(self):
        q, k, v = (self.rand(1, 2, 12, 16), self.rand(1, 2, 12, 16),
                   self.rand(1, 2, 12, 16))
        out = self.run_hf(q, k, v, softcap=30.0)
        out.sum().backward()
        self.assertEqual(self.record.backward_calls[-1]["softcap"], 30.0)
        self.run_hf(*(x.detach() for x in (q, k, v)), softcap=50.0)
        # One forward kernel (and one backward) serves every cap.
        fwd = [s for s in self.record.specs if s.direction == "fwd"]
        self.assertEqual(len(fwd), 1)
        ref, _ = ftgpu.reference.attention(
            *(x.detach().double() for x in (q, k, v)), causal=True,
            score_mod=lambda s, b, h, i, j: 30 * torch.tanh(s / 30))
        self.assertLess(rel(out.transpose(1, 2), ref), 2e-2)

    def test_sliding_window_and_refusals(self):
        q, k, v = (self.rand(1, 2, 12, 16), self.rand(1, 2, 12, 16),
                   self.rand(1, 2, 12, 16))
        self.run_hf(q, k, v, sliding_window=4)
        self.assertEqual(self.record.specs[-1].window, (3, 0))
        with self.assertRaises(FlashTileError) as e:
            self.run_hf(q, k, v, dropout=0.1)
        self.assertIn("no attention dropout", str(e.exception))
        with self.assertRaises(FlashTileError) as e:
            self.run_hf(q, k, v, torch.ones(12, 12, dtype=torch.bool))
        self.assertIn("attention_mask must be a (1 or 1, 1, 12, >= 12) mask",
                      str(e.exception))


if __name__ == "__main__":
    unittest.main()
