"""The accuracy rules of the GPU checks, each once.

O passes when max |o - ref| / max |ref| (over the whole output) is below
O_TOLERANCE of its dtype; the LSE when |lse - ref| <= LSE_TOLERANCE *
max(1, |ref|) where the reference is finite, and the -inf rows (rows that
see no key) match exactly, with O = 0 there. Gradients: GRAD_TOLERANCE, the
same relative rule. NaN anywhere fails. The dtype names the rules (and
the plans' `info.dtype`) are keyed by map to torch dtypes here too
(dtype_name, torch_dtype).
"""

import math

import torch

O_TOLERANCE = {"bf16": 1e-2, "f16": 2e-3}
GRAD_TOLERANCE = {"bf16": 2e-2, "f16": 5e-3}
LSE_TOLERANCE = 2e-3  # relative, with a floor of 1 on |ref|

_NAMES = {torch.bfloat16: "bf16", torch.float16: "f16"}


def dtype_name(dtype):
    """"bf16" / "f16" for a torch dtype or one of those names."""
    return _NAMES.get(dtype, dtype)


def torch_dtype(name):
    """The torch dtype of "bf16" / "f16" (a plan's `info.dtype`)."""
    return {n: d for d, n in _NAMES.items()}[name]


def rel_err(out, ref):
    """max |out - ref| / max |ref| in float64 (NaN counts as infinitely
    wrong; max |ref| = 0 gives the absolute error)."""
    out = out.to(device=ref.device, dtype=torch.float64)
    diff = (out - ref.to(torch.float64)).abs()
    diff = torch.where(torch.isnan(diff), torch.full_like(diff, math.inf), diff)
    if not diff.numel():
        return 0.0
    denom = float(ref.abs().max())
    return float(diff.max()) / (denom if denom > 0 else 1.0)


def compare(out, lse, ref_o, ref_lse, dtype):
    """(o_rel_err, lse_abs_err, problems): every broken rule, as text; O
    and the LSE in the same layout as the reference's."""
    problems = []
    dtype = dtype_name(dtype)
    out = out.to(device=ref_o.device, dtype=torch.float64)
    for what, t in (("O", out), ("LSE", lse)):
        if lse is None and what == "LSE":
            continue
        n_nan = int(torch.isnan(t).sum())
        if n_nan:
            problems.append(f"{n_nan} NaN in {what}")
    n_inf = int(torch.isinf(out).sum())
    if n_inf:
        problems.append(f"{n_inf} inf in O")
    o_err = rel_err(out, ref_o)
    if not o_err < O_TOLERANCE[dtype]:
        problems.append(f"O rel err {o_err:.3g} >= {O_TOLERANCE[dtype]:g}")
    lse_err = 0.0
    if lse is None:
        return o_err, lse_err, problems
    lse = lse.to(device=ref_lse.device, dtype=torch.float64)
    ref_neginf, got_neginf = torch.isneginf(ref_lse), torch.isneginf(lse)
    mismatch = int((ref_neginf != got_neginf).sum())
    if mismatch:
        problems.append(f"{mismatch} LSE -inf positions differ (ref "
                        f"{int(ref_neginf.sum())}, got {int(got_neginf.sum())})")
    if int(torch.isposinf(lse).sum()):
        problems.append("+inf in LSE")
    finite = torch.isfinite(ref_lse)
    if bool(finite.any()):
        err = (lse[finite] - ref_lse[finite]).abs()
        err = torch.where(torch.isnan(err), torch.full_like(err, math.inf), err)
        lse_err = float(err.max())
        rel = float((err / ref_lse[finite].abs().clamp(min=1.0)).max())
        if not rel <= LSE_TOLERANCE:
            problems.append(f"LSE err {lse_err:.3g} (rel {rel:.3g} > "
                            f"{LSE_TOLERANCE:g})")
    if bool(ref_neginf.any()) and out.shape[:-1] == ref_neginf.shape:
        nonzero = int((out[ref_neginf] != 0).any(dim=-1).sum())
        if nonzero:
            problems.append(f"{nonzero} fully masked rows have O != 0")
    return o_err, lse_err, problems
