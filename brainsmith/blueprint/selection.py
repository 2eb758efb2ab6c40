"""``load_blueprint_plugins``: the plugin collections a blueprint selects, remembered.

Blueprint mode is the production path: a process that names its plugins in a blueprint
should start as fast as one that lists them all. A resolved selection (per plugin type, the
qualified names chosen) is kept in the cache directory, keyed by what decides it: the
blueprint and every file it extends (their stamps), the discovery index (the stamps of every
source it read), the configured frameworks and priority. Within that, a later process serves
the selection without importing YAML or the blueprint checker; anything else — an edited or
moved file, an installed or removed package, a plugin added at run time, a design space —
reads and resolves the blueprint in full (``loader.load_blueprint``), which also reports every
problem, and stores the selection again.
"""

from __future__ import annotations

import os

from brainsmith.plugin import log
from brainsmith.plugin.collections import PluginCollection
from brainsmith.plugin.discovery.stamps import digest32, stamp_paths, unchanged
from brainsmith.plugin.manager import get_plugin_manager
from brainsmith.plugin.settings import memo

TYPE_CHECKING = False
if TYPE_CHECKING:
    from brainsmith.blueprint.resolved import Blueprint
    from brainsmith.plugin.manager import PluginManager
    from brainsmith.plugin.registry import Registry
    from brainsmith.plugin.spec import PluginSpec

COLLECTION_NAMES = {
    "transform": "transforms",
    "kernel": "kernels",
    "backend": "backends",
    "step": "steps",
}


def load_blueprint_plugins(path: str | os.PathLike[str]) -> dict[str, PluginCollection]:
    """``{"transforms", "kernels", "backends", "steps"}``: collections of exactly the plugins
    the blueprint selects (kernels' allowed backends included), by short and qualified name.

        plugins = load_blueprint_plugins("blueprints/mlp.yaml")
        model = model.transform(plugins["transforms"].ExpandNorms())
    """
    manager = get_plugin_manager()
    registry = manager.registry()
    path = os.path.abspath(os.fspath(path))
    key = _key(manager, registry)
    if key is not None:
        chosen = _remembered(path, key, registry)
        if chosen is not None:
            return collections(chosen, registry)
    from brainsmith.blueprint.loader import load_blueprint

    blueprint = load_blueprint(path)
    chosen = {kind: list(specs) for kind, specs in blueprint.specs().items()}
    if key is not None and blueprint.design_space is None:
        _remember(path, key, blueprint, chosen)
    return collections(chosen, registry)


def collections(
    chosen: dict[str, list[PluginSpec]], registry: Registry
) -> dict[str, PluginCollection]:
    """A collection per plugin type of the ``chosen`` specs; a short name means what it
    means in the registry, among the chosen."""
    result = {}
    for kind, specs in chosen.items():
        subset = {spec.qualified_name: spec for spec in specs}
        for spec in specs:
            best = next((c for c in registry.candidates(kind, spec.name) if c in specs), spec)
            subset.setdefault(spec.name, best)
        result[COLLECTION_NAMES[kind]] = PluginCollection(kind, subset=subset)
    return result


def _key(manager: PluginManager, registry: Registry) -> list[object] | None:
    """What the selection depends on besides the blueprint's files; None when the registry
    holds plugins added at run time (they are not in the index: never remembered)."""
    if not registry.discovered_only():
        return None
    config = manager.config
    return [
        manager.index_fingerprint(),
        list(config.framework_priority),
        list(config.frameworks or ()),
    ]


def _name(path: str) -> str:
    return f"blueprint-{digest32(path):08x}"


def _remembered(
    path: str, key: list[object], registry: Registry
) -> dict[str, list[PluginSpec]] | None:
    payload = memo.read(_name(path), [path, *key], quiet=True)
    if not isinstance(payload, dict) or not unchanged(payload.get("files")):
        return None
    chosen = _chosen(payload.get("chosen", {}), registry)
    if chosen is None:
        return None
    for line in payload.get("skipped", ()):
        log.info("%s", line)
    return chosen


def _chosen(recorded: dict[str, object], registry: Registry) -> dict[str, list[PluginSpec]] | None:
    """The plugins a remembered selection names, by kind; None when one is gone."""
    chosen: dict[str, list[PluginSpec]] = {}
    for kind, names in recorded.items():
        if kind not in COLLECTION_NAMES or not isinstance(names, list):
            return None
        specs = [_spec(registry, kind, str(name)) for name in names]
        if None in specs:
            return None
        chosen[kind] = [spec for spec in specs if spec is not None]
    return chosen


def _spec(registry: Registry, kind: str, qualified: str) -> PluginSpec | None:
    """The registered plugin of this qualified name, or None (the selection is stale)."""
    framework, _, short = qualified.partition(":")
    return next((s for s in registry.candidates(kind, short) if s.framework == framework), None)


def _remember(
    path: str, key: list[object], blueprint: Blueprint, chosen: dict[str, list[PluginSpec]]
) -> None:
    payload = {
        "files": stamp_paths(list(blueprint.chain)),
        "chosen": {kind: [s.qualified_name for s in specs] for kind, specs in chosen.items()},
        "skipped": [
            f"{s.file}:{s.line}: optional {s.type} '{s.name}' skipped: {s.reason}"
            for s in blueprint.skipped
        ],
    }
    memo.write(_name(path), [path, *key], payload, quiet=True)
