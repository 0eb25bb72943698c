#!/usr/bin/env python3
"""The compiler-built backward families (flashtile-compile --direction=bwd,
.gpu/kernels/bwd from build_kernels.sh) against float64 autograd.

For every plan of the folder, what it computes is read from its `info`
(dtype, head dims, causal, window, the default scale), and it runs a grid
of shapes: partial tiles on both sides, seqlen_q < seqlen_k and
seqlen_q > seqlen_k (with causal, the first rows see no key: their dQ is 0,
never NaN), one query row, MHA, GQA (groups of 2 and 8) and MQA, two
sequences. O and the LSE come from
ftgpu.reference.attention (float64), dQ, dK and dV from autograd through
it; the gradients are poisoned with NaN before each launch, and each shape
is launched twice (the plan zero-fills its workspaces per launch).

Two rules per gradient, both must hold:
  - the relative max error is below ftgpu.tolerance.GRAD_TOLERANCE
    (2e-2 bf16, 5e-3 f16);
  - FlashAttention-2's rule: the max error is at most twice that of
    PyTorch's eager attention in the same precision (plus 1e-5).

    python3 tools/gpu/check_bwd.py [--folder .gpu/kernels/bwd]
"""

import argparse
import glob
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ftgpu.reference  # noqa: E402
import ftgpu.tolerance  # noqa: E402
from bench_fwd import runtime  # noqa: E402  (sets up the path)

# (batch, heads_q, heads_kv, seqlen_q, seqlen_k)
# One query row; a group of 8 query heads per KV head; many more queries
# than keys (with causal, most rows see no key and key tiles see few).
SHAPES = [(2, 2, 2, 150, 200), (1, 4, 2, 200, 130), (1, 3, 1, 256, 256),
          (1, 2, 2, 97, 333), (2, 2, 2, 1, 200), (1, 8, 1, 64, 64),
          (1, 1, 1, 600, 40)]


def same_precision(q, k, v, do, scale, causal, window):
    """dQ, dK, dV of an eager attention in the inputs' dtype (the
    precision FA2's backward rule measures PyTorch at)."""
    qt, kt, vt = (x.detach().transpose(1, 2).requires_grad_()
                  for x in (q, k, v))
    group = qt.shape[1] // kt.shape[1]
    ke = kt.repeat_interleave(group, 1)
    ve = vt.repeat_interleave(group, 1)
    sq, sk = qt.shape[2], kt.shape[2]
    keep = ftgpu.reference.visible(sq, sk, causal, window, q.device)
    s = (qt @ ke.transpose(-1, -2)) * scale
    s = s.masked_fill(~keep, float("-inf"))
    p = torch.softmax(s.float(), -1).nan_to_num(0.0).to(q.dtype)
    o = p @ ve
    return torch.autograd.grad(o, (qt, kt, vt), do.transpose(1, 2))


def check_plan(path, gen, dev):
    with open(path) as f:
        info = json.load(f)["info"]
    name = os.path.basename(path).removesuffix(".plan.json")
    dtype_name = info["dtype"]
    dtype = ftgpu.tolerance.torch_dtype(dtype_name)
    d, dv = info["head_dim"], info["head_dim_v"]
    causal = info["causal"]
    window = tuple(info["window"])
    bound = ftgpu.tolerance.GRAD_TOLERANCE[dtype_name]
    kernel = runtime.load(path)
    results = []
    for B, H, HKV, SQ, SK in SHAPES:
        scale = d ** -0.5
        q = torch.randn(B, SQ, H, d, generator=gen).to(dev, dtype)
        k = torch.randn(B, SK, HKV, d, generator=gen).to(dev, dtype)
        v = torch.randn(B, SK, HKV, dv, generator=gen).to(dev, dtype)
        do = torch.randn(B, SQ, H, dv, generator=gen).to(dev, dtype)
        o, lse, *refs = ftgpu.reference.attention_grads(
            q, k, v, do, scale, causal=causal, window=window)
        torch_grads = same_precision(q, k, v, do, scale, causal, window)
        o = o.to(dev, dtype)
        lse = lse.float().to(dev)
        for launch in (1, 2):
            grads = [torch.full_like(x, float("nan")) for x in (q, k, v)]
            kernel(q, k, v, o=o, lse=lse, do=do, dq=grads[0], dk=grads[1],
                   dv=grads[2], softmax_scale=scale)
            torch.cuda.synchronize()
        for label, out, ref, pt in zip(("dq", "dk", "dv"), grads, refs,
                                       torch_grads):
            err = ftgpu.tolerance.rel_err(out.cpu(), ref)
            ours = (out.cpu().double() - ref).abs().max().item()
            theirs = (pt.transpose(1, 2).cpu().double() - ref).abs().max().item()
            ok = err <= bound and ours <= 2 * theirs + 1e-5
            results.append(ok)
            print(f"{name:32} {B}x{H}/{HKV} {SQ:4}x{SK:<4} {label}  "
                  f"rel {err:9.2e} (< {bound:.0e})  max {ours:9.2e} "
                  f"(torch {theirs:9.2e})  {'PASS' if ok else 'FAIL'}")
    return results


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--folder", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..", ".gpu",
        "kernels", "bwd"))
    args = parser.parse_args()
    plans = sorted(glob.glob(os.path.join(args.folder, "*.plan.json")))
    if not plans:
        print(f"no backward plans in {args.folder}")
        return 1
    gen = torch.Generator().manual_seed(23)
    results = []
    for path in plans:
        results += check_plan(path, gen, "cuda")
    print(f"{sum(results)}/{len(results)} gradients passed "
          f"({len(plans)} backward plans)")
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
