"""FlashTile's mma table on the hardware: for each instruction (f16 / bf16
m16n8k16 into f32 and f16, s8 m16n8k32 into s32, e4m3 / e5m2 m16n8k32
into f32), one warp gathers a random A and B tile by the compiler's
fragment tables (.gpu/mma_tables.json from flashtile-mma-tables), runs the
instruction (tools/gpu/mma_tile.cu, .gpu/mma_tile.cubin) and scatters D by
the C table; the result must be torch's product: exact for s8, and for
the float types within the accumulator's rounding of the float64 product
of the same (converted) operands. Through the CUDA driver API (ctypes), on
torch's context.

Then the same products through the compiler: the tile programs of
tools/gpu/tiles (.gpu/kernels/tiles, from build_kernels.sh), launched by
FlashTile's runtime: attn.copy_tile brings A and B into shared memory,
attn.mma multiplies them (s8, e4m3, e5m2 on m16n8k32; bf16 with A read
transposed), attn.store_tile writes D (or adds it with f32 atomics), and
into declared rank-4 and rank-3 tensors (tiles/store_declared.mlir); and
the backward's D = rowsum(dO * O) (tiles/bwd_preprocess.mlir, attn.load_tile
widening bf16). The outputs are poisoned first; S = 165 rows leaves the last block partial, so
the zero-filled rows and the bounds of the stores are exercised too.

    python3 tools/gpu/check_mma.py [--gpu-dir .gpu]
"""

import argparse
import ctypes
import json
import os
import sys

import torch

import ftgpu.reference  # tools/gpu/ftgpu, beside this script


def driver():
    cuda = ctypes.CDLL("libcuda.so.1")
    for name in ("cuModuleLoadData", "cuModuleGetFunction", "cuLaunchKernel"):
        getattr(cuda, name).restype = ctypes.c_int
    return cuda


def check(status, what):
    if status != 0:
        raise RuntimeError(f"{what} failed: CUDA error {status}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--gpu-dir", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..", ".gpu"))
    args = parser.parse_args()
    with open(os.path.join(args.gpu_dir, "mma_tables.json")) as f:
        tables = json.load(f)
    with open(os.path.join(args.gpu_dir, "mma_tile.cubin"), "rb") as f:
        image = f.read()
    dev = "cuda"
    torch.zeros(1, device=dev)  # torch's context is current from here
    cuda = driver()
    module = ctypes.c_void_p()
    check(cuda.cuModuleLoadData(ctypes.byref(module), image),
          "cuModuleLoadData")
    cc = torch.cuda.get_device_capability()
    gen = torch.Generator().manual_seed(25)
    dtypes = {"f16": torch.float16, "bf16": torch.bfloat16,
              "e4m3": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2,
              "s8": torch.int8}
    acc_dtypes = {"f32": torch.float32, "f16": torch.float16,
                  "s32": torch.int32}
    results = []
    print(f"{'instruction':34} {'max err':>10} {'bound':>10}  result")
    for t in tables:
        m, n, k = t["shape"]
        label = f"m{m}n{n}k{k}.{t['acc']}.{t['a']}.{t['b']}"
        if cc[0] * 10 + cc[1] < t["min_cc"]:
            print(f"{label:34} {'':>10} {'':>10}  SKIP (sm_{t['min_cc']}+)")
            continue
        if t["a"] == "s8":
            a = torch.randint(-128, 128, (m, k), generator=gen,
                              dtype=torch.int8)
            b = torch.randint(-128, 128, (k, n), generator=gen,
                              dtype=torch.int8)
        else:
            a = torch.randn(m, k, generator=gen).to(dtypes[t["a"]])
            b = torch.randn(k, n, generator=gen).to(dtypes[t["b"]])
        a, b = a.to(dev), b.to(dev)
        d = torch.full((m, n), -7, device=dev).to(acc_dtypes[t["acc"]])
        idx = [torch.tensor([r * cols + c for r, c in t[op]],
                            dtype=torch.int32, device=dev)
               for op, cols in (("A", k), ("B", n), ("C", n))]
        function = ctypes.c_void_p()
        name = f"mma_{t['a']}_{t['b']}_{t['acc']}".encode()
        check(cuda.cuModuleGetFunction(ctypes.byref(function), module, name),
              f"cuModuleGetFunction({name.decode()})")
        pointers = [ctypes.c_uint64(x.data_ptr())
                    for x in (a, b, d, *idx)]
        params = (ctypes.c_void_p * len(pointers))(
            *[ctypes.cast(ctypes.byref(p), ctypes.c_void_p)
              for p in pointers])
        check(cuda.cuLaunchKernel(function, 1, 1, 1, 32, 1, 1, 0, None,
                                  params, None), "cuLaunchKernel")
        torch.cuda.synchronize()
        if t["a"] == "s8":
            ref = a.long().cpu() @ b.long().cpu()
            err = (d.long().cpu() - ref).abs().max().item()
            bound = 0
        else:
            ref = a.float().double() @ b.float().double()
            err = ((d.double() - ref).abs().max() / ref.abs().max()).item()
            # One rounding of each partial sum into the accumulator.
            bound = (1e-3 if t["acc"] == "f16" else 1e-5) * 4
        ok = err <= bound and not torch.isnan(d.double()).any().item()
        results.append(ok)
        print(f"{label:34} {err:10.2e} {bound:10.2e}  "
              f"{'PASS' if ok else 'FAIL'}")
    results += check_compiled_tiles(os.path.join(args.gpu_dir, "kernels",
                                                 "tiles"), dev)
    print(f"{sum(results)}/{len(results)} instructions passed")
    return 0 if results and all(results) else 1


def attention_inputs(gen, dev, B, H, HKV, SQ, SK, D):
    """The tile programs' declared q, k (bf16; k serves as v) and their
    unused o and lse."""
    q = torch.randn(B, SQ, H, D, generator=gen).to(dev, torch.bfloat16)
    k = torch.randn(B, SK, HKV, D, generator=gen).to(dev, torch.bfloat16)
    return q, k, torch.empty_like(q), torch.empty(B, H, SQ, device=dev)


def report(label, out, ref, bound):
    """One result line: the relative max error of `out` (on the GPU or not)
    against the float64 or integer `ref` (exact when `bound` is 0), and a
    NaN left by the poison fails it."""
    out = out.cpu()
    if bound == 0:
        err = (out.long() - ref).abs().max().item()
    elif torch.isnan(out.double()).any().item():
        err = float("inf")
    else:
        err = ((out.double() - ref).abs().max() / ref.abs().max()).item()
    ok = err <= bound
    print(f"{label:34} {err:10.2e} {bound:10.2e}  {'PASS' if ok else 'FAIL'}")
    return ok


def check_compiled_tiles(folder, dev):
    """The tile programs of tools/gpu/tiles against torch (see the module
    docstring); one result per program."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))))
    try:
        from flashtile import runtime
    except ImportError:
        sys.path.insert(0, os.environ.get(
            "FLASHTILE_PYTHON_PATH",
            os.path.join(root, "build-rt", "python_bindings")))
        from flashtile import runtime
    gen = torch.Generator().manual_seed(26)
    S, D = 165, 64
    # Q sets the grid (ceil(S / 64) blocks); K, V, O and the LSE are unused.
    q, _, o, lse = attention_inputs(gen, dev, 1, 1, 1, S, S, D)
    results = []
    print(f"{'compiled tile program':34} {'max err':>10} {'bound':>10}  result")
    for name, dtype in (("mma_s8", torch.int8),
                        ("mma_e4m3", torch.float8_e4m3fn),
                        ("mma_e5m2", torch.float8_e5m2),
                        ("mma_bf16_ta_acc", torch.bfloat16)):
        kernel = runtime.load(os.path.join(folder, name + ".plan.json"))
        if dtype == torch.int8:
            a = torch.randint(-128, 128, (S, D), generator=gen,
                              dtype=torch.int8)
            b = torch.randint(-128, 128, (D, D), generator=gen,
                              dtype=torch.int8)
        elif name == "mma_bf16_ta_acc":
            a = torch.randn(S, D, generator=gen).to(dtype)
            b = torch.randn(S, D, generator=gen).to(dtype)
        else:
            a = torch.randn(S, D, generator=gen).to(dtype)
            b = torch.randn(D, D, generator=gen).to(dtype)
        a, b = a.to(dev), b.to(dev)
        if name == "mma_bf16_ta_acc":
            # Accumulated: D starts at a known value the blocks add to.
            start = torch.randn(D, D, generator=gen).to(dev)
            d = start.clone()
            ref = start.double().cpu() + a.double().cpu().T @ b.double().cpu()
        elif dtype == torch.int8:
            d = torch.full((S, D), -7, device=dev, dtype=torch.int32)
            ref = a.long().cpu() @ b.long().cpu().T
        else:
            d = torch.full((S, D), float("nan"), device=dev)
            ref = a.double().cpu() @ b.double().cpu().T
        kernel(q, q, q, o=o, lse=lse, a=a, b=b, d=d)
        torch.cuda.synchronize()
        results.append(report(name, d, ref,
                              0 if dtype == torch.int8 else 1e-5 * 4))
    results += check_declared_stores(folder, dev, gen, runtime)
    results.append(check_key_grid(folder, dev, gen, runtime))
    results.append(check_family(folder, dev, gen, runtime))
    results.append(check_copy_rank4(folder, dev, gen, runtime))
    results.append(check_bwd_preprocess(folder, dev, gen, runtime))
    results += check_bwd_causal(folder, dev, gen, runtime)
    return results


def check_bwd_causal(folder, dev, gen, runtime):
    """tools/gpu/tiles/bwd_causal.mlir: the causal backward family
    (preprocess, key-parallel main with dQ through f32 atomics, convert)
    against float64 autograd; gradients poisoned first. Partial tiles on
    both sides, seqlen_q < seqlen_k, and seqlen_q > seqlen_k, whose first
    rows see no key (zero gradients, no NaN); two launches (the workspaces
    are zeroed per launch)."""
    kernel = runtime.load(os.path.join(folder, "bwd_causal.plan.json"))
    results = []
    for B, H, SQ, SK in ((2, 2, 150, 200), (1, 3, 200, 130), (1, 2, 256, 256)):
        D = 64
        scale = D ** -0.5
        q, k, v, do = (torch.randn(B, s_, H, D, generator=gen).to(
            dev, torch.bfloat16) for s_ in (SQ, SK, SK, SQ))
        o, lse, rdq, rdk, rdv = ftgpu.reference.attention_grads(
            q, k, v, do, scale, causal=True)
        o = o.to(dev, torch.bfloat16)
        lse = lse.float().to(dev)  # (batch, heads, seqlen_q)
        for launch in (1, 2):
            dq, dk, dv = (torch.full_like(x, float("nan")) for x in (q, k, v))
            kernel(q, k, v, o=o, lse=lse, do=do, dq=dq, dk=dk, dv=dv,
                   softmax_scale=scale)
            torch.cuda.synchronize()
            if launch == 2:
                for name, out, ref in (("dq", dq, rdq), ("dk", dk, rdk),
                                       ("dv", dv, rdv)):
                    results.append(report(
                        f"bwd causal {SQ}x{SK} {name}", out, ref, 2e-2))
    return results


def check_bwd_preprocess(folder, dev, gen, runtime):
    """tools/gpu/tiles/bwd_preprocess.mlir: the backward's D =
    rowsum(dO * O) from bf16 O and dO widened into f32 tiles; GQA shapes,
    2 sequences, seqlen_q 150 (the last tile partial), d poisoned."""
    B, H, HKV, SQ, SK, D = 2, 4, 2, 150, 80, 64
    kernel = runtime.load(os.path.join(folder, "bwd_preprocess.plan.json"))
    q, k, _, lse = attention_inputs(gen, dev, B, H, HKV, SQ, SK, D)
    o = torch.randn(B, SQ, H, D, generator=gen).to(dev, torch.bfloat16)
    do = torch.randn(B, SQ, H, D, generator=gen).to(dev, torch.bfloat16)
    d = torch.full((B, H, SQ), float("nan"), device=dev)
    kernel(q, k, k, o=o, lse=lse, do=do, d=d)
    torch.cuda.synchronize()
    ref = (do.double().cpu() * o.double().cpu()).sum(-1).transpose(1, 2)
    return report("bwd preprocess D = rowsum(dO*O)", d, ref, 1e-5 * 4)


def check_copy_rank4(folder, dev, gen, runtime):
    """tools/gpu/tiles/mma_s8_rank4.mlir: attn.copy_tile from (batch, rows,
    heads, 64) i8 tensors at [b, row, h, 0], an s8 product per (query tile,
    head, batch), stored into a rank-4 i32 tensor; exact. 2 sequences, 3
    heads, 150 rows (the last tile partial, zero-filled)."""
    B, H, S, D = 2, 3, 150, 64
    kernel = runtime.load(os.path.join(folder, "mma_s8_rank4.plan.json"))
    q, _, o, lse = attention_inputs(gen, dev, B, H, H, S, S, D)
    a = torch.randint(-128, 128, (B, S, H, D), generator=gen,
                      dtype=torch.int8)
    b = torch.randint(-128, 128, (B, D, H, D), generator=gen,
                      dtype=torch.int8)
    d = torch.full((B, S, H, D), -7, dtype=torch.int32, device=dev)
    kernel(q, q, q, o=o, lse=lse, a=a.to(dev), b=b.to(dev), d=d)
    torch.cuda.synchronize()
    ref = torch.einsum("bihc,bjhc->bihj", a.long(), b.long())
    return report("copy_tile rank-4 (s8)", d, ref, 0)


def check_family(folder, dev, gen, runtime):
    """tools/gpu/tiles/family_accumulate.mlir: one plan, two kernels and a
    zero-filled workspace; s = bf16(2 Q K[0:64]^T), the same on a second
    launch (the workspace is zeroed per launch, not accumulated across)."""
    B, H, HKV, SQ, SK, D = 2, 4, 2, 150, 80, 64
    kernel = runtime.load(os.path.join(folder, "family_accumulate.plan.json"))
    q, k, o, lse = attention_inputs(gen, dev, B, H, HKV, SQ, SK, D)
    ref = 2 * torch.einsum("bihc,bjhc->bihj", q.double().cpu(),
                           k[:, :64].double().cpu().repeat_interleave(
                               H // HKV, dim=2))
    results = []
    for launch in (1, 2):
        s = torch.full((B, SQ, H, D), float("nan"), device=dev,
                       dtype=torch.bfloat16)
        kernel(q, k, k, o=o, lse=lse, s=s)
        torch.cuda.synchronize()
        results.append(report(f"family (2 kernels, workspace) #{launch}", s,
                              ref, 2 ** -8))
    return all(results)


def check_key_grid(folder, dev, gen, runtime):
    """tools/gpu/tiles/key_grid.mlir: a grid over key tiles and KV heads;
    T[b, i, h_kv, c] = sum_j sum_d K[b, i, h_kv, d] Q[b, 64 j + c, G h_kv, d]
    over the query tiles j (Q's rows past seqlen_q zero-filled). GQA (4
    query heads on 2 KV heads), 2 sequences, seqlen_k 150 (3 key tiles,
    the last partial), seqlen_q 200."""
    B, H, HKV, SQ, SK, D = 2, 4, 2, 200, 150, 64
    kernel = runtime.load(os.path.join(folder, "key_grid.plan.json"))
    q, k, o, lse = attention_inputs(gen, dev, B, H, HKV, SQ, SK, D)
    t = torch.full((B, SK, HKV, D), float("nan"), device=dev)
    kernel(q, k, k, o=o, lse=lse, t=t)
    torch.cuda.synchronize()
    tiles = (SQ + 63) // 64
    qq = torch.zeros(B, tiles * 64, H, D, dtype=torch.float64)
    qq[:, :SQ] = q.double().cpu()
    first = qq[:, :, ::H // HKV]  # the group's first query head
    # (b, j, c, h_kv, d) -> sum over j of K Q_j^T
    qj = first.reshape(B, tiles, 64, HKV, D).sum(1)
    ref = torch.einsum("bihd,bchd->bihc", k.double().cpu(), qj)
    return report("key_grid (grid = keys)", t, ref, 1e-5 * 4)


def check_declared_stores(folder, dev, gen, runtime):
    """tools/gpu/tiles/store_declared.mlir: S = Q K[0:64]^T per (query tile,
    head, batch), added twice into the f32 rank-4 dq with atomics, stored as
    bf16 into s and its row sums into the rank-3 rowsum; GQA (2 query heads
    on 1 KV head), 2 sequences, seqlen_k 50 < 64 (K's zero-filled rows give
    zero columns). One result per output."""
    B, H, HKV, SQ, SK, D = 2, 2, 1, 165, 50, 64
    kernel = runtime.load(os.path.join(folder, "store_declared.plan.json"))
    q, k, o, lse = attention_inputs(gen, dev, B, H, HKV, SQ, SK, D)
    start = torch.randn(B, SQ, H, D, generator=gen).to(dev)
    dq = start.clone()
    s = torch.full((B, SQ, H, D), float("nan"), device=dev,
                   dtype=torch.bfloat16)
    rowsum = torch.full((B, H, SQ), float("nan"), device=dev)
    kernel(q, k, k, o=o, lse=lse, dq=dq, s=s, rowsum=rowsum)
    torch.cuda.synchronize()
    kk = torch.zeros(B, D, HKV, D, dtype=torch.float64)
    kk[:, :SK] = k.double().cpu()
    # ref[b, i, h, j] = sum_c q[b, i, h, c] k[b, j, h / G, c]
    ref = torch.einsum("bihc,bjhc->bihj", q.double().cpu(),
                       kk.repeat_interleave(H // HKV, dim=2))
    return [report("store_declared dq (atomic)", dq,
                   start.double().cpu() + 2 * ref, 1e-5 * 4),
            report("store_declared s (bf16)", s, ref, 2 ** -8),
            report("store_declared rowsum", rowsum,
                   ref.sum(-1).transpose(1, 2), 1e-5 * 4)]


if __name__ == "__main__":
    sys.exit(main())
