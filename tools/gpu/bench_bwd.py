#!/usr/bin/env python3
"""Benchmark FlashTile's backward families against PyTorch's backends.

    python3 tools/gpu/bench_bwd.py PLAN.plan.json... [--seqlens 1024 4096 16384]

Each plan is a backward family (flashtile-compile --direction=bwd); what it
computes (dtype, head dim, causal) is read from its `info`. For each S it
builds (B, S, H, D) inputs with B * S = --tokens and H * D = --width, takes
O and the LSE from torch's flash forward, and times in this one process,
with CUDA events (ftgpu.timing):

  flashtile   the family's launch: D, the key-parallel main kernel, dQ's
              convert, and the zero fill of the workspaces
  sdpa-flash  torch.autograd.grad through SDPA, SDPBackend.FLASH_ATTENTION
              (FlashAttention-2), the graph retained
  cudnn       the same through SDPBackend.CUDNN_ATTENTION
  flex        the same through FlexAttention under torch.compile (a causal
              block mask)

TFLOP/s count 2.5 x the forward's FLOPs (4 B H S^2 D, halved for causal),
the issue's convention; the last lines are the geometric means of
FlashTile's speed over each peer's. A benchmark, not a test: a peer that
fails is reported and the run goes on.
"""

import argparse
import json
import math
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ftgpu.timing  # noqa: E402
import ftgpu.tolerance  # noqa: E402
from bench_fwd import Peers, runtime  # noqa: E402  (sets up the path)


def peer_backward(peers, peer, q, k, v, do, scale, causal):
    """A callable running the peer's backward: bench_fwd's forward of the
    peer on (B, H, S, D) views, run once with the graph kept."""
    qt, kt, vt = (x.transpose(1, 2).detach().requires_grad_() for x in (q, k, v))
    out = peers.make(peer, qt, kt, vt, scale, causal, (-1, -1))()
    dot = do.transpose(1, 2)

    def run():
        return torch.autograd.grad(out, (qt, kt, vt), dot, retain_graph=True)
    return run


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("plans", nargs="+")
    parser.add_argument("--seqlens", type=int, nargs="+",
                        default=[1024, 4096, 16384])
    parser.add_argument("--tokens", type=int, default=8 * 16384)
    parser.add_argument("--width", type=int, default=2048)
    parser.add_argument("--peers", nargs="*",
                        default=["sdpa-flash", "cudnn", "flex"])
    args = parser.parse_args()
    peers = Peers(torch)
    dev = "cuda"
    ratios = {peer: [] for peer in args.peers}
    print(f"{'plan':28} {'S':>6} {'impl':>11} {'ms':>8} {'TFLOP/s':>8} "
          f"{'speedup':>8}")
    for plan in args.plans:
        with open(plan) as f:
            info = json.load(f)["info"]
        kernel = runtime.load(plan)
        name = os.path.basename(plan).removesuffix(".plan.json")
        D, causal = info["head_dim"], info["causal"]
        dtype = ftgpu.tolerance.torch_dtype(info["dtype"])
        H = max(1, args.width // D)
        for S in args.seqlens:
            B = max(1, args.tokens // S)
            scale = D ** -0.5
            gen = torch.Generator(device=dev).manual_seed(S)
            q, k, v, do = (torch.randn(B, S, H, D, device=dev, generator=gen,
                                       dtype=dtype) for _ in range(4))
            o, lse = torch.ops.aten._scaled_dot_product_flash_attention(
                q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                is_causal=causal, scale=scale)[:2]
            o = o.transpose(1, 2)
            dq, dk, dv = (torch.empty_like(x) for x in (q, k, v))

            def ours():
                kernel(q, k, v, o=o, lse=lse, do=do, dq=dq, dk=dk, dv=dv,
                       softmax_scale=scale)
            flops = 2.5 * 4 * B * H * S * S * D / (2 if causal else 1)
            ms = ftgpu.timing.time_ms(ours)
            print(f"{name:28} {S:6} {'flashtile':>11} {ms:8.3f} "
                  f"{flops / ms / 1e9:8.1f}")
            for peer in args.peers:
                try:
                    pms = ftgpu.timing.time_ms(peer_backward(
                        peers, peer, q, k, v, do, scale, causal))
                    ratios[peer].append(pms / ms)
                    print(f"{name:28} {S:6} {peer:>11} {pms:8.3f} "
                          f"{flops / pms / 1e9:8.1f} {pms / ms:8.2f}")
                except Exception as e:  # noqa: BLE001
                    print(f"{name:28} {S:6} {peer:>11} failed: "
                          f"{type(e).__name__}: {str(e)[:120]}")
            del q, k, v, do, o, lse, dq, dk, dv
            torch.cuda.empty_cache()
    for peer, r in ratios.items():
        if r:
            print(f"geomean flashtile / {peer}: "
                  f"{math.exp(sum(map(math.log, r)) / len(r)):.3f}x "
                  f"over {len(r)} shapes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
