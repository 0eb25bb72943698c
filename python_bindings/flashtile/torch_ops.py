"""FlashTile as a PyTorch custom op: `torch.ops.flashtile.attention`, with a
fake (meta) implementation, so that a precompiled kernel runs inside
`torch.compile(fullgraph=True)` graphs without a graph break:

    kernel = flashtile.compile(head_dim=128, causal=True, score_mod=softcap)
    op = flashtile.torch_op(kernel)
    out = torch.compile(lambda q, k, v: op(q, k, v), fullgraph=True)(q, k, v)

The op launches on the current stream (capturable in a CUDA graph). It is
differentiable: its registered autograd formula saves O and the LSE (never
P) and runs the compiler-built backward family through a second custom op,
`torch.ops.flashtile.attention_backward`, so a training step compiles
with fullgraph=True. The backward family is compiled when the TorchOp is
made (`backward=False` skips it, for inference). Imports torch; `import
flashtile` does not.
"""

import torch

from . import FlashTileError
from . import _autograd
from . import runtime

__all__ = ["torch_op", "TorchOp"]

_kernels = {}


def _load(plan):
    kernel = _kernels.get(plan)
    if kernel is None:
        kernel = _kernels[plan] = runtime.load(plan)
    return kernel


# A forward plan whose TorchOp has no backward plan -> why.
_no_backward = {}


@torch.library.custom_op("flashtile::attention", mutates_args=())
def _attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, plan: str,
               backward: str, scale: float, names: str,
               tensors: list[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """(B, S, H, D) views in, (out (B, Sq, Hq, Dv), lse (B, Hq, Sq)) out;
    `names` are the extra tensors' argument names, comma-separated (a
    custom op's schema has no list of strings). `backward` is the backward
    family's plan, or "" where there is none."""
    kwargs = dict(zip(names.split(",") if names else [], tensors))
    if scale >= 0:
        kwargs["softmax_scale"] = scale
    return _load(plan)(q, k, v, **kwargs)


@_attention.register_fake
def _(q, k, v, plan, backward, scale, names, tensors):
    B, Sq, Hq, _ = q.shape
    out = q.new_empty((B, Sq, Hq, v.shape[-1]))
    lse = q.new_empty((B, Hq, Sq), dtype=torch.float32)
    return out, lse


@torch.library.custom_op("flashtile::attention_backward", mutates_args=())
def _attention_backward(
        grad_out: torch.Tensor, q: torch.Tensor, k: torch.Tensor,
        v: torch.Tensor, out: torch.Tensor, lse: torch.Tensor, plan: str,
        scale: float, names: str, tensors: list[torch.Tensor]
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(dQ, dK, dV) in the layout of q, k, v, by the backward plan; the
    forward's extra tensors as in flashtile::attention."""
    extras = dict(zip(names.split(",") if names else [], tensors))
    return _autograd.run_backward(_load(plan), q, k, v, out, lse, grad_out,
                                  scale, extras)


@_attention_backward.register_fake
def _(grad_out, q, k, v, out, lse, plan, scale, names, tensors):
    return (q.new_empty(q.shape), k.new_empty(k.shape), v.new_empty(v.shape))


def _setup_context(ctx, inputs, output):
    q, k, v, plan, backward, scale, names, tensors = inputs
    out, lse = output
    ctx.save_for_backward(q, k, v, out, lse, *tensors)
    ctx.plan, ctx.backward, ctx.scale, ctx.names = plan, backward, scale, names
    ctx.mark_non_differentiable(lse)


def _backward(ctx, grad_out, grad_lse):
    if not ctx.backward:
        raise _autograd.no_backward(_no_backward.get(ctx.plan, "unknown"))
    q, k, v, out, lse, *tensors = ctx.saved_tensors
    dq, dk, dv = torch.ops.flashtile.attention_backward(
        grad_out, q, k, v, out, lse, ctx.backward, ctx.scale, ctx.names,
        tensors)
    # One entry per input, the tensors list included (torch.compile checks
    # the structure); the captured tensors get none here (check_captures).
    return dq, dk, dv, None, None, None, None, [None] * len(tensors)


_attention.register_autograd(_backward, setup_context=_setup_context)


class TorchOp:
    """A precompiled kernel as a torch op in SDPA's (B, H, S, D) layout."""

    def __init__(self, compiled, backward=True, deterministic=None):
        scalars = [e[0] for e in compiled.extras if e[1] == "scalar"]
        if scalars:
            raise FlashTileError(
                f"the torch op takes tensor extras only; this kernel has "
                f"run-time scalars {scalars}: use flashtile.attention")
        self.plan = compiled.plan_path
        self.names = [e[0] for e in compiled.extras]
        self.backward = ""
        if not backward:
            _no_backward[self.plan] = "the TorchOp was made with backward=False"
            return
        kernel, why = _autograd.backward_kernel(
            compiled, _autograd.deterministic_default(deterministic))
        if kernel is None:
            _no_backward[self.plan] = why
        else:
            self.backward = kernel.path

    def __call__(self, q, k, v, *extras, scale=None, return_lse=False):
        if len(extras) != len(self.names):
            raise FlashTileError(f"the kernel takes {len(self.names)} extra "
                                 f"tensor(s) {self.names}, got {len(extras)}")
        if any(getattr(e, "requires_grad", False) for e in extras):
            _autograd.check_captures(dict(zip(self.names, extras)))
        out, lse = torch.ops.flashtile.attention(
            q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), self.plan,
            self.backward, -1.0 if scale is None else float(scale),
            ",".join(self.names), list(extras))
        out = out.transpose(1, 2)
        return (out, lse) if return_lse else out


def torch_op(compiled, backward=True, deterministic=None):
    """The torch op of a CompiledKernel (flashtile.compile), with its
    backward family compiled now (backward=False: inference only).
    deterministic=None reads torch.are_deterministic_algorithms_enabled()
    now, when the op is made (its backward plan is fixed then), not at
    each call as flashtile.attention does."""
    return TorchOp(compiled, backward, deterministic)
