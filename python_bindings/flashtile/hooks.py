"""Hooks in Python: score_mod / mask_mod functions traced into `attn` IR.

A hook is a plain Python function. FlashTile calls it once on symbolic
values and records what it computes, as the C++ DSL (include/flashtile/DSL/
Hooks.h) does:

    def softcap(score, b, h, q_idx, kv_idx):
        return 50 * flashtile.tanh(score / 50)

    def document(b, h, q_idx, kv_idx):
        return doc[b, q_idx] == doc[b, kv_idx]      # doc: a captured tensor

* `score` is an f32 score (already scaled by the softmax scale); `b`, `h`,
  `q_idx`, `kv_idx` are indices (the query's position in its sequence, the
  query head). Arithmetic follows torch: an index meeting a float, or `/`
  between indices, gives a float.
* Tensors the function captures (closure variables or globals it names)
  become extra kernel arguments, in order of first use; reading one with
  indices is a table read (f32 or i32 tensors; i32 values act as indices).
* Python numbers it captures are constants; `flashtile.scalar(value)` marks
  one as a run-time scalar argument instead (i32 for an int, f32 for a
  float), passed at each call.
* Control flow on symbolic values is not traced: `if`, `and`, `or` and
  `bool()` raise; use `flashtile.where(cond, a, b)`, `&`, `|`, `~`.

Tracing is pure Python: it needs neither the compiler nor torch, and gives
the same text on every Python version. Errors raise FlashTileError at the
user's line.

This module is the public face of three: _tracer (the symbolic values and
the functions hooks call), _captures (what a hook captures, read again at
each call, and the guard that decides when a trace is reused) and
_kernel_ir (the kernel's IR text with the hooks traced into it).
"""

from ._tracer import (  # noqa: F401 - the public names, and the package's
    Scalar, Value, abs, batch_size, ceil, cos, erf, exp, exp2, floor,
    heads_kv, heads_q, log, log2, maximum, minimum, pow, rsqrt, scalar,
    seqlen_k, seqlen_q, sin, sqrt, tanh, to_float, to_index, where,
    _float_literal, _user_frame)
from ._captures import (  # noqa: F401
    TensorSpec, read_captures, tensor_dtype, trace_guard, _TensorArg)
from ._kernel_ir import (  # noqa: F401
    PAGE_TABLE, attention_dtypes, check_dtype, check_window, kernel_ir,
    kernel_rules, _Kernel, _trace)

__all__ = ["scalar", "where", "tanh", "exp", "exp2", "log", "log2", "sqrt",
           "rsqrt", "abs", "erf", "sin", "cos", "floor", "ceil", "pow",
           "minimum", "maximum", "to_float", "to_index", "seqlen_q",
           "seqlen_k", "heads_q", "heads_kv", "batch_size", "Scalar",
           "TensorSpec", "kernel_ir", "read_captures"]
