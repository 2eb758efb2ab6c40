"""A build's whole accelerator as a folder that works without the build, its machine or
brainsmith: every RTL source copied (FINN's text, parameter-file paths made relative), a
relative file list, a clean top (clock, reset, one AXI stream in and one out), the layers'
parameter files, a Verilator testbench replaying the build's vectors (``./sim.sh`` prints
PASS or the first difference) and, for an AMD part, a Vivado script that packages the IP
(untested here). A build with a board's bitstream is exported board-shaped instead
(``brainsmith.export.board``): the bitstream, its pins, the RTL it was made from, the host
link, a standalone driver and a simulation of the board top.

Verilator needs a few of FINN's files changed (the fixes of
``brainsmith.hardware.rtlsim.layer_design``); a synthesis tool reads FINN's own text. So
``rtl/`` holds FINN's text and ``sim/rtl/`` only the files the simulation changes, each change
named in ``manifest.json``. The folder is
written beside its destination and renamed into place when complete: a failure or an
interrupt leaves no half-written export, and an existing destination is never touched. The
build folder is untrusted: its files pass the build-folder gate, the part it names must be a
part name, and what ``sim.sh`` compiles is screened as every simulation here is.
"""

from __future__ import annotations

import contextlib
import errno
import io
import json
import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field, replace
from importlib.resources import files as package_files
from typing import TYPE_CHECKING

from brainsmith.clock import Clock
from brainsmith.export.shared import (
    IDLE_LIMIT,
    Exported,
    ExportError,
    Vectors,
    Writer,
    filled,
)
from brainsmith.frameworks.finn.env import contain_finn_output
from brainsmith.frameworks.finn.execution import runnable_copy
from brainsmith.hardware.rtlsim.verilator import ToolchainError, find_toolchain
from brainsmith.intake.inputs import ResultError, samples

if TYPE_CHECKING:
    import numpy as np

    from brainsmith.files import Json
    from brainsmith.hardware.board.streams import Streams
    from brainsmith.hardware.design import DesignFile

TOP = "brainsmith_accelerator"
GAUGE = "fifo_gauge.sv"  # the FIFO sizing's unbounded FIFO, selected only while sizing
DEFAULT_FRAMES = 8


@dataclass
class Source:
    """One RTL file of the export: its name, FINN's text, and the simulation's if changed."""

    name: str
    text: str
    sim_text: str | None = None
    changes: list[str] = field(default_factory=list)


def export_build(
    build: str, destination: str, frames: int = DEFAULT_FRAMES, x: np.ndarray | None = None
) -> Exported:
    """Export the all-RTL build in ``build`` to the new folder ``destination``, with
    ``frames`` generated inputs (seed 0) or the inputs ``x`` as its vectors; ExportError
    (or the driver's DriverError for a build it cannot read) naming what is wrong."""
    from brainsmith.hardware.board.streams import streams

    target = os.path.abspath(destination)
    if os.path.lexists(target):
        raise ExportError(f"{destination} exists", "give a folder that does not exist yet")
    design = streams(build)  # its part a part name (the gate's), as the Vivado script has it
    from brainsmith.export.board import board_build

    shaped = board_build(design)
    sources, data = ([], []) if shaped else _sources(design)
    vectors = _vectors(design, frames, x)
    parent = os.path.dirname(target)
    try:
        os.makedirs(parent, exist_ok=True)
        os.mkdir(
            target, 0o700
        )  # claimed: a second export to it, or a folder made meanwhile, fails here
    except FileExistsError:
        raise ExportError(
            f"{destination} exists", "give a folder that does not exist yet"
        ) from None
    except OSError as exc:
        raise ExportError(f"cannot create {destination} ({exc.strerror or exc})") from None
    stage = ""
    try:
        stage = tempfile.mkdtemp(prefix=f".{os.path.basename(target)}.", dir=parent)
        if shaped:
            from brainsmith.export.board import write_board

            done = write_board(stage, design, shaped, vectors)
        else:
            _write(stage, design, sources, data, vectors.inputs, vectors.expected)
            _screen(stage)
        os.chmod(stage, 0o755)
        os.rename(stage, target)  # over the empty folder claimed above
    except BaseException as exc:
        if stage:
            shutil.rmtree(stage, ignore_errors=True)
        with contextlib.suppress(OSError):
            os.rmdir(target)  # the claim, unless something was put in it meanwhile
        if isinstance(exc, OSError):
            raise _failed_write(exc, destination) from None
        raise
    if shaped:
        return replace(done, folder=target)
    changes = sorted({change for source in sources for change in source.changes})
    return Exported(target, TOP, len(sources), len(data), len(vectors.inputs), changes,
                    vivado=amd_part(design.fpga_part))  # fmt: skip


def amd_part(part: str) -> bool:
    """Whether ``part`` is an AMD (Xilinx) part: ``xc``, ``xq`` or ``xa`` and a device."""
    return bool(re.match(r"x[cqa]\w", part, re.I))


def _sources(design: Streams) -> tuple[list[Source], list[tuple[str, bytes]]]:
    """The RTL files the build's design names (FINN's text and, where it differs, the
    simulation's) and the memory files of each layer's code folder, as (``data/dN/name``,
    bytes); the FIFO sizing's gauge left out."""
    from brainsmith.hardware.listing import design_path
    from brainsmith.hardware.synthesis.layer_sources import MissingSources

    collected = _Collected(design)
    try:
        for file in design.design.sources:
            source = design_path(design.folder, file)
            if source.name != GAUGE:
                collected.add(source.path, file)
    except MissingSources as exc:
        raise ExportError(str(exc), REBUILD) from None
    if not collected.sources:
        raise ExportError(f"{design.folder}'s file list names only the FIFO sizing's", REBUILD)
    return collected.sources, collected.data


class _Collected:
    """The sources and parameter files gathered from a build folder's file list."""

    def __init__(self, design: Streams) -> None:
        self.design = design
        self.sources: list[Source] = []
        self.data: list[tuple[str, bytes]] = []
        self.tags: dict[str, str] = {}  # a layer's code folder -> its folder under data/

    def add(self, path: str, file: DesignFile) -> None:
        """The design's ``file``, read at ``path`` (and, for one of the build's, its layer's
        memory files, once per layer)."""
        from brainsmith.hardware.rtlsim.layer_design import VERILATOR_FIXES

        code_dir = os.path.dirname(path)
        name, text, sim_text = self._read(path, code_dir, file)
        if any(s.name == name and s.text == text for s in self.sources):
            return  # a layer's copy of a module another layer brought
        while any(source.name == name for source in self.sources):
            name = f"_{name}"
        fix = VERILATOR_FIXES.get(os.path.basename(path))
        changes = [f"{name}: {fix.__name__ if fix else 'exact_single_precision'}"]
        same = sim_text == text
        self.sources.append(Source(name, text, None if same else sim_text, [] if same else changes))

    def _read(self, path: str, code_dir: str, file: DesignFile) -> tuple[str, str, str]:
        """The file's name, FINN's text and the simulation's, their parameter-file paths
        made relative (``data/dN/``) for a file of the build."""
        from brainsmith.hardware.place_route.stitched_sources import parameter_files
        from brainsmith.hardware.rtlsim.layer_design import localised_paths, verilator_ready
        from brainsmith.hardware.synthesis.layer_sources import (
            MissingSources,
            plain_file_name,
            read_layer_file,
        )

        try:
            original = read_layer_file(path, code_dir, "RTL file").decode("utf-8", "replace")
            name = plain_file_name(os.path.basename(path))
            inside = file.in_build
            if inside and code_dir not in self.tags:
                self.tags[code_dir] = tag = f"d{len(self.tags)}"
                self.data += parameter_files(self.design.folder, self.design.design, file, tag)
        except MissingSources as exc:
            raise ExportError(str(exc), REBUILD) from None
        text, sim_text = original, verilator_ready(path, original, code_dir)
        if inside:
            relative = f'"data/{self.tags[code_dir]}/'
            text = localised_paths(original, code_dir).replace('"./', relative)
            sim_text = sim_text.replace('"./', relative)
        return name, text, sim_text


def _vectors(design: Streams, frames: int, x: np.ndarray | None) -> Vectors:
    """Per frame, the input stream's words and the output words the build's Python execution
    of the accelerator (``final.onnx``) gives for them, with the values they carry."""
    import numpy as np

    from brainsmith.hardware.board.streams import Host, run_graph
    from brainsmith.hardware.rtlsim.beats import pack_beats
    from brainsmith.verification.verifier import generate_inputs

    host = Host(design)
    if x is None:
        if frames < 1:
            raise ExportError(f"--frames {frames}: give at least one frame")
        chosen = [sample[0] for sample in generate_inputs(host.runnable, frames)]
    else:
        try:
            chosen = [sample[0] for sample in samples(host.runnable, x)[0]]
        except ResultError as exc:
            raise ExportError(exc.reason.replace("run(x): x", "--input"), exc.hint) from None
    accelerated = host.before(chosen)
    with contain_finn_output(io.StringIO()):
        outputs = run_graph(runnable_copy(design.model), accelerated)
    last = design.last
    shape = last.get_folded_output_shape(0)
    expected = [
        [int(w) for w in pack_beats(np.asarray(out, np.float32).reshape(shape),
                                    last.get_output_datatype(0), design.out_bits)]
        for out in outputs
    ]  # fmt: skip
    outputs = [np.asarray(out, np.float32) for out in outputs]
    return Vectors(chosen, accelerated, [design.pack(frame) for frame in accelerated], outputs,
                   expected, host.after(outputs))  # fmt: skip


def _write(
    stage: str,
    design: Streams,
    sources: list[Source],
    data: list[tuple[str, bytes]],
    inputs: list[list[int]],
    expected: list[list[int]],
) -> None:
    put = Writer(stage)
    changed = _write_rtl(put, design, sources)
    for name, content in data:
        put.bytes(f"data/{name}", content)
    _write_bench(put, design, inputs, expected)
    _write_scripts(put, design, len(inputs), sum(len(frame) for frame in expected))
    put.text("README.md", _readme(design, len(inputs), sorted(changed)))
    put.text(
        "manifest.json", json.dumps(_manifest(design, sources, len(inputs), put), indent=1) + "\n"
    )


def _write_rtl(put: Writer, design: Streams, sources: list[Source]) -> set[str]:
    """rtl/ (FINN's text, the clean top, files.f) and sim/rtl/ (the files the simulation
    changes, sim/files.f); returns the names of those changed."""
    top = _clean_top(design)
    for source in sources:
        put.text(f"rtl/{source.name}", source.text)
        if source.sim_text is not None:
            put.text(f"sim/rtl/{source.name}", source.sim_text)
    put.text(f"rtl/{TOP}.sv", top)
    names = [*(s.name for s in sources), f"{TOP}.sv"]
    put.text("rtl/files.f", "".join(f"rtl/{name}\n" for name in names))
    changed = {s.name for s in sources if s.sim_text is not None}
    put.text("sim/files.f", "".join(
        f"{'sim/rtl' if name in changed else 'rtl'}/{name}\n" for name in names))  # fmt: skip
    return changed


def _clean_top(design: Streams) -> str:
    """The top around the accelerator, its debug probes left unconnected."""
    from brainsmith.hardware.board.top import wrapper

    comment = (
        "Generated by brainsmith export: the accelerator with a clock, an active-low reset and",
        f"one AXI stream in (in0_V) and one out (out0_V); design {design.design_hash[:16]}.",
    )
    return wrapper(TOP, design.ports, comment)


def _write_bench(
    put: Writer, design: Streams, inputs: list[list[int]], expected: list[list[int]]
) -> None:
    """The Verilator testbench, its ports and the vectors it replays."""
    from brainsmith.hardware.rtlsim.compile import testbench_header
    from brainsmith.hardware.rtlsim.layer_design import LayerDesign, Stream

    header = LayerDesign(node=TOP, op_type="exported accelerator", top=TOP, code_dir="",
                         files=[], inputs=[Stream("in0_V", 0, design.in_bits)],
                         outputs=[Stream("out0_V", 0, design.out_bits)])  # fmt: skip
    put.text("sim/tb_ports.h", testbench_header(header))
    bench = package_files("brainsmith.hardware.rtlsim").joinpath("testbench.cpp").read_text()
    put.text("sim/testbench.cpp", bench)
    put.text("sim/in0_V.hex", "".join(f"{w:x}\n" for frame in inputs for w in frame))
    put.text("sim/expected.hex", "".join(f"{w:x}\n" for frame in expected for w in frame))


def _write_scripts(put: Writer, design: Streams, frames: int, out_words: int) -> None:
    """sim.sh and the Vivado packaging script, filled in from the shipped templates."""
    shipped = package_files("brainsmith.export").joinpath("files")
    values = {"@TOP@": TOP, "@OUTPUT_BEATS@": str(out_words), "@IDLE_LIMIT@": str(IDLE_LIMIT),
              "@OUT_WORDS@": str(design.out_words), "@FRAMES@": str(frames),
              "@PART@": design.fpga_part}  # fmt: skip
    put.text("sim.sh", filled(shipped.joinpath("sim.sh").read_text(), values), mode=0o755)
    if amd_part(design.fpga_part):  # Vivado packages for AMD parts only
        tcl = filled(shipped.joinpath("package_ip.tcl").read_text(), values)
        put.text("vivado/package_ip.tcl", tcl)


def _manifest(design: Streams, sources: list[Source], frames: int, put: Writer) -> Json:
    """manifest.json: the design, its streams, the simulation's changes, every file's hash."""
    return {
        "top": TOP,
        "design_hash": design.design_hash,
        "part": design.fpga_part,
        "clock_ns": round(Clock.from_mhz(design.clock_mhz).ns, 6) if design.clock_mhz else None,
        "streams": {"in0_V": {"bits": design.in_bits, "words_per_frame": design.in_words},
                    "out0_V": {"bits": design.out_bits, "words_per_frame": design.out_words}},
        "frames": frames,
        "simulation_changes": sorted({c for s in sources for c in s.changes}),
        "files": put.digests,
    }  # fmt: skip


def _failed_write(exc: OSError, destination: str) -> ExportError:
    """What to tell the user when writing the export failed (nothing of it is left)."""
    if exc.errno == errno.ENOSPC:
        return ExportError(f"the disk of {destination} is full; nothing was left there",
                           "free some space, or export to another disk")  # fmt: skip
    if exc.errno in (errno.ENOTEMPTY, errno.EEXIST):
        return ExportError(f"{destination} was filled by something else while exporting",
                           "give a folder that does not exist yet")  # fmt: skip
    return ExportError(
        f"cannot write {destination} ({exc.strerror or exc}); nothing was left there"
    )


def _screen(stage: str) -> None:
    """ExportError when the sources ``sim.sh`` compiles would reach the host when simulated
    (``$system``, file writes, ...: ``brainsmith.hardware.rtlsim.screen``, as every simulation here is
    screened): a build folder made elsewhere must not run commands where it is simulated."""
    from brainsmith.hardware.rtlsim.screen import PreprocessError, UnsafeSource, screen

    with open(os.path.join(stage, "sim", "files.f")) as handle:
        listed = handle.read().split()
    paths = [os.path.join(stage, name) for name in listed]
    try:
        screen(paths, find_toolchain(), stage, dict(zip(paths, listed, strict=True)))
    except ToolchainError as exc:
        raise ExportError(f"the export's RTL cannot be checked: {exc}", "make setup") from None
    except (UnsafeSource, PreprocessError) as exc:
        raise ExportError(f"the build's RTL cannot be exported: {exc}", REBUILD) from None


def _readme(design: Streams, frames: int, changed: list[str]) -> str:
    changes = ", ".join(changed) or "none"
    return f"""# {TOP}

The whole accelerator of a brainsmith build, exported with `brainsmith export`: it needs
neither the build folder nor brainsmith.

- `rtl/`: every source (FINN's text; parameter files named relative to this folder) and
  `rtl/{TOP}.sv`, the top: `ap_clk`, `ap_rst_n` (active low), the input stream `in0_V`
  ({design.in_bits} bits, {design.in_words} words a frame) and the output stream `out0_V`
  ({design.out_bits} bits, {design.out_words} words a frame). `rtl/files.f` lists them in
  compile order.
- `data/`: the layers' weight and threshold files, read with `$readmemh` relative to this
  folder (run tools from here).
- `./sim.sh`: compiles the design in Verilator 5 with `sim/testbench.cpp` and replays
  {frames} frames (`sim/in0_V.hex`), comparing every output word with `sim/expected.hex`,
  the build's Python execution of the same frames. It prints PASS or the first difference.
  `sim/rtl/` holds the files Verilator reads changed ({changes}); see `manifest.json`.
{_vivado_line(design.fpga_part)}- `manifest.json`: the design's hash, streams, part and clock, and each file's SHA-256.
"""


def _vivado_line(part: str) -> str:
    if not amd_part(part):
        return ""
    return f"""- `vivado/package_ip.tcl`: packages the IP for `{part}`
  (`vivado -mode batch -source vivado/package_ip.tcl`). It is untested: the machines
  brainsmith is tested on have no Vivado.
"""


REBUILD = "build the model again with --prefer rtl (every layer RTL)"

__all__ = ["ExportError", "Exported", "Vectors", "amd_part", "export_build"]
