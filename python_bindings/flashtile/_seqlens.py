"""The masks behind flashtile.decode(..., cache_seqlens=tensor): one function
per causality (one cached kernel per dtype and head dims) that reads each
sequence's cache length from the module global `cache_seqlens`, which the
call sets. Both are key intervals (MaskAnalysis.h), so the decode family
visits only the tiles below each sequence's length; bottom-right causal is
aligned to that length, as in FlashAttention-2's flash_attn_with_kvcache."""

from .hooks import seqlen_q

cache_seqlens = None  # int32 (batch,)


def mask(b, h, q_idx, kv_idx):
    return kv_idx < cache_seqlens[b]


def causal_mask(b, h, q_idx, kv_idx):
    length = cache_seqlens[b]
    return (kv_idx < length) & (kv_idx <= q_idx + length - seqlen_q())
