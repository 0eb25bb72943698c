"""FlashTile's Python package.

``flashtile.runtime`` loads a compiled kernel (its metadata JSON and cubin,
as ``flashtile-compile --emit=cubin --metadata`` writes them) and launches it
on CUDA torch tensors. It is pure Python (ctypes on the CUDA driver), so it
runs where no LLVM/MLIR is installed.
"""

__version__ = "0.1.0"
