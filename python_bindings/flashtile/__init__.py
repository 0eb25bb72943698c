"""FlashTile's Python package.

* ``flashtile.attention(q, k, v, score_mod=..., mask_mod=...)``: attention on
  torch tensors in SDPA's layout, with hooks written as Python functions;
  compiled on first use through the cache, launched through the runtime.
  Decode steps and short queries take the decode family.
* ``flashtile.decode(q, k_cache, v_cache, ...)``: a decode step over a KV
  cache in FlashAttention-2's layout (flash_attn_with_kvcache's names).
* ``flashtile.varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, ...)``: packed
  sequences of different lengths in one launch (flash_attn_varlen_func).
* ``flashtile.compile(...)``: a kernel's PTX, cubin, launch plan and report
  (``flashtile.compiler``; the cache under $FLASHTILE_CACHE_DIR).
* ``flashtile.hooks``: the tracing of hook functions into ``attn`` IR, in
  pure Python, and the functions hooks call (``flashtile.tanh``, ``where``).
* ``flashtile.tile``: the tile language, for variants that change the
  algorithm (sigmoid or differential attention): a block's program traced
  from a Python function, compiled through the same cache.
* ``flashtile.runtime``: loads a compiled kernel family (its launch plan and
  cubins) and launches it through the C++ runtime (``flashtile._runtime``).
  It runs where no LLVM/MLIR is installed; importing it and loading a plan
  need neither torch nor a GPU.
* ``python -m flashtile prebuild MANIFEST``: fills a cache for a machine
  without the compiler.
"""

try:
    from ._build import VERSION as __version__  # the CMake project's
except ImportError:  # pragma: no cover - an unbuilt source tree
    __version__ = "unbuilt"


class FlashTileError(RuntimeError):
    """A FlashTile kernel could not be loaded, checked or launched.

    The message names the file, field or argument at fault and the numbers
    involved.
    """


# flake8: noqa: E402
from .hooks import (Scalar, TensorSpec, abs, batch_size, ceil, cos, erf,
                    exp, exp2, floor, heads_kv, heads_q, log, log2, maximum,
                    minimum, pow, rsqrt, scalar, seqlen_k, seqlen_q, sin,
                    sqrt, tanh, to_float, to_index, where)
from .compiler import CompiledKernel, compile
from . import tile
from .attention import (BlockMask, attention, create_block_mask, decode,
                        varlen)


def torch_op(compiled, backward=True, deterministic=None):
    """A CompiledKernel as a differentiable torch custom op
    (flashtile.torch_ops; imports torch)."""
    from .torch_ops import torch_op as make
    return make(compiled, backward, deterministic)

__all__ = ["FlashTileError", "__version__", "BlockMask", "CompiledKernel",
           "Scalar", "TensorSpec", "abs", "attention", "batch_size", "ceil",
           "compile", "cos", "create_block_mask", "decode", "erf", "exp",
           "exp2",
           "floor", "heads_kv", "heads_q", "log", "log2", "maximum",
           "minimum", "pow", "rsqrt", "scalar", "seqlen_k", "seqlen_q", "sin",
           "sqrt", "tanh", "tile", "to_float", "to_index", "torch_op",
           "varlen", "where"]
