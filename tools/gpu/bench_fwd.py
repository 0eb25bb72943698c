#!/usr/bin/env python3
"""Benchmark FlashTile forward kernels against PyTorch's attention backends.

    python3 tools/gpu/bench_fwd.py NAME.plan.json|DIR ... [--seqlens 4096 16384]

For each kernel (launch plan + cubin, run through flashtile.runtime) and each sequence length S, builds
(B, H, S, D) inputs in the kernel's dtype with B * S = --tokens (default
16 * 16384) and H = --heads (default 16), and times, in this one process:

  flashtile  the kernel, on .transpose(1, 2) views of the (B, H, S, D) tensors
  sdpa-flash torch SDPA, SDPBackend.FLASH_ATTENTION
  cudnn      torch SDPA, SDPBackend.CUDNN_ATTENTION
  flex       FlexAttention under torch.compile (causal / window: a block mask)

with CUDA events (median of --reps after --warmup calls). FLOPs are
4 * B * H * S * S * D (2 * S * S * (D + Dv) when Dv != D), halved for causal;
a sliding window counts the (query, key) pairs it keeps. A peer that is not
available or fails is reported as such; the run goes on. This is a benchmark,
not a test: the exit status is 0 unless no kernel could be loaded.
"""

import argparse
import glob
import os
import statistics
import sys
import traceback

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_fwd import KernelInfo, runtime  # noqa: E402  (sets up the path)
import ftgpu.timing  # noqa: E402
import ftgpu.tolerance  # noqa: E402

PEERS = ("sdpa-flash", "cudnn", "flex")


def visible_pairs(sq, sk, causal, window):
    """Number of (query, key) pairs the mask keeps (bottom-right aligned)."""
    left, right = window
    if causal:
        right = 0 if right < 0 else min(right, 0)
    if left < 0 and right < 0:
        return sq * sk
    total = 0
    off = sk - sq
    for i in range(sq):
        lo = 0 if left < 0 else max(0, i + off - left)
        hi = sk - 1 if right < 0 else min(sk - 1, i + off + right)
        total += max(0, hi - lo + 1)
    return total


def attention_flops(b, h, s, d, dv, causal, window):
    per_pair = 2 * (d + dv)
    left, right = window
    has_window = left >= 0 or (right >= 0 and not causal)
    if causal and not has_window:
        pairs = s * s / 2  # the usual convention
    else:
        pairs = visible_pairs(s, s, causal, window)
    return b * h * pairs * per_pair


def time_ms(torch, fn, warmup, reps):
    """ms per call of `fn` (ftgpu.timing, which every benchmark shares)."""
    return ftgpu.timing.time_ms(fn, warmup, reps)


def find_kernels(paths):
    files = []
    for p in paths:
        files += sorted(glob.glob(os.path.join(p, "*.plan.json"))) if os.path.isdir(p) else [p]
    return files


class Peers:
    """Builds the callables of the PyTorch peers for one input set."""

    def __init__(self, torch):
        self.torch = torch
        self._flex = None
        self._flex_error = None

    def flex(self):
        if self._flex is None and self._flex_error is None:
            try:
                import torch._dynamo
                cfg = torch._dynamo.config
                for knob in ("cache_size_limit", "recompile_limit"):
                    if hasattr(cfg, knob):
                        setattr(cfg, knob, max(getattr(cfg, knob), 256))
                from torch.nn.attention.flex_attention import flex_attention
                self._flex = self.torch.compile(flex_attention, dynamic=False)
            except Exception as e:  # noqa: BLE001
                self._flex_error = f"{type(e).__name__}: {e}"
        if self._flex is None:
            raise RuntimeError(self._flex_error)
        return self._flex

    def make(self, peer, q, k, v, scale, causal, window):
        torch = self.torch
        import torch.nn.functional as F
        left, right = window
        has_window = left >= 0 or (right >= 0 and not (causal and right == 0))
        if peer in ("sdpa-flash", "cudnn"):
            from torch.nn.attention import SDPBackend, sdpa_kernel
            if has_window:
                raise NotImplementedError("SDPA has no sliding window")
            backend = {"sdpa-flash": SDPBackend.FLASH_ATTENTION,
                       "cudnn": SDPBackend.CUDNN_ATTENTION}[peer]

            def run():
                with sdpa_kernel(backend):
                    return F.scaled_dot_product_attention(
                        q, k, v, is_causal=causal, scale=scale)
            return run
        if peer == "flex":
            from torch.nn.attention.flex_attention import create_block_mask
            flex = self.flex()
            block_mask = None
            if causal or has_window:
                off = k.shape[2] - q.shape[2]
                r = 0 if causal else right

                def mask_mod(b, h, q_idx, kv_idx):
                    keep = kv_idx == kv_idx
                    if r >= 0:
                        keep = keep & (kv_idx <= q_idx + off + r)
                    if left >= 0:
                        keep = keep & (kv_idx >= q_idx + off - left)
                    return keep
                block_mask = create_block_mask(
                    mask_mod, B=None, H=None, Q_LEN=q.shape[2],
                    KV_LEN=k.shape[2], device=q.device)

            def run():
                return flex(q, k, v, block_mask=block_mask, scale=scale)
            return run
        raise ValueError(peer)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("kernels", nargs="+", help="launch plans or folders of them")
    parser.add_argument("--seqlens", type=int, nargs="+",
                        default=[1024, 2048, 4096, 8192, 16384])
    parser.add_argument("--heads", type=int, default=16)
    parser.add_argument("--tokens", type=int, default=16 * 16384,
                        help="B * S (B = tokens // S, at least 1)")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--peers", nargs="*", default=list(PEERS),
                        choices=list(PEERS))
    parser.add_argument("--verbose", action="store_true",
                        help="print tracebacks of failing peers")
    args = parser.parse_args(argv)

    import torch
    if not torch.cuda.is_available():
        print("bench_fwd: no CUDA device", file=sys.stderr)
        return 1
    print(f"bench_fwd on {torch.cuda.get_device_name()}, torch {torch.__version__}; "
          f"H = {args.heads}, B * S = {args.tokens}; median of {args.reps} "
          f"after {args.warmup} warmup calls")
    peers = Peers(torch)
    results = []
    loaded = 0
    for path in find_kernels(args.kernels):
        try:
            kernel = runtime.load(path)
        except runtime.FlashTileError as e:
            print(f"skip {path}: {e}")
            continue
        loaded += 1
        m = KernelInfo(kernel)
        dtype = ftgpu.tolerance.torch_dtype(m.dtype)
        for s in args.seqlens:
            b = max(1, args.tokens // s)
            h = args.heads
            row = {"kernel": m.kernel, "dtype": m.dtype,
                   "d": m.head_dim, "mask": m.mask_description,
                   "config": m.config, "shape": f"{b}x{h}x{s}"}
            try:
                gen = torch.Generator(device="cuda").manual_seed(0)
                q = torch.randn(b, h, s, m.head_dim, device="cuda",
                                generator=gen).to(dtype)
                k = torch.randn(b, h, s, m.head_dim, device="cuda",
                                generator=gen).to(dtype)
                v = torch.randn(b, h, s, m.head_dim_v, device="cuda",
                                generator=gen).to(dtype)
            except torch.OutOfMemoryError as e:
                print(f"{m.kernel} S={s}: out of memory for the inputs: {e}")
                continue
            scale = m.softmax_scale
            flops = attention_flops(b, h, s, m.head_dim, m.head_dim_v,
                                    m.causal, m.window)
            out = torch.empty(b, h, s, m.head_dim_v, dtype=dtype, device="cuda")
            lse = torch.empty(b, h, s, dtype=torch.float32, device="cuda")
            qt, kt, vt, ot = (x.transpose(1, 2) for x in (q, k, v, out))

            def flashtile():
                return kernel(qt, kt, vt, o=ot, lse=lse)
            timings = {}
            try:
                timings["flashtile"] = time_ms(torch, flashtile, args.warmup,
                                               args.reps)
            except Exception as e:  # noqa: BLE001
                timings["flashtile"] = f"{type(e).__name__}: {e}"
                if args.verbose:
                    traceback.print_exc()
            reference_out = None
            for peer in args.peers:
                try:
                    fn = peers.make(peer, q, k, v, scale, m.causal, m.window)
                    timings[peer] = time_ms(torch, fn, args.warmup, args.reps)
                    if reference_out is None:
                        reference_out = fn()
                except Exception as e:  # noqa: BLE001
                    timings[peer] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
                    if args.verbose:
                        traceback.print_exc()
            if reference_out is not None and isinstance(timings["flashtile"], float):
                flashtile()
                diff = (out.float() - reference_out.float()).abs().max().item()
                row["max|diff| vs peer"] = f"{diff:.2e}"
            parts = []
            ft = timings["flashtile"]
            for name, t in timings.items():
                if isinstance(t, float):
                    tflops = flops / (t * 1e-3) / 1e12
                    row[name] = f"{tflops:.1f}"
                    text = f"{name} {t:.3f} ms {tflops:.1f} TFLOP/s"
                    if name != "flashtile" and isinstance(ft, float):
                        row[name + " ratio"] = f"{t / ft:.2f}"
                        text += f" (flashtile/{name} = {t / ft:.2f}x)"
                    parts.append(text)
                else:
                    row[name] = "n/a"
                    parts.append(f"{name} failed: {t[:200]}")
            print(f"{m.kernel} {row['shape']} ({m.dtype}, d={m.head_dim}, "
                  f"{m.mask_description}): " + "; ".join(parts), flush=True)
            results.append(row)
            del q, k, v, out, lse, qt, kt, vt, ot, reference_out
            torch.cuda.empty_cache()

    if not loaded:
        print("bench_fwd: no kernel loaded", file=sys.stderr)
        return 1
    columns = ["kernel", "dtype", "d", "mask", "config", "shape", "flashtile"]
    for peer in args.peers:
        columns += [peer, peer + " ratio"]
    columns.append("max|diff| vs peer")
    print()
    print("TFLOP/s; 'ratio' = FlashTile speed / peer speed (> 1: FlashTile faster)")
    table = [columns] + [[str(r.get(c, "-")) for c in columns] for r in results]
    widths = [max(len(r[i]) for r in table) for i in range(len(columns))]
    for n, r in enumerate(table):
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
        if n == 0:
            print("  ".join("-" * w for w in widths))
    return 0


if __name__ == "__main__":
    sys.exit(main())
