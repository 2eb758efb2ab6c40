"""What the driver needs of an all-RTL build: the accelerator's streams as the host link
frames them (TDATA widths, words per frame and FIFO probes from ``final.onnx``), the
design hash a board built from it reports (``stitched_design(...).digest()``, as
``brainsmith bitstream`` puts it into the board top), the packing of a frame into stream
words, bit for bit as the simulation packs it (``brainsmith.hardware.rtlsim.beats`` on the folded
shape: element 0 in the lowest bits, each word padded to the TDATA width), and the nodes that
stay on the host before and after the accelerator (``final_parent.onnx``), run as
``BuildResult.run`` runs them.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from brainsmith.clock import Clock
from brainsmith.errors import BrainsmithError
from brainsmith.files import DamagedFile
from brainsmith.frameworks.finn.env import prepare_finn
from brainsmith.frameworks.finn.execution import fix_python_execution, graph_inputs
from brainsmith.frameworks.finn.layers import LayerPluginError, require_layers
from brainsmith.hardware.board.link import frame_bytes
from brainsmith.hardware.board.top import AcceleratorPorts, TopError, accelerator_ports
from brainsmith.hardware.place_route.stitched_sources import stitched_design
from brainsmith.hardware.rtlsim.beats import pack_beats, unpack_beats
from brainsmith.hardware.synthesis import NotSynthesisable
from brainsmith.intake.gate import UntrustedFolder, open_build_folder

TYPE_CHECKING = False
if TYPE_CHECKING:
    import onnx
    from finn.custom_op.fpgadataflow.hwcustomop import HWCustomOp
    from qonnx.core.modelwrapper import ModelWrapper

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
    """The accelerator of one build as the host link carries it."""

    folder: str
    built_in: str  # the folder it was built in (its report's output_dir): files.f names it
    in_bits: int
    out_bits: int
    in_words: int
    out_words: int
    design_hash: str
    clock_mhz: float  # the build's clock (a bitstream's PLL may make another)
    first: HWCustomOp  # the FINN op that reads the accelerator's input stream
    last: HWCustomOp  # the one that writes its output stream
    model: ModelWrapper  # final.onnx
    parent: ModelWrapper | None  # final_parent.onnx, or None
    fpga_part: str = ""  # the part it was built for (its report's fpga_part)
    # cycles from one frame to the next when frames stream back to back (the pipelined
    # interval: the build's Verilator count, else FINN's estimate of its slowest layer; 0:
    # neither) and where the figure comes from
    interval_cycles: float = 0.0
    interval_source: str = ""
    probes: tuple[str, ...] = ()  # its FIFOs' fill outputs (maxcount_<layer>), left open

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


@dataclass(frozen=True)
class Built:
    """What the streams of a build need of its report: the folder it was built in (its
    ``output_dir``, which ``files.f`` names), its clock, its part, its pipelined interval
    (cycles a frame when streaming, and the figure's source: "Verilator" or "estimate") and
    its HLS layers (why it may have no whole accelerator in RTL)."""

    built_in: str
    clock: Clock | None
    fpga_part: str = ""
    interval: tuple[float, str] | None = None
    hls_layers: tuple[str, ...] = ()

    @classmethod
    def of_report(cls, report: dict[str, Any]) -> Built:
        """The facts ``report`` (a build's report.json, through the gate) gives."""
        layers = report.get("layers") or []
        hls = (
            str(x.get("name")) for x in layers if isinstance(x, dict) and x.get("backend") == "hls"
        )
        return cls(
            built_in=str(report.get("output_dir") or ""),
            clock=Clock.read_ns(report.get("clock_ns")),
            fpga_part=str(report.get("fpga_part") or ""),
            interval=_interval(report),
            hls_layers=tuple(hls),
        )


def streams(folder: str) -> Streams:
    """The ``Streams`` of the build in ``folder`` (through the gate); DriverError when it
    has no stitched accelerator of one stream in and one out."""
    report, model, parent = _opened(folder)
    return streams_of(folder, Built.of_report(report), model, parent)


def streams_of(
    folder: str, built: Built, model: ModelWrapper, parent: ModelWrapper | None
) -> Streams:
    """The ``Streams`` of the build in ``folder`` from what its report says (``built``),
    its final model and parent graph (a build still running gives its own); DriverError as
    ``streams``."""
    from qonnx.custom_op.registry import getCustomOp

    _has_whole_design(folder, built.hls_layers)
    prepare_finn()
    try:  # the plugins that provide its layers (brainsmith's Pool_rtl, a package's)
        require_layers(model, os.path.join(folder, "final.onnx"))
    except LayerPluginError as exc:
        raise DriverError(exc.reason, exc.hint) from None
    try:
        ports = accelerator_ports(model)
        design = stitched_design(folder, built.built_in, ports)
    except (NotSynthesisable, TopError) as exc:
        raise DriverError(str(exc), REBUILD) from None
    source, sink = model.graph.input[0].name, model.graph.output[0].name
    reader = next((n for n in model.graph.node if source in n.input), None)
    writer = next((n for n in model.graph.node if sink in n.output), None)
    if reader is None or writer is None:
        raise DriverError(
            "final.onnx has no layer that reads its input or writes its output", REBUILD
        )
    first, last = getCustomOp(reader), getCustomOp(writer)
    cycles, source = built.interval or (0.0, "")
    return Streams(
        folder=os.path.abspath(folder),
        built_in=built.built_in,
        in_bits=ports.in_bits,
        out_bits=ports.out_bits,
        in_words=math.prod(first.get_folded_input_shape(0)[:-1]),
        out_words=math.prod(last.get_folded_output_shape(0)[:-1]),
        design_hash=design.digest(),
        clock_mhz=built.clock.mhz if built.clock else 0.0,
        first=first,
        last=last,
        model=model,
        parent=parent,
        fpga_part=built.fpga_part,
        interval_cycles=cycles,
        interval_source=source,
        probes=ports.probes,
    )


def _interval(report: dict[str, Any]) -> tuple[float, str] | None:
    """The build's pipelined interval (cycles a frame when streaming) and its source."""
    performance = report.get("performance")
    performance = performance if isinstance(performance, dict) else {}
    for key, source in (("cycles_per_frame", performance.get("cycles_source")),
                        ("max_cycles", "estimate")):  # fmt: skip
        cycles = performance.get(key)
        if isinstance(cycles, int | float) and math.isfinite(cycles) and cycles > 0:
            known = source if source in ("Verilator", "estimate") else "estimate"  # report text
            return float(cycles), known
    return None


REBUILD = "build the model again with --prefer rtl (every layer RTL)"


def _has_whole_design(folder: str, hls: tuple[str, ...]) -> None:
    """DriverError naming why the build has no whole accelerator in RTL (its ``hls``
    layers, or no FIFO sizing) when ``finn/stitched_rtl/files.f`` is missing."""
    if os.path.isfile(os.path.join(folder, "finn", "stitched_rtl", "files.f")):
        return
    why = (
        f"it has HLS layers ({', '.join(hls[:3])}{', ...' if len(hls) > 3 else ''})"
        if hls
        else "its FIFOs were not sized by simulation (build.size_fifos), which writes it"
    )
    raise DriverError(
        f"the build in {folder} has no whole accelerator in RTL (finn/stitched_rtl/): {why}",
        REBUILD + ", and leave build.size_fifos on",
    )


def _opened(folder: str) -> tuple[dict[str, Any], ModelWrapper, ModelWrapper | None]:
    """(report, final model, parent graph) of the build in ``folder``, through the gate
    (``brainsmith.intake.gate``); DriverError naming what is wrong."""
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
    return dict(opened.report), opened.model, opened.parent


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


__all__ = ["Built", "DriverError", "Host", "Streams", "run_graph", "streams"]
