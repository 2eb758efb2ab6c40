"""``board_top.sv``: a stitched accelerator on a board, reached through the host link.

The board's oscillator drives an EHXPLLL that makes the design clock; the reset is held
while the PLL is unlocked (or the board's reset button is pressed) and released in step
with the design clock; ``brainsmith_host_link`` turns the UART into the accelerator's
input stream and its output stream back into the UART, at CLKS_PER_BIT design clocks per
bit; the accelerator's ``maxcount_*`` FIFO probes are left open. The LED, when the board has
one, is lit while the design runs (out of reset).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from brainsmith.clock import mhz_text
from brainsmith.errors import HintedError
from brainsmith.hardware.board.boards import Board
from brainsmith.hardware.board.constraints import CLOCK, LED, RESET, UART_RX, UART_TX
from brainsmith.hardware.board.pll import Pll

STANDARD_BAUDS = (3_000_000, 2_000_000, 1_000_000, 921_600, 460_800, 230_400, 115_200, 57_600)
MIN_CLOCKS_PER_BIT = 4
MAX_BAUD_ERROR = 0.02  # the UART's rate off by at most 2 % after rounding the clocks per bit
# the top's ports every top has: the clock pin and the host link's UART
LINK_PORTS = (f"input  logic {CLOCK}", f"input  logic {UART_RX}", f"output logic {UART_TX}")
PORT = re.compile(
    r"\b(input|output)\s+(?:wire\s+|logic\s+|reg\s+)?(?:\[\s*(\d+)\s*:\s*0\s*\]\s*)?(\w+)"
)
MODULE = re.compile(r"\bmodule\s+accelerator\s*(?:#\s*\(.*?\)\s*)?\((.*?)\);", re.S)


class TopError(HintedError):
    """A board top that cannot be made for this accelerator, board or clock."""


@dataclass(frozen=True)
class Ports:
    """The stitched accelerator's ports: name -> (direction, width)."""

    ports: dict[str, tuple[str, int]]

    @property
    def in_bits(self) -> int:
        return self.ports["in0_V_TDATA"][1]

    @property
    def out_bits(self) -> int:
        return self.ports["out0_V_TDATA"][1]

    @property
    def probes(self) -> list[str]:
        return [name for name in self.ports if name.startswith("maxcount_")]


def accelerator_ports(text: str) -> Ports:
    """The ports of ``module accelerator`` in ``text`` (``accelerator.sv``); TopError when
    it is not one stream in and one out."""
    found = MODULE.search(text)
    if found is None:
        raise TopError("accelerator.sv declares no module accelerator", "build the model again")
    ports = {name: (kind, int(msb or 0) + 1) for kind, msb, name in PORT.findall(found[1])}
    expected = ("ap_clk", "ap_rst_n", "in0_V_TDATA", "in0_V_TVALID", "in0_V_TREADY",
                "out0_V_TDATA", "out0_V_TVALID", "out0_V_TREADY")  # fmt: skip
    missing = [name for name in expected if name not in ports]
    extra = [name for name in ports if name not in expected and not name.startswith("maxcount_")]
    if missing or extra:
        raise TopError(
            f"the host link drives one input stream and reads one output stream; the "
            f"accelerator {'lacks ' + ', '.join(missing) if missing else 'has ' + ', '.join(extra)}",
            "build a model with one input and one output",
        )
    return Ports(ports)


def frame_words(model: Any) -> tuple[int, int]:
    """(input, output) stream words per frame of a stitched dataflow ``model`` (a qonnx
    ``ModelWrapper`` of FINN layers): its first layer's folded input shape and its last
    layer's folded output shape, without their last (per-word) dimension."""
    from qonnx.custom_op.registry import getCustomOp

    first, last = getCustomOp(model.graph.node[0]), getCustomOp(model.graph.node[-1])
    words = [math.prod(first.get_folded_input_shape()[:-1]),
             math.prod(last.get_folded_output_shape()[:-1])]  # fmt: skip
    return int(words[0]), int(words[1])


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


def board_top(board: Board, pll: Pll, ports: Ports, link: Link) -> str:
    """``board_top.sv`` for ``board`` with the accelerator of ``ports`` at ``pll``'s clock,
    reached over ``link``."""
    cycles = link.clocks_per_bit(pll.output_mhz)
    inputs = [*LINK_PORTS]
    held = "~locked"
    if board.reset is not None:
        inputs.append(f"input  logic {RESET}")
        held += f" | {'~' if board.reset.active_low else ''}{RESET}"
    if board.led is not None:
        inputs.append(f"output logic {LED}")
    led = ""
    if board.led is not None:
        led = f"  assign {LED} = {'~' if board.led.active_low else ''}rst_n;  // lit: running\n"
    header = f"""\
// Generated by brainsmith.hardware.board.top for {board.name} ({board.part}): the accelerator at
// {pll.output_mhz:.6g} MHz (EHXPLLL from the {board.clock_mhz:g} MHz oscillator), reached over
// the host link's UART at {link.baud} baud ({cycles} clocks per bit).
"""
    clock = f"  logic clk, locked;\n{pll.instance(CLOCK, 'clk', 'locked')}"
    return _top(header, inputs, clock, held, led, ports, link, cycles)


def part_top(part: str, clock_mhz: float, ports: Ports, link: Link) -> str:
    """``board_top.sv`` for a bare ``part``: the accelerator clocked straight from the clock
    pin at ``clock_mhz`` (no PLL, no button, no LED), its reset released two cycles after
    configuration; the same link as ``board_top``'s."""
    cycles = link.clocks_per_bit(clock_mhz)
    inputs = [*LINK_PORTS]
    header = f"""\
// Generated by brainsmith.hardware.board.top for a bare {part}: the accelerator at {clock_mhz:.6g} MHz
// from the clock pin, reached over the host link's UART at {link.baud} baud ({cycles} clocks per
// bit).
"""
    clock = f"  logic clk;\n  assign clk = {CLOCK};\n"
    return _top(header, inputs, clock, "1'b0", "", ports, link, cycles)


def _top(
    header: str,
    inputs: list[str],
    clock: str,
    held: str,
    led: str,
    ports: Ports,
    link: Link,
    cycles: int,
) -> str:
    """The top: ``clock`` makes ``clk``, ``held`` holds the reset, then the link and the
    accelerator."""
    probes = "".join(f",\n    .{name}()" for name in ports.probes)
    in_bits, out_bits = ports.in_bits, ports.out_bits
    return f"""{header}module board_top (
  {("," + chr(10) + "  ").join(inputs)}
);
{clock}
  // reset: asserted at once while the PLL is unlocked or the button is pressed, released
  // on the design clock two cycles after
  logic held;
  logic [2:0] release_n;
  assign held = {held};
  always_ff @(posedge clk or posedge held)
    if (held) release_n <= '0;
    else release_n <= {{release_n[1:0], 1'b1}};
  logic rst_n;
  assign rst_n = release_n[2];
{led}
  logic [{in_bits - 1}:0] in_tdata;
  logic in_tvalid, in_tready;
  logic [{out_bits - 1}:0] out_tdata;
  logic out_tvalid, out_tready;

  brainsmith_host_link #(
    .CLKS_PER_BIT({cycles}), .IN_BITS({in_bits}), .OUT_BITS({out_bits}),
    .IN_WORDS({link.in_words}), .OUT_WORDS({link.out_words}), .DESIGN_HASH(256'h{link.design_hash})
  ) link (
    .clk(clk), .rst_n(rst_n), .uart_rx({UART_RX}), .uart_tx({UART_TX}),
    .m_tdata(in_tdata), .m_tvalid(in_tvalid), .m_tready(in_tready),
    .s_tdata(out_tdata), .s_tvalid(out_tvalid), .s_tready(out_tready)
  );

  accelerator accelerator (
    .ap_clk(clk), .ap_rst_n(rst_n),
    .in0_V_TDATA(in_tdata), .in0_V_TVALID(in_tvalid), .in0_V_TREADY(in_tready),
    .out0_V_TDATA(out_tdata), .out0_V_TVALID(out_tvalid), .out0_V_TREADY(out_tready){probes}
  );
endmodule
"""


__all__ = [
    "Link",
    "Ports",
    "TopError",
    "accelerator_ports",
    "baud_rate",
    "board_top",
    "clocks_per_bit",
    "frame_words",
    "part_top",
]
