#!/usr/bin/env python3
"""Decode-step benchmark and check: FlashTile's decode family against SDPA
flash (FA2), SDPA cuDNN and the memory roofline, in one process.

    python3 tools/gpu/bench_decode.py --kernels DIR [--only NAME ...]

DIR holds launch plans (NAME.plan.json + cubin) as tools/gpu/build_kernels.sh
writes them; the decode ones are named decode_<dtype>_d<D>_<mask>[_<tag>]
(tag: a pinned config, for comparing configs). For every shape of the issue's
table (bf16, B, Hq/Hkv, Sk, Sq, d) and every matching plan:

* Correctness: q, k, v are seeded randn in the kernel's dtype; O and LSE are
  poisoned with NaN, the kernel runs once, and the result is compared with
  float64 attention from tools/gpu/check_fwd.py (same tolerances: O relative
  1e-2 bf16 / 2e-3 f16, LSE 2e-3); then again with kv_splits fixed at 5
  (LaunchOptions::sizes), so that the split path and the combine kernel are
  checked on every shape.
* Timing: CUDA events, 3 warm-up calls, then the mean of 30 calls, for
  FlashTile, SDPA flash and SDPA cuDNN (enable_gqa) on the same inputs, and
  the roofline: one plain read of the same K and V bytes (the faster of
  torch.sum and torch.amax over a buffer that holds K and V back to back).
* Bandwidth counts the K and V bytes (B * Sk * Hkv * (d + dv) * 2).
* Causal shapes with Sq < Sk (speculative decoding): FlashTile is
  bottom-right causal; SDPA's is_causal is top-left (a query would see Sq
  keys), so the peers run unmasked: the same bytes, Sq - 1 more keys a row.

* Paged KV (the plans in DIR/paged, built with --paged-kv): the same K and
  V copied into page pools of 16 rows in a random page order, addressed
  through an int32 block table; checked like the others, and timed next to
  the contiguous plan of the same dtype, head dim and mask ("x contiguous":
  contiguous time / paged time).

Prints one table; exit status 1 if any correctness check fails, else 0 (a
benchmark: speed is reported, not asserted).
"""

import argparse
import os
import sys
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_fwd import KernelInfo, compare, find_kernels, reference, runtime  # noqa: E402
import ftgpu.timing  # noqa: E402

# (B, Hq, Hkv, Sk, Sq, d, causal): the table.
SHAPES = [
    (32, 32, 8, 8192, 1, 128, False),
    (32, 32, 8, 8192, 1, 64, False),
    (32, 32, 32, 8192, 1, 128, False),
    (8, 32, 8, 8192, 1, 128, False),
    (4, 32, 8, 8192, 1, 128, False),
    (1, 32, 8, 65536, 1, 128, False),
    (32, 32, 8, 8192, 4, 128, True),
]


FORCED_SPLITS = 5
PAGE_SIZE = 16


def mean_us(torch, fn, warmup=3, reps=30):
    """us per call of `fn` (ftgpu.timing, which every benchmark shares)."""
    return ftgpu.timing.time_ms(fn, warmup, reps) * 1000.0


def try_time(torch, fn):
    try:
        fn()
        torch.cuda.synchronize()
        return mean_us(torch, fn), ""
    except Exception as e:  # noqa: BLE001  (a peer that cannot run)
        return None, type(e).__name__ + ": " + str(e).split("\n")[0][:80]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kernels", required=True)
    parser.add_argument("--only", nargs="*", default=None,
                        help="plan names to run (default: every decode_*)")
    parser.add_argument("--no-check", action="store_true")
    args = parser.parse_args()

    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel
    import torch.nn.functional as F

    plans = [p for p in find_kernels([args.kernels])
             if os.path.basename(p).startswith("decode_")]
    paged_dir = os.path.join(args.kernels, "paged")
    if os.path.isdir(paged_dir):
        plans += find_kernels([paged_dir])
    if args.only:
        plans = [p for p in plans
                 if os.path.basename(p)[:-len(".plan.json")] in args.only]
    kernels = []
    for path in plans:
        kernel = runtime.load(path)
        name = os.path.basename(path)[:-len(".plan.json")]
        if os.path.dirname(path) == paged_dir:
            name = "paged/" + name
        kernels.append((name, kernel, KernelInfo(kernel)))
    print(f"bench_decode: {len(kernels)} plan(s) on "
          f"{torch.cuda.get_device_name()}", flush=True)

    failures = 0
    rows = []
    for (b, hq, hkv, sk, sq, d, causal) in SHAPES:
        matching = [(n, k, m) for n, k, m in kernels
                    if m.dtype == "bf16" and m.head_dim == d and m.causal == causal]
        if not matching:
            continue
        dtype = torch.bfloat16
        gen = torch.Generator(device="cuda")
        gen.manual_seed(1234)
        q = torch.randn(b, sq, hq, d, generator=gen, device="cuda").to(dtype)
        # K and V back to back in one buffer, so one read kernel covers both.
        kv = torch.randn(2, b, sk, hkv, d, generator=gen, device="cuda").to(dtype)
        k, v = kv[0], kv[1]
        kv_bytes = kv.numel() * kv.element_size()
        roof_sum, _ = try_time(torch, lambda: torch.sum(kv, dtype=torch.float32))
        roof_max, _ = try_time(torch, lambda: torch.amax(kv))
        roof = min(t for t in (roof_sum, roof_max) if t is not None)
        qt, kt, vt = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        peers = {}
        for name, backend in (("fa2", SDPBackend.FLASH_ATTENTION),
                              ("cudnn", SDPBackend.CUDNN_ATTENTION)):
            def run(backend=backend):
                with sdpa_kernel(backend):
                    # SDPA's is_causal is top-left aligned: with Sq < Sk a
                    # query would see Sq keys. The peers run without a mask
                    # instead: the same bytes, and bottom-right causal
                    # differs from it in Sq - 1 keys per row.
                    return F.scaled_dot_product_attention(
                        qt, kt, vt, is_causal=causal and sq == sk,
                        enable_gqa=hq != hkv)
            peers[name] = try_time(torch, run)
        # The same K and V in page pools, pages in a random order.
        pages = sk // PAGE_SIZE
        order = torch.randperm(b * pages, generator=gen, device="cuda")
        pools = []
        for t in (k, v):
            pool = torch.empty_like(t).view(b * pages, PAGE_SIZE, hkv, d)
            pool[order] = t.reshape(b * pages, PAGE_SIZE, hkv, d)
            pools.append(pool)
        table = order.view(b, pages).to(torch.int32)
        contiguous = {}
        ref = None
        for name, kernel, meta in matching:
            paged = name.startswith("paged/")
            kk, vv = pools if paged else (k, v)
            extra = {"block_table": table} if paged else {}
            o = torch.full((b, sq, hq, d), float("nan"), dtype=dtype, device="cuda")
            lse = torch.full((b, hq, sq), float("nan"), dtype=torch.float32,
                             device="cuda")
            verdict = "-"
            try:
                # Kernel.check computes the derived kv_splits from the
                # device's SM count, as a launch does (it once raised).
                kernel.check(q, kk, vv, o=o, lse=lse, **extra)
                kernel(q, kk, vv, o=o, lse=lse, **extra)
                torch.cuda.synchronize()
                if not args.no_check:
                    if ref is None:
                        ref = reference(torch, qt, kt, vt, meta.softmax_scale,
                                        causal, (-1, -1), "cuda")
                    o_err, lse_err, problems = compare(
                        torch, meta, o.transpose(1, 2), lse, ref[0], ref[1])
                    verdict = (f"ok O {o_err:.1e} LSE {lse_err:.1e}"
                               if not problems else "FAIL " + "; ".join(problems))
                    failures += bool(problems)
                    # The split path on every shape: a fixed, odd split
                    # count (the heuristic picks 1 for large batches).
                    o.fill_(float("nan"))
                    lse.fill_(float("nan"))
                    kernel.launch(q, kk, vv, o=o, lse=lse,
                                  sizes={"kv_splits": FORCED_SPLITS}, **extra)
                    torch.cuda.synchronize()
                    _, _, forced = compare(torch, meta, o.transpose(1, 2), lse,
                                           ref[0], ref[1])
                    if forced:
                        verdict += f"; FAIL with {FORCED_SPLITS} splits: " + \
                            "; ".join(forced)
                        failures += 1
                    else:
                        verdict += f"; {FORCED_SPLITS} splits ok"
                t, err = try_time(
                    torch, lambda: kernel(q, kk, vv, o=o, lse=lse, **extra))
            except Exception:  # noqa: BLE001
                traceback.print_exc()
                t, err, verdict = None, "launch failed", "FAIL"
                failures += 1
            fa2, cudnn = peers["fa2"][0], peers["cudnn"][0]
            base = name[len("paged/"):] if paged else name
            if not paged:
                contiguous[base] = t
            flat = contiguous.get(base) if paged else None
            rows.append([
                f"B={b} {hq}/{hkv} Sk={sk} Sq={sq} d={d}" + (" causal" if causal else ""),
                name, meta.config,
                f"{t:.1f}" if t else err, f"{kv_bytes / t / 1e6:.2f}" if t else "-",
                f"{roof / t:.2f}" if t else "-",
                f"{fa2:.1f}" if fa2 else peers["fa2"][1][:30],
                f"{fa2 / t:.2f}" if t and fa2 else "-",
                f"{cudnn:.1f}" if cudnn else peers["cudnn"][1][:30],
                f"{cudnn / t:.2f}" if t and cudnn else "-",
                f"{roof:.1f}", f"{flat / t:.2f}" if flat and t else "-",
                verdict])
            print(" | ".join(rows[-1]), flush=True)
        del q, kv, ref, pools, table
        torch.cuda.empty_cache()

    header = ["shape (bf16)", "plan", "config", "FlashTile us", "TB/s",
              "x roofline", "FA2 us", "x FA2", "cuDNN us", "x cuDNN",
              "roofline us", "x contiguous", "check"]
    print()
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for r in rows:
        print("| " + " | ".join(r) + " |")
    print(f"\nbench_decode: {len(rows) - failures} of {len(rows)} checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
