"""Launch plans for the Python runtime tests.

``attention_plan`` builds the plan of a forward attention family with the
interface flashtile-compile gives such kernels: arguments q, k, v (inputs),
o, lse (outputs) and the scalar softmax_scale; the kernel's parameters are
the five pointers, the four sizes as i32, the strides of q, k, v, o (batch,
seq, head) and of lse (batch, head) as i64, and the scale as f32.
"""

import json
import math
import os


def attention_plan(name="attn_fwd", cubin=None, dtype="bf16", head_dim=64,
                   head_dim_v=None, tile_m=64, block=None,
                   dynamic_smem_bytes=0, isa="sm_90", causal=False,
                   window=(-1, -1), softmax_scale=None, arch=None):
    dv = head_dim if head_dim_v is None else head_dim_v
    scale = 1.0 / math.sqrt(head_dim) if softmax_scale is None else softmax_scale

    def tensor(arg, role, dt, shape, align, contiguous, multiple):
        return {"name": arg, "kind": "tensor", "role": role, "dtype": dt,
                "shape": shape, "align_bytes": align,
                "contiguous_last_dim": contiguous, "stride_multiple": multiple}

    params = [{"name": n, "type": "ptr", "from": {"data": n}}
              for n in ("q", "k", "v", "o", "lse")]
    params += [{"name": n, "type": "i32", "from": {"value": n}}
               for n in ("seqlen_q", "seqlen_k", "heads_q", "heads_kv")]
    for t in ("q", "k", "v", "o"):
        for dim, what in enumerate(("batch", "seq", "head")):
            params.append({"name": f"{t}_stride_{what}", "type": "i64",
                           "from": {"stride": [t, dim]}})
    params += [{"name": "lse_stride_batch", "type": "i64",
                "from": {"stride": ["lse", 0]}},
               {"name": "lse_stride_head", "type": "i64",
                "from": {"stride": ["lse", 1]}},
               {"name": "softmax_scale", "type": "f32",
                "from": {"scalar": "softmax_scale"}}]
    return {
        "format": "flashtile-launch-plan", "version": 2, "name": name,
        "arch": arch or isa, "isa": isa, "code_path": "sm80",
        "arguments": [
            tensor("q", "input", dtype, ["batch", "seqlen_q", "heads_q", head_dim], 16, True, 8),
            tensor("k", "input", dtype, ["batch", "seqlen_k", "heads_kv", head_dim], 16, True, 8),
            tensor("v", "input", dtype, ["batch", "seqlen_k", "heads_kv", dv], 16, True, 8),
            tensor("o", "output", dtype, ["batch", "seqlen_q", "heads_q", dv], 16, True, 8),
            tensor("lse", "output", "f32", ["batch", "heads_q", "seqlen_q"], 4, True, 1),
            {"name": "softmax_scale", "kind": "scalar", "dtype": "f32",
             "default": scale, "positive": True},
        ],
        "sizes": [{"name": "batch", "arg": "q", "dim": 0},
                  {"name": "seqlen_q", "arg": "q", "dim": 1},
                  {"name": "heads_q", "arg": "q", "dim": 2},
                  {"name": "seqlen_k", "arg": "k", "dim": 1},
                  {"name": "heads_kv", "arg": "k", "dim": 2}],
        "checks": [
            {"condition": {"ge": ["heads_kv", 1]},
             "message": "heads_kv must be at least 1"},
            {"condition": {"eq": [{"mod": ["heads_q", "heads_kv"]}, 0]},
             "message": "heads_q must be a multiple of heads_kv"}],
        "kernels": [{
            "symbol": name, "cubin": cubin or name + ".cubin",
            "block": block or [tile_m, 1, 1],
            "dynamic_smem_bytes": dynamic_smem_bytes,
            "grid": [{"ceil_div": ["seqlen_q", tile_m]}, "heads_q", "batch"],
            "params": params, "registers": None, "spill_stores": None,
            "spill_loads": None}],
        "workspaces": [],
        "dispatch": [],
        "info": {"kernel": name, "dtype": dtype, "head_dim": head_dim,
                 "head_dim_v": dv, "causal": causal, "window": list(window),
                 "softmax_scale": scale, "config": {"tile_m": tile_m}},
    }


def write_plan(folder, plan, cubin_bytes=b"\x7fELF not a real cubin"):
    """Writes NAME.plan.json and its cubin into `folder`; returns the plan's
    path."""
    path = os.path.join(folder, plan["name"] + ".plan.json")
    with open(path, "w") as fh:
        json.dump(plan, fh, indent=2)
    if cubin_bytes is not None:
        with open(os.path.join(folder, plan["kernels"][0]["cubin"]), "wb") as fh:
            fh.write(cubin_bytes)
    return path
