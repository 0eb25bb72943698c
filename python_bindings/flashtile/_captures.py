"""What hooks capture (part of flashtile.hooks): the tensors and
flashtile.scalar values a hook reads become kernel arguments. This module
owns how a capture is read while tracing (a table read, a scalar), how it
is found again at each call (read_captures: the closure cell or global as
it is now, or the call's own bindings), and trace_guard, which decides when
a hook's trace can be reused."""

import functools
import types
from ._tracer import (Scalar, Value, _AsValue, _F32, _I32, _INDEX, _fail,
                      _is_tensor, _lift, _region, scalar)


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
