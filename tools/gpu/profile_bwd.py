#!/usr/bin/env python3
"""The launches ncu profiles for the backward's profile stage: each plan's
backward family once, then FlashAttention-2's backward (torch's SDPA flash
backend) once, all on the same inputs (B = 4, S = 4096, H = 16, the plans'
head dim, causal from the first plan). A warm-up run of each comes first,
so that the profiled launches (ncu's --launch-skip) are not the first.

    ncu -k regex:'bwd_main|dq_dk_dv' --launch-skip N ... \\
        python3 tools/gpu/profile_bwd.py PLAN.plan.json...
"""

import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_fwd import runtime  # noqa: E402  (sets up the path)
import ftgpu.tolerance  # noqa: E402


def main():
    plans = sys.argv[1:]
    if not plans:
        print("usage: profile_bwd.py PLAN.plan.json...")
        return 1
    with open(plans[0]) as f:
        info = json.load(f)["info"]
    D, causal = info["head_dim"], info["causal"]
    dtype = ftgpu.tolerance.torch_dtype(info["dtype"])
    B, S, H = 4, 4096, 16
    scale = D ** -0.5
    gen = torch.Generator(device="cuda").manual_seed(0)
    q, k, v, do = (torch.randn(B, S, H, D, device="cuda", generator=gen,
                               dtype=dtype) for _ in range(4))
    qt, kt, vt = (x.transpose(1, 2).detach().requires_grad_()
                  for x in (q, k, v))
    o, lse = torch.ops.aten._scaled_dot_product_flash_attention(
        qt, kt, vt, is_causal=causal, scale=scale)[:2]
    from torch.nn.attention import SDPBackend, sdpa_kernel
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        out = torch.nn.functional.scaled_dot_product_attention(
            qt, kt, vt, is_causal=causal, scale=scale)
    grads = [torch.empty_like(x) for x in (q, k, v)]
    kernels = [runtime.load(p) for p in plans]
    for run in range(2):  # a warm-up pass, then the profiled one
        for kernel in kernels:
            kernel(q, k, v, o=o.transpose(1, 2), lse=lse, do=do, dq=grads[0],
                   dk=grads[1], dv=grads[2], softmax_scale=scale)
        torch.autograd.grad(out, (qt, kt, vt), do.transpose(1, 2),
                            retain_graph=True)
    torch.cuda.synchronize()
    print(f"profiled {len(plans)} plan(s) and FA2, d={D}, "
          f"{'causal' if causal else 'full'}, B={B} S={S} H={H}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
