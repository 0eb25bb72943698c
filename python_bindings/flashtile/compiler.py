"""flashtile.compile: attention kernels from Python, through an on-disk cache.

    kernel = flashtile.compile(head_dim=128, dtype="bf16", causal=True,
                               score_mod=softcap, arch="sm_120")
    kernel.ptx, kernel.cubin, kernel.metadata, kernel.report, kernel.asm()

The hooks are traced in pure Python (flashtile.hooks) into kernel-level IR;
the compiler (the flashtile._compiler extension over lib/Compiler) turns it
into PTX, a cubin and a launch plan. Results are cached under
$FLASHTILE_CACHE_DIR (default ~/.cache/flashtile), one folder per key:

* The key is a SHA-256, computed in pure Python, over the traced IR, the
  chip, the ISA, pinned tile parameters, FlashTile's version and build ID
  (a digest of the compiler's sources, flashtile/_build.py) and the ptxas
  version. A runtime-only installation computes the same key, so a cache
  filled on a build machine serves a GPU machine without a compiler.
* An entry is written to a temporary folder and renamed into place, so a
  reader never sees half of one; its manifest holds each file's SHA-256,
  and an entry that does not match is reported, removed and rebuilt.
"""

import dataclasses
import hashlib
import json
import os
import re
import typing
import shutil
import subprocess
import sys
import tempfile
import threading

from . import FlashTileError
from . import hooks as _hooks

try:
    from . import _build
except ImportError:  # pragma: no cover - an unbuilt source tree
    _build = None

__all__ = ["compile", "CompiledKernel", "cache_dir", "cache_key",
           "ptxas_version", "KernelRequest"]

# Bumped when the cache layout or what the key covers changes.
_CACHE_FORMAT = 1
_PLAN = "kernel.plan.json"
_CUBIN = "kernel.cubin"
_PTX = "kernel.ptx"
_REPORT = "report.txt"
_MANIFEST = "entry.json"
_TOOLCHAIN = "toolchain.json"
# The kernel name of a request that names none.
DEFAULT_NAME = "flashtile_attention"


def _compiler_module():
    try:
        from . import _compiler
    except ImportError:
        return None
    return _compiler


def cache_dir():
    """$FLASHTILE_CACHE_DIR, else ~/.cache/flashtile."""
    return os.environ.get("FLASHTILE_CACHE_DIR") or os.path.join(
        os.path.expanduser("~"), ".cache", "flashtile")


_ptxas_versions = {}


def ptxas_version(cache=None):
    """The version of the ptxas kernels are assembled with ("V13.0.88"):
    $FLASHTILE_PTXAS_VERSION, else the local ptxas when this installation
    compiles, else the one the cache recorded (a runtime-only installation
    uses the cache a build machine filled)."""
    if os.environ.get("FLASHTILE_PTXAS_VERSION"):
        return os.environ["FLASHTILE_PTXAS_VERSION"]
    compiler = _compiler_module()
    if compiler is not None:
        path = compiler.find_ptxas()
        if path not in _ptxas_versions:
            out = subprocess.run([path, "--version"], capture_output=True,
                                 text=True, check=False).stdout
            version = next((w.strip(",") for line in out.splitlines()
                            for w in line.split() if w.startswith("V")), None)
            if version is None:
                raise FlashTileError(f"cannot read the version of {path}: "
                                     f"{out.strip()!r}")
            _ptxas_versions[path] = version
        return _ptxas_versions[path]
    recorded = os.path.join(cache or cache_dir(), _TOOLCHAIN)
    try:
        with open(recorded) as f:
            return json.load(f)["ptxas"]
    except (OSError, ValueError, KeyError):
        raise FlashTileError(
            f"this installation has no compiler and the kernel cache at "
            f"{cache or cache_dir()} records no ptxas version ({_TOOLCHAIN}): "
            f"fill it with `python -m flashtile prebuild MANIFEST` where the "
            f"compiler is installed, or set FLASHTILE_PTXAS_VERSION") from None


@dataclasses.dataclass(frozen=True)
class KernelSpec:
    """Everything an attention kernel is compiled from, and nothing else:
    each field enters its traced IR or its pins, so its cache key. This is
    the schema of a prebuild manifest's kernel entry (`python -m flashtile
    prebuild`): manifest_entry() writes one, from_manifest() reads one."""

    head_dim: int
    dtype: str = "bf16"
    head_dim_v: typing.Optional[int] = None
    causal: bool = False
    window: typing.Optional[tuple] = None
    scale: typing.Optional[float] = None
    score_mod: typing.Optional[typing.Callable] = None
    mask_mod: typing.Optional[typing.Callable] = None
    arch: str = "sm_120"
    isa: typing.Optional[str] = None
    tile_m: typing.Optional[int] = None
    tile_n: typing.Optional[int] = None
    stages: typing.Optional[int] = None
    warps: typing.Optional[int] = None
    q_in_regs: typing.Optional[bool] = None
    name: str = DEFAULT_NAME
    captures: typing.Optional[dict] = None
    sink: typing.Optional[typing.Callable] = None
    family: str = "prefill"
    kv_warps: typing.Optional[int] = None
    paged: bool = False
    # "bwd": the backward family of the attention (dQ, dK, dV from O, the
    # LSE and dO), one plan of three kernels.
    direction: str = "fwd"
    # With direction="bwd": dQ by a kernel of its own, without atomics.
    deterministic: bool = False
    # With direction="bwd": the captured tensors (by name) whose gradients
    # the family adds into <name>_grad arguments (f32, zero them first).
    tensor_grads: tuple = ()

    # The hook fields: functions in the spec, names in a manifest.
    HOOKS = ("score_mod", "mask_mod", "sink")
    # Written whatever their value; the others only where not the default.
    ALWAYS = ("head_dim", "dtype", "causal")

    def pins(self):
        """The config pins (and the decode family) of the cache key; the
        prefill family is the default and stays out of them (and so out of
        the cache key of every prefill kernel)."""
        family = None if self.family == "prefill" else self.family
        direction = None if self.direction == "fwd" else self.direction
        return {k: v for k, v in (("tile_m", self.tile_m),
                                  ("tile_n", self.tile_n),
                                  ("stages", self.stages),
                                  ("warps", self.warps),
                                  ("q_in_regs", self.q_in_regs),
                                  ("kv_warps", self.kv_warps),
                                  ("family", family),
                                  ("direction", direction),
                                  ("deterministic",
                                   True if self.deterministic else None),
                                  ("tensor_grads",
                                   list(self.tensor_grads) or None))
                if v is not None}

    def manifest_entry(self, extras):
        """The manifest entry that builds this kernel: every field but the
        defaults (the hooks by name, the captures by the dtype and rank
        `extras`, kernel_ir's list, traced them at), then arch, isa and
        the pins."""
        entry = {}
        pinned = set(self.pins()) | {"tile_m", "tile_n", "stages", "warps",
                                     "q_in_regs", "kv_warps", "family",
                                     "direction", "deterministic",
                                     "tensor_grads"}
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if field.name in pinned or field.name in ("arch", "isa",
                                                      "captures"):
                continue
            if field.name in self.HOOKS:
                if value is None:
                    continue
                # The package's own hooks (flashtile.varlen's, decode's)
                # as module:function, any other by name in its file.
                module = getattr(value, "__module__", "") or ""
                if module.startswith("flashtile."):
                    entry[field.name] = f"{module}:{value.__name__}"
                else:
                    entry[field.name] = value.__name__
                    entry.setdefault("hooks", value.__code__.co_filename)
                continue
            if field.name not in self.ALWAYS and value == field.default:
                continue
            if field.name == "causal" or field.name == "paged":
                value = bool(value)
            elif field.name == "scale":
                value = float(value)
            elif field.name == "window":
                value = list(value)
            entry[field.name] = value
        entry.update(arch=self.arch, isa=self.isa, **self.pins())
        tensors = {e[3]: [_hooks.tensor_dtype(e[2]), len(e[2].shape)]
                   for e in extras if e[1] == "tensor"}
        if tensors:
            entry["captures"] = tensors
        return entry

    @classmethod
    def from_manifest(cls, entry, hooks, captures):
        """The spec of a manifest entry, its hook names resolved to the
        functions `hooks` maps them to and its captures to `captures`
        (TensorSpec stand-ins)."""
        fields = {f.name for f in dataclasses.fields(cls)}
        values = {k: v for k, v in entry.items()
                  if k in fields and k not in cls.HOOKS and k != "captures"}
        if values.get("window"):
            values["window"] = tuple(values["window"])
        if "causal" in values:
            values["causal"] = bool(values["causal"])
        for flag in ("paged", "deterministic"):
            if flag in values:
                values[flag] = bool(values[flag])
        if "tensor_grads" in values:
            values["tensor_grads"] = tuple(values["tensor_grads"])
        return cls(**values, **hooks, captures=captures)

    def description(self):
        hooks = ", ".join(f"{kind}={getattr(self, kind).__name__}"
                          for kind in self.HOOKS
                          if getattr(self, kind) is not None)
        d, dv, window = self.head_dim, self.head_dim_v, self.window
        return (f"{self.dtype} d={d}"
                f"{'/' + str(dv) if dv else ''}"
                f"{' causal' if self.causal else ''}"
                f"{f' window={tuple(window)}' if window else ''}"
                f"{' paged KV' if self.paged else ''}"
                f"{' ' + hooks if hooks else ''}"
                f"{' (decode family)' if self.family == 'decode' else ''}"
                f"{' backward' if self.direction == 'bwd' else ''}"
                f"{' (deterministic)' if self.deterministic else ''}"
                f"{' with the gradients of ' + ', '.join(self.tensor_grads) if self.tensor_grads else ''}"
                f" for {self.arch}"
                f"{f' (isa {self.isa})' if self.isa else ''}")


class KernelRequest:
    """What a kernel is compiled from: its spec (KernelSpec) traced into IR,
    with its chip, ISA and pins."""

    __slots__ = ("spec", "ir", "extras", "arch", "isa", "pins",
                 "description", "manifest_entry")

    def __init__(self, *args, **kwargs):
        self._build(KernelSpec(*args, **kwargs))

    @classmethod
    def from_spec(cls, spec):
        request = cls.__new__(cls)
        request._build(spec)
        return request

    def _build(self, spec):
        if not isinstance(spec.head_dim, int) or isinstance(spec.head_dim,
                                                            bool):
            raise FlashTileError(
                f"head_dim must be an int, got {spec.head_dim!r}")
        if spec.family not in ("prefill", "decode"):
            raise FlashTileError(
                f"family must be 'prefill' or 'decode', got {spec.family!r}")
        if spec.direction not in ("fwd", "bwd"):
            raise FlashTileError(
                f"direction must be 'fwd' or 'bwd', got {spec.direction!r}")
        self.spec = spec
        self.ir, self.extras = _hooks.kernel_ir(
            spec.name, spec.head_dim, dtype=spec.dtype,
            head_dim_v=spec.head_dim_v, causal=spec.causal,
            window=spec.window, scale=spec.scale, score_mod=spec.score_mod,
            mask_mod=spec.mask_mod, arch=spec.arch, captures=spec.captures,
            sink=spec.sink, paged=spec.paged)
        self.arch = spec.arch
        self.isa = spec.isa
        self.pins = spec.pins()
        # What `python -m flashtile prebuild` takes to build this kernel:
        # an entry prebuilt from it has this request's key.
        self.manifest_entry = spec.manifest_entry(self.extras)
        self.description = spec.description()


# An MLIR source location a tile program's op carries (the user's file and
# line, for the compiler's errors): not part of what the kernel is, so not
# of its key. The same program from another folder is the same kernel.
_LOCATION = re.compile(r' loc\("(?:[^"\\]|\\.)*":\d+:\d+\)')


def cache_key(request, ptxas=None):
    """The cache key of `request` (pure Python: the same in a runtime-only
    installation)."""
    version = _build.VERSION if _build else "unbuilt"
    build_id = _build.BUILD_ID if _build else "unbuilt"
    fields = {"format": _CACHE_FORMAT, "ir": _LOCATION.sub("", request.ir),
              "arch": request.arch,
              "isa": request.isa or request.arch, "pins": request.pins,
              "version": version, "build_id": build_id,
              "ptxas": ptxas or ptxas_version()}
    text = json.dumps(fields, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def _sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


class CompiledKernel:
    """One compiled kernel family in the cache: PTX, cubin, launch plan
    (`metadata`), resource report, the extra arguments its hooks captured
    (hooks.kernel_ir's list), and the KernelSpec it was compiled from."""

    def __init__(self, key, path, extras, spec=None):
        self.key = key
        self.path = path
        self.extras = extras
        self.spec = spec
        self._kernel = None

    def backward(self, deterministic=False, verbose=None, tensor_grads=()):
        """The CompiledKernel of this attention's backward family (the
        same spec, direction "bwd"; the forward's tile pins and family do
        not apply to it), in the forward's cache; `tensor_grads`: the
        captured tensors (by argument name) whose gradients it adds into
        `<name>_grad` arguments. Raises FlashTileError where the backward
        does not cover the attention, with the compiler's reason."""
        if self.spec is None or self.spec.direction != "fwd":
            raise FlashTileError(
                "backward() needs a forward kernel compiled from a spec "
                "(flashtile.compile or flashtile.attention)")
        spec = dataclasses.replace(
            self.spec, direction="bwd", deterministic=bool(deterministic),
            tensor_grads=tuple(tensor_grads),
            family="prefill", kv_warps=None, tile_m=None, tile_n=None,
            stages=None, warps=None, q_in_regs=None)
        root = os.path.dirname(os.path.dirname(self.path))
        return compile_request(KernelRequest.from_spec(spec), cache=root,
                               verbose=verbose)

    @property
    def name(self):
        return self.metadata["name"]

    @property
    def ptx(self):
        with open(os.path.join(self.path, _PTX)) as f:
            return f.read()

    @property
    def cubin(self):
        with open(os.path.join(self.path, _CUBIN), "rb") as f:
            return f.read()

    @property
    def metadata(self):
        with open(os.path.join(self.path, _PLAN)) as f:
            return json.load(f)

    @property
    def report(self):
        with open(os.path.join(self.path, _REPORT)) as f:
            return f.read()

    @property
    def plan_path(self):
        return os.path.join(self.path, _PLAN)

    def asm(self, kind="sass"):
        """The cubin disassembled by cuobjdump (kind "sass")."""
        if kind != "sass":
            raise FlashTileError(f"asm kind must be 'sass', got {kind!r}")
        tool = shutil.which("cuobjdump") or (
            "/usr/local/cuda/bin/cuobjdump"
            if os.access("/usr/local/cuda/bin/cuobjdump", os.X_OK) else None)
        if tool is None:
            raise FlashTileError("cuobjdump not found (CUDA toolkit)")
        proc = subprocess.run([tool, "-sass", os.path.join(self.path, _CUBIN)],
                              capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise FlashTileError(f"cuobjdump failed: {proc.stderr.strip()}")
        return proc.stdout

    def runtime_kernel(self):
        """The loaded kernel family (flashtile.runtime.Kernel)."""
        if self._kernel is None:
            from . import runtime
            self._kernel = runtime.load(self.plan_path)
        return self._kernel

    def __repr__(self):
        return f"<flashtile.CompiledKernel {self.key[:12]} at {self.path}>"


def _entry_path(root, key):
    return os.path.join(root, key[:2], key)


def _check_entry(path, key):
    """Whether the entry at `path` is whole: its manifest names `key` and
    every file matches its digest. Returns (ok, why not)."""
    try:
        with open(os.path.join(path, _MANIFEST)) as f:
            manifest = json.load(f)
    except (OSError, ValueError) as e:
        return False, f"unreadable manifest ({e})"
    if manifest.get("key") != key:
        return False, "the manifest names another key"
    for name, digest in manifest.get("files", {}).items():
        try:
            if _sha256(os.path.join(path, name)) != digest:
                return False, f"{name} does not match its digest"
        except OSError as e:
            return False, f"{name}: {e.strerror}"
    if set(manifest.get("files", {})) != {_PLAN, _CUBIN, _PTX, _REPORT}:
        return False, "files are missing from the manifest"
    return True, ""


def _write_entry(root, key, result, request):
    """Writes the entry atomically (a temporary folder renamed into place);
    another writer of the same key may win, which is as good."""
    parent = os.path.join(root, key[:2])
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=".tmp-", dir=parent)
    try:
        files = {_PLAN: result["plan"].encode(), _CUBIN: result["cubin"],
                 _PTX: result["ptx"].encode(), _REPORT: result["report"].encode()}
        for name, data in files.items():
            with open(os.path.join(tmp, name), "wb") as f:
                f.write(data)
        manifest = {"key": key, "format": _CACHE_FORMAT,
                    "description": request.description,
                    "files": {n: hashlib.sha256(d).hexdigest()
                              for n, d in files.items()}}
        with open(os.path.join(tmp, _MANIFEST), "w") as f:
            json.dump(manifest, f, indent=1, sort_keys=True)
        final = _entry_path(root, key)
        try:
            os.rename(tmp, final)
        except OSError:
            if not os.path.isdir(final):
                raise
    finally:
        if os.path.isdir(tmp):
            shutil.rmtree(tmp, ignore_errors=True)
    return _entry_path(root, key)


def _record_toolchain(root, ptxas):
    path = os.path.join(root, _TOOLCHAIN)
    try:
        with open(path) as f:
            if json.load(f).get("ptxas") == ptxas:
                return
    except (OSError, ValueError):
        pass
    os.makedirs(root, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=root)
    with os.fdopen(fd, "w") as f:
        json.dump({"ptxas": ptxas}, f)
    os.replace(tmp, path)


def compile_request(request, cache=None, verbose=None):
    """The CompiledKernel of `request`: from the cache, else compiled into
    it. Compiling shows what it does on stderr when it takes more than a
    second (verbose=True: always; False: never)."""
    root = cache or cache_dir()
    compiler = _compiler_module()
    ptxas = ptxas_version(root)
    key = cache_key(request, ptxas)
    path = _entry_path(root, key)
    if os.path.isdir(path):
        ok, why = _check_entry(path, key)
        if ok:
            return CompiledKernel(key, path, request.extras,
                                  getattr(request, "spec", None))
        print(f"flashtile: cache entry {path} is corrupt ({why}); rebuilding",
              file=sys.stderr)
        shutil.rmtree(path, ignore_errors=True)
    if compiler is None:
        raise FlashTileError(
            f"kernel {key} ({request.description}) is not in the cache at "
            f"{root}, and this installation has no compiler (runtime-only). "
            f"Build it where the compiler is installed: python -m flashtile "
            f"prebuild MANIFEST, with this kernel in the manifest's "
            f"\"kernels\": "
            f"{json.dumps(request.manifest_entry)}, and copy the cache.")
    message = f"flashtile: compiling {request.description} (key {key[:12]})"
    timer = None
    if verbose:
        print(message, file=sys.stderr)
    elif verbose is None:
        timer = threading.Timer(1.0, lambda: print(message + " ...",
                                                   file=sys.stderr))
        timer.daemon = True
        timer.start()
    try:
        result = compiler.compile(request.ir, "<traced kernel>",
                                  isa=request.isa, cubin_file=_CUBIN,
                                  **request.pins)
    finally:
        if timer is not None:
            timer.cancel()
    _record_toolchain(root, ptxas)
    return CompiledKernel(key, _write_entry(root, key, result, request),
                          request.extras, getattr(request, "spec", None))


def compile(head_dim, dtype="bf16", *, head_dim_v=None, causal=False,
            window=None, scale=None, score_mod=None, mask_mod=None,
            arch="sm_120", isa=None, tile_m=None, tile_n=None, stages=None,
            warps=None, q_in_regs=None, name=DEFAULT_NAME,
            cache=None, verbose=None, sink=None, family="prefill",
            kv_warps=None, paged=False, direction="fwd",
            deterministic=False, tensor_grads=()):
    """Compiles (or finds in the cache) the attention kernel with these
    hooks. `isa="sm_90"` builds the `arch` configuration for an H200; the
    tile parameters pin the configuration; `sink(b, h)` gives an attention
    sink's logit. `family="decode"` builds the decode family: a 16-row tile
    of packed GQA rows with KV warps, and split-KV with a combine kernel,
    for decode steps and short queries. `paged=True`: K and V are page
    pools (num_pages, page_size, Hkv, D), and the kernel takes an int32
    (B, max_pages) `block_table` argument that lists each sequence's pages
    (vLLM's layout; any page size). `direction="bwd"` builds the
    backward family instead: one plan of three kernels taking q, k, v, o,
    lse (the forward's, natural log), do, the hooks' extra arguments and
    the gradients dq, dk, dv (the tile parameters pin its main kernel);
    `deterministic=True` gives it a dQ kernel of its own instead of f32
    atomics, the same bits every run; `tensor_grads` names captured
    tensors the score_mod reads whose gradients it adds into
    `<name>_grad` arguments. Returns a CompiledKernel."""
    request = KernelRequest(head_dim, dtype, head_dim_v, causal, window,
                            scale, score_mod, mask_mod, arch, isa, tile_m,
                            tile_n, stages, warps, q_in_regs, name, sink=sink,
                            family=family, kv_warps=kv_warps, paged=paged,
                            direction=direction, deterministic=deterministic,
                            tensor_grads=tuple(tensor_grads))
    return compile_request(request, cache=cache, verbose=verbose)
