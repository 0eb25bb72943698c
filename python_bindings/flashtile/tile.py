"""The tile language from Python: the program of one block, traced into
`attn` IR like the hooks (flashtile.hooks), compiled through the cache.

    import flashtile
    from flashtile import tile

    bias = flashtile.scalar(-8.0, name="bias")

    def sigmoid_attention(t):
        qs, ks = t.buffer("Q", 1, t.tile_m, t.head_dim), t.buffer("K", 1, t.tile_n, t.head_dim)
        vs, os_ = t.buffer("V", 1, t.tile_n, t.head_dim_v), t.buffer("O", 1, t.tile_m, t.head_dim_v)
        blk = t.block_context()
        r = t.kv_bounds(blk)
        t.copy(t.q, blk, blk.m_block, qs)
        qf = t.load(qs)
        scale = t.softmax_scale()

        def step(j, acc, masked):
            t.copy(t.k, blk, j, ks)
            s = t.dot(qf, ks, j)
            if masked:
                s = t.mask(s, blk, j)
            p = t.map([s, scale], lambda x, c, row, col:
                      0.5 + 0.5 * flashtile.tanh(x * (0.5 * c) + 0.5 * bias))
            t.copy(t.v, blk, j, vs)
            return [t.dot_accumulate(t.convert(p), vs, j, acc)]

        acc = t.splat([t.tile_m, t.head_dim_v], 0.0)
        acc, = t.loop(r.unmasked_end, r.end, [acc], lambda j, a: step(j, a, True), masked=True)
        acc, = t.loop(r.unmasked_begin, r.unmasked_end, [acc], lambda j, a: step(j, a, False))
        t.store(acc, os_, blk)

    kernel = tile.compile(sigmoid_attention, head_dim=128, dtype="bf16")
    kernel.runtime_kernel()(q, k, v, o=o, lse=lse, bias=-8.0)

The program states buffers, copies, loops and math; it copies each tile
where it uses it. The compiler owns the thread layouts, the copy pipeline
(attn-pipeline-copies issues each KV copy ahead of its use), the
shared-memory offsets (the chip's limit, errors naming the program's
buffers) and every wait and barrier (attn-insert-barriers places them and
proves each needed). A map body is a hook-like function of
the operands' elements, then the row and the column: numbers are
constants, captured flashtile.scalar values are run-time arguments passed
by name at each call, captured float32 / int32 tensors are table reads.
Errors raise FlashTileError at the user's line.
"""

import collections
import re

from . import FlashTileError
from . import _kernel_ir
from . import _tracer
from . import hooks as _hooks

__all__ = ["TileProgram", "TileRequest", "Frag", "Buffer", "program_ir",
           "compile"]

_F32 = "f32"
_INF = float("inf")

Block = collections.namedtuple(
    "Block", "m_block head kv_head batch seqlen_q seqlen_k")
Range = collections.namedtuple(
    "Range", "begin unmasked_begin unmasked_end end")


class Frag:
    """A register tile of the block: `shape` (rows[, cols]), element type."""

    __slots__ = ("name", "shape", "dtype")

    def __init__(self, name, shape, dtype):
        self.name, self.shape, self.dtype = name, tuple(shape), dtype

    @property
    def type(self):
        return f"!attn.frag<{'x'.join(map(str, self.shape))}x{self.dtype}>"

    def __repr__(self):
        return f"<flashtile.tile.Frag {self.name} {self.type}>"


class Buffer:
    """A shared buffer of `slots` x `rows` x `cols` elements."""

    __slots__ = ("name", "label", "shape", "dtype")

    def __init__(self, name, label, shape, dtype):
        self.name, self.label, self.shape, self.dtype = (name, label,
                                                         tuple(shape), dtype)

    @property
    def type(self):
        return f"memref<{'x'.join(map(str, self.shape))}x{self.dtype}, 3>"


class _Index:
    """An index value of the program (a tile number, a size)."""

    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name


class _Scalar:
    """An f32 value of the program (the softmax scale)."""

    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name


class TileProgram:
    """The builder a tile program gets. Sizes: `tile_m`, `tile_n`,
    `head_dim`, `head_dim_v` (as the buffers hold them), `dtype`; tensors:
    `q`, `k`, `v`."""

    def __init__(self, name, head_dim, dtype, head_dim_v, tile_m, tile_n,
                 stages, warps, q_in_regs, arch, captures=None):
        _hooks.check_dtype(dtype)
        self.name, self.dtype, self.arch = name, dtype, arch
        self.head_dim = _padded(head_dim)
        self.head_dim_v = _padded(head_dim_v or head_dim)
        self._dims = (head_dim, head_dim_v or head_dim)
        self.tile_m, self.tile_n = tile_m, tile_n
        self.stages, self.warps, self.q_in_regs = stages, warps, q_in_regs
        self.q, self.k, self.v = "%q", "%k", "%v"
        self._kernel = _hooks._Kernel()
        # Names the map bodies and hooks capture, traced as these stand-ins
        # (TensorSpec) instead: prebuilding where the tensors are not set.
        self._captures = captures
        self._lines = []
        self._indent = "    "
        self._next = 0

    # --- Emission ----------------------------------------------------------

    def _name(self):
        self._next += 1
        return f"%t{self._next}"

    @staticmethod
    def _loc():
        """The user's line, as an MLIR location: the compiler's errors name
        it."""
        location = _tracer._user_location()
        if location is None:
            return ""
        file, line = location
        file = file.replace("\\", "\\\\").replace('"', '\\"')
        return f' loc("{file}":{line}:0)'

    def _emit(self, text, results=1):
        names = [self._name() for _ in range(results)]
        head = f"{', '.join(names)} = " if results else ""
        self._lines.append(f"{self._indent}{head}{text}{self._loc()}")
        return names

    def _tensor_type(self, tensor):
        d = self._dims[0] if tensor in (self.q, self.k) else self._dims[1]
        return _kernel_ir.tensor_type(d, self.dtype)

    # --- The block and its sizes -------------------------------------------

    def block_context(self):
        """The (query tile, head, KV head, batch, seqlen_q, seqlen_k) of
        the block."""
        names = self._emit(
            f"attn.block_context %q, %k : {self._tensor_type(self.q)}, "
            f"{self._tensor_type(self.k)}", 6)
        return Block(*map(_Index, names))

    def kv_bounds(self, blk, window=(-1, -1)):
        """The KV tiles the block's query tile visits, as (begin,
        unmasked_begin, unmasked_end, end); window (-1, 0) is causal."""
        left, right = window
        names = self._emit(
            f"attn.kv_bounds {blk.m_block.name}, {blk.seqlen_q.name}, "
            f"{blk.seqlen_k.name} {{tile_m = {self.tile_m} : i64, tile_n = "
            f"{self.tile_n} : i64, window_left = {int(left)} : i64, "
            f"window_right = {int(right)} : i64}}", 4)
        return Range(*map(_Index, names))

    def index(self, value):
        return _Index(self._emit(f"arith.constant {int(value)} : index")[0])

    def minus(self, tile, back):
        """`tile - back` (may go negative: such copies only zero-fill)."""
        amount = self.index(back)
        return _Index(self._emit(
            f"arith.subi {tile.name}, {amount.name} : index")[0])

    def softmax_scale(self, default=None):
        """The run-time softmax scale; its default `default`, else the
        compiler's (1 / sqrt(head_dim))."""
        value = default if default is not None else \
            _hooks.kernel_rules().default_softmax_scale(self._dims[0])
        return _Scalar(self._emit(
            f"attn.softmax_scale {{default_value = "
            f"{_hooks._float_literal(value)} : f32}} : f32")[0])

    # --- Shared memory ---------------------------------------------------

    def buffer(self, label, slots, rows, cols, dtype=None):
        """A shared buffer named `label` (plans and errors use the name)."""
        buf = Buffer(None, label, (slots, rows, cols), dtype or self.dtype)
        buf.name = self._emit(
            f'attn.smem_alloc {{name = "{label}"}} : {buf.type}')[0]
        return buf

    def copy(self, tensor, blk, tile, dst, head=None):
        """Tile `tile` of Q, K or V (rows tile * rows ...) of the block's
        batch and head (the KV head for K and V) into its slot of `dst`."""
        if tensor not in (self.q, self.k, self.v):
            raise FlashTileError("copy takes t.q, t.k or t.v")
        if head is None:
            head = blk.head if tensor == self.q else blk.kv_head
        self._emit(f"attn.copy_async {tensor}[{blk.batch.name}, {tile.name}, "
                   f"{head.name}] -> {dst.name} : {self._tensor_type(tensor)} "
                   f"-> {dst.type}", 0)

    def load(self, buf):
        """Slot 0 of `buf` into registers."""
        frag = Frag(None, buf.shape[1:], buf.dtype)
        frag.name = self._emit(
            f"attn.load_frag {buf.name} : {buf.type} -> {frag.type}")[0]
        return frag

    # --- Register tiles ----------------------------------------------------

    def splat(self, shape, value, dtype=_F32):
        frag = Frag(None, shape, dtype)
        frag.name = self._emit(
            f"attn.splat {{value = {_hooks._float_literal(value)} : f32}} : "
            f"{frag.type}")[0]
        return frag

    def dot(self, q, k, tile, head_range=None):
        """S = Q K[tile]^T in f32 (`q` a fragment or Q's buffer); with
        `head_range` (begin, end), over that slice of the head dim."""
        rows = q.shape[0] if isinstance(q, Frag) else q.shape[1]
        s = Frag(None, (rows, k.shape[1]), _F32)
        attrs = "transpose_b"
        if head_range is not None:
            attrs = (f"k_begin = {int(head_range[0])} : i64, k_end = "
                     f"{int(head_range[1])} : i64, {attrs}")
        s.name = self._emit(f"attn.mma {q.name}, {k.name}[{tile.name}] "
                            f"{{{attrs}}} : {q.type}, {k.type} -> "
                            f"{s.type}")[0]
        return s

    def dot_accumulate(self, p, v, tile, acc):
        """acc + P V[tile]; an f32 `p` is converted to V's type (the mma's
        A operand) first."""
        if p.dtype == _F32:
            p = self.convert(p, v.dtype)
        out = Frag(None, acc.shape, _F32)
        out.name = self._emit(
            f"attn.mma {p.name}, {v.name}[{tile.name}], {acc.name} : "
            f"{p.type}, {v.type}, {acc.type} -> {out.type}")[0]
        return out

    def map(self, operands, fn):
        """Elementwise math: `fn(*elements, row, col)` per element of the
        result (no `col` for a rank-1 result). Operands: f32 fragments
        (rank-1 ones broadcast along rows) and the program's f32 values."""
        frags = [o for o in operands if isinstance(o, Frag)]
        if not frags:
            raise FlashTileError("map needs at least one fragment operand")
        rank2 = [f for f in frags if len(f.shape) == 2]
        shape = rank2[0].shape if rank2 else frags[0].shape
        params, types_ = [], []
        for i, o in enumerate(operands):
            if isinstance(o, Frag):
                types_.append(o.type)
                params.append((f"e{i}", o.dtype))
            elif isinstance(o, _Scalar):
                types_.append("f32")
                params.append((f"e{i}", _F32))
            else:
                raise FlashTileError(
                    f"map operand {i} is {type(o).__name__}; operands are "
                    f"fragments and the program's f32 values (numbers and "
                    f"flashtile.scalar values go in the function itself)")
        params.append(("row", "index"))
        if len(shape) == 2:
            params.append(("col", "index"))
        body = _hooks._trace(self._kernel, fn, params, _F32, "map",
                             self._captures)
        result = Frag(self._name(), shape, _F32)
        names = ", ".join(o.name for o in operands)
        self._lines.append(f"{self._indent}{result.name} = attn.map {names} : "
                           f"{', '.join(types_)} -> {result.type} {{")
        self._lines += [self._indent + "  " + line for line in body]
        self._lines.append(self._indent + "}" + self._loc())
        return result

    def modify_scores(self, s, blk, tile, scale, score_mod=None,
                      mask_mod=None):
        """The hooks on the scores of KV tile `tile`, as flashtile.compile
        takes them: `score_mod(score, b, h, q_idx, kv_idx)` sees the scaled
        score (then the result is scaled; without it the scores stay
        unscaled), and the scores where `mask_mod(b, h, q_idx, kv_idx)` is
        false become -inf. Captured flashtile.scalar values and tensors are
        run-time arguments, as in hooks."""
        if score_mod is None and mask_mod is None:
            raise FlashTileError("modify_scores needs a score_mod or a "
                                 "mask_mod")
        regions = []
        if score_mod is not None:
            regions.append(("score_mod", self._isolated(_hooks._trace(
                self._kernel, score_mod,
                [("score", _F32), ("b", "index"), ("h", "index"),
                 ("q_idx", "index"), ("kv_idx", "index")], _F32,
                "score_mod", self._captures))))
        if mask_mod is not None:
            regions.append(("mask_mod", self._isolated(_hooks._trace(
                self._kernel, mask_mod,
                [("b", "index"), ("h", "index"), ("q_idx", "index"),
                 ("kv_idx", "index")], "i1", "mask_mod", self._captures))))
        out = Frag(self._name(), s.shape, _F32)
        self._lines.append(
            f"{self._indent}{out.name} = attn.modify_scores {s.name}, "
            f"{blk.m_block.name}, {tile.name}, {blk.batch.name}, "
            f"{blk.head.name}, {blk.seqlen_q.name}, {blk.seqlen_k.name}, "
            f"{scale.name} : {s.type}")
        for keyword, body in regions:
            self._lines.append(f"{self._indent}  {keyword} {{")
            self._lines += [self._indent + "  " + line for line in body]
            self._lines.append(self._indent + "  }")
        self._lines[-1] += self._loc()
        return out

    def _isolated(self, body):
        """A traced hook body that reads the kernel's arguments through
        attn.kernel_arg (the op holding it is isolated from above)."""
        reads = []
        for i, arg in enumerate(self._kernel.args):
            used = re.compile(re.escape(arg.arg) + r"(?![\w.$])")
            if not any(used.search(line) for line in body[1:]):
                continue
            local = f"%ka{i}"
            body = body[:1] + [used.sub(local, line) for line in body[1:]]
            type_ = (arg.memref_type() if isinstance(arg, _hooks._TensorArg)
                     else arg.type)
            # attn.kernel_arg counts the extra arguments only.
            reads.append(f"  {local} = attn.kernel_arg {i} : {type_}")
        return body[:1] + reads + body[1:]

    def reduce_rows(self, frag, kind):
        """The max or the sum ("max", "sum") of each row."""
        out = Frag(None, frag.shape[:1], _F32)
        out.name = self._emit(
            f'attn.reduce_rows {frag.name} {{kind = "{kind}"}} : {frag.type} '
            f'-> {out.type}')[0]
        return out

    def convert(self, frag, dtype=None):
        """f32 to f16 / bf16 (default: the kernel's), as the A operand of
        dot_accumulate."""
        out = Frag(None, frag.shape, dtype or self.dtype)
        out.name = self._emit(
            f"attn.convert {frag.name} : {frag.type} -> {out.type}")[0]
        return out

    def mask(self, s, blk, tile, window=(-1, -1)):
        """-inf on scores past the sequence end or outside the window."""
        out = Frag(None, s.shape, _F32)
        out.name = self._emit(
            f"attn.mask {s.name}, {blk.m_block.name}, {tile.name}, "
            f"{blk.seqlen_q.name}, {blk.seqlen_k.name} {{window_left = "
            f"{int(window[0])} : i64, window_right = {int(window[1])} : i64}}"
            f" : {s.type}")[0]
        return out

    # --- The KV loop and the store -----------------------------------------

    def loop(self, lower, upper, inits, body, masked=False):
        """Runs `body(j, *carried)` for j = upper - 1 down to lower; it
        returns the new carried fragments. Returns their final values."""
        inits = list(inits)
        types_ = ", ".join(f.type for f in inits)
        results = [self._name() for _ in inits]
        j = _Index(self._name())
        carried = [Frag(self._name(), f.shape, f.dtype) for f in inits]
        head = f"{', '.join(results)} = " if results else ""
        iter_args = ""
        if inits:
            iter_args = (f" iter_args({', '.join(f.name for f in inits)}) : "
                         f"{types_} -> {types_}")
        attrs = " attributes {masked}" if masked else ""
        self._lines.append(f"{self._indent}{head}attn.kv_loop {lower.name} to "
                           f"{upper.name}{iter_args}{attrs} {{")
        args = ", ".join([f"{j.name}: index"] +
                         [f"{c.name}: {c.type}" for c in carried])
        self._lines.append(f"{self._indent}^bb0({args}):")
        outer = self._indent
        self._indent += "  "
        try:
            new = list(body(j, *carried))
        finally:
            self._indent = outer
        if len(new) != len(inits):
            raise FlashTileError(f"the loop body returned {len(new)} value(s) "
                                 f"for {len(inits)} carried")
        if new:
            self._lines.append(
                f"{outer}  attn.yield {', '.join(f.name for f in new)} : "
                f"{types_}")
        self._lines.append(f"{outer}}}{self._loc()}")
        return [Frag(r, f.shape, f.dtype) for r, f in zip(results, inits)]

    def store(self, acc, stage, blk, lse=None):
        """`acc` as the block's rows of O (through `stage`); with `lse`, a
        rank-1 fragment, its values as the rows' LSE."""
        values = f" values({lse.name} : {lse.type})" if lse is not None else ""
        self._emit(
            f"attn.store {acc.name}, {stage.name} -> %o[{blk.batch.name}, "
            f"{blk.m_block.name}, {blk.head.name}], %lse{values} : "
            f"{acc.type}, {stage.type} -> {self._tensor_type(self.v)}, "
            f"memref<?x?x?xf32>", 0)

    # --- The kernel -----------------------------------------------------------

    def module_text(self):
        """The tile program as an `attn` module, and its extra arguments
        (as flashtile.hooks.kernel_ir lists them)."""
        config = _kernel_ir.config_text(self.tile_m, self.tile_n,
                                        self.stages, self.warps,
                                        self.q_in_regs)
        lines, extras = _kernel_ir.kernel_shell(
            self.name, self.arch, self._dims[0], self._dims[1], self.dtype,
            self._kernel, config=config)
        lines += self._lines
        lines += _kernel_ir.KERNEL_CLOSE
        return "\n".join(lines), extras


def _padded(d):
    """The head dim as buffers and fragments hold it."""
    return _hooks.kernel_rules().padded_head_dim(d)


def program_ir(program, head_dim, dtype="bf16", *, head_dim_v=None,
               tile_m=128, tile_n=128, stages=1, warps=8, q_in_regs=True,
               arch="sm_120", name=None, captures=None):
    """Traces `program(t)` (t: a TileProgram) into an `attn` module; returns
    (text, extras). `captures` maps names the program's map bodies and
    hooks capture to what to trace in their place (TensorSpec)."""
    t = TileProgram(name or program.__name__, head_dim, dtype, head_dim_v,
                    tile_m, tile_n, stages, warps, q_in_regs, arch,
                    captures=captures)
    program(t)
    return t.module_text()


class TileRequest:
    """A compile request (flashtile.compiler.compile_request) for a traced
    tile program: its IR, extras, chip and ISA, no config pins (a tile
    program states its config), and the manifest entry that prebuilds it
    (`python -m flashtile prebuild`: "tile_program" names the function)."""

    # The fields of a manifest entry of a tile program, with their defaults.
    FIELDS = {"head_dim": None, "dtype": "bf16", "head_dim_v": None,
              "tile_m": 128, "tile_n": 128, "stages": 1, "warps": 8,
              "q_in_regs": True, "arch": "sm_120", "isa": None,
              "name": None}

    def __init__(self, program, head_dim, dtype="bf16", *, head_dim_v=None,
                 tile_m=128, tile_n=128, stages=1, warps=8, q_in_regs=True,
                 arch="sm_120", isa=None, name=None, captures=None):
        if not callable(program) or not hasattr(program, "__code__"):
            raise FlashTileError(f"a tile program is a Python function "
                                 f"program(t), got {type(program).__name__}")
        self.ir, self.extras = program_ir(
            program, head_dim, dtype, head_dim_v=head_dim_v, tile_m=tile_m,
            tile_n=tile_n, stages=stages, warps=warps, q_in_regs=q_in_regs,
            arch=arch, name=name, captures=captures)
        self.arch, self.isa = arch, isa
        self.pins = {}
        self.description = (f"tile program {name or program.__name__} "
                            f"{dtype} d={head_dim} for {arch}"
                            f"{f' (isa {isa})' if isa else ''}")
        self._program = program
        self._values = dict(head_dim=head_dim, dtype=dtype,
                            head_dim_v=head_dim_v, tile_m=tile_m,
                            tile_n=tile_n, stages=stages, warps=warps,
                            q_in_regs=q_in_regs, arch=arch, isa=isa,
                            name=name)

    @property
    def manifest_entry(self):
        """The manifest entry that prebuilds this request: the program by
        the module-level name it is bound to (a closure a factory made
        counts where it is assigned), in that module's file."""
        import sys
        program = self._program
        owner = sys.modules.get(getattr(program, "__module__", None))
        candidates = [owner, sys.modules.get("__main__")] + [
            m for m in list(sys.modules.values()) if m is not owner]
        where = None
        for module in candidates:
            names = [n for n, v in list(vars(module).items()) if v is program] \
                if module is not None and hasattr(module, "__dict__") else []
            if names:
                where = (module, names[0])
                break
        if where is None:
            raise FlashTileError(
                f"tile program {program.__name__} is not bound to a "
                f"module-level name, so no manifest can name it: assign it "
                f"to one in a hooks file (sigmoid = make_program(...))")
        module, name = where
        entry = {"tile_program": name}
        if module.__name__.startswith("flashtile."):
            entry["tile_program"] = f"{module.__name__}:{name}"
        else:
            entry["hooks"] = getattr(module, "__file__", None) or \
                program.__code__.co_filename
        entry.update({k: v for k, v in self._values.items()
                      if k == "head_dim" or v != self.FIELDS[k]})
        tensors = {e[3]: [_hooks.tensor_dtype(e[2]), len(e[2].shape)]
                   for e in self.extras if e[1] == "tensor"}
        if tensors:
            entry["captures"] = tensors
        return entry


def compile(program, head_dim, dtype="bf16", *, head_dim_v=None, tile_m=128,
            tile_n=128, stages=1, warps=8, q_in_regs=True, arch="sm_120",
            isa=None, name=None, cache=None, verbose=None):
    """Traces and compiles (or finds in the cache) the tile program
    `program`; returns a flashtile.CompiledKernel. Tracing needs no
    compiler: a runtime-only installation finds the kernel in a cache
    prebuilt from the manifest entry the cache miss prints."""
    from . import compiler
    request = TileRequest(program, head_dim, dtype, head_dim_v=head_dim_v,
                          tile_m=tile_m, tile_n=tile_n, stages=stages,
                          warps=warps, q_in_regs=q_in_regs, arch=arch,
                          isa=isa, name=name)
    return compiler.compile_request(request, cache=cache, verbose=verbose)
