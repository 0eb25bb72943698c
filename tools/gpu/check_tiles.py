#!/usr/bin/env python3
"""GPU check and benchmark of the tile-language examples (dsl/examples).

    python3 tools/gpu/check_tiles.py --kernels DIR

DIR holds the plans tools/gpu/build_kernels.sh writes:
var_sigmoid_<dtype>_c<0|1>.plan.json (c1: causal) and the plain kernels
sm120cfg_bf16_d128_{full,causal}. Sigmoid attention (FlashSigmoid) has a
PyTorch eager twin, O = sigmoid(scale * Q K^T + bias) V with the causal mask
bottom-right aligned and masked entries weighing 0:

  * correctness against the twin in float64: f16 and bf16, causal or not,
    odd lengths, GQA and MQA, Sq != Sk, (B, H, S, D) tensors passed as
    .transpose(1, 2) views, O poisoned with NaN first. Tolerance
    max|o - ref| / max|ref|: bf16 1e-2, f16 2e-3; rows with no key give 0.
  * speed (bf16, d = 128, B = 4, Hq / Hkv = 32 / 8, S = 4096): next to
    FlashTile's plain softmax kernel of the same causality and config, the
    eager twin and PyTorch SDPA (flash). TFLOP/s count 4 * d flops per
    visible score (the usual convention; causal counts half the square).

With --quick: bf16 causal on two small shapes and no benchmark (for
compute-sanitizer).

Exit status: 0 when every correctness case passes, 1 otherwise.
"""

import argparse
import math
import os
import sys

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
try:
    from flashtile import runtime
except ImportError:
    sys.path.insert(0, os.environ.get(
        "FLASHTILE_PYTHON_PATH", os.path.join(_ROOT, "build-rt", "python_bindings")))
    from flashtile import runtime

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_fwd  # noqa: E402  (its timing loop)


def sigmoid_reference(q, k, v, scale, bias, causal):
    """float64 O (B, Sq, Hq, Dv) from (B, H, S, D) inputs."""
    B, Hq, Sq, _ = q.shape
    Hkv, Sk = k.shape[1], k.shape[2]
    rep = Hq // Hkv
    qd = q.double()
    kd = k.double().repeat_interleave(rep, dim=1)
    vd = v.double().repeat_interleave(rep, dim=1)
    p = torch.sigmoid(qd @ kd.transpose(-1, -2) * scale + bias)
    if causal:
        qi = torch.arange(Sq, device=q.device).view(Sq, 1)
        ki = torch.arange(Sk, device=q.device).view(1, Sk)
        p = p * (ki <= qi + (Sk - Sq)).double()
    return (p @ vd).transpose(1, 2)


def check_case(kernel, dtype, causal, B, Hq, Hkv, Sq, Sk, seed):
    dev = "cuda"
    tdtype = {"bf16": torch.bfloat16, "f16": torch.float16}[dtype]
    g = torch.Generator(device="cpu").manual_seed(seed)
    d = 128
    q = torch.randn(B, Hq, Sq, d, generator=g).to(dev, tdtype)
    k = torch.randn(B, Hkv, Sk, d, generator=g).to(dev, tdtype)
    v = torch.randn(B, Hkv, Sk, d, generator=g).to(dev, tdtype)
    bias = -math.log(Sk)
    o = torch.full((B, Hq, Sq, d), float("nan"), device=dev, dtype=tdtype).transpose(1, 2)
    lse = torch.full((B, Hq, Sq), float("nan"), device=dev, dtype=torch.float32)
    scale = 1.0 / math.sqrt(d)
    kernel(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), o=o, lse=lse,
           bias=bias)
    torch.cuda.synchronize()
    ref = sigmoid_reference(q, k, v, scale, bias, causal)
    denom = ref.abs().max().item()
    err = (o.double() - ref).abs().max().item() / (denom if denom > 0 else 1.0)
    # Rows with no visible key (causal, Sq > Sk): exactly 0.
    empty_rows = max(0, Sq - Sk) if causal else 0
    zero_ok = bool((o[:, :empty_rows].double() == 0).all()) if empty_rows else True
    tol = 1e-2 if dtype == "bf16" else 2e-3
    ok = err < tol and zero_ok and not torch.isnan(o).any().item()
    return ok, err, empty_rows


def run_checks(kernels_dir, quick=False):
    shapes = [  # B, Hq, Hkv, Sq, Sk
        (2, 4, 4, 257, 257),
        (1, 8, 2, 131, 379),   # GQA, Sq < Sk
        (2, 6, 1, 300, 177),   # MQA, Sq > Sk
        (1, 4, 2, 1000, 1000),
        (1, 2, 2, 1, 17),      # one query row
    ]
    if quick:  # under compute-sanitizer: one kernel, two small shapes
        shapes = [shapes[2], shapes[4]]
    total = passed = 0
    print(f"{'kernel':26} {'shape':24} {'O err':>9} {'empty':>6}  result")
    for dtype in (("bf16",) if quick else ("bf16", "f16")):
        for c in ((1,) if quick else (0, 1)):
            name = f"var_sigmoid_{dtype}_c{c}"
            path = os.path.join(kernels_dir, name + ".plan.json")
            if not os.path.exists(path):
                print(f"{name:26} MISSING")
                total += 1
                continue
            kernel = runtime.load(path)
            for i, (B, Hq, Hkv, Sq, Sk) in enumerate(shapes):
                total += 1
                ok, err, empty = check_case(kernel, dtype, bool(c), B, Hq, Hkv, Sq, Sk,
                                            seed=200 + i)
                passed += ok
                shape = f"{B}x{Hq}/{Hkv} {Sq}x{Sk}"
                print(f"{name:26} {shape:24} {err:9.2e} {empty:6d}  "
                      f"{'PASS' if ok else 'FAIL'}")
    print(f"{passed}/{total} cases passed")
    return passed == total


def run_bench(kernels_dir):
    dev = "cuda"
    B, Hq, Hkv, S, d = 4, 32, 8, 4096, 128
    g = torch.Generator(device="cpu").manual_seed(7)
    q = torch.randn(B, Hq, S, d, generator=g).to(dev, torch.bfloat16)
    k = torch.randn(B, Hkv, S, d, generator=g).to(dev, torch.bfloat16)
    v = torch.randn(B, Hkv, S, d, generator=g).to(dev, torch.bfloat16)
    qt, kt, vt = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
    o = torch.empty(B, S, Hq, d, device=dev, dtype=torch.bfloat16)
    lse = torch.empty(B, Hq, S, device=dev, dtype=torch.float32)
    bias = -math.log(S)
    scale = 1.0 / math.sqrt(d)
    load = lambda n: runtime.load(os.path.join(kernels_dir, n + ".plan.json"))
    time_ms = lambda fn: bench_fwd.time_ms(torch, fn, 5, 20)
    kr = k.repeat_interleave(Hq // Hkv, dim=1)
    vr = v.repeat_interleave(Hq // Hkv, dim=1)
    print(f"\nbf16 d={d} B={B} H={Hq}/{Hkv} S={S}")
    print(f"{'':8} {'sigmoid':>9} {'plain':>9} {'vs plain':>8} {'eager':>9} "
          f"{'SDPA':>9} {'vs SDPA':>8}   (TFLOP/s)")
    for c in (0, 1):
        flops = 4 * d * B * Hq * S * S / (2 if c else 1)
        sig = load(f"var_sigmoid_bf16_c{c}")
        plain = load(f"sm120cfg_bf16_d128_{'causal' if c else 'full'}")
        t_sig = time_ms(lambda: sig(qt, kt, vt, o=o, lse=lse, bias=bias))
        t_plain = time_ms(lambda: plain(qt, kt, vt, o=o, lse=lse))
        mask = None
        if c:
            mask = torch.ones(S, S, device=dev, dtype=torch.bool).tril()

        def eager():
            p = torch.sigmoid(q @ kr.transpose(-1, -2) * scale + bias)
            if mask is not None:
                p = p * mask
            return p @ vr
        try:
            t_eager = time_ms(eager)
        except torch.OutOfMemoryError:
            t_eager = float("inf")
        from torch.nn.attention import SDPBackend, sdpa_kernel
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            t_sdpa = time_ms(lambda: torch.nn.functional.scaled_dot_product_attention(
                q, kr, vr, is_causal=bool(c)))
        tf = lambda ms: flops / ms / 1e9
        print(f"{'causal' if c else 'full':8} {tf(t_sig):9.1f} {tf(t_plain):9.1f} "
              f"{t_plain / t_sig:8.2f} {tf(t_eager):9.1f} {tf(t_sdpa):9.1f} "
              f"{t_sdpa / t_sig:8.2f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kernels", required=True)
    parser.add_argument("--quick", action="store_true",
                        help="bf16 causal, two small shapes, no benchmark")
    args = parser.parse_args()
    ok = run_checks(args.kernels, args.quick)
    if not args.quick:
        run_bench(args.kernels)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
