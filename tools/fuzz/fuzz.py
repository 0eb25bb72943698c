#!/usr/bin/env python3
"""A structured fuzzer of the compiler's surfaces: the driver, the compile
API (through the Python binding) and the Python hooks' tracer.

    tools/fuzz/fuzz.py [--minutes M] [--seed S] [--out DIR] [--build DIR]

Each run draws one case from a generator that knows the grammar of its
input, mutates it within that grammar, and runs it:
  - kernel-level IR: dtypes, head dims, static and dynamic shapes, memory
    spaces, masks, scales, configs, extra arguments, paged KV, and hook
    regions built from the hook ops (some malformed on purpose);
  - tile-level IR: programs the compiler printed (--emit=mlir), with an
    integer attribute changed, an op deleted, duplicated or moved;
  - flag sets: the driver's options with valid, boundary and garbage values;
  - Python hook functions, traced by flashtile.compile through the binding;
  - runtime calls: launch plans the compiler wrote, loaded as they are or
    with a field deleted or of the wrong kind, then argument checks,
    output shapes, parameter packing and launches (no driver) with fake
    tensors whose shapes, strides, dtypes, pointers and devices are drawn
    around the plan's arguments;
  - byte mutations of the above (a small share).
A run passes when the tool exits 0 with its output written, or exits 1 with
an `error:` diagnostic that has a location, no crash marker and no output
file left behind, within the time limit; the binding must raise
FlashTileError or succeed. Every failure is saved under OUT/<class>/ with
the command that reproduces it, and the figures (runs, CPU seconds,
failures per class) are printed at the end and after each minute.
The binaries are copied first, so that a rebuild does not disturb a run.
"""

import argparse
import hashlib
import json
import os
import random
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CRASH_MARKS = ("Stack dump", "LLVM ERROR", "Assertion", "PLEASE submit",
               "Segmentation fault", "terminate called", "UNREACHABLE",
               "Traceback (most recent call last)")
LOCATED_ERROR = re.compile(r"^[^\s:][^:]*:\d+:\d+: error: ", re.M)
TIMEOUT = 60

# --- Kernel-level IR --------------------------------------------------------

DTYPES = ["f16", "bf16"]
BAD_DTYPES = ["f32", "i8", "f64"]
HEAD_DIMS = [64, 128] * 4 + [32, 48, 80, 96, 112, 160, 192, 256]
BAD_HEAD_DIMS = [1, 0, 7, 300, 512, 2**20]


# The share of a case's choices that may be invalid: a case is either clean
# (every choice valid, so that it reaches the backend) or dirty (a few
# choices may be wrong, to exercise the checks).
_bad = 0.0


def bad(rng, p):
    """Whether to make a wrong choice whose base rate is `p`."""
    return rng.random() < p * _bad


def pick(rng, good, wrong, p=0.1):
    return rng.choice(wrong) if wrong and bad(rng, p * 3) else rng.choice(good)


def rand_dim(rng, static_value):
    return str(static_value) if bad(rng, 0.05) else "?"


def tensor_type(rng, dtype, d, space):
    dims = [rand_dim(rng, rng.choice([1, 2, 4, 8])) for _ in range(3)]
    strides = ", ".join(pick(rng, ["?"], ["1", "0", "128"], 0.03) for _ in range(3))
    last = "?" if bad(rng, 0.05) else "1"
    sp = f", {space}" if space else ""
    return (f"memref<{'x'.join(dims)}x{d}x{dtype}, strided<[{strides}, "
            f"{last}]>{sp}>")


F32_OPS = ["arith.addf", "arith.subf", "arith.mulf", "arith.divf",
           "arith.maximumf", "arith.minimumf"]
UNARY = ["math.tanh", "math.exp", "math.exp2", "math.log", "math.sqrt",
         "math.absf", "math.erf", "arith.negf"]
IDX_OPS = ["arith.addi", "arith.subi", "arith.muli", "arith.divsi",
           "arith.remsi", "arith.maxsi", "arith.minsi"]


def hook_body(rng, kind, extras):
    """A region for score_mod / mask_mod / sink, sometimes malformed."""
    if kind == "score_mod":
        args = [("%s", "f32"), ("%b", "index"), ("%h", "index"),
                ("%qi", "index"), ("%ki", "index")]
    elif kind == "mask_mod":
        args = [("%b", "index"), ("%h", "index"), ("%qi", "index"),
                ("%ki", "index")]
    else:
        args = [("%b", "index"), ("%h", "index")]
    if bad(rng, 0.05):
        args = args[:-1]  # wrong signature
    lines = []
    floats = [n for n, t in args if t == "f32"]
    idx = [n for n, t in args if t == "index"]
    n = 0

    def new():
        nonlocal n
        n += 1
        return f"%v{n}"
    for _ in range(rng.randint(0, 8)):
        r = rng.random()
        if r < 0.25 or not floats:
            v = new()
            lines.append(f"{v} = arith.constant {rng.choice(['1.0', '-3.5', '0.0', '1.0e30', '0x7F800000', '0x7FC00000'])} : f32")
            floats.append(v)
        elif r < 0.45:
            v = new()
            lines.append(f"{v} = {rng.choice(F32_OPS)} {rng.choice(floats)}, {rng.choice(floats)} : f32")
            floats.append(v)
        elif r < 0.6:
            v = new()
            lines.append(f"{v} = {rng.choice(UNARY)} {rng.choice(floats)} : f32")
            floats.append(v)
        elif r < 0.75 and idx:
            v = new()
            if rng.random() < 0.3:
                lines.append(f"{v} = arith.constant {rng.choice([0, 1, -1, 7, 2**40])} : index")
            else:
                lines.append(f"{v} = {rng.choice(IDX_OPS)} {rng.choice(idx)}, {rng.choice(idx)} : index")
            idx.append(v)
        elif r < 0.85 and idx:
            i32, f = new(), new()
            lines.append(f"{i32} = arith.index_cast {rng.choice(idx)} : index to i32")
            lines.append(f"{f} = arith.sitofp {i32} : i32 to f32")
            floats.append(f)
        elif r < 0.93 and extras:
            name, typ = rng.choice(extras)
            if typ == "f32":
                floats.append(name)
            elif typ.startswith("memref") and idx:
                v = new()
                lines.append(f"{v} = memref.load {name}[{rng.choice(idx)}] : {typ}")
                floats.append(v)
        elif bad(rng, 0.5):
            v = new()  # an op hooks do not take, or a value from outside
            lines.append(rng.choice([
                f"{v} = arith.constant 1 : i64",
                f"{v} = math.ctlz {rng.choice(idx or ['%b'])} : index",
                f"{v} = arith.addf %q, %q : f32"]))
    if kind == "mask_mod":
        if idx and not bad(rng, 0.1):
            c = new()
            lines.append(f"{c} = arith.cmpi {rng.choice(['sle', 'slt', 'eq', 'sge'])}, {rng.choice(idx)}, {rng.choice(idx)} : index")
            result, rtype = c, "i1"
        else:
            result, rtype = rng.choice(floats or ["%b"]), "f32"
    else:
        result, rtype = rng.choice(floats or ["%b"]), "f32"
    if bad(rng, 0.03):
        yield_line = ""  # no terminator
    elif bad(rng, 0.03):
        yield_line = f"attn.yield {result}, {result} : {rtype}, {rtype}"
    else:
        yield_line = f"attn.yield {result} : {rtype}"
    header = ", ".join(f"{a}: {t}" for a, t in args)
    body = [f"^bb0({header}):"] + ["  " + l for l in lines]
    if yield_line:
        body.append("  " + yield_line)
    if bad(rng, 0.02):
        body = []  # an empty region, or
    if bad(rng, 0.02):
        body = [f"^bb0({header}):"]  # a block with nothing in it
    return "{\n" + "\n".join("    " + l for l in body) + "\n  }"


def kernel_level(rng, name="k"):
    global _bad
    _bad = 0.0 if rng.random() < 0.5 else rng.choice([0.3, 1.0])
    dtype = pick(rng, DTYPES, BAD_DTYPES)
    d = pick(rng, HEAD_DIMS, BAD_HEAD_DIMS)
    dv = d if rng.random() < 0.8 else pick(rng, HEAD_DIMS, BAD_HEAD_DIMS)
    space = 3 if bad(rng, 0.03) else None
    qt = tensor_type(rng, dtype, d, space)
    kt = tensor_type(rng, "f16" if bad(rng, 0.03) else dtype, d, None)
    vt = tensor_type(rng, dtype, dv, None)
    ot = tensor_type(rng, dtype, dv, None)
    lse = pick(rng, ["memref<?x?x?xf32>"], ["memref<?x?xf32>", "memref<?x?x?xf16>"])
    extras = []
    for i in range(rng.choice([0, 0, 0, 1, 2])):
        typ = pick(rng, ["f32", "i32", "memref<?xf32, strided<[?]>>",
                         "memref<?xi32, strided<[?]>>"], ["i1", "memref<?x?xf32>"])
        extras.append((f"%x{i}", typ))
    paged = rng.random() < 0.08
    if paged:
        extras.append(("%table", pick(rng, ["memref<?x?xi32, strided<[?, ?]>>"],
                                      ["memref<?x?xf32, strided<[?, ?]>>"])))
    attrs = []
    if rng.random() < 0.4:
        attrs.append("causal")
    if rng.random() < 0.15:
        attrs.append(f"window_left = {pick(rng, [0, 1, 128, -1], [-5, 2**40])} : i64")
    if rng.random() < 0.1:
        attrs.append(f"window_right = {pick(rng, [0, 1, 128, -1], [-7])} : i64")
    if rng.random() < 0.1:
        attrs.append(f"softmax_scale = {pick(rng, ['0.125', '1.0'], ['0.0', '-1.0', '1.0e38', '0x7FC00000'])} : f32")
    attr_text = " {" + ", ".join(attrs) + "}" if attrs else ""
    config = ""
    if rng.random() < 0.2:
        config = (f" config(#attn.config<tile_m = {pick(rng, [64, 128], [16, 0, 40, 256])}, "
                  f"tile_n = {pick(rng, [32, 64, 128], [16, 40, 0])}, stages = {pick(rng, [1, 2], [0, 9])}, "
                  f"warps = {pick(rng, [4, 8], [1, 3])}, q_in_regs = {rng.choice(['true', 'false'])}>)")
    arch = pick(rng, ["sm_120", "sm_120", "sm_90", "sm_80", "sm_121"], ["sm_75"])
    names = ""
    if extras and not bad(rng, 0.3):
        names = " attributes {arg_names = [" + ", ".join(
            f'"{n[1:]}"' for n, _ in extras) + "]}"
    args = [f"%q: {qt}", f"%k: {kt}", f"%v: {vt}", f"%o: {ot}", f"%lse: {lse}"]
    args += [f"{n}: {t}" for n, t in extras]
    hooks = ""
    for kind in ("score_mod", "mask_mod"):
        if rng.random() < 0.35:
            hooks += f" {kind} " + hook_body(rng, kind, extras)
    pages = " pages(%table : " + extras[-1][1] + ")" if paged else ""
    op = (f"  attn.attention %q, %k, %v -> %o, %lse{pages}{attr_text} : {qt}, {kt}, "
          f"{vt} -> {ot}, {lse}{hooks}")
    body = [op]
    if bad(rng, 0.03):
        body.append(op)  # two attentions
    if bad(rng, 0.03):
        body.append(f'  %buf = attn.smem_alloc {{name = "X"}} : memref<1x64x{d}x{dtype}, 3>')
    return (f"attn.kernel @{name} arch(#attn.arch<{arch}>){config}{names} {{\n"
            f"^bb0({', '.join(args)}):\n" + "\n".join(body) + "\n}\n")


def kernel_module(rng):
    text = kernel_level(rng)
    if bad(rng, 0.04):
        text += kernel_level(rng, "k2")  # two kernels (maybe two chips)
    return text


# --- Flags --------------------------------------------------------------------

INTS = ["0", "1", "16", "40", "64", "128", "-1", "99999999999", "abc", "",
        "1e3", "0x10"]
FLAG_VALUES = {
    "--arch": ["sm_120", "sm_90", "sm_80", "sm_999", "", "SM_120"],
    "--isa": ["sm_90", "sm_120", "sm_80", "bogus"],
    "--dtype": ["f16", "bf16", "f32", "x"],
    "--head-dim": ["64", "128", "80", "0", "-8", "7", "100000", "x"],
    "--head-dim-v": ["64", "128", "33", "0"],
    "--window": ["-1,0", "128,0", "0,0", "5", "a,b", "-2,-2", "4294967296,0", ","],
    "--kernel-name": ["k", "", "9k", "a b", "_", "x" * 300, "ké"],
    "--tile-m": INTS, "--tile-n": INTS, "--stages": INTS, "--warps": INTS,
    "--kv-warps": INTS,
    "--family": ["prefill", "decode", "other"],
    "--q-in-regs": ["true", "false", "maybe"],
    "--emit": ["plan", "configs", "mlir", "nvvm", "llvm", "ptx", "x"],
    "--format": ["text", "json", "xml"],
    "--ptxas-timeout": ["0", "1", "-1", "x"],
    "--direction": ["fwd", "bwd", "backward", ""],
    "--grad-of": ["slopes", "q", "", "a,b", "softmax_scale"],
}
BOOL_FLAGS = ["--causal", "--paged-kv", "--report", "--spill-fallback",
              "--deterministic"]


def flag_set(rng):
    flags = []
    for name in rng.sample(sorted(FLAG_VALUES), rng.randint(1, 6)):
        flags.append(f"{name}={rng.choice(FLAG_VALUES[name])}")
    for name in BOOL_FLAGS:
        if rng.random() < 0.2:
            flags.append(name)
    if not any(f.startswith("--head-dim=") for f in flags) and rng.random() < 0.8:
        flags.append(f"--head-dim={rng.choice(['64', '128'])}")
    if rng.random() < 0.03:
        flags.append("--bogus-flag")
    return flags


# --- Tile-level IR --------------------------------------------------------------

# Backward families whose tile programs seed the tile-level cases: the
# chosen shape, KV warps that split columns (8 and 16 warps), and masks
# (document ids: the key grid's block mask and, deterministic, the dQ
# kernel's; chunks: an exact interval's query_range with whole tiles).
BACKWARD_SEEDS = [
    ["--direction=bwd", "--head-dim=64", "--causal"],
    ["--direction=bwd", "--head-dim=64", "--tile-m=64", "--tile-n=64",
     "--warps=8", "--kv-warps=2", "--stages=2"],
    ["--direction=bwd", "--head-dim=128", "--tile-m=64", "--tile-n=64",
     "--warps=16", "--kv-warps=4", "--stages=1", "--deterministic"],
    [os.path.join(ROOT, "dsl", "examples", "document_mask.mlir"),
     "--direction=bwd", "--deterministic"],
    [os.path.join(ROOT, "dsl", "examples", "chunked.mlir"), "--direction=bwd"],
]

def mutate_tile(rng, text):
    lines = text.splitlines()
    body = [i for i, l in enumerate(lines) if l.strip().startswith(("%", "attn."))]
    r = rng.random()
    if r < 0.35:
        numbers = [m for m in re.finditer(
            r"((?:offset|tile_m|tile_n|pending|smem_bytes|stages|warps|head_begin|head_end|window_left|window_right|kv_warps) = )(-?\d+)",
            text)]
        if numbers:
            m = rng.choice(numbers)
            value = rng.choice(["0", "-1", "1", "99999999", "16", "40", "128",
                                str(int(m.group(2)) * 2)])
            return text[:m.start(2)] + value + text[m.end(2):]
    if r < 0.42:
        # A unit attribute dropped (key_grid, exact, per_head, masked, ...).
        units = list(re.finditer(r"\b(key_grid|exact|per_head|scan_rows|masked|split_n), ?", text))
        if units:
            m = rng.choice(units)
            return text[:m.start()] + text[m.end():]
    if r < 0.55 and body:
        del lines[rng.choice(body)]
    elif r < 0.7 and body:
        i = rng.choice(body)
        lines.insert(i, lines[i])
    elif r < 0.85 and len(body) > 1:
        i, j = rng.sample(body, 2)
        lines[i], lines[j] = lines[j], lines[i]
    else:
        # A memref shape or type changed.
        m = list(re.finditer(r"memref<(\d+)x(\d+)x(\d+)x(bf16|f16|f32)", text))
        if m:
            c = rng.choice(m)
            new = f"memref<{rng.choice([1, 2, 3])}x{rng.choice([16, 64, 128, 8])}x{c.group(3)}x{rng.choice(['bf16', 'f16', 'f32'])}"
            return text[:c.start()] + new + text[c.end():]
    return "\n".join(lines) + "\n"


def byte_mutate(rng, text):
    data = bytearray(text.encode())
    for _ in range(rng.randint(1, 4)):
        if not data:
            break
        i = rng.randrange(len(data))
        op = rng.random()
        if op < 0.4:
            data[i] = rng.randrange(256)
        elif op < 0.7:
            del data[i:i + rng.randint(1, 8)]
        else:
            data[i:i] = data[rng.randrange(len(data)):][:rng.randint(1, 16)]
    return bytes(data)


# --- Python hooks ---------------------------------------------------------------

PY_EXPRS = ["score", "score * 2.0", "score - (q_idx - kv_idx)",
            "flashtile.tanh(score / cap) * cap", "score + bias[h]",
            "flashtile.where(q_idx >= kv_idx, score, -1e30)", "score / 0.0",
            "score ** 2", "abs(score)", "score + q_idx", "None", "'x'",
            "score + b * h", "score % 3.0", "score // 2", "-score",
            "flashtile.exp2(score)", "math.inf", "score + kv_idx * 1e30"]
PY_MASKS = ["q_idx >= kv_idx", "(q_idx - kv_idx) < 64", "kv_idx < 0",
            "q_idx", "True", "(q_idx >= kv_idx) & (kv_idx > 3)", "1.5",
            "(q_idx // 64) == (kv_idx // 64)", "b == h"]


def python_case(rng):
    score = rng.choice(PY_EXPRS)
    mask = rng.choice(PY_MASKS)
    use_score = rng.random() < 0.8
    use_mask = rng.random() < 0.5
    d = rng.choice([64, 128, 96, 80, 7, 0])
    dtype = rng.choice(["bf16", "f16", "f32"])
    causal = rng.choice([True, False])
    if not HAVE_TORCH and "bias" in score:
        score = "score"
    tensor = (f"torch.zeros({rng.choice([8, 1])}, dtype=torch."
              f"{rng.choice(['float32', 'float32', 'int32', 'float64'])})"
              if HAVE_TORCH else "None")
    return f"""
import math, flashtile
{'import torch' if HAVE_TORCH else ''}
from flashtile import FlashTileError
cap = flashtile.scalar({rng.choice([30.0, 0.0, -1.0])}, name="cap")
bias = {tensor}
def score_mod(score, b, h, q_idx, kv_idx):
    return {score}
def mask_mod(b, h, q_idx, kv_idx):
    return {mask}
try:
    flashtile.compile(head_dim={d}, dtype={dtype!r}, causal={causal},
                      score_mod={'score_mod' if use_score else 'None'},
                      mask_mod={'mask_mod' if use_mask else 'None'},
                      isa="sm_90")
except FlashTileError:
    pass
"""


# --- Runtime calls ------------------------------------------------------------

# Plans the compiler wrote (real argument lists, sizes, checks, dispatch,
# workspaces): a prefill kernel, a decode family with KV splits, paged KV,
# and a hook with extra arguments.
PLAN_FLAGS = [
    ["--head-dim=128", "--dtype=bf16", "--causal"],
    ["--head-dim=64", "--dtype=f16", "--family=decode", "--window=100,0"],
    ["--head-dim=128", "--dtype=bf16", "--family=decode", "--paged-kv"],
    [os.path.join(ROOT, "dsl", "examples", "alibi.mlir")],
    [os.path.join(ROOT, "dsl", "examples", "document_mask.mlir")],
]

WEIRD_NUMBERS = [0, -1, 1, 2**31 - 1, 2**31, 2**32, 2**63 - 1, -2**63, 2**64,
                 3, 7, 17, 1000, 1.5, float("nan"), float("inf"), True, None,
                 "x", [], {}]


def mutate_json(rng, value, depth=0):
    """One mutation inside a JSON value: a key deleted, a value replaced by
    a number, string or container of the wrong kind, a list shortened or
    grown."""
    if isinstance(value, dict) and value:
        key = rng.choice(sorted(value))
        r = rng.random()
        if r < 0.15:
            del value[key]
        elif r < 0.3 or depth > 6:
            value[key] = rng.choice(WEIRD_NUMBERS)
        else:
            value[key] = mutate_json(rng, value[key], depth + 1)
        return value
    if isinstance(value, list) and value:
        i = rng.randrange(len(value))
        r = rng.random()
        if r < 0.15:
            del value[i]
        elif r < 0.25:
            value.append(value[i])
        else:
            value[i] = mutate_json(rng, value[i], depth + 1)
        return value
    if isinstance(value, str) and rng.random() < 0.5:
        return rng.choice(["", "q", "batch", "f16", "i64", "ptr", value * 2])
    return rng.choice(WEIRD_NUMBERS)


def runtime_case(rng, plan_text):
    """A script that loads a plan (maybe mutated) and calls the runtime's
    argument checks, output shapes, parameter packing and launch (no
    driver) with fake tensors drawn around the plan's arguments. Every
    outcome must be a result or a FlashTileError."""
    plan = json.loads(plan_text)
    for _ in range(rng.choice([0, 0, 1, 1, 2, 3])):
        plan = mutate_json(rng, plan)
    return f"""
import json, os, random, sys
os.environ["FLASHTILE_CUDA_DRIVER"] = "/nonexistent/libcuda.so"
from flashtile import FlashTileError, runtime
rng = random.Random({rng.randrange(2**31)})
nan, inf = float("nan"), float("inf")
plan = json.loads({json.dumps(json.dumps(plan))})
os.makedirs("k", exist_ok=True)
kernels = plan.get("kernels") if isinstance(plan, dict) else None
for k in kernels if isinstance(kernels, list) else []:
    if isinstance(k, dict) and isinstance(k.get("cubin"), str) and "/" not in k["cubin"] and k["cubin"] not in ("", ".", ".."):
        open(os.path.join("k", k["cubin"]), "wb").write(b"\\x7fELF fake")
with open("k/p.plan.json", "w") as f:
    json.dump(plan, f)
try:
    kernel = runtime.load("k/p.plan.json")
except FlashTileError:
    sys.exit(0)

class Dev:
    def __init__(self, t="cuda", i=0): self.type, self.index = t, i
    def __str__(self): return self.type

class T:
    def __init__(self, ptr, shape, dtype, strides):
        self.ptr, self.shape, self.dtype, self.strides = ptr, tuple(shape), dtype, tuple(strides)
        self.device = Dev() if rng.random() < 0.95 else rng.choice([Dev("cpu", None), Dev("cuda", 1), 3])
    def data_ptr(self): return self.ptr
    def stride(self): return self.strides

def weird(): return rng.choice({WEIRD_NUMBERS!r})
values = {{}}
def size(name):
    if name not in values:
        values[name] = rng.choice([1, 2, 3, 4, 8, 16, 17, 64, 128, 1000]) if rng.random() < 0.9 else rng.choice([0, -1, 2**31, 2**40])
    return values[name]
DT = {{"bf16": "torch.bfloat16", "f16": "torch.float16", "f32": "torch.float32", "i32": "torch.int32", "i64": "torch.int64"}}
args, base = [], 0x10000000
for a in kernel.arguments:
    if a.get("kind") == "tensor":
        shape = [d if isinstance(d, int) else size(d) for d in a["shape"]]
        if rng.random() < 0.1:
            shape[rng.randrange(len(shape))] = rng.choice([0, 1, 5, 2**33, -3]) if shape else 0
        strides, step = [], 1
        for d in reversed(shape):
            strides.insert(0, step)
            step *= max(d, 1) if isinstance(d, int) and d < 2**40 else 1
        if rng.random() < 0.1 and strides:
            strides[rng.randrange(len(strides))] = rng.choice([0, -8, 2, 2**40, 7])
        ptr = base if rng.random() < 0.95 else rng.choice([0, base + 2, 0x10000000])
        dtype = DT.get(a["dtype"], "torch.float32") if rng.random() < 0.93 else rng.choice(["torch.float64", "torch.int8", "x", "torch.float16"])
        if rng.random() < 0.05:
            shape = shape[:-1]
            strides = strides[:-1]
        args.append(T(ptr, shape, dtype, strides))
        base += 1 << 36
    else:
        args.append(None if rng.random() < 0.5 else weird())
if rng.random() < 0.1 and args:
    args.pop(rng.randrange(len(args)))
try:
    kernel.output_shapes(*args)
except FlashTileError:
    pass
for call in (lambda: kernel.check(*args),
             lambda: kernel.pack_params(rng.choice([0, 0, 1, -1, 99]), *args),
             lambda: kernel._impl.call(tuple(args), {{}}, None, 0)):
    try:
        call()
    except FlashTileError:
        pass
"""


try:
    import torch  # noqa: F401  (hooks may capture tensors only with torch)
    HAVE_TORCH = True
except ImportError:
    HAVE_TORCH = False


# --- Running ----------------------------------------------------------------------

class Fuzzer:
    def __init__(self, args):
        self.args = args
        self.rng = random.Random(args.seed)
        self.out = os.path.abspath(args.out)
        os.makedirs(self.out, exist_ok=True)
        self.snapshot = tempfile.mkdtemp(prefix="flashtile-fuzz-")
        for tool in ("flashtile-compile", "flashtile-opt"):
            shutil.copy2(os.path.join(args.build, "bin", tool),
                         os.path.join(self.snapshot, tool))
        shutil.copytree(os.path.join(args.build, "python_bindings"),
                        os.path.join(self.snapshot, "python_bindings"))
        self.compile = os.path.join(self.snapshot, "flashtile-compile")
        self.opt = os.path.join(self.snapshot, "flashtile-opt")
        self.runs = 0
        self.by_kind = {}
        self.failures = {}
        self.cpu = 0.0
        self.tile_seeds = []
        self.plan_seeds = None

    def child_cpu(self):
        r = resource.getrusage(resource.RUSAGE_CHILDREN)
        return r.ru_utime + r.ru_stime

    def run_tool(self, argv, workdir, stdin=None):
        try:
            p = subprocess.run(argv, capture_output=True, timeout=TIMEOUT,
                               cwd=workdir, input=stdin)
            return p.returncode, p.stdout.decode("utf-8", "replace"), \
                p.stderr.decode("utf-8", "replace")
        except subprocess.TimeoutExpired:
            return "timeout", "", ""

    def judge(self, rc, out, err, workdir, inputs, output):
        """None when the run is acceptable, else a failure class."""
        if rc == "timeout":
            return "hang"
        if rc < 0:
            return f"signal-{-rc}"
        text = out + err
        for mark in CRASH_MARKS:
            if mark in text:
                return "crash-" + mark.split()[0].lower()
        left = sorted(set(os.listdir(workdir)) - set(inputs))
        if rc == 0:
            if output and output != "-" and not os.path.exists(os.path.join(workdir, output)):
                return "success-without-output"
            return None
        if rc != 1:
            return f"exit-{rc}"
        if "error:" not in err:
            return "exit-1-without-error"
        if not LOCATED_ERROR.search(err):
            return "error-without-location"
        if left:
            return "output-left-after-error"
        return None

    def record(self, kind, cls, files, argv, err):
        sig = cls + "-" + kind
        first = self.failures.setdefault(sig, [])
        first.append(1)
        if len(first) > 3:
            return
        folder = os.path.join(self.out, sig, str(len(first)))
        os.makedirs(folder, exist_ok=True)
        for name, data in files.items():
            mode = "wb" if isinstance(data, bytes) else "w"
            with open(os.path.join(folder, name), mode) as f:
                f.write(data)
        with open(os.path.join(folder, "command.json"), "w") as f:
            json.dump({"argv": argv, "stderr": err[-3000:]}, f, indent=1)

    def case(self):
        rng = self.rng
        r = rng.random()
        if r < 0.40:
            return "kernel", {"in.mlir": kernel_module(rng)}, None
        if r < 0.60:
            return "flags", {}, flag_set(rng)
        if r < 0.85:
            seed = self.tile_seed()
            if seed:
                text = seed
                for _ in range(rng.randint(1, 3)):
                    text = mutate_tile(rng, text)
                return "tile", {"in.mlir": text}, None
            return "kernel", {"in.mlir": kernel_module(rng)}, None
        if r < 0.90:
            return "python", {"case.py": python_case(rng)}, None
        if r < 0.95 and self.plan_texts():
            return "runtime", {"case.py": runtime_case(
                rng, rng.choice(self.plan_texts()))}, None
        base = kernel_module(rng) if rng.random() < 0.5 else (self.tile_seed() or "")
        return "bytes", {"in.mlir": byte_mutate(rng, base)}, None

    def plan_texts(self):
        """The launch plans of PLAN_FLAGS, compiled once (needs ptxas)."""
        if self.plan_seeds is None:
            self.plan_seeds = []
            with tempfile.TemporaryDirectory() as work:
                for flags in PLAN_FLAGS:
                    rc, _, _ = self.run_tool(
                        [self.compile] + flags + ["--isa=sm_90", "--emit=cubin",
                                                  "-o", "k.cubin",
                                                  "--launch-plan", "k.plan.json"],
                        work)
                    if rc == 0:
                        with open(os.path.join(work, "k.plan.json")) as f:
                            self.plan_seeds.append(f.read())
        return self.plan_seeds

    def tile_seed(self):
        if len(self.tile_seeds) < 12 or self.rng.random() < 0.05:
            with tempfile.TemporaryDirectory() as work:
                for _ in range(5):
                    # A backward family now and then (key-grid kernels, KV
                    # warps that split columns, split_n), else a forward.
                    if self.rng.random() < 0.3:
                        argv = [self.compile] + self.rng.choice(
                            BACKWARD_SEEDS) + ["--emit=mlir", "-o", "-"]
                    else:
                        text = kernel_level(random.Random(self.rng.random()))
                        with open(os.path.join(work, "k.mlir"), "w") as f:
                            f.write(text)
                        argv = [self.compile, "k.mlir", "--emit=mlir", "-o", "-"]
                    rc, out, err = self.run_tool(argv, work)
                    if rc == 0 and "attn.kv_loop" in out:
                        self.tile_seeds.append(out)
                        break
        return self.rng.choice(self.tile_seeds) if self.tile_seeds else None

    def one(self):
        kind, files, flags = self.case()
        with tempfile.TemporaryDirectory() as work:
            for name, data in files.items():
                mode = "wb" if isinstance(data, bytes) else "w"
                with open(os.path.join(work, name), mode) as f:
                    f.write(data)
            rng = self.rng
            output = None
            if kind in ("python", "runtime"):
                env = dict(os.environ, PYTHONPATH=os.path.join(self.snapshot, "python_bindings"),
                           FLASHTILE_CACHE_DIR=os.path.join(work, "cache"))
                argv = [sys.executable, "case.py"]
                try:
                    p = subprocess.run(argv, capture_output=True, timeout=TIMEOUT,
                                       cwd=work, env=env)
                    rc, err = p.returncode, p.stderr.decode("utf-8", "replace")
                except subprocess.TimeoutExpired:
                    rc, err = "timeout", ""
                cls = None
                if rc == "timeout":
                    cls = "hang"
                elif rc != 0:
                    cls = f"python-exit-{rc}" if rc > 0 else f"signal-{-rc}"
            else:
                emit = rng.choice(["plan", "plan", "mlir", "nvvm", "ptx", "configs"])
                output = "out.txt"
                if kind == "flags":
                    argv = [self.compile] + flags
                    if not any(f.startswith("--emit=") for f in flags):
                        argv.append(f"--emit={emit}")
                    argv += ["-o", output]
                elif kind == "tile" and rng.random() < 0.3:
                    argv = [self.opt, "in.mlir", "--pass-pipeline="
                            "builtin.module(attn.kernel(attn-allocate-shared-memory,"
                            "attn-insert-barriers),convert-attn-to-nvvm)", "-o", output]
                else:
                    argv = [self.compile, "in.mlir", f"--emit={emit}", "-o", output]
                    if rng.random() < 0.2:
                        argv += flag_set(rng)[:2]
                rc, out, err = self.run_tool(argv, work)
                cls = self.judge(rc, out, err, work, list(files) + ["cache"], output)
                if cls == "success-without-output" and any(
                        a.startswith("--emit=configs") or a == "--help" for a in argv):
                    cls = None
            if cls:
                self.record(kind, cls, files, argv, err)
        self.runs += 1
        self.by_kind[kind] = self.by_kind.get(kind, 0) + 1

    def report(self, start, final=False):
        cpu = self.child_cpu()
        failures = sum(len(v) for v in self.failures.values())
        line = (f"{self.runs} runs in {time.time() - start:.0f} s, "
                f"{cpu:.0f} CPU s; by kind {json.dumps(self.by_kind, sort_keys=True)}; "
                f"{failures} failures in {len(self.failures)} classes")
        print(line, flush=True)
        if final:
            for sig, hits in sorted(self.failures.items()):
                print(f"  {sig}: {len(hits)} (examples in {os.path.join(self.out, sig)})")
            with open(os.path.join(self.out, "summary.json"), "w") as f:
                json.dump({"runs": self.runs, "wall_s": time.time() - start,
                           "cpu_s": cpu, "seed": self.args.seed,
                           "by_kind": self.by_kind,
                           "failures": {k: len(v) for k, v in self.failures.items()}},
                          f, indent=1)

    def loop(self):
        start = time.time()
        deadline = start + self.args.minutes * 60
        last = start
        try:
            while time.time() < deadline and (not self.args.runs or self.runs < self.args.runs):
                self.one()
                if time.time() - last > 60:
                    self.report(start)
                    last = time.time()
        finally:
            self.report(start, final=True)
            shutil.rmtree(self.snapshot, ignore_errors=True)
        return 0 if not self.failures else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=5)
    ap.add_argument("--runs", type=int, default=0, help="stop after N runs")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", default="fuzz-out")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    return Fuzzer(ap.parse_args()).loop()


if __name__ == "__main__":
    sys.exit(main())
