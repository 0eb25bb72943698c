# -*- Python -*-
import os
import sys

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "FlashTile"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py", "Inputs",
                   "Golden", "corpus", "__pycache__"]

config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.flashtile_obj_root, "test")

config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%flashtile_src_root", config.flashtile_src_root))
config.substitutions.append(("%flashtile_obj_root", config.flashtile_obj_root))
config.substitutions.append(("%flashtile_tools_dir", config.flashtile_tools_dir))
config.substitutions.append(("%python", sys.executable))

llvm_config.with_system_environment(["HOME", "INCLUDE", "LIB", "TMP", "TEMP"])
llvm_config.use_default_substitutions()

tool_dirs = [config.flashtile_tools_dir, config.llvm_tools_dir]
tools = [
    ToolSubst("flashtile-opt", unresolved="fatal"),
    ToolSubst("flashtile-compile", unresolved="fatal"),
]
llvm_config.add_tool_substitutions(tools, tool_dirs)
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.flashtile_tools_dir, append_path=True)

# ptxas (CUDA toolkit) for the cubin tests: the one flashtile-compile
# finds (the library's search, flashtile::findPtxas), asked of the tool.
import subprocess

def find_ptxas():
    tool = os.path.join(config.flashtile_tools_dir, "flashtile-compile")
    try:
        found = subprocess.run([tool, "--print-ptxas"], capture_output=True,
                               text=True, timeout=60)
    except OSError:
        return None
    return found.stdout.strip() if found.returncode == 0 else None

ptxas = find_ptxas()
if ptxas:
    config.available_features.add("ptxas")
    # The real ptxas, for tests that wrap it (Compiler/Inputs/spilling-ptxas.sh).
    config.substitutions.append(("%real_ptxas", ptxas))

# pip, setuptools and wheel in lit's Python: the package install test.
import importlib.util
if all(importlib.util.find_spec(m) for m in ("pip", "setuptools", "wheel")):
    config.available_features.add("pip-install")
# torch in lit's Python (Debian's python3-torch, CPU): the autograd tests.
if importlib.util.find_spec("torch"):
    config.available_features.add("torch")
if os.environ.get("CUDA_HOME"):
    config.environment["CUDA_HOME"] = os.environ["CUDA_HOME"]

# The ptxas the golden cubins were made with (test/Compiler/Golden): cubins
# are compared byte for byte only with that version.
def ptxas_version(path):
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True,
                             timeout=60).stdout
    except Exception:
        return None
    lines = [l for l in out.splitlines() if l.strip()]
    return lines[-1].strip() if lines else None

if ptxas:
    golden = os.path.join(config.flashtile_src_root, "test", "Compiler",
                          "Golden", "matrix.sha256")
    with open(golden) as f:
        first = f.readline().lstrip("#").strip()
    if ptxas_version(ptxas) == first:
        config.available_features.add("golden-ptxas")

# The run side: the Python package root of the build and the GPU check
# program.
config.substitutions.append(
    ("%flashtile_python_path", os.path.join(config.flashtile_obj_root, "python_bindings")))
config.substitutions.append(
    ("%flashtile_run_check", os.path.join(config.flashtile_tools_dir, "flashtile-run-check")))

# GPU tests need a CUDA driver with a device, and torch.
import ctypes
def has_cuda_gpu():
    try:
        lib = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return False
    count = ctypes.c_int(0)
    return lib.cuInit(0) == 0 and lib.cuDeviceGetCount(ctypes.byref(count)) == 0 \
        and count.value > 0

if has_cuda_gpu():
    config.available_features.add("cuda-gpu")
try:
    import importlib.util
    if importlib.util.find_spec("torch") is not None:
        config.available_features.add("torch")
except Exception:
    pass
