"""The masks behind flashtile.decode(..., cache_seqlens=tensor): one function
per causality (one cached kernel per dtype and head dims) that reads each
sequence's cache length from `cache_seqlens`. Both are key intervals
(MaskAnalysis.h), so the decode family visits only the tiles below each
sequence's length; bottom-right causal is aligned to that length, as in
FlashAttention-2's flash_attn_with_kvcache.

The module global is never set: each call binds CACHE_SEQLENS to its own
tensor (flashtile.attention's `bindings`, read per call by
hooks.read_captures), so that two threads' calls cannot see each other's
lengths. A prebuild manifest gives its (dtype, rank) in `captures`."""

from .hooks import seqlen_q

CACHE_SEQLENS = "cache_seqlens"
cache_seqlens = None  # int32 (batch,): bound per call


def mask(b, h, q_idx, kv_idx):
    return kv_idx < cache_seqlens[b]


def causal_mask(b, h, q_idx, kv_idx):
    length = cache_seqlens[b]
    return (kv_idx < length) & (kv_idx <= q_idx + length - seqlen_q())
