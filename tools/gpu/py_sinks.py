"""The sink function flashtile.attention(..., sinks=tensor) uses
(flashtile/_sinks.py), for the prebuild of tools/gpu/py_kernels.json: the
same body and capture, so the same kernel."""

sinks = None  # float32 (heads_q,)


def sink(b, h):
    return sinks[h]
