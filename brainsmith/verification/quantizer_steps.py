"""Differences counted in quantizer steps, and rounding ties told apart from errors.

A quantized tensor can only take whole steps of its quantizer, and a rewrite of the
arithmetic before a quantizer may legitimately change its output only where the reference's
pre-rounding value lies on a rounding boundary: QONNX's ``Quant`` rounds half to even where
FINN's thresholds round half up, a bipolar sign at exactly 0 goes either way once its
threshold is computed in other arithmetic, and float noise of a few ulps moves a value that
lies within ``TIE_EPSILON`` of a boundary across it (torch's own arithmetic too, against the
exported model's).

``Reference`` runs the cleaned QONNX model node by node and records, per sample, every
activation quantizer element whose pre-rounding value lies within ``TIE_EPSILON`` of a
boundary (a *tie*; a weight is rounded by the same arithmetic everywhere, so weights on a
boundary, thousands in a full-size network, are none). When a model's outputs differ from
the reference's on a sample, ``explain`` looks for ties which, rounded the other way in the
reference, reproduce that model's outputs. Where the
model's own tensors are at hand, the reference follows them: at each quantizer with ties, the
model's tensor holding that quantizer's output (the same values at every other element, in
the same layout or channels last, as values or as integers) says which way each tie went, so
the flips of a deep network, each moving later values onto other boundaries, are followed in
one run. Otherwise, or if that does not reproduce the outputs, it searches: first all ties
by the rule FINN's thresholds use (half up; ``x >= threshold``), then one at a time,
the closest to its boundary first, keeping each flip that brings the outputs closer (a model
with floating-point LayerNorm or Softmax has hundreds of elements within ``TIE_EPSILON`` per
sample, of which float noise moves one or two; half the candidates are the closest at the
positions where the outputs differ, ``Nearby``, since a flip in a token's own layers changes
that token's outputs alone), then in node order. Differences so explained
are ties; any other is an *error*.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

import numpy as np
from qonnx.custom_op.general.intquant import max_int, min_int, resolve_rounding_mode

from brainsmith.verification.node_major import check_integers

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    import onnx
    from qonnx.core.modelwrapper import ModelWrapper

    from brainsmith.verification.node_major import NodeMajor

    Context = dict[str, np.ndarray]

# A pre-rounding value within this many steps (times max(1, |value|), float32 resolution
# grows with the value) of a rounding boundary is a tie.
TIE_EPSILON = 1e-4
# Runs of the reference per differing sample at most (the cost of explaining a sample, and
# of finding that an error is one). The search in node order tries subsets of each
# quantizer's ties: only for a sample with at most SEARCH_TIE_LIMIT ties (a model with float
# LayerNorm/Softmax or a full-size CNV has hundreds, where only the closest-first search can
# find the few that flipped).
MAX_TRIES, SEARCH_TIE_LIMIT = 500, 64
# Closest ties tried per flip kept by the closest-first search, and flips kept at most.
CLOSEST, MAX_FLIPS = 16, 8
QUANTIZERS = ("Quant", "IntQuant", "BipolarQuant")
HALF_BOUNDARY = ("ROUND", "HALF_EVEN")  # rounding modes whose boundaries lie at k + 0.5
PASS_THROUGH = ("Reshape", "Flatten", "Transpose", "Identity", "Squeeze", "Unsqueeze")


@dataclass(frozen=True)
class Tie:
    """One quantizer element of the reference lying on a rounding boundary."""

    node: int  # index of the quantizer node in the reference graph
    element: int  # flat index into its output
    pre: float  # the pre-rounding value, in steps (x / scale + zero point)
    rule: str  # how the two sides may round it
    gap: float = 0.0  # distance to the boundary, in steps relative to max(1, |pre|)

    @property
    def key(self) -> tuple[int, int]:
        """The quantizer and element: the tie whatever its value."""
        return self.node, self.element


def _rounding(node: onnx.NodeProto) -> str:
    for attribute in node.attribute:
        if attribute.name == "rounding_mode":
            return str(attribute.s.decode()).upper()
    return "ROUND"


def _attribute(node: onnx.NodeProto, name: str, default: int) -> int:
    return next((int(a.i) for a in node.attribute if a.name == name), default)


def quantize(
    node: onnx.NodeProto, context: Context, flip: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(output, pre-rounding value in steps, tie mask) of quantizer ``node`` on ``context``;
    ``flip``: flat indices of tie elements rounded the other way in the output."""
    x = np.asarray(context[node.input[0]], dtype=np.float32)
    scale = np.asarray(context[node.input[1]], dtype=np.float32)
    if node.op_type == "BipolarQuant":
        return _bipolar(x, scale, flip)
    zero = np.asarray(context[node.input[2]], dtype=np.float32)
    bits = int(np.asarray(context[node.input[3]]).item())
    signed, narrow = _attribute(node, "signed", 1), _attribute(node, "narrow", 0)
    mode = _rounding(node)
    pre = np.broadcast_to(x / scale + zero, np.broadcast_shapes(x.shape, scale.shape, zero.shape))
    low, high = min_int(signed, narrow, bits), max_int(signed, narrow, bits)
    clipped = np.clip(pre, low, high)
    rounded = resolve_rounding_mode(mode)(clipped)
    boundary = np.floor(pre) + 0.5 if mode in HALF_BOUNDARY else np.round(pre)
    near = np.abs(pre - boundary) <= TIE_EPSILON * np.maximum(1.0, np.abs(pre))
    other = np.where(rounded > boundary, np.floor(boundary), np.ceil(boundary))
    if mode not in HALF_BOUNDARY:  # a whole-number boundary: the two sides are k - 1 and k
        other = np.where(rounded >= boundary, boundary - 1, boundary)
    other = np.clip(other, low, high)
    ties = near & (other != rounded)
    if flip is not None and flip.size:
        rounded = _flipped(rounded, other, ties, flip)
    out = ((rounded - zero) * scale).astype(np.float32)
    return out, pre, ties


def _bipolar(
    x: np.ndarray, scale: np.ndarray, flip: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``quantize`` for a ``BipolarQuant``: the sign, ties at 0."""
    pre = np.broadcast_to(x / scale, x.shape)
    ties = np.abs(pre) <= TIE_EPSILON
    sign = np.where(x >= 0.0, 1.0, -1.0).astype(np.float32)
    if flip is not None and flip.size:
        flat = sign.reshape(-1)
        chosen = flip[ties.reshape(-1)[flip]]
        flat[chosen] = -flat[chosen]
    return np.asarray(sign * scale, dtype=np.float32), pre, ties


def _flipped(
    rounded: np.ndarray, other: np.ndarray, ties: np.ndarray, flip: np.ndarray
) -> np.ndarray:
    """``rounded`` with the tie elements among ``flip`` taking their ``other`` value."""
    flat = rounded.reshape(-1).copy()
    chosen = flip[ties.reshape(-1)[flip]]
    flat[chosen] = other.reshape(-1)[chosen]
    return flat.reshape(rounded.shape)


def rule(node: onnx.NodeProto, pre: float, rounded_up_in_reference: bool) -> str:
    """Which rounding rules a tie at ``pre`` (in steps) sets against each other."""
    if node.op_type == "BipolarQuant":
        return "sign at 0" if pre == 0.0 else "sign near 0 (float noise)"
    mode = _rounding(node)
    if mode in HALF_BOUNDARY:
        if float(pre) % 1.0 == 0.5:
            return "half-even vs half-" + ("down" if rounded_up_in_reference else "up")
        return "within float noise of a half step"
    return f"{mode.lower()} (truncation) at a whole step"


def output_steps(model: ModelWrapper) -> list[float | None]:
    """Per graph output, the step of the quantizer that makes it, scaled by any constant
    scalar ``Mul``/``Div`` after it; None for a float output (or a per-channel scale)."""
    return [_output_step(model, output.name) for output in model.graph.output]


def _output_step(model: ModelWrapper, name: str) -> float | None:
    factor = 1.0
    while (node := model.find_producer(name)) is not None:
        if node.op_type in PASS_THROUGH:
            name = node.input[0]
            continue
        if node.op_type not in ("Mul", "Div"):
            return _quantizer_step(model, node, factor)
        scale = _constant_scale(model, node)
        if scale is None:
            return None
        factor *= scale
        name = node.input[0]
    return None


def _constant_scale(model: ModelWrapper, node: onnx.NodeProto) -> float | None:
    """The factor a ``Mul`` or ``Div`` by a constant scalar scales by, else None."""
    constant = model.get_initializer(node.input[1])
    if constant is None or np.size(constant) != 1:
        return None
    value = float(np.asarray(constant).item())
    return value if node.op_type == "Mul" else 1.0 / value


def _quantizer_step(model: ModelWrapper, node: onnx.NodeProto, factor: float) -> float | None:
    """The step of a per-tensor quantizer ``node`` times ``factor``; None for another node."""
    scale = model.get_initializer(node.input[1]) if node.op_type in QUANTIZERS else None
    if scale is None or np.size(scale) != 1:
        return None
    unit = 2.0 if node.op_type == "BipolarQuant" else 1.0
    return abs(factor * unit * float(np.asarray(scale).item()))


class Reference:
    """The cleaned QONNX model, run node by node with its quantizers' ties recorded."""

    def __init__(self, prepared: NodeMajor) -> None:
        self.model, self.runners = prepared.model, prepared.runners
        self.empty = prepared.empty  # the blank context of every run, made once
        self.integers = prepared.integers  # checked after each node, as QONNX's executor
        self.nodes = prepared.nodes
        self.outputs = prepared.outputs
        self.dead = prepared.dead  # per node, the tensors it uses last (only outputs are read)
        self.ties: list[list[Tie]] = []  # per sample, in node order
        # quantizers of constants (weights): rounded by QONNX's own execution wherever they
        # are folded, and by the same float32 arithmetic in torch, so never a tie
        self.constant = {
            index
            for index, node in enumerate(self.nodes)
            if node.op_type in QUANTIZERS and self.model.get_initializer(node.input[0]) is not None
        }

    def execute(
        self, contexts: list[Context], flips: list[dict[int, np.ndarray]] | None = None
    ) -> list[list[Tie]]:
        """Run every node on every context (each tensor but the outputs dropped after its
        last use); round the tie elements of ``flips`` (per sample: node index -> flat
        indices) the other way. The ties found, per sample (kept as
        ``ties`` when nothing was flipped)."""
        found: list[list[Tie]] = [[] for _ in contexts]
        for index, execute in enumerate(self.runners):
            for sample, context in enumerate(contexts):
                flipped = None if flips is None else flips[sample]
                found[sample] += self._run_node(index, execute, context, flipped)
                for name in self.dead[index]:
                    context.pop(name, None)
        if flips is None:
            self.ties = found
        return found

    def _run_node(
        self,
        index: int,
        execute: Callable[[Context], None],
        context: Context,
        flips: dict[int, np.ndarray] | None,
    ) -> list[Tie]:
        """Run node ``index`` on ``context`` (a quantizer rounding the tie elements of
        ``flips`` the other way); the ties it records."""
        node = self.nodes[index]
        check_integers(self.integers, node.input, context)
        recorded = []
        if node.op_type in QUANTIZERS:
            out, pre, ties = quantize(node, context, None if flips is None else flips.get(index))
            context[node.output[0]] = out
            if index not in self.constant:
                recorded = self._record(index, node, out, pre, ties)
        else:
            execute(context)
        check_integers(self.integers, node.output, context)
        return recorded

    def _record(
        self,
        index: int,
        node: onnx.NodeProto,
        out: np.ndarray,
        pre: np.ndarray,
        ties: np.ndarray,
    ) -> list[Tie]:
        if not ties.any():
            return []
        found = []
        flat_pre, flat_out = pre.reshape(-1), out.reshape(-1)
        for element in np.flatnonzero(ties.reshape(-1)):
            value = float(flat_pre[element])
            up = bool(flat_out[element] > 0) if node.op_type == "BipolarQuant" else None
            rounded_up = up if up is not None else _rounded_up(node, value)
            gap = _gap(node, value)
            found.append(Tie(index, int(element), value, rule(node, value, rounded_up), gap))
        return found

    def follow(self, feed: Context, model: Context) -> tuple[list[np.ndarray], list[Tie]]:
        """Outputs of one sample where each quantizer's ties round as in ``model``'s run (its
        computed tensors): at a quantizer with ties, the model tensor equal to the quantizer's
        output at every other element (``Counterparts``) decides each tie's side, so a flip
        early in a deep network is followed without searching, and the ties flipped."""
        context = {**self.empty, **feed}
        counterparts = Counterparts(model)
        flipped: list[Tie] = []
        for index, (node, execute) in enumerate(zip(self.nodes, self.runners, strict=True)):
            check_integers(self.integers, node.input, context)
            if node.op_type in QUANTIZERS:
                flipped += self._follow_quantizer(index, context, counterparts)
            else:
                execute(context)
            check_integers(self.integers, node.output, context)
        return [np.asarray(context[o]) for o in self.outputs], flipped

    def _follow_quantizer(
        self, index: int, context: Context, counterparts: Counterparts
    ) -> list[Tie]:
        """Quantizer ``index`` on ``context``, each tie rounded as its counterpart in the
        followed run has it; the ties flipped."""
        node = self.nodes[index]
        out, pre, ties = quantize(node, context)
        flipped = []
        if ties.any() and index not in self.constant:
            candidates = np.flatnonzero(ties.reshape(-1))
            other = quantize(node, context, candidates)[0]
            flip = counterparts.sides(out, other, ties, context[node.input[1]])
            if flip.size:
                out = quantize(node, context, flip)[0]
                flipped = self._record(index, node, other, pre, _mask(ties, flip))
        context[node.output[0]] = out
        return flipped

    def run_sample(
        self, feed: Context, flips: dict[int, np.ndarray]
    ) -> tuple[list[np.ndarray], list[Tie]]:
        """Outputs of one sample with the given tie elements rounded the other way (where
        they still are ties), and the ties of this run."""
        context = {**self.empty, **feed}
        ties = self.execute([context], [flips])[0]
        return [np.asarray(context[o]) for o in self.outputs], ties


def _mask(ties: np.ndarray, elements: np.ndarray) -> np.ndarray:
    mask = np.zeros(ties.size, dtype=bool)
    mask[elements] = True
    return mask.reshape(ties.shape)


class Counterparts:
    """The tensors of another model's run that stand for a reference quantizer's output:
    of the same size, in the same layout or channels last, as the same values or as their
    integers (the values over the quantizer's scale)."""

    def __init__(self, model: Context) -> None:
        self.by_size: dict[int, list[np.ndarray]] = {}
        for value in map(np.asarray, model.values()):
            if value.size > 1 and value.dtype.kind == "f":
                self.by_size.setdefault(value.size, []).append(value)

    def sides(
        self, out: np.ndarray, other: np.ndarray, ties: np.ndarray, scale: np.ndarray
    ) -> np.ndarray:
        """Flat indices of the tie elements the counterpart of ``out`` (the quantizer's
        output; ``other``: every tie rounded the other way) rounds the other way; none
        without a counterpart."""
        tied = ties.reshape(-1)
        for value in self.by_size.get(out.size, ()):
            for layout in _layouts(value, out.shape):
                for form, unit in ((out, other), (out / scale, other / scale)):
                    flipped = _flipped_in(layout, form, unit, tied, out.shape)
                    if flipped is not None:
                        return flipped
        return np.zeros(0, dtype=np.int64)


def _flipped_in(
    layout: np.ndarray,
    form: np.ndarray,
    unit: np.ndarray,
    tied: np.ndarray,
    shape: tuple[int, ...],
) -> np.ndarray | None:
    """Flat indices of the tie elements (``tied``) the flattened counterpart ``layout`` has
    as ``unit`` (every tie flipped) instead of ``form``, when it is ``form`` at every other
    element and one of the two at each tie; else None."""
    form = np.broadcast_to(form, shape).reshape(-1).astype(np.float64)
    unit = np.broadcast_to(unit, shape).reshape(-1).astype(np.float64)
    noise = FOLLOW_NOISE * max(float(np.max(np.abs(form))), 1e-30)
    same = np.abs(layout - form) <= noise
    if not same[~tied].all():
        return None
    flipped = ~same & (np.abs(layout - unit) <= noise)
    return np.flatnonzero(flipped) if (same | flipped)[tied].all() else None


# The largest difference, relative to a tensor's largest value, of a counterpart's element
# that stands for the same value (float noise of a rewritten computation)
FOLLOW_NOISE = 1e-5


def _layouts(value: np.ndarray, shape: tuple[int, ...]) -> list[np.ndarray]:
    """``value`` flattened in the order of a tensor of ``shape``: as it is, or from channels
    last (a 4D or 3D tensor whose channels FINN moved to the end)."""
    layouts = []
    if value.shape == shape or value.ndim != len(shape):
        layouts.append(value.reshape(-1).astype(np.float64))
    if len(shape) in (3, 4) and value.shape == (shape[0], *shape[2:], shape[1]):
        order = (0, value.ndim - 1, *range(1, value.ndim - 1))
        layouts.append(np.transpose(value, order).reshape(-1).astype(np.float64))
    return layouts


def _gap(node: onnx.NodeProto, pre: float) -> float:
    if node.op_type == "BipolarQuant":
        return abs(pre)
    boundary = np.floor(pre) + 0.5 if _rounding(node) in HALF_BOUNDARY else np.round(pre)
    return float(abs(pre - boundary) / max(1.0, abs(pre)))


def _rounded_up(node: onnx.NodeProto, pre: float) -> bool:
    mode = _rounding(node)
    if mode in HALF_BOUNDARY:
        return bool(np.round(pre) > pre)
    return mode in ("CEIL", "UP")


def grouped(ties: list[Tie]) -> dict[int, np.ndarray]:
    """Node index -> flat indices of ``ties``."""
    groups: dict[int, list[int]] = {}
    for tie in ties:
        groups.setdefault(tie.node, []).append(tie.element)
    return {node: np.asarray(elements, dtype=np.int64) for node, elements in groups.items()}


def explain(
    reference: Reference,
    feed: Context,
    ties: list[Tie],
    distance: Callable[[list[np.ndarray]], float],
    got: list[np.ndarray] | None = None,
    run: Context | None = None,
) -> list[Tie] | None:
    """The ties which, rounded the other way in the reference, reproduce the outputs
    ``distance`` measures against (0: the same within tolerance); [] when the reference's
    own outputs are those, None if no ties do.

    With the checked model's tensors on this sample (``run``), first the reference
    following the model's rounding at each tie (``Reference.follow``): exact, and a single
    run however deep the network. Then the rule FINN's thresholds use (every half-even tie
    rounded up, every sign at 0 negative), then every tie flipped; then the closest ties
    first (``_closest_first``); then a search in node order: at the first quantizer
    with ties still open, each subset of its ties (each single one and all of them where
    there are more than ``SUBSET_LIMIT``) flipped, the ties of later quantizers found anew
    in each run (flipping one tie may put others on a boundary), for a sample with at most
    ``SEARCH_TIE_LIMIT`` ties; ``MAX_TRIES`` runs in all. With the outputs ``got`` to
    explain, the closest-first search tries ties at the positions where they differ first
    (``Nearby``): a flip in a token-wise layer changes its own token's outputs only.
    """
    expected = reference.run_sample(feed, {})[0]
    if distance(expected) == 0.0:
        return []  # the reference's own outputs
    if not ties:
        return None
    direct = _followed_or_by_rule(reference, feed, ties, distance, run)
    if direct is not None:
        return direct
    runs = Runs(reference, feed, distance)
    nearby = Nearby(reference, expected, got) if got is not None else None
    closest = _closest_first(runs, nearby)
    if closest is not None or len(ties) > SEARCH_TIE_LIMIT:
        return closest
    return _search(runs, {}, -1)


def _followed_or_by_rule(
    reference: Reference,
    feed: Context,
    ties: list[Tie],
    distance: Callable[[list[np.ndarray]], float],
    run: Context | None,
) -> list[Tie] | None:
    """The ties the model's own run flipped, then those FINN's thresholds' rule flips,
    then all: the first that reproduces the outputs, else None."""
    followed = _followed(reference, feed, distance, run)
    if followed is not None:
        return followed
    for start in _by_rule(ties):
        if distance(reference.run_sample(feed, grouped(start))[0]) == 0.0:
            return start
    return None


def _by_rule(ties: list[Tie]) -> list[list[Tie]]:
    """The flips to try: those FINN's thresholds' rule makes (every half-even tie rounded
    up, every sign at 0 negative) when they are not all of ``ties``, then all of them."""
    half_up = [t for t in ties if t.rule in ("half-even vs half-up", "sign at 0")]
    return [half_up, ties] if half_up and len(half_up) < len(ties) else [ties]


def _followed(
    reference: Reference,
    feed: Context,
    distance: Callable[[list[np.ndarray]], float],
    run: Context | None,
) -> list[Tie] | None:
    """The ties the model's run (``run``) flipped, when following it reproduces the
    outputs; else None."""
    if run is None:
        return None
    outputs, followed = reference.follow(feed, run)
    return followed if followed and distance(outputs) == 0.0 else None


@dataclass
class Runs:
    """Runs of the reference on one sample with ties flipped, ``MAX_TRIES`` at most."""

    reference: Reference
    feed: Context
    distance: Callable[[list[np.ndarray]], float]
    tries: int = 0

    def exhausted(self) -> bool:
        return self.tries >= MAX_TRIES

    def run(self, flipped: list[Tie]) -> tuple[float, list[Tie]]:
        """How far the outputs are with ``flipped`` rounded the other way, and the ties of
        that run (one try)."""
        self.tries += 1
        outputs, found = self.reference.run_sample(self.feed, grouped(flipped))
        return self.distance(outputs), found


def _search(runs: Runs, chosen: dict[tuple[int, int], Tie], after: int) -> list[Tie] | None:
    """In node order: at the first quantizer after ``after`` with ties open, each subset of
    them flipped on top of ``chosen``, the later quantizers' ties found anew in each run."""
    if runs.exhausted():
        return None
    score, found = runs.run(list(chosen.values()))
    if score == 0.0:
        return _still_ties(chosen, found)
    group = _first_open(found, after)
    return _search_group(runs, chosen, group) if group else None


def _search_group(
    runs: Runs, chosen: dict[tuple[int, int], Tie], group: list[Tie]
) -> list[Tie] | None:
    """Each subset of one quantizer's open ties (``group``) flipped on top of ``chosen`` and
    searched on from there: the first that reproduces the outputs, else None."""
    for subset in _subsets(group):
        result = _search(runs, {**chosen, **{t.key: t for t in subset}}, group[0].node)
        if result is not None:
            return result
    return None


def _still_ties(chosen: dict[tuple[int, int], Tie], found: list[Tie]) -> list[Tie]:
    """The ``chosen`` flips that are ties in the run that ``found`` them."""
    still = {f.key for f in found}
    return [t for t in chosen.values() if t.key in still]


def _first_open(found: list[Tie], after: int) -> list[Tie]:
    """The ties of the first quantizer after node ``after`` with any ([] without one)."""
    open_ties = [t for t in found if t.node > after]
    if not open_ties:
        return []
    node = min(t.node for t in open_ties)
    return [t for t in open_ties if t.node == node]


@dataclass(frozen=True)
class Flip:
    """A tie tried flipped: how far the outputs then are, and the ties of that run."""

    score: float
    tie: Tie
    ran: list[Tie]


def _closest_first(runs: Runs, nearby: Nearby | None = None) -> list[Tie] | None:
    """Flips kept one at a time: of the ``CLOSEST`` open ties nearest their boundaries (half
    of them, where ``nearby`` is given, the nearest of those where the outputs differ), the
    one whose flip brings the outputs closest, while each brings them closer."""
    chosen: dict[tuple[int, int], Tie] = {}
    outputs, found = runs.reference.run_sample(runs.feed, {})
    current = runs.distance(outputs)
    for _ in range(MAX_FLIPS):
        best = _best_flip(runs, chosen, _candidates(found, chosen, nearby))
        if best is None:
            return None
        if best.score == 0.0:
            kept = {**chosen, best.tie.key: best.tie}
            return [t for t in best.ran if t.key in kept]
        if best.score >= current:
            return None
        current, found = best.score, best.ran
        chosen[best.tie.key] = best.tie
    return None


def _candidates(
    found: list[Tie], chosen: dict[tuple[int, int], Tie], nearby: Nearby | None
) -> list[Tie]:
    """The ``CLOSEST`` open ties to try, half of them where the outputs differ (``nearby``)."""
    by_gap = sorted((t for t in found if t.key not in chosen), key=lambda t: t.gap)
    near = _nearest_where_differing(by_gap, nearby) if nearby else []
    return [*near, *(t for t in by_gap if t not in near)][:CLOSEST]


def _nearest_where_differing(by_gap: list[Tie], nearby: Nearby) -> list[Tie]:
    """Half of ``CLOSEST`` of the ties ``by_gap`` that lie where the outputs differ."""
    return [t for t in by_gap if nearby(t)][: CLOSEST // 2]


def _best_flip(
    runs: Runs, chosen: dict[tuple[int, int], Tie], candidates: list[Tie]
) -> Flip | None:
    """The candidate whose flip (on top of ``chosen``) brings the outputs closest, the first
    that reproduces them; None without candidates or once the runs are spent."""
    best: Flip | None = None
    for tie in candidates:
        if runs.exhausted():
            return None
        score, ran = runs.run([*chosen.values(), tie])
        if score == 0.0:
            return Flip(score, tie, ran)
        if best is None or score < best.score:
            best = Flip(score, tie, ran)
    return best


class Nearby:
    """Whether a tie lies where the outputs differ: along an axis its tensor shares in length
    with an output (a token, a pixel row), at a position where that output differs, for the
    output axes along which at most half the positions differ."""

    def __init__(
        self, reference: Reference, expected: list[np.ndarray], got: list[np.ndarray]
    ) -> None:
        self.model = reference.model
        self.nodes = reference.nodes
        self.positions: list[tuple[int, set[int]]] = []  # (axis length, differing positions)
        for want, have in zip(expected, got, strict=True):
            self.positions += _differing_positions(want, have)
        self.shapes: dict[int, tuple[int, ...]] = {}

    def _shape(self, node: int) -> tuple[int, ...]:
        """The shape of quantizer ``node``'s output (() when unknown)."""
        if node not in self.shapes:
            shape = self.model.get_tensor_shape(self.nodes[node].output[0])
            self.shapes[node] = tuple(shape or ())
        return self.shapes[node]

    def __call__(self, tie: Tie) -> bool:
        shape = self._shape(tie.node)
        if not shape or int(np.prod(shape)) <= tie.element:
            return False
        index = np.unravel_index(tie.element, shape)
        return any(
            length == size and int(at) in where
            for length, where in self.positions
            for size, at in zip(shape, index, strict=True)
        )


def _differing_positions(want: np.ndarray, have: np.ndarray) -> list[tuple[int, set[int]]]:
    """Per axis of an output that tells positions apart (at most half of them differ): its
    length and the positions where ``have`` differs from ``want``."""
    want = np.asarray(want, dtype=np.float64)
    have = np.asarray(have, dtype=np.float64).reshape(want.shape)
    scale = float(np.max(np.abs(want))) if want.size else 0.0
    differs = np.abs(want - have) > NEARBY_NOISE * max(scale, 1e-30)
    positions = []
    for axis, length in enumerate(want.shape):
        where = _positions_along(differs, axis) if length >= 2 else set()
        if where and len(where) <= length // 2:
            positions.append((length, where))
    return positions


def _positions_along(differs: np.ndarray, axis: int) -> set[int]:
    """The positions along ``axis`` where any element differs."""
    others = tuple(a for a in range(differs.ndim) if a != axis)
    return set(np.flatnonzero(np.any(differs, axis=others)).tolist())


NEARBY_NOISE = 1e-6  # of the largest output: a smaller difference is not a differing position
SUBSET_LIMIT = 8


def _subsets(group: list[Tie]) -> list[list[Tie]]:
    """The subsets of ``group`` to try, smallest first (only none, each one and all of them
    beyond ``SUBSET_LIMIT`` ties)."""
    if len(group) > SUBSET_LIMIT:
        return [[], *([t] for t in group), group]
    return [list(c) for size in range(len(group) + 1) for c in combinations(group, size)]
