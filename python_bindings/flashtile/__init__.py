"""FlashTile's Python package.

At this stage it only names the package and its version; the run-side
runtime (``flashtile.runtime``) and the DSL bindings are built on top of the
compiler described in the repository's README.
"""

__version__ = "0.1.0"
