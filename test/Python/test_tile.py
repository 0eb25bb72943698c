"""flashtile.tile: tile programs traced from Python functions, their IR,
their errors, and the compile path (the examples of
python_bindings/examples/tile_attention.py, to PTX). Needs the full build
(the compile API); no torch, no GPU. Tracing itself needs no compiler:
a runtime-only installation traces the same IR and prebuilds from the
manifest entry a cache miss prints.

    PYTHONPATH=<build>/python_bindings python3 -m unittest test_tile
"""

import os
import sys
import tempfile
import unittest

import flashtile
from flashtile import FlashTileError, tile
from flashtile import compiler as ftc

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "python_bindings", "examples"))
import tile_attention  # noqa: E402


def compile_text(text):
    """The compiler's result for traced IR, to PTX (no ptxas)."""
    return ftc._compiler_module().compile(text, "<test>", cubin_file="")


class TraceTest(unittest.TestCase):
    def test_sigmoid_ir(self):
        text, extras = tile.program_ir(tile_attention.sigmoid_attention(True),
                                       128, "bf16", name="sig")
        self.assertIn("attn.kernel @sig", text)
        self.assertIn("config(#attn.config<tile_m = 128, tile_n = 128", text)
        self.assertIn('arg_names = ["bias"]', text)
        self.assertIn("math.tanh", text)
        self.assertEqual(text.count("attn.kv_loop"), 2)
        self.assertIn("window_right = 0 : i64", text)
        # The user writes no sync; the compiler places them.
        self.assertNotIn("attn.barrier", text)
        self.assertNotIn("attn.async_wait", text)
        self.assertEqual([e[0] for e in extras], ["bias"])

    def test_f32_p_is_converted(self):
        def program(t):
            blk = t.block_context()
            vs = t.buffer("V", 1, 32, 64)
            p = t.splat([64, 32], 1.0)
            acc = t.splat([64, 64], 0.0)
            t.dot_accumulate(p, vs, blk.m_block, acc)
        text, _ = tile.program_ir(program, 64, "f16", tile_m=64, tile_n=32,
                                  warps=4)
        self.assertIn("attn.convert", text)
        self.assertIn("-> !attn.frag<64x32xf16>", text)

    def test_differential_ir(self):
        text, extras = tile.program_ir(
            tile_attention.differential_attention(False), 128, "f16",
            tile_n=32, q_in_regs=False, name="diff")
        self.assertEqual(text.count("k_begin = 0 : i64, k_end = 64"), 2)
        self.assertEqual(text.count("k_begin = 64 : i64, k_end = 128"), 2)
        self.assertEqual(text.count('attn.reduce_rows'), 8)
        self.assertNotIn("attn.online_softmax", text)
        self.assertEqual([e[0] for e in extras], ["lam"])

    def test_hooks_inside_a_tile_program(self):
        text, extras = tile.program_ir(
            tile_attention.sigmoid_hooked_attention(True), 128, "bf16",
            name="hooked")
        self.assertEqual(text.count("attn.modify_scores"), 2)
        # The hook region is isolated: captured values are kernel_args.
        self.assertIn("attn.kernel_arg 0 : f32", text)
        self.assertIn("score_mod {", text)
        self.assertIn("mask_mod {", text)
        self.assertEqual([e[0] for e in extras], ["slope", "bias"])

    def test_traced_programs_compile(self):
        for name, (factory, config) in tile_attention.EXAMPLES.items():
            for causal in (False, True):
                text, _ = tile.program_ir(factory(causal), 128, "bf16",
                                          name=f"{name}_{int(causal)}",
                                          **config)
                try:
                    result = compile_text(text)
                except FlashTileError as e:
                    self.fail(f"{name} causal={causal}: {e}\n{text}")
                self.assertIn("bar.sync", result["ptx"])
                self.assertIn("cp.async.wait_group", result["ptx"])

    def test_compile_through_the_cache(self):
        with tempfile.TemporaryDirectory() as cache:
            k = tile_attention.compile_example("sigmoid", "f16", False,
                                               isa="sm_90", cache=cache)
            self.assertTrue(k.metadata["info"]["tile_program"])
            again = tile_attention.compile_example("sigmoid", "f16", False,
                                                   isa="sm_90", cache=cache)
            self.assertEqual(k.key, again.key)


class ErrorTest(unittest.TestCase):
    def trace(self, program, **kwargs):
        return tile.program_ir(program, 64, "bf16", tile_m=64, tile_n=32,
                               warps=4, **kwargs)

    def test_modify_scores_needs_a_hook(self):
        def program(t):
            blk = t.block_context()
            s = t.splat([64, 32], 0.0)
            t.modify_scores(s, blk, blk.m_block, t.softmax_scale())
        with self.assertRaisesRegex(FlashTileError, "score_mod or a mask_mod"):
            self.trace(program)

    def test_hook_type_error_at_users_line(self):
        def program(t):
            blk = t.block_context()
            s = t.splat([64, 32], 0.0)
            t.modify_scores(s, blk, blk.m_block, t.softmax_scale(),
                            mask_mod=lambda b, h, q_idx, kv_idx: q_idx)
        with self.assertRaisesRegex(FlashTileError, "must return a condition"):
            self.trace(program)

    def test_map_needs_a_fragment(self):
        def program(t):
            t.map([t.softmax_scale()], lambda c, row: c)
        with self.assertRaisesRegex(FlashTileError, "at least one fragment"):
            self.trace(program)

    def test_map_body_type_error_at_users_line(self):
        def program(t):
            s = t.splat([64, 32], 1.0)
            t.map([s], lambda x, row, col: x + (row < col))
        with self.assertRaisesRegex(FlashTileError, r"test_tile\.py:\d+"):
            self.trace(program)

    def test_copy_of_another_tensor(self):
        def program(t):
            blk = t.block_context()
            b = t.buffer("Q", 1, 64, 64)
            t.copy("%o", blk, blk.m_block, b)
        with self.assertRaisesRegex(FlashTileError, "copy takes t.q, t.k or t.v"):
            self.trace(program)

    def test_verifier_error_reaches_the_user(self):
        def program(t):
            s = t.splat([64, 24], 1.0)
            t.convert(s)
        text, _ = self.trace(program)
        with self.assertRaisesRegex(FlashTileError,
                                    "source has 24 columns; an mma A operand "
                                    "needs a multiple of 16"):
            compile_text(text)
        # At the user's line: the traced ops carry it.
        with self.assertRaisesRegex(FlashTileError, r"test_tile\.py:\d+"):
            compile_text(text)

    def test_loop_arity(self):
        def program(t):
            blk = t.block_context()
            r = t.kv_bounds(blk)
            acc = t.splat([64, 64], 0.0)
            t.loop(r.begin, r.end, [acc], lambda j, a: [])
        with self.assertRaisesRegex(FlashTileError, "returned 0 value"):
            self.trace(program)


class RuntimeOnlyTest(unittest.TestCase):
    """Tile programs on an installation without the compiler: traced all
    the same, found in a cache prebuilt from their manifest entry."""

    def setUp(self):
        self.cache = tempfile.mkdtemp()
        self.addCleanup(__import__("shutil").rmtree, self.cache, True)

    def test_traces_and_misses_without_the_compiler(self):
        from unittest import mock
        program = tile_attention.sigmoid_attention(True)
        with_compiler = tile.program_ir(program, 128, "bf16")[0]
        with mock.patch.object(ftc, "_compiler_module", lambda: None), \
                mock.patch.dict(os.environ,
                                {"FLASHTILE_PTXAS_VERSION": "V0.test"}):
            self.assertEqual(tile.program_ir(program, 128, "bf16")[0],
                             with_compiler)
            global SIGMOID
            SIGMOID = program
            with self.assertRaises(FlashTileError) as e:
                tile.compile(program, 128, "bf16", cache=self.cache)
        message = str(e.exception)
        self.assertIn("runtime-only", message)
        self.assertIn('"tile_program": "SIGMOID"', message)
        self.assertIn('"head_dim": 128', message)

    def test_prebuild_gives_the_key_of_the_call(self):
        import contextlib
        import io
        import json
        from flashtile.__main__ import prebuild
        folder = tempfile.mkdtemp()
        self.addCleanup(__import__("shutil").rmtree, folder, True)
        examples = os.path.dirname(os.path.abspath(tile_attention.__file__))
        path = os.path.join(folder, "my_tiles.py")
        with open(path, "w") as f:
            f.write(f"import sys\nsys.path.insert(0, {examples!r})\n"
                    f"import tile_attention\n"
                    f"sigmoid = tile_attention.sigmoid_attention(False)\n")
        import importlib.util
        spec = importlib.util.spec_from_file_location("my_tiles", path)
        module = importlib.util.module_from_spec(spec)
        sys.modules["my_tiles"] = module
        self.addCleanup(sys.modules.pop, "my_tiles", None)
        spec.loader.exec_module(module)
        request = tile.TileRequest(module.sigmoid, 64, "f16", tile_n=64,
                                   isa="sm_90")
        entry = request.manifest_entry
        self.assertEqual(entry["tile_program"], "sigmoid")
        self.assertEqual(entry["hooks"], path)
        self.assertEqual((entry["tile_n"], entry["isa"]), (64, "sm_90"))
        self.assertNotIn("tile_m", entry)  # defaults stay out
        manifest = os.path.join(folder, "manifest.json")
        with open(manifest, "w") as f:
            json.dump({"kernels": [entry]}, f)
        with contextlib.redirect_stderr(io.StringIO()):
            keys = prebuild(manifest, cache=self.cache, out=io.StringIO())
        self.assertEqual(keys, [ftc.cache_key(request)])
        with open(manifest, "w") as f:
            json.dump({"kernels": [dict(entry, causal=True)]}, f)
        with self.assertRaises(FlashTileError) as e:
            prebuild(manifest, cache=self.cache, out=io.StringIO())
        self.assertIn("causal do not apply to a tile program", str(e.exception))

    def test_locations_do_not_enter_the_key(self):
        class Request:
            arch, isa, pins = "sm_120", None, {}

            def __init__(self, ir):
                self.ir = ir
        here = Request('attn.splat loc("/a/x.py":3:0)\n')
        there = Request('attn.splat loc("/b/y.py":9:0)\n')
        self.assertEqual(ftc.cache_key(here, "V1"), ftc.cache_key(there, "V1"))
        self.assertNotEqual(ftc.cache_key(here, "V1"),
                            ftc.cache_key(Request("attn.other\n"), "V1"))


if __name__ == "__main__":
    unittest.main()
