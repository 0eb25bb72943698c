"""FlashTile as a PyTorch custom op: `torch.ops.flashtile.attention`, with a
fake (meta) implementation, so that a precompiled kernel runs inside
`torch.compile(fullgraph=True)` graphs without a graph break:

    kernel = flashtile.compile(head_dim=128, causal=True, score_mod=softcap)
    op = flashtile.torch_op(kernel)
    out = torch.compile(lambda q, k, v: op(q, k, v), fullgraph=True)(q, k, v)

The op launches on the current stream (capturable in a CUDA graph). It is
forward only: backward raises until FlashTile has a backward pass. Imports
torch; `import flashtile` does not.
"""

import torch

from . import FlashTileError
from . import runtime

__all__ = ["torch_op", "TorchOp"]

_kernels = {}


def _load(plan):
    kernel = _kernels.get(plan)
    if kernel is None:
        kernel = _kernels[plan] = runtime.load(plan)
    return kernel


@torch.library.custom_op("flashtile::attention", mutates_args=())
def _attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, plan: str,
               scale: float, names: str,
               tensors: list[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """(B, S, H, D) views in, (out (B, Sq, Hq, Dv), lse (B, Hq, Sq)) out;
    `names` are the extra tensors' argument names, comma-separated (a
    custom op's schema has no list of strings)."""
    kwargs = dict(zip(names.split(",") if names else [], tensors))
    if scale >= 0:
        kwargs["softmax_scale"] = scale
    return _load(plan)(q, k, v, **kwargs)


@_attention.register_fake
def _(q, k, v, plan, scale, names, tensors):
    B, Sq, Hq, _ = q.shape
    out = q.new_empty((B, Sq, Hq, v.shape[-1]))
    lse = q.new_empty((B, Hq, Sq), dtype=torch.float32)
    return out, lse


def _backward(ctx, grad_out, grad_lse):
    raise FlashTileError(
        "flashtile.attention has no backward pass yet (the forward only is "
        "implemented); use it under torch.no_grad() or for inference")


def _setup_context(ctx, inputs, output):
    pass


_attention.register_autograd(_backward, setup_context=_setup_context)


class TorchOp:
    """A precompiled kernel as a torch op in SDPA's (B, H, S, D) layout."""

    def __init__(self, compiled):
        scalars = [e[0] for e in compiled.extras if e[1] == "scalar"]
        if scalars:
            raise FlashTileError(
                f"the torch op takes tensor extras only; this kernel has "
                f"run-time scalars {scalars}: use flashtile.attention")
        self.plan = compiled.plan_path
        self.names = [e[0] for e in compiled.extras]

    def __call__(self, q, k, v, *extras, scale=None, return_lse=False):
        if len(extras) != len(self.names):
            raise FlashTileError(f"the kernel takes {len(self.names)} extra "
                                 f"tensor(s) {self.names}, got {len(extras)}")
        out, lse = torch.ops.flashtile.attention(
            q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), self.plan,
            -1.0 if scale is None else float(scale), ",".join(self.names),
            list(extras))
        out = out.transpose(1, 2)
        return (out, lse) if return_lse else out


def torch_op(compiled):
    """The torch op of a CompiledKernel (flashtile.compile)."""
    return TorchOp(compiled)
