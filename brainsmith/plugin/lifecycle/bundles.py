"""Plugin packages as objects: a named, versioned bundle of plugins with lifecycle hooks.

    plugin = (BundleBuilder().name("acme-ops").version(VersionInfo(1, 0, 0))
              .min_brainsmith_version("0.1.0").build())
    plugin.set_custom_operations_fn(lambda: [MyTransform, KernelBuilder("swish")...create()])
    BundleRegistry().register(plugin)   # initialize, then its plugins join the hub

Its plugins are registered under framework = the package's name (``tfm.acme_ops.X``).
Registering validates everything before the hub changes; unregistering removes them and
runs cleanup. A failing hook raises PluginLifecycleError naming the plugin, and is recorded
for ``health_check()``.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace

from brainsmith.plugin.containment import origin
from brainsmith.plugin.errors import PluginError, PluginLoadError, PluginNotFoundError
from brainsmith.plugin.lifecycle import oplock
from brainsmith.plugin.lifecycle.versions import VersionInfo, incompatibility
from brainsmith.plugin.manager import get_plugin_manager, report_problem
from brainsmith.plugin.registry import Source
from brainsmith.plugin.spec import PluginSpec

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import ModuleType
    from typing import Any, NoReturn

    from brainsmith.plugin.registry import Registry


RESERVED = ("brainsmith", "user", "qonnx", "finn")
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_.-]*\Z")


class PluginLifecycleError(PluginError):
    """A plugin's own initialize, cleanup or custom-operations function raised."""

    def __init__(self, message: str, plugin: str = "", stage: str = "") -> None:
        super().__init__(message)
        self.plugin = plugin
        self.stage = stage


@dataclass(frozen=True)
class BundleInfo:
    """What a plugin package says about itself."""

    name: str
    version: VersionInfo = field(default_factory=lambda: VersionInfo(0, 0, 0))
    description: str = ""
    author: str = ""
    min_brainsmith_version: VersionInfo | None = None
    max_brainsmith_version: VersionInfo | None = None
    brainsmith_version: str = ""  # a PEP 440 specifier, e.g. ">=0.1,<2"
    path: str = ""  # where load_plugin() read it from
    provides: tuple[str, ...] = ()  # qualified names of its plugins, once registered

    @property
    def framework(self) -> str:
        return framework_name(self.name)

    def incompatibility(self) -> str | None:
        """Why this brainsmith cannot run the plugin; None when it can."""
        return incompatibility(
            {
                "min_brainsmith_version": self.min_brainsmith_version,
                "max_brainsmith_version": self.max_brainsmith_version,
                "brainsmith_version": self.brainsmith_version,
            }
        )

    def is_compatible(self) -> bool:
        return self.incompatibility() is None

    def __str__(self) -> str:
        by = f" by {self.author}" if self.author else ""
        about = f": {self.description}" if self.description else ""
        return f"{self.name} {self.version}{by}{about}"


class PluginBundle:
    """A plugin package: its info plus optional initialize, cleanup and operations functions.

    ``initialize(registry)`` and ``cleanup(registry)`` receive the hub's Registry;
    ``custom_operations()`` returns decorated classes/functions and KernelBuilder kernels.
    """

    def __init__(self, info: BundleInfo) -> None:
        self.info = info
        self.initialize_fn: Callable[..., object] | None = None
        self.cleanup_fn: Callable[..., object] | None = None
        self.custom_operations_fn: Callable[..., object] | None = None

    @property
    def name(self) -> str:
        return self.info.name

    def set_initialize_fn(self, fn: Callable[..., object]) -> PluginBundle:
        self.initialize_fn = _callable(self, "initialize", fn)
        return self

    def set_cleanup_fn(self, fn: Callable[..., object]) -> PluginBundle:
        self.cleanup_fn = _callable(self, "cleanup", fn)
        return self

    def set_custom_operations_fn(self, fn: Callable[..., object]) -> PluginBundle:
        self.custom_operations_fn = _callable(self, "custom operations", fn)
        return self

    def __repr__(self) -> str:
        return f"<PluginBundle {self.info.name} {self.info.version}>"


class BundleBuilder:
    """Fluent construction of a PluginBundle; ``build()`` checks the name and versions."""

    def __init__(self) -> None:
        self._fields: dict[str, Any] = {}

    def name(self, name: str) -> BundleBuilder:
        return self._set("name", name)

    def version(self, version: VersionInfo | str) -> BundleBuilder:
        return self._set("version", version)

    def description(self, text: str) -> BundleBuilder:
        return self._set("description", text)

    def author(self, author: str) -> BundleBuilder:
        return self._set("author", author)

    def min_brainsmith_version(self, version: VersionInfo | str) -> BundleBuilder:
        return self._set("min_brainsmith_version", version)

    def max_brainsmith_version(self, version: VersionInfo | str) -> BundleBuilder:
        return self._set("max_brainsmith_version", version)

    def brainsmith_version(self, specifier: str) -> BundleBuilder:
        return self._set("brainsmith_version", specifier)

    def _set(self, key: str, value: object) -> BundleBuilder:
        self._fields[key] = value
        return self

    def build(self) -> PluginBundle:
        fields = dict(self._fields)
        name = fields.get("name")
        check_name(name)
        try:
            for key in ("version", "min_brainsmith_version", "max_brainsmith_version"):
                if fields.get(key) is not None:
                    fields[key] = VersionInfo.coerce(fields[key])
        except ValueError as exc:
            raise PluginError(f"plugin '{name}': {exc}") from None
        if fields.get("brainsmith_version"):
            from brainsmith.plugin.lifecycle.versions import check_version_text

            error = check_version_text("brainsmith_version", fields["brainsmith_version"])
            if error:
                raise PluginError(f"plugin '{name}': {error}")
        return PluginBundle(BundleInfo(**fields))


class BundleRegistry:
    """Registered plugin packages. While registered, each is a source of the hub's registry
    (``bundle:<name>``) holding its plugins."""

    def register(self, plugin: PluginBundle) -> BundleInfo:
        """Check, initialize and add ``plugin``'s plugins to the hub; all or nothing."""
        if not isinstance(plugin, PluginBundle):
            raise PluginError(
                f"register() takes a PluginBundle (see BundleBuilder), got {plugin!r}"
            )
        framework = plugin.info.framework
        name = f"bundle:{framework}"
        with oplock.operation(framework):
            if self._source(framework) is not None:
                raise PluginError(
                    f"plugin '{plugin.name}' is already registered; unregister it first"
                )
            claim(Source(name, f"plugin package {plugin.name}", framework))
            try:
                install(plugin, framework, name)  # its hooks run without the lock
            except BaseException:
                get_plugin_manager().release_source(name)
                raise
            with oplock.LOCK:
                source = _registry().source(name)
                if source is not None:
                    source.record = Registered(self, plugin)
        return self.get_info(plugin.name)

    def unregister(self, name: str) -> None:
        """Remove the plugin's plugins from the hub, then run its cleanup."""
        with oplock.operation(framework_name(name)):
            with oplock.LOCK:
                source = self._source(framework_name(name)) or self._not_found(name)
            uninstall(self._plugin(source), source)

    def list_plugins(self) -> list[BundleInfo]:
        return [self._info(source) for source in self._sources()]

    def is_registered(self, name: str) -> bool:
        return self._source(framework_name(name)) is not None

    def get_plugin(self, name: str) -> PluginBundle:
        return self._plugin(self._source(framework_name(name)) or self._not_found(name))

    def get_info(self, name: str) -> BundleInfo:
        return self._info(self._source(framework_name(name)) or self._not_found(name))

    def _sources(self) -> list[Source]:
        """This registry's packages: the hub's ``bundle:`` sources it registered."""
        return [
            s
            for s in _registry().sources("bundle")
            if isinstance(s.record, Registered) and s.record.by is self
        ]

    def _source(self, framework: str) -> Source | None:
        return next((s for s in self._sources() if s.framework == framework), None)

    def _not_found(self, name: str) -> NoReturn:
        raise not_found(name, [self._plugin(s).name for s in self._sources()])

    @staticmethod
    def _plugin(source: Source) -> PluginBundle:
        assert isinstance(source.record, Registered)
        return source.record.plugin

    def _info(self, source: Source) -> BundleInfo:
        provides = tuple(s.qualified_name for s in source.specs)
        return replace(self._plugin(source).info, provides=provides)


@dataclass(frozen=True)
class Registered:
    """The record of a ``bundle:`` source: which BundleRegistry registered which package."""

    by: BundleRegistry
    plugin: PluginBundle


# -- shared with load_plugin() -------------------------------------------------------------
def framework_name(name: str) -> str:
    return name.lower().replace("_", "-")


def check_name(name: object) -> None:
    if not isinstance(name, str) or not _NAME.match(name):
        raise PluginError(
            f"plugin name {name!r} must start with a letter and use letters, digits, '_', '-', '.'"
        )
    if framework_name(name) in RESERVED:
        raise PluginError(f"plugin name '{name}' is reserved ({', '.join(RESERVED)})")


def claim(source: Source) -> None:
    """Enter a runtime source that owns a framework name; PluginError if the name is taken."""
    with oplock.LOCK:
        _registry().claim(source)


def install(plugin: PluginBundle, framework: str, source: str) -> list[PluginSpec]:
    """Initialize ``plugin`` and add its contributions under ``framework`` to runtime
    ``source``; undo on failure."""
    reason = plugin.info.incompatibility()
    if reason:
        report_problem(framework, f"plugin {plugin.name}", f"unavailable: {reason}")
        raise PluginLoadError(f"plugin '{plugin.name}' is unavailable: {reason}")
    registry = get_plugin_manager().registry()
    if plugin.initialize_fn is not None:
        run_hook(plugin, "initialize", plugin.initialize_fn, registry)
    try:
        items: object = []
        if plugin.custom_operations_fn is not None:
            items = run_hook(plugin, "custom_operations", plugin.custom_operations_fn) or []
        if isinstance(items, str) or not isinstance(items, Iterable):
            raise PluginError(
                f"plugin '{plugin.name}': custom_operations must return a list, got {items!r}"
            )

        specs, old = contributions(plugin, framework, list(items))
    except PluginError:
        if plugin.cleanup_fn is not None:
            # A cleanup failure is reported; the first failure is the one to raise.
            with contextlib.suppress(PluginLifecycleError):
                run_hook(plugin, "cleanup", plugin.cleanup_fn, registry)
        raise
    contribute(source, specs, old)
    return specs


def uninstall(plugin: PluginBundle | None, source: Source) -> None:
    """Take ``source``'s plugins out of the hub (and QONNX), then run the plugin's cleanup."""
    kernel_builder = _kernel_builder()
    if kernel_builder:
        kernel_builder.remove_ops(source.specs)
    get_plugin_manager().release_source(source.name)
    if plugin is not None and plugin.cleanup_fn is not None:
        run_hook(plugin, "cleanup", plugin.cleanup_fn, get_plugin_manager().registry())


def contributions(
    plugin: PluginBundle, framework: str, items: list[Any]
) -> tuple[list[PluginSpec], list[PluginSpec]]:
    """(new specs, specs they replace) for a package's items; nothing is changed yet."""
    from brainsmith.plugin.metadata import PLUGIN_ATTRIBUTE

    registry = get_plugin_manager().registry()
    specs: list[PluginSpec] = []
    old: list[PluginSpec] = []
    for index, item in enumerate(items):
        kernel_builder = _kernel_builder()
        if kernel_builder and isinstance(item, kernel_builder.CustomKernel):
            spec = kernel_builder.spec_for(item, framework)
            old += kernel_builder.displaced(spec)
        elif isinstance(getattr(item, PLUGIN_ATTRIBUTE, None), dict):
            target = f"{item.__module__}:{item.__qualname__}"
            spec = _decorated_spec(item, getattr(item, PLUGIN_ATTRIBUTE), framework, target)
            old += _replaced(plugin, spec, registry)
        else:
            raise PluginError(
                f"plugin '{plugin.name}': custom operation {index} ({item!r}) is neither a "
                "decorated plugin (@transform, @kernel, @backend, @step) nor a KernelBuilder kernel"
            )
        specs.append(spec)
    return specs, old


def _decorated_spec(item: object, info: dict[str, Any], framework: str, target: str) -> PluginSpec:
    """The spec of a decorated ``item`` (its decorator's ``info``) that ``framework`` adds."""
    metadata = {k: v for k, v in info.items() if k not in ("type", "name")}
    spec = PluginSpec(info["type"], info["name"], framework, target, metadata)
    spec.obj = item
    reason = incompatibility(metadata)
    spec.error = f"unavailable: {reason}" if reason else None
    return spec


def _replaced(plugin: PluginBundle, spec: PluginSpec, registry: Registry) -> list[PluginSpec]:
    """The registered specs of ``spec``'s target and type, which it replaces; raises
    ``PluginError`` for one that another package owns."""
    old: list[PluginSpec] = []
    for known in registry.by_target(spec.target):
        owner = registry.owner(known.framework)
        if known.type == spec.type and owner and known.framework != spec.framework:
            raise PluginError(
                f"plugin '{plugin.name}': {known.qualified_name} already belongs to {owner.label}"
            )
        old += [known] if known.type == spec.type else []
    return old


def contribute(source: str, specs: list[PluginSpec], old: list[PluginSpec]) -> None:
    """Make ``specs`` runtime ``source``'s plugins in place of ``old`` (in QONNX too, for
    custom kernels)."""
    if old:
        withdraw(old)
    get_plugin_manager().replace_source(source, specs)
    kernel_builder = _kernel_builder()
    if kernel_builder:
        kernel_builder.install_ops(specs)


def withdraw(specs: list[PluginSpec]) -> None:
    kernel_builder = _kernel_builder()
    if kernel_builder:
        kernel_builder.remove_ops(specs)
    get_plugin_manager().remove_runtime(specs)


def run_hook(plugin: PluginBundle, stage: str, fn: Callable[..., object], *args: object) -> object:
    """Call a plugin's hook; a failure becomes PluginLifecycleError and a health problem."""
    from brainsmith.plugin.containment import PluginExit, contained

    try:
        with contained():
            return fn(*args)
    except Exception as exc:
        if isinstance(exc, PluginExit):
            reason = f"{stage} {exc}"
        else:
            reason = f"{stage} raised {type(exc).__name__}: {exc} ({origin(exc)})"
        report_problem(plugin.info.framework, f"plugin {plugin.name}", reason)
        raise PluginLifecycleError(f"plugin '{plugin.name}': {reason}", plugin.name, stage) from exc


def not_found(name: str, known: list[str], what: str = "plugin package") -> PluginNotFoundError:
    from brainsmith.plugin.names import suggest

    listing = ", ".join(sorted(known)) or "none"
    return PluginNotFoundError(
        f"no {what} named '{name}'{suggest(name, known)} (known: {listing})", "", name
    )


def _callable(plugin: PluginBundle, what: str, fn: object) -> Callable[..., object]:
    if not callable(fn):
        raise PluginError(
            f"plugin '{plugin.name}': the {what} function must be callable, got {fn!r}"
        )
    return fn


def _kernel_builder() -> ModuleType | None:
    import sys

    return sys.modules.get("brainsmith.plugin.lifecycle.kernel_builder")


def _registry() -> Registry:
    return get_plugin_manager().registry()


__all__ = ["BundleBuilder", "BundleInfo", "BundleRegistry", "PluginBundle", "PluginLifecycleError"]
