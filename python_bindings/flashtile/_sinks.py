"""The sink hook behind flashtile.attention(..., sinks=tensor): one function
(one cached kernel per dtype and head dims) that reads the per-head sink
logits from `sinks`. The module global is never set: each call binds SINKS
to its own tensor (see _seqlens.py)."""

SINKS = "sinks"
sinks = None  # float32 (heads_q,): bound per call


def sink(b, h):
    return sinks[h]
