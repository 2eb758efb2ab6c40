"""``board_top.sv``: a stitched accelerator on a board, reached through the host link.

The board's oscillator drives its family's PLL (``clocking``), which makes the design
clock; the reset is held while the PLL is unlocked (or the board's reset button is pressed)
and released in step with the design clock; ``brainsmith_host_link`` turns the UART into the accelerator's
input stream and its output stream back into the UART, at CLKS_PER_BIT design clocks per
bit; the accelerator's ``maxcount_*`` FIFO probes are left open. The LED, when the board has
one, is lit while the design runs (out of reset).

The accelerator's ports come from the build's final model (``accelerator_ports``: the
widths of the streams its first layer reads and its last layer writes, the names of its
FIFOs), the text from the typed objects of ``brainsmith.hardware.hdl``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from brainsmith.clock import mhz_text
from brainsmith.errors import HintedError
from brainsmith.hardware.board.boards import Board
from brainsmith.hardware.board.clocking import ClockGenerator
from brainsmith.hardware.board.constraints import CLOCK, LED, RESET, UART_RX, UART_TX
from brainsmith.hardware.hdl import (
    Assign,
    Blank,
    Instance,
    Item,
    Logic,
    Module,
    Port,
    ResetSynchroniser,
    any_of,
    hex_constant,
    inverted,
)

STANDARD_BAUDS = (3_000_000, 2_000_000, 1_000_000, 921_600, 460_800, 230_400, 115_200, 57_600)
MIN_CLOCKS_PER_BIT = 4
MAX_BAUD_ERROR = 0.02  # the UART's rate off by at most 2 % after rounding the clocks per bit
# the top's ports every top has: the clock pin and the host link's UART
LINK_PORTS = (Port(CLOCK, "input"), Port(UART_RX, "input"), Port(UART_TX, "output"))
PROBE_BITS = 32  # a FIFO's largest fill, maxcount_<layer>
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")  # a probe name the top may write


class TopError(HintedError):
    """A board top that cannot be made for this accelerator, board or clock."""


@dataclass(frozen=True)
class AcceleratorPorts:
    """The stitched accelerator's ports beyond its clock and reset: the data bits of its
    one input stream (``in0_V``) and one output stream (``out0_V``), and its FIFOs' fill
    probes (``maxcount_<layer>``, left open)."""

    in_bits: int
    out_bits: int
    probes: tuple[str, ...] = ()

    def ports(self) -> tuple[Port, ...]:
        """Every port of ``module accelerator``, its direction and width."""
        return (
            Port("ap_clk", "input"), Port("ap_rst_n", "input"),
            Port("in0_V_TDATA", "input", self.in_bits), Port("in0_V_TVALID", "input"),
            Port("in0_V_TREADY", "output"),
            Port("out0_V_TDATA", "output", self.out_bits), Port("out0_V_TVALID", "output"),
            Port("out0_V_TREADY", "input"),
            *(Port(name, "output", PROBE_BITS) for name in self.probes),
        )  # fmt: skip


def accelerator_ports(model: Any) -> AcceleratorPorts:
    """The ports of the accelerator stitched from ``model`` (a qonnx ``ModelWrapper`` of
    FINN layers, the build's final model): the width of the stream its first layer reads
    from the graph's input, of the one its last layer writes to the graph's output, and a
    probe for each FIFO in graph order; TopError naming the streams when it has more than
    one input or output, or naming a graph input or output no layer reads or writes."""
    from qonnx.custom_op.registry import getCustomOp

    from brainsmith.hardware.rtlsim.stitched.design import probed

    graph = model.graph
    inputs, outputs = [t.name for t in graph.input], [t.name for t in graph.output]
    if len(inputs) != 1 or len(outputs) != 1:
        raise TopError(
            f"the host link drives one input stream and reads one output stream; the "
            f"accelerator has {_counted(inputs, 'input')} and {_counted(outputs, 'output')}",
            "build a model with one input and one output",
        )
    reader = next(((node, list(node.input).index(inputs[0])) for node in graph.node
                   if inputs[0] in node.input), None)  # fmt: skip
    writer = next(((node, list(node.output).index(outputs[0])) for node in reversed(graph.node)
                   if outputs[0] in node.output), None)  # fmt: skip
    if reader is None or writer is None:
        raise TopError(
            f"no layer reads the accelerator's input {inputs[0]} or writes its output {outputs[0]}",
            "build the model again",
        )
    in_bits = int(getCustomOp(reader[0]).get_instream_width_padded(reader[1]))
    out_bits = int(getCustomOp(writer[0]).get_outstream_width_padded(writer[1]))
    probes = tuple(f"maxcount_{n.name}" for n in graph.node if probed(n.op_type))
    odd = [name for name in probes if not IDENTIFIER.fullmatch(name)]
    if odd:
        raise TopError(f"the FIFO probe {odd[0]!r} is not a plain identifier",
                       "build the model again")  # fmt: skip
    return AcceleratorPorts(in_bits, out_bits, probes)


def _counted(names: list[str], kind: str) -> str:
    return f"{len(names)} {kind}{'' if len(names) == 1 else 's'} ({', '.join(names) or 'none'})"


def end_layers(model: Any) -> tuple[Any, Any]:
    """The FINN ops of a stitched dataflow ``model`` (a qonnx ``ModelWrapper``) that read
    the graph's input and write its output; TopError when no layer does."""
    from qonnx.custom_op.registry import getCustomOp

    graph = model.graph
    source, sink = graph.input[0].name, graph.output[0].name
    reader = next((n for n in graph.node if source in n.input), None)
    writer = next((n for n in graph.node if sink in n.output), None)
    if reader is None or writer is None:
        raise TopError(
            "final.onnx has no layer that reads its input or writes its output",
            "build the model again with --prefer rtl (every layer RTL)",
        )
    return getCustomOp(reader), getCustomOp(writer)


def frame_words(model: Any) -> tuple[int, int]:
    """(input, output) stream words per frame of a stitched dataflow ``model``: the folded
    input shape of the layer that reads its input and the folded output shape of the one
    that writes its output, without their last (per-word) dimension; TopError as
    ``end_layers``."""
    first, last = end_layers(model)
    return (
        int(math.prod(first.get_folded_input_shape(0)[:-1])),
        int(math.prod(last.get_folded_output_shape(0)[:-1])),
    )


def baud_rate(clock_mhz: float, fastest: int) -> int:
    """The fastest standard UART rate up to ``fastest`` that the design clock makes with at
    least MIN_CLOCKS_PER_BIT clocks per bit, within MAX_BAUD_ERROR; TopError when none."""
    for baud in STANDARD_BAUDS:
        clocks = round(clock_mhz * 1e6 / baud)
        error = abs(clock_mhz * 1e6 / clocks - baud) / baud if clocks else 1.0
        if baud <= fastest and clocks >= MIN_CLOCKS_PER_BIT and error <= MAX_BAUD_ERROR:
            return baud
    raise TopError(
        f"a {mhz_text(clock_mhz)} clock makes no standard UART rate", "ask a faster clock"
    )


def clocks_per_bit(clock_mhz: float, baud: int) -> int:
    return round(clock_mhz * 1e6 / baud)


@dataclass(frozen=True)
class Link:
    """The host link's settings: its UART rate, the stream words of a frame in and out, and
    the design's content hash (64 hex digits) that IDENTIFY returns."""

    baud: int
    in_words: int
    out_words: int
    design_hash: str

    def clocks_per_bit(self, clock_mhz: float) -> int:
        """Clocks per bit at ``clock_mhz``; TopError for a bad hash, an empty frame or too
        few clocks per bit."""
        if not re.fullmatch(r"[0-9a-f]{64}", self.design_hash):
            raise TopError(f"the design hash {self.design_hash!r} is not 64 lower-case hex digits")
        if self.in_words < 1 or self.out_words < 1:
            raise TopError(f"a frame of {self.in_words} words in and {self.out_words} out is empty")
        cycles = clocks_per_bit(clock_mhz, self.baud)
        if cycles < MIN_CLOCKS_PER_BIT:
            raise TopError(f"{self.baud} baud is {cycles} clocks per bit at {mhz_text(clock_mhz)}")
        return cycles


def board_top(board: Board, pll: ClockGenerator, ports: AcceleratorPorts, link: Link) -> str:
    """``board_top.sv`` for ``board`` with the accelerator of ``ports`` at ``pll``'s clock,
    reached over ``link``."""
    cycles = link.clocks_per_bit(pll.output_mhz)
    pins = [*LINK_PORTS]
    held = [inverted("locked", True)]
    if board.reset is not None:
        pins.append(Port(RESET, "input"))
        held.append(inverted(RESET, board.reset.active_low))
    led: list[Item] = []
    if board.led is not None:
        pins.append(Port(LED, "output"))
        led.append(Assign(LED, inverted("rst_n", board.led.active_low), "lit: running"))
    comment = (
        f"Generated by brainsmith.hardware.board.top for {board.name} ({board.part}): the "
        "accelerator at",
        f"{pll.output_mhz:.6g} MHz ({pll.primitive} from the {board.clock_mhz:g} MHz oscillator), "
        "reached over",
        f"the host link's UART at {link.baud} baud ({cycles} clocks per bit).",
    )
    clock: list[Item] = [Logic(("clk", "locked")), pll.instance(CLOCK, "clk", "locked")]
    return _top(comment, pins, clock, any_of(held), led, ports, link, cycles)


def part_top(part: str, clock_mhz: float, ports: AcceleratorPorts, link: Link) -> str:
    """``board_top.sv`` for a bare ``part``: the accelerator clocked straight from the clock
    pin at ``clock_mhz`` (no PLL, no button, no LED), its reset released two cycles after
    configuration; the same link as ``board_top``'s."""
    cycles = link.clocks_per_bit(clock_mhz)
    comment = (
        f"Generated by brainsmith.hardware.board.top for a bare {part}: the accelerator at "
        f"{clock_mhz:.6g} MHz",
        f"from the clock pin, reached over the host link's UART at {link.baud} baud ({cycles} "
        "clocks per",
        "bit).",
    )
    clock: list[Item] = [Logic(("clk",)), Assign("clk", CLOCK)]
    return _top(comment, [*LINK_PORTS], clock, any_of([]), [], ports, link, cycles)


def _top(
    comment: tuple[str, ...],
    pins: list[Port],
    clock: list[Item],
    held: str,
    led: list[Item],
    ports: AcceleratorPorts,
    link: Link,
    cycles: int,
) -> str:
    """The top: ``clock`` makes ``clk``, ``held`` holds the reset, then the link and the
    accelerator."""
    body: list[Item] = [
        *clock, Blank(), ResetSynchroniser("clk", held), *led, Blank(),
        *host_link(ports, link, cycles, ("clk", "rst_n", UART_RX, UART_TX)), Blank(),
        accelerator(ports, "clk", "rst_n"),
    ]  # fmt: skip
    return Module("board_top", tuple(pins), tuple(body), comment).render()


def host_link(
    ports: AcceleratorPorts, link: Link, cycles: int, signals: tuple[str, str, str, str]
) -> list[Item]:
    """The streams between the link and the accelerator, and ``brainsmith_host_link`` at
    ``cycles`` clocks per bit (``link.baud`` is not used) on ``signals``: its clock, its
    reset (active low) and the UART's receive and transmit."""
    clock, reset, rx, tx = signals
    parameters = (
        (("CLKS_PER_BIT", str(cycles)), ("IN_BITS", str(ports.in_bits)),
         ("OUT_BITS", str(ports.out_bits))),
        (("IN_WORDS", str(link.in_words)), ("OUT_WORDS", str(link.out_words)),
         ("DESIGN_HASH", hex_constant(256, link.design_hash))),
    )  # fmt: skip
    connections = (
        (("clk", clock), ("rst_n", reset), ("uart_rx", rx), ("uart_tx", tx)),
        (("m_tdata", "in_tdata"), ("m_tvalid", "in_tvalid"), ("m_tready", "in_tready")),
        (("s_tdata", "out_tdata"), ("s_tvalid", "out_tvalid"), ("s_tready", "out_tready")),
    )
    return [
        Logic(("in_tdata",), ports.in_bits), Logic(("in_tvalid", "in_tready")),
        Logic(("out_tdata",), ports.out_bits), Logic(("out_tvalid", "out_tready")), Blank(),
        Instance("brainsmith_host_link", "link", connections, parameters),
    ]  # fmt: skip


def accelerator(
    ports: AcceleratorPorts, clock: str, reset: str, name: str = "accelerator", wires: str = ""
) -> Instance:
    """``module accelerator`` (as ``name``) on ``clock`` and ``reset`` (active low), its
    streams on the link's signals (``in_*``, ``out_*``), or with ``wires="ports"`` on signals
    named as its ports; each of its probes open. TopError when ``ports`` names a port
    twice."""
    names = [port.name for port in ports.ports()]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise TopError(f"the accelerator names {', '.join(repeated)} twice", "build it again")

    def wire(stream: str, link: str, signal: str) -> str:
        return f"{stream}_V_{signal}" if wires == "ports" else f"{link}_{signal.lower()}"

    connections = (
        (("ap_clk", clock), ("ap_rst_n", reset)),
        *(
            tuple((f"{stream}_V_{signal}", wire(stream, link, signal))
                  for signal in ("TDATA", "TVALID", "TREADY"))
            for stream, link in (("in0", "in"), ("out0", "out"))
        ),
        *(((probe, ""),) for probe in ports.probes),
    )  # fmt: skip
    return Instance("accelerator", name, connections)


def wrapper(name: str, ports: AcceleratorPorts, comment: tuple[str, ...]) -> str:
    """A module ``name`` with the accelerator's clock, reset and streams as its ports and
    the accelerator inside it, its probes left open."""
    outer = tuple(port for port in ports.ports() if port.name not in ports.probes)
    body = (accelerator(ports, "ap_clk", "ap_rst_n", "core", wires="ports"),)
    return Module(name, outer, body, comment).render()


__all__ = [
    "AcceleratorPorts",
    "Link",
    "TopError",
    "accelerator",
    "accelerator_ports",
    "baud_rate",
    "board_top",
    "clocks_per_bit",
    "end_layers",
    "frame_words",
    "host_link",
    "part_top",
    "wrapper",
]
