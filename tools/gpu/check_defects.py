"""The defects an outside test campaign found in the hooks, checked on the
GPU against float64 PyTorch (issue 22): a hook whose captured constant
changes gets a new kernel (PyTorch's test_recompile_changed_score_mod),
`x ** n` of a negative x is torch's value and not NaN, `%` of a negative
index has the divisor's sign, as in torch, batch_size() is the
batch in every kernel of a plan, Python booleans and 0-d captured tensors
compile, and concurrent flashtile.decode calls keep their own lengths.

Two modes, because the GPU machine has no compiler:

    python3 tools/gpu/check_defects.py --prebuild .gpu/cache   # here
    python3 tools/gpu/check_defects.py                         # on the GPU

--prebuild traces every case's hooks into the same requests the calls
make (pure Python, no torch) and compiles them into the cache.
"""

import argparse
import math
import os
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import flashtile  # noqa: E402
from flashtile import _seqlens  # noqa: E402
from flashtile import compiler as ftc  # noqa: E402

ARCH, ISA = "sm_120", "sm_90"  # the SM120 configuration on the H200
D = 64

# PyTorch's test_recompile_changed_score_mod: one function, a global flag.
ADD = True


def flip(score, b, h, q_idx, kv_idx):
    if ADD:
        return score + 1.0
    return score * 2.0


def square(score, b, h, q_idx, kv_idx):
    return score - 0.002 * flashtile.to_float(q_idx - kv_idx) ** 2


def floor_mod(score, b, h, q_idx, kv_idx):
    # Python's and torch's % and // of a negative index (q < kv): they
    # floor, where arith.remsi truncates.
    return score + 0.1 * flashtile.to_float((q_idx - kv_idx) % 5) \
        - 0.01 * flashtile.to_float((q_idx - kv_idx) // 7)


POWER = flashtile.scalar(3.0, name="power")


def cube(score, b, h, q_idx, kv_idx):
    # A run-time exponent: the sign of a negative base's odd power.
    return score + 1e-6 * flashtile.pow(flashtile.to_float(q_idx - kv_idx),
                                        POWER)


def batch_diagonal(score, b, h, q_idx, kv_idx):
    # A diagonal term (k - q) that reads the batch size but not b: its table
    # kernel's grid z is 1.
    return score + 0.01 * flashtile.to_float(kv_idx - q_idx) * \
        flashtile.to_float(flashtile.batch_size())


def batch_rows(score, b, h, q_idx, kv_idx):
    return score + flashtile.to_float(b) - 0.5 * flashtile.to_float(
        flashtile.batch_size())


def noop(b, h, q_idx, kv_idx):
    return True


def causal_by_not(b, h, q_idx, kv_idx):
    return ~(kv_idx > q_idx) & True


SCALE0 = None  # 0-d float32 tensors, set before the call
BIAS0 = None


def zero_dim(score, b, h, q_idx, kv_idx):
    return score * SCALE0 + BIAS0


def spec(dtype):
    return flashtile.TensorSpec(dtype, 0)


# name, hooks, captures for prebuilding (name -> TensorSpec)
CASES = [
    ("flip_add", {"score_mod": flip}, {}),
    ("square", {"score_mod": square}, {}),
    ("floor_mod", {"score_mod": floor_mod}, {}),
    ("cube", {"score_mod": cube}, {}),
    ("batch_diagonal", {"score_mod": batch_diagonal}, {}),
    ("batch_rows", {"score_mod": batch_rows}, {}),
    ("noop", {"mask_mod": noop}, {}),
    ("causal_by_not", {"mask_mod": causal_by_not}, {}),
    ("zero_dim", {"score_mod": zero_dim},
     {"SCALE0": spec("float32"), "BIAS0": spec("float32")}),
]
DTYPES = ("bf16", "f16")


def requests():
    """Every kernel the checks call, as flashtile.attention and
    flashtile.decode request them."""
    global ADD
    out = []
    for dtype in DTYPES:
        for name, hooks, captures in CASES:
            flips = (True, False) if name == "flip_add" else (None,)
            for add in flips:
                if add is not None:
                    ADD = add
                out.append(ftc.KernelRequest(
                    D, dtype, head_dim_v=D, arch=ARCH, isa=ISA,
                    captures=captures or None, **hooks))
        out.append(ftc.KernelRequest(
            D, dtype, head_dim_v=D, mask_mod=_seqlens.mask, arch=ARCH,
            isa=ISA, family="decode",
            captures={_seqlens.CACHE_SEQLENS: flashtile.TensorSpec("int32",
                                                                   1)}))
    ADD = True
    return out


def prebuild(cache):
    for request in requests():
        kernel = ftc.compile_request(request, cache=cache, verbose=False)
        print(f"{kernel.key}  {request.description}")


def run():
    import torch
    from check_python import poison, reference
    global ADD, SCALE0, BIAS0
    dev = "cuda"
    gen = torch.Generator().manual_seed(22)
    from ftgpu.tolerance import O_TOLERANCE as tols, torch_dtype
    results = []

    def compare(label, out, lse, ref, ref_lse, dtype):
        err = ((out.double() - ref).abs().max()
               / ref.abs().max().clamp_min(1e-30)).item()
        lse_err = (lse.double() - ref_lse).abs().max().item()
        ok = (err < tols[dtype] and lse_err < 1e-3
              and not torch.isnan(out).any().item())
        results.append(ok)
        print(f"{label:34} {err:9.2e} {lse_err:9.2e}  "
              f"{'PASS' if ok else 'FAIL'}")

    print(f"{'case':34} {'O err':>9} {'LSE err':>9}  result")
    B, H, Sq, Sk = 3, 4, 200, 333
    for dtype in DTYPES:
        tdt = torch_dtype(dtype)
        q = torch.randn(B, H, Sq, D, generator=gen).to(dev, tdt)
        k = torch.randn(B, H, Sk, D, generator=gen).to(dev, tdt)
        v = torch.randn(B, H, Sk, D, generator=gen).to(dev, tdt)
        scale = 1 / math.sqrt(D)
        SCALE0 = torch.tensor(0.75, device=dev)
        BIAS0 = torch.tensor(-0.3, device=dev)
        for name, hooks, _ in CASES:
            flips = (True, False, True) if name == "flip_add" else (None,)
            for add in flips:
                if add is not None:
                    ADD = add
                poison()
                out, lse = flashtile.attention(q, k, v, return_lse=True,
                                               arch=ARCH, **hooks)
                # The twins: the same functions on tensors, but for what
                # only exists traced (batch_size()) or is not a tensor
                # (noop's True).
                ref_hooks = dict(hooks)
                if name == "batch_diagonal":
                    ref_hooks["score_mod"] = (
                        lambda s, b, h, qi, ki: s + 0.01 * (ki - qi) * B)
                elif name == "batch_rows":
                    ref_hooks["score_mod"] = (
                        lambda s, b, h, qi, ki: s + b - 0.5 * B)
                elif name == "noop":
                    ref_hooks = {}
                ref, ref_lse = reference(q, k, v, False,
                                         ref_hooks.get("score_mod"),
                                         ref_hooks.get("mask_mod"), scale)
                label = f"{name}_{dtype}" + (
                    "" if add is None else f"_add{int(add)}")
                compare(label, out, lse, ref, ref_lse, dtype)
        ADD = True
        # Concurrent decode calls with their own cache lengths.
        Bd, Hd, Skd = 4, 8, 1024
        qd = torch.randn(Bd, 1, Hd, D, generator=gen).to(dev, tdt)
        kd = torch.randn(Bd, Skd, Hd, D, generator=gen).to(dev, tdt)
        vd = torch.randn(Bd, Skd, Hd, D, generator=gen).to(dev, tdt)
        lengths = [torch.tensor(n, dtype=torch.int32, device=dev)
                   for n in ([1000, 7, 512, 300], [13, 999, 64, 1024])]
        refs = []
        for L in lengths:
            ref, ref_lse = reference(
                qd.transpose(1, 2), kd.transpose(1, 2), vd.transpose(1, 2),
                False, None, lambda b, h, qi, ki, L=L: ki < L[b], scale)
            refs.append((ref, ref_lse))
        torch.cuda.synchronize()
        wrong = []

        def worker(i):
            stream = torch.cuda.Stream()
            with torch.cuda.stream(stream):
                for _ in range(50):
                    out, lse = flashtile.decode(
                        qd, kd, vd, cache_seqlens=lengths[i], arch=ARCH,
                        return_softmax_lse=True)
                    stream.synchronize()
                    err = ((out.transpose(1, 2).double() - refs[i][0]).abs()
                           .max() / refs[i][0].abs().max()).item()
                    if not err < tols[dtype]:
                        wrong.append(err)

        threads = [threading.Thread(target=worker, args=(i,))
                   for i in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        ok = not wrong
        results.append(ok)
        print(f"{'decode_threads_' + dtype:34} {len(wrong):4} of 100 calls "
              f"wrong  {'PASS' if ok else 'FAIL'}")
    print(f"{sum(results)}/{len(results)} cases passed")
    return all(results)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--prebuild", metavar="CACHE")
    args = parser.parse_args()
    if args.prebuild:
        prebuild(args.prebuild)
        return 0
    return 0 if run() else 1


if __name__ == "__main__":
    sys.exit(main())
