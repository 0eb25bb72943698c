#!/usr/bin/env python3
"""Reliability checks of the compiled forward kernels on the GPU.

    python3 tools/gpu/check_reliability.py --kernels DIR [--parts P ...]
        [--cases N] [--seed S]

DIR holds launch plans (NAME.plan.json + cubin) as tools/gpu/build_kernels.sh
writes them; DIR/paged holds the paged decode plans. The forward plans
(prefill configurations for sm_120 and sm_90, and the decode family with its
split-KV combine) are the ones without hooks or a tile program. Parts:

* sweep: N random cases (default 500) from a fixed seed. Each draws a plan
  and a shape: batch 1-4, heads_kv 1-4, a GQA ratio of 1, 2, 3, 4 or 8,
  Sq and Sk independently (1, odd and even lengths up to 2100), an explicit
  softmax scale or the plan's, and for every tensor one of four layouts:
  (B, S, H, D) contiguous, a transposed (B, H, S, D) buffer, rows padded
  past the head dim, or every other batch of a larger buffer. The outputs
  are poisoned with NaN; O and LSE are compared with float64 attention
  (tools/gpu/check_fwd.py: O relative 1e-2 bf16 / 2e-3 f16, LSE 2e-3). The
  plan's mask (causal, window) comes with it, so the sweep covers every
  head dim, dtype and mask that DIR holds. Prints the worst case per dtype.
* edge: numerics at the edges, on a set of plans of both dtypes and both
  families: rows that see no key (O = 0 and LSE = -inf, never NaN), scores
  around +-1e4 before scaling (+-100 in one coordinate of Q and of K), f16
  V near 65504 (V at +-[60000, 65504]), huge scores (Q/K elements at 65504
  in f16, 2^20 in bf16), Sk = 0 (O = 0, LSE = -inf), and
  Sq = 0 or batch 0 (empty outputs, no error).
* determinism: every forward plan twice on the same inputs, and the decode
  plans with 1, 3 and 7 KV splits and the paged plans with 5, must give
  bit-identical O and LSE run to run.
* sanitize: a few small cases per plan for compute-sanitizer (odd lengths
  1, 17 and 1000, GQA, and the plans' windows; the reference on the CPU),
  over the plans named by --only (default: all forward plans).

Exit status 0 when every check passes, 1 otherwise, 2 on bad usage.
"""

import argparse
import os
import random
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_fwd import (KernelInfo, O_TOLERANCE, compare, find_kernels,  # noqa: E402
                       reference, runtime)
import ftgpu.tolerance  # noqa: E402

LAYOUTS = ("bshd", "bhsd", "padded", "every-other-batch")


def load_plans(folder, only):
    """(name, kernel, KernelInfo, paged) for every forward plan."""
    plans = []
    paths = find_kernels([folder])
    paged_dir = os.path.join(folder, "paged")
    if os.path.isdir(paged_dir):
        paths += find_kernels([paged_dir])
    for path in paths:
        name = os.path.basename(path)[:-len(".plan.json")]
        paged = os.path.dirname(path) == paged_dir
        if paged:
            name = "paged/" + name
        if only and not any(o == name for o in only):
            continue
        kernel = runtime.load(path)
        if kernel.info.get("tile_program") or kernel.info.get("hooks"):
            continue
        plans.append((name, kernel, KernelInfo(kernel), paged))
    return plans


def make_tensor(torch, gen, shape, dtype, layout, scale=1.0, fill=None):
    """A (B, S, H, D) tensor in `layout`; randn * scale, or `fill`."""
    b, s, h, d = shape
    if layout == "bhsd":
        base = torch.empty(b, h, s, d, dtype=dtype, device="cuda")
        view = base.transpose(1, 2)
    elif layout == "padded":
        base = torch.empty(b, s, h, d + 24, dtype=dtype, device="cuda")
        view = base[..., :d]
    elif layout == "every-other-batch":
        base = torch.empty(2 * b, s, h, d, dtype=dtype, device="cuda")
        view = base[::2]
    else:
        base = torch.empty(b, s, h, d, dtype=dtype, device="cuda")
        view = base
    if fill is not None:
        base.fill_(fill)
    else:
        x = torch.randn(*base.shape, generator=gen, device="cuda")
        base.copy_(x.mul_(scale))
    return view


def to_pages(torch, gen, k, v, page):
    """K and V (B, Sk, H, D), Sk a multiple of `page`, as page pools in a
    random order and the int32 block table."""
    b, sk, h, d = k.shape
    pages = sk // page
    order = torch.randperm(b * pages, generator=gen, device="cuda")
    pools = []
    for t in (k, v):
        pool = torch.empty(b * pages, page, h, t.shape[3], dtype=t.dtype,
                           device="cuda")
        pool[order] = t.reshape(b * pages, page, h, t.shape[3])
        pools.append(pool)
    return pools[0], pools[1], order.view(b, pages).to(torch.int32)


class Case:
    """One launch: inputs, poisoned outputs, the reference, the verdict."""

    def __init__(self, torch, plan, shape, seed, layouts=("bshd",) * 4,
                 scale=None, q_scale=1.0, k_scale=1.0, v_scale=1.0,
                 v_fill=None, page=16, splits=None):
        self.torch, self.plan, self.shape = torch, plan, shape
        name, kernel, meta, paged = plan
        b, hq, hkv, sq, sk = shape
        dtype = ftgpu.tolerance.torch_dtype(meta.dtype)
        gen = torch.Generator(device="cuda")
        gen.manual_seed(seed)
        d, dv = meta.head_dim, meta.head_dim_v
        self.q = make_tensor(torch, gen, (b, sq, hq, d), dtype, layouts[0], q_scale)
        self.k = make_tensor(torch, gen, (b, sk, hkv, d), dtype, layouts[1], k_scale)
        self.v = make_tensor(torch, gen, (b, sk, hkv, dv), dtype, layouts[2],
                             v_scale, v_fill)
        if v_fill is None and v_scale > 1e3:
            # Large magnitudes: |V| in [60000, 65504] with random signs.
            mag = torch.rand(*self.v.shape, generator=gen, device="cuda")
            sign = torch.randint(0, 2, self.v.shape, generator=gen,
                                 device="cuda") * 2 - 1
            self.v.copy_((60000 + 5504 * mag) * sign)
        self.o = make_tensor(torch, gen, (b, sq, hq, dv), dtype, layouts[3],
                             fill=float("nan"))
        self.lse = torch.full((b, hq, sq), float("nan"), device="cuda")
        self.kwargs = {} if scale is None else {"softmax_scale": scale}
        self.scale = meta.softmax_scale if scale is None else scale
        self.k_in, self.v_in = self.k, self.v
        if paged:
            self.k_in, self.v_in, table = to_pages(torch, gen, self.k, self.v, page)
            self.kwargs["block_table"] = table
        self.splits = splits

    def run(self):
        name, kernel, meta, paged = self.plan
        if self.splits is None:
            kernel(self.q, self.k_in, self.v_in, o=self.o, lse=self.lse,
                   **self.kwargs)
        else:
            kernel.launch(self.q, self.k_in, self.v_in, o=self.o, lse=self.lse,
                          sizes={"kv_splits": self.splits}, **self.kwargs)
        self.torch.cuda.synchronize()

    def check(self, ref_device="cuda"):
        """(o_err, lse_err, problems) against float64."""
        name, kernel, meta, paged = self.plan
        t = lambda x: x.transpose(1, 2)  # noqa: E731
        ref_o, ref_lse = reference(self.torch, t(self.q), t(self.k), t(self.v),
                                   self.scale, meta.causal, meta.window,
                                   ref_device)
        return compare(self.torch, meta, t(self.o), self.lse, ref_o, ref_lse)


def random_shape(rng, meta, budget=3e9):
    """(B, Hq, Hkv, Sq, Sk) for the sweep; Sq is short for decode plans
    most of the time."""
    def length():
        r = rng.random()
        if r < 0.12:
            return 1
        if r < 0.45:
            return rng.randrange(2, 130)
        if r < 0.85:
            return rng.randrange(130, 1100)
        return rng.randrange(1100, 2100)
    while True:
        b = rng.choice((1, 1, 2, 2, 3, 4))
        hkv = rng.choice((1, 2, 3, 4))
        ratio = rng.choice((1, 2, 3, 4, 8))
        hq = hkv * ratio
        sk = length()
        sq = length()
        if meta.kernel.startswith("decode") and rng.random() < 0.7:
            sq = rng.randrange(1, 17)
        if b * hq * sq * sk * (meta.head_dim + meta.head_dim_v) <= budget:
            return b, hq, hkv, sq, sk


def sweep(torch, plans, cases, seed):
    rng = random.Random(seed)
    worst = {}
    failures = 0
    forward = [p for p in plans if not p[3]]
    start = time.time()
    for n in range(cases):
        plan = rng.choice(forward)
        name, kernel, meta, _ = plan
        shape = random_shape(rng, meta)
        layouts = tuple(rng.choice(LAYOUTS) for _ in range(4))
        scale = rng.choice((None, None, round(rng.uniform(0.02, 0.3), 4)))
        label = (f"{name} B,Hq,Hkv,Sq,Sk={','.join(map(str, shape))} "
                 f"layouts q/k/v/o={'/'.join(layouts)} scale="
                 f"{'plan' if scale is None else scale}")
        try:
            case = Case(torch, plan, shape, seed * 100003 + n, layouts, scale)
            case.run()
            o_err, lse_err, problems = case.check()
        except Exception as e:  # noqa: BLE001
            traceback.print_exc()
            o_err = lse_err = float("inf")
            problems = [f"{type(e).__name__}: {e}"]
        if problems:
            failures += 1
            print(f"FAIL {label}: {'; '.join(problems)}")
        key = meta.dtype
        if key not in worst or o_err / O_TOLERANCE[key] > worst[key][0] / O_TOLERANCE[key]:
            worst[key] = (o_err, lse_err, label)
    for key, (o_err, lse_err, label) in sorted(worst.items()):
        print(f"sweep worst {key}: O rel err {o_err:.3e} (tolerance "
              f"{O_TOLERANCE[key]:g}), LSE abs err {lse_err:.3e}: {label}")
    print(f"sweep: {cases - failures} of {cases} random cases passed "
          f"(seed {seed}, {len(forward)} plans, {time.time() - start:.0f} s)")
    return failures == 0


def pick(plans, names):
    by_name = {p[0]: p for p in plans}
    return [by_name[n] for n in names if n in by_name]


EDGE_PLANS = ["sm120cfg_bf16_d64_causal", "sm120cfg_f16_d64_causal",
              "sm120cfg_bf16_d128_full", "sm120cfg_f16_d128_full",
              "sm120cfg_f16_d64_window100_50", "sm90_f16_d128_causal",
              "decode_bf16_d128_causal", "decode_f16_d64_full",
              "decode_f16_d128_window100_50"]


def edge(torch, plans):
    ok = True
    chosen = pick(plans, EDGE_PLANS)
    rows = 0

    def verdict(label, problems):
        nonlocal ok, rows
        rows += 1
        ok &= not problems
        print(f"{'PASS' if not problems else 'FAIL'} {label}"
              + ("" if not problems else ": " + "; ".join(problems)))

    for plan in chosen:
        name, kernel, meta, _ = plan
        d = meta.head_dim
        # Rows that see no key: Sq > Sk with a causal or windowed plan
        # (bottom-right aligned), and the window's own empty rows.
        if meta.causal or meta.window != (-1, -1):
            case = Case(torch, plan, (2, 4, 2, 300, 77), 11)
            case.run()
            o_err, _, problems = case.check()
            empty = torch.isneginf(case.lse)
            if not bool(empty.any()):
                problems.append("no fully masked row in this case")
            elif bool((case.o.transpose(1, 2)[empty] != 0).any()):
                problems.append("a fully masked row has O != 0")
            verdict(f"{name} fully masked rows (Sq=300 > Sk=77): "
                    f"{int(empty.sum())} rows O=0, LSE=-inf; O err {o_err:.2e}",
                    problems)
        # Scores around +-1e4 before scaling: one coordinate of Q and of K
        # is +-100 (random signs), the rest randn, so q.k = +-1e4 + N(0, d).
        case = Case(torch, plan, (1, 4, 2, 129, 257), 12)
        for t in (case.q, case.k):
            sign = torch.randint(0, 2, t.shape[:3], device="cuda") * 2 - 1
            t[..., 0] = (100 * sign).to(t.dtype)
        case.run()
        raw = (case.q.transpose(1, 2).float()[:, :2]
               @ case.k.transpose(1, 2).float().transpose(-1, -2))
        o_err, lse_err, problems = case.check()
        verdict(f"{name} scores up to |{raw.abs().max().item():.3g}| before "
                f"scaling: O err {o_err:.2e}, LSE err {lse_err:.2e}", problems)
        if meta.dtype == "f16":
            case = Case(torch, plan, (1, 4, 2, 65, 300), 13, v_scale=65504.0)
            case.run()
            o_err, _, problems = case.check()
            verdict(f"{name} f16 V in +-[60000, 65504]: O err {o_err:.2e}, "
                    f"max|O| {case.o.float().abs().max().item():.6g}", problems)
        # Huge, still finite scores: one element of Q and of K at the
        # dtype's large end (f16 65504, bf16 2^20), so q.k reaches 4.3e9
        # (f16) or 1.1e12 (bf16). The row max's f32 rounding must not move
        # P: exponents of (s - max) * c keep the largest term at 1, where
        # fma(s, c, -max * c) was off by up to ulp(max * c) (2^64 at 1e9).
        big = 65504.0 if meta.dtype == "f16" else 2.0 ** 20
        case = Case(torch, plan, (1, 2, 1, 33, 70), 14, q_scale=1.0)
        case.q[0, :, 0, 0] = big
        case.k[0, :, 0, 0] = -big
        case.k[0, 5, 0, 0] = big
        case.run()
        o_err, lse_err, problems = case.check()
        verdict(f"{name} Q/K elements at +-{big:.6g} (q.k up to "
                f"{big * big:.3g}): O err {o_err:.2e}, LSE err {lse_err:.2e}",
                problems)
        # Sk = 0: every row sees nothing.
        case = Case(torch, plan, (2, 4, 2, 9, 0), 15)
        case.run()
        problems = []
        if not bool((case.o == 0).all()):
            problems.append("O is not all 0")
        if not bool(torch.isneginf(case.lse).all()):
            problems.append("LSE is not all -inf")
        verdict(f"{name} Sk=0: O=0 and LSE=-inf", problems)
        # Sq = 0 and batch 0: empty outputs, nothing launched, no error.
        for shape in ((2, 4, 2, 0, 33), (0, 4, 2, 17, 33)):
            problems = []
            try:
                q = torch.randn(shape[0], shape[3], shape[1], d, device="cuda").to(
                    case.q.dtype)
                k = torch.randn(shape[0], shape[4], shape[2], d, device="cuda").to(
                    case.q.dtype)
                o, lse = kernel(q, k, k if meta.head_dim_v == d else
                                torch.randn(shape[0], shape[4], shape[2],
                                            meta.head_dim_v, device="cuda").to(q.dtype))
                torch.cuda.synchronize()
                want = (shape[0], shape[3], shape[1], meta.head_dim_v)
                if tuple(o.shape) != want:
                    problems.append(f"O shape {tuple(o.shape)}, expected {want}")
                if tuple(lse.shape) != (shape[0], shape[1], shape[3]):
                    problems.append(f"LSE shape {tuple(lse.shape)}")
            except Exception as e:  # noqa: BLE001
                problems.append(f"{type(e).__name__}: {e}")
            verdict(f"{name} B={shape[0]} Sq={shape[3]}: empty outputs", problems)
    print(f"edge: {rows} checks on {len(chosen)} plans, "
          f"{'all passed' if ok else 'FAILURES'}")
    return ok


def bits(torch, x):
    return x.contiguous().view(torch.int16 if x.element_size() == 2 else torch.int32)


def determinism(torch, plans):
    ok = True
    runs = 0
    for plan in plans:
        name, kernel, meta, paged = plan
        decode = name.split("/")[-1].startswith("decode")
        shape = (2, 8, 2, 4, 4096) if decode else (2, 8, 2, 333, 1000)
        split_counts = [None] + ([1, 3, 7] if decode and not paged else []) + \
            ([5] if paged else [])
        for splits in split_counts:
            first = None
            for _ in range(2):
                case = Case(torch, plan, shape, 21, splits=splits)
                case.run()
                got = (bits(torch, case.o), bits(torch, case.lse))
                runs += 1
                if first is None:
                    first = got
                    continue
                same = torch.equal(first[0], got[0]) and torch.equal(first[1], got[1])
                ok &= same
                if not same:
                    print(f"FAIL {name} splits={splits}: outputs differ run to run")
    print(f"determinism: {runs} runs of {len(plans)} plans, "
          f"{'bit-identical' if ok else 'NOT bit-identical'}")
    return ok


SANITIZE_SHAPES = [(1, 4, 2, 1, 1000), (2, 4, 2, 17, 17), (1, 2, 1, 1000, 1000),
                   (1, 4, 1, 1000, 17)]


def sanitize(torch, plans):
    ok = True
    runs = 0
    for plan in plans:
        name, kernel, meta, paged = plan
        for n, shape in enumerate(SANITIZE_SHAPES):
            if paged:
                shape = shape[:4] + (1008 if shape[4] == 1000 else 32,)
            for splits in ([None, 3] if name.split("/")[-1].startswith("decode")
                           else [None]):
                case = Case(torch, plan, shape, 31 + n, splits=splits)
                case.run()
                _, _, problems = case.check("cpu")
                runs += 1
                if problems:
                    ok = False
                    print(f"FAIL {name} {shape} splits={splits}: {'; '.join(problems)}")
    print(f"sanitize: {runs} cases over {len(plans)} plans "
          f"{'passed' if ok else 'FAILED'}")
    return ok


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kernels", required=True)
    ap.add_argument("--parts", nargs="+", default=["sweep", "edge", "determinism"],
                    choices=["sweep", "edge", "determinism", "sanitize"])
    ap.add_argument("--cases", type=int, default=500)
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--only", nargs="*", default=[],
                    help="plan names (paged ones as paged/NAME)")
    args = ap.parse_args(argv)
    if not os.path.isdir(args.kernels):
        print(f"check_reliability: no folder {args.kernels}", file=sys.stderr)
        return 2
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    plans = load_plans(args.kernels, args.only)
    if not plans:
        print("check_reliability: no forward plan", file=sys.stderr)
        return 1
    print(f"check_reliability: {len(plans)} forward plans on "
          f"{torch.cuda.get_device_name()}, torch {torch.__version__}")
    ok = True
    for part in args.parts:
        ok = {"sweep": lambda: sweep(torch, plans, args.cases, args.seed),
              "edge": lambda: edge(torch, plans),
              "determinism": lambda: determinism(torch, plans),
              "sanitize": lambda: sanitize(torch, plans)}[part]() and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
