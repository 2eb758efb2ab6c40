"""Resolve class inheritance across many scanned modules, without importing any of them."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from brainsmith.plugin.discovery.sources import ModuleFacts


TRANSFORMATION = "qonnx.transformation.base.Transformation"


class ClassIndex:
    """Every top-level class of a set of scanned modules, addressable by dotted name."""

    def __init__(self) -> None:
        self.modules: dict[str, ModuleFacts] = {}  # module -> scan data
        self.classes: dict[str, list[object]] = {}  # dotted -> [bases, line, doc]
        self._memo: dict[str, bool] = {}

    def add_module(self, module: str, data: ModuleFacts) -> None:
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
        if key not in self._memo:
            self._memo[key] = False  # guards against cycles
            parents = self.bases(dotted)
            self._memo[key] = any(self._derives(p, dotted, base) for p in parents)
        return self._memo[key]

    def bases(self, dotted: str) -> list[str]:
        """The bases (as the scan resolved them) of the class ``dotted``."""
        info = self.classes.get(dotted)
        bases = info[0] if info else []
        return [b for b in bases if isinstance(b, str)] if isinstance(bases, list) else []

    def _derives(self, parent: str, dotted: str, base: str) -> bool:
        """``parent``, a base of ``dotted``, is ``base`` or a subclass of it."""
        if parent == base:
            return True
        real = self.resolve(parent)
        if real == base:
            return True
        return real is not None and real != dotted and self.is_subclass(real, base)
