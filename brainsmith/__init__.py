"""brainsmith: a plugin hub for FPGA dataflow compilers built on QONNX and FINN.

Importing this package is cheap: plugins, QONNX and FINN load only when used.
"""

from __future__ import annotations

__all__ = ["__version__", "build", "explore"]

TYPE_CHECKING = False
if TYPE_CHECKING:  # the lazy names, for type checkers
    from brainsmith.builder import build as build
    from brainsmith.dse import explore as explore
    from brainsmith.version import __version__ as __version__


def __getattr__(name: str) -> object:
    if name == "__version__":
        from brainsmith.version import __version__

        return __version__
    if name == "build":
        from brainsmith.builder import build

        return build
    if name == "explore":
        from brainsmith.dse import explore

        return explore
    raise AttributeError(f"module 'brainsmith' has no attribute {name!r}")
