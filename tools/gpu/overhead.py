#!/usr/bin/env python3
"""Launch overhead of FlashTile's Python call against torch SDPA.

    python3 tools/gpu/overhead.py PLAN.plan.json... [--iters 2000]

For each plan (a forward attention family) and each tiny shape (B = 1,
H = 1, S in --seqlens, the plan's head dim), times in one process: the
FlashTile call with outputs allocated (kernel(q, k, v)), with outputs given
(kernel(q, k, v, o=o, lse=lse)), and torch's scaled_dot_product_attention on
the same (B, H, S, D) data. Each is called --iters times back to back after a
warm-up, with one synchronisation at the end; the wall time per call is
reported in microseconds, with the ratio to SDPA (target: <= 1.5).
Prints one line per case and "overhead: worst ratio R" at the end; exits 0
unless a plan fails to load or run.
"""

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_fwd import KernelInfo, runtime  # noqa: E402
import ftgpu.tolerance  # noqa: E402


def per_call_us(torch, fns, iters, rounds=7):
    """Host cost of each of `fns` in us per call: `rounds` rounds, each timing
    `iters` back-to-back calls of every function in turn, and the best round
    of each. Interleaving keeps the machine's drift (the first measurements of
    a process vary by 2x on the H200 machine) from favouring either side."""
    for fn in fns:
        for _ in range(200):
            fn()
    best = [float("inf")] * len(fns)
    for _ in range(rounds):
        for i, fn in enumerate(fns):
            torch.cuda.synchronize()
            start = time.perf_counter()
            for _ in range(iters):
                fn()
            torch.cuda.synchronize()
            best[i] = min(best[i], (time.perf_counter() - start) / iters * 1e6)
    return best


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("plans", nargs="+")
    parser.add_argument("--seqlens", type=int, nargs="+", default=[1, 128])
    parser.add_argument("--iters", type=int, default=1000)
    args = parser.parse_args(argv)
    import torch
    import torch.nn.functional as F
    worst = 0.0
    status = 0
    print(f"{'plan':40} {'S':>4} {'d':>4} {'flashtile':>10} {'ft(o given)':>12} "
          f"{'sdpa':>8} {'ratio':>6}")
    for path in args.plans:
        try:
            kernel = runtime.load(path)
        except runtime.FlashTileError as e:
            print(f"FAIL {path}: {e}")
            status = 1
            continue
        m = KernelInfo(kernel)
        dt = ftgpu.tolerance.torch_dtype(m.dtype)
        for s in args.seqlens:
            q, k, v = (torch.randn(1, 1, s, m.head_dim, device="cuda", dtype=dt)
                       for _ in range(3))
            qt, kt, vt = (x.transpose(1, 2) for x in (q, k, v))
            o = torch.empty_like(q).transpose(1, 2)
            lse = torch.empty(1, 1, s, device="cuda")
            try:
                ft, ft_given, sdpa = per_call_us(torch, [
                    lambda: kernel(qt, kt, vt),
                    lambda: kernel(qt, kt, vt, o=o, lse=lse),
                    lambda: F.scaled_dot_product_attention(
                        q, k, v, is_causal=m.causal)], args.iters)
            except runtime.FlashTileError as e:
                print(f"FAIL {m.kernel} S={s}: {e}")
                status = 1
                continue
            ratio = ft / sdpa
            worst = max(worst, ratio)
            print(f"{m.kernel:40} {s:>4} {m.head_dim:>4} {ft:>8.1f}us "
                  f"{ft_given:>10.1f}us {sdpa:>6.1f}us {ratio:>6.2f}")
    print(f"overhead: worst ratio {worst:.2f} (FlashTile call / SDPA call; "
          f"target <= 1.5)")
    return status


if __name__ == "__main__":
    sys.exit(main())
