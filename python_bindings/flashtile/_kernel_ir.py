"""The kernel IR of hooks (part of flashtile.hooks): an attn.kernel's text
with each hook traced into its region and every capture an extra argument
(kernel_ir), the checks of what enters it (hook signatures, windows,
dtypes), and the kernel rules the runtime extension owns."""

import traceback
import types

from . import FlashTileError
from ._tracer import (Scalar, Value, _F32, _I1, _I32, _INDEX, _Region,
                      _current, _float_literal, _format_location,
                      _is_tensor, _user_frame, to_float, where)
from ._captures import (_ScalarArg, _TensorArg, _captured, tensor_dtype)


_DTYPES = {"float32": _F32, "int32": _I32}


class _Kernel:
    """The extra arguments of one kernel, shared by its hooks."""

    def __init__(self):
        self.captured = {}   # id -> _TensorArg / _ScalarArg
        self.args = []       # in order of first use
        self.tensors = {}    # name -> the captured tensor object

    def use(self, arg):
        if arg.arg is None:
            arg.arg = f"%x{len(self.args)}"
            self.args.append(arg)

    def capture(self, name, value):
        if isinstance(value, Scalar):
            key = id(value)
            if key not in self.captured:
                type_ = _I32 if isinstance(value.value, int) else _F32
                arg = _ScalarArg(self, value.name or name, type_, value)
                arg.variable = name
                self.captured[key] = arg
            return self.captured[key]
        if _is_tensor(value):
            key = id(value)
            if key not in self.captured:
                dtype = _DTYPES.get(tensor_dtype(value))
                if dtype is None:
                    raise FlashTileError(
                        f"hook tensor {name} has dtype {value.dtype}; hooks "
                        f"read float32 and int32 tensors")
                self.captured[key] = _TensorArg(self, name, dtype,
                                                len(value.shape))
                self.tensors[name] = value
            return self.captured[key]
        return value

    def bind(self, fn, overrides=None):
        """`fn` with its captured tensors and scalars replaced by proxies;
        `overrides` maps captured names to what to trace instead (stand-ins
        such as TensorSpec)."""
        overrides = overrides or {}
        code = fn.__code__
        cells = []
        for name, cell in zip(code.co_freevars, fn.__closure__ or ()):
            if name in overrides:
                cells.append(types.CellType(self.capture(name,
                                                         overrides[name])))
                continue
            try:
                contents = cell.cell_contents
            except ValueError:  # an empty cell (a later-assigned name)
                cells.append(cell)
                continue
            cells.append(types.CellType(self.capture(name, contents)))
        names = set(code.co_names)
        globals_ = dict(fn.__globals__)
        for name in names & (globals_.keys() | overrides.keys()):
            value = overrides[name] if name in overrides else globals_[name]
            globals_[name] = self.capture(name, value)
        bound = types.FunctionType(code, globals_, fn.__name__,
                                   fn.__defaults__, tuple(cells))
        bound.__kwdefaults__ = fn.__kwdefaults__
        return bound


# The parameters of each hook kind, as FlexAttention names them.
_SIGNATURES = {"score_mod": "(score, b, h, q_idx, kv_idx)",
               "mask_mod": "(b, h, q_idx, kv_idx)", "sink": "(b, h)"}


def _definition(fn):
    """Where `fn` is defined, as located messages name it."""
    code = getattr(fn, "__code__", None)
    return _format_location((code.co_filename, code.co_firstlineno)
                            if code else None)


def _check_hook(fn, what, arity):
    """`fn` is a Python function that takes the `arity` arguments of hook
    kind `what`: a clear error at its definition otherwise (a mask_mod
    passed as score_mod, a lambda with a missing parameter)."""
    signature = _SIGNATURES.get(what, f"({arity} arguments)")
    if not isinstance(fn, types.FunctionType):
        raise FlashTileError(
            f"{what} must be a Python function {what}{signature}, "
            f"got {type(fn).__name__}")
    import inspect
    try:
        inspect.signature(fn).bind(*range(arity))
    except TypeError:
        others = [k for k, sig in _SIGNATURES.items()
                  if k != what and what in _SIGNATURES and
                  sig.count(",") + 1 == fn.__code__.co_argcount]
        hint = (f"; it takes {fn.__code__.co_argcount} arguments, as a "
                f"{others[0]} does: was it meant as {others[0]}=?"
                if others else "")
        raise FlashTileError(
            f"{_definition(fn)}: {what} {fn.__name__} must take "
            f"{signature}{hint}") from None


def _trace(kernel, fn, params, result_type, what, captures):
    _check_hook(fn, what, len(params))
    region = _Region(kernel)
    args = [Value(region, f"%{p}", t) for p, t in params]
    _current.append(region)
    try:
        result = kernel.bind(fn, captures)(*args)
        if isinstance(result, _TensorArg) and result.rank == 0:
            result = result.value(region)  # a 0-d tensor returned: its element
    except (TypeError, AttributeError, IndexError, KeyError,
            ZeroDivisionError) as e:
        # Python itself refused what the hook did with a traced value (a
        # captured name that is still None, an unsupported operand): the
        # user's line and what to do, not a raw error from inside tracing.
        frames = traceback.extract_tb(e.__traceback__)
        where = _user_frame(frames)
        unset = [n for n in fn.__code__.co_freevars + fn.__code__.co_names
                 if n not in (captures or {}) and _captured(fn, n) is None]
        hint = ""
        if unset:
            hint = (f"; {', '.join(unset)} is None while the hook is traced: "
                    f"set it to a tensor first, or give its dtype and rank "
                    f"in `captures` (e.g. \"captures\": {{\"{unset[0]}\": "
                    f"[\"int32\", 1]}} in a prebuild manifest)")
        raise FlashTileError(f"{where}: {what} {fn.__name__} cannot be "
                             f"traced: {e}{hint}") from None
    finally:
        _current.pop()
    where = _definition(fn)
    if result is None:
        raise FlashTileError(f"{where}: {what} {fn.__name__} returned None; "
                             f"it must return a {result_type} hook value")
    if isinstance(result, bool) and result_type == _I1:
        result = region.constant(result, _I1)
    elif not isinstance(result, Value):
        if result_type == _F32 and isinstance(result, (int, float)):
            result = region.constant(float(result), _F32)
        else:
            raise FlashTileError(
                f"{where}: {what} {fn.__name__} must return a {result_type} "
                f"hook value, got {type(result).__name__}")
    if result_type == _F32 and result.type == _INDEX:
        result = to_float(result)
    if result.type != result_type:
        kind = "a score (f32)" if result_type == _F32 else "a condition"
        fix = (" (a comparison such as q_idx >= kv_idx, or a combination of "
               "them with & | ~)" if result_type == _I1 else "")
        raise FlashTileError(f"{where}: {what} {fn.__name__} must return "
                             f"{kind}{fix}, got {result.type}")
    header = ", ".join(f"%{p}: {t}" for p, t in params)
    body = [f"^bb0({header}):"] + ["  " + line for line in region.lines]
    body.append(f"  attn.yield {result.name} : {result_type}")
    return body


def check_window(window):
    """`window` as a (left, right) tuple of ints, or None; a FlashTileError
    that shows the form otherwise (window=512 is not a window)."""
    if window is None:
        return None
    try:
        left, right = window
    except (TypeError, ValueError):
        left = right = None
    if any(isinstance(x, bool) or not isinstance(x, int)
           for x in (left, right)):
        raise FlashTileError(
            f"window must be a (left, right) pair of ints, the keys each "
            f"query sees before and after its own position (-1: no limit on "
            f"that side), e.g. window=(512, 0) for a causal sliding window "
            f"of 512 keys; got {window!r}")
    return (left, right)


def kernel_rules():
    """The kernel rules front ends trace by (flashtile/ABI/KernelRules.h:
    the attention dtypes, head-dim padding, the default scale), from the
    LLVM-free runtime extension, so that a runtime-only installation
    traces what the compiler would."""
    try:
        from . import _runtime
    except ImportError as e:
        raise FlashTileError(
            f"tracing needs flashtile._runtime (the C++ extension), which "
            f"does not import: {e}") from None
    return _runtime


def attention_dtypes():
    """The element types of Q, K, V and O ("f16", "bf16")."""
    return kernel_rules().ATTENTION_DTYPES


def check_dtype(dtype):
    """A FlashTileError unless `dtype` is an attention element type."""
    names = attention_dtypes()
    if dtype not in names:
        raise FlashTileError(
            f"dtype must be one of {', '.join(repr(n) for n in names)}, got "
            f"{dtype!r}")


# The argument name of a paged kernel's block table (kernel_ir(paged=True)).
PAGE_TABLE = "block_table"


# The kernel shell both front ends write (hooks: kernel_ir; tile programs:
# flashtile.tile), once: the forward's tensors, then the captured extra
# arguments. Its text is the C++ DSL's (dsl/FlashAttention.cpp's
# createKernelShell), which test_tile.py checks through the compiler.

LSE_TYPE = "memref<?x?x?xf32>"


def tensor_type(head_dim, dtype):
    """The memref type of a (batch, rows, heads, head_dim) sequence tensor."""
    return f"memref<?x?x?x{head_dim}x{dtype}, strided<[?, ?, ?, 1]>>"


def config_text(tile_m, tile_n, stages, warps, q_in_regs):
    """An #attn.config as the IR spells it."""
    return (f"#attn.config<tile_m = {tile_m}, tile_n = {tile_n}, stages = "
            f"{stages}, warps = {warps}, q_in_regs = "
            f"{'true' if q_in_regs else 'false'}>")


def kernel_shell(name, arch, head_dim, head_dim_v, dtype, kernel, config=None,
                 trailing=()):
    """The opening lines of an attn.kernel of the forward's interface ("module
    {", the kernel with its arch, config and arg_names, its block's
    arguments) and its extra arguments [(argument name, "tensor" | "scalar",
    the captured tensor or flashtile.Scalar, the hooks' variable name)]:
    `kernel`'s captures, then `trailing` (name, type) arguments that are
    not captures. Close it with KERNEL_CLOSE."""
    tq, tv = tensor_type(head_dim, dtype), tensor_type(head_dim_v, dtype)
    block_args = [f"%q: {tq}", f"%k: {tq}", f"%v: {tv}", f"%o: {tv}",
                  f"%lse: {LSE_TYPE}"]
    extras = []
    for arg in kernel.args:
        if isinstance(arg, _TensorArg):
            block_args.append(f"{arg.arg}: {arg.memref_type()}")
            extras.append((arg.name, "tensor", kernel.tensors[arg.name],
                           arg.name))
        else:
            block_args.append(f"{arg.arg}: {arg.type}")
            extras.append((arg.name, "scalar", arg.scalar, arg.variable))
    names_list = [e[0] for e in extras]
    for arg_name, type_ in trailing:
        block_args.append(f"%{arg_name}: {type_}")
        names_list.append(arg_name)
    names = ""
    if names_list:
        names = " attributes {arg_names = [" + ", ".join(
            f'"{n}"' for n in names_list) + "]}"
    config = f" config({config})" if config else ""
    lines = ["module {",
             f"  attn.kernel @{name} arch(#attn.arch<{arch}>){config}{names} {{",
             f"  ^bb0({', '.join(block_args)}):"]
    return lines, extras


KERNEL_CLOSE = ["  }", "}", ""]


def kernel_ir(name, head_dim, dtype="bf16", head_dim_v=None, causal=False,
              window=None, scale=None, score_mod=None, mask_mod=None,
              arch="sm_120", captures=None, sink=None, paged=False):
    """The kernel-level `attn` module of an attention with these hooks, and
    its extra arguments [(argument name, "tensor" | "scalar", the captured
    tensor or flashtile.Scalar, the hooks' variable name)] in kernel
    order. `captures` maps names the hooks capture to what to trace
    in their place (TensorSpec stand-ins). `paged`: K and V are page pools
    read through a last extra argument `block_table`, an int32 (batch,
    max_pages) tensor that the caller passes by name (not listed)."""
    check_dtype(dtype)
    head_dim_v = head_dim if head_dim_v is None else head_dim_v
    kernel = _Kernel()
    hooks = []
    if score_mod is not None:
        hooks.append(("score_mod", _trace(
            kernel, score_mod,
            [("score", _F32), ("b", _INDEX), ("h", _INDEX), ("q_idx", _INDEX),
             ("kv_idx", _INDEX)], _F32, "score_mod", captures)))
    if mask_mod is not None:
        hooks.append(("mask_mod", _trace(
            kernel, mask_mod,
            [("b", _INDEX), ("h", _INDEX), ("q_idx", _INDEX),
             ("kv_idx", _INDEX)], _I1, "mask_mod", captures)))
    if sink is not None:
        hooks.append(("sink", _trace(
            kernel, sink, [("b", _INDEX), ("h", _INDEX)], _F32, "sink",
            captures)))

    tq, tv = tensor_type(head_dim, dtype), tensor_type(head_dim_v, dtype)
    lse = LSE_TYPE
    pages, trailing = "", []
    if paged:
        table = "memref<?x?xi32, strided<[?, ?]>>"
        trailing.append((PAGE_TABLE, table))
        pages = f" pages(%{PAGE_TABLE} : {table})"
    lines, extras = kernel_shell(name, arch, head_dim, head_dim_v, dtype,
                                 kernel, trailing=trailing)
    attrs = []
    if causal:
        attrs.append("causal")
    window = check_window(window)
    if window is not None:
        left, right = window
        attrs.append(f"window_left = {int(left)}")
        attrs.append(f"window_right = {int(right)}")
    if scale is not None:
        attrs.append(f"softmax_scale = {_float_literal(scale)} : f32")
    attr_text = " {" + ", ".join(attrs) + "}" if attrs else ""
    head = (f"    attn.attention %q, %k, %v -> %o, %lse{pages}{attr_text} : "
            f"{tq}, {tq}, {tv} -> {tv}, {lse}")
    if not hooks:
        lines.append(head)
    else:
        for i, (kind, body) in enumerate(hooks):
            opener = head if i == 0 else "    }"
            lines.append(f"{opener} {kind} {{")
            lines += ["    " + line for line in body]
        lines.append("    }")
    lines += KERNEL_CLOSE
    return "\n".join(lines), extras
