#!/usr/bin/env python3
"""Training through FlashTile on the GPU: flashtile.attention and the torch
custom op as autograd functions, whose backward is the compiler-built
backward family (score_mod gradients derived by the compiler).

  grads      flashtile.attention's dQ, dK, dV against float64 autograd
             (ftgpu.reference.attention_grads, through the same Python
             hook), plain and with score_mods, MHA/GQA/MQA, Sq != Sk; the
             gradients' memory is poisoned (NaN) first. Also torch's
             same-precision eager error, for FA2's rule (printed).
  tensors    the gradients of captured tensors the score_mod reads
             (ALiBi slopes, a T5 bias table), and their cost.
  masks      mask_mods in the backward: a document mask (a captured
             tensor) and flashtile.varlen, per sequence.
  det        deterministic=True: correct, and the same bits on two runs;
             its time next to the atomic dQ's.
  compile    the custom op's backward under torch.compile(fullgraph=True)
             against eager, and a CUDA graph of forward + backward
             (torch.cuda.make_graphed_callables) against eager.
  errors     what has no backward raises, never a silent zero gradient:
             a backward missing from a runtime-only cache, a captured
             tensor that requires grad.
  train      config-built Llama (GQA) and Gemma-2 (softcap 50) models,
             through flashtile.hf (the package's transformers integration):
             gradients of every parameter against the fp32 eager model
             (FlashTile's error next to sdpa's / eager's in bf16), then a
             few AdamW steps with both, losses side by side; LoRA through
             peft the same way.
  speed      one forward + backward through autograd next to SDPA's flash
             and cuDNN backends and FlexAttention, same inputs; then the
             hooks (softcap, ALiBi, a learned T5 bias, document ids) next
             to FlexAttention, each over its own plain call.

Runs the runtime-only package: every kernel (forward and backward) comes
from the cache prebuilt on the build machine (tools/gpu/py_kernels.json).

    python3 tools/gpu/check_autograd.py [--only PART...]
"""

import argparse
import math
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import flashtile  # noqa: E402
import ftgpu.reference  # noqa: E402
import ftgpu.timing  # noqa: E402
import py_hooks as H  # noqa: E402
from ftgpu.tolerance import GRAD_TOLERANCE, O_TOLERANCE, rel_err  # noqa: E402

DEV = "cuda"
ARCH = "sm_120"  # the SM120 configuration, run with the H200's ISA
DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16}

# dtype, head dim, causal, score_mod (py_hooks name) or "sinks",
# (B, Hq, Hkv, Sq, Sk). alibi and relative_bias read captured tensors
# (SLOPES, BIAS: no gradient); "sinks" learns per-head sink logits.
GRAD_CASES = [
    ("bf16", 128, True, None, (2, 8, 2, 300, 300)),
    ("f16", 64, False, None, (1, 4, 4, 200, 333)),
    ("bf16", 64, True, "softcap", (2, 4, 2, 256, 256)),
    ("f16", 64, True, "softcap", (1, 4, 1, 190, 190)),
    ("bf16", 64, False, "alibi_heads", (1, 4, 2, 150, 200)),
    ("bf16", 128, True, "tempered_softcap", (1, 4, 4, 256, 256)),
    ("f16", 64, False, "tempered_softcap", (1, 2, 2, 130, 257)),
    ("bf16", 64, True, "alibi", (1, 4, 2, 200, 260)),
    ("f16", 64, False, "relative_bias", (1, 4, 4, 160, 160)),
    ("bf16", 64, True, "sinks", (2, 4, 2, 150, 150)),
]


def poison(*like):
    """Leaves NaN-filled blocks of the sizes of `like` (and f32 twins) in
    torch's caching allocator, which hands them to the next allocations of
    those sizes (the gradients the runtime allocates), so that an entry
    the backward leaves unwritten shows."""
    blocks = []
    for x in like:
        for dtype in (x.dtype, torch.float32):
            blocks += [torch.full(x.shape, float("nan"), dtype=dtype,
                                  device=DEV) for _ in range(2)]
    del blocks


def rand(gen, shape, dtype):
    return torch.randn(*shape, generator=gen).to(DEV, dtype)


def same_precision(q, k, v, do, scale, causal, score_mod):
    """dQ, dK, dV of an eager attention in the inputs' dtype (FA2's rule
    measures PyTorch there); (B, H, S, D) in and out."""
    qt, kt, vt = (x.detach().clone().requires_grad_() for x in (q, k, v))
    group = qt.shape[1] // kt.shape[1]
    ke, ve = (x.repeat_interleave(group, 1) for x in (kt, vt))
    sq, sk = qt.shape[2], kt.shape[2]
    s = (qt @ ke.transpose(-1, -2)) * scale
    if score_mod is not None:
        idx = [torch.arange(n, device=DEV) for n in (sq, sk)]
        s = score_mod(s, torch.zeros(1, 1, 1, 1, dtype=torch.long,
                                     device=DEV),
                      torch.arange(qt.shape[1], device=DEV).view(1, -1, 1, 1),
                      idx[0].view(1, 1, -1, 1), idx[1].view(1, 1, 1, -1))
    keep = ftgpu.reference.visible(sq, sk, causal, (-1, -1), DEV)
    s = s.masked_fill(~keep, float("-inf"))
    p = torch.softmax(s.float(), -1).nan_to_num(0.0).to(q.dtype)
    return torch.autograd.grad(p @ ve, (qt, kt, vt), do)


def run_grads():
    gen = torch.Generator().manual_seed(24)
    ok = True
    print("flashtile.attention's gradients against float64 autograd "
          "(rel = max|err| / max|ref|)")
    for dtype_name, d, causal, hook, (B, Hq, Hkv, Sq, Sk) in GRAD_CASES:
        dtype = DTYPES[dtype_name]
        sinks = None
        if hook == "sinks":
            sinks = (torch.randn(Hq, generator=gen) * 2).to(DEV)
            sinks.requires_grad_()
            hook = None
        fn = getattr(H, hook) if hook else None
        H.SLOPES = torch.rand(Hq, generator=gen).to(DEV) * -0.5
        H.BIAS = torch.randn(Hq, 32, generator=gen).to(DEV)
        scale = d ** -0.5
        q = rand(gen, (B, Hq, Sq, d), dtype).requires_grad_()
        k = rand(gen, (B, Hkv, Sk, d), dtype).requires_grad_()
        v = rand(gen, (B, Hkv, Sk, d), dtype).requires_grad_()
        do = rand(gen, (B, Hq, Sq, d), dtype)
        # The float64 reference runs on the CPU: the captures go there too.
        slopes, bias = H.SLOPES, H.BIAS
        H.SLOPES, H.BIAS = slopes.cpu(), bias.cpu()
        o_ref, _, *refs = ftgpu.reference.attention_grads(
            *(x.detach().transpose(1, 2) for x in (q, k, v)),
            do.transpose(1, 2), scale, causal=causal, score_mod=fn,
            sinks=sinks)
        H.SLOPES, H.BIAS = slopes, bias
        theirs = list(same_precision(q, k, v, do, scale, causal, fn))
        poison(q, k, v)
        out = flashtile.attention(q, k, v, causal=causal, score_mod=fn,
                                  sinks=sinks, arch=ARCH)
        out.backward(do)
        torch.cuda.synchronize()
        if sinks is not None:  # the eager twin has no sinks: no FA2 ratio
            hook = "sinks"
            theirs = [None] * 4
        label = (f"{dtype_name} d={d} {'causal' if causal else 'full':6} "
                 f"{hook or 'plain':16} {B}x{Hq}/{Hkv} {Sq}x{Sk}")
        o_err = rel_err(out.detach().transpose(1, 2).cpu(), o_ref)
        row = [f"o {o_err:.1e}"]
        passed = o_err <= O_TOLERANCE[dtype_name]
        for name, x, ref, pt in zip(("dq", "dk", "dv", "dsinks"),
                                    (q, k, v, sinks), refs, theirs):
            if x.grad is None:
                passed = False
                row.append(f"{name} missing")
                continue
            got = x.grad.transpose(1, 2).cpu() if x.dim() == 4 else x.grad.cpu()
            err = rel_err(got, ref)
            passed &= err <= GRAD_TOLERANCE[dtype_name]
            if pt is None:  # no same-precision twin
                row.append(f"{name} {err:.1e}")
                continue
            ours = (got.double() - ref).abs().max().item()
            torch_err = (pt.transpose(1, 2).cpu().double() - ref).abs().max().item()
            row.append(f"{name} {err:.1e} (fa2 rule {ours / max(torch_err, 1e-12):.2f}x torch)")
        ok &= passed
        print(f"{'PASS' if passed else 'FAIL'}  {label}  " + "  ".join(row))
    return ok


def flex_table_error(q, k, v, do, fn, causal, name, table, ref):
    """FlexAttention's relative error on the gradient of the captured
    tensor `name` (the score_mod `fn` reads it as py_hooks' global), same
    inputs, in their dtype: the peer's figure for the same reduction."""
    from torch.nn.attention.flex_attention import (create_block_mask,
                                                   flex_attention)
    flex = torch.compile(flex_attention, dynamic=False)
    Sq, Sk = q.shape[2], k.shape[2]
    block = None
    if causal:
        block = create_block_mask(
            lambda b, h, qi, ki: ki <= qi + (Sk - Sq), None, None, Sq, Sk,
            device=DEV)
    xs = [x.detach().clone().requires_grad_() for x in (q, k, v)]
    twin = table.to(DEV).requires_grad_()
    setattr(H, name, twin)
    out = flex(*xs, score_mod=fn, block_mask=block,
               enable_gqa=q.shape[1] != k.shape[1])
    grad = torch.autograd.grad(out, twin, do)[0]
    return rel_err(grad.cpu(), ref)


def run_tensor_grads():
    """The gradients of captured tensors the score_mod reads (ALiBi slopes:
    indexed by the head, summed per warp before one atomic; a T5 bias
    table: indexed by the bucket of k - q, one atomic per element), against
    float64 autograd through the same hooks; their cost next to the same
    call without them."""
    gen = torch.Generator().manual_seed(26)
    ok = True
    print("\ncaptured tensors' gradients (derived from the score_mod)")
    for dtype_name, d, causal, hook, (B, Hq, Hkv, S) in [
            ("bf16", 64, True, "alibi", (2, 4, 2, 300)),
            ("f16", 64, False, "relative_bias", (1, 4, 4, 200))]:
        dtype = DTYPES[dtype_name]
        fn = getattr(H, hook)
        name = "SLOPES" if hook == "alibi" else "BIAS"
        table = (torch.rand(Hq, generator=gen) * -0.5 if hook == "alibi"
                 else torch.randn(Hq, 32, generator=gen))
        q = rand(gen, (B, Hq, S, d), dtype).requires_grad_()
        k = rand(gen, (B, Hkv, S, d), dtype).requires_grad_()
        v = rand(gen, (B, Hkv, S, d), dtype).requires_grad_()
        do = rand(gen, (B, Hq, S, d), dtype)
        inputs = [x.detach().double().cpu().requires_grad_() for x in (q, k, v)]
        twin = table.double().requires_grad_()
        setattr(H, name, twin)
        ref, _ = ftgpu.reference.attention(*inputs, d ** -0.5, causal=causal,
                                           score_mod=fn)
        refs = torch.autograd.grad(ref, inputs + [twin], do.double().cpu())
        setattr(H, name, table.to(DEV).requires_grad_())
        poison(q, k, v)
        flashtile.attention(q, k, v, causal=causal, score_mod=fn,
                            arch=ARCH).backward(do)
        torch.cuda.synchronize()
        got = (q.grad, k.grad, v.grad, getattr(H, name).grad)
        if got[3] is None:
            print(f"FAIL  {hook}: no gradient for {name}")
            ok = False
            continue
        errs = [rel_err(g.cpu(), r) for g, r in zip(got, refs)]
        # The table's gradient sums k - q (or a bucket) weighted by dS over
        # every score: a sum with heavy cancellation, where D = rowsum(dO O)
        # from the low-precision O moves it in every FA-style backward.
        # Its yardstick is FlexAttention's error on the same inputs (its
        # backward derives the same gradient): at most 1.5x that, or the
        # plain bound.
        peer = flex_table_error(q, k, v, do, fn, causal, name, table,
                                refs[3]) if hook == "alibi" else None
        table_ok = (errs[3] <= GRAD_TOLERANCE[dtype_name] or
                    (peer is not None and errs[3] <= 1.5 * peer))
        passed = max(errs[:3]) <= GRAD_TOLERANCE[dtype_name] and table_ok
        ok &= passed

        def step(table_grad):
            getattr(H, name).requires_grad_(table_grad)
            out = flashtile.attention(q, k, v, causal=causal, score_mod=fn,
                                      arch=ARCH)
            torch.autograd.grad(out, (q, k, v), do)
        t_with = ftgpu.timing.time_ms(lambda: step(True))
        t_without = ftgpu.timing.time_ms(lambda: step(False))
        print(f"{'PASS' if passed else 'FAIL'}  {hook} {dtype_name} d={d} "
              f"{B}x{Hq}/{Hkv} S={S}: dq {errs[0]:.1e} dk {errs[1]:.1e} "
              f"dv {errs[2]:.1e} d{name} {errs[3]:.1e}"
              f"{'' if peer is None else f' (flex {peer:.1e})'}; fwd+bwd "
              f"{t_with:.3f} ms with d{name}, {t_without:.3f} ms without "
              f"({t_with / t_without:.2f}x)")
    return ok


def run_masks():
    """mask_mods in the backward: a document mask (a captured int32 tensor)
    through flashtile.attention; masks with a key interval, whose tiles the
    backward skips (the main kernel's query tiles by bisection, the dQ
    kernel's KV tiles as the forward's), with both dQ paths; and
    flashtile.varlen (the sequences' mask, whose KV-tile tables the
    preprocess kernel writes) against float64 autograd per sequence, then
    its speed against the same sequences as a dense batch (equal when the
    tiles of other sequences are skipped)."""
    gen = torch.Generator().manual_seed(25)
    ok = True
    print("\nmask_mod backward (evaluated at every entry of the tiles "
          "visited that it does not keep whole)")
    # (mask, causal, (Sq, Sk), the dQ paths): document ids (a captured
    # int32 tensor, no key interval: the run-time block mask, per head in
    # document_heads), then masks with one.
    for mask, causal, (Sq, Sk), dets in [
            ("document", True, (300, 300), (False, True)),
            ("document", True, (700, 700), (False, True)),
            ("document_heads", True, (600, 600), (False, True)),
            ("chunked", True, (700, 700), (False, True)),
            ("chunked", True, (300, 700), (False, True)),
            ("falling", False, (333, 260), (False, True)),
            ("head_window", False, (600, 600), (False, True))]:
        B, Hq, Hkv, d = 2, 4, 2, 64
        if mask.startswith("document"):
            H.DOC = torch.sort(torch.randint(0, 4, (B, Sq), generator=gen),
                               1).values.to(torch.int32)
        q = rand(gen, (B, Hq, Sq, d), torch.bfloat16).requires_grad_()
        k = rand(gen, (B, Hkv, Sk, d), torch.bfloat16).requires_grad_()
        v = rand(gen, (B, Hkv, Sk, d), torch.bfloat16).requires_grad_()
        do = rand(gen, (B, Hq, Sq, d), torch.bfloat16)
        fn = getattr(H, mask)
        _, _, *refs = ftgpu.reference.attention_grads(
            *(x.detach().transpose(1, 2) for x in (q, k, v)),
            do.transpose(1, 2), d ** -0.5, causal=causal, mask_mod=fn)
        if mask.startswith("document"):
            H.DOC = H.DOC.to(DEV)
        for det in dets:
            # Each run starts from no gradient: backward() adds into .grad.
            for x in (q, k, v):
                x.grad = None
            poison(q, k, v)
            flashtile.attention(q, k, v, causal=causal, mask_mod=fn,
                                arch=ARCH, deterministic=det).backward(do)
            errs = [rel_err(x.grad.transpose(1, 2).cpu(), ref)
                    for x, ref in zip((q, k, v), refs)]
            passed = max(errs) <= GRAD_TOLERANCE["bf16"]
            ok &= passed
            print(f"{'PASS' if passed else 'FAIL'}  {mask} bf16 d={d} "
                  f"{'causal' if causal else 'full'} {B}x{Hq}/{Hkv} Sq={Sq} "
                  f"Sk={Sk} {'deterministic' if det else 'atomic dQ'}: "
                  f"dq {errs[0]:.1e} dk {errs[1]:.1e} dv {errs[2]:.1e}")
    for dtype_name, d, causal, lens_q, lens_k, (Hq, Hkv) in [
            ("bf16", 128, True, [17, 1, 129, 300], [17, 40, 129, 310], (8, 2)),
            ("f16", 64, False, [257, 3, 64], [100, 1000, 64], (6, 2))]:
        dtype = DTYPES[dtype_name]
        tq, tk = sum(lens_q), sum(lens_k)
        q = rand(gen, (tq, Hq, d), dtype).requires_grad_()
        k = rand(gen, (tk, Hkv, d), dtype).requires_grad_()
        v = rand(gen, (tk, Hkv, d), dtype).requires_grad_()
        do = rand(gen, (tq, Hq, d), dtype)
        cu_q = torch.tensor([0] + lens_q, device=DEV).cumsum(0).to(torch.int32)
        cu_k = torch.tensor([0] + lens_k, device=DEV).cumsum(0).to(torch.int32)
        poison(q, k, v)
        out = flashtile.varlen(q, k, v, cu_q, cu_k, causal=causal, arch=ARCH)
        out.backward(do)
        refs = [[], [], []]
        for i in range(len(lens_q)):
            sq = slice(int(cu_q[i]), int(cu_q[i + 1]))
            sk = slice(int(cu_k[i]), int(cu_k[i + 1]))
            _, _, *g = ftgpu.reference.attention_grads(
                q.detach()[None, sq], k.detach()[None, sk],
                v.detach()[None, sk], do[None, sq], d ** -0.5, causal=causal)
            for acc, x in zip(refs, g):
                acc.append(x[0])
        errs = [rel_err(x.grad.cpu(), torch.cat(ref))
                for x, ref in zip((q, k, v), refs)]
        passed = max(errs) <= GRAD_TOLERANCE[dtype_name]
        ok &= passed
        print(f"{'PASS' if passed else 'FAIL'}  varlen {dtype_name} d={d} "
              f"{'causal' if causal else 'full'} lens q {lens_q} k {lens_k} "
              f"heads {Hq}/{Hkv}: dq {errs[0]:.1e} dk {errs[1]:.1e} "
              f"dv {errs[2]:.1e}")
    # Speed: 32 sequences of 1024 packed, against the same as a batch.
    n, S, Hh, d = 32, 1024, 16, 128
    q = rand(gen, (n * S, Hh, d), torch.bfloat16).requires_grad_()
    k = rand(gen, (n * S, Hh, d), torch.bfloat16).requires_grad_()
    v = rand(gen, (n * S, Hh, d), torch.bfloat16).requires_grad_()
    do = rand(gen, (n * S, Hh, d), torch.bfloat16)
    cu = torch.arange(0, n * S + 1, S, device=DEV, dtype=torch.int32)
    qb, kb, vb, dob = (x.detach().view(n, S, Hh, d).transpose(1, 2)
                       .requires_grad_(x.requires_grad) for x in (q, k, v, do))

    def packed():
        out = flashtile.varlen(q, k, v, cu, cu, causal=True, arch=ARCH)
        torch.autograd.grad(out, (q, k, v), do)

    def batched():
        out = flashtile.attention(qb, kb, vb, causal=True, arch=ARCH)
        torch.autograd.grad(out, (qb, kb, vb), dob)
    t_packed = ftgpu.timing.time_ms(packed)
    t_batched = ftgpu.timing.time_ms(batched)
    passed = t_packed <= 1.5 * t_batched
    ok &= passed
    print(f"{'PASS' if passed else 'FAIL'}  varlen speed, {n} x {S} causal "
          f"bf16 d={d} H={Hh}, fwd + bwd: packed {t_packed:.2f} ms, as a "
          f"batch {t_batched:.2f} ms ({t_packed / t_batched:.2f}x; the "
          f"tiles of other sequences are skipped when near 1)")
    return ok


def run_det():
    gen = torch.Generator().manual_seed(5)
    ok = True
    print("\ndeterministic=True: dQ by its own kernel, no atomics")
    for dtype_name, d, causal, hook, (B, Hq, Hkv, S) in [
            ("bf16", 128, True, None, (2, 8, 2, 1024)),
            ("bf16", 64, True, "softcap", (1, 4, 2, 300))]:
        dtype = DTYPES[dtype_name]
        fn = getattr(H, hook) if hook else None
        q = rand(gen, (B, Hq, S, d), dtype)
        k = rand(gen, (B, Hkv, S, d), dtype)
        v = rand(gen, (B, Hkv, S, d), dtype)
        do = rand(gen, (B, Hq, S, d), dtype)

        def grads(det):
            qs, ks, vs = (x.clone().requires_grad_() for x in (q, k, v))
            out = flashtile.attention(qs, ks, vs, causal=causal, score_mod=fn,
                                      arch=ARCH, deterministic=det)
            return torch.autograd.grad(out, (qs, ks, vs), do)
        first, second, atomic = grads(True), grads(True), grads(False)
        same = all(torch.equal(a, b) for a, b in zip(first, second))
        close = max(rel_err(a.cpu(), b.cpu().double())
                    for a, b in zip(first, atomic))
        passed = same and close <= GRAD_TOLERANCE[dtype_name] / 4
        ok &= passed
        qs, ks, vs = (x.clone().requires_grad_() for x in (q, k, v))

        def step(det):
            out = flashtile.attention(qs, ks, vs, causal=causal, score_mod=fn,
                                      arch=ARCH, deterministic=det)
            torch.autograd.grad(out, (qs, ks, vs), do)
        t_det = ftgpu.timing.time_ms(lambda: step(True))
        t_atomic = ftgpu.timing.time_ms(lambda: step(False))
        print(f"{'PASS' if passed else 'FAIL'}  {dtype_name} d={d} "
              f"{hook or 'plain'} {B}x{Hq}/{Hkv} S={S}: bitwise equal on two "
              f"runs: {same}; vs atomic dQ rel {close:.1e}; fwd+bwd "
              f"{t_det:.3f} ms deterministic, {t_atomic:.3f} ms atomic "
              f"({t_det / t_atomic:.2f}x)")
    return ok


def run_compile():
    gen = torch.Generator().manual_seed(6)
    B, Hq, Hkv, S, d = 2, 8, 2, 512, 128
    q = rand(gen, (B, Hq, S, d), torch.bfloat16)
    k = rand(gen, (B, Hkv, S, d), torch.bfloat16)
    v = rand(gen, (B, Hkv, S, d), torch.bfloat16)
    do = rand(gen, (B, Hq, S, d), torch.bfloat16)
    compiled = flashtile.compile(d, "bf16", causal=True, score_mod=H.softcap,
                                 arch=ARCH, isa="sm_90")
    op = flashtile.torch_op(compiled, deterministic=True)
    results = []

    def grads(fn):
        qs, ks, vs = (x.clone().requires_grad_() for x in (q, k, v))
        out = fn(qs, ks, vs)
        return (out.detach(),) + torch.autograd.grad(out, (qs, ks, vs), do)
    eager = grads(op)
    direct = grads(lambda q, k, v: flashtile.attention(
        q, k, v, causal=True, score_mod=H.softcap, arch=ARCH,
        deterministic=True))
    results.append(("torch op == flashtile.attention, forward and gradients "
                     "(deterministic)",
                     all(torch.equal(a, b) for a, b in zip(eager, direct))))
    torch._dynamo.reset()
    try:
        graph = torch.compile(lambda q, k, v: op(q, k, v), fullgraph=True)
        traced = grads(graph)
        results.append(("torch.compile(fullgraph=True) forward + backward == "
                         "eager", all(torch.equal(a, b)
                                      for a, b in zip(traced, eager))))
    except Exception as e:  # noqa: BLE001
        print("torch.compile failed:", type(e).__name__, str(e)[:600])
        results.append(("torch.compile(fullgraph=True) forward + backward",
                        False))
    try:
        qs, ks, vs = (x.clone().requires_grad_() for x in (q, k, v))
        graphed = torch.cuda.make_graphed_callables(op, (qs, ks, vs))
        for _ in range(2):
            out = graphed(qs, ks, vs)
            replay = (out.detach(),) + torch.autograd.grad(out, (qs, ks, vs),
                                                           do)
        results.append(("CUDA graph of forward + backward "
                        "(make_graphed_callables) == eager",
                        all(torch.equal(a, b) for a, b in zip(replay, eager))))
    except Exception as e:  # noqa: BLE001
        print("CUDA graph failed:", type(e).__name__, str(e)[:600])
        results.append(("CUDA graph of forward + backward", False))
    results.append(op_tensor_grads(q, k, v, do))
    for label, passed in results:
        print(f"{'PASS' if passed else 'FAIL'}  {label}")
    return all(p for _, p in results)


def op_tensor_grads(q, k, v, do):
    """The torch op derives a captured tensor's gradient (ALiBi slopes that
    require grad), eager and under torch.compile(fullgraph=True): the
    gradients of flashtile.attention, within the atomics' summation order
    (a tensor's gradient is added with atomics, so neither call is the
    deterministic family)."""
    Hq = q.shape[1]
    slopes = torch.rand(Hq, device=DEV) * -0.5
    compiled = flashtile.compile(q.shape[-1], "bf16", causal=True,
                                 score_mod=H.alibi, arch=ARCH, isa="sm_90")
    op = flashtile.torch_op(compiled, deterministic=False)

    def grads(fn):
        H.SLOPES = slopes.clone().requires_grad_()
        qs, ks, vs = (x.clone().requires_grad_() for x in (q, k, v))
        out = fn(qs, ks, vs)
        return torch.autograd.grad(out, (qs, ks, vs, H.SLOPES), do)
    direct = grads(lambda q, k, v: flashtile.attention(
        q, k, v, causal=True, score_mod=H.alibi, arch=ARCH,
        deterministic=False))
    try:
        eager = grads(lambda q, k, v: op(q, k, v, H.SLOPES))
        torch._dynamo.reset()
        traced = grads(torch.compile(lambda q, k, v: op(q, k, v, H.SLOPES),
                                     fullgraph=True))
    except Exception as e:  # noqa: BLE001
        print("torch op with the slopes' gradient failed:", type(e).__name__,
              str(e)[:600])
        return ("torch op derives dSLOPES", False)
    errs = [max(rel_err(a, b) for a, b in zip(got, direct))
            for got in (eager, traced)]
    return (f"torch op derives dSLOPES with dq/dk/dv, eager and "
            f"torch.compile(fullgraph=True): vs flashtile.attention "
            f"{errs[0]:.1e} / {errs[1]:.1e}", max(errs) <= 1e-5)


def run_errors():
    gen = torch.Generator().manual_seed(7)
    q = rand(gen, (1, 2, 128, 64), torch.bfloat16).requires_grad_()
    k = rand(gen, (1, 2, 128, 64), torch.bfloat16).requires_grad_()
    v = rand(gen, (1, 2, 128, 64), torch.bfloat16).requires_grad_()
    results = []

    def raises(label, fn, words):
        try:
            fn()
            results.append((label + ": no error", False))
        except flashtile.FlashTileError as e:
            text = str(e)
            results.append((f"{label}: {text[:110]}",
                            all(w in text for w in words)))
    # Runtime-only here: a backward not in the cache is the reason (its
    # manifest entry is in the message).
    # (ALiBi full: its forward is prebuilt, its backward is not.)
    H.SLOPES = torch.rand(2, device=DEV)
    raises("a backward missing from the runtime-only cache",
           lambda: flashtile.attention(q, k, v, score_mod=H.alibi,
                                       arch=ARCH).sum().backward(),
           ["no backward", "not in the cache"])
    # An op made without a backward cannot derive a captured tensor's
    # gradient: refused at the call, not a silent None.
    H.SLOPES = torch.rand(2, device=DEV).requires_grad_()
    op = flashtile.torch_op(flashtile.compile(64, "bf16", score_mod=H.alibi,
                                              arch=ARCH, isa="sm_90"),
                            backward=False)
    raises("a captured tensor that requires grad, through an op made with "
           "backward=False", lambda: op(q, k, v, H.SLOPES),
           ["requires grad", "made with backward=False", "detach it"])
    with torch.no_grad():
        out = flashtile.attention(q, k, v, causal=True, arch=ARCH)
    results.append(("under no_grad the output has no grad_fn",
                    out.grad_fn is None))
    for label, passed in results:
        print(f"{'PASS' if passed else 'FAIL'}  {label}")
    return all(p for _, p in results)


def run_train():
    import transformers
    import flashtile.hf
    from transformers import (Gemma2Config, Gemma2ForCausalLM, LlamaConfig,
                              LlamaForCausalLM)

    # The package's own transformers integration (flashtile.hf): scaling,
    # causal, the Gemma-2 softcap as a run-time scalar, sliding windows and
    # 4-d masks as mask_mods.
    flashtile.hf.register(arch=ARCH)

    common = dict(hidden_size=256, intermediate_size=512, num_hidden_layers=2,
                  vocab_size=1000, max_position_embeddings=1024)
    cases = [("Llama (d=32, GQA 8/4)", LlamaConfig, LlamaForCausalLM,
              dict(num_attention_heads=8, num_key_value_heads=4), "sdpa"),
             ("Gemma-2 (d=64, softcap 50)", Gemma2Config, Gemma2ForCausalLM,
              dict(num_attention_heads=4, num_key_value_heads=2, head_dim=64,
                   attn_logit_softcapping=50.0, final_logit_softcapping=None,
                   sliding_window=1024, query_pre_attn_scalar=64), "eager")]
    ok = True
    print(f"\ntransformers {transformers.__version__}: a training step, "
          f"2 x 257 tokens; gradients of all parameters against the fp32 "
          f"eager model (rel = max|err| / max|ref| over the whole gradient)")

    def flat_grads(model):
        return torch.cat([p.grad.double().flatten() for p in model.parameters()
                          if p.grad is not None])

    def loss_of(model, ids):
        return model(ids, labels=ids, use_cache=False).loss

    for label, config_cls, model_cls, extra, baseline in cases:
        torch.manual_seed(0)
        config = config_cls(**common, **extra)
        config._attn_implementation = "eager"
        base = model_cls(config).to(DEV).float()
        ids = torch.randint(0, 1000, (2, 257), device=DEV)
        loss_of(base, ids).backward()
        ref = flat_grads(base)
        errors, losses = {}, {}
        for impl in (baseline, "flashtile"):
            model = model_cls(config).to(DEV)
            model.load_state_dict(base.state_dict())
            model = model.to(torch.bfloat16)
            model.config._attn_implementation = impl
            loss_of(model, ids).backward()
            errors[impl] = rel_err(flat_grads(model), ref)
            opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
            curve = []
            for _ in range(5):
                opt.zero_grad()
                loss = loss_of(model, ids)
                loss.backward()
                opt.step()
                curve.append(loss.item())
            losses[impl] = curve
        ratio = errors["flashtile"] / errors[baseline]
        drift = max(abs(a - b) / abs(b) for a, b in
                    zip(losses["flashtile"], losses[baseline]))
        passed = ratio <= 1.5 and drift <= 2e-2
        ok &= passed
        print(f"{'PASS' if passed else 'FAIL'}  {label}: gradient rel error "
              f"flashtile {errors['flashtile']:.2e}, {baseline} "
              f"{errors[baseline]:.2e} (ratio {ratio:.2f}, target <= 1.5); "
              f"AdamW losses flashtile "
              f"{' '.join(f'{x:.4f}' for x in losses['flashtile'])} vs "
              f"{baseline} {' '.join(f'{x:.4f}' for x in losses[baseline])} "
              f"(max rel drift {drift:.1e}, target <= 2e-2)")
    try:
        import peft
    except ImportError:
        print("SKIP  LoRA: peft is not installed")
        return ok
    torch.manual_seed(0)
    config = LlamaConfig(**common, num_attention_heads=8,
                         num_key_value_heads=4)
    config._attn_implementation = "eager"
    base = LlamaForCausalLM(config).to(DEV).to(torch.bfloat16)
    lora = peft.LoraConfig(r=8, lora_alpha=16, target_modules=["q_proj",
                                                               "v_proj"])
    ids = torch.randint(0, 1000, (2, 257), device=DEV)
    grads = {}
    for impl in ("sdpa", "flashtile"):
        # The same seed before the model is made: get_peft_model draws
        # lora_A's initial values, so both models must start from one state.
        torch.manual_seed(1)
        model = peft.get_peft_model(LlamaForCausalLM(config).to(DEV).to(
            torch.bfloat16), lora)
        model.base_model.model.load_state_dict(base.state_dict(), strict=False)
        for name, p in model.named_parameters():
            if "lora_B" in name:
                torch.nn.init.normal_(p, std=0.02)
        model.base_model.model.config._attn_implementation = impl
        loss_of(model, ids).backward()
        grads[impl] = torch.cat([p.grad.double().flatten()
                                 for n, p in model.named_parameters()
                                 if p.requires_grad])
    err = rel_err(grads["flashtile"], grads["sdpa"])
    passed = err <= 2e-2 and grads["flashtile"].abs().max() > 0
    ok &= passed
    print(f"{'PASS' if passed else 'FAIL'}  LoRA (peft {peft.__version__}, "
          f"q_proj/v_proj, Llama): LoRA gradients against sdpa's, rel "
          f"{err:.2e} (target <= 2e-2)")
    return ok


def run_speed():
    from torch.nn.attention import SDPBackend, sdpa_kernel
    import torch._dynamo
    torch._dynamo.config.cache_size_limit = 1000
    torch._dynamo.config.recompile_limit = 1000
    from torch.nn.attention.flex_attention import (create_block_mask,
                                                   flex_attention)
    flex = torch.compile(flex_attention, dynamic=False)
    gen = torch.Generator().manual_seed(8)
    print("\nforward + backward through autograd, bf16, B*S = 32k, H = 16; "
          "TFLOP/s at 3.5x the forward's FLOPs (fwd + 2.5x bwd)")
    print(f"{'shape':24} {'flashtile':>9} {'fa2':>7} {'cudnn':>7} {'flex':>7} "
          f"{'vs fa2':>7}")
    for d, causal, S in [(64, True, 4096), (128, True, 4096),
                         (128, False, 4096)]:
        B, Hh = 32768 // S, 16
        q = rand(gen, (B, Hh, S, d), torch.bfloat16).requires_grad_()
        k = rand(gen, (B, Hh, S, d), torch.bfloat16).requires_grad_()
        v = rand(gen, (B, Hh, S, d), torch.bfloat16).requires_grad_()
        do = rand(gen, (B, Hh, S, d), torch.bfloat16)
        flops = 4 * B * Hh * S * S * d * (0.5 if causal else 1.0) * 3.5

        def step(fn):
            out = fn()
            torch.autograd.grad(out, (q, k, v), do)

        def sdpa(backend):
            def run():
                with sdpa_kernel(backend):
                    return torch.nn.functional.scaled_dot_product_attention(
                        q, k, v, is_causal=causal)
            return run
        block = create_block_mask(lambda b, h, qi, ki: ki <= qi, None, None,
                                  S, S, device=DEV) if causal else None
        peers = {
            "flashtile": lambda: flashtile.attention(q, k, v, causal=causal,
                                                     arch=ARCH),
            "fa2": sdpa(SDPBackend.FLASH_ATTENTION),
            "cudnn": sdpa(SDPBackend.CUDNN_ATTENTION),
            "flex": lambda: flex(q, k, v, block_mask=block),
        }
        tflops = {}
        for name, fn in peers.items():
            try:
                ms = ftgpu.timing.time_ms(lambda: step(fn))
                tflops[name] = flops / ms / 1e9
            except Exception as e:  # noqa: BLE001
                print(f"  {name} failed: {type(e).__name__} {str(e)[:200]}")
                tflops[name] = math.nan
        print(f"{f'd={d} {chr(99) if causal else chr(102)} S={S} B={B}':24} "
              f"{tflops['flashtile']:9.1f} {tflops['fa2']:7.1f} "
              f"{tflops['cudnn']:7.1f} {tflops['flex']:7.1f} "
              f"{tflops['flashtile'] / tflops['fa2']:7.2f}")
    speed_hooks(flex, create_block_mask, gen)
    return True


def speed_hooks(flex, create_block_mask, gen):
    """The issue's hook figures: forward + backward at d = 128, S = 4096,
    causal, bf16, next to FlexAttention on the same inputs and hooks (the
    py_hooks functions serve both): plain, softcap, ALiBi, a learned T5
    bias table (its gradient derived too), and document ids (FlashTile's
    run-time block mask; Flex's BlockMask of causal and documents). Each
    one's time over its own plain call, and FlashTile's speed over
    Flex's."""
    S, d, Hh = 4096, 128, 16
    B = 32768 // S
    q = rand(gen, (B, Hh, S, d), torch.bfloat16).requires_grad_()
    k = rand(gen, (B, Hh, S, d), torch.bfloat16).requires_grad_()
    v = rand(gen, (B, Hh, S, d), torch.bfloat16).requires_grad_()
    do = rand(gen, (B, Hh, S, d), torch.bfloat16)
    H.SLOPES = (torch.rand(Hh, generator=gen) * -0.5).to(DEV)
    bias = torch.randn(Hh, 32, generator=gen).to(DEV).requires_grad_()
    H.DOC = torch.sort(torch.randint(0, 8, (B, S), generator=gen),
                       1).values.to(torch.int32).to(DEV)
    causal_block = create_block_mask(lambda b, h, qi, ki: ki <= qi, None,
                                     None, S, S, device=DEV)
    doc_block = create_block_mask(
        lambda b, h, qi, ki: (ki <= qi) & (H.DOC[b, qi] == H.DOC[b, ki]), B,
        None, S, S, device=DEV)
    variants = [("plain", None, None, ()), ("softcap", H.softcap, None, ()),
                ("alibi", H.alibi, None, ()),
                ("relative_bias (dBIAS)", H.relative_bias, None, (bias,)),
                ("document", None, H.document, ())]
    print(f"\nhooks, forward + backward, bf16 d={d} S={S} B={B} H={Hh} causal "
          f"(ms; x its plain call)")
    print(f"{'variant':24} {'flashtile':>16} {'flex':>16} {'ft vs flex':>10}")
    plain = {}
    for name, score_mod, mask_mod, extra in variants:
        H.BIAS = bias

        def step(fn):
            out = fn()
            torch.autograd.grad(out, (q, k, v) + extra, do)

        def ours():
            return flashtile.attention(q, k, v, causal=True,
                                       score_mod=score_mod, mask_mod=mask_mod,
                                       arch=ARCH)

        def theirs():
            return flex(q, k, v, score_mod=score_mod,
                        block_mask=doc_block if mask_mod else causal_block)
        ms = {}
        for who, fn in (("flashtile", ours), ("flex", theirs)):
            try:
                ms[who] = ftgpu.timing.time_ms(lambda: step(fn))
            except Exception as e:  # noqa: BLE001
                print(f"  {who} {name} failed: {type(e).__name__} "
                      f"{str(e)[:200]}")
                ms[who] = math.nan
        if name == "plain":
            plain = dict(ms)
        cells = [f"{ms[w]:7.2f} ({ms[w] / plain[w]:4.2f}x)"
                 for w in ("flashtile", "flex")]
        print(f"{name:24} {cells[0]:>16} {cells[1]:>16} "
              f"{ms['flex'] / ms['flashtile']:10.2f}")


def main():
    parts = {"grads": run_grads, "tensors": run_tensor_grads,
             "masks": run_masks, "det": run_det, "compile": run_compile,
             "errors": run_errors, "train": run_train, "speed": run_speed}
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", nargs="+", choices=list(parts))
    args = ap.parse_args()
    print(f"flashtile {flashtile.__version__} on {torch.cuda.get_device_name()}, "
          f"torch {torch.__version__}; cache {flashtile.compiler.cache_dir()}")
    ok = True
    for name, run in parts.items():
        if args.only and name not in args.only:
            continue
        try:
            ok = run() and ok
        except Exception as e:  # noqa: BLE001
            import traceback
            traceback.print_exc()
            print(f"FAIL  {name}: {type(e).__name__}: {str(e)[:400]}")
            ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
