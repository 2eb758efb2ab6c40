"""The records the hub hands its users: ``health_check()`` and ``get_performance_stats()``
return plain dicts (JSON as they are, for ``--json`` and metrics) typed by these."""

from __future__ import annotations

from typing import Literal, NotRequired, TypedDict


class Problem(TypedDict):
    """A broken plugin or source: where it came from, which one, and why."""

    source: str
    plugin: str
    reason: str


class Health(TypedDict):
    """``health_check()``: ``error`` and nothing after ``broken_plugins`` when the hub
    itself cannot start."""

    status: Literal["healthy", "degraded", "unhealthy"]
    cache_available: bool
    frameworks_available: int
    frameworks: dict[str, bool]
    broken_plugins: list[Problem]
    error: NotRequired[str]
    cache_dir: NotRequired[str]
    missing_frameworks: NotRequired[dict[str, str]]
    disabled_frameworks: NotRequired[list[str]]
    plugin_count: NotRequired[int]
    shadowed_plugins: NotRequired[list[str]]


class PerformanceStats(TypedDict):
    """``get_performance_stats()``: the counts always, discovery figures with
    ``performance_tracking``."""

    performance_tracking: bool
    plugin_count: int
    plugins_by_type: dict[str, int]
    plugins_by_framework: dict[str, int]
    loaded_plugins: int
    instances_cached: int
    discovery_time_ms: NotRequired[float]
    cache_hit_rate: NotRequired[float]
    index_cache: NotRequired[str]
    index_from_shared_cache: NotRequired[bool]
    memory_usage_mb: NotRequired[float]
    source_timings_ms: NotRequired[dict[str, float]]
    discoveries: NotRequired[int]
    files_parsed: NotRequired[int]
