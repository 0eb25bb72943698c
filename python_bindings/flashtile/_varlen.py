"""The masks behind flashtile.varlen: packed sequences of different lengths
in one launch (FlashAttention-2's varlen call). Query token t belongs to
sequence s = seq_q[t] and sees the keys of that sequence, [start_k[s],
end_k[s]), and with causal those up to its own position aligned
bottom-right within the sequence: key k <= t + shift[s], shift[s] =
cu_seqlens_k[s + 1] - cu_seqlens_q[s + 1]. The masks are key intervals that read tensors at q_idx, so they
are not monotone in q_idx: the key range is evaluated at every row of a
query tile (attn.key_range scan_rows), and a tile visits only the key
tiles of its own sequences.

The module globals are never set: each call binds them to its own tensors
(bindings(); see _seqlens.py)."""

seq_q = None    # int32 (total_q,): bound per call
start_k = None  # int32 (batch,)
end_k = None    # int32 (batch,)
shift = None    # int32 (batch,)


def bindings(*, seq_q, start_k, end_k, shift):
    """One call's tensors, under the names the masks capture."""
    return {"seq_q": seq_q, "start_k": start_k, "end_k": end_k,
            "shift": shift}


def mask(b, h, q_idx, kv_idx):
    s = seq_q[q_idx]
    return (kv_idx >= start_k[s]) & (kv_idx < end_k[s])


def causal_mask(b, h, q_idx, kv_idx):
    s = seq_q[q_idx]
    return ((kv_idx >= start_k[s]) & (kv_idx < end_k[s])
            & (kv_idx <= q_idx + shift[s]))
