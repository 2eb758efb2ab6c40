"""Third-party hardware layers where QONNX and FINN look for them.

A ``@kernel`` or ``@backend`` plugin whose class is a QONNX ``CustomOp`` is registered when
the registry serves it (``Registry.load`` calls ``on_layer_loaded``): a kernel under its
``op_type`` in ``finn.custom_op.fpgadataflow``, a backend as ``<kernel op_type>_hls`` or
``_rtl`` in ``finn.custom_op.fpgadataflow.hls`` / ``.rtl`` — in QONNX's registry
(``add_op_to_domain``) and in FINN's ``custom_op`` tables, which ``SpecializeLayers`` reads
to know which backends exist. A class named otherwise is registered as a subclass with the
right name. FINN's own entries are never replaced.

A build records which plugin provides each layer type FINN does not have (``PROVIDERS_KEY``
in each saved model's metadata); a fresh process reading such a model calls
``require_layers`` to load those plugins first, or learns which package is missing.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import threading

from brainsmith.errors import BrainsmithError
from brainsmith.frameworks.finn.facts import HW_DOMAIN, LAYER_DOMAINS
from brainsmith.frameworks.finn.tables import is_custom_op_class
from brainsmith.plugin.errors import PluginError, PluginNotFoundError
from brainsmith.plugin.manager import get_plugin_manager
from brainsmith.plugin.names import short_name

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence
    from typing import Protocol

    from qonnx.core.modelwrapper import ModelWrapper

    from brainsmith.plugin.registry import Registry
    from brainsmith.plugin.spec import PluginSpec

    class PlannedKernel(Protocol):
        """What this module reads of a build plan's kernel (``planning.plan``)."""

        name: str
        backends: list[str]

    class BuildPlan(Protocol):
        """What this module reads of a build plan (``planning.plan.BuildPlan``)."""

        @property
        def kernels(self) -> Sequence[PlannedKernel] | None: ...


PROVIDERS_KEY = "brainsmith.layer_plugins"  # model metadata: op type -> its plugin (JSON)
BUILTIN = ("finn", "qonnx")  # frameworks whose layers FINN registers itself
# Layers brainsmith's own steps insert (no blueprint chooses them, so they are no plugins):
# the function that registers each with QONNX and FINN, imported when a model has one.
INSERTED_LAYERS = {"WidthConverter_rtl": "brainsmith.backends.converters:register"}

_lock = threading.RLock()
_ours: dict[tuple[str, str], tuple[type, PluginSpec]] = {}  # (domain, op type) -> what we put
_seen: dict[tuple[str, str], object] = {}  # (type, qualified name) -> the object handled


class LayerPluginError(BrainsmithError, LookupError):
    """A model's layer type that no installed plugin provides: ``reason`` and ``hint``."""

    def __init__(self, reason: str, hint: str = "") -> None:
        super().__init__(reason + (f" ({hint})" if hint else ""))
        self.reason, self.hint = reason, hint


# -- registration --------------------------------------------------------------------------
def on_layer_loaded(registry: Registry, spec: PluginSpec, obj: object) -> None:
    """Register a loaded kernel or backend class where QONNX and FINN look (idempotent)."""
    if spec.framework in BUILTIN:
        return
    key = (spec.type, spec.qualified_name)
    if _seen.get(key) is obj or not isinstance(obj, type):
        return
    if not is_custom_op_class(obj):
        return
    place = layer_place(registry, spec)
    if place is None:
        return
    with _lock:
        _register_once(place, obj, spec)
        _seen[key] = obj
    for kernel in _kernels_of(registry, spec) if spec.type == "backend" else ():
        with contextlib.suppress(PluginError):  # a broken kernel fails where it is used
            registry.load(kernel)  # a backend's layers run as its kernel's in Python


def _register_once(place: tuple[str, str], obj: type, spec: PluginSpec) -> None:
    """Register ``obj`` at ``place`` unless it (or the subclass named for it) is there."""
    held = _ours.get(place)
    if held is None or not (held[0] is obj or held[0].__bases__ == (obj,)):
        _register(*place, obj, spec, replacing=held is not None)


def layer_place(registry: Registry, spec: PluginSpec) -> tuple[str, str] | None:
    """(domain, op type) the layer of a kernel or backend spec is found under; None for a
    kernel that declares a domain other than FINN's."""
    if spec.type == "kernel":
        declared = spec.metadata.get("domain") or HW_DOMAIN
        return (HW_DOMAIN, kernel_op_type(spec)) if declared == HW_DOMAIN else None
    style = spec.metadata.get("backend_type")
    if spec.type != "backend" or style not in ("hls", "rtl"):
        return None
    kernel = _kernel_of(registry, spec)
    op_type = kernel_op_type(kernel) if kernel is not None else _short(spec)
    return f"{HW_DOMAIN}.{style}", f"{op_type}_{style}"


def kernel_op_type(spec: PluginSpec) -> str:
    return str(spec.metadata.get("op_type") or spec.name)


def _short(spec: PluginSpec) -> str:
    return short_name(str(spec.metadata.get("kernel", "")))


def _decomposed_kernels(registry: Registry, kernels: Iterable[str]) -> set[str]:
    """The names of the kernels the planned ``kernels`` are decomposed into by a later step
    (``decomposes_into``: FINN's Shuffle into InnerShuffle and OuterShuffle)."""
    parts: set[str] = set()
    for name in kernels:
        try:
            spec = registry.find("kernel", name)
        except PluginNotFoundError:
            continue
        parts.update(str(part) for part in spec.metadata.get("decomposes_into") or ())
    return parts


def _kernel_of(registry: Registry, spec: PluginSpec) -> PluginSpec | None:
    """The kernel a backend implements: its own framework's first, then by priority."""
    name = str(spec.metadata.get("kernel", ""))
    tries = [name] if ":" in name else [f"{spec.framework}:{name}", name]
    for wanted in tries:
        try:
            return registry.find("kernel", wanted)
        except PluginNotFoundError:
            continue
    return None


def _register(domain: str, op_type: str, obj: type, spec: PluginSpec, replacing: bool) -> None:
    from qonnx.custom_op.registry import add_op_to_domain, is_custom_op

    if not replacing and is_custom_op(domain, op_type):
        return  # FINN's own layer (or a brainsmith class keeping FINN's name): left alone
    table = getattr(importlib.import_module(domain), "custom_op", None)
    cls = obj
    if obj.__name__ != op_type:  # QONNX names an op after its class
        cls = type(op_type, (obj,), {"__module__": obj.__module__, "__doc__": obj.__doc__})
    add_op_to_domain(domain, cls)
    if isinstance(table, dict):
        table[op_type] = cls
    _ours[(domain, op_type)] = (cls, spec)


def registered_layers() -> dict[str, PluginSpec]:
    """Op type -> the plugin spec brainsmith registered it from, in this process."""
    with _lock:
        return {op_type: spec for (_, op_type), (_, spec) in _ours.items()}


# -- what a build records ------------------------------------------------------------------
def providers(model: ModelWrapper) -> dict[str, dict[str, str]]:
    """Op type -> its plugin (``type``, ``plugin``, ``distribution``, ``version``,
    ``source``) for each layer of ``model`` that a plugin provides rather than FINN."""
    mine = registered_layers()
    found: dict[str, dict[str, str]] = {}
    for node in model.graph.node:
        spec = mine.get(node.op_type) if node.domain in LAYER_DOMAINS else None
        if spec is not None and node.op_type not in found:
            found[node.op_type] = describe(spec)
    return found


def describe(spec: PluginSpec) -> dict[str, str]:
    entry = {"type": spec.type, "plugin": spec.qualified_name, "distribution": "", "version": ""}
    if spec.metadata.get("plugin_dir") or spec.framework == "user":
        entry["source"] = spec.source
        return entry
    entry["distribution"] = spec.framework
    from importlib.metadata import PackageNotFoundError, version

    with contextlib.suppress(PackageNotFoundError, ValueError):
        entry["version"] = version(spec.framework)
    return entry


def stamp(
    model: ModelWrapper, found: dict[str, dict[str, str]] | None = None
) -> dict[str, dict[str, str]]:
    """Record ``providers(model)`` (merged with what the model records) in its metadata."""
    merged = {**recorded(model), **(providers(model) if found is None else found)}
    if merged:
        model.set_metadata_prop(PROVIDERS_KEY, json.dumps(merged, sort_keys=True))
    return merged


def recorded(model: ModelWrapper) -> dict[str, dict[str, str]]:
    """The providers ``model``'s metadata records (empty when none or unreadable)."""
    text = model.get_metadata_prop(PROVIDERS_KEY)
    try:
        data = json.loads(text) if text else {}
    except ValueError:
        return {}
    if not isinstance(data, dict):
        return {}
    return {
        str(op): {str(k): str(v) for k, v in entry.items() if isinstance(v, str)}
        for op, entry in data.items()
        if isinstance(entry, dict)
    }


def note_lines(found: dict[str, dict[str, str]]) -> list[str]:
    """One human-readable line per provided layer type (for the build report's notes)."""
    return [f"layer {op} is provided by {_provider(entry)}" for op, entry in sorted(found.items())]


# -- what a fresh process does -------------------------------------------------------------
def load_plan_layers(plan: BuildPlan, registry: Registry | None = None) -> list[str]:
    """Load the kernels of ``plan`` (a ``BuildPlan``) and every backend of them, so their
    layers are registered before conversion and specialisation; returns their names."""
    if plan.kernels is None:
        return []
    registry = registry or _registry()
    kernels = {k.name: k for k in plan.kernels}
    parts = _decomposed_kernels(registry, kernels)
    loaded = []
    for spec in [*registry.specs("kernel"), *registry.specs("backend")]:
        if spec.framework not in BUILTIN and _planned(registry, spec, kernels, parts):
            registry.load(spec)
            loaded.append(spec.qualified_name)
    return loaded


def _planned(
    registry: Registry, spec: PluginSpec, kernels: dict[str, PlannedKernel], parts: set[str]
) -> bool:
    """Whether a kernel or backend spec is one the plan's ``kernels`` use: a planned
    kernel, a backend the blueprint allows (all of an unrestricted kernel's), or a backend
    of the kernels a planned one becomes (``parts``: a Shuffle's OuterShuffle)."""
    if spec.type == "kernel":
        return spec.qualified_name in kernels
    kernel = _kernel_of(registry, spec)
    if kernel is None:
        return False
    choice = kernels.get(kernel.qualified_name)
    if choice is None:
        return kernel.name in parts
    return spec.qualified_name in (choice.backends or [spec.qualified_name])


def register_finn_layers(op_types: Iterable[str], registry: Registry | None = None) -> list[str]:
    """Import the modules of FINN's own layers among ``op_types`` that FINN's package leaves
    unregistered (``finn.custom_op.fpgadataflow`` never imports ``reshape.py``: its
    ``Reshape`` is known only once something imports the RTL backends), so FINN's infer
    transforms find the layers they create. Returns the op types imported."""
    from qonnx.custom_op.registry import is_custom_op

    registry = registry or _registry()
    imported = []
    for op_type in dict.fromkeys(op_types):
        if is_custom_op(HW_DOMAIN, op_type):
            continue
        try:
            registry.load(registry.find("kernel", op_type, framework="finn"))
        except PluginError:
            continue  # not one of FINN's layers: a plugin's, loaded by load_plan_layers
        imported.append(op_type)
    return imported


def require_layers(
    model: ModelWrapper, label: str, extra: dict[str, dict[str, str]] | None = None
) -> list[str]:
    """Load the plugins that provide ``model``'s hardware layers (``label`` names the model
    in messages; ``extra`` adds providers recorded elsewhere, e.g. checkpoint.json).
    Returns the plugins loaded; LayerPluginError naming the layer type and the missing
    package or plugin when one cannot be loaded. FINN must be prepared (``prepare_finn``)."""
    from qonnx.custom_op.registry import is_custom_op

    known = {**(extra or {}), **recorded(model)}
    missing = _hardware_layers(model)
    for op_type in missing.keys() & INSERTED_LAYERS:
        module, _, function = INSERTED_LAYERS[op_type].partition(":")
        getattr(importlib.import_module(module), function)()
    todo = {op: where for op, where in missing.items() if not is_custom_op(where[0], op)}
    if not todo:
        return []
    registry = _registry()
    loaded: list[str] = []
    for op_type, (domain, node) in todo.items():
        entry = known.get(op_type)
        problem = _load_provider(registry, domain, op_type, entry, loaded)
        if problem is None and is_custom_op(domain, op_type):
            continue
        raise _unprovided(f"layer {node} ({op_type}) of {label}", domain, op_type, entry, problem)
    return loaded


def _hardware_layers(model: ModelWrapper) -> dict[str, tuple[str, str]]:
    """Each hardware layer type of ``model`` -> (its domain, the first node of it)."""
    found: dict[str, tuple[str, str]] = {}
    for node in model.graph.node:
        if node.domain in LAYER_DOMAINS:
            found.setdefault(node.op_type, (node.domain, node.name))
    return found


def _unprovided(
    where: str, domain: str, op_type: str, entry: dict[str, str] | None, problem: str | None
) -> LayerPluginError:
    """The error for a layer type whose provider (recorded in ``entry``, or none) failed."""
    if entry:
        return LayerPluginError(
            f"{where} is provided by {_provider(entry)}, which cannot be loaded: "
            f"{problem or 'it did not register ' + op_type}",
            _install_hint(entry),
        )
    return LayerPluginError(
        f"{where}: no installed plugin provides layer type {op_type} "
        f"in domain {domain}{': ' + problem if problem else ''}",
        "install the plugin package that provides it (brainsmith plugins list --type "
        "kernel shows what is installed)",
    )


def _load_provider(
    registry: Registry,
    domain: str,
    op_type: str,
    entry: dict[str, str] | None,
    loaded: list[str],
) -> str | None:
    """Load the plugin recorded for ``op_type``, else any plugin whose layer it is; the
    reason it failed, or None."""
    try:
        for spec in _providers_of(registry, domain, op_type, entry):
            registry.load(spec)
            loaded.append(spec.qualified_name)
    except PluginError as exc:
        return str(exc)
    return None


def _providers_of(
    registry: Registry, domain: str, op_type: str, entry: dict[str, str] | None
) -> list[PluginSpec]:
    """The plugin recorded in ``entry`` (a backend with its kernel), else every plugin whose
    layer is ``op_type`` in ``domain`` (backends with their kernels)."""
    if entry and entry.get("plugin") and entry.get("type") in ("kernel", "backend"):
        spec = registry.find(entry["type"], entry["plugin"])
        return [spec] + ([] if spec.type == "kernel" else _kernels_of(registry, spec))
    specs = _plugin_layers(registry, domain, op_type)
    return specs + [k for s in specs if s.type == "backend" for k in _kernels_of(registry, s)]


def _plugin_layers(registry: Registry, domain: str, op_type: str) -> list[PluginSpec]:
    """The plugins' kernels and backends whose layer is ``op_type`` in ``domain``."""
    return [
        s
        for s in [*registry.specs("kernel"), *registry.specs("backend")]
        if s.framework not in BUILTIN and layer_place(registry, s) == (domain, op_type)
    ]


def _kernels_of(registry: Registry, backend: PluginSpec) -> list[PluginSpec]:
    kernel = _kernel_of(registry, backend)
    return [kernel] if kernel is not None and kernel.framework not in BUILTIN else []


def _provider(entry: dict[str, str]) -> str:
    text = f"{entry.get('type', 'plugin')} {entry.get('plugin', '?')}"
    if entry.get("distribution") == "brainsmith":
        return f"{text} (built into brainsmith)"
    if entry.get("distribution"):
        version = f" {entry['version']}" if entry.get("version") else ""
        return f"{text} (pip package {entry['distribution']}{version})"
    if entry.get("source"):
        return f"{text} (plugin folder file {entry['source']})"
    return text


def _install_hint(entry: dict[str, str]) -> str:
    dist = entry.get("distribution")
    if dist:
        pinned = f"{dist}=={entry['version']}" if entry.get("version") else dist
        return f"install it (pip install {pinned}) in this environment, then run this again"
    if entry.get("source"):
        return "list the plugin folder that holds it in plugin_system.plugin_dirs"
    return "install the plugin that provides it"


def _registry() -> Registry:
    return get_plugin_manager().registry()


def forget() -> None:
    """Drop this module's record of what it registered (the registrations stay)."""
    with _lock:
        _ours.clear()
        _seen.clear()


__all__ = [
    "PROVIDERS_KEY",
    "LayerPluginError",
    "load_plan_layers",
    "on_layer_loaded",
    "providers",
    "require_layers",
    "stamp",
]
