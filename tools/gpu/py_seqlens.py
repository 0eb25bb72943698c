"""The masks flashtile.decode(..., cache_seqlens=tensor) uses
(flashtile/_seqlens.py), for the prebuild of tools/gpu/py_kernels.json: the
same bodies and capture, so the same kernels."""

from flashtile.hooks import seqlen_q

cache_seqlens = None  # int32 (batch,)


def mask(b, h, q_idx, kv_idx):
    return kv_idx < cache_seqlens[b]


def causal_mask(b, h, q_idx, kv_idx):
    length = cache_seqlens[b]
    return (kv_idx < length) & (kv_idx <= q_idx + length - seqlen_q())


# The sink of flashtile/_sinks.py, for kernels with both (one hooks module
# per manifest entry): the same body and capture name.
sinks = None  # float32 (heads_q,)


def sink(b, h):
    return sinks[h]
