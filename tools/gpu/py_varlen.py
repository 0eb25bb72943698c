"""The masks flashtile.varlen uses (flashtile/_varlen.py), for the prebuild of
tools/gpu/py_kernels.json: the same bodies and captures, so the same kernels."""

seq_q = None  # int32 (total_q,)
seq_k = None  # int32 (total_k,)
shift = None  # int32 (batch,)


def mask(b, h, q_idx, kv_idx):
    return seq_q[q_idx] == seq_k[kv_idx]


def causal_mask(b, h, q_idx, kv_idx):
    s = seq_q[q_idx]
    return (s == seq_k[kv_idx]) & (kv_idx <= q_idx + shift[s])
