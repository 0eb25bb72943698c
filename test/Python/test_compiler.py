"""flashtile.compile and its cache: hits, misses, invalidation (build ID,
ptxas version), corrupted entries, a runtime-only installation, errors.

Needs the full build (flashtile._compiler) and ptxas; no torch, no GPU.

    PYTHONPATH=<build>/python_bindings python3 -m unittest test_compiler
"""

import contextlib
import dataclasses
import importlib
import io
import json
import os
import shutil
import tempfile
import unittest
from unittest import mock

import flashtile
from flashtile import FlashTileError
from flashtile import compiler as ftc


def softcap(score, b, h, q_idx, kv_idx):
    return 30 * flashtile.tanh(score / 30)


class CacheTest(unittest.TestCase):
    def setUp(self):
        self.cache = tempfile.mkdtemp()
        self.real = ftc._compiler_module()
        self.assertIsNotNone(self.real, "the full build has flashtile._compiler")
        self.calls = 0
        real_compile = self.real.compile

        def counting(*args, **kwargs):
            self.calls += 1
            return real_compile(*args, **kwargs)
        self.stub = mock.Mock()
        self.stub.compile = counting
        self.stub.find_ptxas = self.real.find_ptxas
        patcher = mock.patch.object(ftc, "_compiler_module",
                                    lambda: self.stub)
        patcher.start()
        self.addCleanup(patcher.stop)
        self.addCleanup(shutil.rmtree, self.cache, True)

    def build(self, **kwargs):
        args = dict(head_dim=64, dtype="bf16", causal=True, score_mod=softcap,
                    isa="sm_90", cache=self.cache, verbose=False)
        args.update(kwargs)
        return flashtile.compile(**args)

    def test_miss_then_hit(self):
        kernel = self.build()
        self.assertEqual(self.calls, 1)
        self.assertEqual(len(kernel.key), 64)
        self.assertTrue(kernel.path.startswith(self.cache))
        self.assertIn(".entry flashtile_attention(", kernel.ptx)
        self.assertEqual(kernel.cubin[:4], b"\x7fELF")
        self.assertEqual(kernel.metadata["name"], "flashtile_attention")
        self.assertEqual(kernel.metadata["isa"], "sm_90")
        self.assertIn("config: tile_m = ", kernel.report)
        again = self.build()
        self.assertEqual(self.calls, 1)
        self.assertEqual(again.key, kernel.key)
        # Another hook is another kernel.
        self.build(score_mod=lambda s, b, h, q, k: s * 2)
        self.assertEqual(self.calls, 2)

    def test_key_covers_build_id_ptxas_and_pins(self):
        request = ftc.KernelRequest(64, causal=True, score_mod=softcap)
        key = ftc.cache_key(request, "V13.0.88")
        self.assertEqual(key, ftc.cache_key(
            ftc.KernelRequest(64, causal=True, score_mod=softcap), "V13.0.88"))
        self.assertNotEqual(key, ftc.cache_key(request, "V13.1.0"))
        with mock.patch.object(ftc._build, "BUILD_ID", "another build"):
            self.assertNotEqual(key, ftc.cache_key(request, "V13.0.88"))
        with mock.patch.object(ftc._build, "VERSION", "9.9.9"):
            self.assertNotEqual(key, ftc.cache_key(request, "V13.0.88"))
        pinned = ftc.KernelRequest(64, causal=True, score_mod=softcap,
                                   tile_m=64)
        self.assertNotEqual(key, ftc.cache_key(pinned, "V13.0.88"))

    def test_decode_family(self):
        # The decode family is its own kernel: a packed 16-row tile with KV
        # warps, split-KV with its combine kernel, in the plan's dispatch.
        prefill = self.build()
        decode = self.build(family="decode")
        self.assertNotEqual(prefill.key, decode.key)
        self.assertIn("kv_warps = 4, pack_gqa = true", decode.report)
        self.assertIn(".entry flashtile_attention_combine(", decode.ptx)
        self.assertEqual([k["symbol"] for k in decode.metadata["kernels"]],
                         ["flashtile_attention",
                          "flashtile_attention_combine"])
        self.assertEqual(decode.metadata["derived"][0]["name"], "kv_splits")
        # The prefill family stays out of the key and the manifest entry.
        request = ftc.KernelRequest(64, causal=True, score_mod=softcap)
        self.assertNotIn("family", request.pins)
        self.assertNotIn("family", request.manifest_entry)
        request = ftc.KernelRequest(64, causal=True, family="decode")
        self.assertEqual(request.manifest_entry["family"], "decode")
        self.assertIn("(decode family)", request.description)
        with self.assertRaises(FlashTileError) as e:
            self.build(family="draft")
        self.assertIn("family must be 'prefill' or 'decode', got 'draft'",
                      str(e.exception))

    def test_backward_family(self):
        # direction="bwd" is its own kernel: the backward family's three
        # kernels in launch order, its workspaces, dO in and the gradients
        # out; the direction enters the key, the pins and the manifest
        # entry, so a prebuild builds it too.
        forward = self.build(score_mod=None)
        backward = self.build(score_mod=None, direction="bwd")
        self.assertNotEqual(forward.key, backward.key)
        self.assertEqual(backward.metadata["name"], "flashtile_attention_bwd")
        self.assertEqual([k["symbol"] for k in backward.metadata["kernels"]],
                         ["flashtile_attention_bwd_preprocess",
                          "flashtile_attention_bwd_main",
                          "flashtile_attention_bwd_convert"])
        self.assertEqual([w["name"] for w in backward.metadata["workspaces"]],
                         ["d", "dq_accum"])
        roles = {a["name"]: a.get("role")
                 for a in backward.metadata["arguments"]}
        self.assertEqual(roles["do"], "input")
        self.assertEqual(roles["dk"], "output")
        self.assertNotIn("dq_accum", roles)
        request = ftc.KernelRequest(64, causal=True, direction="bwd")
        self.assertEqual(request.pins, {"direction": "bwd"})
        self.assertEqual(request.manifest_entry["direction"], "bwd")
        self.assertIn(" backward", request.description)
        self.assertNotIn("direction", ftc.KernelRequest(64).manifest_entry)
        # Deterministic: a dQ kernel instead of the atomics and the convert.
        det = self.build(score_mod=None, direction="bwd", deterministic=True)
        self.assertNotEqual(det.key, backward.key)
        self.assertEqual([k["symbol"] for k in det.metadata["kernels"]],
                         ["flashtile_attention_bwd_preprocess",
                          "flashtile_attention_bwd_main",
                          "flashtile_attention_bwd_dq"])
        self.assertEqual([w["name"] for w in det.metadata["workspaces"]],
                         ["d"])
        self.assertTrue(ftc.KernelRequest(
            64, direction="bwd", deterministic=True).manifest_entry[
                "deterministic"])
        # A score_mod's backward: its gradient is derived by the compiler
        # (tanh' = 1 - tanh^2 in the PTX's main kernel).
        hooked = self.build(direction="bwd")
        self.assertIn("tanh", hooked.ptx)
        # CompiledKernel.backward(): the same spec, direction "bwd", the
        # forward's pins and family left out: the very kernel.
        self.assertEqual(self.build().backward(verbose=False).key, hooked.key)
        self.assertTrue(hooked.path.startswith(self.cache))
        self.assertEqual(self.build(family="decode").backward(
            verbose=False).key, hooked.key)
        self.assertEqual(self.build().backward(
            deterministic=True, verbose=False).metadata[
            "kernels"][-1]["symbol"], "flashtile_attention_bwd_dq")
        with self.assertRaises(FlashTileError) as e:
            hooked.backward()
        self.assertIn("needs a forward kernel", str(e.exception))
        # What the backward does not cover yet is the compiler's error.
        with self.assertRaises(FlashTileError) as e:
            self.build(score_mod=None, paged=True, direction="bwd")
        self.assertIn("the backward does not cover paged K and V",
                      str(e.exception))
        # A mask_mod's backward evaluates it at every entry of the tiles it
        # visits; the main kernel finds the query tiles of its KV tile by
        # bisecting the mask's key interval (a clz gives the step count).
        masked = self.build(score_mod=None, mask_mod=lambda b, h, q, k: k <= q,
                            direction="bwd")
        self.assertEqual(len(masked.metadata["kernels"]), 3)
        self.assertIn("clz.b32", masked.ptx)
        plain = self.build(score_mod=None, direction="bwd")
        self.assertNotIn("clz.b32", plain.ptx)
        with self.assertRaises(FlashTileError) as e:
            self.build(score_mod=None, direction="backward")
        self.assertIn("direction must be 'fwd' or 'bwd', got 'backward'",
                      str(e.exception))
        # KV warps pin the main kernel's columns split: 8 warps there (4
        # row warps by 2), the row warps alone in the query-tile kernels.
        split = self.build(score_mod=None, direction="bwd", tile_m=64,
                           tile_n=64, warps=8, kv_warps=2, stages=2)
        self.assertEqual([k["block"][0] for k in split.metadata["kernels"]],
                         [128, 256, 128])
        self.assertNotEqual(split.key, plain.key)
        with self.assertRaises(FlashTileError) as e:
            self.build(score_mod=None, direction="bwd", tile_m=64, tile_n=64,
                       warps=16, kv_warps=4, head_dim=32)
        self.assertIn("kv_warps = 4 splits tile_m = 64", str(e.exception))

    def test_backward_tensor_grads(self):
        # The gradient of a captured tensor the score_mod reads: an f32
        # <name>_grad argument of role accumulate in the plan, which the
        # runtime requires (it is added to, never allocated), shaped like
        # nothing in particular (any sizes and strides).
        from flashtile import runtime
        slopes = flashtile.TensorSpec("torch.float32", 1)

        def alibi(score, b, h, q_idx, kv_idx):
            return score + slopes[h] * (kv_idx - q_idx)
        forward = self.build(score_mod=alibi)
        backward = forward.backward(tensor_grads=("slopes",), verbose=False)
        roles = {a["name"]: (a.get("role"), a.get("dtype"))
                 for a in backward.metadata["arguments"]}
        self.assertEqual(roles["slopes"], ("input", "f32"))
        self.assertEqual(roles["slopes_grad"], ("accumulate", "f32"))
        self.assertIn("red.global.add.f32", backward.ptx.replace(
            "atom.global.add.f32", "red.global.add.f32"))
        self.assertIn("shfl.sync.bfly", backward.ptx)
        self.assertEqual(backward.spec.tensor_grads, ("slopes",))
        self.assertEqual(
            ftc.KernelRequest.from_spec(backward.spec).manifest_entry[
                "tensor_grads"], ["slopes"])
        names = [a["name"] for a in runtime.load(
            backward.plan_path).arguments]
        self.assertEqual(names[-3:], ["slopes", "slopes_grad",
                                      "softmax_scale"])
        # A tensor the score_mod does not read, or a scalar, is refused.
        with self.assertRaises(FlashTileError) as e:
            forward.backward(tensor_grads=("bias",), verbose=False)
        self.assertIn("no gradient for 'bias'", str(e.exception))
        self.assertIn("which are: slopes", str(e.exception))

    def test_paged_kv(self):
        # Paged KV is its own kernel: a block_table argument after the
        # hooks' captures, K and V shaped as page pools, seqlen_k the
        # product max_pages * page_size; the manifest entry says so.
        contiguous = self.build(family="decode")
        paged = self.build(family="decode", paged=True)
        self.assertNotEqual(contiguous.key, paged.key)
        args = {a["name"]: a for a in paged.metadata["arguments"]}
        self.assertEqual(args["block_table"]["dtype"], "i32")
        self.assertEqual(args["block_table"]["shape"], ["batch", "max_pages"])
        self.assertEqual(args["k"]["shape"][:2], ["num_pages", "page_size"])
        params = {p["name"]: p for p in paged.metadata["kernels"][0]["params"]}
        self.assertEqual(params["seqlen_k"]["from"]["value"],
                         {"mul": ["max_pages", "page_size"]})
        request = ftc.KernelRequest(64, family="decode", paged=True)
        self.assertTrue(request.manifest_entry["paged"])
        self.assertIn("paged KV", request.description)
        self.assertIn('pages(%block_table : memref<?x?xi32, strided<[?, ?]>>)',
                      request.ir)
        self.assertNotIn("paged", ftc.KernelRequest(64).manifest_entry)

    def test_sizes_in_hooks_compile(self):
        # attn.size reaches the parser whole (its type once went missing):
        # a bottom-right causal mask written with the run-time sizes, in the
        # decode family, where its key interval skips tiles.
        def causal(b, h, q_idx, kv_idx):
            return kv_idx <= q_idx + flashtile.seqlen_k() - flashtile.seqlen_q()
        kernel = self.build(score_mod=None, mask_mod=causal, causal=False,
                            family="decode")
        self.assertIn(".entry flashtile_attention(", kernel.ptx)

    def test_attention_picks_the_family_from_the_shapes(self):
        # Packed rows Sq * Hq / Hkv up to DECODE_ROWS take the decode family;
        # a mask_mod keeps the prefill family's tile skipping.
        module = importlib.import_module("flashtile.attention")
        self.assertEqual(module.DECODE_ROWS, 32)
        self.assertEqual(module._family(1, 32, 8, None), "decode")
        self.assertEqual(module._family(8, 32, 8, None), "decode")
        self.assertEqual(module._family(9, 32, 8, None), "prefill")
        self.assertEqual(module._family(1, 32, 32, None), "decode")
        self.assertEqual(module._family(1, 32, 8, softcap), "prefill")
        self.assertEqual(module._family(1, 6, 4, None), "prefill")

    def test_new_compiler_version_misses(self):
        self.build()
        with mock.patch.object(ftc._build, "BUILD_ID", "a newer compiler"):
            self.build()
        self.assertEqual(self.calls, 2)

    def test_corrupted_entry_is_rebuilt(self):
        kernel = self.build()
        with open(os.path.join(kernel.path, "kernel.cubin"), "r+b") as f:
            f.seek(100)
            f.write(b"garbage")
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            again = self.build()
        self.assertIn("is corrupt (kernel.cubin does not match its digest)",
                      err.getvalue())
        self.assertEqual(self.calls, 2)
        self.assertEqual(again.cubin[:4], b"\x7fELF")
        self.assertEqual(ftc._check_entry(again.path, again.key), (True, ""))
        # A half-written entry (no manifest) is rebuilt too.
        os.remove(os.path.join(again.path, "entry.json"))
        with contextlib.redirect_stderr(io.StringIO()):
            self.build()
        self.assertEqual(self.calls, 3)

    def test_no_temporary_folders_are_left(self):
        kernel = self.build()
        parent = os.path.dirname(kernel.path)
        self.assertEqual(os.listdir(parent), [kernel.key])

    def test_runtime_only_installation(self):
        kernel = self.build()
        with open(os.path.join(self.cache, "toolchain.json")) as f:
            recorded = json.load(f)["ptxas"]
        self.assertTrue(recorded.startswith("V"))
        with mock.patch.object(ftc, "_compiler_module", lambda: None):
            # The same key from the recorded ptxas: a hit.
            hit = self.build()
            self.assertEqual(hit.key, kernel.key)
            with self.assertRaises(FlashTileError) as e:
                self.build(head_dim=128)
            message = str(e.exception)
            self.assertIn("is not in the cache at " + self.cache, message)
            self.assertIn("no compiler (runtime-only)", message)
            self.assertIn("python -m flashtile prebuild MANIFEST", message)
            self.assertIn('{"head_dim": 128, "dtype": "bf16", "causal": true, '
                          '"score_mod": "softcap", "hooks": ', message)
            self.assertIn('"arch": "sm_120", "isa": "sm_90"}', message)
            empty = tempfile.mkdtemp()
            self.addCleanup(shutil.rmtree, empty, True)
            with self.assertRaises(FlashTileError) as e:
                self.build(cache=empty)
            self.assertIn("records no ptxas version", str(e.exception))

    def test_prebuild_fills_the_cache_a_call_hits(self):
        from flashtile.__main__ import prebuild
        folder = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, folder, True)
        with open(os.path.join(folder, "my_hooks.py"), "w") as f:
            f.write("import flashtile\n"
                    "TABLE = None\n"
                    "def bias(score, b, h, q_idx, kv_idx):\n"
                    "    return score + TABLE[h]\n")
        manifest = os.path.join(folder, "manifest.json")
        entry = {"head_dim": 64, "dtype": "bf16", "causal": True,
                 "score_mod": "bias", "arch": "sm_120", "isa": "sm_90",
                 "captures": {"TABLE": ["float32", 1]}}
        with open(manifest, "w") as f:
            json.dump({"hooks": "my_hooks.py", "kernels": [entry]}, f)
        out = io.StringIO()
        with contextlib.redirect_stderr(io.StringIO()):
            keys = prebuild(manifest, cache=self.cache, out=out)
        self.assertEqual(len(keys), 1)
        self.assertIn(keys[0], out.getvalue())
        # The same hook, with a real-looking tensor captured: a cache hit.
        import importlib.util
        spec = importlib.util.spec_from_file_location(
            "my_hooks", os.path.join(folder, "my_hooks.py"))
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        module.TABLE = flashtile.TensorSpec("torch.float32", 1)
        calls = self.calls
        kernel = self.build(score_mod=module.bias)
        self.assertEqual(kernel.key, keys[0])
        self.assertEqual(self.calls, calls)
        # The entry a request prints (the cache-miss error's) builds that
        # request's key: scale and name enter the traced IR, so they are in
        # it.
        request = ftc.KernelRequest(64, causal=True, score_mod=module.bias,
                                    scale=0.3, name="scaled", isa="sm_90")
        printed = request.manifest_entry
        self.assertEqual((printed["scale"], printed["name"]), (0.3, "scaled"))
        printed["hooks"] = "my_hooks.py"
        printed["captures"] = {"TABLE": ["float32", 1]}
        with open(manifest, "w") as f:
            json.dump({"kernels": [printed]}, f)
        with contextlib.redirect_stderr(io.StringIO()):
            keys = prebuild(manifest, cache=self.cache, out=io.StringIO())
        self.assertEqual(keys, [ftc.cache_key(request)])
        # A capture that is None when the hooks file is imported, with no
        # `captures` entry: an error that names `captures`.
        del printed["captures"]
        with open(manifest, "w") as f:
            json.dump({"kernels": [printed]}, f)
        with self.assertRaises(FlashTileError) as e:
            prebuild(manifest, cache=self.cache, out=io.StringIO())
        self.assertIn("TABLE is None while the hook is traced", str(e.exception))
        self.assertIn("`captures`", str(e.exception))
        # A bad manifest: a clear error.
        with open(manifest, "w") as f:
            json.dump({"hooks": "my_hooks.py",
                       "kernels": [dict(entry, score_mod="nope")]}, f)
        with self.assertRaises(FlashTileError) as e:
            prebuild(manifest, cache=self.cache, out=io.StringIO())
        self.assertIn("score_mod 'nope' is not defined in my_hooks.py",
                      str(e.exception))
        with open(manifest, "w") as f:
            json.dump({"hooks": "my_hooks.py",
                       "kernels": [dict(entry, head_dims=64)]}, f)
        with self.assertRaises(FlashTileError) as e:
            prebuild(manifest, cache=self.cache, out=io.StringIO())
        self.assertIn("kernels[0]: unknown field(s) head_dims", str(e.exception))
        # The command line: a clear error and exit status 1.
        import subprocess
        import sys
        proc = subprocess.run(
            [sys.executable, "-m", "flashtile", "prebuild", manifest,
             "--cache", self.cache], capture_output=True, text=True)
        self.assertEqual(proc.returncode, 1)
        self.assertIn("flashtile prebuild: error: ", proc.stderr)
        self.assertIn("unknown field(s) head_dims", proc.stderr)
        # The package's own hooks by module:function: flashtile.varlen's
        # mask gives the entry a call would ask for, and the kernel a call
        # hits; an unknown module or function is a clear error.
        from flashtile import _varlen
        caps = {n: flashtile.TensorSpec("torch.int32", 1)
                for n in ("seq_q", "start_k", "end_k")}
        request = ftc.KernelRequest(64, mask_mod=_varlen.mask, isa="sm_90",
                                    captures=caps)
        self.assertEqual(request.manifest_entry["mask_mod"],
                         "flashtile._varlen:mask")
        self.assertNotIn("hooks", request.manifest_entry)
        packaged = {"head_dim": 64, "dtype": "bf16", "causal": False,
                    "mask_mod": "flashtile._varlen:mask", "arch": "sm_120",
                    "isa": "sm_90",
                    "captures": {n: ["int32", 1] for n in caps}}
        with open(manifest, "w") as f:
            json.dump({"hooks": "my_hooks.py", "kernels": [packaged]}, f)
        with contextlib.redirect_stderr(io.StringIO()):
            keys = prebuild(manifest, cache=self.cache, out=io.StringIO())
        self.assertEqual(keys, [ftc.cache_key(request)])
        for name, why in (("flashtile._nothing:mask", "cannot be imported"),
                          ("flashtile._varlen:nope",
                           "mask_mod 'nope' is not defined in "
                           "flashtile._varlen")):
            with open(manifest, "w") as f:
                json.dump({"kernels": [dict(packaged, mask_mod=name)]}, f)
            with self.assertRaises(FlashTileError) as e:
                prebuild(manifest, cache=self.cache, out=io.StringIO())
            self.assertIn(why, str(e.exception))

    def test_compile_errors(self):
        with self.assertRaises(FlashTileError) as e:
            self.build(head_dim=84)
        self.assertIn("head_dim = 84 is not supported", str(e.exception))
        with self.assertRaises(FlashTileError) as e:
            self.build(isa="sm_99")
        self.assertIn("unknown ISA 'sm_99'", str(e.exception))
        with self.assertRaises(FlashTileError):
            self.build(head_dim="128")
        self.assertFalse(any(name.startswith(".tmp") for _, dirs, _ in
                             os.walk(self.cache) for name in dirs))


class ManifestSchemaTest(unittest.TestCase):
    """KernelSpec is the manifest's schema: an entry written from a request
    reads back as a spec of the same IR, pins, chip and ISA, and names only
    KernelSpec's fields (and the hooks file)."""

    def test_round_trip(self):
        request = ftc.KernelRequest(
            64, "f16", head_dim_v=32, window=(100, 0), scale=0.3,
            score_mod=softcap, arch="sm_120", isa="sm_90", tile_n=64,
            stages=2, name="schema_case", family="decode", kv_warps=4)
        entry = request.manifest_entry
        fields = {f.name for f in dataclasses.fields(ftc.KernelSpec)}
        self.assertLessEqual(set(entry) - {"hooks"}, fields)
        self.assertEqual(entry["score_mod"], "softcap")
        again = ftc.KernelRequest.from_spec(ftc.KernelSpec.from_manifest(
            entry, {"score_mod": softcap}, None))
        self.assertEqual(again.ir, request.ir)
        self.assertEqual(again.pins, request.pins)
        self.assertEqual((again.arch, again.isa), (request.arch, request.isa))
        self.assertEqual(again.description, request.description)


@unittest.skipIf(shutil.which("flashtile-compile") is None,
                 "no flashtile-compile on PATH")
class KernelShellTest(unittest.TestCase):
    """The Python front end's kernel shell (_kernel_ir.kernel_shell, which
    hooks and tile programs share) is the C++ DSL's (createKernelShell):
    the same kernel from each gives the same PTX, byte for byte."""

    def test_python_and_cpp_shells_make_one_kernel(self):
        import subprocess
        for dtype, d, dv, causal in (("bf16", 64, 64, True),
                                     ("f16", 128, 64, False)):
            name = f"shell_{dtype}_{d}_{dv}"
            with tempfile.TemporaryDirectory() as cache:
                kernel = flashtile.compile(d, dtype, head_dim_v=dv,
                                           causal=causal, name=name,
                                           cache=cache)
                ptx = kernel.ptx
            flags = [f"--dtype={dtype}", f"--head-dim={d}",
                     f"--head-dim-v={dv}", f"--kernel-name={name}",
                     "--emit=ptx", "-o", "-"]
            if causal:
                flags.append("--causal")
            cpp = subprocess.run(["flashtile-compile"] + flags,
                                 capture_output=True, text=True, check=True)
            self.assertEqual(ptx, cpp.stdout, f"{dtype} d={d}/{dv}")


if __name__ == "__main__":
    unittest.main()
