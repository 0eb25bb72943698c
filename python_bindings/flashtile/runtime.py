"""Run FlashTile kernels from PyTorch.

    from flashtile import runtime
    kernel = runtime.load("kernels/flash_fwd_bf16_d128_causal.plan.json")
    # q: (B, Sq, Hq, D), k: (B, Sk, Hkv, D), v: (B, Sk, Hkv, Dv); any strides
    # the plan allows, e.g. a (B, H, S, D) tensor's .transpose(1, 2)
    o, lse = kernel(q, k, v)                     # outputs allocated
    kernel(q, k, v, o=o, lse=lse, softmax_scale=0.1)  # outputs given

Arguments follow the plan's order (``kernel.arguments``) and may be given by
position or by name; scalars with a default and outputs may be left out
(outputs are then allocated with ``torch.empty``). The kernel runs on torch's
current stream of the tensors' device and the call returns the outputs: a
tuple when there are several (``(o, lse)``), else the one output.

Everything is checked before anything is launched, without reading device
memory (so calls can be captured in CUDA graphs); a bad argument raises
:class:`flashtile.FlashTileError` naming it and the numbers involved. The
work is done by the C++ runtime (``flashtile._runtime``); this module only
supplies torch's stream and allocator. Tensors may be any objects with
``data_ptr()``, ``shape``, ``stride()``, ``dtype`` and ``device``.
"""

import json
import os

from . import FlashTileError

try:
    from . import _runtime
except ImportError as e:  # pragma: no cover - depends on the build
    raise ImportError(
        "flashtile._runtime (the C++ extension) is not built or not on the "
        "path: build the project (cmake -DFLASHTILE_RUNTIME_ONLY=ON) and put "
        "<build>/python_bindings on PYTHONPATH") from e

__all__ = ["FlashTileError", "Kernel", "Prepared", "load", "parse_plan",
           "driver_available"]

# torch's dtype for each plan dtype name (the names are the plan format's,
# plan::stringifyDType).
_TORCH_DTYPES = {"f16": "float16", "bf16": "bfloat16", "f32": "float32",
                 "i32": "int32", "i64": "int64", "s8": "int8",
                 "e4m3": "float8_e4m3fn", "e5m2": "float8_e5m2"}


def torch_dtype_name(name):
    """torch's name ("bfloat16") of the plan dtype `name` ("bf16")."""
    return _TORCH_DTYPES[name]

# (stream(device) -> int, allocate(shape, dtype, device, like) -> tensor), made on
# the first launch (importing torch then, not at import time).
_hooks = None


def _torch_hooks():
    global _hooks
    import torch

    raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if raw_stream is None:
        def raw_stream(device):
            return torch.cuda.current_stream(device).cuda_stream
    dtypes = {k: getattr(torch, v) for k, v in _TORCH_DTYPES.items()}
    empty = torch.empty
    tensor_type = torch.Tensor

    def allocate(shape, dtype, device, like):
        # new_empty inherits the device without parsing one: the cheaper call.
        if type(like) is tensor_type:
            return like.new_empty(shape, dtype=dtypes[dtype])
        return empty(shape, dtype=dtypes[dtype], device=device)

    _hooks = (raw_stream, allocate)
    return _hooks


def parse_plan(text):
    """Validates a plan's JSON text and returns it as a dict."""
    return json.loads(_runtime.parse_plan(text))


def driver_available():
    """(True, "") when the CUDA driver loads, else (False, the reason)."""
    return _runtime.driver_available()


class Kernel:
    """A compiled kernel family: its launch plan and cubins."""

    __slots__ = ("_impl", "_call", "_plan")

    def __init__(self, path):
        self._impl = _runtime.Kernel(os.fspath(path))
        self._call = self._impl.call
        self._plan = None

    def __call__(self, *args, **kwargs):
        """Checks the arguments and launches on torch's current stream."""
        return self._call(args, kwargs, _hooks or _torch_hooks())

    def launch(self, *args, stream=None, sizes=None, **kwargs):
        """Like calling the kernel, on `stream` (a torch.cuda.Stream, a raw
        CUstream as int, or None for torch's current stream). `sizes` fixes
        derived sizes of the plan, e.g. {"kv_splits": 8} for a split-KV
        kernel: its grid and workspaces then depend only on the shapes, so
        one CUDA-graph capture serves every length the shapes allow."""
        if stream is not None and not isinstance(stream, int):
            stream = stream.cuda_stream
        return self._call(args, kwargs, _hooks or _torch_hooks(), stream,
                          [], [], False, dict(sizes or {}))

    def prepare(self, *args, **kwargs):
        """Runs only the kernels that fill reusable workspaces (a run-time
        block mask, a diagonal table) for these arguments, into buffers it
        allocates, and returns a Prepared. Calling the Prepared like the
        kernel launches without those kernels: for calls with the same sizes
        and the same values of what they read (the mask's or the bias's
        tensors), such as every layer of a model over one batch."""
        hooks = _hooks or _torch_hooks()
        allocate = hooks[1]
        like = next((a for a in list(args) + list(kwargs.values())
                     if hasattr(a, "data_ptr")), None)
        device = like.get_device() if like is not None else 0
        # The writers need no outputs, but the checks do: scratch ones.
        positions = {a["name"]: i for i, a in
                     enumerate(self.plan["arguments"])}
        for name, shape, dtype in self.output_shapes(*args, **kwargs):
            if name not in kwargs and positions[name] >= len(args):
                kwargs[name] = allocate(tuple(shape), dtype, device, like)
        buffers, pointers, filled = {}, [], []
        for name, nbytes, written in self._impl.workspaces(args, kwargs):
            if written and nbytes > 0:
                # i32 elements: torch's allocations are 512-byte aligned.
                buffer = allocate(((nbytes + 3) // 4,), "i32", device, like)
                buffers[name] = buffer
                pointers.append(buffer.data_ptr())
                filled.append(name)
            else:
                pointers.append(0)
        self._call(args, kwargs, hooks, None, pointers, [], True)
        return Prepared(self, buffers, pointers, filled)

    def check(self, *args, **kwargs):
        """Checks arguments (outputs included) without launching."""
        self._impl.check(args, kwargs)

    def output_shapes(self, *args, **kwargs):
        """[(name, shape, dtype)] of the outputs for the given inputs."""
        return self._impl.output_shapes(args, kwargs)

    def pack_params(self, kernel, *args, workspaces=(), **kwargs):
        """The 8-byte parameter slots of kernel number `kernel` (for tests)."""
        return self._impl.pack_params(kernel, args, kwargs, list(workspaces))

    @property
    def path(self):
        return self._impl.path

    @property
    def name(self):
        return self._impl.name

    @property
    def plan(self):
        """The whole plan, as the JSON dict the compiler wrote."""
        if self._plan is None:
            self._plan = json.loads(self._impl.plan_json)
        return self._plan

    @property
    def arguments(self):
        return self.plan["arguments"]

    @property
    def kernels(self):
        return self.plan["kernels"]

    @property
    def info(self):
        """What the kernel computes and how it is tiled (dtype, head dims,
        mask, softmax scale, config...), as the compiler recorded it."""
        return self.plan["info"]

    def __repr__(self):
        args = ", ".join(a["name"] for a in self.arguments)
        return f"<flashtile Kernel {self.name}({args}) from {self.path}>"


def load(path):
    """Loads the plan at `path` and its cubins; no GPU is needed."""
    return Kernel(path)


class Prepared:
    """A kernel with its reusable workspaces filled (Kernel.prepare)."""

    __slots__ = ("kernel", "buffers", "_pointers", "_filled")

    def __init__(self, kernel, buffers, pointers, filled):
        self.kernel = kernel
        self.buffers = buffers
        self._pointers = pointers
        self._filled = filled

    def __call__(self, *args, **kwargs):
        """Launches on torch's current stream, reusing the filled workspaces."""
        return self.kernel._call(args, kwargs, _hooks or _torch_hooks(), None,
                                 self._pointers, self._filled, False)
