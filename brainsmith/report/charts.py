"""Report charts: per-layer resources and cycles as inline SVG (matplotlib, Agg/SVG
canvas, no pyplot; glyphs drawn as paths so the page needs no fonts).

Importing matplotlib and drawing cost about as much as the rest of a small build's
orchestration, so a build starts a ``ChartWorker`` — this module run as a process — that
imports matplotlib on another core while FINN loads, and draws as soon as the estimates
exist. The worker runs isolated (``python -I``, started in this package's folder), so a
``matplotlib.py`` or ``matplotlibrc`` in the user's working directory is never used.
``render_charts`` is the same drawing in-process (where FINN is loaded already, as in an
exploration's later builds), which keeps the last charts it drew by what they show.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import cast

from brainsmith.frameworks.finn.facts import RESOURCES

TYPE_CHECKING = False
if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from brainsmith.report_schema import ChartRow

KEPT = 16  # charts render_charts keeps, the last drawn
_DRAWN: OrderedDict[str, dict[str, str]] = OrderedDict()  # what they show -> the charts
_DRAWN_LOCK = threading.Lock()
COLOR = "#3569a8"
OVER = "#b3261e"  # a layer slower than the target allows


def render_charts(
    layers: list[ChartRow],
    target_cycles: int | None = None,
    resources: Sequence[str] = RESOURCES,
) -> dict[str, str]:
    """``{"resources": svg, "cycles": svg}`` for the report's layers; a chart with nothing
    to show (no layers, all zero) is left out, as are ``resources`` (FINN's, or a Lattice
    part's own) no layer uses. A layer with no estimate of a resource (its
    ``not_estimated``) has no bar but the words "not estimated"; the total says "at least".
    ``target_cycles``: the cycles per frame the target allows, a dashed line on the cycles
    chart, the bars over it red."""
    used = [key for key in resources if any(_value(layer, key) for layer in layers)]
    cycles = [_value(layer, "cycles") for layer in layers]
    if not layers or not (used or any(cycles)):
        return {}
    shown = json.dumps([layers, used, target_cycles], sort_keys=True, default=str)
    with _DRAWN_LOCK:
        if shown in _DRAWN:  # the same layers drawn again (a rebuild, an exploration)
            _DRAWN.move_to_end(shown)
            return dict(_DRAWN[shown])
    charts = _drawn(layers, used, cycles, target_cycles)
    with _DRAWN_LOCK:
        _DRAWN[shown] = dict(charts)
        while len(_DRAWN) > KEPT:
            _DRAWN.popitem(last=False)
    return charts


def _drawn(
    layers: list[ChartRow], used: list[str], cycles: list[float], target_cycles: int | None
) -> dict[str, str]:
    """The resources chart of the ``used`` resources and the cycles chart, each if drawn."""
    import matplotlib

    matplotlib.use("Agg")
    names = [layer["name"] for layer in layers]
    charts = {}
    if used:
        charts["resources"] = _resources(names, layers, used)
    if any(cycles):
        charts["cycles"] = _cycles(names, cycles, target_cycles)
    return charts


def _value(layer: ChartRow, key: str) -> float:
    value = cast("Mapping[str, object]", layer).get(key)
    return float(cast(float, value) or 0)


PLOT = 3.4  # inches: the least width of one chart's bars
EDGE = 0.3  # inches: the right margin


def _figure(height: float, names: list[str], bottom: float, columns: int = 1) -> Figure:
    """A figure of ``columns`` charts side by side, each with room for the layer names on its
    left (fixed margins: a layout engine costs more than the drawing); 9 inches wide, wider
    when the names need it."""
    from matplotlib.figure import Figure

    label = 0.3 + 0.065 * max(len(n) for n in names)
    width = max(9.0, columns * (label + PLOT) + EDGE)
    plot = (width - EDGE) / columns - label  # one chart's bars
    figure = Figure(figsize=(width, height))
    figure.subplots_adjust(
        left=label / width,
        right=1 - EDGE / width,
        top=1 - 0.35 / height,
        bottom=bottom / height,
        hspace=0.9 / height * 2,
        wspace=label / plot,
    )
    return figure


def _whole(ax: Axes) -> None:
    """Ticks at whole numbers, with thousands separators: blocks, LUTs, cycles."""
    from matplotlib.ticker import MaxNLocator, StrMethodFormatter

    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.xaxis.set_major_formatter(StrMethodFormatter("{x:,.0f}"))


def _resources(names: list[str], layers: list[ChartRow], used: list[str]) -> str:
    """One chart per resource, two side by side, each naming the layers."""
    rows, columns = (len(used) + 1) // 2, min(len(used), 2)
    figure = _figure(max(1.6, rows * (0.7 + 0.25 * len(names))), names, 0.35, columns)
    axes = figure.subplots(rows, columns, squeeze=False).ravel()
    for ax in axes[len(used) :]:
        ax.set_visible(False)
    for ax, resource in zip(axes, used, strict=False):
        values = [_value(layer, resource) for layer in layers]
        ax.barh(names, values, color=COLOR)
        missing = [resource in (layer.get("not_estimated") or ()) for layer in layers]
        for row, absent in enumerate(missing):
            if absent:  # no bar is not a zero: say so where the bar would start
                ax.text(0, row, " not estimated", va="center", fontsize=7, color="#888")
        partial = any(missing)
        total = f"at least {sum(values):g}" if partial else f"{sum(values):g}"
        ax.set_title(f"{resource} (total {total})", fontsize=10)
        ax.set_xlim(left=0, right=max([*values, 1.0]) * 1.05)
        _whole(ax)
        ax.invert_yaxis()  # first layer on top
        ax.tick_params(labelsize=8)
        ax.grid(axis="x", alpha=0.3)
    return _svg(figure)


def _cycles(names: list[str], values: list[float], target: float | None) -> str:
    """Cycles per layer; with a target, the cycles it allows as a line and the layers over
    it in red."""
    figure = _figure(0.9 + 0.3 * len(names), names, bottom=0.5)
    ax = figure.subplots()
    colors = [OVER if target and value > target else COLOR for value in values]
    ax.barh(names, values, color=colors)
    if target:
        ax.axvline(target, color=OVER, linestyle="--", linewidth=1)
        ax.text(target, -0.6, f" target: {target:,.0f}", color=OVER, fontsize=8, va="bottom")
        ax.set_xlim(0, max([*values, target]) * 1.08)
    ax.invert_yaxis()
    _whole(ax)
    ax.set_xlabel("expected cycles per frame", fontsize=9)
    ax.tick_params(labelsize=8)
    ax.grid(axis="x", alpha=0.3)
    return _svg(figure)


def _svg(figure: Figure) -> str:
    from matplotlib.backends.backend_svg import FigureCanvasSVG

    buffer = io.StringIO()
    FigureCanvasSVG(figure).print_svg(buffer, metadata={"Date": None})  # type: ignore[no-untyped-call]
    text = buffer.getvalue()
    return text[text.index("<svg") :]  # inline: drop the XML declaration and DOCTYPE


def worker_command() -> list[str]:
    """The worker's command line, isolated from the working directory and the environment
    (``python -I``: no current folder, PYTHONPATH or user site on ``sys.path``), finding
    brainsmith where this process found it."""
    package_parent = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    code = (
        "import sys; sys.path.append(sys.argv[1]); "
        "from brainsmith.report.charts import main; main()"
    )
    flags = "-IB" if sys.flags.dont_write_bytecode else "-I"  # -I would drop the B setting
    return [sys.executable, flags, "-c", code, package_parent]


_STARTED = [False]  # a chart helper was started in this process


class ChartWorker:
    """Draws the charts in a helper process, which imports matplotlib while the build runs;
    any failure falls back to ``render_charts``. A process's later builds (an exploration in
    process, a notebook) draw theirs in the process: matplotlib is imported there once."""

    def __init__(self) -> None:
        self.process: subprocess.Popen[bytes] | None = None
        self.layers: list[ChartRow] | None = None
        self.target_cycles: int | None = None
        self.resources: list[str] = list(RESOURCES)
        if _STARTED[0]:
            return
        _STARTED[0] = True
        try:
            self.process = subprocess.Popen(
                worker_command(),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env={**os.environ, "MPLBACKEND": "Agg"},
                cwd=os.path.dirname(os.path.abspath(__file__)),
            )
        except OSError:
            self.process = None

    def submit(
        self,
        layers: list[ChartRow],
        target_cycles: int | None = None,
        resources: Sequence[str] = RESOURCES,
    ) -> None:
        """Start drawing ``layers``' ``resources`` (once; later calls are ignored)."""
        if self.layers is not None:
            return
        self.layers, self.target_cycles = layers, target_cycles
        self.resources = list(resources)
        if self.process is not None:
            stdin = self.process.stdin
            try:
                if stdin is not None:
                    stdin.write(json.dumps([layers, target_cycles, self.resources]).encode())
                    stdin.close()
                self.process.stdin = None  # communicate() must not flush it again
            except OSError:
                self.close()

    def charts(
        self,
        layers: list[ChartRow],
        target_cycles: int | None = None,
        resources: Sequence[str] = RESOURCES,
    ) -> dict[str, str]:
        """The charts for ``layers``: the worker's if it drew these, else drawn here."""
        drawn = None
        if self.process is not None and (self.layers, self.target_cycles, self.resources) == (
            layers,
            target_cycles,
            list(resources),
        ):
            try:
                out, _ = self.process.communicate(timeout=60)
                if self.process.returncode == 0:
                    drawn = json.loads(out)
            except (OSError, ValueError, subprocess.TimeoutExpired):
                pass
        self.close()
        return drawn if drawn is not None else render_charts(layers, target_cycles, resources)

    def close(self) -> None:
        process, self.process = self.process, None
        if process is None:
            return
        if process.poll() is None:
            process.kill()
        process.wait()
        for pipe in (process.stdin, process.stdout):
            if pipe is not None and not pipe.closed:
                with contextlib.suppress(OSError):
                    pipe.close()


def main() -> None:
    """Worker: import matplotlib now, then draw the layers read from stdin as JSON."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.backends.backend_svg  # warm up while the build runs
    import matplotlib.figure

    render_charts([{"name": "warm-up", "LUT": 1, "cycles": 1}])  # fonts and caches, too
    layers, target_cycles, *resources = json.loads(sys.stdin.buffer.read() or b"[[], null]")
    drawn = render_charts(layers, target_cycles, *resources)
    sys.stdout.write(json.dumps(drawn))
    sys.stdout.flush()
    os._exit(0)  # the build waits for this process; skip matplotlib's teardown


if __name__ == "__main__":
    main()
