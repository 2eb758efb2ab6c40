"""brainsmith's folding search: the parallelism of every layer that meets a throughput
target at the least estimated cost on the part.

FINN's ``SetFolding`` grows SIMD, then PE, of a matrix layer only while its weight stream
stays within ``mvau_wwidth_max`` (36 bits per PE by default) and keeps weights in a decoupled
memory whose stream FINN caps at 8,191 bits: full-size conv nets stop far below a target the
part could reach. Here each matrix layer (``MVAU_hls``/``MVAU_rtl``) is folded by searching
every legal (SIMD, PE, weight memory, RAM style) for the one that meets the target cycles at
the least cost — the estimated LUT, BRAM, URAM and DSP use as fractions of the part's —, each
RTL threshold layer (``Thresholding_rtl``) the same way over its PE and the memory of its
thresholds (LUT-RAM as FINN picks by depth, block RAM or UltraRAM), and
FINN's ``SetFolding`` folds the other layers (sliding windows matched to depthwise layers,
thresholds, pools...), whose only choice is the smallest parallelism that meets the target.
A plugin's layer that FINN does not know is folded the same way as a matrix layer, over the
attributes its ``@kernel(folding={"PE": "NumChannels"})`` declares (each a divisor of the
attribute it names), by its own cycle and resource estimates; so is every layer SetFolding
skips — the generic ``Shuffle`` of a transformer's head split and merge (folded before FINN
decomposes it), RTL softmax and elementwise layers, brainsmith's own RTL layers — over the
PE or SIMD dividing its channels that FINN accepts.

Then the design is balanced, fitted and spread: when a layer cannot reach the target, every
layer is folded again for that layer's cycles (none faster than the slowest needs); when the
estimated resources exceed ``max_utilisation`` of the part, the smallest cycle budget that
fits is searched by bisection; then, since each layer's cheapest folding alone may spend one
resource while another stays unused (every weight in LUT-RAM, no block RAM), layers move to
other foldings that meet the budget while each move lowers the design's most used resource
as a share of the part. The result names the bottleneck layer and what limits it.

What a folding costs depends on the part (``costing``): on an AMD part the LUT, BRAM_18K,
URAM and DSP of FINN's estimates (and brainsmith's of what FINN does not estimate); on a
Lattice part, for which FINN makes the layers for a stand-in AMD part, the part's own LUT4,
FF, MULT18 and EBR from its family's fitted models (``cost_models``,
``rtl_costs.family_estimate``) against its capacities as nextpnr reports them.
"""

from __future__ import annotations

import copy
import itertools
import logging
import math
import threading
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Literal, NotRequired, TypedDict

from finn.transformation.fpgadataflow.set_folding import SetFolding
from finn.util.basic import is_versal
from qonnx.custom_op.registry import getCustomOp

from brainsmith.frameworks.finn import rtl_costs
from brainsmith.frameworks.finn.facts import ESTIMATION_METHODS, RESOURCES, is_hardware
from brainsmith.frameworks.finn.parts import part_resources
from brainsmith.plugin.metadata import PLUGIN_ATTRIBUTE

TYPE_CHECKING = False
if TYPE_CHECKING:
    from finn.custom_op.fpgadataflow.hwcustomop import HWCustomOp
    from qonnx.core.modelwrapper import ModelWrapper

Attributes = dict[str, int | str]  # a layer's folding attributes and their values

MATRIX_LAYERS = ("MVAU_hls", "MVAU_rtl")
THRESHOLD_LAYERS = ("Thresholding_rtl",)  # PE and the memory of their thresholds searched
COSTED_LAYERS = MATRIX_LAYERS + THRESHOLD_LAYERS  # folded by their estimated cost
WIDEST_STREAM = 8191  # bits: the widest HLS integer (ap_uint), FINN's MAX_ALLOWED_AP_INT_W
HLS_INPUT_BUFFER = 1024  # an HLS matrix layer needs SIMD >= MW / 1024
COSTED = RESOURCES  # the resources a folding's cost counts (an AMD part's)
SPREAD_MOVES = 256  # layers moved to another folding to spread the resources used
FASTER_STEPS = 16  # foldings tried one by one past the bisection's, each faster than the last
SLOWEST_BUDGET = 2**40  # cycles a frame no folding is slower than: every layer at its least
SPREAD_GAIN = 0.01  # of the part: a spread folding is kept if its most used resource is less
MAX_CANDIDATES = 4096  # foldings of one declared layer that are estimated
REFERENCE_PART = "xcvc1902-vsva2197-2MP-e-S"  # the scale of costs on a part with no table


@dataclass
class Choice:
    """A matrix layer's folding, its cycles and its estimated resources."""

    attributes: Attributes
    cycles: int
    resources: dict[str, float]


class LayerFolding(TypedDict):
    """A layer in a folding record: its cycles per frame and what stops it going faster."""

    cycles: int
    limit: str | None


class FoldingRecord(TypedDict):
    """What the folding step reached for ``target_fps`` (``folding.json``): per layer cycles
    and limit, the bottleneck and its limit; with brainsmith's search, the estimated totals."""

    search: Literal["brainsmith", "finn"]
    target_cycles: int
    cycles: int  # the bottleneck's
    layers: dict[str, LayerFolding]
    bottleneck: str | None
    limit: str | None
    totals: NotRequired[dict[str, float]]
    utilisation: NotRequired[float]
    part: NotRequired[str]  # the part the totals are costed for
    available: NotRequired[dict[str, int]]  # its resources
    latency: NotRequired[LatencyFolding]


class LatencyFolding(TypedDict):
    """How the folding met a latency target: the cycles one frame may take through the
    pipeline, the estimated critical path (FINN's sum of layer cycles), the per-layer budget."""

    target_cycles: int
    critical_path_cycles: int
    layer_budget: int
    met: bool


@dataclass
class FoldingResult:
    """What the search chose: per layer cycles and limit; the bottleneck and the totals."""

    target_cycles: int
    cycles: int  # the bottleneck's
    layers: dict[str, LayerFolding] = field(default_factory=dict)
    bottleneck: str | None = None
    limit: str | None = None
    totals: dict[str, float] = field(default_factory=dict)
    utilisation: float = 0.0
    part: str = ""
    available: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> FoldingRecord:
        return {
            "search": "brainsmith",
            "target_cycles": self.target_cycles,
            "cycles": self.cycles,
            "layers": self.layers,
            "bottleneck": self.bottleneck,
            "limit": self.limit,
            "totals": self.totals,
            "utilisation": round(self.utilisation, 4),
            "part": self.part,
            "available": self.available,
        }


@dataclass(frozen=True)
class Costing:
    """What a folding is costed in on a part: its resources and each layer's estimate of
    them (``estimate(layer, part)``), and the memories a threshold layer may keep its
    thresholds in (``THRESHOLD_MEMORIES``' keys)."""

    resources: tuple[str, ...]
    estimate: Callable[[HWCustomOp, str], dict[str, float]]
    threshold_memories: tuple[str, ...]


def costing(cost_models: str = "") -> Costing:
    """A Lattice part's costing in its family's fitted models ``cost_models`` (LUT4, FF,
    MULT18, EBR, thresholds in the memory FINN picks by depth, as the models were fitted),
    else (none) an AMD part's (FINN's estimates and brainsmith's of what FINN does not
    estimate)."""
    if cost_models:
        return Costing(
            rtl_costs.FAMILY_RESOURCES,
            lambda layer, _: _kept(layer, cost_models, lambda: family_estimate(layer, cost_models)),
            ("by_depth",),
        )
    return Costing(
        COSTED, lambda layer, part: _kept(layer, part, lambda: estimate(layer, part)),
        ("by_depth", "block", "ultra"),
    )  # fmt: skip


KEPT_ESTIMATES = 8192  # layer estimates a process keeps, the last made
_ESTIMATES: OrderedDict[tuple[object, ...], dict[str, float]] = OrderedDict()
_ESTIMATES_LOCK = threading.Lock()


def _kept(
    layer: HWCustomOp, costed_on: str, made: Callable[[], dict[str, float]]
) -> dict[str, float]:
    """``made()``, the estimate of ``layer`` on a part (or in a family's models: ``costed_on``),
    kept by what it depends on: the layer's kind and attributes (its folding, shapes and data
    types; the estimates read nothing else) and ``costed_on``. A search costs a layer's
    foldings again and again, and a process's later builds (an exploration, a refold) the
    same layers."""
    node = layer.onnx_node
    attributes = tuple(sorted(a.SerializeToString() for a in node.attribute))
    key = (type(layer).__module__, type(layer).__qualname__, node.op_type, costed_on, attributes)
    with _ESTIMATES_LOCK:
        if key in _ESTIMATES:
            _ESTIMATES.move_to_end(key)
            return dict(_ESTIMATES[key])
    found = made()
    with _ESTIMATES_LOCK:
        _ESTIMATES[key] = dict(found)
        while len(_ESTIMATES) > KEPT_ESTIMATES:
            _ESTIMATES.popitem(last=False)
    return found


def fold(model: ModelWrapper, target_cycles: int, part: str, available: dict[str, int] | None,
         max_utilisation: float = 0.9, cost_models: str = "") -> FoldingResult:  # fmt: skip
    """Fold ``model`` in place for ``target_cycles`` per frame on ``part`` (whose resources
    are ``available``; costed in its family's fitted models ``cost_models``, if any);
    returns a FoldingResult."""
    search = _Search(part, available or {}, cost_models)
    first = search.apply(model, target_cycles)
    budget = max(target_cycles, *first.values())
    cycles = first if budget == target_cycles else search.apply(model, budget)  # balanced
    fitted = bool(available) and search.utilisation(model) > max_utilisation
    short = _Shortfall(budget, search.overuse(model, max_utilisation) if fitted else "")
    if fitted:
        budget = _fitting_budget(search, model, budget, max_utilisation)
        budget, short.faster = _fastest_fitting(search, model, budget, max_utilisation)
        cycles = search.apply(model, budget)
    if available:
        cycles = _spread(search, model, budget)
    return search.result(model, target_cycles, first, cycles, short, max_utilisation)


@dataclass
class _Shortfall:
    """Why a design over the part is folded slower than its target: the budget every layer
    can meet (``balanced``) and what it ``needed``; what the next faster folding than the
    one chosen needs (``faster``; with nothing fitting, what the smallest needs)."""

    balanced: int
    needed: str
    faster: str = ""


def fold_for_latency(
    model: ModelWrapper,
    latency_cycles: int,
    part: str,
    available: dict[str, int] | None,
    budget: int,
    cost_models: str = "",
) -> LatencyFolding:
    """Fold ``model`` in place (further than ``budget`` cycles per layer where needed) so a
    frame's estimated latency, the sum of layer cycles along the slowest path, is at most
    ``latency_cycles``: the largest per-layer budget that does so, so the cheapest such
    folding of this search; the fastest folding when none does."""
    search = _Search(part, available or {}, cost_models)

    def path(per_layer: int) -> int:
        search.apply(model, per_layer)
        return critical_path_cycles(model)

    high = max(1, min(budget, latency_cycles))
    if path(high) > latency_cycles:
        low = 1
        if path(low) <= latency_cycles:
            while high - low > 1:  # path(low) meets the target, path(high) does not
                middle = (low + high) // 2
                low, high = (middle, high) if path(middle) <= latency_cycles else (low, middle)
        high = low
        path(high)
    reached = critical_path_cycles(model)
    return {
        "target_cycles": latency_cycles,
        "critical_path_cycles": reached,
        "layer_budget": high,
        "met": reached <= latency_cycles,
    }


def critical_path_cycles(model: ModelWrapper) -> int:
    """A frame's estimated latency as FINN's ``dataflow_performance`` computes it: the
    largest sum of layer cycles along a path from the input to an output."""
    reached: dict[str, int] = {}
    for node in model.graph.node:
        before = [reached.get(p.name, 0) for p in model.find_direct_predecessors(node) or []]
        cycles = int(getCustomOp(node).get_exp_cycles()) if is_hardware(node) else 0
        reached[node.name] = cycles + max(before, default=0)
    return max(reached.values(), default=0)


def over_the_part(
    model: ModelWrapper,
    part: str,
    available: dict[str, int] | None = None,
    cost_models: str = "",
) -> str:
    """What ``model`` is estimated to need beyond ``part`` (whose resources are
    ``available``, else FINN's table of the part; costed in its family's fitted models
    ``cost_models``, if any): each resource over 100 %, with the layer kinds using most of
    it; "" when it fits or the part's resources are not known."""
    if available is None:
        found = part_resources(part)
        available = found[0] if found is not None else None
    if not available:
        return ""
    over = _Search(part, available, cost_models).overuse(model, 1.0)  # each layer estimated once
    return f"the design does not fit {part}: it is estimated to need {over}" if over else ""


def fits_folded_smallest(
    model: ModelWrapper, part: str, available: dict[str, int] | None = None, cost_models: str = ""
) -> bool:
    """Whether ``model`` with every layer folded as far as it goes (a copy) fits ``part``
    (whose resources are ``available``, else FINN's table of the part), costed as
    ``over_the_part`` costs it: False says a lower throughput target cannot make it fit."""
    if available is None:
        found = part_resources(part)
        available = found[0] if found is not None else None
    if not available:
        return True  # the part's resources are not known: nothing says it does not fit
    search = _Search(part, available, cost_models)
    smallest = copy.deepcopy(model)
    search.apply(smallest, SLOWEST_BUDGET)
    return search.utilisation(smallest) <= 1.0


def _spread(search: _Search, model: ModelWrapper, budget: int) -> dict[str, int]:
    """Move layers to other foldings that meet ``budget`` (weights from LUT-RAM to block
    RAM, say) while each move lowers the design's most used resource, as a share of the
    part: the cheapest folding of each layer alone can spend one resource where another is
    left unused. Kept only if the most used resource drops by ``SPREAD_GAIN`` of the part or
    more. Returns each layer's cycles."""
    layers = {name: getCustomOp(model.get_node_from_name(name)) for name in search.chosen}
    chosen = dict(search.chosen)
    totals: dict[str, float] = dict(search.totals(model))
    start = peak = search.peak(totals)
    for _ in range(SPREAD_MOVES):
        move = _best_move(search, chosen, totals, budget, peak)
        if move is None:
            break
        peak, name, chosen[name], totals = move
    if peak > start - SPREAD_GAIN:
        return layer_cycles(model)
    for name, option in chosen.items():
        _restore(layers[name], option.attributes)
    return layer_cycles(model)


_Move = tuple[float, str, Choice, dict[str, float]]  # the peak after it, the layer, its folding


def _best_move(
    search: _Search, chosen: dict[str, Choice], totals: dict[str, float], budget: int, peak: float
) -> _Move | None:
    """The one layer's move to another folding within ``budget`` that lowers the most used
    resource (as a share of the part) the furthest below ``peak``; None when none does."""
    costed = search.costing.resources
    top = max((k for k in costed if search.available.get(k)), key=lambda k: search.share(totals, k))
    move: _Move | None = None
    for name, current in chosen.items():
        for option in search.options[name]:
            if option.cycles > budget or option.resources[top] >= current.resources[top]:
                continue
            after: dict[str, float] = {
                k: totals[k] - current.resources[k] + option.resources[k] for k in costed
            }
            lowered = search.peak(after)
            if lowered < (move[0] if move else peak):
                move = (lowered, name, option, after)
    return move


def _fitting_budget(search: _Search, model: ModelWrapper, low: int, ceiling: float) -> int:
    """The smallest cycle budget >= ``low`` whose folding fits ``ceiling`` of the part."""
    high = low
    while True:  # grow until it fits (or the design is fully folded: nothing is smaller)
        high *= 2
        search.apply(model, high)
        if search.utilisation(model) <= ceiling or high > SLOWEST_BUDGET:
            break
    while high - low > max(1, low // 100):  # within 1 %
        middle = (low + high) // 2
        search.apply(model, middle)
        if search.utilisation(model) <= ceiling:
            high = middle
        else:
            low = middle
    return high


def _fastest_fitting(
    search: _Search, model: ModelWrapper, budget: int, ceiling: float
) -> tuple[int, str]:
    """From the folding for ``budget``, each next faster folding (one cycle less than the
    slowest layer's) while it fits ``ceiling`` of the part, on a copy of ``model``: the
    budget of the fastest that fits and what the next faster one needs ("" when no folding
    is faster; with nothing fitting, what the smallest needs)."""
    probe = copy.deepcopy(model)
    chosen = dict(search.chosen)  # the model's own, which apply() on the copy replaces
    slowest = max(search.apply(probe, budget).values(), default=0)
    why = ""
    if search.utilisation(probe) > ceiling:
        why = f"{slowest:,} cycles, the smallest folding, needs {search.overuse(probe, ceiling)}"
    for _ in range(FASTER_STEPS if not why else 0):
        faster = max(search.apply(probe, slowest - 1).values(), default=0)
        if faster >= slowest:
            break
        if search.utilisation(probe) > ceiling:
            why = f"the next faster folding, {faster:,} cycles, needs {search.overuse(probe, ceiling)}"
            break
        budget = slowest = faster
    search.chosen = chosen
    return budget, why


class _Search:
    def __init__(self, part: str, available: dict[str, int], cost_models: str = "") -> None:
        self.part = part
        self.available = available
        self.costing = costing(cost_models)
        # a part without a resource table is costed at a reference part's scale, not fitted
        self.scale = available or dict(part_resources(REFERENCE_PART)[0])  # type: ignore[index]
        # URAM holds weights only where the bitstream initialises it (Versal); elsewhere
        # FINN requires runtime-writeable weights, which a driver would have to load
        self.uram_weights = bool(available.get("URAM")) and is_versal(part)
        self.options: dict[str, list[Choice]] = {}  # each layer's foldings, estimated once
        self.chosen: dict[str, Choice] = {}  # each matrix or declared layer's, by apply()

    def apply(self, model: ModelWrapper, budget: int) -> dict[str, int]:
        """Fold every layer for ``budget`` cycles; returns each layer's cycles."""
        with _quiet_finn():  # its warnings are about matrix layers folded again below
            folding = SetFolding(budget, mvau_wwidth_max=WIDEST_STREAM, two_pass_relaxation=False)
            model.transform(folding, make_deepcopy=False, cleanup=False)  # in place
        for node in model.graph.node:
            if not is_hardware(node):
                continue
            layer = getCustomOp(node)
            if node.op_type in COSTED_LAYERS or searched_folding(layer):
                choice, _ = self.choice(node.name, layer, budget)
                self.chosen[node.name] = choice
                _restore(layer, choice.attributes)
        return layer_cycles(model)

    def choice(self, name: str, layer: HWCustomOp, budget: int) -> tuple[Choice, str | None]:
        """The cheapest folding of a matrix, threshold or declared layer within ``budget``
        cycles, else the fastest legal one and why no faster one is legal."""
        searched = searched_folding(layer)
        if name not in self.options:
            self.options[name] = self._options(layer, searched)
        candidates = self.options[name]
        meeting = [c for c in candidates if c.cycles <= budget]
        if meeting and searched:  # the least parallel of the cheapest (an estimate may be 0)
            best = min(meeting, key=lambda c: (self.cost(c), _parallelism(c)))
        elif meeting:
            best = min(meeting, key=lambda c: (self.cost(c), c.cycles))
        else:
            best = min(candidates, key=lambda c: (c.cycles, self.cost(c)))
        _restore(layer, best.attributes)
        return best, None if meeting else _limit(layer, searched, best)

    def _options(self, layer: HWCustomOp, searched: dict[str, tuple[str, int]]) -> list[Choice]:
        """Every folding of a matrix, threshold or declared layer, estimated."""
        if layer.onnx_node.op_type in MATRIX_LAYERS:
            return list(self._candidates(layer))
        if layer.onnx_node.op_type in THRESHOLD_LAYERS:
            return list(self._threshold_candidates(layer))
        current = {key: layer.get_nodeattr(key) for key in searched}
        with _quiet_finn():  # FINN's shuffle estimates warn about Vivado each time
            costed = [self._legal(layer, a) for a in _searched_candidates(searched)]
        legal = [c for c in costed if c is not None]
        return legal or [self._costed(layer, current)]

    def _candidates(self, layer: HWCustomOp) -> Iterator[Choice]:
        shape = _MatrixShape.of(layer)
        for simd in _divisors(shape.mw):
            if simd * shape.input_bits > WIDEST_STREAM or (
                shape.hls and simd * HLS_INPUT_BUFFER < shape.mw
            ):
                continue
            for pe, memory, ram in self._pe_and_memories(layer, shape, simd):
                attributes: Attributes = {"SIMD": simd, "PE": pe, "mem_mode": memory}
                yield self._costed(layer, {**attributes, "ram_style": ram})

    def _pe_and_memories(
        self, layer: HWCustomOp, shape: _MatrixShape, simd: int
    ) -> Iterator[tuple[int, str, str]]:
        """(PE, mem_mode, ram_style) a matrix layer may take with ``simd``."""
        for pe in _divisors(shape.mh):
            stream = pe * simd * shape.weight_bits
            if pe * shape.output_bits > WIDEST_STREAM or (
                shape.streamed and stream > WIDEST_STREAM
            ):
                break
            if shape.streamed:  # a computed operand (attention): no memory to pick
                yield pe, shape.mode, layer.get_nodeattr("ram_style")
                continue
            for memory, ram in _memories(shape.hls, stream, self.uram_weights):
                yield pe, memory, ram

    def _threshold_candidates(self, layer: HWCustomOp) -> Iterator[Choice]:
        """Each PE dividing a threshold layer's channels, with its thresholds in the memory
        FINN picks by depth (LUT-RAM for shallow ones), in block RAM, or (on a Versal part
        with UltraRAM) in UltraRAM: ``depth_trigger_bram`` / ``depth_trigger_uram``."""
        allowed = self.costing.threshold_memories
        memories = [m for name, m in THRESHOLD_MEMORIES.items() if name in allowed]
        if not self.uram_weights:
            memories = [m for m in memories if m != THRESHOLD_MEMORIES["ultra"]]
        for pe in _divisors(int(layer.get_nodeattr("NumChannels"))):
            for bram, uram in memories:
                attributes: Attributes = {
                    "PE": pe,
                    "depth_trigger_bram": bram,
                    "depth_trigger_uram": uram,
                }
                choice = self._legal(layer, attributes)
                if choice is not None:
                    yield choice

    def _costed(self, layer: HWCustomOp, attributes: Attributes) -> Choice:
        for name, value in attributes.items():
            layer.set_nodeattr(name, value)
        return Choice(attributes, int(layer.get_exp_cycles()), self.estimate(layer))

    def _legal(self, layer: HWCustomOp, attributes: Attributes) -> Choice | None:
        """``attributes`` costed, or None where FINN refuses them (a stream wider than it
        builds, a folding its cycle model or shapes reject)."""
        try:
            choice = self._costed(layer, attributes)
            widths = layer.get_instream_width(), layer.get_outstream_width()
        except Exception:  # FINN's assertions and errors on an illegal folding
            return None
        return choice if max(widths) <= WIDEST_STREAM else None

    def estimate(self, layer: HWCustomOp) -> dict[str, float]:
        """``layer``'s use of the part's resources, as the part's costing estimates it."""
        return self.costing.estimate(layer, self.part)

    def cost(self, choice: Choice) -> float:
        """The fractions of the part ``choice`` uses, summed (of the reference part where
        the part's resources are not known)."""
        return sum(
            choice.resources.get(key, 0) / self.scale[key]
            for key in self.costing.resources
            if self.scale.get(key)
        )

    def share(self, totals: dict[str, float], key: str) -> float:
        return totals.get(key, 0.0) / self.available[key]

    def peak(self, totals: dict[str, float]) -> float:
        """The largest fraction of any resource of the part ``totals`` use."""
        costed = self.costing.resources
        return max(
            (self.share(totals, key) for key in costed if self.available.get(key)), default=0.0
        )

    def utilisation(self, model: ModelWrapper) -> float:
        """The largest fraction of any resource of the part the design is estimated to use."""
        return self.peak(self.totals(model))

    def overuse(self, model: ModelWrapper, ceiling: float) -> str:
        """Each resource the design uses over ``ceiling`` of the part, with its share and
        the layer kinds using most of it: ``DSP 2,100 (107 %; MVAU_rtl x12 1,460, ...)``."""
        layers = [
            (node.op_type, self.estimate(getCustomOp(node)))
            for node in model.graph.node
            if is_hardware(node)
        ]  # estimated once, for every resource
        count = Counter(kind for kind, _ in layers)
        costed = self.costing.resources
        totals: dict[str, float] = {k: sum(f[k] for _, f in layers) for k in costed}
        over = [k for k in costed if self.available.get(k) and self.share(totals, k) > ceiling]
        return "; ".join(self._overused(key, layers, count, totals) for key in over)

    def _overused(
        self,
        key: str,
        layers: list[tuple[str, dict[str, float]]],
        count: Counter[str],
        totals: dict[str, float],
    ) -> str:
        """``key``'s total, its share of the part, and the layer kinds using most of it."""
        used: dict[str, float] = {}
        for kind, found in layers:
            used[kind] = used.get(kind, 0.0) + found[key]
        largest = sorted(used.items(), key=lambda item: -item[1])[:3]
        kinds = ", ".join(f"{k} x{count[k]} {v:,.0f}" for k, v in largest if v)
        share = 100 * self.share(totals, key)  # two decimals, as the report's shares
        available = self.available[key]
        return f"{key} {totals[key]:,.0f} ({share:.2f} % of the part; {kinds}; {available:,} available)"

    def totals(self, model: ModelWrapper) -> dict[str, float]:
        totals: dict[str, float] = dict.fromkeys(self.costing.resources, 0.0)
        for node in model.graph.node:
            if is_hardware(node):
                for key, value in self.estimate(getCustomOp(node)).items():
                    totals[key] += value
        return totals

    def result(self, model: ModelWrapper, target: int, first: dict[str, int],
               cycles: dict[str, int], short: _Shortfall, ceiling: float) -> FoldingResult:  # fmt: skip
        """What was chosen; the bottleneck is the slowest layer at the target (after the
        balancing pass many layers take as long as it does)."""
        slowest = max(cycles.values(), default=0)
        found = FoldingResult(target, slowest, part=self.part, available=dict(self.available))
        totals = self.totals(model)
        found.totals = {key: round(value, 1) for key, value in totals.items()}
        found.utilisation = self.peak(totals)
        found.layers = {name: {"cycles": value, "limit": None} for name, value in cycles.items()}
        if slowest <= target:
            return found
        if short.needed:
            found.bottleneck = max(cycles, key=cycles.__getitem__)
            found.limit = self._part_limit(target, first, slowest, totals, short, ceiling)
        else:
            found.bottleneck = max(first, key=first.__getitem__)
            node = model.get_node_from_name(found.bottleneck)
            layer = getCustomOp(node)
            if node.op_type in COSTED_LAYERS or searched_folding(layer):
                found.limit = self.choice(found.bottleneck, layer, target)[1]
            else:
                found.limit = other_limit(layer)
        found.layers[found.bottleneck]["limit"] = found.limit
        return found

    def _part_limit(self, target: int, first: dict[str, int], slowest: int,
                    totals: dict[str, float], short: _Shortfall, ceiling: float) -> str:  # fmt: skip
        """The part as a design's limit: what every layer folded for the target (or for the
        fastest its slowest layer goes) needs, the folding chosen (``slowest`` cycles,
        ``totals``) with its most used resource, and what the next faster one needs (or,
        nothing fitting, the smallest)."""
        at = f"{short.balanced:,} cycles"
        if short.balanced > target:
            at += f" (the fastest {max(first, key=first.__getitem__)} goes)"
        said = (
            f"the part: every layer folded for {at} needs {short.needed}, more than "
            f"{ceiling:.0%} of {self.part} (build.folding.max_utilisation, or the share its "
            f"family's router places where that is less); folded for "
            f"{slowest:,} cycles instead"
        )
        if self.peak(totals) > ceiling:
            return f"{said}: no folding fits; {short.faster}"
        top = max((k for k in self.costing.resources if self.available.get(k)),
                  key=lambda k: self.share(totals, k))  # fmt: skip
        used = (
            f"{top} {totals[top]:,.0f} of {self.available[top]:,} "
            f"({100 * self.share(totals, top):.2f} %)"
        )
        said += f", the fastest folding within it ({used}, its most used resource)"
        return f"{said}; {short.faster}" if short.faster else said


def layer_cycles(model: ModelWrapper) -> dict[str, int]:
    """Each hardware layer's estimated cycles per frame."""
    return {
        node.name: int(getCustomOp(node).get_exp_cycles())
        for node in model.graph.node
        if is_hardware(node)
    }


def declared_folding(layer: HWCustomOp) -> dict[str, str]:
    """``{folding attribute: the attribute it divides}`` a plugin's kernel declares with
    ``@kernel(folding=...)`` (found on the layer's class or the kernel class it derives
    from); empty for FINN's layers."""
    for cls in type(layer).__mro__:
        marker = cls.__dict__.get(PLUGIN_ATTRIBUTE)
        if isinstance(marker, dict) and marker.get("type") == "kernel":
            return dict(marker.get("folding") or {})
    return {}


def searched_folding(layer: HWCustomOp) -> dict[str, tuple[str, int]]:
    """``{folding attribute: (what it divides, its size)}`` of a layer brainsmith's search
    folds besides the matrix layers: the attributes a plugin's kernel declares, and the PE
    or SIMD of a layer FINN's ``SetFolding`` leaves at 1 (``unfolded_by_finn``) over the
    divisors of its channels (the innermost dimension of its input and output); empty for
    the layers ``SetFolding`` folds."""
    declared = declared_folding(layer)
    if declared:
        return {
            name: (whole, max(1, int(layer.get_nodeattr(whole))))
            for name, whole in declared.items()
        }
    if not unfolded_by_finn(layer.onnx_node.op_type):
        return {}
    name = next((n for n in ("PE", "SIMD") if _has(layer, n)), None)
    if name is None:
        return {}
    try:
        channels = math.gcd(
            int(layer.get_normal_input_shape()[-1]), int(layer.get_normal_output_shape()[-1])
        )
    except Exception:  # a layer whose shapes FINN cannot give: left as it is
        return {}
    return {name: ("channels", channels)}


def unfolded_by_finn(op_type: str) -> bool:
    """Whether FINN's ``SetFolding`` leaves a hardware layer of ``op_type`` unfolded: the
    generic ``Shuffle`` (not specialised, so skipped), and every specialised layer outside
    its lists (RTL elementwise, softmax and shuffle layers, brainsmith's own RTL layers)."""
    if op_type.startswith("Elementwise") and op_type.endswith("_hls"):
        return False
    return op_type == "Shuffle" or (
        op_type.endswith(("_hls", "_rtl")) and op_type not in FOLDED_BY_FINN | BOUND_FOLDING
    )


# The specialised layers FINN's SetFolding folds (finn-plus 1.6.1: its pe_ops, simd_ops,
# depthwise exceptions, matrix layers and LabelSelect; its HLS elementwise layers aside)
FOLDED_BY_FINN = frozenset(
    {
        *MATRIX_LAYERS,
        "DuplicateStreams_hls", "GlobalAccPool_hls", "PWPolyF_rtl", "Thresholding_hls",
        "Thresholding_rtl", "ReplicateStream_hls", "Squeeze_hls", "Unsqueeze_hls",
        "Reshape_rtl", "LabelSelect_hls", "VVAU_hls", "VVAU_rtl", "Pool_hls",
        "FMPadding_rtl", "FMPadding_Pixel_hls", "ConvolutionInputGenerator_rtl",
        "StreamingSplit_hls", "StreamingConcat_hls", "LayerNorm_rtl",
    }
)  # fmt: skip


# Layers whose parallelism is their producer's (a pool's PE is its depthwise sliding
# window's SIMD, which SetFolding leaves at 1 when it does not fold the pool): not searched
BOUND_FOLDING = frozenset({"Pool_rtl"})


def _searched_candidates(searched: dict[str, tuple[str, int]]) -> Iterator[Attributes]:
    """Every combination of divisors of the searched attributes' sizes (the smallest first,
    at most MAX_CANDIDATES)."""
    options = [_divisors(size) for _, size in searched.values()]
    combinations = itertools.product(*options)
    for values in itertools.islice(combinations, MAX_CANDIDATES):
        yield dict(zip(searched, values, strict=True))


def _limit(layer: HWCustomOp, searched: dict[str, tuple[str, int]], fastest: Choice) -> str:
    """Why no faster folding of ``layer`` than ``fastest`` is legal."""
    if searched:
        return _searched_limit(layer, searched, fastest)
    if layer.onnx_node.op_type in THRESHOLD_LAYERS:
        return other_limit(layer)
    return _matrix_limit(layer, fastest)


def _parallelism(choice: Choice) -> int:
    """The product of a searched folding's attributes (all numbers)."""
    return math.prod(int(value) for value in choice.attributes.values())


def _searched_limit(
    layer: HWCustomOp, searched: dict[str, tuple[str, int]], fastest: Choice
) -> str:
    parts = [
        f"{name} {fastest.attributes[name]} of {whole} {size}"
        for name, (whole, size) in searched.items()
    ]
    if all(fastest.attributes[n] == size for n, (_, size) in searched.items()):
        return f"fully parallel: {', '.join(parts)}"
    legal = "its kernel declares" if declared_folding(layer) else "FINN accepts"
    return (
        f"{', '.join(parts)}: the most parallel foldings {legal} were not estimated faster "
        f"(at most {MAX_CANDIDATES:,} foldings are tried)"
    )


def estimate(layer: HWCustomOp, part: str) -> dict[str, float]:
    """``layer``'s LUT, BRAM_18K, URAM and DSP use on ``part``: FINN's estimates, and
    brainsmith's (``rtl_costs``) of what FINN does not estimate (an RTL matrix layer's LUTs)
    or estimates as it does not build (an RTL matrix layer's DSPs)."""
    found: dict[str, float] = {}
    for key, method in ESTIMATION_METHODS.items():
        try:
            value = _call(layer, method, part)
        except Exception:  # a layer FINN cannot estimate in this configuration
            value = 0
        found[key] = float(value or 0)
    return {**found, **rtl_costs.estimate(layer, part)}


def family_estimate(layer: HWCustomOp, cost_models: str) -> dict[str, float]:
    """``layer``'s LUT4, FF, MULT18 and EBR on a Lattice part (its family's fitted models
    ``cost_models``, ``rtl_costs``); none of each for a kind without a model (a Lattice
    build's layers are all RTL, of the kinds the models cover)."""
    found = rtl_costs.family_estimate(layer, cost_models)
    return found if found is not None else dict.fromkeys(rtl_costs.FAMILY_RESOURCES, 0.0)


def _call(layer: HWCustomOp, method: str, part: str) -> float:
    function = getattr(layer, method)
    try:
        found: float = function(part)
    except TypeError:  # some layers' estimations take no part
        found = function()
    return found


STREAMED_OPERAND = ("dynamic", "external")
THRESHOLD_NEVER = 2**31 - 1  # a depth trigger no memory reaches
# a threshold layer's memories: (depth_trigger_bram, depth_trigger_uram)
THRESHOLD_MEMORIES: dict[str, tuple[int, int]] = {
    "by_depth": (0, 0),  # as FINN picks by depth (LUT-RAM for shallow thresholds)
    "block": (1, THRESHOLD_NEVER),
    "ultra": (1, 1),  # Versal's UltraRAM
}


def _memories(hls: bool, stream: int, uram: bool) -> Iterator[tuple[str, str]]:
    """(mem_mode, ram_style) a matrix layer may keep its weights in."""
    if stream <= WIDEST_STREAM or not hls:
        yield "internal_decoupled", "block"
        yield "internal_decoupled", "distributed"
        if uram:
            yield "internal_decoupled", "ultra"
    if hls:  # weights compiled into the layer: no weight stream, so no width limit
        yield "internal_embedded", "auto"


def _matrix_limit(layer: HWCustomOp, fastest: Choice) -> str:
    mw, mh = layer.get_nodeattr("MW"), layer.get_nodeattr("MH")
    simd, pe = fastest.attributes["SIMD"], fastest.attributes["PE"]
    if simd == mw and pe == mh:
        return f"fully parallel: SIMD = MW = {mw}, PE = MH = {mh}"
    bits = layer.get_input_datatype(0).bitwidth(), layer.get_output_datatype().bitwidth()
    if simd < mw:
        return (
            f"SIMD {simd} of MW {mw}: a wider input stream ({bits[0]}-bit inputs) would pass "
            f"{WIDEST_STREAM:,} bits, the widest FINN streams"
        )
    return (
        f"PE {pe} of MH {mh}: a wider output stream ({bits[1]}-bit outputs) would pass "
        f"{WIDEST_STREAM:,} bits, the widest FINN streams"
    )


def other_limit(layer: HWCustomOp) -> str:
    attributes = {name: layer.get_nodeattr(name) for name in ("PE", "SIMD") if _has(layer, name)}
    shown = ", ".join(f"{name} {value}" for name, value in attributes.items())
    return f"{layer.onnx_node.op_type} at its most parallel folding ({shown}) under FINN's rules"


def _has(layer: HWCustomOp, name: str) -> bool:
    return name in layer.get_nodeattr_types()


def _restore(layer: HWCustomOp, attributes: Attributes) -> None:
    for name, value in attributes.items():
        layer.set_nodeattr(name, value)


def _divisors(number: int) -> list[int]:
    small = [d for d in range(1, math.isqrt(number) + 1) if number % d == 0]
    return sorted({*small, *(number // d for d in small)})


@dataclass
class _MatrixShape:
    """What a matrix layer's foldings depend on."""

    mw: int
    mh: int
    hls: bool
    weight_bits: int
    input_bits: int
    output_bits: int
    mode: str

    @classmethod
    def of(cls, layer: HWCustomOp) -> _MatrixShape:
        return cls(
            mw=layer.get_nodeattr("MW"),
            mh=layer.get_nodeattr("MH"),
            hls=layer.onnx_node.op_type == "MVAU_hls",
            weight_bits=layer.get_input_datatype(1).bitwidth(),
            input_bits=layer.get_input_datatype(0).bitwidth(),
            output_bits=layer.get_output_datatype().bitwidth(),
            mode=layer.get_nodeattr("mem_mode"),
        )

    @property
    def streamed(self) -> bool:
        return self.mode in STREAMED_OPERAND


class _quiet_finn:
    """FINN's logger silenced for warnings while SetFolding runs."""

    def __enter__(self) -> None:
        self.logger = logging.getLogger("finn_logger")
        self.level = self.logger.level
        self.logger.setLevel(logging.ERROR)

    def __exit__(self, *exc_info: object) -> None:
        self.logger.setLevel(self.level)
