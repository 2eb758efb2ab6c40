"""brainsmith: a plugin hub for FPGA dataflow compilers built on QONNX and FINN.

Importing this package is cheap: plugins, QONNX and FINN load only when used.
"""

from __future__ import annotations

import sys

__all__ = ["__version__", "build", "explore"]

TYPE_CHECKING = False
if TYPE_CHECKING:  # the lazy names, for type checkers
    from collections.abc import Sequence
    from importlib.abc import Loader as _LoaderBase
    from importlib.machinery import ModuleSpec
    from types import ModuleType

    from brainsmith.builder import build as build
    from brainsmith.dse import explore as explore
    from brainsmith.version import __version__ as __version__
else:
    _LoaderBase = object  # importlib.abc costs start-up time; the protocol is enough at run time

# Old names of moved packages and modules, kept until brainsmith ``REMOVED_IN``: importing one
# (or one of a package's modules) warns and gives the module of the newest name, the same object,
# so classes and state are shared with code that uses the new name. The longest old name wins,
# and a name that moved twice (``brainsmith.rtlsim.sources``) follows both moves.
_MOVED = {
    "brainsmith.plugin.blueprint": "brainsmith.blueprint",
    "brainsmith.builder.gate": "brainsmith.intake.gate",
    "brainsmith.rtlsim": "brainsmith.hardware.rtlsim",
    "brainsmith.synthesis": "brainsmith.hardware.synthesis",
    "brainsmith.place_route": "brainsmith.hardware.place_route",
    "brainsmith.board": "brainsmith.hardware.board",
    "brainsmith.hardware.rtlsim.sources": "brainsmith.hardware.rtlsim.layer_design",
    "brainsmith.hardware.rtlsim.packing": "brainsmith.hardware.rtlsim.beats",
    "brainsmith.hardware.synthesis.sources": "brainsmith.hardware.synthesis.layer_sources",
    "brainsmith.hardware.place_route.sources": "brainsmith.hardware.place_route.stitched_sources",
    "brainsmith.verification.steps": "brainsmith.verification.quantizer_steps",
    "brainsmith.blueprint.model": "brainsmith.blueprint.resolved",
}


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


def _new_name(old: str) -> str | None:
    """``old``'s module under its newest name, None when ``old`` was not moved."""
    new = _moved_once(old)
    while new is not None and (newer := _moved_once(new)) is not None:
        new = newer
    return new


def _moved_once(old: str) -> str | None:
    """``old`` under the name its longest moved prefix moved to, None when there is none."""
    head, tail = old, ""
    while head:
        if head in _MOVED:
            return _MOVED[head] + tail
        head, _, last = head.rpartition(".")
        tail = f".{last}{tail}"
    return None


class _MovedFinder(_LoaderBase):
    """Ahead of the path on ``sys.meta_path``: an old name's module is the new name's."""

    def find_spec(
        self, name: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if not name.startswith("brainsmith.") or _new_name(name) is None:
            return None  # every import in the process asks: answer the others at once
        from importlib.machinery import ModuleSpec

        return ModuleSpec(name, self)

    def create_module(self, spec: ModuleSpec) -> None:
        return None  # a placeholder, replaced by the moved module in exec_module

    def exec_module(self, module: ModuleType) -> None:
        import warnings
        from importlib import import_module

        from brainsmith.version import REMOVED_IN

        new = _new_name(module.__name__) or module.__name__
        warnings.warn(
            f"{module.__name__} moved to {new}; the old name will be removed in brainsmith "
            f"{REMOVED_IN}",
            DeprecationWarning,
            stacklevel=2,  # the importing line (the import system's frames are skipped)
        )
        sys.modules[module.__name__] = import_module(new)


if not any(type(finder).__name__ == "_MovedFinder" for finder in sys.meta_path):
    sys.meta_path.insert(0, _MovedFinder())
