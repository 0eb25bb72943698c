"""FlashTile's Python package.

``flashtile.runtime`` loads a compiled kernel family (its launch plan,
``NAME.plan.json``, and the cubins it names, as ``flashtile-compile
--emit=cubin --plan`` writes them) and launches it on CUDA torch tensors
through the C++ runtime (the ``flashtile._runtime`` extension, built with the
project: ``PYTHONPATH=<build>/python_bindings``). It runs where no LLVM/MLIR is
installed; importing it and loading a plan need neither torch nor a GPU.
"""

__version__ = "0.2.0"


class FlashTileError(RuntimeError):
    """A FlashTile kernel could not be loaded, checked or launched.

    The message names the file, field or argument at fault and the numbers
    involved.
    """


from .hooks import (Scalar, abs, batch_size, ceil, cos, erf, exp, exp2,  # noqa: E402,A004
                    floor, heads_kv, heads_q, log, log2, maximum, minimum,
                    pow, rsqrt, scalar, seqlen_k, seqlen_q, sin, sqrt, tanh,
                    to_float, to_index, where)

from .compiler import CompiledKernel, compile  # noqa: E402,A004

__all__ = ["FlashTileError", "__version__", "CompiledKernel", "compile", "Scalar", "abs", "batch_size",
           "ceil", "cos", "erf", "exp", "exp2", "floor", "heads_kv",
           "heads_q", "log", "log2", "maximum", "minimum", "pow", "rsqrt",
           "scalar", "seqlen_k", "seqlen_q", "sin", "sqrt", "tanh",
           "to_float", "to_index", "where"]
