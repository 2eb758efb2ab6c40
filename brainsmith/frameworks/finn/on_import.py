"""Correct a FINN module once it is imported, without importing it early (FINN's modules pull
in torch, seconds): ``when_imported(name, correct)`` runs ``correct(module)`` now if the
module is loaded, else right after Python runs it, before anyone imports names from it."""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from importlib.machinery import ModuleSpec
    from types import ModuleType

    Correct = Callable[[ModuleType], None]


def when_imported(name: str, correct: Correct) -> None:
    """``correct(module)`` for module ``name``: now if it is loaded, else once it is (idempotent
    for a ``correct`` that is)."""
    module = sys.modules.get(name)
    if module is not None:
        correct(module)
        return
    for finder in sys.meta_path:
        if isinstance(finder, _OnImport):
            finder.corrections.setdefault(name, correct)
            return
    sys.meta_path.insert(0, _OnImport({name: correct}))


class _OnImport(importlib.abc.MetaPathFinder):
    """Finds the named modules as Python would, and corrects each once it has run; with
    every module corrected it leaves ``sys.meta_path``, so later imports do not ask it."""

    def __init__(self, corrections: dict[str, Correct]) -> None:
        self.corrections = corrections

    def find_spec(
        self, name: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        correct = self.corrections.get(name)
        if correct is None:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or not isinstance(spec.loader, importlib.abc.Loader):
            return spec
        run = spec.loader.exec_module

        def exec_module(module: ModuleType) -> None:
            run(module)
            correct(module)
            self.corrections.pop(name, None)
            if not self.corrections and self in sys.meta_path:
                sys.meta_path.remove(self)

        spec.loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec
