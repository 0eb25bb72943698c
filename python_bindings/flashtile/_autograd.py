"""The backward of FlashTile's attention in torch's autograd: the
compiler-built backward family (flashtile.compile(direction="bwd")) run on
the forward's O and LSE, never P.

Two clients share it: flashtile.attention (an autograd.Function, eager) and
the custom op of flashtile.torch_ops (a registered autograd formula, which
torch.compile traces without a graph break). Both save q, k, v, O and the
LSE, launch the backward plan (preprocess D = rowsum(dO * O), the key-grid
main kernel, dQ's convert or the deterministic dQ kernel) on the current
stream, and give the inputs' gradients in their layout. The LSE output is
not differentiable (marked so): a loss that reads it gets torch's
"does not require grad", not a silently wrong gradient.

Imports torch; `import flashtile` does not.
"""

import torch

from . import FlashTileError

# (forward kernel key, deterministic) -> (loaded backward kernel, None) or
# (None, why there is none)
_backwards = {}


def backward_kernel(compiled, deterministic):
    """The loaded backward family of `compiled` (a forward
    CompiledKernel), or None and the reason it has none. Compiled once per
    process and forward kernel (through the on-disk cache)."""
    key = (compiled.key, bool(deterministic))
    hit = _backwards.get(key)
    if hit is None:
        try:
            hit = (compiled.backward(deterministic).runtime_kernel(), None)
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


def run_backward(kernel, q, k, v, o, lse, grad_out, scale, extras):
    """(dQ, dK, dV) in the (B, S, H, D) layout of q, k, v: the backward
    plan `kernel` on the current stream. `scale` < 0: the kernel's
    default. `extras`: what the forward's hooks read, by argument name
    (the backward family takes the forward's extra arguments)."""
    if grad_out.stride(-1) != 1:
        grad_out = grad_out.contiguous()
    kwargs = dict(extras)
    kwargs.update(o=o, lse=lse, do=grad_out)
    if scale >= 0:
        kwargs["softmax_scale"] = scale
    return kernel(q, k, v, **kwargs)


def sink_gradient(sinks, out, lse, grad_out):
    """The sink logits' gradient, (Hq,) f32: the sink takes the share
    exp(sink_h - LSE_i) of row i's softmax and contributes no value, so
    d sink_h = -sum over rows of exp(sink_h - LSE_i) D_i, with
    D_i = rowsum(dO * O)_i (out, grad_out (B, S, H, Dv); lse (B, H, S))."""
    d = (grad_out.float() * out.float()).sum(-1).transpose(1, 2)
    share = torch.exp(sinks.float().view(1, -1, 1) - lse)
    return -(share * d).sum((0, 2)).to(sinks.dtype)


def check_captures(kwargs, sinks=None):
    """A tensor a hook reads that wants a gradient would silently get none:
    refused (the sinks, whose gradient Attention computes, aside)."""
    for name, value in kwargs.items():
        if value is sinks:
            continue
        if getattr(value, "requires_grad", False):
            raise FlashTileError(
                f"the hooks read tensor '{name}', which requires grad; "
                f"FlashTile does not derive the gradients of captured "
                f"tensors yet: detach it, or compute that part with torch")


class Attention(torch.autograd.Function):
    """flashtile.attention's forward with its backward: (B, S, H, D) views
    in, (out (B, Sq, Hq, Dv), lse (B, Hq, Sq)) out. `extras` are the
    hooks' arguments by name (the same for the backward); `sinks`, the
    sink logits or None, gets its gradient too."""

    @staticmethod
    def forward(ctx, q, k, v, sinks, launch, backward, scale, extras):
        out, lse = launch()
        ctx.save_for_backward(q, k, v, out, lse, sinks)
        ctx.backward_kernel = backward
        ctx.scale = scale
        ctx.extras = extras
        ctx.mark_non_differentiable(lse)
        return out, lse

    @staticmethod
    def backward(ctx, grad_out, grad_lse):
        kernel, why = ctx.backward_kernel
        if kernel is None:
            raise no_backward(why)
        q, k, v, out, lse, sinks = ctx.saved_tensors
        dq, dk, dv = run_backward(kernel, q, k, v, out, lse, grad_out,
                                  ctx.scale, ctx.extras)
        dsinks = None
        if sinks is not None and ctx.needs_input_grad[3]:
            dsinks = sink_gradient(sinks, out, lse, grad_out)
        return dq, dk, dv, dsinks, None, None, None, None


