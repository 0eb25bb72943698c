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
                   "test_runtime.py", "__pycache__"]

config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.flashtile_obj_root, "test")

config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%flashtile_src_root", config.flashtile_src_root))
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

# ptxas (CUDA toolkit) for the cubin tests: found the way flashtile-compile
# finds it.
import shutil

def find_ptxas():
    candidates = []
    if os.environ.get("CUDA_HOME"):
        candidates.append(os.path.join(os.environ["CUDA_HOME"], "bin", "ptxas"))
    candidates.append("/usr/local/cuda/bin/ptxas")
    for path in candidates:
        if os.access(path, os.X_OK):
            return path
    return shutil.which("ptxas")

if find_ptxas():
    config.available_features.add("ptxas")
if os.environ.get("CUDA_HOME"):
    config.environment["CUDA_HOME"] = os.environ["CUDA_HOME"]
