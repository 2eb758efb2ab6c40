"""The framework adapters: the hub's only window on a framework.

The hub knows each framework by its adapter's target (``module:Class``), like any plugin,
and imports the adapter on first use. Everything framework-specific is the adapter's
(``plugin/discovery/sources/adapters.py`` is the contract): scanning its sources, what it
reads with it, preparing an import, deciding what it serves, how to install it, which parts
and boards it builds for, and registering hardware layers where it looks them up.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from brainsmith.plugin.discovery.sources.adapters import FrameworkAdapter

# framework -> (its adapter, the frameworks whose sources it reads with it)
ADAPTERS: dict[str, tuple[str, tuple[str, ...]]] = {
    "qonnx": ("brainsmith.frameworks.qonnx:QONNXAdapter", ()),
    "finn": ("brainsmith.frameworks.finn.adapter:FINNAdapter", ("qonnx",)),
}

_classes: dict[str, type[FrameworkAdapter]] = {}


def adapter_class(framework: str) -> type[FrameworkAdapter] | None:
    """The adapter of ``framework`` (imported on first use), or None for a plain framework."""
    if framework not in ADAPTERS:
        return None
    found = _classes.get(framework)
    if found is None:
        import importlib

        module, _, name = ADAPTERS[framework][0].partition(":")
        found = _classes[framework] = getattr(importlib.import_module(module), name)
    return found


def adapter_classes() -> list[type[FrameworkAdapter]]:
    """Every adapter, in the order their sources are read."""
    return [cls for name in ADAPTERS if (cls := adapter_class(name)) is not None]


def reads_with(framework: str) -> tuple[str, ...]:
    """The frameworks whose sources an adapter needs read too (FINN builds on QONNX)."""
    return ADAPTERS[framework][1] if framework in ADAPTERS else ()


def adapter_files() -> list[str]:
    """The source files of brainsmith's own adapters (their code decides what is indexed),
    found without importing them."""
    import os

    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # brainsmith/
    files = []
    for target, _ in ADAPTERS.values():
        parts = target.partition(":")[0].split(".")
        if parts[0] == "brainsmith":
            files.append(os.path.join(package, *parts[1:]) + ".py")
    return files


def prepare_import(module: str) -> None:
    """Let every adapter that must prepare its framework before ``module`` imports do so."""
    for cls in adapter_classes():
        if cls.prepares and module.startswith(cls.prepares):
            cls.prepare()


def install_hint(framework: str) -> str | None:
    """How to install ``framework``, when an adapter knows."""
    cls = adapter_class(framework)
    return cls.install_hint if cls is not None and cls.install_hint else None
