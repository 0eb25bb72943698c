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
made (`backward=False` skips it, for inference), and so is a second one
that also derives the gradients of the captured float tensors (a learned
bias table, ALiBi slopes, sink logits): a call where one of them requires
grad runs that one, and the op's formula returns their gradients. Imports
torch; `import flashtile` does not.
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
               backward: str, grads: str, scale: float, names: str,
               tensors: list[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """(B, S, H, D) views in, (out (B, Sq, Hq, Dv), lse (B, Hq, Sq)) out;
    `names` are the extra tensors' argument names, comma-separated (a
    custom op's schema has no list of strings). `backward` is the backward
    family's plan, or "" where there is none; `grads`, the names of the
    extra tensors whose gradients it derives, comma-separated."""
    kwargs = dict(zip(_split(names), tensors))
    if scale >= 0:
        kwargs["softmax_scale"] = scale
    return _load(plan)(q, k, v, **kwargs)


def _split(names):
    return names.split(",") if names else []


@_attention.register_fake
def _(q, k, v, plan, backward, grads, scale, names, tensors):
    B, Sq, Hq, _ = q.shape
    out = q.new_empty((B, Sq, Hq, v.shape[-1]))
    lse = q.new_empty((B, Hq, Sq), dtype=torch.float32)
    return out, lse


@torch.library.custom_op("flashtile::attention_backward", mutates_args=())
def _attention_backward(
        grad_out: torch.Tensor, q: torch.Tensor, k: torch.Tensor,
        v: torch.Tensor, out: torch.Tensor, lse: torch.Tensor, plan: str,
        grads: str, scale: float, names: str, tensors: list[torch.Tensor]
) -> list[torch.Tensor]:
    """[dQ, dK, dV] in the layout of q, k, v, by the backward plan, then
    the gradient of each extra tensor named in `grads` (in that order, in
    its shape and dtype); the forward's extra tensors as in
    flashtile::attention."""
    extras = dict(zip(_split(names), tensors))
    return list(_autograd.run_backward(_load(plan), q, k, v, out, lse,
                                       grad_out, scale, extras,
                                       tuple(_split(grads))))


@_attention_backward.register_fake
def _(grad_out, q, k, v, out, lse, plan, grads, scale, names, tensors):
    extras = dict(zip(_split(names), tensors))
    return [q.new_empty(q.shape), k.new_empty(k.shape),
            v.new_empty(v.shape)] + [extras[name].new_empty(extras[name].shape)
                                     for name in _split(grads)]


def _setup_context(ctx, inputs, output):
    q, k, v, plan, backward, grads, scale, names, tensors = inputs
    out, lse = output
    ctx.save_for_backward(q, k, v, out, lse, *tensors)
    ctx.plan, ctx.backward, ctx.grads = plan, backward, grads
    ctx.scale, ctx.names = scale, names
    ctx.mark_non_differentiable(lse)


def _backward(ctx, grad_out, grad_lse):
    if not ctx.backward:
        raise _autograd.no_backward(_no_backward.get(ctx.plan, "unknown"))
    q, k, v, out, lse, *tensors = ctx.saved_tensors
    dq, dk, dv, *dtensors = torch.ops.flashtile.attention_backward(
        grad_out, q, k, v, out, lse, ctx.backward, ctx.grads, ctx.scale,
        ctx.names, tensors)
    # One entry per input, the tensors list included (torch.compile checks
    # the structure): the derived tensors' gradients, None for the rest.
    derived = dict(zip(_split(ctx.grads), dtensors))
    return (dq, dk, dv, None, None, None, None, None,
            [derived.get(name) for name in _split(ctx.names)])


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
        # The float extras a call may want gradients of (an integer tensor
        # cannot require grad), and the plan that derives them all, or why
        # there is none (raised at the call where one requires grad).
        self.differentiable = [e[0] for e in compiled.extras
                               if _autograd.is_float_capture(e[2])]
        self.backward = self.grad_backward = ""
        self.grad_why = "the TorchOp was made with backward=False"
        if not backward:
            _no_backward[self.plan] = self.grad_why
            return
        deterministic = _autograd.deterministic_default(deterministic)
        kernel, why = _autograd.backward_kernel(compiled, deterministic)
        if kernel is None:
            _no_backward[self.plan] = self.grad_why = why
            return
        self.backward = kernel.path
        if self.differentiable:
            kernel, self.grad_why = _autograd.backward_kernel(
                compiled, deterministic, tuple(self.differentiable))
            self.grad_backward = kernel.path if kernel is not None else ""

    def __call__(self, q, k, v, *extras, scale=None, return_lse=False):
        if len(extras) != len(self.names):
            raise FlashTileError(f"the kernel takes {len(self.names)} extra "
                                 f"tensor(s) {self.names}, got {len(extras)}")
        backward, grads = self.backward, ""
        wanting = _autograd.tensors_wanting_grad(dict(zip(self.names, extras)))
        if wanting and torch.is_grad_enabled():
            if not self.grad_backward:
                raise FlashTileError(
                    f"the hooks read tensor '{wanting[0]}', which requires "
                    f"grad, and this op has no backward that derives it "
                    f"({self.grad_why}); detach it, or make the op with "
                    f"backward=True and deterministic=False (a captured "
                    f"tensor's gradient is added with atomics)")
            backward, grads = self.grad_backward, ",".join(self.differentiable)
        out, lse = torch.ops.flashtile.attention(
            q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), self.plan,
            backward, grads, -1.0 if scale is None else float(scale),
            ",".join(self.names), list(extras))
        out = out.transpose(1, 2)
        return (out, lse) if return_lse else out


def torch_op(compiled, backward=True, deterministic=None):
    """The torch op of a CompiledKernel (flashtile.compile), with its
    backward family compiled now (backward=False: inference only), and a
    second one that also derives the captured float tensors' gradients
    where the hooks read any. deterministic=None reads
    torch.are_deterministic_algorithms_enabled() now, when the op is made
    (its backward plans are fixed then), not at each call as
    flashtile.attention does."""
    return TorchOp(compiled, backward, deterministic)
