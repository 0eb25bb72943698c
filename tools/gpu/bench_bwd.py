#!/usr/bin/env python3
"""Benchmark FlashTile's backward family against PyTorch's backends.

    python3 tools/gpu/bench_bwd.py PLAN.plan.json [--seqlens 1024 4096 16384]

The plan is a backward family (today the tile program
tools/gpu/tiles/bwd_causal.mlir: bf16, d = 64, causal). For each S it builds
(B, S, H, D) bf16 inputs with B * S = --tokens and H = --heads, takes O and
the LSE from torch's flash forward, and times in this one process, with CUDA
events (ftgpu.timing):

  flashtile   the family's launch: D, the key-parallel main kernel, dQ's
              convert, and the zero fill of the workspaces
  sdpa-flash  torch.autograd.grad through SDPA, SDPBackend.FLASH_ATTENTION
              (FlashAttention-2), the graph retained
  cudnn       the same through SDPBackend.CUDNN_ATTENTION
  flex        the same through FlexAttention under torch.compile (a causal
              block mask)

TFLOP/s count 2.5 x the forward's FLOPs (4 B H S^2 D, halved for causal),
the issue's convention. A benchmark, not a test: a peer that fails is
reported and the run goes on.
"""

import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ftgpu.timing  # noqa: E402
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
    parser.add_argument("plan")
    parser.add_argument("--seqlens", type=int, nargs="+",
                        default=[1024, 4096, 16384])
    parser.add_argument("--tokens", type=int, default=8 * 16384)
    parser.add_argument("--heads", type=int, default=16)
    parser.add_argument("--peers", nargs="+",
                        default=["sdpa-flash", "cudnn", "flex"])
    args = parser.parse_args()
    kernel = runtime.load(args.plan)
    peers = Peers(torch)
    D, causal, dev = 64, True, "cuda"
    H = args.heads
    print(f"{'S':>6} {'impl':>11} {'ms':>8} {'TFLOP/s':>8} {'speedup':>8}")
    for S in args.seqlens:
        B = max(1, args.tokens // S)
        scale = D ** -0.5
        gen = torch.Generator(device=dev).manual_seed(S)
        q, k, v, do = (torch.randn(B, S, H, D, device=dev, generator=gen,
                                   dtype=torch.bfloat16) for _ in range(4))
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
        print(f"{S:6} {'flashtile':>11} {ms:8.3f} {flops / ms / 1e9:8.1f}")
        for peer in args.peers:
            try:
                pms = ftgpu.timing.time_ms(
                    peer_backward(peers, peer, q, k, v, do, scale, causal))
                print(f"{S:6} {peer:>11} {pms:8.3f} {flops / pms / 1e9:8.1f}"
                      f" {pms / ms:8.2f}")
            except Exception as e:  # noqa: BLE001
                print(f"{S:6} {peer:>11} failed: {type(e).__name__}: "
                      f"{str(e)[:120]}")
        del q, k, v, do, o, lse, dq, dk, dv
        torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())
