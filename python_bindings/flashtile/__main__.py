"""python -m flashtile prebuild MANIFEST [--cache DIR]

Fills a kernel cache from a manifest, on a machine with the compiler, for a
machine without one (the shapes of the calls do not matter: one kernel
serves every shape). MANIFEST is JSON:

    {"hooks": "my_hooks.py",              # Python file defining the hooks
     "kernels": [
       {"head_dim": 128, "dtype": "bf16", "causal": true,
        "score_mod": "softcap", "mask_mod": null,
        "window": null, "head_dim_v": null, "scale": null,
        "arch": "sm_120", "isa": "sm_90",
        "captures": {"SLOPES": ["float32", 1]}}]}

A tile program (flashtile.tile) is an entry with "tile_program" naming its
function, head_dim, dtype, and its config (tile_m, tile_n, stages, warps,
q_in_regs) where not the default: what TileRequest.manifest_entry, and a
runtime-only cache miss, print.

`hooks` is relative to the manifest (a kernel may name its own `hooks`
file, as the error of a runtime-only cache miss prints it); `score_mod` /
`mask_mod` name its functions; `captures` gives (dtype, rank) for each tensor a hook captures
that is not set when the file is imported. Each kernel's key is printed; a
call with the same hooks, dtype, head dims, mask and arch hits the cache.
"""

import argparse
import importlib.util
import json
import dataclasses
import os
import sys

from . import FlashTileError
from . import compiler
from .hooks import TensorSpec

# A kernel entry's fields: KernelSpec's (the schema), the hooks file, or a
# tile program's (TileRequest.manifest_entry).
_FIELDS = ({f.name for f in dataclasses.fields(compiler.KernelSpec)}
           | {"hooks", "tile_program"})


def _load_hooks(path):
    spec = importlib.util.spec_from_file_location(
        "_flashtile_prebuild_hooks", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def prebuild(manifest_path, cache=None, out=sys.stdout):
    with open(manifest_path) as f:
        manifest = json.load(f)
    folder = os.path.dirname(os.path.abspath(manifest_path))
    modules = {}

    def hooks_module(path):
        """A hooks file next to the manifest ("hooks.py"), or an importable
        module by name ("flashtile._varlen")."""
        if not path:
            return None
        if not path.endswith(".py"):
            if path not in modules:
                try:
                    modules[path] = importlib.import_module(path)
                except ImportError as e:
                    raise FlashTileError(
                        f"{manifest_path}: hooks module {path!r} cannot be "
                        f"imported: {e}") from None
            return modules[path]
        path = os.path.join(folder, path)
        if path not in modules:
            modules[path] = _load_hooks(path)
        return modules[path]
    keys = []
    for i, entry in enumerate(manifest.get("kernels", [])):
        where = f"{manifest_path}: kernels[{i}]"
        unknown = set(entry) - _FIELDS
        if unknown:
            raise FlashTileError(f"{where}: unknown field(s) "
                                 f"{', '.join(sorted(unknown))}")
        module = hooks_module(entry.get("hooks") or manifest.get("hooks"))
        captures = {name: TensorSpec(*spec)
                    for name, spec in (entry.get("captures") or {}).items()}
        if "tile_program" in entry:
            request = _tile_request(entry, module, hooks_module, captures,
                                    where, manifest)
        else:
            request = _kernel_request(entry, module, hooks_module, captures,
                                      where, manifest)
        kernel = compiler.compile_request(request, cache=cache)
        print(f"{kernel.key}  {request.description}", file=out)
        keys.append(kernel.key)
    return keys


def _kernel_request(entry, module, hooks_module, captures, where, manifest):
    """The request of a manifest entry of an attention kernel (the entry
    KernelSpec.manifest_entry writes)."""
    hooks = {}
    for kind in compiler.KernelSpec.HOOKS:
        name = entry.get(kind)
        if name is None:
            continue
        # "module:function" names a function of an importable module
        # (the package's own hooks: "flashtile._varlen:causal_mask").
        hooks[kind] = _function(name, module, hooks_module,
                                entry.get("hooks") or manifest.get("hooks"),
                                where, kind)
    return compiler.KernelRequest.from_spec(
        compiler.KernelSpec.from_manifest(entry, hooks, captures))


def _function(name, module, hooks_module, source, where, kind):
    """The function `name` of the hooks file `module`, or of an importable
    module with "module:function"."""
    owner = module
    if ":" in name:
        source, name = name.split(":", 1)
        owner = hooks_module(source)
    fn = getattr(owner, name, None) if owner else None
    if fn is None:
        raise FlashTileError(f"{where}: {kind} {name!r} is not defined in "
                             f"{source}")
    return fn


def _tile_request(entry, module, hooks_module, captures, where, manifest):
    """The request of a manifest entry naming a tile program (the entry
    TileRequest.manifest_entry prints)."""
    from .tile import TileRequest
    unknown = set(entry) - set(TileRequest.FIELDS) - {
        "tile_program", "hooks", "captures"}
    if unknown:
        raise FlashTileError(f"{where}: field(s) {', '.join(sorted(unknown))} "
                             f"do not apply to a tile program (it states "
                             f"its config)")
    if "head_dim" not in entry:
        raise FlashTileError(f"{where}: a tile program needs head_dim")
    program = _function(entry["tile_program"], module, hooks_module,
                        entry.get("hooks") or manifest.get("hooks"), where,
                        "tile_program")
    options = {k: entry.get(k, default)
               for k, default in TileRequest.FIELDS.items()}
    head_dim = options.pop("head_dim")
    dtype = options.pop("dtype")
    return TileRequest(program, head_dim, dtype, captures=captures or None,
                       **options)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m flashtile")
    sub = parser.add_subparsers(dest="command", required=True)
    pre = sub.add_parser("prebuild", help="fill a kernel cache from a manifest")
    pre.add_argument("manifest")
    pre.add_argument("--cache", help="the cache folder (default: "
                     "$FLASHTILE_CACHE_DIR or ~/.cache/flashtile)")
    args = parser.parse_args(argv)
    try:
        prebuild(args.manifest, args.cache)
    except (FlashTileError, OSError, ValueError, KeyError) as e:
        print(f"flashtile prebuild: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
