"""Metrics and traces of builds and explorations, for a cluster of builders (docs/operations.md).

- Prometheus: ``brainsmith build --metrics-file PATH`` writes the build's metrics in the text
  format (for node_exporter's textfile collector); ``brainsmith explore --metrics-port PORT``
  serves them over HTTP while the exploration runs.
- OpenTelemetry: a span per build step and per exploration segment, when tracing is on: the
  application installed an SDK ``TracerProvider``, or ``OTEL_TRACES_EXPORTER`` names an
  exporter (``console``; ``otlp`` with the opentelemetry-exporter-otlp package).

Off by default and free when off: ``prometheus_client`` and ``opentelemetry`` are imported only
when one of the above asks for them.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator, Mapping

from brainsmith.plugin import log
from brainsmith.plugin.manager import get_plugin_manager

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from opentelemetry.trace import Tracer
    from prometheus_client import CollectorRegistry

    from brainsmith.plugin.services.records import PerformanceStats

    Report = Mapping[str, Any]  # a build's report.json as read: JSON, checked where used

    class HubFigures(PerformanceStats):
        """The hub's statistics and the number of problems its health reports."""

        problems: int


_tracer: list[Tracer | None] = []  # [tracer or None], resolved once per process


def tracer() -> Tracer | None:
    """The OpenTelemetry tracer brainsmith reports to, or None when tracing is off."""
    if not _tracer:
        _tracer.append(_resolve_tracer())
    return _tracer[0]


def _resolve_tracer() -> Tracer | None:
    exporter = os.environ.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    installed = "opentelemetry.trace" in sys.modules
    if not installed and exporter in ("", "none"):
        return None  # nobody asked: nothing imported
    from opentelemetry import trace

    if type(trace.get_tracer_provider()).__name__ == "ProxyTracerProvider":
        if exporter in ("", "none"):
            return None
        _install_provider(exporter)
    return trace.get_tracer("brainsmith")


def _install_provider(exporter: str) -> None:
    """A TracerProvider with the exporter ``OTEL_TRACES_EXPORTER`` names."""
    from opentelemetry import trace
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter

    provider = TracerProvider(resource=Resource.create({"service.name": "brainsmith"}))
    if exporter == "console":
        provider.add_span_processor(BatchSpanProcessor(ConsoleSpanExporter()))
    elif exporter == "otlp":
        try:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        except ImportError:
            log.warning(
                "OTEL_TRACES_EXPORTER=otlp needs the opentelemetry-exporter-otlp package; "
                "no spans are exported"
            )
            return
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)


def flush() -> None:
    """Export the spans still buffered (before a command ends with ``os._exit``)."""
    if not _tracer or _tracer[0] is None:
        return
    from opentelemetry import trace

    provider = trace.get_tracer_provider()
    with contextlib.suppress(Exception):  # an exporter that fails must not change the exit
        provider.force_flush()  # type: ignore[attr-defined]  # the SDK's provider has it


@contextlib.contextmanager
def span(name: str, **attributes: object) -> Iterator[None]:
    """An OpenTelemetry span around the block (nothing when tracing is off)."""
    current = tracer()
    if current is None:
        yield
        return
    with current.start_as_current_span(name, attributes=_plain(attributes)):
        yield


def _plain(attributes: dict[str, object]) -> dict[str, str | int | float | bool]:
    return {
        k: v if isinstance(v, str | int | float | bool) else str(v) for k, v in attributes.items()
    }


# -- Prometheus ------------------------------------------------------------------------------


def build_registry(report: Report, hub: HubFigures | None = None) -> CollectorRegistry:
    """A ``CollectorRegistry`` with a build's figures (from its report.json) and the hub's."""
    from prometheus_client import CollectorRegistry, Gauge

    registry = CollectorRegistry()
    labels = {"build": str(report.get("name", "")), "status": str(report.get("status", ""))}
    seconds = Gauge(
        "brainsmith_build_step_seconds",
        "Seconds each build step took",
        ["build", "step"],
        registry=registry,
    )
    error = Gauge(
        "brainsmith_build_verification_max_error",
        "Largest difference verification measured after a step",
        ["build", "step"],
        registry=registry,
    )
    for step in report.get("steps", []):
        if step.get("seconds") is not None:
            seconds.labels(labels["build"], step["name"]).set(step["seconds"])
        verification = step.get("verification") or {}
        if isinstance(verification.get("max_error"), int | float):
            error.labels(labels["build"], step["name"]).set(verification["max_error"])
    total = Gauge(
        "brainsmith_build_seconds", "Seconds the build took", ["build", "status"], registry=registry
    )
    total.labels(**labels).set(float(report.get("seconds") or 0.0))
    fps = (report.get("performance") or {}).get("estimated_fps")
    if isinstance(fps, int | float):
        Gauge(
            "brainsmith_build_estimated_fps", "FINN's estimate", ["build"], registry=registry
        ).labels(labels["build"]).set(fps)
    if hub:
        add_hub(registry, hub)
    return registry


def add_hub(registry: CollectorRegistry, hub: HubFigures) -> None:
    """The plugin hub's figures (``PluginManager.get_performance_stats()`` and health)."""
    from prometheus_client import Gauge

    figures = {
        "brainsmith_discovery_seconds": (
            "Seconds the last discovery took",
            hub.get("discovery_time_ms", 0) / 1000,
        ),
        "brainsmith_discovery_cache_hit_ratio": (
            "Share of lookups the index served",
            hub.get("cache_hit_rate", 0),
        ),
        "brainsmith_plugins": ("Plugins registered", hub.get("plugin_count", 0)),
        "brainsmith_plugins_loaded": ("Plugins imported so far", hub.get("loaded_plugins", 0)),
        "brainsmith_plugin_problems": (
            "Broken plugins and sources (health)",
            hub.get("problems", 0),
        ),
    }
    for name, (text, value) in figures.items():
        Gauge(name, text, registry=registry).set(float(value or 0))


def hub_figures() -> HubFigures:
    """The hub's statistics plus the number of problems its health reports."""
    manager = get_plugin_manager()
    problems = len(manager.health_check()["broken_plugins"])
    return {**manager.get_performance_stats(), "problems": problems}


def textfile_problem(path: str) -> str | None:
    """Why ``path`` cannot take a metrics file, or None.

    The file is written to a temporary file and renamed over ``path``, which would replace a
    device, FIFO, socket or symbolic link there with a regular file: only a regular file (or
    a new name in an existing folder) is accepted.
    """
    import os
    import stat

    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        folder = os.path.dirname(os.path.abspath(path))
        return None if os.path.isdir(folder) else f"its folder {folder} does not exist"
    except OSError as exc:
        return f"it cannot be inspected ({exc.strerror})"
    if stat.S_ISLNK(mode):
        return "it is a symbolic link, which would be replaced by a file; name the file itself"
    if not stat.S_ISREG(mode):
        return "it is not a regular file (a device, FIFO or folder would be replaced by a file)"
    return None


def write_textfile(path: str, report: Report) -> None:
    """Write a build's metrics (and the hub's) to ``path`` in Prometheus' text format."""
    from prometheus_client import write_to_textfile

    problem = textfile_problem(path)
    if problem:
        raise ValueError(f"{path}: {problem}")
    write_to_textfile(path, build_registry(report, hub_figures()))


class ExploreMetrics:
    """Counters of an exploration, served on ``127.0.0.1:port`` while it runs."""

    def __init__(self, port: int, exploration: str) -> None:
        from prometheus_client import CollectorRegistry, Counter, Gauge, start_http_server

        self.registry = CollectorRegistry()
        self.variants = Counter(
            "brainsmith_explore_variants",
            "Variants finished, by outcome",
            ["exploration", "status"],
            registry=self.registry,
        )
        self.seconds = Gauge(
            "brainsmith_explore_segment_seconds",
            "Seconds the last segment of each node took",
            ["exploration", "node"],
            registry=self.registry,
        )
        self.exploration = exploration
        self.server, self.thread = start_http_server(port, addr="127.0.0.1", registry=self.registry)

    def finished(self, node: str, status: str, seconds: float, variant: bool) -> None:
        self.seconds.labels(self.exploration, node).set(seconds)
        if variant:
            self.variants.labels(self.exploration, status).inc()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)
