"""The sink hook behind flashtile.attention(..., sinks=tensor): one function
(one cached kernel per dtype and head dims) that reads the per-head sink
logits from the module global `sinks`, which the call sets."""

sinks = None  # float32 (heads_q,)


def sink(b, h):
    return sinks[h]
