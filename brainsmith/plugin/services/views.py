"""Filtered views of the process registry: ``discover_plugins(types=..., frameworks=...)``.

A view never copies or replaces the registry: it answers from it, keeping only the wanted
types and frameworks, so loaded plugins, instances and health stay those of the process.
"""

from __future__ import annotations

from brainsmith.plugin.discovery.trust import BUILTIN_FRAMEWORKS
from brainsmith.plugin.errors import PluginNotFoundError
from brainsmith.plugin.registry import Registry, check_type
from brainsmith.plugin.spec import PLUGIN_TYPES, PluginSpec

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any


class RegistryView:
    """The plugins of ``registry`` of the given types and frameworks (``"*"``: pip packages)."""

    def __init__(
        self, registry: Registry, types: tuple[str, ...], frameworks: tuple[str, ...] | None
    ) -> None:
        self.registry = registry
        self.wanted_types = types
        self.wanted_frameworks = frameworks

    def __repr__(self) -> str:
        scope = ", ".join(self.wanted_frameworks or ("every framework",))
        return f"<RegistryView {', '.join(self.wanted_types)} of {scope}>"

    def keeps(self, spec: PluginSpec) -> bool:
        return spec.type in self.wanted_types and self.keeps_framework(spec.framework)

    def keeps_framework(self, framework: str) -> bool:
        wanted = self.wanted_frameworks
        if wanted is None or framework in wanted:
            return True
        return framework not in BUILTIN_FRAMEWORKS and "*" in wanted

    # -- the read API of Registry ----------------------------------------------------------
    @property
    def problems(self) -> list[Any]:
        return self.registry.problems

    @property
    def disabled(self) -> dict[str, str]:
        return self.registry.disabled

    def specs(self, type: str | None = None, framework: str | None = None) -> list[PluginSpec]:
        return [s for s in self.registry.specs(type, framework) if self.keeps(s)]

    def by_target(self, target: str) -> list[PluginSpec]:
        return [s for s in self.registry.by_target(target) if self.keeps(s)]

    def candidates(self, type: str, name: str) -> list[PluginSpec]:
        return [s for s in self.registry.candidates(type, name) if self.keeps(s)]

    def frameworks(self) -> list[str]:
        return [fw for fw in self.registry.frameworks() if self.keeps_framework(fw)]

    def find_case_insensitive(self, type: str, name: str) -> list[PluginSpec]:
        return [s for s in self.registry.find_case_insensitive(type, name) if self.keeps(s)]

    def find(self, type: str, name: str, framework: str | None = None) -> PluginSpec:
        check_type(type)
        if framework is None and ":" in name:
            framework, _, name = name.partition(":")
        found = [
            s for s in self.candidates(type, name) if framework is None or s.framework == framework
        ]
        if found:
            return found[0]
        spec = self.registry.find(type, name, framework)  # raises when it does not exist at all
        raise PluginNotFoundError(
            f"{type} {spec.qualified_name} is registered but outside this view "
            f"({self!r}); use get_plugin_manager().registry() for every plugin",
            type,
            name,
        )

    def get(self, type: str, name: str, framework: str | None = None) -> object:
        return self.registry.load(self.find(type, name, framework))

    def load(self, spec: PluginSpec) -> object:
        return self.registry.load(spec)

    def not_found_message(self, type: str, name: str, framework: str | None = None) -> str:
        return self.registry.not_found_message(type, name, framework)


def make_view(
    registry: Registry, types: Iterable[str] | None, frameworks: Iterable[str] | None
) -> Registry | RegistryView:
    """``registry`` itself when nothing is filtered, else a view (types checked)."""
    if types is not None:
        types = tuple(sorted(set(types)))
        for plugin_type in types:
            if plugin_type not in PLUGIN_TYPES:
                raise ValueError(
                    f"unknown plugin type {plugin_type!r}; expected one of {', '.join(PLUGIN_TYPES)}"
                )
    frameworks = tuple(sorted(set(frameworks))) if frameworks else None
    if (types is None or set(types) == set(PLUGIN_TYPES)) and frameworks is None:
        return registry
    return RegistryView(registry, types or PLUGIN_TYPES, frameworks)
