#!/usr/bin/env python3
"""GPU check and benchmark of the tile-language examples (dsl/examples).

    python3 tools/gpu/check_tiles.py --kernels DIR

DIR holds the plans tools/gpu/build_kernels.sh writes:
var_<example>_<dtype>_c<0|1>.plan.json (c1: causal; from the C++ examples),
pytile_<example>_<dtype>_c<0|1>.plan.json (the same programs written in
Python, python_bindings/examples/tile_attention.py) and the plain kernels
sm120cfg_bf16_d128_{full,causal}. Each example has a PyTorch eager twin,
with the causal mask bottom-right aligned:

  * sigmoid (FlashSigmoid): O = sigmoid(scale * Q K^T + bias) V, masked
    entries weighing 0, bias = -log(Sk);
  * differential (DIFF Transformer): with Q = [Q1; Q2] and K = [K1; K2]
    halves of the head dim, O = (softmax(Q1 K1^T / sqrt(d)) - lambda
    softmax(Q2 K2^T / sqrt(d))) V, d = head_dim / 2, lambda = 0.8;
  * relu (Wortsman et al., 2023): O_i = relu(scale q_i K^T) V / n_i, n_i
    the keys row i sees;

and is checked and timed:

  * correctness against the twin in float64: f16 and bf16, causal or not,
    odd lengths, GQA and MQA, Sq != Sk, (B, H, S, D) tensors passed as
    .transpose(1, 2) views, O poisoned with NaN first. Tolerance
    max|o - ref| / max|ref|: bf16 1e-2, f16 2e-3; rows with no key give 0.
  * speed (bf16, d = 128, B = 4, Hq / Hkv = 32 / 8, S = 4096): next to
    FlashTile's plain softmax kernel of the same causality and config, the
    eager twin and PyTorch SDPA (flash). TFLOP/s count 4 * d flops per
    visible score (the usual convention; causal counts half the square);
    differential attention does 1.5x that work (two P V products), and its
    ratio to the plain kernel is of times.

With --quick: bf16 causal on two small shapes per example and no benchmark (for
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
import ftgpu.timing  # noqa: E402
from ftgpu.reference import attention as attention_reference  # noqa: E402
from ftgpu.tolerance import LSE_TOLERANCE, O_TOLERANCE, torch_dtype  # noqa: E402


def _float64_heads(q, k, v):
    """q, k, v in float64 with K and V repeated to Q's heads (GQA)."""
    rep = q.shape[1] // k.shape[1]
    return (q.double(), k.double().repeat_interleave(rep, dim=1),
            v.double().repeat_interleave(rep, dim=1))


def _keep(q, k, causal):
    """(Sq, Sk) bool: the keys each query sees (causal: bottom-right
    aligned)."""
    Sq, Sk = q.shape[2], k.shape[2]
    if not causal:
        return torch.ones(Sq, Sk, dtype=torch.bool, device=q.device)
    qi = torch.arange(Sq, device=q.device).view(Sq, 1)
    ki = torch.arange(Sk, device=q.device).view(1, Sk)
    return ki <= qi + (Sk - Sq)


def sigmoid_reference(q, k, v, scale, bias, causal):
    """float64 O (B, Sq, Hq, Dv) from (B, H, S, D) inputs."""
    qd, kd, vd = _float64_heads(q, k, v)
    p = torch.sigmoid(qd @ kd.transpose(-1, -2) * scale + bias)
    p = p * _keep(q, k, causal).double()
    return (p @ vd).transpose(1, 2)


def sigmoid_hooked_reference(q, k, v, scale, bias, causal, slope, band):
    """sigmoid_reference with the hooks of tile_attention's
    sigmoid_hooked_attention: -slope * |q_idx - kv_idx| added to the scaled
    score, and only keys within `band` positions of the query."""
    qd, kd, vd = _float64_heads(q, k, v)
    Sq, Sk = q.shape[2], k.shape[2]
    dist = (torch.arange(Sq, device=q.device).view(Sq, 1) -
            torch.arange(Sk, device=q.device).view(1, Sk)).abs().double()
    p = torch.sigmoid(qd @ kd.transpose(-1, -2) * scale - slope * dist + bias)
    p = p * (_keep(q, k, causal) & (dist < band)).double()
    return (p @ vd).transpose(1, 2)


LAMBDA = 0.8
SLOPE, BAND = 0.01, 256  # tile_attention.sigmoid_hooked_attention's


def differential_reference(q, k, v, causal, lam):
    """float64 O (B, Sq, Hq, Dv) from (B, H, S, D) inputs."""
    half = q.shape[3] // 2
    qd, kd, vd = _float64_heads(q, k, v)
    keep = _keep(q, k, causal)

    def probs(a, b):
        s = (a @ b.transpose(-1, -2)) / math.sqrt(half)
        s = s.masked_fill(~keep, float("-inf"))
        p = torch.softmax(s, dim=-1)
        return torch.nan_to_num(p, nan=0.0)  # rows with no key: 0
    p1 = probs(qd[..., :half], kd[..., :half])
    p2 = probs(qd[..., half:], kd[..., half:])
    return ((p1 - lam * p2) @ vd).transpose(1, 2)


def relu_reference(q, k, v, scale, causal):
    """float64 O (B, Sq, Hq, Dv): relu(scale q.k) v / (keys the row sees)."""
    qd, kd, vd = _float64_heads(q, k, v)
    keep = _keep(q, k, causal).double()
    p = torch.relu(qd @ kd.transpose(-1, -2) * scale) * keep
    n = keep.sum(-1, keepdim=True)
    o = torch.where(n > 0, (p @ vd) / n.clamp(min=1), torch.zeros_like(p @ vd))
    return o.transpose(1, 2)


def check_case(kernel, dtype, causal, B, Hq, Hkv, Sq, Sk, seed, example="sigmoid"):
    dev = "cuda"
    tdtype = torch_dtype(dtype)
    g = torch.Generator(device="cpu").manual_seed(seed)
    d = 128
    q = torch.randn(B, Hq, Sq, d, generator=g).to(dev, tdtype)
    k = torch.randn(B, Hkv, Sk, d, generator=g).to(dev, tdtype)
    v = torch.randn(B, Hkv, Sk, d, generator=g).to(dev, tdtype)
    o = torch.full((B, Hq, Sq, d), float("nan"), device=dev, dtype=tdtype).transpose(1, 2)
    lse = torch.full((B, Hq, Sq), float("nan"), device=dev, dtype=torch.float32)
    if example == "sigmoid":
        bias = -math.log(Sk)
        scale = 1.0 / math.sqrt(d)
        kernel(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), o=o,
               lse=lse, bias=bias)
        ref = sigmoid_reference(q, k, v, scale, bias, causal)
    elif example == "sigmoid_hooked":
        bias = -math.log(Sk)
        scale = 1.0 / math.sqrt(d)
        kernel(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), o=o,
               lse=lse, bias=bias, slope=SLOPE)
        ref = sigmoid_hooked_reference(q, k, v, scale, bias, causal, SLOPE,
                                       BAND)
    elif example == "relu":
        kernel(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), o=o,
               lse=lse)
        ref = relu_reference(q, k, v, 1.0 / math.sqrt(d), causal)
    else:
        kernel(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), o=o,
               lse=lse, lam=LAMBDA)
        ref = differential_reference(q, k, v, causal, LAMBDA)
    torch.cuda.synchronize()
    denom = ref.abs().max().item()
    err = (o.double() - ref).abs().max().item() / (denom if denom > 0 else 1.0)
    # Rows with no visible key (causal, Sq > Sk): exactly 0.
    empty_rows = max(0, Sq - Sk) if causal else 0
    zero_ok = bool((o[:, :empty_rows].double() == 0).all()) if empty_rows else True
    tol = O_TOLERANCE[dtype]
    ok = err < tol and zero_ok and not torch.isnan(o).any().item()
    return ok, err, empty_rows


EXAMPLES = ("sigmoid", "differential", "relu")
# Written only in Python (hooks inside a tile program).
PY_EXAMPLES = EXAMPLES + ("sigmoid_hooked",)


def run_checks(kernels_dir, quick=False):
    shapes = [  # B, Hq, Hkv, Sq, Sk
        (2, 4, 4, 257, 257),
        (1, 8, 2, 131, 379),   # GQA, Sq < Sk
        (2, 6, 1, 300, 177),   # MQA, Sq > Sk
        (1, 4, 2, 1000, 1000),
        (1, 2, 2, 1, 17),      # one query row
    ]
    if quick:  # under compute-sanitizer: two small shapes
        shapes = [shapes[2], shapes[4]]
    total = passed = 0
    print(f"{'kernel':30} {'shape':24} {'O err':>9} {'empty':>6}  result")
    dtypes = ("bf16",) if quick else ("bf16", "f16")
    causals = (1,) if quick else (0, 1)
    cases = [(p, e, t, c)
             for p, examples in (("var", EXAMPLES), ("pytile", PY_EXAMPLES))
             for e in examples for t in dtypes for c in causals]
    for prefix, example, dtype, c in cases:
        name = f"{prefix}_{example}_{dtype}_c{c}"
        path = os.path.join(kernels_dir, name + ".plan.json")
        if not os.path.exists(path):
            print(f"{name:30} MISSING")
            total += 1
            continue
        kernel = runtime.load(path)
        for i, (B, Hq, Hkv, Sq, Sk) in enumerate(shapes):
            total += 1
            ok, err, empty = check_case(kernel, dtype, bool(c), B, Hq, Hkv, Sq, Sk,
                                        seed=200 + i, example=example)
            passed += ok
            shape = f"{B}x{Hq}/{Hkv} {Sq}x{Sk}"
            print(f"{name:30} {shape:24} {err:9.2e} {empty:6d}  "
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
    time_ms = lambda fn: ftgpu.timing.time_ms(fn, 5, 20)
    kr = k.repeat_interleave(Hq // Hkv, dim=1)
    vr = v.repeat_interleave(Hq // Hkv, dim=1)
    print(f"\nbf16 d={d} B={B} H={Hq}/{Hkv} S={S}")
    print(f"{'':8} {'sigmoid':>9} {'plain':>9} {'vs plain':>8} {'eager':>9} "
          f"{'SDPA':>9} {'vs SDPA':>8}   (TFLOP/s)")
    diffs = []
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
        diffs.append((c, t_plain, t_sdpa, flops))
    # Differential attention: the same inputs as [Q1; Q2], [K1; K2] halves.
    print(f"\n{'differential':12} {'ms':>7} {'TFLOP/s':>8} {'plain ms':>9} "
          f"{'vs plain':>8} {'eager ms':>9}   (time ratios; 1.5x the plain work)")
    for c, t_plain, t_sdpa, flops in diffs:
        diff = load(f"var_differential_bf16_c{c}")
        t_diff = time_ms(lambda: diff(qt, kt, vt, o=o, lse=lse, lam=LAMBDA))
        half = d // 2
        mask = torch.ones(S, S, device=dev, dtype=torch.bool).tril() if c else None

        def eager_diff():
            s1 = q[..., :half] @ kr[..., :half].transpose(-1, -2) / math.sqrt(half)
            s2 = q[..., half:] @ kr[..., half:].transpose(-1, -2) / math.sqrt(half)
            if mask is not None:
                s1 = s1.masked_fill(~mask, float("-inf"))
                s2 = s2.masked_fill(~mask, float("-inf"))
            return (torch.softmax(s1, -1) - LAMBDA * torch.softmax(s2, -1)) @ vr
        try:
            t_eager = time_ms(eager_diff)
        except torch.OutOfMemoryError:
            t_eager = float("inf")
        print(f"{'causal' if c else 'full':12} {t_diff:7.3f} {1.5 * flops / t_diff / 1e9:8.1f} "
              f"{t_plain:9.3f} {t_plain / t_diff:8.2f} {t_eager:9.3f}")
    print(f"\n{'relu':12} {'TFLOP/s':>8} {'plain':>8} {'vs plain':>8}")
    for c, t_plain, t_sdpa, flops in diffs:
        relu = load(f"var_relu_bf16_c{c}")
        t_relu = time_ms(lambda: relu(qt, kt, vt, o=o, lse=lse))
        print(f"{'causal' if c else 'full':12} {flops / t_relu / 1e9:8.1f} "
              f"{flops / t_plain / 1e9:8.1f} {t_plain / t_relu:8.2f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kernels", required=True)
    parser.add_argument("--quick", action="store_true",
                        help="bf16 causal, two small shapes per example, no benchmark")
    args = parser.parse_args()
    ok = run_checks(args.kernels, args.quick)
    if not args.quick:
        run_bench(args.kernels)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
