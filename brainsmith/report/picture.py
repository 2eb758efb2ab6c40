"""The accelerator as a picture (``dataflow.svg``, also inline in report.html): its layers in
stream order with kernel, backend, folding and cycles (the bottleneck marked; LUTs and DSPs
when synthesised), the streams
between them with their widths and FIFO depths, and the nodes that stay on the CPU outside
the accelerator's box. Drawn from report.json alone, in pure Python (no browser, no
graphviz): layers are placed by their distance from the input, branches side by side, and
the columns wrap into rows."""

from __future__ import annotations

from dataclasses import dataclass
from html import escape
from typing import cast

TYPE_CHECKING = False
if TYPE_CHECKING:
    from brainsmith.report_schema import BuildReport, CpuNode, Layer, MeasuredLayer

    Place = dict[str, tuple[int, int, int]]  # layer name -> (row, column, lane)

PLUMBING = ("StreamingFIFO", "StreamingDataWidthConverter", "WidthConverter")
BOX_W, BOX_H, GAP_X, GAP_Y, PAD = 164, 58, 62, 34, 18
COLUMNS = 5  # columns per row before the picture wraps (the page is 1280 px wide)
FILL = {"rtl": "#e3edf9", "hls": "#fdf0dc"}
SHORT_KINDS = {"ConvolutionInputGenerator": "ConvInpGen", "StreamingDataWidthConverter": "DWC"}


def dataflow_svg(report: BuildReport) -> str | None:
    """The picture for ``report``; None when it has no layers with their streams."""
    layers = [x for x in report.get("layers", []) if "reads" in x]
    if not layers:
        return None
    by_name = {x["name"]: x for x in layers}
    shown = [x for x in layers if x.get("op_type") not in PLUMBING]
    edges = [edge for x in shown for edge in _streams_into(x, by_name)]
    before, after = _cpu_sides(report)
    frame = _Frame.around(_layout(shown, edges), bool(before), bool(after))
    slowest = _slowest(report)
    return "".join(
        [
            *frame.opening(len(shown)),
            *_cpu_boxes(frame, before, after),
            *_edges(frame, edges),
            *(_layer(x, *frame.box(x["name"]), x["name"] == slowest) for x in shown),
            "</svg>",
        ]
    )


@dataclass(frozen=True)
class _Frame:
    """The picture's geometry: each layer's place, each row's top, the accelerator's box
    (``top``, ``body`` high) and the whole picture's size."""

    place: Place
    origin: dict[int, float]
    top: float
    body: float
    width: float
    height: float

    @classmethod
    def around(cls, place: Place, before: bool, after: bool) -> _Frame:
        """The frame for layers at ``place``, with room for the CPU's nodes before and after."""
        rows = 1 + max(row for row, _, _ in place.values()) if place else 1
        lanes = _lanes(place)
        top = PAD + (BOX_H / 2 + GAP_Y if before else 0)
        width = PAD * 2 + GAP_X + COLUMNS * (BOX_W + GAP_X) - GAP_X / 2
        heights = [max(lanes.get(r, 1), 1) * (BOX_H + 12) + GAP_Y for r in range(rows)]
        body = sum(heights) + PAD
        height = top + body + (BOX_H / 2 + GAP_Y if after else 0) + PAD
        origin = {r: top + PAD + sum(heights[:r]) for r in range(rows)}
        return cls(place, origin, top, body, width, height)

    def box(self, name: str) -> tuple[float, float]:
        """The top left corner of layer ``name``'s box."""
        row, column, lane = self.place[name]
        return PAD + GAP_X + column * (BOX_W + GAP_X), self.origin[row] + lane * (BOX_H + 12)

    def opening(self, count: int) -> list[str]:
        """The SVG's head and the accelerator's dashed box of ``count`` layers."""
        width, height, top = self.width, self.height, self.top
        return [
            f"<svg xmlns='http://www.w3.org/2000/svg' class='dataflow' width='{width:.0f}' "
            f"height='{height:.0f}' viewBox='0 0 {width:.0f} {height:.0f}' font-family='sans-serif'>",
            "<defs><marker id='arrow' viewBox='0 0 8 8' refX='8' refY='4' markerWidth='7' "
            "markerHeight='7' orient='auto'><path d='M0,0 L8,4 L0,8 z' fill='#666'/></marker></defs>",
            f"<rect x='{PAD}' y='{top}' width='{width - 2 * PAD:.0f}' height='{self.body:.0f}' rx='8' "
            "fill='none' stroke='#3569a8' stroke-dasharray='6 4'/>",
            _text(PAD + 8, top + 14, f"accelerator: {count} layers", 11, "#3569a8", bold=True),
        ]


def _cpu_sides(report: BuildReport) -> tuple[list[CpuNode], list[CpuNode]]:
    """The nodes on the CPU before the accelerator, and after it."""
    on_cpu = report.get("cpu_nodes")
    cpu = on_cpu["nodes"] if on_cpu else []
    before = [n for n in cpu if n.get("side") == "before"]
    return before, [n for n in cpu if n.get("side") != "before"]


def _slowest(report: BuildReport) -> str | None:
    """The bottleneck: the target's, else FINN's slowest layer."""
    goal, performance = report.get("target"), report.get("performance")
    return (goal and goal["bottleneck"]) or (performance and performance["max_cycles_layer"])


def _cpu_boxes(frame: _Frame, before: list[CpuNode], after: list[CpuNode]) -> list[str]:
    """The CPU's nodes above and below the accelerator."""
    boxes = [_cpu_box(PAD, PAD, frame.width, before, "on the CPU, before")] if before else []
    if after:
        y = frame.top + frame.body + GAP_Y / 2
        boxes.append(_cpu_box(PAD, y, frame.width, after, "on the CPU, after"))
    return boxes


def _edges(frame: _Frame, edges: list[Edge]) -> list[str]:
    """The streams between shown layers; several inputs of a layer enter it apart."""
    into: dict[str, int] = {}
    drawn = []
    for source, target, labels in edges:
        if source in frame.place and target in frame.place:
            count = sum(1 for _, t, _ in edges if t == target)
            slot = into[target] = into.get(target, 0) + 1
            drawn.append(_edge(frame.box(source), frame.box(target), labels, slot / (count + 1)))
    return drawn


Edge = tuple[str, str, tuple[str, str]]  # source, target, (width, FIFO depths)


def _streams_into(layer: Layer, by_name: dict[str, Layer]) -> list[Edge]:
    """(source layer, this layer, labels) per stream, looking through FIFOs and width
    converters: the labels give the width read and the FIFO depths on the way."""
    edges = []
    for read in layer.get("reads", []):
        source, fifos = _upstream(read.get("from"), by_name)
        bits = read.get("bits")
        depths = f"FIFO {'+'.join(str(d) for d in reversed(fifos))}" if fifos else ""
        edges.append((source or "", layer["name"], (f"{bits} b" if bits else "", depths)))
    return edges


def _upstream(source: str | None, by_name: dict[str, Layer]) -> tuple[str | None, list[int]]:
    """The layer a stream from ``source`` comes from through FIFOs and width converters, and
    the FIFOs' depths on the way (nearest first)."""
    fifos: list[int] = []
    while source is not None and source in by_name:
        plumbing = by_name[source]
        if plumbing.get("op_type") not in PLUMBING:
            break
        if plumbing.get("op_type") == "StreamingFIFO" and plumbing.get("depth"):
            fifos.append(int(plumbing["depth"]))
        upstream = plumbing.get("reads")
        source = upstream[0].get("from") if upstream else None
    return source, fifos


def _layout(layers: list[Layer], edges: list[Edge]) -> Place:
    """name -> (row, column, lane): column = longest distance from the input, wrapped
    every ``COLUMNS``; layers at the same distance (branches) get lanes."""
    inputs: dict[str, list[str]] = {x["name"]: [] for x in layers}
    for source, target, _ in edges:
        if source in inputs:
            inputs[target].append(source)
    depth: dict[str, int] = {}
    for layer in layers:  # layers come in topological (stream) order
        depth[layer["name"]] = 1 + max(
            (depth.get(s, -1) for s in inputs[layer["name"]]), default=-1
        )
    taken: dict[int, int] = {}
    place: Place = {}
    for layer in layers:
        level = depth[layer["name"]]
        lane = taken.get(level, 0)
        taken[level] = lane + 1
        place[layer["name"]] = (level // COLUMNS, level % COLUMNS, lane)
    return place


def _lanes(place: Place) -> dict[int, int]:
    lanes: dict[int, int] = {}
    for row, _, lane in place.values():
        lanes[row] = max(lanes.get(row, 0), lane + 1)
    return lanes


def _layer(layer: Layer, x: float, y: float, slowest: bool) -> str:
    backend = layer.get("backend") or ""
    measured = cast("MeasuredLayer", layer).get("measured")
    stroke = "stroke='#b3261e' stroke-width='2.5'" if slowest else "stroke='#777'"
    return (
        f"<g><title>{escape(_title(layer['name'], measured))}</title>"
        f"<rect x='{x}' y='{y}' width='{BOX_W}' height='{BOX_H}' rx='5' "
        f"fill='{FILL.get(backend, '#eee')}' {stroke}/>"
        + _text(x + 6, y + 15, _short(layer["name"], 27), 11, "#222", bold=True)
        + _text(
            x + 6,
            y + 30,
            _short(_kind_line(layer), 30),
            10,
            "#444",
        )
        + _text(
            x + 6,
            y + 46,
            _timing(layer, measured) + (" · bottleneck" if slowest else ""),
            10,
            "#b3261e" if slowest else "#444",
            bold=slowest,
        )
        + "</g>"
    )


def _kind_line(layer: Layer) -> str:
    """``MVAU · rtl · PE 4 SIMD 8``."""
    kind = SHORT_KINDS.get(layer.get("op_type") or "?", layer.get("op_type") or "?")
    folding = " ".join(
        f"{k} {v}" for k, v in (("PE", layer.get("PE")), ("SIMD", layer.get("SIMD"))) if v
    )
    return " · ".join(p for p in (kind, layer.get("backend") or "", folding) if p)


def _timing(layer: Layer, measured: dict[str, int] | None) -> str:
    """A layer's cycles and, synthesised, the LUTs and DSPs it takes."""
    cycles = layer.get("cycles")
    timing = f"{cycles:,.0f} cycles" if isinstance(cycles, int | float) else "no estimate"
    if not measured:
        return timing
    dsps = f" {measured['DSP']} DSP" if measured["DSP"] else ""
    return timing + f" · {measured['LUT']:,} LUT" + dsps


def _title(name: str, measured: dict[str, int] | None) -> str:
    """A layer's tooltip: its name and, synthesised, Yosys' counts."""
    if not measured:
        return name
    return (
        name + " · measured (Yosys): " + ", ".join(f"{k} {v:,}" for k, v in measured.items() if v)
    )


def _edge(
    start: tuple[float, float], end: tuple[float, float], labels: tuple[str, str], at: float
) -> str:
    """A stream from the box at ``start`` into the box at ``end``, entering at ``at`` of its
    height."""
    (x1, y1), (x2, y2) = start, end
    sx, sy, ex, ey = x1 + BOX_W, y1 + BOX_H / 2, x2, y2 + BOX_H * at
    bend = GAP_X / 3
    if 0 < ex - sx <= GAP_X:  # the next column of the same row
        points = (
            [(sx, sy), (ex, ey)]
            if sy == ey
            else [(sx, sy), (sx + bend, sy), (sx + bend, ey), (ex, ey)]
        )
    else:  # a skip or a wrap to a later row: out below the source, along, into the target
        below = y1 + BOX_H + 6
        points = [
            (sx, sy),
            (sx + bend, sy),
            (sx + bend, below),
            (ex - bend, below),
            (ex - bend, ey),
            (ex, ey),
        ]
    path = " ".join(f"{px:.0f},{py:.0f}" for px, py in points)
    above, below_line = labels
    text = _text(ex - GAP_X / 2, ey - 4, above, 9, "#555", anchor="middle") if above else ""
    if below_line:
        text += _text(ex - GAP_X / 2, ey + 11, below_line, 9, "#555", anchor="middle")
    return (
        f"<polyline points='{path}' fill='none' stroke='#666' stroke-width='1.2' "
        f"marker-end='url(#arrow)'/>{text}"
    )


def _cpu_box(x: float, y: float, width: float, nodes: list[CpuNode], title: str) -> str:
    names = ", ".join(f"{n['name']} ({n['op_type']})" for n in nodes)
    return (
        f"<rect x='{x}' y='{y}' width='{width - 2 * PAD:.0f}' height='{BOX_H / 2:.0f}' rx='5' "
        "fill='#fff8e1' stroke='#c9a227'/>"
        + _text(x + 8, y + BOX_H / 4 + 4, f"{title}: {_short(names, 150)}", 11, "#5c4a00")
    )


def _text(
    x: float, y: float, text: str, size: int, color: str, bold: bool = False, anchor: str = "start"
) -> str:
    weight = " font-weight='bold'" if bold else ""
    return (
        f"<text x='{x:.0f}' y='{y:.0f}' font-size='{size}' fill='{color}'{weight} "
        f"text-anchor='{anchor}'>{escape(text)}</text>"
    )


def _short(text: str, most: int) -> str:
    return text if len(text) <= most else text[: most - 1] + "…"
