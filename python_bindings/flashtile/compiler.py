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

import hashlib
import json
import os
import re
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


class KernelRequest:
    """What a kernel is compiled from: traced IR, chip, ISA and pins."""

    __slots__ = ("ir", "extras", "arch", "isa", "pins", "description",
                 "manifest_entry")

    def __init__(self, head_dim, dtype="bf16", head_dim_v=None, causal=False,
                 window=None, scale=None, score_mod=None, mask_mod=None,
                 arch="sm_120", isa=None, tile_m=None, tile_n=None,
                 stages=None, warps=None, q_in_regs=None,
                 name=DEFAULT_NAME, captures=None, sink=None,
                 family="prefill", kv_warps=None, paged=False):
        if not isinstance(head_dim, int) or isinstance(head_dim, bool):
            raise FlashTileError(f"head_dim must be an int, got {head_dim!r}")
        if family not in ("prefill", "decode"):
            raise FlashTileError(
                f"family must be 'prefill' or 'decode', got {family!r}")
        self.ir, self.extras = _hooks.kernel_ir(
            name, head_dim, dtype=dtype, head_dim_v=head_dim_v,
            causal=causal, window=window, scale=scale, score_mod=score_mod,
            mask_mod=mask_mod, arch=arch, captures=captures, sink=sink,
            paged=paged)
        self.arch = arch
        self.isa = isa
        # The prefill family is the default and stays out of the pins (and
        # so out of the cache key of every prefill kernel).
        self.pins = {k: v for k, v in (("tile_m", tile_m), ("tile_n", tile_n),
                                       ("stages", stages), ("warps", warps),
                                       ("q_in_regs", q_in_regs),
                                       ("kv_warps", kv_warps),
                                       ("family", None if family == "prefill"
                                        else family))
                     if v is not None}
        # What `python -m flashtile prebuild` takes to build this kernel.
        # Every field that enters the traced IR (and so the cache key): an
        # entry prebuilt from it has this request's key.
        entry = {"head_dim": head_dim, "dtype": dtype, "causal": bool(causal)}
        if name != DEFAULT_NAME:
            entry["name"] = name
        if scale is not None:
            entry["scale"] = float(scale)
        if head_dim_v is not None:
            entry["head_dim_v"] = head_dim_v
        if window is not None:
            entry["window"] = list(window)
        if paged:
            entry["paged"] = True
        for kind, fn in (("score_mod", score_mod), ("mask_mod", mask_mod),
                         ("sink", sink)):
            if fn is not None:
                # The package's own hooks (flashtile.varlen's, decode's)
                # as module:function, any other by name in its file.
                module = getattr(fn, "__module__", "") or ""
                if module.startswith("flashtile."):
                    entry[kind] = f"{module}:{fn.__name__}"
                else:
                    entry[kind] = fn.__name__
                    entry.setdefault("hooks", fn.__code__.co_filename)
        entry.update(arch=arch, isa=isa, **self.pins)
        tensors = {e[3]: [_hooks.tensor_dtype(e[2]), len(e[2].shape)]
                   for e in self.extras if e[1] == "tensor"}
        if tensors:
            entry["captures"] = tensors
        self.manifest_entry = entry
        hooks = ", ".join(f"{kind}={fn.__name__}" for kind, fn in
                          (("score_mod", score_mod), ("mask_mod", mask_mod),
                           ("sink", sink))
                          if fn is not None)
        self.description = (f"{dtype} d={head_dim}"
                            f"{'/' + str(head_dim_v) if head_dim_v else ''}"
                            f"{' causal' if causal else ''}"
                            f"{f' window={tuple(window)}' if window else ''}"
                            f"{' paged KV' if paged else ''}"
                            f"{' ' + hooks if hooks else ''}"
                            f"{' (decode family)' if family == 'decode' else ''}"
                            f" for {arch}"
                            f"{f' (isa {isa})' if isa else ''}")


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
    (`metadata`), resource report, and the extra arguments its hooks
    captured (hooks.kernel_ir's list)."""

    def __init__(self, key, path, extras):
        self.key = key
        self.path = path
        self.extras = extras
        self._kernel = None

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
            return CompiledKernel(key, path, request.extras)
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
                          request.extras)


def compile(head_dim, dtype="bf16", *, head_dim_v=None, causal=False,
            window=None, scale=None, score_mod=None, mask_mod=None,
            arch="sm_120", isa=None, tile_m=None, tile_n=None, stages=None,
            warps=None, q_in_regs=None, name=DEFAULT_NAME,
            cache=None, verbose=None, sink=None, family="prefill",
            kv_warps=None, paged=False):
    """Compiles (or finds in the cache) the attention kernel with these
    hooks. `isa="sm_90"` builds the `arch` configuration for an H200; the
    tile parameters pin the configuration; `sink(b, h)` gives an attention
    sink's logit. `family="decode"` builds the decode family: a 16-row tile
    of packed GQA rows with KV warps, and split-KV with a combine kernel,
    for decode steps and short queries. `paged=True`: K and V are page
    pools (num_pages, page_size, Hkv, D), and the kernel takes an int32
    (B, max_pages) `block_table` argument that lists each sequence's pages
    (vLLM's layout; any page size). Returns a CompiledKernel."""
    request = KernelRequest(head_dim, dtype, head_dim_v, causal, window,
                            scale, score_mod, mask_mod, arch, isa, tile_m,
                            tile_n, stages, warps, q_in_regs, name, sink=sink,
                            family=family, kv_warps=kv_warps, paged=paged)
    return compile_request(request, cache=cache, verbose=verbose)
