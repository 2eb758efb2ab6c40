"""Pip-installed plugin packages: entry points in group ``brainsmith.plugins``.

Each entry point names a module; stevedore loads it and the decorated plugins in its
namespace are registered under the distribution's name. A package that fails to load is
reported with its name and reason; the others are unaffected.
"""

from __future__ import annotations

import os
import sys

GROUP = "brainsmith.plugins"


def site_dirs() -> list[str]:
    """The folders pip installs into (their mtimes change when a package comes or goes)."""
    return [p for p in sys.path if os.path.basename(p) in ("site-packages", "dist-packages")]


def listing() -> list[list[str]]:
    from importlib.metadata import entry_points

    found = []
    for ep in entry_points(group=GROUP):
        dist = ep.dist
        found.append([dist.name if dist else "", dist.version if dist else "", ep.name, ep.value])
    return sorted(found)


def declared_packages() -> set[str]:
    """Top-level packages named by installed distributions' ``brainsmith.plugins`` entry points."""
    return {value.partition(":")[0].strip().partition(".")[0] for *_, value in listing()}


class EntryPointSource:
    framework = "*"

    def stamp(self, state: dict) -> list:
        from brainsmith.plugin.stamps import stamp_paths

        return stamp_paths(site_dirs())

    def scan(self, previous: dict | None) -> dict:
        current = listing()
        if previous and previous.get("listing") == current:
            state = dict(previous)
        else:
            state = {"listing": current, **self._load(current)}
        state["stamp"] = self.stamp(state)
        return state

    def _load(self, current: list) -> dict:
        specs: list[list] = []
        problems: list[list] = []
        if not current:
            return {"specs": specs, "problems": problems}

        def failed(_manager, entry_point, exc) -> None:
            key = (entry_point.name, entry_point.value)
            dist = next((d for d, _v, n, v in current if (n, v) == key), entry_point.name)
            problems.append(
                [
                    dist,
                    f"{dist} (entry point {entry_point.name} = {entry_point.value})",
                    _reason(exc),
                ]
            )

        manager = _extension_manager(
            invoke_on_load=False,
            on_load_failure_callback=failed,
            verify_requirements=False,
        )
        # stevedore may rebuild entry points from its own cache without their distribution.
        owners = {(name, value): dist for dist, _version, name, value in current}
        for extension in manager:
            ep = extension.entry_point
            framework = normalise(owners.get((ep.name, ep.value)) or ep.name)
            try:
                found = _decorated(extension.plugin, framework, problems)
            except Exception as exc:  # a module attribute's code raised while being read
                problems.append([framework, framework, f"reading {ep.value}: {_reason(exc)}"])
                continue
            specs.extend(found)
            if not found:
                problems.append(
                    [
                        framework,
                        framework,
                        f"entry point {ep.value} defines no "
                        "decorated plugins (@transform, @kernel, @backend, @step)",
                    ]
                )
        return {"specs": specs, "problems": problems}


def _decorated(module: object, framework: str, problems: list) -> list[list]:
    """Spec records of the decorated plugins in an entry point's module namespace."""
    from brainsmith.plugin.containment import contained
    from brainsmith.plugin.decorators import PLUGIN_ATTRIBUTE

    specs: list[list] = []
    with contained():
        declared = _declared_versions(module, framework, problems)
        for obj in list(vars(module).values()) if hasattr(module, "__dict__") else []:
            info = getattr(obj, PLUGIN_ATTRIBUTE, None) if _is_plugin_like(obj) else None
            if not isinstance(info, dict) or PLUGIN_ATTRIBUTE not in vars(obj):
                continue
            own = {k: v for k, v in info.items() if k not in ("type", "name")}
            metadata = {**declared, **own}
            source = getattr(sys.modules.get(obj.__module__), "__file__", "") or ""
            target = f"{obj.__module__}:{obj.__qualname__}"
            specs.append([info["type"], info["name"], framework, target, metadata, source])
    return specs


def _extension_manager(**kwargs):
    """stevedore's ExtensionManager, with each entry point's import contained: a package
    that calls ``sys.exit()``, raises ``KeyboardInterrupt`` or fails an ``assert`` at import
    is reported like any other broken package (stevedore lets those three through)."""
    from stevedore import ExtensionManager

    from brainsmith.plugin.containment import contained

    class ContainedExtensionManager(ExtensionManager):
        def _load_one_plugin(self, ep, *args, **kwds):
            try:
                with contained():
                    return super()._load_one_plugin(ep, *args, **kwds)
            except AssertionError as exc:
                raise ImportAssertion(exc) from exc

    return ContainedExtensionManager(GROUP, **kwargs)


class ImportAssertion(Exception):
    """An ``AssertionError`` raised while a package's entry-point module imported."""

    def __init__(self, original: AssertionError) -> None:
        from brainsmith.plugin.packages import origin

        super().__init__(f"AssertionError: {original} at {origin(original)}")


def _reason(exc: BaseException) -> str:
    from brainsmith.plugin.containment import PluginExit

    if isinstance(exc, PluginExit | ImportAssertion):
        return str(exc)
    return f"{type(exc).__name__}: {exc}"


def _declared_versions(module: object, framework: str, problems: list) -> dict:
    """Version constraints of the package's ``BRAINSMITH_PLUGIN`` dict, for each of its plugins."""
    from brainsmith.plugin.versions import PACKAGE_ATTRIBUTE, VERSION_KEYS, package_metadata

    declared = getattr(module, PACKAGE_ATTRIBUTE, None)
    if declared is None:
        return {}
    where = f"{getattr(module, '__name__', framework)}.{PACKAGE_ATTRIBUTE}"
    metadata, issues = package_metadata(declared, where)
    problems.extend([framework, framework, issue] for issue in issues)
    return {k: v for k, v in metadata.items() if k in VERSION_KEYS}


def _is_plugin_like(obj: object) -> bool:
    return isinstance(obj, type) or callable(obj)


def normalise(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")
