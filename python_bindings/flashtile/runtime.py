"""Run FlashTile kernels from PyTorch.

``flashtile-compile`` writes, per kernel, a cubin and a metadata JSON file
(format ``flashtile-kernel-v1``). This module loads that pair and launches the
kernel on PyTorch tensors through the CUDA driver API (``libcuda.so.1`` via
ctypes). It needs neither MLIR nor LLVM, and importing it needs neither torch
nor a GPU: torch is imported, and the driver loaded, on the first call.

    from flashtile.runtime import load_kernel
    kernel = load_kernel("build/kernels/flash_fwd_bf16_d128_causal.json")
    # q: (B, Sq, Hq, D), k: (B, Sk, Hkv, D), v: (B, Sk, Hkv, Dv); any strides
    # with the last dim contiguous, e.g. a (B, H, S, D) tensor's .transpose(1, 2)
    out, lse = kernel(q, k, v)

``out`` is (B, Sq, Hq, Dv) in the inputs' dtype and ``lse`` is (B, Hq, Sq)
float32: the natural-log sum of exp of the scaled scores of each query row
(-inf for a row that sees no key; its output row is 0).

Every argument is checked before anything is launched; a bad one raises
:class:`FlashTileError` naming the argument and the numbers involved.
"""

from __future__ import annotations

import ctypes
import json
import math
import os
import threading
from typing import Any, Dict, List, NamedTuple, Optional, Sequence, Tuple

__all__ = ["FlashTileError", "FlashKernel", "KernelMetadata", "load_kernel"]

FORMAT = "flashtile-kernel-v1"

# The kernel's dtypes, as the metadata spells them.
_DTYPES = ("f16", "bf16")

# cp.async moves 16-byte chunks: every base pointer must be 16-byte aligned
# and every stride of a dimension that is walked a multiple of 8 elements.
_ALIGN_BYTES = 16
_STRIDE_MULTIPLE = 8

_I32_MAX = 2**31 - 1
_I64_MAX = 2**63 - 1
_GRID_YZ_MAX = 65535
_GRID_X_MAX = 2**31 - 1
_SMEM_STATIC_LIMIT = 48 * 1024

# CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
_CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8
_CUDA_ERROR_NO_BINARY_FOR_GPU = 209

# The values a "params" entry may name, and the types each may be passed as.
_PTR_PARAMS = ("q", "k", "v", "o", "lse")
_INT_PARAMS = (
    "batch", "seqlen_q", "seqlen_k", "heads_q", "heads_kv", "head_dim",
    "head_dim_v",
    "q_stride_batch", "q_stride_seq", "q_stride_head",
    "k_stride_batch", "k_stride_seq", "k_stride_head",
    "v_stride_batch", "v_stride_seq", "v_stride_head",
    "o_stride_batch", "o_stride_seq", "o_stride_head",
    "lse_stride_batch", "lse_stride_head", "lse_stride_seq",
)
_FLOAT_PARAMS = ("softmax_scale",)
_PARAM_TYPES_BY_KIND = {"ptr": ("ptr",), "int": ("i32", "i64"), "float": ("f32",)}


def _param_kind(name: str) -> Optional[str]:
    if name in _PTR_PARAMS:
        return "ptr"
    if name in _INT_PARAMS:
        return "int"
    if name in _FLOAT_PARAMS:
        return "float"
    return None


class FlashTileError(RuntimeError):
    """A FlashTile kernel could not be loaded or launched.

    The message names the file, field or argument at fault and the numbers
    involved.
    """


# ---------------------------------------------------------------------------
# Metadata
# ---------------------------------------------------------------------------


class Param(NamedTuple):
    """One kernel parameter, in launch order."""

    name: str
    type: str  # "ptr", "i32", "i64" or "f32"


class KernelConfig(NamedTuple):
    tile_m: int
    tile_n: Optional[int]
    stages: Optional[int]
    warps: Optional[int]
    q_in_regs: Optional[bool]

    def __str__(self) -> str:
        parts = [f"{self.tile_m}x{self.tile_n if self.tile_n is not None else '?'}"]
        if self.stages is not None:
            parts.append(f"s{self.stages}")
        if self.warps is not None:
            parts.append(f"w{self.warps}")
        if self.q_in_regs:
            parts.append("qreg")
        return " ".join(parts)


class KernelMetadata(NamedTuple):
    """The parsed and checked contents of a kernel's metadata JSON."""

    path: str
    kernel: str
    cubin_path: str
    dtype: str
    head_dim: int
    head_dim_v: int
    causal: bool
    window: Tuple[int, int]
    softmax_scale: float
    config: KernelConfig
    block: Tuple[int, int, int]
    dynamic_smem_bytes: int
    params: Tuple[Param, ...]
    arch: Optional[str]
    isa: Optional[str]
    code_path: Optional[str]
    registers: Optional[int]
    spill_stores: Optional[int]
    spill_loads: Optional[int]
    raw: Dict[str, Any]

    @property
    def mask_description(self) -> str:
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


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and math.isfinite(value))


class _Fields:
    """Typed access to a JSON object, with errors naming file and field."""

    def __init__(self, path: str, obj: Dict[str, Any], prefix: str = ""):
        self.path = path
        self.obj = obj
        self.prefix = prefix

    def error(self, key: str, message: str) -> FlashTileError:
        return FlashTileError(
            f"{self.path}: field '{self.prefix}{key}': {message}")

    def get(self, key: str, check, what: str, required: bool = True,
            allow_null: bool = False):
        if key not in self.obj:
            if required:
                raise self.error(key, f"missing (expected {what})")
            return None
        value = self.obj[key]
        if value is None and (allow_null or not required):
            return None
        if not check(value):
            raise self.error(key, f"expected {what}, got {value!r}")
        return value


def _parse_metadata(path: str, raw: Any) -> KernelMetadata:
    if not isinstance(raw, dict):
        raise FlashTileError(
            f"{path}: expected a JSON object at the top level, got "
            f"{type(raw).__name__}")
    f = _Fields(path, raw)
    fmt = raw.get("format")
    if fmt != FORMAT:
        raise FlashTileError(
            f"{path}: unknown format {fmt!r} (this runtime reads {FORMAT!r})")

    def non_empty_str(v):
        return isinstance(v, str) and bool(v)

    def positive_int(v):
        return _is_int(v) and v > 0

    def non_negative_int(v):
        return _is_int(v) and v >= 0

    kernel = f.get("kernel", non_empty_str, "a non-empty string")
    cubin = f.get("cubin", non_empty_str, "a non-empty string")
    dtype = f.get("dtype", lambda v: v in _DTYPES, "one of " + ", ".join(
        repr(d) for d in _DTYPES))
    head_dim = f.get("head_dim", positive_int, "a positive integer")
    head_dim_v = f.get("head_dim_v", positive_int, "a positive integer")
    causal = f.get("causal", lambda v: isinstance(v, bool), "true or false")
    window = f.get(
        "window",
        lambda v: isinstance(v, list) and len(v) == 2
        and all(_is_int(x) and x >= -1 for x in v),
        "a list [left, right] of integers >= -1 (-1: unbounded)")
    scale = f.get("softmax_scale", lambda v: _is_number(v) and v > 0,
                  "a positive finite number")
    config_obj = f.get("config", lambda v: isinstance(v, dict), "an object")
    cf = _Fields(path, config_obj, "config.")
    config = KernelConfig(
        tile_m=cf.get("tile_m", positive_int, "a positive integer"),
        tile_n=cf.get("tile_n", positive_int, "a positive integer",
                      required=False),
        stages=cf.get("stages", positive_int, "a positive integer",
                      required=False),
        warps=cf.get("warps", positive_int, "a positive integer",
                     required=False),
        q_in_regs=cf.get("q_in_regs", lambda v: isinstance(v, bool),
                         "true or false", required=False),
    )
    block = f.get(
        "block",
        lambda v: isinstance(v, list) and len(v) == 3
        and all(positive_int(x) for x in v),
        "a list of 3 positive integers")
    threads = block[0] * block[1] * block[2]
    if threads > 1024:
        raise f.error("block", f"{block} is {threads} threads; at most 1024")
    smem = f.get("dynamic_smem_bytes", non_negative_int,
                 "a non-negative integer")
    if smem > _I32_MAX:
        raise f.error("dynamic_smem_bytes", f"{smem} does not fit in 32 bits")

    params_raw = f.get("params", lambda v: isinstance(v, list) and bool(v),
                       "a non-empty list of {\"name\", \"type\"} objects")
    params: List[Param] = []
    seen = set()
    for i, p in enumerate(params_raw):
        where = f"params[{i}]"
        if not isinstance(p, dict):
            raise f.error(where, f"expected an object, got {p!r}")
        pf = _Fields(path, p, where + ".")
        name = pf.get("name", non_empty_str, "a non-empty string")
        ptype = pf.get("type", lambda v: v in ("ptr", "i32", "i64", "f32"),
                       "one of 'ptr', 'i32', 'i64', 'f32'")
        kind = _param_kind(name)
        if kind is None:
            raise pf.error(
                "name", f"{name!r} is not a value this runtime can pass "
                f"(known: {', '.join(_PTR_PARAMS + _INT_PARAMS + _FLOAT_PARAMS)})")
        if ptype not in _PARAM_TYPES_BY_KIND[kind]:
            raise pf.error(
                "type", f"{name!r} cannot be passed as {ptype!r} (expected "
                f"{' or '.join(repr(t) for t in _PARAM_TYPES_BY_KIND[kind])})")
        if name in seen:
            raise pf.error("name", f"{name!r} appears twice")
        seen.add(name)
        params.append(Param(name, ptype))

    def optional_str(key):
        return f.get(key, lambda v: isinstance(v, str), "a string",
                     required=False)

    def optional_count(key):
        return f.get(key, non_negative_int, "a non-negative integer or null",
                     required=False, allow_null=True)

    base = os.path.dirname(os.path.abspath(path))
    return KernelMetadata(
        path=path,
        kernel=kernel,
        cubin_path=os.path.join(base, cubin),
        dtype=dtype,
        head_dim=head_dim,
        head_dim_v=head_dim_v,
        causal=causal,
        window=(window[0], window[1]),
        softmax_scale=float(scale),
        config=config,
        block=(block[0], block[1], block[2]),
        dynamic_smem_bytes=smem,
        params=tuple(params),
        arch=optional_str("arch"),
        isa=optional_str("isa"),
        code_path=optional_str("code_path"),
        registers=optional_count("registers"),
        spill_stores=optional_count("spill_stores"),
        spill_loads=optional_count("spill_loads"),
        raw=raw,
    )


def read_metadata(path: str) -> KernelMetadata:
    """Reads and checks a metadata JSON file (the cubin is not read)."""
    path = os.fspath(path)
    try:
        with open(path, "r", encoding="utf-8") as fh:
            text = fh.read()
    except FileNotFoundError:
        raise FlashTileError(f"{path}: metadata file not found") from None
    except OSError as e:
        raise FlashTileError(f"{path}: cannot read metadata: {e}") from None
    except UnicodeDecodeError as e:
        raise FlashTileError(f"{path}: metadata is not UTF-8 text: {e}") from None
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as e:
        raise FlashTileError(
            f"{path}: invalid JSON at line {e.lineno}, column {e.colno}: "
            f"{e.msg}") from None
    return _parse_metadata(path, raw)


# ---------------------------------------------------------------------------
# Argument checking (independent of torch, so it can be tested without it)
# ---------------------------------------------------------------------------


class TensorInfo(NamedTuple):
    """What the checks need to know about one tensor argument."""

    name: str
    shape: Tuple[int, ...]
    strides: Tuple[int, ...]  # in elements
    dtype: str  # "f16", "bf16", "f32" or torch's spelling of anything else
    element_size: int
    device: str  # e.g. "cuda:0" or "cpu"
    is_cuda: bool
    data_ptr: int


class LaunchPlan(NamedTuple):
    batch: int
    seqlen_q: int
    seqlen_k: int
    heads_q: int
    heads_kv: int
    empty: bool


def _fail(message: str) -> FlashTileError:
    return FlashTileError(message)


def _check_4d(t: TensorInfo, dtype: str, last_dim: int, last_name: str,
              meta: KernelMetadata) -> None:
    if not t.is_cuda:
        raise _fail(f"{t.name} must be a CUDA tensor, but it is on {t.device}")
    if t.dtype != dtype:
        raise _fail(
            f"{t.name} has dtype {t.dtype}, but kernel {meta.kernel} takes "
            f"{dtype}")
    if len(t.shape) != 4:
        raise _fail(
            f"{t.name} must have 4 dims (batch, seq, heads, dim), but has "
            f"{len(t.shape)}: shape {list(t.shape)}")
    if t.shape[3] != last_dim:
        raise _fail(
            f"{t.name} has last dim {t.shape[3]}, but kernel {meta.kernel} "
            f"has {last_name} = {last_dim}")


def _check_layout(t: TensorInfo, contiguous_dim: int) -> None:
    """Last dim contiguous, other strides multiples of 8, base aligned."""
    if t.shape[contiguous_dim] > 1 and t.strides[contiguous_dim] != 1:
        raise _fail(
            f"{t.name} must be contiguous in its last dim (stride 1), but "
            f"has strides {list(t.strides)} for shape {list(t.shape)}")
    for d, (size, stride) in enumerate(zip(t.shape, t.strides)):
        if stride < 0 or stride > _I64_MAX:
            raise _fail(
                f"{t.name} stride {stride} of dim {d} does not fit a "
                f"non-negative 64-bit integer")
        if d == contiguous_dim or size <= 1:
            continue  # A size-1 dim is never stepped: its stride is unused.
        if t.element_size == 2 and stride % _STRIDE_MULTIPLE != 0:
            raise _fail(
                f"{t.name} stride {stride} of dim {d} is not a multiple of "
                f"{_STRIDE_MULTIPLE} elements (16 bytes, the cp.async chunk); "
                f"strides {list(t.strides)}, shape {list(t.shape)}")
    if t.data_ptr % _ALIGN_BYTES != 0 and t.element_size == 2:
        raise _fail(
            f"{t.name} data pointer 0x{t.data_ptr:x} is not "
            f"{_ALIGN_BYTES}-byte aligned (cp.async copies 16-byte chunks)")


def _check_no_overlap(t: TensorInfo) -> None:
    """An output must not have two elements at one address."""
    dims = sorted(((st, sz) for sz, st in zip(t.shape, t.strides) if sz > 1))
    span = 1
    for stride, size in dims:
        if stride < span:
            raise _fail(
                f"{t.name} has overlapping elements (strides {list(t.strides)} "
                f"for shape {list(t.shape)}); an output needs distinct "
                f"addresses")
        span = stride * size


def check_arguments(meta: KernelMetadata, q: TensorInfo, k: TensorInfo,
                    v: TensorInfo, out: Optional[TensorInfo],
                    lse: Optional[TensorInfo]) -> LaunchPlan:
    """Checks the tensors against the kernel; raises FlashTileError."""
    _check_4d(q, meta.dtype, meta.head_dim, "head_dim", meta)
    _check_4d(k, meta.dtype, meta.head_dim, "head_dim", meta)
    _check_4d(v, meta.dtype, meta.head_dim_v, "head_dim_v", meta)
    for t in (k, v, out, lse):
        if t is not None and t.is_cuda and t.device != q.device:
            raise _fail(
                f"{t.name} is on {t.device} but q is on {q.device}; all "
                f"tensors must be on one device")

    batch, seqlen_q, heads_q, _ = q.shape
    _, seqlen_k, heads_kv, _ = k.shape
    if k.shape[0] != batch or v.shape[0] != batch:
        raise _fail(
            f"batch sizes differ: q has {batch}, k has {k.shape[0]}, v has "
            f"{v.shape[0]}")
    if v.shape[1] != seqlen_k:
        raise _fail(
            f"k and v must have the same seqlen, but k has {seqlen_k} and v "
            f"has {v.shape[1]}")
    if v.shape[2] != heads_kv:
        raise _fail(
            f"k and v must have the same number of heads, but k has "
            f"{heads_kv} and v has {v.shape[2]}")
    if heads_kv == 0 and heads_q != 0:
        raise _fail(f"k and v have 0 heads but q has {heads_q}")
    if heads_kv != 0 and heads_q % heads_kv != 0:
        raise _fail(
            f"q heads ({heads_q}) must be a multiple of k/v heads "
            f"({heads_kv}) for grouped-query attention")

    if out is not None:
        _check_4d(out, meta.dtype, meta.head_dim_v, "head_dim_v", meta)
        expected = (batch, seqlen_q, heads_q, meta.head_dim_v)
        if tuple(out.shape) != expected:
            raise _fail(
                f"out has shape {list(out.shape)}, expected {list(expected)} "
                f"(batch, seqlen_q, heads_q, head_dim_v)")
    if lse is not None:
        if not lse.is_cuda:
            raise _fail(f"lse must be a CUDA tensor, but it is on {lse.device}")
        if lse.dtype != "f32":
            raise _fail(f"lse has dtype {lse.dtype}, expected f32 (float32)")
        expected = (batch, heads_q, seqlen_q)
        if tuple(lse.shape) != expected:
            raise _fail(
                f"lse has shape {list(lse.shape)}, expected {list(expected)} "
                f"(batch, heads_q, seqlen_q)")

    empty = batch == 0 or heads_q == 0
    if not empty:
        if seqlen_q < 1 or seqlen_k < 1:
            raise _fail(
                f"seqlens must be >= 1, got seqlen_q = {seqlen_q}, "
                f"seqlen_k = {seqlen_k}")
        for name, value in (("batch", batch), ("seqlen_q", seqlen_q),
                            ("seqlen_k", seqlen_k), ("heads_q", heads_q),
                            ("heads_kv", heads_kv)):
            if value > _I32_MAX:
                raise _fail(f"{name} = {value} does not fit a 32-bit integer")
        grid_x = -(-seqlen_q // meta.config.tile_m)
        if grid_x > _GRID_X_MAX:
            raise _fail(f"seqlen_q = {seqlen_q} needs {grid_x} blocks in grid x")
        if heads_q > _GRID_YZ_MAX:
            raise _fail(f"heads_q = {heads_q} exceeds the grid y limit "
                        f"{_GRID_YZ_MAX}")
        if batch > _GRID_YZ_MAX:
            raise _fail(f"batch = {batch} exceeds the grid z limit "
                        f"{_GRID_YZ_MAX}")
        for t in (q, k, v):
            _check_layout(t, 3)
        if out is not None:
            _check_layout(out, 3)
            _check_no_overlap(out)
        if lse is not None:
            _check_layout(lse, 2)
            _check_no_overlap(lse)
            if lse.data_ptr % 4 != 0:
                raise _fail(f"lse data pointer 0x{lse.data_ptr:x} is not "
                            f"4-byte aligned")
    return LaunchPlan(batch, seqlen_q, seqlen_k, heads_q, heads_kv, empty)


def resolve_softmax_scale(meta: KernelMetadata, softmax_scale) -> float:
    if softmax_scale is None:
        return meta.softmax_scale
    if isinstance(softmax_scale, bool):
        raise _fail(f"softmax_scale must be a number, got {softmax_scale!r}")
    if not isinstance(softmax_scale, (int, float)):
        try:  # numpy scalars, 0-dim tensors
            softmax_scale = float(softmax_scale)
        except (TypeError, ValueError):
            raise _fail(
                f"softmax_scale must be a number, got {softmax_scale!r}") from None
    scale = float(softmax_scale)
    if not math.isfinite(scale) or abs(scale) > 3.4028234663852886e38:
        raise _fail(f"softmax_scale = {scale} is not a finite 32-bit float")
    return scale


def param_values(plan: LaunchPlan, meta: KernelMetadata, q: TensorInfo,
                 k: TensorInfo, v: TensorInfo, out: TensorInfo,
                 lse: TensorInfo, scale: float) -> Dict[str, Any]:
    """Every value a "params" entry may name."""
    values: Dict[str, Any] = {
        "q": q.data_ptr, "k": k.data_ptr, "v": v.data_ptr,
        "o": out.data_ptr, "lse": lse.data_ptr,
        "batch": plan.batch, "seqlen_q": plan.seqlen_q,
        "seqlen_k": plan.seqlen_k, "heads_q": plan.heads_q,
        "heads_kv": plan.heads_kv, "head_dim": meta.head_dim,
        "head_dim_v": meta.head_dim_v,
        "lse_stride_batch": lse.strides[0], "lse_stride_head": lse.strides[1],
        "lse_stride_seq": lse.strides[2],
        "softmax_scale": scale,
    }
    for prefix, t in (("q", q), ("k", k), ("v", v), ("o", out)):
        values[prefix + "_stride_batch"] = t.strides[0]
        values[prefix + "_stride_seq"] = t.strides[1]
        values[prefix + "_stride_head"] = t.strides[2]
    return values


_CTYPES = {"ptr": ctypes.c_void_p, "i32": ctypes.c_int32,
           "i64": ctypes.c_int64, "f32": ctypes.c_float}
_INT_RANGES = {"i32": (-(2**31), 2**31 - 1), "i64": (-(2**63), 2**63 - 1)}


def pack_params(params: Sequence[Param], values: Dict[str, Any]):
    """Returns (kernelParams array, the ctypes values it points at).

    The second element must stay alive until the launch call returns.
    Raises FlashTileError when a value does not fit its declared type.
    """
    boxed = []
    for p in params:
        if p.name not in values:
            raise _fail(f"kernel parameter {p.name!r} has no value")
        value = values[p.name]
        if p.type in _INT_RANGES:
            lo, hi = _INT_RANGES[p.type]
            if not lo <= int(value) <= hi:
                raise _fail(
                    f"kernel parameter {p.name} = {value} does not fit "
                    f"{p.type}")
            boxed.append(_CTYPES[p.type](int(value)))
        elif p.type == "ptr":
            boxed.append(ctypes.c_void_p(int(value)))
        else:
            boxed.append(ctypes.c_float(float(value)))
    array = (ctypes.c_void_p * len(boxed))(
        *[ctypes.cast(ctypes.pointer(b), ctypes.c_void_p) for b in boxed])
    return array, boxed


# ---------------------------------------------------------------------------
# The CUDA driver, through ctypes
# ---------------------------------------------------------------------------


class _Driver:
    """The few driver entry points the runtime uses."""

    def __init__(self, lib: ctypes.CDLL):
        c_int, c_uint, vp = ctypes.c_int, ctypes.c_uint, ctypes.c_void_p
        pvp, pint = ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_int)
        pstr = ctypes.POINTER(ctypes.c_char_p)
        signatures = {
            "cuInit": [c_uint],
            "cuGetErrorName": [c_int, pstr],
            "cuGetErrorString": [c_int, pstr],
            "cuDeviceGet": [pint, c_int],
            "cuDeviceGetAttribute": [pint, c_int, c_int],
            "cuCtxGetCurrent": [pvp],
            "cuCtxSetCurrent": [vp],
            "cuCtxGetDevice": [pint],
            "cuDevicePrimaryCtxRetain": [pvp, c_int],
            "cuModuleLoadData": [pvp, vp],
            "cuModuleGetFunction": [pvp, vp, ctypes.c_char_p],
            "cuFuncSetAttribute": [vp, c_int, c_int],
            "cuLaunchKernel": [vp, c_uint, c_uint, c_uint, c_uint, c_uint,
                               c_uint, c_uint, vp, pvp, pvp],
        }
        for name, argtypes in signatures.items():
            try:
                fn = getattr(lib, name)
            except AttributeError:
                raise FlashTileError(
                    f"the CUDA driver library has no {name}; it is too old "
                    f"or not libcuda") from None
            fn.argtypes = argtypes
            fn.restype = c_int
            setattr(self, name, fn)

    def error_text(self, code: int) -> str:
        name, text = ctypes.c_char_p(), ctypes.c_char_p()
        if self.cuGetErrorName(code, ctypes.byref(name)) != 0 or not name.value:
            return f"CUresult {code}"
        self.cuGetErrorString(code, ctypes.byref(text))
        desc = text.value.decode(errors="replace") if text.value else ""
        return f"{name.value.decode(errors='replace')} ({code}): {desc}"

    def check(self, code: int, what: str) -> None:
        if code != 0:
            raise FlashTileError(f"{what} failed: {self.error_text(code)}")


_driver: Optional[_Driver] = None
_driver_lock = threading.Lock()


def _driver_library_name() -> str:
    # FLASHTILE_CUDA_DRIVER points the runtime at another libcuda (tests use
    # it to simulate a machine without a driver).
    return os.environ.get("FLASHTILE_CUDA_DRIVER") or "libcuda.so.1"


def _get_driver() -> _Driver:
    global _driver
    with _driver_lock:
        if _driver is None:
            name = _driver_library_name()
            try:
                lib = ctypes.CDLL(name)
            except OSError as e:
                raise FlashTileError(
                    f"no CUDA driver: cannot load {name} ({e}); FlashTile "
                    f"kernels need an NVIDIA GPU and its driver") from None
            drv = _Driver(lib)
            drv.check(drv.cuInit(0), "cuInit")
            _driver = drv
        return _driver


def _import_torch():
    try:
        import torch  # noqa: PLC0415 (imported lazily on purpose)
    except ImportError as e:
        raise FlashTileError(
            f"calling a FlashTile kernel needs PyTorch: {e}") from None
    return torch


_TORCH_DTYPE_NAMES = {"float16": "f16", "bfloat16": "bf16", "float32": "f32"}


def _describe(torch, name: str, t) -> TensorInfo:
    if not isinstance(t, torch.Tensor):
        raise _fail(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    dtype_name = str(t.dtype).replace("torch.", "")
    return TensorInfo(
        name=name,
        shape=tuple(t.shape),
        strides=tuple(t.stride()),
        dtype=_TORCH_DTYPE_NAMES.get(dtype_name, dtype_name),
        element_size=t.element_size(),
        device=str(t.device),
        is_cuda=bool(t.is_cuda),
        data_ptr=t.data_ptr() if t.is_cuda else 0,
    )


def _torch_dtype(torch, dtype: str):
    return {"f16": torch.float16, "bf16": torch.bfloat16}[dtype]


# ---------------------------------------------------------------------------
# The kernel
# ---------------------------------------------------------------------------


class FlashKernel:
    """One compiled FlashTile kernel, loaded from its metadata and cubin.

    Loading reads files only; the GPU is first touched by the first call,
    which loads the cubin into the current device's context (cached per
    context).
    """

    def __init__(self, metadata: KernelMetadata, image: bytes):
        self.metadata = metadata
        self._image = image
        self._functions: Dict[int, int] = {}  # CUcontext -> CUfunction
        self._modules: Dict[int, int] = {}  # CUcontext -> CUmodule
        self._lock = threading.Lock()

    # Short names for what callers ask most.
    @property
    def name(self) -> str:
        return self.metadata.kernel

    @property
    def dtype(self) -> str:
        return self.metadata.dtype

    @property
    def head_dim(self) -> int:
        return self.metadata.head_dim

    @property
    def head_dim_v(self) -> int:
        return self.metadata.head_dim_v

    def __repr__(self) -> str:
        m = self.metadata
        return (f"FlashKernel({m.kernel!r}, {m.dtype}, d={m.head_dim}"
                f"{'' if m.head_dim_v == m.head_dim else f'/{m.head_dim_v}'}, "
                f"{m.mask_description}, {m.config})")

    # -- GPU side ----------------------------------------------------------

    def _function_for_device(self, torch, device_index: int) -> int:
        drv = _get_driver()
        # Make sure torch's runtime has set up this device's primary context
        # and made it current on this thread.
        torch.cuda.init()
        torch.cuda.current_device()
        ctx = ctypes.c_void_p()
        drv.check(drv.cuCtxGetCurrent(ctypes.byref(ctx)), "cuCtxGetCurrent")
        if ctx.value:
            ctx_device = ctypes.c_int()
            drv.check(drv.cuCtxGetDevice(ctypes.byref(ctx_device)),
                      "cuCtxGetDevice")
            if ctx_device.value != device_index:
                ctx = ctypes.c_void_p()
        if not ctx.value:
            dev = ctypes.c_int()
            drv.check(drv.cuDeviceGet(ctypes.byref(dev), device_index),
                      f"cuDeviceGet({device_index})")
            drv.check(drv.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev.value),
                      f"cuDevicePrimaryCtxRetain(device {device_index})")
            drv.check(drv.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
        key = ctx.value
        with self._lock:
            func = self._functions.get(key)
            if func is not None:
                return func
            m = self.metadata
            module = ctypes.c_void_p()
            image = ctypes.create_string_buffer(self._image, len(self._image) + 1)
            code = drv.cuModuleLoadData(ctypes.byref(module), image)
            if code == _CUDA_ERROR_NO_BINARY_FOR_GPU:
                cap = torch.cuda.get_device_capability(device_index)
                raise FlashTileError(
                    f"{m.cubin_path}: cuModuleLoadData failed: "
                    f"{drv.error_text(code)}; the cubin is for "
                    f"{m.isa or m.arch or 'an unknown chip'} but device "
                    f"{device_index} is sm_{cap[0]}{cap[1]}")
            drv.check(code, f"cuModuleLoadData({m.cubin_path})")
            fn = ctypes.c_void_p()
            drv.check(drv.cuModuleGetFunction(ctypes.byref(fn), module,
                                              m.kernel.encode()),
                      f"cuModuleGetFunction({m.kernel!r}) in {m.cubin_path}")
            if m.dynamic_smem_bytes > _SMEM_STATIC_LIMIT:
                drv.check(drv.cuFuncSetAttribute(
                    fn, _CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    m.dynamic_smem_bytes),
                    f"cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES = "
                    f"{m.dynamic_smem_bytes}) for {m.kernel}")
            self._modules[key] = module.value
            self._functions[key] = fn.value
            return fn.value

    def __call__(self, q, k, v, softmax_scale=None, out=None, lse=None):
        """Runs the kernel; returns (out, lse). See the module docstring."""
        torch = _import_torch()
        m = self.metadata
        qi = _describe(torch, "q", q)
        ki = _describe(torch, "k", k)
        vi = _describe(torch, "v", v)
        oi = _describe(torch, "out", out) if out is not None else None
        li = _describe(torch, "lse", lse) if lse is not None else None
        plan = check_arguments(m, qi, ki, vi, oi, li)
        scale = resolve_softmax_scale(m, softmax_scale)

        if out is None:
            out = torch.empty(
                (plan.batch, plan.seqlen_q, plan.heads_q, m.head_dim_v),
                dtype=_torch_dtype(torch, m.dtype), device=q.device)
            oi = _describe(torch, "out", out)
        if lse is None:
            lse = torch.empty((plan.batch, plan.heads_q, plan.seqlen_q),
                              dtype=torch.float32, device=q.device)
            li = _describe(torch, "lse", lse)
        if plan.empty:
            return out, lse
        # Recheck with the allocated outputs (cheap; they always pass).
        check_arguments(m, qi, ki, vi, oi, li)
        kernel_params, keep_alive = pack_params(
            m.params, param_values(plan, m, qi, ki, vi, oi, li, scale))

        grid = (-(-plan.seqlen_q // m.config.tile_m), plan.heads_q, plan.batch)
        with torch.cuda.device(q.device):
            func = self._function_for_device(torch, q.device.index)
            stream = torch.cuda.current_stream(q.device).cuda_stream
            drv = _get_driver()
            drv.check(drv.cuLaunchKernel(
                func, grid[0], grid[1], grid[2], m.block[0], m.block[1],
                m.block[2], m.dynamic_smem_bytes, stream, kernel_params, None),
                f"cuLaunchKernel({m.kernel}, grid {grid}, block "
                f"{m.block}, {m.dynamic_smem_bytes} B dynamic smem)")
        del keep_alive
        return out, lse


def load_kernel(metadata_json_path) -> FlashKernel:
    """Reads a kernel's metadata JSON and its cubin; touches no GPU."""
    meta = read_metadata(metadata_json_path)
    try:
        with open(meta.cubin_path, "rb") as fh:
            image = fh.read()
    except FileNotFoundError:
        raise FlashTileError(
            f"{meta.path}: cubin {meta.raw['cubin']!r} not found (looked for "
            f"{meta.cubin_path})") from None
    except OSError as e:
        raise FlashTileError(
            f"{meta.path}: cannot read cubin {meta.cubin_path}: {e}") from None
    if not image:
        raise FlashTileError(f"{meta.path}: cubin {meta.cubin_path} is empty")
    return FlashKernel(meta, image)
