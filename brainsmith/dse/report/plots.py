"""The report's Pareto plots: fps against a resource, as inline SVG, every point a link to
its variant's build report. A lower bound gets an arrow towards where the real value lies; a
variant whose totals leave FIFOs and width converters out (variants counted differently) a
diamond."""

from __future__ import annotations

import html
import math

from brainsmith.dse.report.text import amount, short

TYPE_CHECKING = False
if TYPE_CHECKING:
    from brainsmith.files import Json

WIDTH, HEIGHT, LEFT, RIGHT, TOP, BOTTOM = 520, 340, 78, 18, 16, 46
GRID = "stroke='#eee'"
LIMIT = "stroke='#b42318' stroke-dasharray='5 4'"
KINDS = {True: "feasible", None: "unjudged", False: "infeasible"}  # by ``feasible``


def plot(variants: list[Json], data: Json, resource: str) -> str:
    """fps against ``resource`` for the built variants (each design once)."""
    points = [v for v in variants if _drawn(v, resource)]
    unlike = (data.get("counting") or {}).get("alike") is False
    title = f"fps against {resource}{' (compute layers)' if unlike else ''}"
    if not points:
        return f"<figure><figcaption>{title}</figcaption><p>No built variants.</p></figure>"
    xs, ys = _coordinates(points, resource)
    x_axis = Axis(xs, LEFT, WIDTH - RIGHT)
    y_axis = Axis(ys, HEIGHT - BOTTOM, TOP)
    parts = [
        f"<svg xmlns='http://www.w3.org/2000/svg' width='{WIDTH}' height='{HEIGHT}' "
        f"role='img' aria-label='{title}'>",
        f"<rect x='{LEFT}' y='{TOP}' width='{WIDTH - LEFT - RIGHT}' "
        f"height='{HEIGHT - TOP - BOTTOM}' fill='none' stroke='#999'/>",
        *_grid(x_axis, y_axis),
        _axis_names(resource, x_axis, y_axis),
    ]
    parts += _constraint_lines(_limits(data, resource, unlike), resource, x_axis, y_axis)
    parts += _points(points, xs, ys, (x_axis, y_axis), resource, unlike)
    parts.append("</svg>")
    return f"<figure><figcaption>{title}</figcaption>{''.join(parts)}</figure>"


def _coordinates(points: list[Json], resource: str) -> tuple[list[float], list[float]]:
    """(``resource`` as compared, fps) of each point."""
    xs = [float((v.get("compared") or v["metrics"])[resource]) for v in points]
    return xs, [float(v["metrics"]["fps"]) for v in points]


def _points(
    points: list[Json],
    xs: list[float],
    ys: list[float],
    axes: tuple[Axis, Axis],
    resource: str,
    unlike: bool,
) -> list[str]:
    """The points, those on the Pareto front drawn last (on top)."""
    x_axis, y_axis = axes
    drawn = []
    for v, x, y in sorted(zip(points, xs, ys, strict=True), key=lambda p: p[0]["pareto"]):
        counted = (v.get("counting") or {}) if unlike else {}
        drawn.append(_point(v, (x, y), (x_axis.at(x), y_axis.at(y)), resource, counted))
    return drawn


def _drawn(variant: Json, resource: str) -> bool:
    """Built, with an fps and the resource; drawn once, with the variants of its design."""
    found = variant["metrics"]
    return bool(
        variant["status"] == "ok"
        and found
        and found.get("fps")
        and found.get(resource) is not None
        and not variant.get("same_design_as")
    )


def _vertical(x: float, style: str) -> str:
    return f"<line x1='{x:.1f}' x2='{x:.1f}' y1='{TOP}' y2='{HEIGHT - BOTTOM}' {style}/>"


def _horizontal(y: float, style: str) -> str:
    return f"<line x1='{LEFT}' x2='{WIDTH - RIGHT}' y1='{y:.1f}' y2='{y:.1f}' {style}/>"


def _grid(x_axis: Axis, y_axis: Axis) -> list[str]:
    """A line and a label at every tick of both axes."""
    parts = []
    for value in x_axis.ticks():
        x = x_axis.at(value)
        parts.append(_vertical(x, GRID))
        parts.append(
            f"<text x='{x:.1f}' y='{HEIGHT - BOTTOM + 15}' text-anchor='middle'>{short(value)}</text>"
        )
    for value in y_axis.ticks():
        y = y_axis.at(value)
        parts.append(_horizontal(y, GRID))
        parts.append(
            f"<text x='{LEFT - 6}' y='{y + 4:.1f}' text-anchor='end'>{short(value)}</text>"
        )
    return parts


def _axis_names(resource: str, x_axis: Axis, y_axis: Axis) -> str:
    middle = (TOP + HEIGHT - BOTTOM) / 2
    return (
        f"<text x='{(LEFT + WIDTH - RIGHT) / 2}' y='{HEIGHT - 8}' text-anchor='middle'>"
        f"{resource}{' (log)' if x_axis.log else ''}</text>"
        f"<text x='14' y='{middle}' text-anchor='middle' "
        f"transform='rotate(-90 14 {middle})'>fps{' (log)' if y_axis.log else ''}</text>"
    )


def _point(
    v: Json, value: tuple[float, float], at: tuple[float, float], resource: str, counted: Json
) -> str:
    """A variant's point at pixel ``at`` (its ``value``: resource, fps), titled, linked to its
    build report, with its arrows and diamond."""
    kind = "pareto" if v["pareto"] else KINDS[v["feasible"]]
    bounds = v.get("lower_bounds") or {}
    cx, cy = at
    arrows = _bound_arrows(v["id"], cx, cy, resource in bounds, "fps" in bounds)
    if counted and not (counted["fifos"] and counted["width_converters"]):
        arrows += (  # a diamond: FIFOs and width converters left out of its totals
            f"<path class='uncounted' data-uncounted='{v['id']}' "
            f"d='M{cx:.1f} {cy - 10:.1f}l10 10l-10 10l-10 -10z'/>"
        )
    return (
        f"<a href='{html.escape(v['report'])}'>{arrows}<circle class='{kind}' "
        f"data-variant='{v['id']}' cx='{cx:.1f}' cy='{cy:.1f}' r='6'>"
        f"<title>{html.escape(_label(v, value, resource, counted))}</title></circle></a>"
    )


def _label(v: Json, value: tuple[float, float], resource: str, counted: Json) -> str:
    """A point's title: the variant, its fps and resource, why it is not ranked."""
    x, y = value
    bounds = v.get("lower_bounds") or {}
    same = f" (same design: {', '.join(v['same_design'])})" if v.get("same_design") else ""
    label = (
        f"{v['id']}{same}: fps {amount(y, 'fps' in bounds)}, "
        f"{resource} {amount(x, resource in bounds)}"
    )
    if v.get("unranked"):
        label += f"; not ranked: {v['unranked']}"
    if counted:
        label += f"; {resource} of its compute layers; it counts {counted['label']}"
    return label


def _bound_arrows(variant: str, cx: float, cy: float, right: bool, up: bool) -> str:
    """Arrows from a point towards where its real value lies: right for a resource that is a
    lower bound, up for an fps that is."""
    paths = []
    if right:
        paths.append(f"M{cx + 6:.1f} {cy:.1f}h16m-5 -4l5 4l-5 4")
    if up:
        paths.append(f"M{cx:.1f} {cy - 6:.1f}v-16m-4 5l4 -5l4 5")
    if not paths:
        return ""
    return f"<path class='bound' data-bound='{variant}' d='{''.join(paths)}'/>"


def _limits(data: Json, resource: str, unlike: bool) -> list[str]:
    """The constraints to draw: a limit judges totals, so not on an axis of compute layers."""
    return [c for c in data["constraints"] if not (unlike and c.split(" ", 1)[0] == resource)]


def _constraint_lines(
    constraints: list[str], resource: str, x_axis: Axis, y_axis: Axis
) -> list[str]:
    lines = []
    for text in constraints:
        metric, _, written = text.split(" ", 2)
        bound = float(written)
        if metric == resource and x_axis.low <= bound <= x_axis.high:
            lines.append(_vertical(x_axis.at(bound), LIMIT))
        elif metric == "fps" and y_axis.low <= bound <= y_axis.high:
            lines.append(_horizontal(y_axis.at(bound), LIMIT))
    return lines


class Axis:
    """A linear or (when the values span over 30x) logarithmic axis from pixel a to b."""

    def __init__(self, values: list[float], a: float, b: float) -> None:
        low, high = min(values), max(values)
        self.log = low > 0 and high / low > 30
        if self.log:
            low, high = 10 ** math.floor(math.log10(low)), 10 ** math.ceil(math.log10(high))
        else:
            span = (high - low) or abs(high) or 1.0
            low, high = (
                max(0.0, low - 0.1 * span) if low >= 0 else low - 0.1 * span,
                high + 0.1 * span,
            )
        self.low, self.high, self.a, self.b = low, high, a, b

    def _f(self, value: float) -> float:
        return math.log10(value) if self.log else value

    def at(self, value: float) -> float:
        lo, hi = self._f(self.low), self._f(self.high)
        return self.a + (self._f(value) - lo) / (hi - lo) * (self.b - self.a)

    def ticks(self) -> list[float]:
        if self.log:
            first, last = round(math.log10(self.low)), round(math.log10(self.high))
            return [10.0**e for e in range(first, last + 1)]
        step = 10 ** math.floor(math.log10((self.high - self.low) / 4))
        for factor in (1, 2, 5, 10):
            if (self.high - self.low) / (step * factor) <= 6:
                step *= factor
                break
        start = math.ceil(self.low / step) * step
        return [start + i * step for i in range(int((self.high - start) / step) + 1)]
