"""Plugin packages as objects: a named, versioned bundle of plugins with lifecycle hooks.

    plugin = (PluginBuilder().name("acme-ops").version(VersionInfo(1, 0, 0))
              .min_brainsmith_version("0.1.0").build())
    plugin.set_custom_operations_fn(lambda: [MyTransform, KernelBuilder("swish")...create()])
    PluginRegistry().register(plugin)   # initialize, then its plugins join the hub

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
from brainsmith.plugin.manager import RESET_HOOKS, TABLES, report_problem
from brainsmith.plugin.spec import PluginSpec
from brainsmith.plugin.versions import VersionInfo, incompatibility

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import ModuleType
    from typing import Any


RESERVED = ("brainsmith", "user", "qonnx", "finn")
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_.-]*\Z")


class PluginLifecycleError(PluginError):
    """A plugin's own initialize, cleanup or custom-operations function raised."""

    def __init__(self, message: str, plugin: str = "", stage: str = "") -> None:
        super().__init__(message)
        self.plugin = plugin
        self.stage = stage


@dataclass(frozen=True)
class PluginInfo:
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


class Plugin:
    """A plugin package: its info plus optional initialize, cleanup and operations functions.

    ``initialize(registry)`` and ``cleanup(registry)`` receive the hub's Registry;
    ``custom_operations()`` returns decorated classes/functions and KernelBuilder kernels.
    """

    def __init__(self, info: PluginInfo) -> None:
        self.info = info
        self.initialize_fn: Callable[..., Any] | None = None
        self.cleanup_fn: Callable[..., Any] | None = None
        self.custom_operations_fn: Callable[..., Any] | None = None

    @property
    def name(self) -> str:
        return self.info.name

    def set_initialize_fn(self, fn: Callable[..., Any]) -> Plugin:
        self.initialize_fn = _callable(self, "initialize", fn)
        return self

    def set_cleanup_fn(self, fn: Callable[..., Any]) -> Plugin:
        self.cleanup_fn = _callable(self, "cleanup", fn)
        return self

    def set_custom_operations_fn(self, fn: Callable[..., Any]) -> Plugin:
        self.custom_operations_fn = _callable(self, "custom operations", fn)
        return self

    def __repr__(self) -> str:
        return f"<Plugin {self.info.name} {self.info.version}>"


class PluginBuilder:
    """Fluent construction of a Plugin; ``build()`` checks the name and versions."""

    def __init__(self) -> None:
        self._fields: dict[str, Any] = {}

    def name(self, name: str) -> PluginBuilder:
        return self._set("name", name)

    def version(self, version: VersionInfo | str) -> PluginBuilder:
        return self._set("version", version)

    def description(self, text: str) -> PluginBuilder:
        return self._set("description", text)

    def author(self, author: str) -> PluginBuilder:
        return self._set("author", author)

    def min_brainsmith_version(self, version: VersionInfo | str) -> PluginBuilder:
        return self._set("min_brainsmith_version", version)

    def max_brainsmith_version(self, version: VersionInfo | str) -> PluginBuilder:
        return self._set("max_brainsmith_version", version)

    def brainsmith_version(self, specifier: str) -> PluginBuilder:
        return self._set("brainsmith_version", specifier)

    def _set(self, key: str, value: object) -> PluginBuilder:
        self._fields[key] = value
        return self

    def build(self) -> Plugin:
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
            from brainsmith.plugin.versions import check_version_text

            error = check_version_text("brainsmith_version", fields["brainsmith_version"])
            if error:
                raise PluginError(f"plugin '{name}': {error}")
        return Plugin(PluginInfo(**fields))


class PluginRegistry:
    """Registered plugin packages. Their plugins live in the hub while registered."""

    def __init__(self) -> None:
        self._plugins: dict[str, Plugin] = {}
        self._specs: dict[str, list[PluginSpec]] = {}
        TABLES.bundles.add(self)

    def register(self, plugin: Plugin) -> PluginInfo:
        """Check, initialize and add ``plugin``'s plugins to the hub; all or nothing."""
        if not isinstance(plugin, Plugin):
            raise PluginError(f"register() takes a Plugin (see PluginBuilder), got {plugin!r}")
        framework = plugin.info.framework
        with oplock.operation(framework):
            if framework in self._plugins:
                raise PluginError(
                    f"plugin '{plugin.name}' is already registered; unregister it first"
                )
            claim(framework, f"plugin package {plugin.name}")
            try:
                specs = install(plugin, framework)  # its hooks run without the lock
            except BaseException:
                release(framework)
                raise
            with oplock.LOCK:
                self._plugins[framework] = plugin
                self._specs[framework] = specs
        return self.get_info(plugin.name)

    def unregister(self, name: str) -> None:
        """Remove the plugin's plugins from the hub, then run its cleanup."""
        with oplock.operation(framework_name(name)):
            with oplock.LOCK:
                plugin = self.get_plugin(name)
                framework = plugin.info.framework
                specs = self._specs.pop(framework)
                del self._plugins[framework]
                release(framework)
            uninstall(plugin, specs)

    def list_plugins(self) -> list[PluginInfo]:
        return [self.get_info(p.name) for p in self._plugins.values()]

    def is_registered(self, name: str) -> bool:
        return framework_name(name) in self._plugins

    def get_plugin(self, name: str) -> Plugin:
        plugin = self._plugins.get(framework_name(name))
        if plugin is None:
            raise not_found(name, [p.name for p in self._plugins.values()])
        return plugin

    def get_info(self, name: str) -> PluginInfo:
        plugin = self.get_plugin(name)
        provides = tuple(s.qualified_name for s in self._specs[plugin.info.framework])
        return replace(plugin.info, provides=provides)


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


def claim(framework: str, owner: str) -> None:
    """Reserve a framework name for a package or loaded path; PluginError if taken."""
    from brainsmith.plugin.manager import get_plugin_manager

    registry = get_plugin_manager().registry()
    with oplock.LOCK:
        if framework in TABLES.claimed:
            raise PluginError(
                f"plugin name '{framework}' is already used by {TABLES.claimed[framework]}"
            )
        if registry.specs(framework=framework):
            raise PluginError(
                f"plugin name '{framework}' clashes with installed framework '{framework}'; "
                "choose another name"
            )
        TABLES.claimed[framework] = owner


def release(framework: str) -> None:
    with oplock.LOCK:
        TABLES.claimed.pop(framework, None)


def install(plugin: Plugin, framework: str) -> list[PluginSpec]:
    """Initialize ``plugin`` and add its contributions under ``framework``; undo on failure."""
    from brainsmith.plugin.manager import get_plugin_manager

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
    contribute(specs, old)
    return specs


def uninstall(plugin: Plugin | None, specs: list[PluginSpec]) -> None:
    from brainsmith.plugin.manager import get_plugin_manager

    withdraw(specs)
    if plugin is not None and plugin.cleanup_fn is not None:
        run_hook(plugin, "cleanup", plugin.cleanup_fn, get_plugin_manager().registry())


def contributions(
    plugin: Plugin, framework: str, items: list[Any]
) -> tuple[list[PluginSpec], list[PluginSpec]]:
    """(new specs, specs they replace) for a package's items; nothing is changed yet."""
    from brainsmith.plugin.manager import get_plugin_manager
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
            info = getattr(item, PLUGIN_ATTRIBUTE)
            target = f"{item.__module__}:{item.__qualname__}"
            metadata = {k: v for k, v in info.items() if k not in ("type", "name")}
            spec = PluginSpec(info["type"], info["name"], framework, target, metadata)
            spec.obj = item
            reason = incompatibility(metadata)
            spec.error = f"unavailable: {reason}" if reason else None
            for known in registry.by_target(target):
                owned = known.framework in TABLES.claimed and known.framework != framework
                if known.type == spec.type and owned:
                    raise PluginError(
                        f"plugin '{plugin.name}': {known.qualified_name} already belongs to "
                        f"{TABLES.claimed[known.framework]}"
                    )
                old += [known] if known.type == spec.type else []
        else:
            raise PluginError(
                f"plugin '{plugin.name}': custom operation {index} ({item!r}) is neither a "
                "decorated plugin (@transform, @kernel, @backend, @step) nor a KernelBuilder kernel"
            )
        specs.append(spec)
    return specs, old


def contribute(specs: list[PluginSpec], old: list[PluginSpec]) -> None:
    """Replace ``old`` with ``specs`` in the hub (and in QONNX, for custom kernels)."""
    from brainsmith.plugin.manager import get_plugin_manager

    if old:
        withdraw(old)
    get_plugin_manager().add_runtime(specs)
    kernel_builder = _kernel_builder()
    if kernel_builder:
        kernel_builder.install_ops(specs)


def withdraw(specs: list[PluginSpec]) -> None:
    from brainsmith.plugin.manager import get_plugin_manager

    kernel_builder = _kernel_builder()
    if kernel_builder:
        kernel_builder.remove_ops(specs)
    get_plugin_manager().remove_runtime(specs)


def run_hook(plugin: Plugin, stage: str, fn: Callable[..., Any], *args: object) -> object:
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


def _callable(plugin: Plugin, what: str, fn: object) -> Callable[..., Any]:
    if not callable(fn):
        raise PluginError(
            f"plugin '{plugin.name}': the {what} function must be callable, got {fn!r}"
        )
    return fn


def _kernel_builder() -> ModuleType | None:
    import sys

    return sys.modules.get("brainsmith.plugin.lifecycle.kernel_builder")


def _reset() -> None:
    """``reset_plugin_system()`` forgets packages without running their cleanup."""
    with oplock.LOCK:
        for registry in list(TABLES.bundles):
            registry._plugins.clear()
            registry._specs.clear()


RESET_HOOKS.append(_reset)

__all__ = ["Plugin", "PluginBuilder", "PluginInfo", "PluginLifecycleError", "PluginRegistry"]
