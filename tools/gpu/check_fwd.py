#!/usr/bin/env python3
"""GPU correctness check of compiled FlashTile forward kernels.

    python3 tools/gpu/check_fwd.py --kernels DIR [--out DIR] [--sanitize]

DIR holds NAME.plan.json (launch plans, format flashtile-launch-plan) + their
cubins, as flashtile-compile writes them; the kernels run through
flashtile.runtime (the C++ runtime's Python binding: put the run-side build's
python_bindings folder on PYTHONPATH, or set FLASHTILE_PYTHON_PATH). For every kernel and every shape, q/k/v are
drawn with a seeded torch.randn in float, cast to the kernel's dtype, laid
out as (B, H, S, D) contiguous tensors and handed to the kernel as
.transpose(1, 2) views (the strided path); out (also a transposed view) and
lse are poisoned with NaN first. The result is compared against float64
attention computed from the same cast inputs:

  scores = q k^T * scale, masked bottom-right aligned: query i sees key j iff
  j >= i + Sk - Sq - L (L >= 0) and j <= i + Sk - Sq + R (R >= 0), where
  window = [L, R] (-1: unbounded) and causal means R = 0; GQA head h reads
  kv head h // (Hq / Hkv); lse = natural-log sum of exp of the scaled scores.
  A row that sees no key must give O = 0 and LSE = -inf.

Errors, by the rules of ftgpu.tolerance that every check shares: O as
max|o - ref| / max|ref| (bf16 1e-2, f16 2e-3); the LSE within 2e-3 *
max(1, |ref|) where the reference is finite; -inf rows must match exactly;
any NaN or +-inf where the reference is finite fails. The reference is
ftgpu.reference's float64 attention.

Exit status: 0 when every case passes, 1 otherwise (including kernels that
fail to load or launch), 2 on bad usage. --sanitize runs one small shape per
kernel (for compute-sanitizer) and computes the reference on the CPU.
"""

import argparse
import glob
import math
import os
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ftgpu.reference  # noqa: E402
import ftgpu.tolerance  # noqa: E402

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
try:
    from flashtile import runtime
except ImportError:
    sys.path.insert(0, os.environ.get(
        "FLASHTILE_PYTHON_PATH", os.path.join(_ROOT, "build-rt", "python_bindings")))
    from flashtile import runtime


class KernelInfo:
    """What the checks need of a plan: from its arguments and its info."""

    def __init__(self, kernel):
        info = kernel.info
        args = {a["name"]: a for a in kernel.arguments}
        first = kernel.kernels[-1]  # the attention kernel runs last
        self.kernel = kernel.name
        self.dtype = info.get("dtype", args["q"]["dtype"])
        self.head_dim = info.get("head_dim", args["q"]["shape"][3])
        self.head_dim_v = info.get("head_dim_v", args["v"]["shape"][3])
        self.causal = bool(info.get("causal", False))
        self.window = tuple(info.get("window", (-1, -1)))
        scale = args.get("softmax_scale", {}).get("default")
        self.softmax_scale = info.get("softmax_scale", scale)
        c = info.get("config", {})
        self.config = (f"{c.get('tile_m', '?')}x{c.get('tile_n', '?')}"
                       + (f" s{c['stages']}" if "stages" in c else "")
                       + (f" w{c['warps']}" if "warps" in c else "")
                       + (" qreg" if c.get("q_in_regs") else ""))
        self.block = first["block"]
        self.dynamic_smem_bytes = first["dynamic_smem_bytes"]
        self.registers = first.get("registers")
        self.spill_stores = first.get("spill_stores")
        self.spill_loads = first.get("spill_loads")

    @property
    def mask_description(self):
        """"causal", "window[L,R]", "causal+window[L,R]" or "none"."""
        left, right = self.window
        has_window = left >= 0 or (right >= 0 and not (self.causal and right == 0))
        if self.causal and has_window:
            return f"causal+window[{left},{right}]"
        if self.causal:
            return "causal"
        if has_window:
            return f"window[{left},{right}]"
        return "none"

# (B, Hq, Hkv, Sq, Sk)
SHAPES = [
    (1, 1, 1, 1, 1),
    (2, 4, 4, 113, 203),
    (2, 4, 4, 1000, 1000),
    (1, 8, 2, 4096, 4096),
    (2, 8, 2, 2048, 512),
    (1, 2, 2, 203, 113),
    (2, 8, 8, 128, 128),
    (1, 4, 1, 77, 1000),
    (3, 2, 2, 1, 257),
]
SANITIZE_SHAPE = (1, 2, 1, 113, 203)

O_TOLERANCE = ftgpu.tolerance.O_TOLERANCE


class Log:
    def __init__(self):
        self.lines = []

    def __call__(self, line="", echo=True):
        self.lines.append(line)
        if echo:
            print(line, flush=True)


def reference(torch, q, k, v, scale, causal, window, device):
    """float64 attention of (B, H, S, D) tensors (ftgpu.reference); returns
    (O, LSE) on device."""
    return ftgpu.reference.attention(q, k, v, scale, causal=causal,
                                     window=window, device=device)


def compare(torch, meta, out, lse, ref_o, ref_lse):
    """Returns (o_rel_err, lse_abs_err, problems: list of str), by
    ftgpu.tolerance's rules for the kernel's dtype."""
    return ftgpu.tolerance.compare(out, lse, ref_o, ref_lse, meta.dtype)


def run_case(torch, kernel, meta, shape, seed, ref_device, input_scale):
    b, hq, hkv, sq, sk = shape
    d, dv = meta.head_dim, meta.head_dim_v
    dtype = ftgpu.tolerance.torch_dtype(meta.dtype)
    gen = torch.Generator(device="cuda")
    gen.manual_seed(seed)

    def rand(*size):
        x = torch.randn(*size, generator=gen, device="cuda", dtype=torch.float32)
        return x.mul_(input_scale).to(dtype)

    q = rand(b, hq, sq, d)
    k = rand(b, hkv, sk, d)
    v = rand(b, hkv, sk, dv)
    out = torch.full((b, hq, sq, dv), float("nan"), dtype=dtype, device="cuda")
    lse = torch.full((b, hq, sq), float("nan"), dtype=torch.float32, device="cuda")
    got_o, got_lse = kernel(q.transpose(1, 2), k.transpose(1, 2),
                            v.transpose(1, 2), o=out.transpose(1, 2), lse=lse)
    torch.cuda.synchronize()
    assert got_o.data_ptr() == out.data_ptr() and got_lse is lse
    ref_o, ref_lse = reference(torch, q, k, v, meta.softmax_scale, meta.causal,
                               meta.window, ref_device)
    return compare(torch, meta, out, lse, ref_o, ref_lse)


def context_is_broken(torch):
    try:
        torch.zeros(1, device="cuda").add_(1).item()
        torch.cuda.synchronize()
        return False
    except Exception:  # noqa: BLE001
        return True


def find_kernels(paths):
    files = []
    for p in paths:
        if os.path.isdir(p):
            files += sorted(glob.glob(os.path.join(p, "*.plan.json")))
        else:
            files.append(p)
    return files


def format_table(rows):
    header = ["kernel", "dtype", "d", "mask", "config", "shape B,Hq,Hkv,Sq,Sk",
              "O rel err", "LSE abs err", "result"]
    table = [header] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]
    lines = []
    for n, r in enumerate(table):
        lines.append("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return lines


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kernels", nargs="+", required=True,
                        help="folder(s) of NAME.plan.json + cubins, or plan files")
    parser.add_argument("--out", help="folder for check_fwd.log")
    parser.add_argument("--sanitize", action="store_true",
                        help=f"one small shape {SANITIZE_SHAPE} per kernel, "
                        "reference on the CPU (for compute-sanitizer)")
    parser.add_argument("--skip-large", action="store_true",
                        help="skip Sq*Sk >= 4096^2 when head_dim >= 256")
    parser.add_argument("--filter", default="",
                        help="only kernels whose name contains this")
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--input-scale", type=float, default=1.0,
                        help="q/k/v = randn * this before the cast")
    parser.add_argument("--ref-device", choices=["cuda", "cpu"], default=None,
                        help="where the float64 reference runs (default: cuda, "
                        "cpu with --sanitize)")
    args = parser.parse_args(argv)

    import torch
    if not torch.cuda.is_available():
        print("check_fwd: no CUDA device", file=sys.stderr)
        return 1
    ref_device = args.ref_device or ("cpu" if args.sanitize else "cuda")
    shapes = [SANITIZE_SHAPE] if args.sanitize else SHAPES
    torch.backends.cuda.matmul.allow_tf32 = False

    log = Log()
    missing = [p for p in args.kernels if not os.path.exists(p)]
    if missing:
        print(f"check_fwd: no such file or folder: {', '.join(missing)}",
              file=sys.stderr)
        return 2
    files = [f for f in find_kernels(args.kernels)
             if args.filter in os.path.basename(f)]
    if not files:
        print(f"check_fwd: no launch plan (*.plan.json) in {args.kernels}",
              file=sys.stderr)
        return 1
    log(f"check_fwd: {len(files)} kernel(s), {len(shapes)} shape(s) each, on "
        f"{torch.cuda.get_device_name()} (sm_"
        f"{''.join(map(str, torch.cuda.get_device_capability()))}), torch "
        f"{torch.__version__}, reference on {ref_device}")

    rows = []
    failures = skipped = 0
    broken = False
    start = time.time()
    for path in files:
        name = os.path.basename(path)[:-len(".plan.json")]
        try:
            kernel = runtime.load(path)
        except runtime.FlashTileError as e:
            failures += 1
            rows.append([name, "?", "?", "?", "?", "-", "-", "-", "FAIL (load)"])
            log(f"FAIL {name}: {e}")
            continue
        if kernel.info.get("tile_program"):
            # A tile program computes its own math: check_tiles.py.
            log(f"skip {name}: a tile program (check_tiles.py)")
            continue
        if kernel.info.get("hooks"):
            # Hooked kernels have their own twins: check_variants.py.
            log(f"skip {name}: hooks {kernel.info['hooks']} (check_variants.py)")
            continue
        m = KernelInfo(kernel)
        d = str(m.head_dim) if m.head_dim == m.head_dim_v else \
            f"{m.head_dim}/{m.head_dim_v}"
        info = [m.kernel, m.dtype, d, m.mask_description, m.config]
        extra = (f"registers {m.registers}, spills {m.spill_stores}/"
                 f"{m.spill_loads}" if m.registers is not None else
                 "registers unknown")
        log(f"== {m.kernel}: {m.dtype} d={d} {m.mask_description} "
            f"config {m.config} block {list(m.block)} smem "
            f"{m.dynamic_smem_bytes} B, {extra}", echo=False)
        kernel_start, passed = time.time(), 0
        unusable = False  # the module or function could not be loaded
        for n, shape in enumerate(shapes):
            shape_text = ",".join(map(str, shape))
            if broken or unusable:
                rows.append(info + [shape_text, "-", "-", "NOT RUN"])
                failures += 1
                continue
            if (args.skip_large and max(m.head_dim, m.head_dim_v) >= 256
                    and shape[3] * shape[4] >= 4096 * 4096):
                rows.append(info + [shape_text, "-", "-", "SKIP"])
                skipped += 1
                log(f"   {shape_text}: skipped (--skip-large)", echo=False)
                continue
            t0 = time.time()
            try:
                o_err, lse_err, problems = run_case(
                    torch, kernel, m, shape, args.seed + 7919 * n, ref_device,
                    args.input_scale)
            except Exception as e:  # noqa: BLE001
                problems = [f"{type(e).__name__}: {e}"]
                if isinstance(e, runtime.FlashTileError) and any(
                        api in str(e) for api in ("cuModuleLoadData",
                                                  "cuModuleGetFunction",
                                                  "cuFuncSetAttribute")):
                    unusable = True
                    problems.append("later shapes of this kernel not run")
                o_err = lse_err = float("nan")
                log(traceback.format_exc(), echo=False)
                if context_is_broken(torch):
                    broken = True
                    problems.append("CUDA context is broken; later cases not run")
            status = "PASS" if not problems else "FAIL"
            if problems:
                failures += 1
            else:
                passed += 1
            rows.append(info + [shape_text, f"{o_err:.2e}", f"{lse_err:.2e}", status])
            log(f"   {shape_text}: O rel err {o_err:.3e}, LSE abs err "
                f"{lse_err:.3e}, {time.time() - t0:.2f} s: {status}"
                + ("" if not problems else " (" + "; ".join(problems) + ")"),
                echo=bool(problems))
        log(f"{m.kernel}: {passed}/{len(shapes)} passed in "
            f"{time.time() - kernel_start:.1f} s")

    log()
    for line in format_table(rows):
        log(line)
    total = len(rows)
    log()
    log(f"{total - failures - skipped} of {total} cases passed, {failures} "
        f"failed, {skipped} skipped ({time.time() - start:.1f} s)")
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "check_fwd.log"), "w") as fh:
            fh.write("\n".join(log.lines) + "\n")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
