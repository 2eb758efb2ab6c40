"""Availability, priority and backend selection.

A plugin is available when its brainsmith version fits, the Python packages in its
``requires`` can be found (``importlib.util.find_spec``, nothing is imported), the
executables in its ``tools`` are on ``PATH``, and — if its object is already in memory and
defines ``check_available()`` — that check agrees. Checks never import a plugin.

``auto_select(kernel)`` picks the available backend with the highest ``priority``; on a tie
RTL beats HLS (FINN's RTL variants need no HLS synthesis and are hand-optimised), then the
framework priority order, then the name. A per-call preference (from a blueprint or config)
beats ``switch_backend`` (the process-wide runtime choice), which beats priority.
FINN's own backends declare no tools: estimates need none. Generating IP needs
``vitis_hls`` (HLS) or ``vivado`` (RTL); FINN reports that when the step runs.
"""

from __future__ import annotations

from collections.abc import Mapping

from brainsmith.plugin.errors import PluginLoadError, PluginNotFoundError
from brainsmith.plugin.manager import get_plugin_manager
from brainsmith.plugin.metadata import PRIORITY_LEVELS
from brainsmith.plugin.names import short_name
from brainsmith.plugin.spec import PluginSpec

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from brainsmith.plugin.registry import Registry


NORMAL = PRIORITY_LEVELS["NORMAL"]
BACKEND_TYPES = ("rtl", "hls")  # tie-break order


class PluginUnavailableError(PluginLoadError):
    """The chosen plugin (or every candidate) cannot run here; the message says why."""


def priority(spec: PluginSpec) -> int:
    """``metadata["priority"]`` (0-100; HIGHEST 100 ... LOWEST 0), NORMAL (50) by default."""
    value = spec.metadata.get("priority", NORMAL)
    if isinstance(value, str):
        return PRIORITY_LEVELS.get(value.upper(), NORMAL)
    return int(value)


def is_available(plugin: PluginSpec | str, name: str | None = None) -> tuple[bool, str]:
    """(available, reason) for a spec, or for ``is_available("backend", "MVAU_hls")``."""
    spec = plugin if isinstance(plugin, PluginSpec) else _registry().find(plugin, name or "")
    if spec.error and spec.error.startswith("unavailable:"):
        return False, spec.error.partition(":")[2].strip()
    missing = _missing(spec)
    if missing:
        return False, missing
    check = getattr(spec.obj, "check_available", None) if spec.obj is not None else None
    if callable(check):
        return _run_check(spec, check)
    return True, "available"


def _missing(spec: PluginSpec) -> str:
    """What ``spec`` requires that is missing: a Python package or a tool on PATH ("" for
    nothing)."""
    missing = [r for r in spec.metadata.get("requires", ()) if not _importable(r)]
    if missing:
        names = ", ".join(missing)
        return f"needs Python package(s) {names} (pip install {' '.join(missing)})"
    import shutil

    absent = [t for t in spec.metadata.get("tools", ()) if shutil.which(t) is None]
    if absent:
        names = ", ".join(absent)
        return f"needs {names} on PATH (install it or source its settings script)"
    return ""


def backends_of(kernel: str) -> list[PluginSpec]:
    """Every backend of ``kernel`` (short or qualified name), best first."""
    registry = _registry()
    short = short_name(kernel)
    found = [s for s in registry.specs("backend") if s.metadata.get("kernel") == short]
    if not found:
        from brainsmith.plugin.names import suggest

        kernels = sorted({str(s.metadata.get("kernel")) for s in registry.specs("backend")})
        raise PluginNotFoundError(
            f"no backends for kernel '{kernel}'{suggest(short, kernels)} "
            "(brainsmith plugins list --type backend)",
            "backend",
            kernel,
        )
    order = registry.frameworks()

    def rank(spec: PluginSpec) -> tuple[int, int, int, str]:
        style = spec.metadata.get("backend_type")
        tie = BACKEND_TYPES.index(style) if style in BACKEND_TYPES else len(BACKEND_TYPES)
        place = order.index(spec.framework) if spec.framework in order else len(order)
        return (-priority(spec), tie, place, spec.name)

    return sorted(found, key=rank)


def auto_select(kernel: str, prefer: str | Mapping[str, str] | None = None) -> PluginSpec:
    """The backend to use for ``kernel``: the preference if given, else the best available.

    ``prefer`` is a backend name (``"MVAU_hls"``, ``"finn:MVAU_hls"``), a backend type
    (``"hls"``/``"rtl"``), or a mapping ``{kernel: choice}`` such as a blueprint section."""
    if isinstance(prefer, Mapping):
        prefer = prefer.get(kernel) or prefer.get(short_name(kernel))
    choice = prefer or _registry().backend_choices.get(short_name(kernel))
    candidates = backends_of(kernel)
    if choice:
        return _chosen(kernel, candidates, choice)
    return _first_available(candidates, f"no available backend for kernel '{kernel}'")


def switch_backend(kernel: str, backend: str | None) -> PluginSpec:
    """Prefer ``backend`` (a name or ``"hls"``/``"rtl"``) for ``kernel`` from now on;
    ``None`` returns to automatic selection. Returns what ``auto_select`` now picks."""
    short = short_name(kernel)
    if backend is None:
        _registry().backend_choices.pop(short, None)
        return auto_select(kernel)
    selected = _chosen(kernel, backends_of(kernel), backend)  # validates before switching
    _registry().backend_choices[short] = backend
    return selected


def backend_preferences() -> dict[str, str]:
    """The runtime choices made with ``switch_backend``."""
    return dict(_registry().backend_choices)


def _chosen(kernel: str, candidates: list[PluginSpec], choice: str) -> PluginSpec:
    if choice in BACKEND_TYPES:
        pool = [s for s in candidates if s.metadata.get("backend_type") == choice]
        if not pool:
            kinds = sorted({str(s.metadata.get("backend_type")) for s in candidates})
            raise PluginNotFoundError(
                f"kernel '{kernel}' has no {choice} backend (it has: {', '.join(kinds)})",
                "backend",
                choice,
            )
    else:
        pool = [s for s in candidates if choice in (s.name, s.qualified_name)]
        if not pool:
            from brainsmith.plugin.names import suggest

            names = [s.name for s in candidates]
            raise PluginNotFoundError(
                f"'{choice}' is not a backend of kernel '{kernel}'{suggest(choice, names)} "
                f"(its backends: {', '.join(names)})",
                "backend",
                choice,
            )
    return _first_available(pool, f"backend '{choice}' for kernel '{kernel}'")


def _first_available(pool: list[PluginSpec], failure: str) -> PluginSpec:
    """The first available spec of ``pool`` (best first); else every reason, in one error."""
    reasons = []
    for spec in pool:
        ok, reason = is_available(spec)
        if ok:
            return spec
        reasons.append(f"{spec.qualified_name} is unavailable: {reason}")
    raise PluginUnavailableError(f"{failure}: " + "; ".join(reasons))


def _run_check(spec: PluginSpec, check: Callable[[], object]) -> tuple[bool, str]:
    from brainsmith.plugin.containment import PluginExit, contained

    try:
        with contained():
            result = check()
    except Exception as exc:
        from brainsmith.plugin.containment import origin
        from brainsmith.plugin.manager import report_problem

        if isinstance(exc, PluginExit):
            reason = f"availability check {exc}"
        else:
            reason = f"availability check raised {type(exc).__name__}: {exc} ({origin(exc)})"
        report_problem(spec.framework, f"{spec.type} {spec.qualified_name}", reason)
        return False, f"{spec.qualified_name}: {reason}"
    if isinstance(result, tuple):
        ok, reason = bool(result[0]), str(result[1]) if len(result) > 1 else ""
    else:
        ok, reason = bool(result), ""
    return ok, reason or ("available" if ok else "its check_available() returned False")


def _importable(requirement: str) -> bool:
    import importlib.util
    import re

    found = re.match(r"[A-Za-z0-9_.-]*", requirement.strip())
    name = found.group(0) if found else ""
    top = name.partition(".")[0].replace("-", "_")
    try:
        return bool(top) and importlib.util.find_spec(top) is not None
    except (ImportError, ValueError):
        return False


def _registry() -> Registry:
    return get_plugin_manager().registry()


__all__ = [
    "PluginUnavailableError",
    "auto_select",
    "backend_preferences",
    "backends_of",
    "is_available",
    "priority",
    "switch_backend",
]
