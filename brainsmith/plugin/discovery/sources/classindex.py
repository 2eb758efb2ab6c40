"""Resolve class inheritance across many scanned modules, without importing any of them."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


TRANSFORMATION = "qonnx.transformation.base.Transformation"


class ClassIndex:
    """Every top-level class of a set of scanned modules, addressable by dotted name."""

    def __init__(self) -> None:
        self.modules: dict[str, dict[str, Any]] = {}  # module -> scan data
        self.classes: dict[str, list[Any]] = {}  # dotted -> [bases, line, doc]
        self._memo: dict[str, bool] = {}

    def add_module(self, module: str, data: dict[str, Any]) -> None:
        self.modules[module] = data
        for name, info in data.get("classes", {}).items():
            self.classes[f"{module}.{name}"] = info

    def resolve(self, dotted: str) -> str | None:
        """Follow re-exports (``from x import Y`` in a package) to where a class is defined."""
        for _ in range(16):
            if dotted in self.classes:
                return dotted
            module, _, name = dotted.rpartition(".")
            data = self.modules.get(module)
            if data is None or name not in data.get("imports", {}):
                return None
            dotted = data["imports"][name]
        return None

    def is_subclass(self, dotted: str, base: str = TRANSFORMATION) -> bool:
        key = f"{dotted}<{base}"
        if key in self._memo:
            return self._memo[key]
        self._memo[key] = False  # guards against cycles
        result = False
        for parent in self.classes.get(dotted, [[]])[0]:
            if parent == base:
                result = True
                break
            real = self.resolve(parent)
            if real == base or (
                real is not None and real != dotted and self.is_subclass(real, base)
            ):
                result = True
                break
        self._memo[key] = result
        return result
