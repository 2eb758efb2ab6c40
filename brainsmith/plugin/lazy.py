"""Module attributes imported on first use: a package lists ``name -> module`` and stays
cheap to import (``brainsmith.blueprint``, ``brainsmith.plugin.lifecycle``)."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable


def lazy_attributes(
    package: str, exports: dict[str, str], names: list[str]
) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for ``package``: each name of ``exports`` comes from
    its module (a constant of the table) on first access, and is kept."""
    import sys

    def __getattr__(name: str) -> object:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        __import__(module)  # importlib.import_module without loading importlib and warnings
        value = getattr(sys.modules[module], name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return names

    return __getattr__, __dir__
