"""Verification: run a model at any point of the build on the same inputs as the cleaned
QONNX model and compare the outputs.

Inputs are generated deterministically (seeded) from each input's QONNX datatype — or,
for a float input feeding a ``Quant`` node, from that quantizer's range plus one step
either side, so clipping is exercised. After the dataflow partition the model is run as
its parent graph with the ``StreamingDataflowPartition`` pointing at it; ``*_hls`` layers
run as their generic kernel in Python and ``*_rtl`` layers in their Python fallback
(``exec_mode="cppsim"``), as no C++ or RTL simulator is needed that way. Exported models
have batch size 1: a flat model (before the partition) runs node by node over all samples,
each onnxruntime session made once; a partitioned one runs one sample at a time through
FINN's executor. Tensors are compared (and inputs fed) in each model's own shape when only
the rank differs (a 1D network made 2D).

Differences are counted in quantizer steps (``brainsmith.verification.quantizer_steps``): an output
made by a quantizer (or a constant scale of one) is compared in that quantizer's step, a
float output within ``FLOAT_RTOL`` of its largest reference value; a sample whose outputs
differ is explained, if it can be, by reference quantizer elements that lie on a rounding
boundary (ties) rounded the other way, following the checked model's own tensors (every
tensor of its run is kept, the layers inside a partition too); the user's expected outputs
(torch's) are explained the same way, by the ties on which torch's arithmetic and the
exported model's went different ways. A check fails on any difference no tie explains (an
error); ties are counted. A blueprint's ``verify_atol`` replaces the derived tolerances.

FINN's RTL softmax and LayerNorm approximate the functions (``float_units``): the checks
compare the exact functions, what the network is meant to compute, and
``Verifier.rtl_arithmetic`` measures how far the RTL's arithmetic takes the outputs.

A model that computes exactly what the last checked one computed (``computation_key``: the
same nodes, attributes, weights and datatypes, whatever the names) is not run again: its
outcome stands, reported as unchanged (``specialize`` of HLS layers, ``estimates``,
``codegen`` change nothing the Python execution reads).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace

import numpy as np
from onnx import numpy_helper

from brainsmith.blueprint.options import VERIFY_RTOL
from brainsmith.frameworks.finn.execution import (
    fix_python_execution,
    graph_inputs,
    in_parent,
    runnable_copy,
)
from brainsmith.frameworks.finn.float_units import RTL_FLOAT_UNITS, rtl_arithmetic
from brainsmith.verification.node_major import NodeMajor
from brainsmith.verification.quantizer_steps import Reference, Tie, explain, output_steps

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    import onnx
    from qonnx.core.modelwrapper import ModelWrapper

    from brainsmith.report_schema import Verification

# A float output's tolerance: this fraction of its largest reference value (over the samples)
FLOAT_RTOL = 1e-4
# A quantized output's tolerance: this fraction of its step (float noise, never a step)
STEP_NOISE = 1e-3

Sample = tuple[np.ndarray, ...]  # one array per graph input
if TYPE_CHECKING:
    Outputs = list[np.ndarray]  # one array per graph output
    # The user's vectors: the samples and, per sample, the expected outputs (intake's)
    Vectors = tuple[list[Sample], list[Outputs]]
    Context = dict[str, np.ndarray]  # tensor name -> value, as QONNX's execution has it
    Distance = Callable[[Outputs], float]  # how far outputs are from a sample's, 0: the same
    # (sample, the model's outputs, the expected outputs, distance to each) -> the ties
    Explainer = Callable[[int, Outputs, Outputs, Distance, Distance], list[Tie] | None]


# Node attributes that never change what a layer computes in Python: where generated code,
# IP and simulators live, estimates, the backend preference, the memory and arithmetic
# resources chosen, FIFO depths, placement.
NOT_COMPUTED = frozenset(
    {
        "code_gen_dir_cppsim",
        "code_gen_dir_ipgen",
        "ipgen_path",
        "gen_top_module",
        "ip_path",
        "ip_vlnv",
        "executable_path",
        "rtlsim_so",
        "rtlsim_trace",
        "res_estimate",
        "cycles_estimate",
        "preferred_impl_style",
        "ram_style",
        "ram_style_thresholds",
        "ram_style_mask",
        "resType",
        "mac_resource",
        "inFIFODepths",
        "outFIFODepths",
        "partition_id",
        "slr",
        "mem_port",
        "device_id",
    }
)


@dataclass(frozen=True)
class Check:
    """The outcome of one comparison; ``unchanged``: the model computes exactly what the
    last one checked computed, so that outcome stands without running it again.
    ``max_steps``: the largest difference of a quantized output in its quantizer's steps
    (None without one); ``errors``: differing output elements no rounding tie explains;
    ``ties``: reference quantizer elements on a rounding boundary that this model rounds the
    other way (in ``tie_samples`` samples), ``worst_tie`` naming the one behind the largest
    difference."""

    label: str
    samples: int
    max_error: float
    ok: bool
    unchanged: bool = False
    max_steps: float | None = None
    errors: int = 0
    ties: int = 0
    tie_samples: int = 0
    worst_tie: str = ""

    def as_dict(self) -> Verification:
        result: Verification = {"samples": self.samples, "max_error": self.max_error, "ok": self.ok}
        if self.max_steps is not None:
            result["max_steps"] = self.max_steps
        result["errors"], result["ties"] = self.errors, self.ties
        if self.ties:
            result["tie_samples"], result["worst_tie"] = self.tie_samples, self.worst_tie
        return {**result, "unchanged": True} if self.unchanged else result


def generate_inputs(model: ModelWrapper, count: int, seed: int = 0) -> list[Sample]:
    """``count`` samples for ``model``'s inputs, drawn from their QONNX datatype ranges."""
    rng = np.random.default_rng(seed)
    specs = [(i.name, _shape(model, i.name)) for i in graph_inputs(model)]
    samples = []
    for _ in range(count):
        samples.append(tuple(_draw(model, name, shape, rng) for name, shape in specs))
    return samples


def _shape(model: ModelWrapper, name: str) -> tuple[int, ...]:
    return tuple(int(d) if d else 1 for d in model.get_tensor_shape(name))


def _draw(
    model: ModelWrapper, name: str, shape: tuple[int, ...], rng: np.random.Generator
) -> np.ndarray:
    dtype = model.get_tensor_datatype(name)
    if dtype.name == "BIPOLAR":
        return rng.choice([-1.0, 1.0], size=shape).astype(np.float32)
    if dtype.is_integer():
        return rng.integers(int(dtype.min()), int(dtype.max()) + 1, size=shape).astype(np.float32)
    if dtype.is_fixed_point():
        scale = dtype.scale_factor()
        steps = rng.integers(round(dtype.min() / scale), round(dtype.max() / scale) + 1, size=shape)
        drawn: np.ndarray = (steps * scale).astype(np.float32)
        return drawn
    low, high = _quant_range(model, name)
    return rng.uniform(low, high, size=shape).astype(np.float32)


def _quant_range(model: ModelWrapper, name: str) -> tuple[float, float]:
    """The range a ``Quant`` consumer of a float input represents, one step wider each side."""
    for node in model.find_consumers(name) or ():
        if node.op_type == "Quant" and node.input[0] == name:
            represented = _represented(model, node)
            return represented if represented is not None else (-1.0, 1.0)
    return -1.0, 1.0


def _represented(model: ModelWrapper, quant: onnx.NodeProto) -> tuple[float, float] | None:
    """The range ``quant`` represents, one step wider each side; None without a constant
    per-tensor scale, zero point and width."""
    scale, zero, bits = (model.get_initializer(t) for t in quant.input[1:4])
    if scale is None or zero is None or bits is None or np.size(scale) != 1:
        return None
    low, high = _integer_range(quant, int(np.asarray(bits).item()))
    s, z = float(np.asarray(scale).item()), float(np.asarray(zero).item())
    return (low - 1 - z) * s, (high + 1 - z) * s


def _integer_range(quant: onnx.NodeProto, bits: int) -> tuple[int, int]:
    """The smallest and largest integer of ``quant`` at ``bits`` (signed unless it says not,
    narrow if it says so)."""
    attrs = {a.name: a.i for a in quant.attribute}
    narrow = attrs.get("narrow", 0)
    if attrs.get("signed", 1):
        return -(2 ** (bits - 1)) + narrow, 2 ** (bits - 1) - 1
    return 0, 2**bits - 1 - narrow


def run(
    model: ModelWrapper, samples: list[Sample], prepared: NodeMajor | None = None
) -> list[Outputs]:
    """Outputs (in graph order) of ``model`` for each sample: node by node for all samples
    at once where the graph is flat (each tensor dropped after its last use; ``prepared``:
    ``model`` readied for that), else one sample at a time through FINN's executor."""
    feeds = _feeds(model, samples)  # a step may change a tensor's rank (1D made 2D): same data
    outputs = [o.name for o in model.graph.output]
    if _flat(model):
        contexts = (prepared or NodeMajor(model)).run(feeds, drop=True)
    else:
        contexts = _run_in_finn(model, feeds)
    return [[np.asarray(context[o]) for o in outputs] for context in contexts]


def run_all(model: ModelWrapper, sample: Sample, prepared: NodeMajor | None = None) -> Context:
    """Every tensor ``model`` computes on one sample, the layers inside a dataflow partition
    too (named after the partition node, as FINN's executor names them; the partition
    nodes of ``model`` are set to return them), its inputs and weights aside."""
    (feed,) = _feeds(model, [sample])
    if _flat(model):
        context = (prepared or NodeMajor(model)).run([feed])[0]
    else:
        context = _every_tensor_in_finn(model, feed)
    given = {*feed, *(t.name for t in model.graph.initializer)}
    return {name: value for name, value in context.items() if name not in given}


def _run_in_finn(model: ModelWrapper, feeds: list[Context]) -> list[Context]:
    """Each feed run one at a time through FINN's executor."""
    from finn.core.onnx_exec import execute_onnx

    return [execute_onnx(model, feed) for feed in feeds]


def _every_tensor_in_finn(model: ModelWrapper, feed: Context) -> Context:
    """Every tensor FINN's executor computes on ``feed``, inside the partitions too."""
    from finn.core.onnx_exec import execute_onnx
    from qonnx.custom_op.registry import getCustomOp

    for node in model.get_nodes_by_op_type("StreamingDataflowPartition"):
        getCustomOp(node).set_nodeattr("return_full_exec_context", 1)
    context: Context = execute_onnx(model, feed, return_full_exec_context=True)
    return context


def _flat(model: ModelWrapper) -> bool:
    """No partition to descend into, no subgraph, no simulation mode: every node can run
    for all samples in turn (``NodeMajor``)."""
    partitions = {"StreamingDataflowPartition", "GenericPartition"}
    return not model.get_metadata_prop("exec_mode") and not any(
        node.op_type in partitions or any(a.type in (5, 10) for a in node.attribute)
        for node in model.graph.node
    )


@dataclass(frozen=True)
class Tolerances:
    """Per output: its quantizer step (None for a float output), the unit a difference is
    measured in (the step, else the largest expected value, else 1) and the absolute
    tolerance; ``rtol`` of the reference value is allowed on top."""

    steps: list[float | None]
    units: list[float]
    atols: list[float]
    rtol: float

    def distance_to(self, target: Outputs) -> Distance:
        """How far outputs are from ``target``: the sum of the differences beyond the
        tolerances, in units."""

        def distance(outputs: Outputs) -> float:
            total = 0.0
            for o, (want, ref) in enumerate(zip(target, outputs, strict=True)):
                want = np.asarray(want, dtype=np.float64)
                ref = np.asarray(ref, dtype=np.float64).reshape(want.shape)
                beyond = np.abs(want - ref) - self.atols[o] - self.rtol * np.abs(ref)
                total += float(np.sum(np.maximum(beyond, 0.0))) / self.units[o]
            return total

        return distance


def _tolerances(
    expected: list[Outputs], atol: float | None, rtol: float, steps: list[float | None] | None
) -> Tolerances:
    """``atol`` for every output when given, else ``STEP_NOISE`` of its step or
    ``FLOAT_RTOL`` of its largest expected value (over the samples)."""
    count = len(expected[0])
    steps = steps if steps is not None and len(steps) == count else [None] * count
    largest = _largest_per_output(expected, count)
    units = [step or largest[o] or 1.0 for o, step in enumerate(steps)]
    atols = [_atol(atol, step, largest[o]) for o, step in enumerate(steps)]
    return Tolerances(steps, units, atols, rtol)


def _largest_per_output(expected: list[Outputs], count: int) -> list[float]:
    """Per output of the ``count``: its largest magnitude over the ``expected`` samples."""
    return [max(_largest(s[o]) for s in expected) for o in range(count)]


def _largest(values: np.ndarray) -> float:
    """The largest magnitude in ``values`` (0 when empty)."""
    return float(np.max(np.abs(values))) if values.size else 0.0


def _atol(atol: float | None, step: float | None, largest: float) -> float:
    """``atol`` when given, else ``STEP_NOISE`` of the step or ``FLOAT_RTOL`` of the largest
    expected value."""
    if atol is not None:
        return atol
    return STEP_NOISE * step if step else FLOAT_RTOL * largest


@dataclass(frozen=True)
class SampleDifference:
    """One sample's outputs against the expected ones: the outputs in the expected shapes,
    the largest difference of each, and how many elements differ beyond the tolerances."""

    shaped: list[np.ndarray]
    tops: list[float]
    differing: int

    def size(self, tolerances: Tolerances) -> float:
        """The largest difference, in units."""
        return max([0.0, *(top / tolerances.units[o] for o, top in enumerate(self.tops))])


def _size_mismatch(got_outputs: Outputs, want_outputs: Outputs) -> int | None:
    """The size of the first expected output the model's output does not match in size."""
    for got, want in zip(got_outputs, want_outputs, strict=True):
        if got.size != want.size:
            return int(want.size)
    return None


def _difference(
    got_outputs: Outputs, want_outputs: Outputs, tolerances: Tolerances
) -> SampleDifference:
    shaped, tops, differing = [], [], 0
    for o, (got, want) in enumerate(zip(got_outputs, want_outputs, strict=True)):
        got, want = got.reshape(want.shape).astype(np.float64), want.astype(np.float64)
        shaped.append(got)
        diff = np.nan_to_num(np.abs(got - want), nan=np.inf)  # a NaN is no match
        tops.append(float(np.max(diff)) if got.size else 0.0)
        beyond = diff > tolerances.atols[o] + tolerances.rtol * np.abs(want)
        differing += int(np.count_nonzero(beyond))
    return SampleDifference(shaped, tops, differing)


@dataclass
class Tally:
    """What a comparison found so far (see ``Check``)."""

    worst: float = 0.0
    worst_steps: float | None = None
    errors: int = 0
    ties: int = 0
    tie_samples: int = 0
    worst_tie: str = ""
    worst_tie_size: float = -1.0

    def measure(self, difference: SampleDifference, steps: list[float | None]) -> None:
        """The largest differences, absolute and in steps."""
        for o, top in enumerate(difference.tops):
            self.worst, step = max(self.worst, top), steps[o]
            if step:
                self.worst_steps = max(self.worst_steps or 0.0, top / step)

    def tied(
        self, sample: int, found: list[Tie], size: float, describe: Callable[[Tie], str] | None
    ) -> None:
        """A sample whose difference the ties ``found`` explain (``size`` in units)."""
        self.ties, self.tie_samples = self.ties + len(found), self.tie_samples + 1
        if size > self.worst_tie_size and describe is not None:
            self.worst_tie_size = size
            more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
            self.worst_tie = f"sample {sample}: {describe(found[0])}{more}"

    def check(self, label: str, samples: int) -> Check:
        return Check(
            label,
            samples,
            self.worst,
            self.errors == 0,
            False,
            self.worst_steps,
            self.errors,
            self.ties,
            self.tie_samples,
            self.worst_tie,
        )


def compare(
    label: str,
    actual: list[Outputs],
    expected: list[Outputs],
    atol: float | None = None,
    rtol: float = VERIFY_RTOL,
    steps: list[float | None] | None = None,
    explainer: Explainer | None = None,
    describe: Callable[[Tie], str] | None = None,
) -> Check:
    """Compare outputs sample by sample: an element differs beyond ``atol + rtol * |want|``,
    ``atol`` (when not given) being ``STEP_NOISE`` of the output's quantizer step (``steps``)
    or ``FLOAT_RTOL`` of its largest expected value; a sample that differs is a tie when
    ``explainer`` finds reference ties reproducing its outputs, else each differing element
    is an error (once one sample has an error, later samples are not explained: each of
    their differing elements counts as an error)."""
    if not expected:
        return Check(label, 0, 0.0, True)
    tolerances = _tolerances(expected, atol, rtol, steps)
    tally = Tally()
    for sample, (got_outputs, want_outputs) in enumerate(zip(actual, expected, strict=True)):
        mismatch = _size_mismatch(got_outputs, want_outputs)
        if mismatch is not None:
            return Check(label, len(actual), float("inf"), False, errors=max(1, mismatch))
        difference = _difference(got_outputs, want_outputs, tolerances)
        tally.measure(difference, tolerances.steps)
        if not difference.differing:
            continue
        found = None
        if explainer is not None and not tally.errors:  # after one error the check has failed
            found = _explained(explainer, sample, got_outputs, want_outputs, difference, tolerances)
        if found is None:
            tally.errors += difference.differing
        else:
            tally.tied(sample, found, difference.size(tolerances), describe)
    return tally.check(label, len(actual))


def _explained(
    explainer: Explainer,
    sample: int,
    got: Outputs,
    want: Outputs,
    difference: SampleDifference,
    tolerances: Tolerances,
) -> list[Tie] | None:
    """The reference ties ``explainer`` finds reproducing sample ``sample``'s outputs ``got``
    (None: none do)."""
    to_model = tolerances.distance_to(difference.shaped)
    return explainer(sample, got, want, to_model, tolerances.distance_to(want))


class Verifier:
    """Compares any stage of the build with the cleaned QONNX reference. ``generated``:
    check the seeded generated inputs (False with ``verify: none``, where only the user's
    vectors are checked)."""

    def __init__(
        self,
        reference: ModelWrapper,
        samples: int,
        seed: int = 0,
        user: Vectors | None = None,
        atol: float | None = None,
        rtol: float = VERIFY_RTOL,
        generated: bool = True,
    ) -> None:
        fix_python_execution()
        self.reference = reference
        self.atol, self.rtol = atol, rtol
        self.steps = output_steps(reference)
        self._tracer = _tracer(reference)
        self.samples = generate_inputs(reference, samples, seed) if generated else []
        self.generated = generated
        self.expected = run(self.reference, self.samples) if self.samples else []
        self.user = user  # (samples, expected outputs) from brainsmith.intake.model, or None
        # per sample set ("generated", "user"): the reference's feeds and ties, traced node by
        # node only once a sample of the set differs (a build without differences never does)
        self._traces: dict[str, tuple[list[Context], list[list[Tie]]]] = {}
        self._last: tuple[str, list[Check]] | None = None  # the last model run, by its key
        # per (sample set, sample): the ties that explain the expected outputs (None: none do)
        self._expected_ties: dict[tuple[str, int], list[Tie] | None] = {}

    def _trace(self, name: str, samples: list[Sample]) -> tuple[list[Context], list[list[Tie]]]:
        """The reference's feeds and ties on ``samples`` (traced once per set)."""
        if name not in self._traces and self._tracer is not None:
            feeds = _feeds(self.reference, samples)
            contexts = [{**self._tracer.empty, **feed} for feed in feeds]
            self._traces[name] = feeds, self._tracer.execute(contexts)
        return self._traces.get(name, ([], []))

    def _explainer(
        self,
        name: str,
        samples: list[Sample],
        model: ModelWrapper,
        prepared: NodeMajor | None = None,
    ) -> Explainer | None:
        """Explains a differing sample of ``samples`` by the reference's ties on it: the
        outputs of ``model`` (run again on that sample for all its tensors, to follow;
        ``prepared``: readied to run node by node) and, where they are not the reference's
        own (the user's), the expected outputs too."""
        tracer = self._tracer
        if tracer is None or not samples:
            return None

        def explainer(
            sample: int,
            outputs: Outputs,
            expected: Outputs,
            to_model: Distance,
            to_expected: Distance,
        ) -> list[Tie] | None:
            feeds, ties = self._trace(name, samples)
            feed, tied = feeds[sample], ties[sample]
            run = run_all(model, samples[sample], prepared)
            found = explain(tracer, feed, tied, to_model, outputs, run)
            if found is None:
                return None
            if name != "generated":  # the expected outputs are torch's, not the reference's
                key = (name, sample)
                if key not in self._expected_ties:
                    self._expected_ties[key] = explain(
                        tracer, feed, tied, to_expected, list(expected)
                    )
                if self._expected_ties[key] is None:
                    return None
                found = [*found, *(t for t in self._expected_ties[key] or () if t not in found)]
            return found or None

        return explainer

    def check(
        self, model: ModelWrapper, parent: ModelWrapper | None = None, workdir: str = ""
    ) -> list[Check]:
        """Compare ``model`` (in ``parent`` after the partition) with the reference; a model
        that computes what the last one checked computed is not run again. The generated
        inputs' check first (if any), then the user's."""
        mapped = runnable_copy(model)
        key = computation_key(mapped, parent, mapped=True)
        if self._last is not None and self._last[0] == key:
            return [replace(c, unchanged=True) for c in self._last[1]]
        checks = self._run_checks(in_parent(mapped, parent, workdir))
        self._last = (key, checks)
        return checks

    def _run_checks(self, runnable: ModelWrapper) -> list[Check]:
        sets = [("generated", self.samples, self.expected)] if self.generated else []
        if self.user is not None:
            sets.append(("user", *self.user))
        checks = []
        prepared = NodeMajor(runnable) if _flat(runnable) else None  # for every run of it
        for name, samples, expected in sets:
            checks.append(
                compare(
                    name,
                    run(runnable, samples, prepared),
                    expected,
                    self.atol,
                    self.rtol,
                    self.steps,
                    explainer=self._explainer(name, samples, runnable, prepared),
                    describe=self.describe,
                )
            )
        return checks

    def rtl_arithmetic(
        self, model: ModelWrapper, parent: ModelWrapper | None = None, workdir: str = ""
    ) -> Check | None:
        """The generated inputs' comparison with FINN's RTL float layers computing as their
        RTL does: how far their approximations take the outputs (no ties explained); None
        without such layers or generated inputs."""
        if not self.samples or not any(n.op_type in RTL_FLOAT_UNITS for n in model.graph.node):
            return None
        runnable = in_parent(runnable_copy(model), parent, workdir)
        with rtl_arithmetic():
            outputs = run(runnable, self.samples)
        return compare("rtl arithmetic", outputs, self.expected, self.atol, self.rtol, self.steps)

    def describe(self, tie: Tie) -> str:
        """A tie in a line: the quantizer, the element, its pre-rounding value, the rules."""
        node = self.reference.graph.node[tie.node]
        return (
            f"{node.name or node.op_type} ({node.op_type}) element {tie.element}: "
            f"x/scale = {tie.pre:.8g}, {tie.rule}"
        )


def _tracer(reference: ModelWrapper) -> Reference | None:
    """The reference's node-by-node runner with its quantizers traced, or None when it
    cannot run that way (not a flat graph)."""
    if not _flat(reference) or not reference.check_all_tensor_shapes_specified():
        return None
    return Reference(NodeMajor(reference))


def _feeds(model: ModelWrapper, samples: list[Sample]) -> list[Context]:
    names = [i.name for i in graph_inputs(model)]
    shapes = [_shape(model, name) for name in names]
    return [
        {
            name: a.reshape(shape) if a.size == int(np.prod(shape)) else a
            for name, a, shape in zip(names, sample, shapes, strict=True)
        }
        for sample in samples
    ]


def computation_key(
    model: ModelWrapper, parent: ModelWrapper | None = None, mapped: bool = False
) -> str:
    """A digest of everything Python execution of ``model`` (wrapped in ``parent``) reads:
    nodes in order with their op types, domains and attributes (``NOT_COMPUTED`` aside),
    initializers, tensor shapes and datatypes, with tensors numbered by first use, so node
    and tensor names do not matter. Equal keys compute equal outputs. ``mapped``: ``model``
    is already a ``runnable_copy``."""
    digest = hashlib.sha256()
    _digest_graph((model if mapped else runnable_copy(model)).model.graph, digest)
    if parent is not None and not model.get_nodes_by_op_type("StreamingDataflowPartition"):
        _digest_graph(parent.model.graph, digest, skip={"model"})
    return digest.hexdigest()


class TensorNumbers:
    """Tensors numbered by first use; an initializer's content goes into the digest where
    it is first used."""

    def __init__(self, graph: onnx.GraphProto, digest: hashlib._Hash) -> None:
        self.initializers = {t.name: t for t in graph.initializer}
        self.digest = digest
        self.numbers: dict[str, int] = {}

    def __call__(self, name: str) -> str:
        if not name:
            return "-"
        if name not in self.numbers:
            self.numbers[name] = len(self.numbers)
            if name in self.initializers:  # weights by content, where they are first used
                array = numpy_helper.to_array(self.initializers[name])
                self.digest.update(f"init {array.dtype} {array.shape}".encode())
                self.digest.update(array.tobytes())
        return str(self.numbers[name])


def _digest_graph(
    graph: onnx.GraphProto, digest: hashlib._Hash, skip: frozenset[str] | set[str] = frozenset()
) -> None:
    number = TensorNumbers(graph, digest)
    for tensor in graph.input:
        digest.update(f"in {number(tensor.name)} {tensor.type}".encode())
    for node in graph.node:
        _digest_node(node, number, digest, skip)
    _digest_annotations(graph, number.numbers, digest)
    digest.update(b"|")


def _digest_node(
    node: onnx.NodeProto,
    number: TensorNumbers,
    digest: hashlib._Hash,
    skip: frozenset[str] | set[str],
) -> None:
    """A node's domain, op type, numbered tensors and computed attributes."""
    inputs = " ".join(number(name) for name in node.input)
    outputs = " ".join(number(name) for name in node.output)
    digest.update(f"node {node.domain} {node.op_type} {inputs} > {outputs}".encode())
    for attribute in sorted(node.attribute, key=lambda a: a.name):
        if attribute.name not in NOT_COMPUTED and attribute.name not in skip:
            digest.update(attribute.SerializeToString(deterministic=True))


def _digest_annotations(
    graph: onnx.GraphProto, numbers: dict[str, int], digest: hashlib._Hash
) -> None:
    """The shapes and datatypes of the numbered tensors."""
    shapes = {numbers[i.name]: str(i.type) for i in (*graph.value_info, *graph.output)
              if i.name in numbers}  # fmt: skip
    types = {
        numbers[a.tensor_name]: [p.value for p in a.quant_parameter_tensor_names]
        for a in graph.quantization_annotation
        if a.tensor_name in numbers
    }
    digest.update(repr(sorted(shapes.items())).encode())
    digest.update(repr(sorted(types.items())).encode())
