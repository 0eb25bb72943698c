#!/usr/bin/env python3
"""GPU check and benchmark of the variant examples (dsl/examples).

    python3 tools/gpu/check_variants.py --kernels DIR [--check-only|--bench-only]
        [--only EXAMPLE...] [--sanitize]

DIR holds the plans tools/gpu/build_kernels.sh writes for the examples:
var_<example>_<dtype>_c<0|1>.plan.json (c1: causal) and the plain kernels
sm120cfg_<dtype>_d128_{full,causal}. Every example has a PyTorch eager twin
below: its score_mod / mask_mod written with torch ops, used three ways:

  * the float64 reference: scores = q k^T * scale, score_mod on the whole
    (B, H, Sq, Sk) matrix, then mask_mod, the kernel's own causal mask
    (bottom-right aligned) and the sequence end; softmax; a row that sees
    nothing gives O = 0 and LSE = -inf;
  * FlexAttention's score_mod / mask_mod (the same functions), under
    torch.compile, with a block mask built from the mask;
  * the extra inputs (slopes, bias table, document ids, prefix length).

Correctness: every example, f16 and bf16, odd lengths, GQA, Sq != Sk, on
(B, H, S, D) tensors passed as .transpose(1, 2) views, outputs poisoned with
NaN first. O tolerance (max|o - ref| / max|ref|): bf16 1e-2, f16 2e-3; LSE:
|lse - ref| <= 2e-3 * max(1, |ref|).

Speed (bf16, d = 128, B = 4, Hq / Hkv = 32 / 8, S = 4096): each variant next
to FlashTile's plain kernel of the same causality, FlexAttention with the
same hooks, and PyTorch's bundled FA2 (aten._flash_attention_forward) where
it has the variant. TFLOP/s count the visible (unmasked) score entries only.
The document mask runs at S = 16384 with 8 causal documents of 2048 tokens,
against the ideal (FlashTile's causal kernel on each document, summed) and
FA2 varlen on the same documents.

Exit status: 0 when every correctness case passes, 1 otherwise.
"""

import argparse
import glob
import math
import os
import sys
import traceback

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

CHUNK = 1024


# --- The eager twins: (score_mod, mask_mod, make_extras) per example. -------
# score_mod(score, b, h, q_idx, kv_idx, ex) and mask_mod(b, h, q_idx, kv_idx,
# ex) take broadcastable tensors (the reference) or scalars (Flex).

def softcap_score(s, b, h, q, k, ex):
    return 50.0 * torch.tanh(s / 50.0)


def alibi_score(s, b, h, q, k, ex):
    return s + ex["slopes"][h] * (k - q)


def t5_bucket(q, k):
    rel = k - q
    side = torch.where(rel > 0, 16, 0)
    n = torch.abs(rel)
    nf = torch.clamp(n, min=8).to(torch.float32)
    far = 8 + (torch.log(nf / 8.0) / math.log(100.0 / 8.0) * 8.0).to(torch.int64)
    return side + torch.where(n < 8, n, torch.clamp(far, max=15))


def relative_bias_score(s, b, h, q, k, ex):
    return s + ex["bias"][h, t5_bucket(q, k)]


def document_mask(b, h, q, k, ex):
    return ex["doc_ids"][b, q] == ex["doc_ids"][b, k]


def prefix_lm_mask(b, h, q, k, ex):
    return (k <= q) | (k < ex["prefix_len"])


def chunked_mask(b, h, q, k, ex):
    return (q // CHUNK) == (k // CHUNK)


def make_slopes(B, Hq, Sq, Sk, dev):
    # The ALiBi geometric schedule 2^(-8 i / H).
    return {"slopes": torch.tensor([2.0 ** (-8.0 * (i + 1) / Hq) for i in range(Hq)],
                                   dtype=torch.float32, device=dev)}


def make_bias(B, Hq, Sq, Sk, dev):
    g = torch.Generator(device="cpu").manual_seed(7)
    return {"bias": torch.randn(Hq, 32, generator=g).to(dev)}


def make_docs(B, Hq, Sq, Sk, dev, docs=None):
    # Document boundaries at random places (seeded), the same for Q and K
    # positions: ids by position in the key sequence; queries are aligned to
    # the end of the keys like the causal mask.
    g = torch.Generator(device="cpu").manual_seed(11)
    S = max(Sq, Sk)
    ids = torch.zeros(B, S, dtype=torch.int32)
    for b in range(B):
        n = docs or int(torch.randint(2, 6, (1,), generator=g))
        cuts = sorted(torch.randperm(S - 1, generator=g)[: n - 1].add(1).tolist())
        for c in cuts:
            ids[b, c:] += 1
    return {"doc_ids": ids.to(dev)}


def make_prefix(B, Hq, Sq, Sk, dev):
    return {"prefix_len": max(1, Sk // 3)}


EXAMPLES = {
    # name: (score_mod, mask_mod, make_extras, causal variants)
    "softcap": (softcap_score, None, lambda *a: {}, (0, 1)),
    "alibi": (alibi_score, None, make_slopes, (0, 1)),
    "relative_bias": (relative_bias_score, None, make_bias, (0, 1)),
    "document_mask": (None, document_mask, make_docs, (1,)),
    "prefix_lm": (None, prefix_lm_mask, make_prefix, (0,)),
    "chunked": (None, chunked_mask, lambda *a: {}, (1,)),
    "gqa": (None, None, lambda *a: {}, (1,)),
}


def kernel_extras(ex):
    """The extras as kernel arguments (tensors as they are, ints as ints)."""
    return {k: v for k, v in ex.items()}


def reference(q, k, v, scale, causal, score_mod, mask_mod, ex):
    """float64 O (B, Sq, Hq, Dv) and LSE (B, Hq, Sq) from (B, H, S, D) inputs
    (ftgpu.reference, the example's extras bound into its hooks)."""
    o, lse = attention_reference(
        q, k, v, scale, causal=causal,
        score_mod=None if score_mod is None else
        (lambda s, b, h, qi, ki: score_mod(s, b, h, qi, ki, ex)),
        mask_mod=None if mask_mod is None else
        (lambda b, h, qi, ki: mask_mod(b, h, qi, ki, ex)))
    return o.transpose(1, 2), lse


def check_case(kernel, dtype, causal, example, B, Hq, Hkv, Sq, Sk, seed):
    score_mod, mask_mod, make_extras, _ = EXAMPLES[example]
    dev = "cuda"
    tdtype = torch_dtype(dtype)
    g = torch.Generator(device="cpu").manual_seed(seed)
    d = 128
    q = torch.randn(B, Hq, Sq, d, generator=g).to(dev, tdtype)
    k = torch.randn(B, Hkv, Sk, d, generator=g).to(dev, tdtype)
    v = torch.randn(B, Hkv, Sk, d, generator=g).to(dev, tdtype)
    ex = make_extras(B, Hq, Sq, Sk, dev)
    o = torch.full((B, Hq, Sq, d), float("nan"), device=dev, dtype=tdtype).transpose(1, 2)
    lse = torch.full((B, Hq, Sq), float("nan"), device=dev, dtype=torch.float32)
    scale = 1.0 / math.sqrt(d)
    kernel(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), o=o, lse=lse,
           **kernel_extras(ex))
    torch.cuda.synchronize()
    ro, rlse = reference(q, k, v, scale, causal, score_mod, mask_mod, ex)
    denom = ro.abs().max().item()
    o_err = (o.double() - ro).abs().max().item() / (denom if denom > 0 else 1.0)
    finite = torch.isfinite(rlse)
    lse_ok = bool(torch.equal(torch.isneginf(lse), torch.isneginf(rlse)))
    lse_err = 0.0
    if finite.any():
        diff = (lse.double() - rlse).abs()[finite]
        lse_err = diff.max().item()
        lse_ok &= bool((diff <= LSE_TOLERANCE * rlse.abs()[finite].clamp(min=1)).all())
    # Fully masked rows: O = 0 exactly.
    empty = torch.isneginf(rlse).transpose(1, 2)  # (B, Sq, Hq)
    zero_ok = bool((o.double()[empty] == 0).all()) if empty.any() else True
    tol = O_TOLERANCE[dtype]
    ok = (o_err < tol and lse_ok and zero_ok and not torch.isnan(o).any().item())
    return ok, o_err, lse_err, int(empty.sum().item())


def run_checks(kernels_dir, sanitize=False):
    shapes = [  # B, Hq, Hkv, Sq, Sk
        (2, 4, 4, 257, 257),
        (1, 8, 2, 131, 379),   # GQA, Sq < Sk
        (2, 6, 1, 300, 177),   # MQA, Sq > Sk
        (1, 4, 2, 1000, 1000),
    ]
    if sanitize:  # small, odd and GQA, for compute-sanitizer
        shapes = [(1, 4, 2, 1, 1000), (2, 6, 1, 17, 17), (1, 4, 2, 1000, 17)]
    total = passed = 0
    print(f"{'kernel':34} {'shape':26} {'O err':>9} {'LSE err':>9} {'empty':>6}  result")
    for example, (_, _, _, causals) in EXAMPLES.items():
        for dtype in ("bf16", "f16"):
            for c in causals:
                name = f"var_{example}_{dtype}_c{c}"
                path = os.path.join(kernels_dir, name + ".plan.json")
                if not os.path.exists(path):
                    print(f"{name:34} MISSING")
                    total += 1
                    continue
                kernel = runtime.load(path)
                for i, (B, Hq, Hkv, Sq, Sk) in enumerate(shapes):
                    total += 1
                    try:
                        ok, oe, le, empty = check_case(kernel, dtype, bool(c), example,
                                                       B, Hq, Hkv, Sq, Sk, seed=100 + i)
                    except Exception:  # noqa: BLE001
                        traceback.print_exc()
                        ok, oe, le, empty = False, float("nan"), float("nan"), -1
                    passed += ok
                    shape = f"{B}x{Hq}/{Hkv} {Sq}x{Sk}"
                    print(f"{name:34} {shape:26} {oe:9.2e} {le:9.2e} {empty:6d}  "
                          f"{'PASS' if ok else 'FAIL'}")
    print(f"{passed}/{total} cases passed")
    return passed == total


# --- Speed -------------------------------------------------------------------

def time_ms(fn, warmup=5, reps=20):
    """ms per call of `fn` (ftgpu.timing)."""
    return ftgpu.timing.time_ms(fn, warmup, reps)


def visible_entries(B, Hq, Sq, Sk, causal, mask_mod, ex):
    dev = "cuda"
    qi = torch.arange(Sq, device=dev).view(1, 1, Sq, 1)
    ki = torch.arange(Sk, device=dev).view(1, 1, 1, Sk)
    keep = torch.ones(1, 1, Sq, Sk, dtype=torch.bool, device=dev)
    if causal:
        keep = keep & (ki <= qi + (Sk - Sq))
    if mask_mod is None:
        return B * Hq * int(keep.sum().item())
    total = 0
    for b in range(B):
        bi = torch.full((1, 1, 1, 1), b, device=dev)
        hi = torch.zeros(1, 1, 1, 1, dtype=torch.long, device=dev)
        total += Hq * int((keep & mask_mod(bi, hi, qi, ki, ex)).sum().item())
    return total


def flops(entries, d=128):
    return 4.0 * entries * d


class Flex:
    def __init__(self):
        import torch._dynamo
        cfg = torch._dynamo.config
        for knob in ("cache_size_limit", "recompile_limit"):
            if hasattr(cfg, knob):
                setattr(cfg, knob, max(getattr(cfg, knob), 256))
        from torch.nn.attention.flex_attention import flex_attention
        self.fn = torch.compile(flex_attention, dynamic=False)

    def make(self, q, k, v, scale, causal, score_mod, mask_mod, ex, window=None):
        from torch.nn.attention.flex_attention import create_block_mask
        B, H, Sq, _ = q.shape
        Sk = k.shape[2]
        off = Sk - Sq

        def mm(b, h, qi, ki):
            keep = ki == ki
            if causal:
                keep = keep & (ki <= qi + off)
            if window is not None:
                keep = keep & (ki >= qi + off - window[0]) & (ki <= qi + off + window[1])
            if mask_mod is not None:
                keep = keep & mask_mod(b, h, qi, ki, ex)
            return keep
        has_mask = causal or mask_mod is not None or window is not None
        block_mask = (create_block_mask(mm, B=B if mask_mod is document_mask else None,
                                        H=None, Q_LEN=Sq, KV_LEN=Sk, device=q.device)
                      if has_mask else None)
        sm = None
        if score_mod is not None:
            def sm(s, b, h, qi, ki):
                return score_mod(s, b, h, qi, ki, ex)
        fn = self.fn
        enable_gqa = q.shape[1] != k.shape[1]
        return lambda: fn(q, k, v, score_mod=sm, block_mask=block_mask, scale=scale,
                          enable_gqa=enable_gqa)


def fa2(q, k, v, scale, causal, window=None, cu=None, max_len=None):
    """PyTorch's bundled FA2 on (B, S, H, D) tensors, or varlen (T, H, D)."""
    op = torch.ops.aten._flash_attention_forward
    left, right = (window if window is not None else (-1, -1))
    kwargs = dict(scale=scale)
    if window is not None:
        kwargs.update(window_size_left=left, window_size_right=right)
    if cu is not None:
        return lambda: op(q, k, v, cu, cu, max_len, max_len, 0.0, causal, False, **kwargs)
    return lambda: op(q, k, v, None, None, q.shape[1], k.shape[1], 0.0, causal, False,
                      **kwargs)


def run_bench(kernels_dir):
    dev = "cuda"
    dt = torch.bfloat16
    B, Hq, Hkv, S, d = 4, 32, 8, 4096, 128
    scale = 1.0 / math.sqrt(d)
    g = torch.Generator(device="cpu").manual_seed(0)
    q = torch.randn(B, Hq, S, d, generator=g).to(dev, dt)
    k = torch.randn(B, Hkv, S, d, generator=g).to(dev, dt)
    v = torch.randn(B, Hkv, S, d, generator=g).to(dev, dt)
    qt, kt, vt = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
    o = torch.empty_like(qt)
    lse = torch.empty(B, Hq, S, device=dev, dtype=torch.float32)
    load = lambda n: runtime.load(os.path.join(kernels_dir, n + ".plan.json"))
    try:
        flex = Flex()
    except Exception as e:  # noqa: BLE001
        flex = None
        print("flex unavailable:", e)
    print(f"TFLOP/s, bf16 d=128 B={B} Hq/Hkv={Hq}/{Hkv} S={S} (visible entries only)")
    print(f"{'variant':28} {'FlashTile':>9} {'plain':>7} {'vs plain':>8} {'Flex':>7} "
          f"{'vs Flex':>7} {'FA2':>7} {'vs FA2':>7}")
    plain_ms = {}
    for c in (0, 1):
        plain = load(f"sm120cfg_bf16_d128_{'causal' if c else 'full'}")
        plain_ms[c] = time_ms(lambda: plain(qt, kt, vt, o=o, lse=lse))

    def row(label, ms, entries, plain_c, flex_fn, fa2_fn):
        tf = flops(entries) / ms / 1e9
        cells = [f"{label:28}", f"{tf:9.1f}"]
        if plain_c is not None:
            ptf = flops(visible_entries(B, Hq, S, S, bool(plain_c), None, {})) / plain_ms[plain_c] / 1e9
            cells += [f"{ptf:7.1f}", f"{tf / ptf:8.2f}"]
        else:
            cells += [f"{'-':>7}", f"{'-':>8}"]
        for fn in (flex_fn, fa2_fn):
            if fn is None:
                cells += [f"{'-':>7}", f"{'-':>7}"]
                continue
            try:
                other = flops(entries) / time_ms(fn) / 1e9
                cells += [f"{other:7.1f}", f"{tf / other:7.2f}"]
            except Exception as e:  # noqa: BLE001
                cells += [f"{'err':>7}", f"{'':>7}"]
                print("  peer error:", type(e).__name__, str(e).splitlines()[0][:150])
        print(" ".join(cells))

    for example, (score_mod, mask_mod, make_extras, causals) in EXAMPLES.items():
        if example == "document_mask":
            continue
        for c in causals:
            name = f"var_{example}_bf16_c{c}"
            kernel = load(name)
            ex = make_extras(B, Hq, S, S, dev)
            kex = kernel_extras(ex)
            ms = time_ms(lambda: kernel(qt, kt, vt, o=o, lse=lse, **kex))
            entries = visible_entries(B, Hq, S, S, bool(c), mask_mod, ex)
            fx = flex.make(q, k, v, scale, bool(c), score_mod, mask_mod, ex) if flex else None
            fa = fa2(qt, kt, vt, scale, bool(c)) if example == "gqa" else None
            row(f"{example} causal={c}", ms, entries, c, fx, fa)
            # Other configurations of the same kernel, when built.
            for path in sorted(glob.glob(os.path.join(
                    kernels_dir, f"{name}_*.plan.json"))):
                alt = runtime.load(path)
                alt_ms = time_ms(lambda: alt(qt, kt, vt, o=o, lse=lse, **kex))
                cfg = alt.info["config"]
                print(f"  config {cfg['tile_m']}x{cfg['tile_n']} w{cfg['warps']} "
                      f"q_in_regs={cfg['q_in_regs']}: "
                      f"{flops(entries) / alt_ms / 1e9:.1f} TFLOP/s")
    # Sliding window (1024, 0): the built-in window, next to FA2's.
    win = load("var_window1024_bf16")
    ms = time_ms(lambda: win(qt, kt, vt, o=o, lse=lse))
    qi = torch.arange(S, device=dev).view(S, 1)
    ki = torch.arange(S, device=dev).view(1, S)
    entries = B * Hq * int(((ki <= qi) & (ki >= qi - 1024)).sum().item())
    fx = flex.make(q, k, v, scale, True, None, None, {}, window=(1024, 0)) if flex else None
    row("window (1024, 0)", ms, entries, 1, fx, fa2(qt, kt, vt, scale, True, window=(1024, 0)))

    # Document mask: 8 causal documents of 2048 tokens in S = 16384.
    S2, docs, dl = 16384, 8, 2048
    q2 = torch.randn(1, Hq, S2, d, generator=g).to(dev, dt)
    k2 = torch.randn(1, Hkv, S2, d, generator=g).to(dev, dt)
    v2 = torch.randn(1, Hkv, S2, d, generator=g).to(dev, dt)
    q2t, k2t, v2t = q2.transpose(1, 2), k2.transpose(1, 2), v2.transpose(1, 2)
    o2 = torch.empty_like(q2t)
    lse2 = torch.empty(1, Hq, S2, device=dev, dtype=torch.float32)
    ex = {"doc_ids": (torch.arange(S2, device=dev) // dl).to(torch.int32).view(1, S2)}
    kernel = load("var_document_mask_bf16_c1")
    ms = time_ms(lambda: kernel(q2t, k2t, v2t, o=o2, lse=lse2, **ex))
    entries = docs * Hq * (dl * (dl + 1) // 2)
    # The block mask built once and reused (Kernel.prepare), as a model reuses
    # it across layers and as Flex's BlockMask is built outside its timed
    # call: the same outputs, bit for bit, without the block-mask kernels.
    prepared = kernel.prepare(q2t, k2t, v2t, o=o2, lse=lse2, **ex)
    kernel(q2t, k2t, v2t, o=o2, lse=lse2, **ex)
    o_ref, lse_ref = o2.clone(), lse2.clone()
    o2.fill_(float("nan"))
    lse2.fill_(float("nan"))
    prepared(q2t, k2t, v2t, o=o2, lse=lse2, **ex)
    reuse_ok = torch.equal(o2, o_ref) and torch.equal(lse2, lse_ref)
    print(f"document mask, reused block mask: outputs "
          f"{'identical' if reuse_ok else 'DIFFER (FAIL)'} to a full call")
    reused_ms = time_ms(lambda: prepared(q2t, k2t, v2t, o=o2, lse=lse2, **ex))
    plain = load("sm120cfg_bf16_d128_causal")
    views = [(q2t[:, i * dl:(i + 1) * dl], k2t[:, i * dl:(i + 1) * dl],
              v2t[:, i * dl:(i + 1) * dl], o2[:, i * dl:(i + 1) * dl]) for i in range(docs)]
    lse_doc = torch.empty(1, Hq, dl, device=dev, dtype=torch.float32)

    def ideal():
        for a, b_, c_, o_ in views:
            plain(a, b_, c_, o=o_, lse=lse_doc)
    ideal_ms = time_ms(ideal)
    fx = flex.make(q2, k2, v2, scale, True, None, document_mask, ex) if flex else None
    cu = torch.arange(0, S2 + 1, dl, device=dev, dtype=torch.int32)
    fa = fa2(q2t[0], k2t[0], v2t[0], scale, True, cu=cu, max_len=dl)
    tf = flops(entries) / ms / 1e9
    print(f"document mask 8x2048 in 16k: FlashTile {tf:.1f} TFLOP/s, "
          f"time vs ideal (per-document causal, summed) {ms / ideal_ms:.2f}x")
    # Other configurations of the same kernel, when built (config studies).
    for path in sorted(glob.glob(os.path.join(kernels_dir,
                                              "var_document_mask_bf16_c1_*.plan.json"))):
        alt = runtime.load(path)
        alt_ms = time_ms(lambda: alt(q2t, k2t, v2t, o=o2, lse=lse2, **ex))
        c = alt.info["config"]
        print(f"  config {c['tile_m']}x{c['tile_n']} q_in_regs={c['q_in_regs']}: "
              f"{flops(entries) / alt_ms / 1e9:.1f} TFLOP/s")
    row("document_mask causal=1", ms, entries, None, fx, fa)
    row("  block mask reused", reused_ms, entries, None, fx, fa)
    return reuse_ok


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kernels", required=True)
    ap.add_argument("--check-only", action="store_true")
    ap.add_argument("--bench-only", action="store_true")
    ap.add_argument("--only", nargs="+",
                    help="check these examples (e.g. under compute-sanitizer)")
    ap.add_argument("--sanitize", action="store_true",
                    help="three small shapes (Sq or Sk of 1, 17 and 1000, "
                    "GQA), for compute-sanitizer")
    args = ap.parse_args()
    if args.only:
        unknown = [o for o in args.only if o not in EXAMPLES]
        if unknown:
            print(f"check_variants: no example '{unknown[0]}'", file=sys.stderr)
            return 2
        for name in list(EXAMPLES):
            if name not in args.only:
                del EXAMPLES[name]
    ok = True
    if not args.bench_only:
        ok = run_checks(args.kernels, args.sanitize)
    if not args.check_only:
        try:
            ok = run_bench(args.kernels) and ok
        except Exception:  # noqa: BLE001
            traceback.print_exc()
            ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
