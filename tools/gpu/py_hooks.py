"""The Python hook examples the GPU proof runs (tools/gpu/check_python.py),
and that `python -m flashtile prebuild tools/gpu/py_kernels.json` compiles
here. Each function serves both FlashTile (traced) and FlexAttention (on
tensors): flashtile.tanh is torch.tanh on tensors. The captured tensors are
set by the caller; the manifest gives their dtype and rank for the
prebuild, where torch may be absent."""

import flashtile

SLOPES = None   # float32 (heads_q,)
BIAS = None     # float32 (heads_q, 32): T5 buckets
DOC = None      # int32 (batch, seqlen): document ids
PREFIX = flashtile.scalar(0, name="prefix_len")


def softcap(score, b, h, q_idx, kv_idx):
    return 30 * flashtile.tanh(score / 30)


def alibi(score, b, h, q_idx, kv_idx):
    return score + SLOPES[h] * (kv_idx - q_idx)


def relative_bias(score, b, h, q_idx, kv_idx):
    rel = kv_idx - q_idx
    side = flashtile.where(rel > 0, 16, 0)
    n = flashtile.abs(rel)
    far = 8 + flashtile.to_index(
        flashtile.log(flashtile.maximum(n, 8) / 8.0) / 2.5257287 * 8.0)
    bucket = side + flashtile.where(n < 8, n, flashtile.minimum(far, 15))
    return score + BIAS[h, bucket]


def document(b, h, q_idx, kv_idx):
    return DOC[b, q_idx] == DOC[b, kv_idx]


def document_heads(b, h, q_idx, kv_idx):
    """Document ids for every query head but the first, which sees every
    key: no key interval, and per head, so the backward's block mask of a
    KV tile keeps the tiles any head of the GQA group keeps a key of and
    runs unmasked only those every head keeps whole."""
    return (DOC[b, q_idx] == DOC[b, kv_idx]) | (h == 0)


def prefix_lm(b, h, q_idx, kv_idx):
    return (kv_idx <= q_idx) | (kv_idx < PREFIX)


def falling(b, h, q_idx, kv_idx):
    # A key interval whose upper end falls as q_idx grows: the first row of
    # a tile keeps the most keys (the K/V copies' key_end must see that).
    return kv_idx <= 200 - q_idx


def chunked(b, h, q_idx, kv_idx):
    return q_idx // 128 == kv_idx // 128


def head_window(b, h, q_idx, kv_idx):
    """A causal window of 64 (h + 1) keys: each query head of a GQA group
    keeps other keys, so the backward's query tiles of a KV tile are the
    union over the group's heads."""
    return (kv_idx <= q_idx) & (kv_idx >= q_idx - 64 * (h + 1))


def gemma_softcap(score, b, h, q_idx, kv_idx):
    """Gemma-2's attention logit softcapping (attn_logit_softcapping = 50)."""
    return 50.0 * flashtile.tanh(score / 50.0)


def alibi_heads(score, b, h, q_idx, kv_idx):
    """ALiBi with each head's slope computed from the head (2^-(h+1)), no
    tensor: the backward's forward recompute must see the right head and
    positions."""
    return score + flashtile.exp2(-(h + 1.0)) * (kv_idx - q_idx)


def tempered_softcap(score, b, h, q_idx, kv_idx):
    """A per-head temperature inside a tanh softcap, minus a distance
    penalty: ∂f/∂score depends on the head and the score."""
    return 30.0 * flashtile.tanh(score * (1.0 + 0.25 * h) / 30.0) - \
        0.01 * flashtile.abs(q_idx - kv_idx)
