"""Builds the `flashtile` Python package with the project's CMake build.

    pip install --no-build-isolation .                      # compiler + runtime
    FLASHTILE_RUNTIME_ONLY=1 pip install --no-build-isolation .   # runtime only

The full package needs Debian's LLVM/MLIR 22 (tools/setup.sh); the
runtime-only one needs CMake, a C++17 compiler and pybind11 (the GPU machine
has them, without LLVM), and loads kernels from the cache a full
installation filled (python -m flashtile prebuild). The CMake build folder
is reused when it exists: build/ (build-rt/ runtime-only), or
$FLASHTILE_BUILD_DIR. The version is the CMake project's.
"""

import glob
import os
import re
import shutil
import subprocess
import sys

from setuptools import setup
from setuptools.command.build_ext import build_ext
from setuptools.dist import Distribution

ROOT = os.path.dirname(os.path.abspath(__file__))


def project_version():
    with open(os.path.join(ROOT, "CMakeLists.txt")) as f:
        match = re.search(r"project\(flashtile VERSION ([0-9.]+)", f.read())
    return match.group(1)


def runtime_only():
    return os.environ.get("FLASHTILE_RUNTIME_ONLY", "") not in ("", "0", "OFF")


class CMakeBuild(build_ext):
    """Builds the extensions with CMake, then packages the CMake build's
    python_bindings/flashtile folder (sources, _build.py, extensions)."""

    def run(self):
        only = runtime_only()
        build = os.environ.get("FLASHTILE_BUILD_DIR") or os.path.join(
            ROOT, "build-rt" if only else "build")
        if not os.path.exists(os.path.join(build, "CMakeCache.txt")):
            configure = ["cmake", "-S", ROOT, "-B", build,
                         f"-DPython3_EXECUTABLE={sys.executable}"]
            if shutil.which("ninja"):
                configure += ["-G", "Ninja"]
            if only:
                configure.append("-DFLASHTILE_RUNTIME_ONLY=ON")
            else:
                configure.append("-DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir")
            try:
                import pybind11
                configure.append(f"-Dpybind11_DIR={pybind11.get_cmake_dir()}")
            except ImportError:
                pass  # Debian's pybind11-dev: found by CMake itself
            subprocess.check_call(configure)
        targets = ["flashtile_runtime_module", "flashtile_python_build_id"]
        if not only:
            targets.append("flashtile_compiler_module")
        subprocess.check_call(["cmake", "--build", build, "--target", *targets])
        package = os.path.join(build, "python_bindings", "flashtile")
        target = os.path.join(self.build_lib, "flashtile")
        os.makedirs(target, exist_ok=True)
        for path in glob.glob(os.path.join(package, "*.py")) + glob.glob(
                os.path.join(package, "*.so")):
            shutil.copy2(path, target)


class BinaryDistribution(Distribution):
    """The package holds CMake-built extensions: a platform wheel."""

    def has_ext_modules(self):
        return True


setup(
    version=project_version(),
    distclass=BinaryDistribution,
    packages=[],
    cmdclass={"build_ext": CMakeBuild},
    # setuptools' own build folder, apart from CMake's build/.
    options={"build": {"build_base": "build-py"}},
    zip_safe=False,
)
