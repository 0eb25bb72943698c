"""The backward of FlashTile's attention in torch's autograd: the
compiler-built backward family (flashtile.compile(direction="bwd")) run on
the forward's O and LSE, never P.

Two clients share it: flashtile.attention (an autograd.Function, eager) and
the custom op of flashtile.torch_ops (a registered autograd formula, which
torch.compile traces without a graph break). Both derive the gradients of
the captured tensors that require grad. Both save q, k, v, O and the
LSE, launch the backward plan (preprocess D = rowsum(dO * O), the key-grid
main kernel, dQ's convert or the deterministic dQ kernel) on the current
stream, and give the inputs' gradients in their layout. The LSE output is
not differentiable (marked so): a loss that reads it gets torch's
"does not require grad", not a silently wrong gradient.

Imports torch; `import flashtile` does not.
"""

import torch

from . import FlashTileError
from . import _captures

# (forward kernel key, deterministic, tensor_grads) -> (loaded backward
# kernel, None) or (None, why there is none)
_backwards = {}


def backward_kernel(compiled, deterministic, tensor_grads=()):
    """The loaded backward family of `compiled` (a forward
    CompiledKernel), with the gradients of the captured tensors
    `tensor_grads` (argument names), or None and the reason it has none.
    Compiled once per process and forward kernel (through the on-disk
    cache)."""
    key = (compiled.key, bool(deterministic), tuple(tensor_grads))
    hit = _backwards.get(key)
    if hit is None:
        try:
            hit = (compiled.backward(
                deterministic, tensor_grads=tensor_grads).runtime_kernel(),
                None)
        except FlashTileError as e:
            hit = (None, str(e))
        _backwards[key] = hit
    return hit


def deterministic_default(deterministic):
    """`deterministic`, or torch's global switch where it is None."""
    if deterministic is None:
        return torch.are_deterministic_algorithms_enabled()
    return bool(deterministic)


def no_backward(why):
    return FlashTileError(
        f"flashtile.attention has no backward for this attention: {why}. "
        f"Run it under torch.no_grad() for inference")


def run_backward(kernel, q, k, v, o, lse, grad_out, scale, extras,
                 tensor_grads=()):
    """(dQ, dK, dV) in the (B, S, H, D) layout of q, k, v, then the
    gradient of each captured tensor named in `tensor_grads`: the backward
    plan `kernel` on the current stream. `scale` < 0: the kernel's
    default. `extras`: what the forward's hooks read, by argument name
    (the backward family takes the forward's extra arguments); the plan
    adds the tensors' gradients into zeroed f32 arguments, its arguments of
    role accumulate, in the order of `tensor_grads`."""
    if grad_out.stride(-1) != 1:
        grad_out = grad_out.contiguous()
    kwargs = dict(extras)
    kwargs.update(o=o, lse=lse, do=grad_out)
    if scale >= 0:
        kwargs["softmax_scale"] = scale
    grads = []
    accumulated = [a["name"] for a in kernel.arguments
                   if a.get("role") == "accumulate"]
    for name, grad in zip(tensor_grads, accumulated, strict=True):
        grads.append(torch.zeros(extras[name].shape, dtype=torch.float32,
                                 device=extras[name].device))
        kwargs[grad] = grads[-1]
    dq, dk, dv = kernel(q, k, v, **kwargs)
    return (dq, dk, dv) + tuple(
        g.to(extras[name].dtype) for name, g in zip(tensor_grads, grads))


def tensors_wanting_grad(kwargs):
    """The names of the captured tensors that require grad (a learned bias,
    slopes, the sink logits): the backward family derives their gradients
    from the score_mod and the sink hook, or refuses at its compile, with
    the reason raised at backward."""
    return tuple(name for name, value in kwargs.items()
                 if getattr(value, "requires_grad", False))


def is_float_capture(value):
    """Whether a captured tensor (or TensorSpec) is floating point: what
    can require grad."""
    return _captures.tensor_dtype(value).startswith(("float", "bfloat"))


class Attention(torch.autograd.Function):
    """flashtile.attention's forward with its backward: (B, S, H, D) views
    in, (out (B, Sq, Hq, Dv), lse (B, Hq, Sq)) out. `extras` are the
    hooks' arguments by name (the same for the backward); `tensors`, the
    captured tensors named in `tensor_grads`, get their gradients too."""

    @staticmethod
    def forward(ctx, q, k, v, launch, backward, scale, extras, tensor_grads,
                *tensors):
        out, lse = launch()
        ctx.save_for_backward(q, k, v, out, lse)
        ctx.backward_kernel = backward
        ctx.scale = scale
        ctx.extras = extras
        ctx.tensor_grads = tensor_grads
        ctx.mark_non_differentiable(lse)
        return out, lse

    @staticmethod
    def backward(ctx, grad_out, grad_lse):
        kernel, why = ctx.backward_kernel
        if kernel is None:
            raise no_backward(why)
        q, k, v, out, lse = ctx.saved_tensors
        dq, dk, dv, *dtensors = run_backward(
            kernel, q, k, v, out, lse, grad_out, ctx.scale, ctx.extras,
            ctx.tensor_grads)
        return (dq, dk, dv, None, None, None, None, None, *dtensors)


