"""Hooks in Python: score_mod / mask_mod functions traced into `attn` IR.

A hook is a plain Python function. FlashTile calls it once on symbolic
values and records what it computes, as the C++ DSL (include/flashtile/DSL/
Hooks.h) does:

    def softcap(score, b, h, q_idx, kv_idx):
        return 50 * flashtile.tanh(score / 50)

    def document(b, h, q_idx, kv_idx):
        return doc[b, q_idx] == doc[b, kv_idx]      # doc: a captured tensor

* `score` is an f32 score (already scaled by the softmax scale); `b`, `h`,
  `q_idx`, `kv_idx` are indices (the query's position in its sequence, the
  query head). Arithmetic follows torch: an index meeting a float, or `/`
  between indices, gives a float.
* Tensors the function captures (closure variables or globals it names)
  become extra kernel arguments, in order of first use; reading one with
  indices is a table read (f32 or i32 tensors; i32 values act as indices).
* Python numbers it captures are constants; `flashtile.scalar(value)` marks
  one as a run-time scalar argument instead (i32 for an int, f32 for a
  float), passed at each call.
* Control flow on symbolic values is not traced: `if`, `and`, `or` and
  `bool()` raise; use `flashtile.where(cond, a, b)`, `&`, `|`, `~`.

Tracing is pure Python: it needs neither the compiler nor torch, and gives
the same text on every Python version. Errors raise FlashTileError at the
user's line.
"""

import builtins
import functools
import math
import operator
import traceback
import types

from . import FlashTileError

__all__ = ["scalar", "where", "tanh", "exp", "exp2", "log", "log2", "sqrt",
           "rsqrt", "abs", "erf", "sin", "cos", "floor", "ceil", "pow",
           "minimum", "maximum", "to_float", "to_index", "seqlen_q",
           "seqlen_k", "heads_q", "heads_kv", "batch_size", "Scalar",
           "TensorSpec", "kernel_ir", "read_captures"]

_F32, _INDEX, _I1, _I32 = "f32", "index", "i1", "i32"
_DTYPES = {"float32": _F32, "int32": _I32}


_HERE = __file__.rsplit("/", 1)[0]


def _is_library_file(filename):
    """Whether `filename` is this package's or torch's: frames a user's
    hook runs through (torch.nn.functional, torch.overrides) but did not
    write."""
    return (filename.startswith(_HERE) or "/torch/" in filename
            or filename.startswith("<frozen "))


def _user_frame_summary(frames=None):
    """The innermost frame (of `frames`, else of the stack) outside this
    package and torch, or None."""
    frames = traceback.extract_stack()[:-1] if frames is None else frames
    return next((f for f in reversed(frames)
                 if not _is_library_file(f.filename)), None)


def _user_frame(frames=None):
    """file:line of the innermost frame outside this package and torch."""
    frame = _user_frame_summary(frames)
    return f"{frame.filename}:{frame.lineno}" if frame else "<unknown>"


def _fail(message):
    raise FlashTileError(f"{_user_frame()}: {message}")


class Scalar:
    """A run-time scalar argument: `flashtile.scalar(512)` captured by a
    hook is passed at each call (under `name`, or the captured variable's
    name) instead of being compiled in."""

    __slots__ = ("value", "name")

    def __init__(self, value, name=None):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise FlashTileError(
                f"flashtile.scalar takes an int or a float, got "
                f"{type(value).__name__}")
        self.value = value
        self.name = name


    # Outside tracing (a FlexAttention call on tensors, say) a Scalar is its
    # value.
    def __index__(self):
        if isinstance(self.value, float):
            raise TypeError("a float flashtile.scalar is not an index")
        return self.value

    def __float__(self):
        return float(self.value)

    def __int__(self):
        return int(self.value)

    def _on_value(op, reflected):
        # operator's dispatch, so that `tensor < scalar` becomes torch's.
        if reflected:
            return lambda self, other: op(other, self.value)
        return lambda self, other: op(self.value, other)

    for _name in ("add", "sub", "mul", "truediv", "floordiv", "mod"):
        locals()[f"__{_name}__"] = _on_value(getattr(operator, _name), False)
        locals()[f"__r{_name}__"] = _on_value(getattr(operator, _name), True)
    for _name in ("lt", "le", "gt", "ge", "eq", "ne"):
        locals()[f"__{_name}__"] = _on_value(getattr(operator, _name), False)
    del _name, _on_value
    __hash__ = object.__hash__


def scalar(value, name=None):
    """Marks a number a hook captures as a run-time scalar argument."""
    return Scalar(value, name)


def _on_tensors(name, args):
    """Outside tracing, a hook function called on tensors (FlexAttention
    running the same score_mod) is torch's: flashtile.tanh is torch.tanh."""
    if _current or not any(_is_tensor(a) for a in args):
        return None
    import torch
    like = next(a for a in args if _is_tensor(a))
    args = [a if _is_tensor(a) else torch.as_tensor(
        float(a) if isinstance(a, Scalar) else a, device=like.device)
        for a in args]
    return getattr(torch, name)(*args)


class TensorSpec:
    """A stand-in for a tensor a hook captures, where the tensor itself is
    not at hand (`python -m flashtile prebuild` on a machine without torch):
    tracing reads only its dtype ("float32", "int32") and rank."""

    __slots__ = ("dtype", "shape")

    def __init__(self, dtype, rank):
        self.dtype = str(dtype)
        self.shape = (1,) * int(rank)

    def data_ptr(self):
        return 0

    def __repr__(self):
        return f"TensorSpec({self.dtype!r}, {len(self.shape)})"


class _Region:
    """The body of one hook being traced."""

    def __init__(self, kernel):
        self.kernel = kernel
        self.lines = []
        self.next = 0
        self.constants = {}
        self.casts = {}

    def emit(self, text, type_):
        name = f"%{self.next}"
        self.next += 1
        self.lines.append(f"{name} = {text}")
        return Value(self, name, type_)

    def constant(self, value, type_):
        key = (repr(value), type_)
        if key not in self.constants:
            if type_ == _F32:
                literal = _float_literal(value)
            elif type_ == _I1:
                literal = "true" if value else "false"
            else:
                literal = str(int(value))
            # A boolean attribute carries its type (i1): no `: i1` after it.
            typed = "" if type_ == _I1 else f" : {type_}"
            self.constants[key] = self.emit(
                f"arith.constant {literal}{typed}", type_)
        return self.constants[key]


def _float_literal(value):
    value = float(value)
    if math.isnan(value) or math.isinf(value):
        bits = {"inf": "0x7F800000", "-inf": "0xFF800000"}.get(
            repr(value), "0x7FC00000")
        return bits
    # The shortest repr that round-trips through f32 is not needed: the
    # parser rounds the double to f32, as the C++ DSL's float constant does.
    # MLIR's float literal needs a point in the mantissa: 1e-06 is a
    # parse error (and 30 an integer), 1.0e-06 and 30.0 are floats.
    mantissa, e, exponent = repr(value).partition("e")
    if "." not in mantissa:
        mantissa += ".0"
    return mantissa + e + exponent


_current = []


def _region():
    if not _current:
        _fail("flashtile hook functions (tanh, where, seqlen_q, ...) work "
              "only while a hook is traced")
    return _current[-1]


class Value:
    """A symbolic value of a hook: f32, index or i1."""

    __slots__ = ("region", "name", "type")

    def __init__(self, region, name, type_):
        self.region = region
        self.name = name
        self.type = type_

    def __bool__(self):
        _fail("a hook value is symbolic: Python's if / and / or / not cannot "
              "branch on it; use flashtile.where(cond, a, b), &, | and ~")

    def __index__(self):
        _fail("a hook value is symbolic: it cannot index a Python sequence "
              "or size a range; capture a tensor and read it with [...]")

    def __float__(self):
        # math.tanh(score) and friends land here (they call float() on
        # their argument): name the hook function that replaces them.
        import re
        frame = _user_frame_summary()
        called = re.findall(r"\bmath\.([a-z0-9_]+)\s*\(",
                            (frame.line or "") if frame else "")
        offer = [n for n in called if n in __all__]
        if offer:
            _fail(f"a hook value is symbolic: Python's math.{offer[0]} cannot "
                  f"take it; use flashtile.{offer[0]} (torch.{offer[0]} works "
                  f"too)")
        _fail("a hook value is symbolic: float() and Python's math module "
              "cannot take it; use flashtile's functions (flashtile.tanh, "
              "flashtile.exp, ...) and flashtile.to_float for an index")

    def __int__(self):
        _fail("a hook value is symbolic: int() cannot convert it; use "
              "flashtile.to_index for a float")

    def __repr__(self):
        return f"<flashtile hook value {self.name}: {self.type}>"

    def _binary(self, other, op, reverse=False):
        a, b = (other, self) if reverse else (self, other)
        return _arith(op, a, b)

    def __add__(self, o): return self._binary(o, "add")
    def __radd__(self, o): return self._binary(o, "add", True)
    def __sub__(self, o): return self._binary(o, "sub")
    def __rsub__(self, o): return self._binary(o, "sub", True)
    def __mul__(self, o): return self._binary(o, "mul")
    def __rmul__(self, o): return self._binary(o, "mul", True)
    def __truediv__(self, o): return self._binary(o, "div")
    def __rtruediv__(self, o): return self._binary(o, "div", True)
    def __floordiv__(self, o): return self._binary(o, "floordiv")
    def __rfloordiv__(self, o): return self._binary(o, "floordiv", True)
    def __mod__(self, o): return self._binary(o, "mod")
    def __rmod__(self, o): return self._binary(o, "mod", True)
    def __pow__(self, o): return pow(self, o)
    def __rpow__(self, o): return pow(o, self)
    def __lt__(self, o): return _compare("lt", self, o)
    def __le__(self, o): return _compare("le", self, o)
    def __gt__(self, o): return _compare("gt", self, o)
    def __ge__(self, o): return _compare("ge", self, o)
    def __eq__(self, o): return _compare("eq", self, o)
    def __ne__(self, o): return _compare("ne", self, o)
    def __and__(self, o): return _logic("andi", self, o)
    def __rand__(self, o): return _logic("andi", o, self)
    def __or__(self, o): return _logic("ori", self, o)
    def __ror__(self, o): return _logic("ori", o, self)
    def __xor__(self, o): return _logic("xori", self, o)
    def __rxor__(self, o): return _logic("xori", o, self)

    def __invert__(self):
        if self.type != _I1:
            _fail(f"~ takes a condition, got {self.type}")
        return _logic("xori", self, True)

    def __neg__(self):
        if self.type == _F32:
            return self.region.emit(f"arith.negf {self.name} : f32", _F32)
        return _arith("sub", 0, self)

    def __abs__(self):
        return abs(self)

    @classmethod
    def __torch_function__(cls, func, types=(), args=(), kwargs=None):
        """torch.tanh(score), torch.where(...) on hook values: the same
        function serves FlexAttention (on tensors) and FlashTile (traced)."""
        name = getattr(func, "__name__", str(func))
        impl = _TORCH_FUNCTIONS.get(name)
        if impl is None:
            _fail(f"torch.{name} is not supported in hooks (supported: "
                  f"{', '.join(sorted(_TORCH_FUNCTIONS))})")
        return impl(*args, **(kwargs or {}))

    __hash__ = None


def _lift(x, region, like=None):
    """`x` as a Value of `region`: numbers become constants (f32 for a
    float, or an int next to an f32; index otherwise)."""
    if isinstance(x, Value):
        if x.region is not region:
            _fail("a value of one hook is used in another")
        return x
    if isinstance(x, _ScalarArg):
        return x.value(region)
    if isinstance(x, bool):
        return region.constant(x, _I1)
    if isinstance(x, float):
        return region.constant(x, _F32)
    if isinstance(x, int):
        if like == _F32:
            return region.constant(float(x), _F32)
        if not -(1 << 31) <= x < (1 << 31):
            _fail(f"the integer {x} does not fit the kernel's 32-bit index "
                  f"arithmetic")
        return region.constant(x, _INDEX)
    if isinstance(x, _TensorArg):
        return x.value(region)
    _fail(f"a hook cannot compute with {type(x).__name__} values (numbers, "
          f"hook values and captured tensors only)")


def _operands(a, b):
    region = (a.region if isinstance(a, Value) else
              b.region if isinstance(b, Value) else _region())
    ta = a.type if isinstance(a, Value) else None
    tb = b.type if isinstance(b, Value) else None
    a = _lift(a, region, tb)
    b = _lift(b, region, ta)
    return region, a, b


def to_float(x):
    """An index (or a number) as f32."""
    if _is_tensor(x) and not _current:
        return x if x.is_floating_point() else x.float()
    region = x.region if isinstance(x, Value) else _region()
    x = _lift(x, region)
    if x.type == _F32:
        return x
    if x.type != _INDEX:
        _fail(f"to_float takes an index, got {x.type}")
    i32 = region.emit(f"arith.index_cast {x.name} : index to i32", _I32)
    return region.emit(f"arith.sitofp {i32.name} : i32 to f32", _F32)


def to_index(x):
    """An f32 (truncated toward zero) as an index."""
    if _is_tensor(x) and not _current:
        return x.trunc().long() if x.is_floating_point() else x
    region = x.region if isinstance(x, Value) else _region()
    x = _lift(x, region)
    if x.type == _INDEX:
        return x
    if x.type != _F32:
        _fail(f"to_index takes a float, got {x.type}")
    i32 = region.emit(f"arith.fptosi {x.name} : f32 to i32", _I32)
    return region.emit(f"arith.index_cast {i32.name} : i32 to index", _INDEX)


def _unify(region, a, b):
    if a.type == b.type:
        return a, b
    if {a.type, b.type} == {_F32, _INDEX}:
        return to_float(a), to_float(b)
    _fail(f"cannot combine {a.type} and {b.type}")


_FLOAT_OPS = {"add": "addf", "sub": "subf", "mul": "mulf", "div": "divf"}
_INDEX_OPS = {"add": "addi", "sub": "subi", "mul": "muli",
              "floordiv": "floordivsi", "mod": "remsi"}


def _arith(op, a, b):
    region, a, b = _operands(a, b)
    if a.type == _I1 or b.type == _I1:
        _fail(f"arithmetic ({op}) on a condition; use flashtile.where")
    a, b = _unify(region, a, b)
    if op == "div" and a.type == _INDEX:  # torch: true division is float
        a, b = to_float(a), to_float(b)
    if a.type == _F32:
        if op == "floordiv":
            return floor(_arith("div", a, b))
        if op == "mod":
            _fail("% on floats is not supported in hooks")
        return region.emit(f"arith.{_FLOAT_OPS[op]} {a.name}, {b.name} : f32",
                           _F32)
    return region.emit(f"arith.{_INDEX_OPS[op]} {a.name}, {b.name} : index",
                       _INDEX)


_CMP_I = {"lt": "slt", "le": "sle", "gt": "sgt", "ge": "sge", "eq": "eq",
          "ne": "ne"}
_CMP_F = {"lt": "olt", "le": "ole", "gt": "ogt", "ge": "oge", "eq": "oeq",
          "ne": "une"}


def _compare(op, a, b):
    region, a, b = _operands(a, b)
    a, b = _unify(region, a, b)
    if a.type == _F32:
        return region.emit(
            f"arith.cmpf {_CMP_F[op]}, {a.name}, {b.name} : f32", _I1)
    if a.type == _I1:
        if op not in ("eq", "ne"):
            _fail("conditions compare only with == and !=")
        return region.emit(
            f"arith.cmpi {_CMP_I[op]}, {a.name}, {b.name} : i1", _I1)
    return region.emit(
        f"arith.cmpi {_CMP_I[op]}, {a.name}, {b.name} : index", _I1)


def _logic(op, a, b):
    region, a, b = _operands(a, b)
    if a.type != _I1 or b.type != _I1:
        _fail(f"&, | and ^ take conditions, got {a.type} and {b.type}")
    return region.emit(f"arith.{op} {a.name}, {b.name} : i1", _I1)


def where(cond, a, b):
    """`a` where `cond` holds, else `b` (arith.select)."""
    on_tensors = _on_tensors("where", (cond, a, b))
    if on_tensors is not None:
        return on_tensors
    region, a, b = _operands(a, b)
    cond = _lift(cond, region)
    if cond.type != _I1:
        _fail(f"where's condition must be a comparison, got {cond.type}")
    a, b = _unify(region, a, b)
    return region.emit(
        f"arith.select {cond.name}, {a.name}, {b.name} : {a.type}", a.type)


def _unary_f32(op):
    def fn(x):
        on_tensors = _on_tensors(op, (x,))
        if on_tensors is not None:
            return on_tensors
        region = x.region if isinstance(x, Value) else _region()
        x = to_float(_lift(x, region))
        return region.emit(f"math.{op} {x.name} : f32", _F32)
    fn.__name__ = op
    fn.__doc__ = f"math.{op} of a float (an index converts)."
    return fn


tanh = _unary_f32("tanh")
exp = _unary_f32("exp")
exp2 = _unary_f32("exp2")
log = _unary_f32("log")
log2 = _unary_f32("log2")
sqrt = _unary_f32("sqrt")
rsqrt = _unary_f32("rsqrt")
erf = _unary_f32("erf")
sin = _unary_f32("sin")
cos = _unary_f32("cos")
floor = _unary_f32("floor")
ceil = _unary_f32("ceil")


def abs(x):  # noqa: A001 - mirrors Python's abs for hook values
    """|x|: math.absf on floats, math.absi on indices."""
    if not isinstance(x, (Value, _ScalarArg)) and not _current:
        return builtins.abs(x)  # a tensor or a number: Python's abs
    region = x.region if isinstance(x, Value) else _region()
    x = _lift(x, region)
    if x.type == _F32:
        return region.emit(f"math.absf {x.name} : f32", _F32)
    if x.type == _INDEX:
        return region.emit(f"math.absi {x.name} : index", _INDEX)
    _fail(f"abs takes a number, got {x.type}")


def pow(x, y):  # noqa: A001
    """x ** y on floats (math.powf)."""
    on_tensors = _on_tensors("pow", (x, y))
    if on_tensors is not None:
        return on_tensors
    region, x, y = _operands(x, y)
    x, y = to_float(x), to_float(y)
    return region.emit(f"math.powf {x.name}, {y.name} : f32", _F32)


def _minmax(which):
    def fn(a, b):
        on_tensors = _on_tensors(f"{which}imum", (a, b))
        if on_tensors is not None:
            return on_tensors
        region, a, b = _operands(a, b)
        a, b = _unify(region, a, b)
        if a.type == _F32:
            op = "minimumf" if which == "min" else "maximumf"
            return region.emit(f"arith.{op} {a.name}, {b.name} : f32", _F32)
        op = "minsi" if which == "min" else "maxsi"
        return region.emit(f"arith.{op} {a.name}, {b.name} : index", _INDEX)
    fn.__name__ = f"{which}imum"
    return fn


minimum = _minmax("min")
maximum = _minmax("max")


def _size(name):
    def fn():
        region = _region()
        return region.emit(f'attn.size "{name}" : index', _INDEX)
    fn.__name__ = name
    fn.__doc__ = f"The run-time {name} (attn.size)."
    return fn


seqlen_q = _size("seqlen_q")
seqlen_k = _size("seqlen_k")
heads_q = _size("heads_q")
heads_kv = _size("heads_kv")
batch_size = _size("batch")


class _AsValue:
    """A captured argument in arithmetic, as the hook value of
    `self.value(region)`: a flashtile.scalar, or a 0-d tensor (`score +
    bias` with bias 0-d, as in torch: its element)."""

    def _op(name):
        def fn(self, *others):
            region = next((o.region for o in others if isinstance(o, Value)),
                          None) or _region()
            return getattr(self.value(region), name)(*others)
        return fn

    for _name in ("__add__", "__radd__", "__sub__", "__rsub__", "__mul__",
                  "__rmul__", "__truediv__", "__rtruediv__", "__floordiv__",
                  "__rfloordiv__", "__mod__", "__rmod__", "__lt__", "__le__",
                  "__gt__", "__ge__", "__eq__", "__ne__", "__neg__",
                  "__pow__", "__rpow__", "__and__", "__rand__", "__or__",
                  "__ror__", "__invert__"):
        locals()[_name] = _op(_name)
    del _name, _op
    __hash__ = None


class _TensorArg(_AsValue):
    """A captured tensor, as an extra kernel argument."""

    def __init__(self, kernel, name, dtype, rank):
        self.kernel, self.name, self.dtype, self.rank = kernel, name, dtype, rank
        self.arg = None

    def memref_type(self):
        if self.rank == 0:  # a 0-d tensor: one element, no sizes or strides
            return f"memref<{self.dtype}>"
        dims = "x".join(["?"] * self.rank)
        strides = ", ".join(["?"] * self.rank)
        return f"memref<{dims}x{self.dtype}, strided<[{strides}]>>"

    def value(self, region):
        """A 0-d tensor used as a number: its one element."""
        if self.rank != 0:
            _fail(f"tensor {self.name} is used as a value; read it with "
                  f"{self.name}[...]")
        return self.__getitem__(())

    def __getitem__(self, indices):
        if not isinstance(indices, tuple):
            indices = (indices,)
        if len(indices) != self.rank:
            _fail(f"tensor {self.name} has {self.rank} dimension(s), read "
                  f"with {len(indices)} index(es)")
        region = next((i.region for i in indices if isinstance(i, Value)),
                      None) or _region()
        lifted = []
        for i in indices:
            v = _lift(i, region)
            if v.type != _INDEX:
                _fail(f"tensor {self.name} is indexed by an {v.type}; use "
                      f"indices (flashtile.to_index converts a float)")
            lifted.append(v)
        self.kernel.use(self)
        read = region.emit(
            f"memref.load {self.arg}[{', '.join(v.name for v in lifted)}] : "
            f"{self.memref_type()}", self.dtype)
        if self.dtype == _I32:
            return region.emit(
                f"arith.index_cast {read.name} : i32 to index", _INDEX)
        return read

    def __bool__(self):
        _fail(f"tensor {self.name} is captured by a hook: read it with "
              f"{self.name}[...]")


class _ScalarArg(_AsValue):
    """A captured flashtile.scalar, as an extra kernel argument."""

    def __init__(self, kernel, name, type_, scalar):
        self.kernel, self.name, self.type, self.scalar = (kernel, name,
                                                          type_, scalar)
        self.variable = name  # the hook's name for it
        self.arg = None

    def value(self, region):
        self.kernel.use(self)
        key = ("scalar", self.name)
        if key not in region.casts:
            if self.type == _I32:
                region.casts[key] = region.emit(
                    f"arith.index_cast {self.arg} : i32 to index", _INDEX)
            else:
                region.casts[key] = Value(region, self.arg, _F32)
        return region.casts[key]



_NOT_CAPTURED = object()


def _captured(fn, name):
    """What `fn` captures under `name` now: its closure cell's contents,
    else the global it names; _NOT_CAPTURED when it captures no such name
    (or the cell is still empty)."""
    code = fn.__code__
    if name in code.co_freevars:
        try:
            return fn.__closure__[code.co_freevars.index(name)].cell_contents
        except ValueError:  # an empty cell (a later-assigned name)
            return _NOT_CAPTURED
    if name in code.co_names and name in fn.__globals__:
        return fn.__globals__[name]
    return _NOT_CAPTURED


def tensor_dtype(t):
    """The dtype name of a tensor or TensorSpec ("float32", "int32")."""
    return str(t.dtype).replace("torch.", "")


def _is_tensor(x):
    return (hasattr(x, "data_ptr") and hasattr(x, "dtype")
            and hasattr(x, "shape") and not isinstance(x, type))


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
    code = getattr(fn, "__code__", None)
    return f"{code.co_filename}:{code.co_firstlineno}" if code else "<unknown>"


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

    def qkv(d):
        return f"memref<?x?x?x{d}x{dtype}, strided<[?, ?, ?, 1]>>"

    tq, tv = qkv(head_dim), qkv(head_dim_v)
    lse = "memref<?x?x?xf32>"
    block_args = [f"%q: {tq}", f"%k: {tq}", f"%v: {tv}", f"%o: {tv}",
                  f"%lse: {lse}"]
    extras = []
    for arg in kernel.args:
        if isinstance(arg, _TensorArg):
            block_args.append(f"{arg.arg}: {arg.memref_type()}")
            extras.append((arg.name, "tensor", kernel.tensors[arg.name],
                           arg.name))
        else:
            block_args.append(f"{arg.arg}: {arg.type}")
            extras.append((arg.name, "scalar", arg.scalar, arg.variable))
    pages = ""
    names_list = [e[0] for e in extras]
    if paged:
        table = "memref<?x?xi32, strided<[?, ?]>>"
        block_args.append(f"%{PAGE_TABLE}: {table}")
        names_list.append(PAGE_TABLE)
        pages = f" pages(%{PAGE_TABLE} : {table})"
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
    names = ""
    if names_list:
        names = " attributes {arg_names = [" + ", ".join(
            f'"{n}"' for n in names_list) + "]}"
    lines = ["module {",
             f"  attn.kernel @{name} arch(#attn.arch<{arch}>){names} {{",
             f"  ^bb0({', '.join(block_args)}):"]
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
    lines += ["  }", "}", ""]
    return "\n".join(lines), extras


def _clamp(x, min=None, max=None):  # noqa: A002 - torch's names
    if min is not None:
        x = maximum(x, min)
    if max is not None:
        x = minimum(x, max)
    return x


def _sigmoid(x):
    return 1.0 / (1.0 + exp(-to_float(x)))


def _relu(x, inplace=False):
    return maximum(x, 0)  # 0 takes x's type


# torch functions a hook may call on hook values, by __name__.
_TORCH_FUNCTIONS = {
    "tanh": lambda x: tanh(x), "exp": lambda x: exp(x),
    "exp2": lambda x: exp2(x), "log": lambda x: log(x),
    "log2": lambda x: log2(x), "sqrt": lambda x: sqrt(x),
    "rsqrt": lambda x: rsqrt(x), "abs": lambda x: abs(x),
    "erf": lambda x: erf(x), "sin": lambda x: sin(x), "cos": lambda x: cos(x),
    "floor": lambda x: floor(x), "ceil": lambda x: ceil(x),
    "pow": lambda x, y: pow(x, y), "minimum": lambda x, y: minimum(x, y),
    "maximum": lambda x, y: maximum(x, y),
    "where": lambda c, a, b: where(c, a, b), "clamp": _clamp,
    "sigmoid": _sigmoid, "relu": _relu,
}


def read_captures(functions, extras, bindings=None):
    """The current values of the extra arguments `extras` (kernel_ir's list)
    as the hook `functions` capture them now (a closure cell or a global may
    have been rebound since tracing; a Scalar's value may have changed), or
    as this call binds them (`bindings`: captured name -> value, what the
    package's own hooks read, per call and never through a module global):
    {argument name: tensor or number}."""
    bindings = bindings or {}
    values = {}
    for name, kind, traced, variable in extras:
        value = bindings.get(variable, _NOT_CAPTURED)
        for fn in functions:
            if value is not _NOT_CAPTURED:
                break
            if fn is not None:
                value = _captured(fn, variable)
        if value is _NOT_CAPTURED:
            value = traced
        if isinstance(value, Scalar):
            value = value.value
        values[name] = value
    return values


# What a hook's trace depends on, for the in-memory kernel memo of
# flashtile.attention: the traced IR is decided by each hook's code and by
# the values tracing reads (closure cells, the globals it names, defaults),
# recursively through the Python functions it calls. trace_guard digests
# those values; where one is of a kind it cannot vouch for (an arbitrary
# object whose attributes the hook may read), there is no guard and the
# caller traces again and keys by the IR. This is the rule FlexAttention
# gets from Dynamo's guards: a changed closure constant is a new kernel.
_PLAIN = (type(None), bool, int, float, complex, str, bytes)
_STABLE_MODULES = ("flashtile", "torch", "math", "builtins", "operator")


class _Unguardable(Exception):
    pass


@functools.lru_cache(maxsize=None)
def _code_names(code):
    """The global and attribute names `code` and the code nested in it
    (lambdas, inner functions) read, sorted (code is immutable, so per call
    this is a lookup)."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names.update(_code_names(const))
    return tuple(sorted(names))


def _guard_value(value, names, state, depth):
    if isinstance(value, _PLAIN):
        return (type(value).__name__, value)
    if isinstance(value, Scalar):  # a run-time argument: its kind and name
        return ("scalar", value.name, isinstance(value.value, int))
    if _is_tensor(value):
        # Read at each call: only its dtype and rank enter the IR, and which
        # captures are one tensor (one argument).
        first = state.setdefault(id(value), len(state))
        return ("tensor", tensor_dtype(value), len(value.shape), first)
    if isinstance(value, TensorSpec):
        return ("tensor", value.dtype, len(value.shape), None)
    if depth > 6:
        raise _Unguardable
    if isinstance(value, types.FunctionType):
        module = getattr(value, "__module__", "") or ""
        if module.split(".")[0] in _STABLE_MODULES:
            return value
        return ("fn", _guard_function(value, state, depth + 1))
    if isinstance(value, types.ModuleType):
        if value.__name__.split(".")[0] in _STABLE_MODULES:
            return value
        return ("module", value.__name__, tuple(
            (n, _guard_value(getattr(value, n), names, state, depth + 1))
            for n in names if hasattr(value, n)))
    if isinstance(value, (types.BuiltinFunctionType, type)):
        return value
    if isinstance(value, (tuple, list)):
        return (type(value).__name__, tuple(
            _guard_value(v, names, state, depth + 1) for v in value))
    if isinstance(value, dict) and all(isinstance(k, _PLAIN) for k in value):
        return ("dict", tuple(sorted(
            (repr(k), _guard_value(v, names, state, depth + 1))
            for k, v in value.items())))
    raise _Unguardable


def _guard_function(fn, state, depth):
    code = fn.__code__
    names = _code_names(code)
    cells = []
    for cell in fn.__closure__ or ():
        try:
            cells.append(_guard_value(cell.cell_contents, names, state,
                                      depth))
        except ValueError:  # an empty cell
            cells.append(("empty",))
    globals_ = tuple((n, _guard_value(fn.__globals__[n], names, state, depth))
                     for n in names if n in fn.__globals__)
    defaults = _guard_value(fn.__defaults__, names, state, depth)
    kwdefaults = _guard_value(fn.__kwdefaults__, names, state, depth)
    return (code, tuple(cells), globals_, defaults, kwdefaults)


def trace_guard(functions, bindings=None):
    """A hashable digest of everything tracing the hook `functions` (None
    entries allowed) with `bindings` (captured name -> value) reads, equal
    for two calls exactly when their traces are; None when a hook reads a
    value of a kind the digest cannot vouch for."""
    state = {}
    try:
        hooks = tuple(None if fn is None else
                      _guard_function(fn, state, 0) if
                      isinstance(fn, types.FunctionType) else ("other", fn)
                      for fn in functions)
        bound = tuple(sorted((name, _guard_value(value, (), state, 0))
                             for name, value in (bindings or {}).items()))
        guard = (hooks, bound)
        hash(guard)
    except (_Unguardable, TypeError):
        return None
    return guard
