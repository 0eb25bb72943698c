"""The masks flashtile.varlen uses (flashtile/_varlen.py), for the prebuild of
tools/gpu/py_kernels.json: the same bodies and captures, so the same kernels."""

seq_q = None    # int32 (total_q,)
start_k = None  # int32 (batch,)
end_k = None    # int32 (batch,)
shift = None    # int32 (batch,)


def mask(b, h, q_idx, kv_idx):
    s = seq_q[q_idx]
    return (kv_idx >= start_k[s]) & (kv_idx < end_k[s])


def causal_mask(b, h, q_idx, kv_idx):
    s = seq_q[q_idx]
    return ((kv_idx >= start_k[s]) & (kv_idx < end_k[s])
            & (kv_idx <= q_idx + shift[s]))
