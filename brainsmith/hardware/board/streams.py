"""What the driver needs of an all-RTL build: its accelerator as the host link frames it
(the build's description of it, ``design.json`` read back through the gate: TDATA widths,
words a frame, FIFO probes, clock, interval), the design hash a board built from it reports
(``stitched_design(...).digest()``, as ``brainsmith bitstream`` puts it into the board top),
the packing of a frame into stream words, bit for bit as the simulation packs it
(``brainsmith.hardware.rtlsim.beats`` on the folded shape: element 0 in the lowest bits, each
word padded to the TDATA width), and the nodes that stay on the host before and after the
accelerator (``final_parent.onnx``), run as ``BuildResult.run`` runs them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from brainsmith.errors import BrainsmithError
from brainsmith.files import DamagedFile
from brainsmith.frameworks.finn.env import prepare_finn
from brainsmith.frameworks.finn.execution import fix_python_execution, graph_inputs
from brainsmith.frameworks.finn.layers import LayerPluginError, require_layers
from brainsmith.hardware.board.description import disagreement, why_undescribed
from brainsmith.hardware.board.link import frame_bytes
from brainsmith.hardware.board.top import AcceleratorPorts, end_layers
from brainsmith.hardware.design import FILE, Design
from brainsmith.hardware.place_route.stitched_sources import stitched_design
from brainsmith.hardware.rtlsim.beats import pack_beats, unpack_beats
from brainsmith.hardware.synthesis import NotSynthesisable
from brainsmith.intake.gate import BuildFolder, UntrustedFolder, open_build_folder

TYPE_CHECKING = False
if TYPE_CHECKING:
    import onnx
    from finn.custom_op.fpgadataflow.hwcustomop import HWCustomOp
    from qonnx.core.modelwrapper import ModelWrapper

    from brainsmith.report_schema import BuildReport

PARTITION = "StreamingDataflowPartition"


class DriverError(BrainsmithError):
    """The driver cannot run this build on this board: ``reason``, ``hint`` what to do,
    ``exit_code`` for the command line (2: cannot start, 1: ran and failed)."""

    def __init__(self, reason: str, hint: str = "", exit_code: int = 2) -> None:
        super().__init__(reason)
        self.reason, self.hint, self.exit_code = reason, hint, exit_code

    def __str__(self) -> str:
        return f"{self.reason}\n  try: {self.hint}" if self.hint else self.reason


@dataclass
class Streams:
    """The accelerator of one build as the host link carries it: its design (``design.json``,
    read back through the gate) and the FINN layers at its two ends."""

    folder: str
    design: Design
    design_hash: str
    first: HWCustomOp  # the FINN op that reads the accelerator's input stream
    last: HWCustomOp  # the one that writes its output stream
    model: ModelWrapper  # final.onnx
    parent: ModelWrapper | None  # final_parent.onnx, or None

    @property
    def in_bits(self) -> int:
        return self.design.input.bits

    @property
    def out_bits(self) -> int:
        return self.design.output.bits

    @property
    def in_words(self) -> int:
        return self.design.input.words

    @property
    def out_words(self) -> int:
        return self.design.output.words

    @property
    def clock_mhz(self) -> float:
        """The build's clock (a bitstream's PLL may make another)."""
        return self.design.clock.mhz

    @property
    def fpga_part(self) -> str:
        return self.design.part

    @property
    def interval_cycles(self) -> float:
        """Cycles from one frame to the next when frames stream back to back (the build's
        Verilator count, else FINN's estimate of its slowest layer; 0: neither)."""
        return self.design.interval[0] if self.design.interval else 0.0

    @property
    def interval_source(self) -> str:
        return self.design.interval[1] if self.design.interval else ""

    @property
    def probes(self) -> tuple[str, ...]:
        """Its FIFOs' fill outputs (maxcount_<layer>), left open."""
        return self.design.probes

    @property
    def ports(self) -> AcceleratorPorts:
        """The stitched accelerator's ports."""
        return AcceleratorPorts(self.in_bits, self.out_bits, self.probes)

    def pack(self, array: np.ndarray) -> list[int]:
        """One frame (the accelerator input's values) as ``in_words`` stream words."""
        shape = self.first.get_folded_input_shape(0)
        folded = np.asarray(array, dtype=np.float32).reshape(shape)
        try:
            words = pack_beats(folded, self.first.get_input_datatype(0), self.in_bits)
        except ValueError as exc:
            raise DriverError(f"an input frame cannot be packed: {exc}", "") from None
        return [int(word) for word in words]

    def unpack(self, words: list[int]) -> np.ndarray:
        """The accelerator output's values of one frame's ``out_words`` words."""
        shape = tuple(self.last.get_folded_output_shape(0))
        array = unpack_beats(
            words, self.last.get_output_datatype(0), shape, self.last.get_outstream_width(0)
        )
        return np.asarray(array, dtype=np.float32).reshape(self.last.get_normal_output_shape(0))

    def pack_output(self, array: np.ndarray) -> list[int]:
        """The ``out_words`` words the accelerator streams out for its output values
        ``array`` (one frame), as ``unpack`` reads them."""
        shape = tuple(self.last.get_folded_output_shape(0))
        folded = np.asarray(array, dtype=np.float32).reshape(shape)
        words = pack_beats(folded, self.last.get_output_datatype(0), self.out_bits)
        return [int(word) for word in words]

    @property
    def bytes_per_frame(self) -> int:
        """Bytes on the wire for one INFER and its reply, frame headers and CRCs included."""
        return sum(frame_bytes(self.in_bits, self.out_bits, self.in_words, self.out_words))

    def latency_cycles(self) -> int:
        """FINN's estimate of one frame's cycles through every layer (an upper bound)."""
        from qonnx.custom_op.registry import getCustomOp

        return sum(int(getCustomOp(node).get_exp_cycles()) for node in self.model.graph.node)


def streams(folder: str) -> Streams:
    """The ``Streams`` of the build in ``folder`` (through the gate); DriverError when it
    has no stitched accelerator of one stream in and one out."""
    opened = _opened(folder)
    assert opened.model is not None  # _opened refuses a build without final.onnx
    if opened.design is None:
        raise _no_whole_design(folder, opened.report)
    return streams_of(folder, opened.design, opened.model, opened.parent)


def streams_of(
    folder: str, design: Design, model: ModelWrapper, parent: ModelWrapper | None
) -> Streams:
    """The ``Streams`` of the build in ``folder`` that ``design`` describes, with its final
    model and parent graph (a build still running gives its own); DriverError as
    ``streams``."""
    prepare_finn()
    try:  # the plugins that provide its layers (brainsmith's Pool_rtl, a package's)
        require_layers(model, os.path.join(folder, "final.onnx"))
    except LayerPluginError as exc:
        raise DriverError(exc.reason, exc.hint) from None
    if differs := disagreement(design, model):
        raise DriverError(f"the build in {folder} is not what it describes: {differs}", REBUILD)
    first, last = end_layers(model)  # both there: the design agrees with the model
    try:
        digest = stitched_design(folder, design).digest()
    except NotSynthesisable as exc:
        raise DriverError(str(exc), REBUILD) from None
    return Streams(
        folder=os.path.abspath(folder),
        design=design,
        design_hash=digest,
        first=first,
        last=last,
        model=model,
        parent=parent,
    )


REBUILD = "build the model again with --prefer rtl (every layer RTL)"


def _no_whole_design(folder: str, report: BuildReport) -> DriverError:
    """Why the build in ``folder`` has no description of a whole accelerator in RTL."""
    return DriverError(
        f"the build in {folder} has no whole accelerator in RTL ({FILE}): "
        + why_undescribed(folder, report),
        REBUILD + ", and leave build.size_fifos on",
    )


def _opened(folder: str) -> BuildFolder:
    """The build in ``folder``, through the gate (``brainsmith.intake.gate``); DriverError
    naming what is wrong."""
    try:
        opened = open_build_folder(folder)
    except FileNotFoundError:
        raise DriverError(
            f"{folder} is not a brainsmith build folder (no report.json)",
            "give the output folder of brainsmith build (its -o OUTDIR)",
        ) from None
    except (DamagedFile, OSError) as exc:
        raise DriverError(f"the build's report cannot be read: {exc}", REBUILD) from None
    except UntrustedFolder as exc:
        raise DriverError(exc.reason, exc.hint) from None
    if opened.model is None:
        raise DriverError(f"the build in {folder} has no final.onnx", REBUILD)
    return opened


class Host:
    """The nodes of ``final_parent.onnx`` before the accelerator (``before``) and after it
    (``after``), each run in Python for all frames at once as ``BuildResult.run`` runs the
    whole graph; without a parent graph both pass the frames through."""

    def __init__(self, streams: Streams) -> None:
        fix_python_execution()
        parent, model = streams.parent, streams.model
        self.head: ModelWrapper | None = None
        self.tail: ModelWrapper | None = None
        if parent is None or not parent.get_nodes_by_op_type(PARTITION):
            self.runnable: ModelWrapper = model
            return
        self.runnable = parent
        nodes = list(parent.graph.node)
        split = next(i for i, n in enumerate(nodes) if n.op_type == PARTITION)
        partition = nodes[split]
        self.head = _subgraph(parent, nodes[:split], _inputs(parent), [partition.input[0]])
        self.tail = _subgraph(
            parent, nodes[split + 1 :], [partition.output[0]], [parent.graph.output[0].name]
        )

    def before(self, samples: list[np.ndarray]) -> list[np.ndarray]:
        """The accelerator's input of each of ``samples`` (the design's inputs)."""
        return run_graph(self.head, samples)

    def after(self, outputs: list[np.ndarray]) -> list[np.ndarray]:
        """The design's output of each of the accelerator's ``outputs``."""
        return run_graph(self.tail, outputs)


def _shape(model: ModelWrapper, name: str) -> tuple[int, ...]:
    return tuple(int(d) if d else 1 for d in model.get_tensor_shape(name))


def _inputs(model: ModelWrapper) -> list[str]:
    return [value.name for value in graph_inputs(model)]


def _subgraph(
    parent: ModelWrapper, nodes: list[onnx.NodeProto], inputs: list[str], outputs: list[str]
) -> ModelWrapper | None:
    """``parent`` with only ``nodes``, from the tensors ``inputs`` to ``outputs``; None
    without nodes (the accelerator's stream is the design's own)."""
    import copy

    from onnx import TensorProto, helper
    from qonnx.core.modelwrapper import ModelWrapper

    if not nodes:
        return None
    part = ModelWrapper(copy.deepcopy(parent.model))
    graph = part.graph
    del graph.node[:]
    graph.node.extend(copy.deepcopy(nodes))
    values = {name: helper.make_tensor_value_info(name, TensorProto.FLOAT, _shape(parent, name))
              for name in (*inputs, *outputs)}  # fmt: skip
    initializers = {t.name for t in graph.initializer}
    kept = [value for value in graph.input if value.name in initializers]
    del graph.input[:]
    graph.input.extend([values[name] for name in inputs] + kept)
    del graph.output[:]
    graph.output.extend(values[name] for name in outputs)
    others = [value for value in graph.value_info if value.name not in values]
    del graph.value_info[:]
    graph.value_info.extend(others)
    return part


def run_graph(part: ModelWrapper | None, frames: list[np.ndarray]) -> list[np.ndarray]:
    """``part``'s first output for each of ``frames`` (its first input), run in Python;
    without a graph (None) the frames themselves."""
    if part is None:
        return [np.asarray(frame, dtype=np.float32) for frame in frames]
    from brainsmith.verification.verifier import run

    return [outputs[0] for outputs in run(part, [(np.asarray(f, np.float32),) for f in frames])]


__all__ = ["DriverError", "Host", "Streams", "run_graph", "streams"]
