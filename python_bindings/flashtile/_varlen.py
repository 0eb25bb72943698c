"""The masks behind flashtile.varlen: packed sequences of different lengths
in one launch (FlashAttention-2's varlen call). Token t of the packed
queries belongs to sequence seq_q[t], key t to seq_k[t]; a query sees the
keys of its own sequence, and with causal those up to its own position
aligned bottom-right within the sequence: key k <= q + shift[s], shift[s] =
cu_seqlens_k[s + 1] - cu_seqlens_q[s + 1]. The call sets the module
globals. The masks are data-dependent: the run-time block mask skips the
tiles of other sequences."""

seq_q = None  # int32 (total_q,)
seq_k = None  # int32 (total_k,)
shift = None  # int32 (batch,)


def mask(b, h, q_idx, kv_idx):
    return seq_q[q_idx] == seq_k[kv_idx]


def causal_mask(b, h, q_idx, kv_idx):
    s = seq_q[q_idx]
    return (s == seq_k[kv_idx]) & (kv_idx <= q_idx + shift[s])
