"""flashtile.attention: the torch call, in SDPA's and FlexAttention's layout.

    out = flashtile.attention(q, k, v, causal=True, score_mod=softcap)

q is (B, Hq, Sq, D), k and v (B, Hkv, Sk, D) and (B, Hkv, Sk, Dv), bf16 or
f16 CUDA tensors, with Hq a multiple of Hkv (GQA). The kernel is compiled
on first use through the cache (flashtile.compile) and launched through the
one runtime on torch's current stream. A block mask built once with
flashtile.create_block_mask is reused by every call given it.
"""

from . import FlashTileError
from . import _sinks
from . import compiler as _compiler
from . import hooks as _hooks

__all__ = ["attention", "create_block_mask", "BlockMask", "device_arch"]

_DTYPES = {"torch.bfloat16": "bf16", "torch.float16": "f16"}
_compiled = {}
_archs = {}


def device_arch(device):
    """The chip name of a CUDA device ("sm_90", "sm_120")."""
    index = device.index if device.index is not None else -1
    arch = _archs.get(index)
    if arch is None:
        import torch
        major, minor = torch.cuda.get_device_capability(device)
        arch = _archs[index] = f"sm_{major}{minor}"
    return arch


def _check(q, k, v):
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not hasattr(t, "dim") or t.dim() != 4:
            raise FlashTileError(
                f"{name} must be a 4-d (batch, heads, seq, dim) tensor, got "
                f"{getattr(t, 'shape', type(t).__name__)}")
    dtype = _DTYPES.get(str(q.dtype))
    if dtype is None:
        raise FlashTileError(f"q has dtype {q.dtype}; flashtile.attention "
                             f"takes bfloat16 or float16")
    if not q.is_cuda:
        raise FlashTileError("q must be a CUDA tensor")
    return dtype


def _kernel(q, k, v, causal, window, score_mod, mask_mod, arch, isa,
            sink=None):
    """The compiled kernel for this call's dtype, head dims and hooks: from
    memory after the first call (the runtime checks every call's tensors)."""
    window = tuple(window) if window is not None else None
    try:
        fast = (q.dtype, q.get_device(), q.shape[-1], v.shape[-1],
                bool(causal), window, score_mod, mask_mod, sink, arch, isa)
        hit = _compiled.get(fast)
    except (AttributeError, IndexError, TypeError):
        fast, hit = None, None
    if hit is not None:
        return hit
    dtype = _check(q, k, v)
    device = device_arch(q.device)
    target = arch or device
    target_isa = isa
    if target_isa is None and target != device:
        target_isa = device  # an SM120 configuration run on an sm_90 GPU
    compiled = _compiler.compile(
        q.shape[-1], dtype, head_dim_v=v.shape[-1], causal=causal,
        window=window, score_mod=score_mod, mask_mod=mask_mod, arch=target,
        isa=target_isa, sink=sink)
    key = (dtype, q.shape[-1], v.shape[-1], bool(causal), window, score_mod,
           mask_mod, sink, target, target_isa)
    compiled.runtime_kernel()  # loaded once, here
    if fast is not None:
        _compiled[fast] = (compiled, key)
    return compiled, key


def _prepare(q, k, v, causal, window, scale, score_mod, mask_mod, sinks,
             arch, isa):
    """The compiled kernel of a call, its memo key, and the runtime call's
    arguments: the (B, S, H, D) views and the extras as the hooks capture
    them now. `sinks` is read through the one sink hook (_sinks.py)."""
    sink = None
    if sinks is not None:
        _sinks.sinks = sinks
        sink = _sinks.sink
    compiled, key = _kernel(q, k, v, causal, window, score_mod, mask_mod,
                            arch, isa, sink)
    args = (q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2))
    kwargs = (_hooks.read_captures((score_mod, mask_mod, sink),
                                   compiled.extras)
              if compiled.extras else {})
    if scale is not None:
        kwargs["softmax_scale"] = float(scale)
    return compiled, key, args, kwargs


class BlockMask:
    """A run-time block mask (and any other reusable workspace) built once
    for given sizes and captured tensors: pass it to flashtile.attention as
    `block_mask` in every call with the same sizes and mask inputs."""

    __slots__ = ("prepared", "key", "sizes")

    def __init__(self, prepared, key, sizes):
        self.prepared = prepared
        self.key = key
        self.sizes = sizes


def create_block_mask(q, k, v, *, mask_mod, causal=False, window=None,
                      score_mod=None, scale=None, sinks=None, arch=None,
                      isa=None):
    """Runs the kernels that build the block mask of this attention (the
    same arguments as flashtile.attention) and returns it."""
    compiled, key, args, kwargs = _prepare(q, k, v, causal, window, scale,
                                           score_mod, mask_mod, sinks, arch,
                                           isa)
    prepared = compiled.runtime_kernel().prepare(*args, **kwargs)
    return BlockMask(prepared, key, (tuple(q.shape), tuple(k.shape)))


def attention(q, k, v, *, causal=False, window=None, scale=None,
              score_mod=None, mask_mod=None, block_mask=None, sinks=None,
              return_lse=False, arch=None, isa=None):
    """Attention of q over k, v with FlashTile's kernel for these hooks.
    Returns the output (B, Hq, Sq, Dv) (a transposed view of the kernel's
    (B, Sq, Hq, Dv) output), and the log-sum-exp (B, Hq, Sq) with
    return_lse. `arch=None` targets the GPU's chip; another arch runs its
    configuration with the GPU's ISA (`arch="sm_120"` on an H200).
    `sinks`, a float32 (Hq,) tensor, adds a learned logit per query head to
    every row's softmax denominator (attention sinks, as gpt-oss and vLLM's
    `s_aux` have them); a row with no key then has LSE = its sink."""
    compiled, key, args, kwargs = _prepare(q, k, v, causal, window, scale,
                                           score_mod, mask_mod, sinks, arch,
                                           isa)
    if block_mask is not None:
        if block_mask.key != key or block_mask.sizes != (tuple(q.shape),
                                                         tuple(k.shape)):
            raise FlashTileError(
                "block_mask was built for another attention (other hooks, "
                "dtype, head dims or sizes): build it with "
                "flashtile.create_block_mask with this call's arguments")
        out, lse = block_mask.prepared(*args, **kwargs)
    else:
        out, lse = compiled.runtime_kernel()(*args, **kwargs)
    out = out.transpose(1, 2)
    return (out, lse) if return_lse else out
