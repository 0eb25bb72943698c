"""Tracing hooks: the symbolic values a hook computes with, recorded as
`attn` IR text, one region per hook (part of flashtile.hooks, the public
face). This module owns the values and their typing rule (torch's: an index
meeting a float, or `/` between indices, gives a float), the functions hooks
call (flashtile.tanh, where, the sizes, torch's functions on hook values),
and where errors point: the user's line, never the package's."""

import builtins
import math
import operator
import traceback

from . import FlashTileError

__all__ = ["scalar", "where", "tanh", "exp", "exp2", "log", "log2", "sqrt", "rsqrt", "abs", "erf", "sin", "cos", "floor", "ceil", "pow", "minimum", "maximum", "to_float", "to_index", "seqlen_q", "seqlen_k", "heads_q", "heads_kv", "batch_size", "Scalar"]

_F32, _INDEX, _I1, _I32 = "f32", "index", "i1", "i32"


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


def _user_location(frames=None):
    """(file, line) of the innermost frame outside this package and torch,
    or None."""
    frame = _user_frame_summary(frames)
    return (frame.filename, frame.lineno) if frame else None


def _format_location(location):
    """How every located message names a place: "file:line"."""
    return f"{location[0]}:{location[1]}" if location else "<unknown>"


def _user_frame(frames=None):
    """file:line of the innermost frame outside this package and torch."""
    return _format_location(_user_location(frames))


def _located(location, message):
    """A FlashTileError at `location` ((file, line) or None): the one form of
    the package's located errors, "file:line: message"."""
    return FlashTileError(f"{_format_location(location)}: {message}")


def _fail(message):
    raise _located(_user_location(), message)


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
    if isinstance(x, _AsValue):
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
              "floordiv": "floordivsi"}


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
    if op == "mod":  # Python's and torch's: the sign of the divisor
        return _arith("sub", a, _arith("mul", _arith("floordiv", a, b), b))
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
    if not isinstance(x, (Value, _AsValue)) and not _current:
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


def _is_tensor(x):
    return (hasattr(x, "data_ptr") and hasattr(x, "dtype")
            and hasattr(x, "shape") and not isinstance(x, type))


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
