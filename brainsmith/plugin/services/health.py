"""What the hub says about itself: ``health_check()`` and ``get_performance_stats()``, read
from the registry, the configuration and the last discovery."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from brainsmith.plugin.discovery.index import DiscoveryResult
    from brainsmith.plugin.refresher import DiscoveryStats
    from brainsmith.plugin.registry import Registry
    from brainsmith.plugin.services.records import Health, PerformanceStats, Problem
    from brainsmith.plugin.settings.config import PluginConfig
    from brainsmith.plugin.spec import PluginSpec


def performance_stats(
    registry: Registry,
    config: PluginConfig,
    instances: int,
    stats: DiscoveryStats,
    last: DiscoveryResult | None,
) -> PerformanceStats:
    """Plugin counts, plus (with ``performance_tracking``) discovery statistics."""
    specs = registry.specs()
    counts: PerformanceStats = {
        "performance_tracking": False,
        "plugin_count": len(specs),
        "plugins_by_type": _count_by(specs, "type"),
        "plugins_by_framework": _count_by(specs, "framework"),
        "loaded_plugins": sum(1 for s in specs if s.loaded),
        "instances_cached": instances,
    }
    if not config.performance_tracking:
        return counts
    return {
        **counts,
        "performance_tracking": True,
        "discovery_time_ms": round(stats.discovery_ms, 3),
        "cache_hit_rate": stats.hits / (stats.lookups or 1),
        "index_cache": last.cache if last else "none",
        "index_from_shared_cache": bool(last and last.shared),
        "memory_usage_mb": round(_rss_mb(), 1),
        "source_timings_ms": {k: round(v, 3) for k, v in (last.source_ms if last else {}).items()},
        "discoveries": stats.discoveries,
        "files_parsed": _files_parsed(),
    }


def unhealthy(exc: Exception) -> Health:
    """The health of a hub that cannot start."""
    return {
        "status": "unhealthy",
        "cache_available": False,
        "frameworks_available": 0,
        "frameworks": {},
        "broken_plugins": [],
        "error": f"{type(exc).__name__}: {exc}",
    }


def health(registry: Registry, config: PluginConfig) -> Health:
    """Which frameworks registered plugins, which plugins are broken or shadowed, whether the
    cache folder is usable: "healthy", "degraded" (something broken) or "unhealthy" (no
    framework at all)."""
    from brainsmith.plugin.registry import shadowed_reason
    from brainsmith.plugin.settings import memo

    frameworks = {
        fw: any(s.framework == fw for s in registry.specs())
        for fw in ("brainsmith", "qonnx", "finn")
    }
    for fw in registry.frameworks():
        frameworks.setdefault(fw, True)
    broken: list[Problem] = [p.as_dict() for p in registry.problems]
    broken += [
        {"source": s.framework, "plugin": f"{s.type} {s.qualified_name}", "reason": s.error}
        for s in registry.specs()
        if s.error
    ]
    status: Literal["healthy", "degraded", "unhealthy"] = (
        "unhealthy" if not any(frameworks.values()) else "degraded" if broken else "healthy"
    )
    hints = {
        fw: registry.disabled.get(fw) or _missing_hint(fw)
        for fw, ok in frameworks.items()
        if not ok
    }
    return {
        "status": status,
        "cache_available": memo.usable_dir(config.cache_dir, create=True),
        "cache_dir": config.cache_dir,
        "frameworks_available": sum(frameworks.values()),
        "frameworks": frameworks,
        "missing_frameworks": hints,
        "disabled_frameworks": sorted(registry.disabled),
        "plugin_count": len(registry.specs()),
        "broken_plugins": broken,
        "shadowed_plugins": [shadowed_reason(h, w) for h, w in registry.shadowed()],
    }


def _missing_hint(framework: str) -> str:
    from brainsmith.plugin.adapters import install_hint

    return install_hint(framework) or f"no plugins from {framework} are registered"


def _files_parsed() -> int:
    scanner = sys.modules.get("brainsmith.plugin.discovery.sources.package_scan")
    return scanner.parsed_files if scanner else 0


def _count_by(specs: list[PluginSpec], attribute: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for spec in specs:
        value = getattr(spec, attribute)
        counts[value] = counts.get(value, 0) + 1
    return dict(sorted(counts.items()))


def _rss_mb() -> float:
    try:
        with open("/proc/self/statm") as handle:
            pages = int(handle.read().split()[1])
        return pages * os.sysconf("SC_PAGE_SIZE") / 1e6
    except (OSError, ValueError, IndexError):
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
