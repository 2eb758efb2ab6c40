"""A board build exported board-shaped: what a board and its host need, without the build,
brainsmith or the machine it was built on.

- ``<board>.bit``: the bitstream, the one the build's report names by its SHA-256;
- ``<board>.lpf`` (``.cst``, ``.pcf``: its family's format): the board's pins, as nextpnr
  placed the top with them;
- ``rtl/``: the sources Yosys read for the bitstream, in its order (``rtl/files.f``): the
  stitched accelerator as a Lattice part reads it (``stitched_sources``: brainsmith's
  pipelined matrix core, threshold memories in LUTs...), brainsmith's host link and the
  board top around them, byte for byte but for the parameter files' folder (Yosys' run
  folder ``/design/data/`` is ``data/`` here); the design hash the board top reports is the
  digest of exactly these sources;
- ``data/dN/``: the layers' weights and thresholds;
- ``driver.py`` and ``driver.json``: the host's side, with only Python, numpy and pyserial;
  ``vectors/``: inputs and the outputs the build's Python execution gives for them;
- ``sim.sh`` and ``sim/``: the board top in Verilator (its PLL modelled as passing the clock
  through) behind a bit-level UART at the board's clocks per bit, sent the host link's
  frames of the vectors; every reply must be the expected one;
- ``README.md`` (flash, run, simulate) and ``manifest.json`` (every file's SHA-256).

What the export copies is checked to be what the bitstream was made from: the board top is
made again from the build's RTL at the clock and baud the bitstream's report names, and
must come out at the clock the PLL made and the clocks per bit it recorded; when the
bitstream's run folder holds the sources its Yosys read (a run the cache did not serve),
each must be the one exported.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from importlib.resources import files as package_files
from types import ModuleType
from typing import TYPE_CHECKING, Any

from brainsmith.clock import Clock
from brainsmith.export.shared import (
    IDLE_LIMIT,
    Exported,
    ExportError,
    Vectors,
    Writer,
    filled,
)

if TYPE_CHECKING:
    from brainsmith.files import Json
    from brainsmith.hardware.board.boards import Board
    from brainsmith.hardware.board.streams import Streams
    from brainsmith.hardware.place_route.bitstream import BitstreamDesign

SIM_TOP = "brainsmith_sim_board"
GAUGE = "fifo_gauge.sv"  # read by Yosys, instantiated by no FIFO of a sized build
DRIVER_OPS = ("Transpose", "Reshape", "Flatten", "Identity", "Squeeze", "Unsqueeze", "Mul",
              "Add", "Sub", "Div")  # fmt: skip
DRIVER_ATTRIBUTES = ("perm", "axis", "axes", "allowzero")


@dataclass(frozen=True)
class BoardBuild:
    """A build's bitstream and what it was made from: the ``board``, the bitstream's bytes
    and its ``record`` (report), the board design Yosys read (``made``)."""

    board: Board
    bit: bytes
    record: Json
    made: BitstreamDesign

    @property
    def bit_name(self) -> str:
        return f"{self.board.name}.bit"


def board_build(design: Streams) -> BoardBuild | None:
    """The bitstream of the build ``design`` and the design it was made from; None for a
    build without one. ExportError when the bitstream was changed after it was made or the
    build's RTL no longer makes the design it was made from."""
    from brainsmith.files import DamagedFile, read_json
    from brainsmith.hardware.board.boards import BoardError, board
    from brainsmith.hardware.board.cell_models import PLL_MODELS
    from brainsmith.hardware.board.clocking import PllError
    from brainsmith.hardware.board.top import TopError
    from brainsmith.hardware.place_route.bitstream import BitstreamError, board_design
    from brainsmith.hardware.place_route.stitched_sources import stitched_design
    from brainsmith.hardware.synthesis import NotSynthesisable
    from brainsmith.intake.bitstream import bitstream_record, build_bitstream
    from brainsmith.intake.build_folder import FolderError

    folder = design.folder
    try:
        report = read_json(os.path.join(folder, "report.json"))
    except (OSError, DamagedFile):
        report = {}
    recorded = os.path.lexists(os.path.join(folder, "bitstream", "report.json"))
    section = report.get("bitstream")
    if not recorded and (not isinstance(section, dict) or section.get("board") == ""):
        return None  # none, or a Lattice part's alone (no board): exported as any build
    try:
        name, _, checked = build_bitstream(folder)
        record = bitstream_record(folder)
        target = board(name)
    except FolderError as exc:
        raise ExportError(exc.reason, exc.hint) from None
    except BoardError as exc:
        raise ExportError(str(exc), exc.hint) from None
    if target.family not in PLL_MODELS:
        raise ExportError(
            f"brainsmith exports the builds of {' and '.join(PLL_MODELS)} boards with their "
            f"board, whose PLL it models in simulation, not yet {target.name}'s "
            f"({target.family})",
            f"load the bitstream itself: brainsmith flash {folder}",
        )
    remake = f"make the bitstream again: brainsmith bitstream {folder} --board {name}"
    figures = _figures(record, remake)
    if (figures["in_words"], figures["out_words"]) != (design.in_words, design.out_words):
        raise ExportError(
            f"the bitstream's link carries {figures['in_words']} words in and "
            f"{figures['out_words']} out a frame, the build's accelerator {design.in_words} and "
            f"{design.out_words}: the bitstream is not of this build's RTL",
            remake,
        )
    try:
        made = board_design(
            stitched_design(folder, design.design), target, figures["asked_mhz"],
            in_words=design.in_words, out_words=design.out_words, baud=int(figures["baud"]),
        )  # fmt: skip
    except (NotSynthesisable, BitstreamError) as exc:
        raise ExportError(str(exc), remake) from None
    except (PllError, TopError) as exc:  # a clock or baud the board's PLL or UART cannot make
        raise ExportError(
            f"the bitstream's board top cannot be made again: {exc}", remake
        ) from None
    if (
        not math.isclose(made.clock_mhz, figures["clock_mhz"], rel_tol=1e-9)
        or made.clocks_per_bit != figures["clocks_per_bit"]
    ):
        raise ExportError(
            f"the build's RTL makes a board top at {made.clock_mhz:g} MHz and "
            f"{made.clocks_per_bit} clocks per bit, the bitstream was made at "
            f"{figures['clock_mhz']:g} MHz and {figures['clocks_per_bit']}",
            remake,
        )
    if record.get("cached") is False:  # the run folder is this bitstream's own run
        _same_as_staged(folder, made, remake)
    return BoardBuild(target, checked, record, made)


def _figures(record: Json, remake: str) -> dict[str, float]:
    """The bitstream report's figures the board top is made from, each a positive number."""
    found = {}
    for key in ("asked_mhz", "clock_mhz", "baud", "clocks_per_bit", "in_words", "out_words"):
        value = record.get(key)
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < 1e12:
            raise ExportError(f"the bitstream's report has no {key} (it has {value!r})", remake)
        found[key] = float(value) if key.endswith("mhz") else int(value)
    return found


def _same_as_staged(folder: str, made: BitstreamDesign, remake: str) -> None:
    """ExportError unless each source and parameter file the bitstream's run staged for
    Yosys (``bitstream/run/src``, ``data``) is the one exported. Only for a run the cache did
    not serve: a cached result adds to the folder an earlier run left."""
    from brainsmith.hardware.place_route.board_run import WORKDIR
    from brainsmith.hardware.synthesis.layer_sources import DATA

    run = os.path.join(folder, WORKDIR)
    staged = os.path.join(run, "src")
    if not os.path.isdir(staged) or os.path.islink(staged):
        return
    files = {f"src/{name}": text.encode() for name, text in made.full.sources}
    files.update({f"{DATA}/{name}": content for name, content in made.full.data})
    for relative, content in files.items():
        try:
            with open(os.path.join(run, relative), "rb") as handle:
                same = handle.read(len(content) + 1) == content
        except OSError:
            same = False
        if not same:
            raise ExportError(
                f"{os.path.join(run, relative)} is not what the build's RTL makes now: the "
                "bitstream was made from other sources",
                remake,
            )


def constraints_name(shaped: BoardBuild) -> str:
    """The export's constraints file: the board's name, its family's extension (``.lpf``)."""
    return shaped.board.name + os.path.splitext(shaped.made.pins[0])[1]


def write_board(stage: str, design: Streams, shaped: BoardBuild, vectors: Vectors) -> Exported:
    """The board-shaped export of ``design`` in the folder ``stage``; what it wrote."""
    put = Writer(stage)
    board, made = shaped.board, shaped.made
    put.bytes(shaped.bit_name, shaped.bit)
    put.text(constraints_name(shaped), made.pins[1])
    changed = _write_rtl(put, shaped)
    for name, content in made.full.data:
        put.bytes(f"data/{name}", content)
    frames = len(vectors.inputs)
    _write_sim(put, design, shaped, vectors)
    driver = driver_spec(design, shaped, vectors)
    _write_driver(put, driver, vectors)
    put.text("README.md", _readme(design, shaped, frames, driver))
    manifest = _manifest(design, shaped, frames, changed, driver, put)
    put.text("manifest.json", json.dumps(manifest, indent=1) + "\n")
    _screen(stage)
    return Exported(
        stage, "board_top", len(made.full.sources), len(made.full.data), frames, changed,
        board=board.name, bitstream=shaped.bit_name, flash=flash_command(shaped),
    )  # fmt: skip


def exported_text(text: str) -> str:
    """A source as Yosys read it, its parameter files named from the export's folder."""
    from brainsmith.hardware.synthesis.layer_sources import DATA, MOUNT

    return text.replace(f'"{MOUNT}/{DATA}/', f'"{DATA}/')


def _write_rtl(put: Writer, shaped: BoardBuild) -> list[str]:
    """rtl/ (the sources as Yosys read them, files.f in its order, the AMD primitives it
    read as blackboxes) and sim/rtl/ (those Verilator reads changed); the changes."""
    from brainsmith.hardware.board.cell_models import PLL_MODELS
    from brainsmith.hardware.rtlsim.layer_design import VERILATOR_FIXES
    from brainsmith.hardware.rtlsim.single_precision import exact_single_precision
    from brainsmith.hardware.synthesis.layer_sources import PRIMITIVES, primitive_library

    made, changes, simulated = shaped.made, [], []
    for name, source in made.full.sources:
        text = exported_text(source)
        put.text(f"rtl/{name}", text)
        if name == GAUGE:
            continue
        fix = VERILATOR_FIXES.get(name.lstrip("_"))
        sim_text = exact_single_precision(fix(text) if fix else text)
        if sim_text != text:
            put.text(f"sim/rtl/{name}", sim_text)
            changes.append(f"{name}: {fix.__name__ if fix else 'exact_single_precision'}")
        if name != f"{made.pll}.sv":  # the PLL's declaration for Yosys: sim/ models it
            simulated.append(f"{'sim/rtl' if sim_text != text else 'rtl'}/{name}")
    put.text("rtl/files.f", "".join(f"rtl/{name}\n" for name, _ in made.full.sources))
    if made.full.primitives:
        put.text(f"rtl/{PRIMITIVES}", primitive_library(made.full.primitives))
    simulated += [f"sim/{PLL_MODELS[shaped.board.family]}", f"sim/{SIM_TOP}.sv"]
    put.text("sim/files.f", "".join(f"{path}\n" for path in simulated))
    return sorted(changes)


def _write_sim(put: Writer, design: Streams, shaped: BoardBuild, vectors: Vectors) -> None:
    """sim.sh, the board top's wrapper and PLL model, the UART bench and its frames."""
    from brainsmith.hardware.board.cell_models import PLL_MODELS, pll_model
    from brainsmith.hardware.board.link import TIMEOUT_BYTES, word_bytes

    made, family = shaped.made, shaped.board.family
    put.text(f"sim/{PLL_MODELS[family]}", pll_model(family))
    put.text(f"sim/{SIM_TOP}.sv", _sim_top(shaped.board))
    shipped = package_files("brainsmith.export").joinpath("files")
    put.text("sim/board_bench.cpp", shipped.joinpath("board_bench.cpp").read_text())
    bench = package_files("brainsmith.hardware.board").joinpath("sim", "uart_bench.h")
    put.text("sim/uart_bench.h", bench.read_text())
    requests, replies = link_frames(design, made, vectors)
    put.text("sim/requests.hex", "".join(f"{frame}\n" for frame in requests))
    put.text("sim/expected.hex", "".join(f"{frame}\n" for frame in replies))
    cpb = made.clocks_per_bit
    idle = max(IDLE_LIMIT, 2 * TIMEOUT_BYTES * 10 * cpb + 10 * design.latency_cycles())
    values = {"@TOP@": SIM_TOP, "@CLOCKS_PER_BIT@": str(cpb), "@FRAMES@": str(len(vectors.inputs)),
              "@WORD_BYTES@": str(word_bytes(design.out_bits)), "@OUT_WORDS@": str(design.out_words),
              "@IDLE_LIMIT@": str(idle), "@PLL_MODEL@": PLL_MODELS[family]}  # fmt: skip
    script = filled(shipped.joinpath("board_sim.sh").read_text(), values)
    put.text("sim.sh", script, mode=0o755)


def _sim_top(board: Board) -> str:
    """The board top as the bench drives it: its oscillator pin on the bench's clock, its
    reset button (when it has one) on the bench's reset, its LED open."""
    from brainsmith.hardware.board.constraints import CLOCK, LED, RESET, UART_RX, UART_TX
    from brainsmith.hardware.hdl import Instance, Module, Port, inverted

    pins = [(CLOCK, "clk"), (UART_RX, "uart_rx"), (UART_TX, "uart_tx")]
    if board.reset is not None:
        pins.append((RESET, inverted("rst_n", not board.reset.active_low)))
    if board.led is not None:
        pins.append((LED, ""))
    ports = (Port("clk", "input"), Port("rst_n", "input"), Port("uart_rx", "input"),
             Port("uart_tx", "output"))  # fmt: skip
    top = Instance("board_top", "board", (tuple(pins),))
    comment = (f"The exported board top ({board.name}) on the simulation bench's pins.",)
    return Module(SIM_TOP, ports, (top,), comment).render()


def link_frames(
    design: Streams, made: BitstreamDesign, vectors: Vectors
) -> tuple[list[str], list[str]]:
    """The host link's request frames (IDENTIFY, then one INFER a frame) and the replies
    expected, in hex; ``..`` for the bytes not known in advance (an INFER reply's cycle count
    and so its CRC)."""
    from brainsmith.hardware.board.link import (
        IDENTIFY,
        IDENTITY,
        INFER,
        MAGIC,
        RESULT,
        VERSION,
        encode,
        words_to_bytes,
    )

    identity = (
        MAGIC + bytes((VERSION,)) + design.in_bits.to_bytes(2, "little")
        + design.out_bits.to_bytes(2, "little") + design.in_words.to_bytes(4, "little")
        + design.out_words.to_bytes(4, "little") + made.clocks_per_bit.to_bytes(4, "little")
        + bytes.fromhex(design.design_hash)
    )  # fmt: skip
    requests, replies = [encode(IDENTIFY, 1).hex()], [encode(IDENTITY, 1, identity).hex()]
    for index, (words, expected) in enumerate(zip(vectors.inputs, vectors.expected, strict=True)):
        seq = (index + 2) & 0xFF
        requests.append(encode(INFER, seq, words_to_bytes(words, design.in_bits)).hex())
        reply = encode(RESULT, seq, words_to_bytes(expected, design.out_bits) + bytes(4)).hex()
        replies.append(reply[:-12] + "." * 12)  # the cycle count and the CRC
    return requests, replies


def flash_command(shaped: BoardBuild) -> str:
    """openFPGALoader's command loading the export's bitstream into the board's SRAM, or its
    configuration flash where that is the only way (an iCE40's); run in the export's folder."""
    from brainsmith.hardware.board.flash import FLASH_ONLY, FlashError, loader_command, shown

    to_flash = shaped.board.family in FLASH_ONLY  # its configuration flash: nothing else
    try:
        return shown(loader_command(shaped.board.name, shaped.bit_name, to_flash=to_flash))
    except FlashError:  # a board openFPGALoader has no name for: through its cable
        return f"openFPGALoader --cable CABLE {shaped.bit_name}"


def driver_spec(design: Streams, shaped: BoardBuild, vectors: Vectors) -> Json:
    """driver.json: the design's hash, link and streams, and the host's nodes, each part
    checked with the driver's own code on the export's vectors against brainsmith's (``why``
    says what the driver cannot do and ``runs`` whether it runs the host's nodes)."""
    first, last = design.first, design.last
    clock = float(shaped.record.get("clock_mhz") or design.clock_mhz)
    spec: dict[str, Any] = {
        "board": shaped.board.name, "design_hash": design.design_hash,
        "baud": shaped.made.baud, "clock_mhz": clock,
        "latency_cycles": design.latency_cycles(), "flash": flash_command(shaped),
        "in": {"bits": design.in_bits, "words": design.in_words,
               "folded_shape": [int(d) for d in first.get_folded_input_shape(0)],
               "shape": [int(d) for d in first.get_normal_input_shape(0)],
               "dtype": _dtype_spec(first.get_input_datatype(0))},
        "out": {"bits": design.out_bits, "words": design.out_words,
                "folded_shape": [int(d) for d in last.get_folded_output_shape(0)],
                "shape": [int(d) for d in last.get_normal_output_shape(0)],
                "dtype": _dtype_spec(last.get_output_datatype(0))},
        "host": _host_spec(design),
    }  # fmt: skip
    driver = driver_module()
    try:
        _packs_as_simulated(driver, spec, vectors)
    except driver.DriverError as exc:
        spec["refused"] = exc.reason
        return spec
    host = spec["host"]
    if host["runs"] and not _host_agrees(driver, host, vectors):
        host.update(runs=False, why="the driver's numpy gives other values than the build's "
                                    "execution of the host's nodes")  # fmt: skip
    return spec


def _packs_as_simulated(driver: ModuleType, spec: Json, vectors: Vectors) -> None:
    """ExportError unless the driver's streams pack the vectors' frames into the words the
    build simulated and unpack its output words into its outputs; the driver's DriverError
    when it cannot pack them at all."""
    import numpy as np

    streams = driver.Stream(spec["in"]), driver.Stream(spec["out"])
    packed = [streams[0].pack(frame) for frame in vectors.accelerated]
    unpacked = [streams[1].unpack(words) for words in vectors.expected]
    same = packed == vectors.inputs and all(
        np.array_equal(got, np.asarray(want, np.float32).reshape(got.shape))
        for got, want in zip(unpacked, vectors.outputs, strict=True)
    )
    if not same:
        raise ExportError("the driver packs the streams otherwise than the build simulated "
                          "them", "report this as a bug")  # fmt: skip


def _host_agrees(driver: ModuleType, host: Json, vectors: Vectors) -> bool:
    """Whether the driver's host nodes make the accelerator's inputs and the design's
    outputs of the vectors that brainsmith's execution makes."""
    import numpy as np

    runner = driver.Host(host)
    try:
        before = [runner.before(sample) for sample in vectors.samples]
        after = [runner.after(np.asarray(out, np.float32)) for out in vectors.outputs]
    except Exception:  # an input the numpy version takes otherwise
        return False
    return all(
        np.array_equal(got, np.asarray(want, np.float32).reshape(got.shape))
        for got, want in zip([*before, *after], [*vectors.accelerated, *vectors.results],
                             strict=True)
    )  # fmt: skip


def driver_module() -> ModuleType:
    """The exported driver script (``files/driver.py``, which needs nothing of brainsmith) as
    a module: the export checks its packing and its host nodes with it."""
    from brainsmith.export.files import driver

    return driver


def _dtype_spec(dtype: Any) -> Json:
    """A stream element's data type as the driver reads it."""
    name = dtype.get_canonical_name()
    bits = int(dtype.bitwidth())
    if name == "BIPOLAR":
        return {"name": name, "kind": "bipolar", "bits": 1}
    if dtype.is_integer():
        return {"name": name, "kind": "int", "bits": bits, "signed": bool(dtype.signed()),
                "min": float(dtype.min()), "max": float(dtype.max())}  # fmt: skip
    if dtype.is_fixed_point():
        return {"name": name, "kind": "fixed", "bits": bits, "signed": True,
                "scale": float(dtype.scale_factor())}  # fmt: skip
    if name in ("FLOAT32", "FLOAT16"):
        return {"name": name, "kind": "float", "bits": bits}
    return {"name": name, "kind": "other", "bits": bits}


def _host_spec(design: Streams) -> Json:
    """The nodes of ``final_parent.onnx`` before and after the accelerator, with the
    constants they read; ``runs`` False (and ``why``) when one is not an operator the driver
    runs."""
    from brainsmith.hardware.board.streams import PARTITION
    from brainsmith.intake.inputs import sample_shape

    parent, model = design.parent, design.model
    if parent is None or not parent.get_nodes_by_op_type(PARTITION):
        source, sink = model.graph.input[0].name, model.graph.output[0].name
        return {"runs": True, "why": "", "exact": _exact(model, sink),
                "input": {"name": source, "shape": _shape(model, source)},
                "output": {"name": sink, "shape": _shape(model, sink)},
                "accelerator_input": source, "accelerator_output": sink,
                "accelerator_output_shape": _shape(model, sink),
                "before": [], "after": [], "initializers": {}}  # fmt: skip
    nodes = list(parent.graph.node)
    split = next(i for i, node in enumerate(nodes) if node.op_type == PARTITION)
    constants = {t.name: t for t in parent.graph.initializer}
    spec: dict[str, Any] = {"runs": True, "why": "", "initializers": {}}
    for side, chosen in (("before", nodes[:split]), ("after", nodes[split + 1 :])):
        spec[side] = []
        for node in chosen:
            _host_node(node, constants, spec, spec[side])
    partition = nodes[split]
    source, sink = parent.graph.input[0].name, parent.graph.output[0].name
    spec.update(
        exact=_exact(parent, sink),
        input={"name": source, "shape": _shape(parent, source),
               "sample_shape": list(sample_shape(parent, source))},
        output={"name": sink, "shape": _shape(parent, sink)},
        accelerator_input=partition.input[0], accelerator_output=partition.output[0],
        accelerator_output_shape=_shape(parent, partition.output[0]),
    )  # fmt: skip
    return spec


def _host_node(node: Any, constants: dict[str, Any], spec: Json, side: list[Json]) -> None:
    """``node`` of the host's graph into ``side`` with the constants it reads into
    ``spec["initializers"]``; ``spec`` marked as not run (``why``) when the driver cannot."""
    from onnx import helper, numpy_helper

    if node.op_type not in DRIVER_OPS or node.domain not in ("", "ai.onnx"):
        spec.update(runs=False, why=f"the host's node {node.name} ({node.op_type}) is not one "
                                    "the driver runs")  # fmt: skip
        return
    attrs = {a.name: _plain(helper.get_attribute_value(a)) for a in node.attribute
             if a.name in DRIVER_ATTRIBUTES}  # fmt: skip
    side.append({"op": node.op_type, "name": node.name, "inputs": list(node.input),
                 "outputs": list(node.output), "attrs": attrs})  # fmt: skip
    for name in node.input:
        if name in constants and name not in spec["initializers"]:
            array = numpy_helper.to_array(constants[name])
            spec["initializers"][name] = {
                "dtype": "int64" if array.dtype.kind in "iu" else "float32",
                "shape": list(array.shape), "values": array.reshape(-1).tolist()}  # fmt: skip


def _plain(value: Any) -> Any:
    """An ONNX attribute's value as JSON (ints and lists of ints stay; bytes become text)."""
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def _shape(model: Any, name: str) -> list[int]:
    return [int(d) if d else 1 for d in model.get_tensor_shape(name)]


def _exact(model: Any, name: str) -> bool:
    """Whether the design's output ``name`` is compared exactly (an integer data type), as
    ``brainsmith run --expected`` compares it."""
    return bool(model.get_tensor_datatype(name).is_integer())


def _write_driver(put: Writer, spec: Json, vectors: Vectors) -> None:
    """driver.py, driver.json and the vectors it runs without --input: the design's inputs
    and outputs, or the accelerator's when the driver does not run the host's nodes."""
    import io

    import numpy as np

    script = package_files("brainsmith.export").joinpath("files", "driver.py").read_text()
    put.text("driver.py", script, mode=0o755)
    put.text("driver.json", json.dumps(spec, indent=1) + "\n")
    host = spec["host"]
    if host["runs"]:
        inputs = [
            np.asarray(s, np.float32).reshape(host["input"]["shape"]) for s in vectors.samples
        ]
        outputs = [
            np.asarray(r, np.float32).reshape(host["output"]["shape"]) for r in vectors.results
        ]
    else:
        inputs = [
            np.asarray(a, np.float32).reshape(spec["in"]["shape"]) for a in vectors.accelerated
        ]
        outputs = [np.asarray(o, np.float32).reshape(spec["out"]["shape"]) for o in vectors.outputs]
    for name, arrays in (("input", inputs), ("output", outputs)):
        stacked = np.stack([a.reshape(_without_batch(a.shape)) for a in arrays])
        buffer = io.BytesIO()
        np.save(buffer, stacked, allow_pickle=False)
        put.bytes(f"vectors/{name}.npy", buffer.getvalue())


def _without_batch(shape: tuple[int, ...]) -> tuple[int, ...]:
    return shape[1:] if len(shape) > 1 and shape[0] == 1 else shape


def _manifest(
    design: Streams,
    shaped: BoardBuild,
    frames: int,
    changes: list[str],
    driver: Json,
    put: Writer,
) -> Json:
    """manifest.json: the board, the bitstream, the design, its streams, the simulation's
    changes, what the driver runs, every file's SHA-256."""
    record, made = shaped.record, shaped.made
    return {
        "top": "board_top", "board": shaped.board.name, "part": shaped.board.part,
        "design_hash": design.design_hash,
        "bitstream": {"file": shaped.bit_name, "sha256": record.get("sha256"),
                      "clock_mhz": made.clock_mhz, "clock_ns": round(Clock.from_mhz(made.clock_mhz).ns, 6),
                      "baud": made.baud, "clocks_per_bit": made.clocks_per_bit,
                      "fmax_mhz": record.get("fmax_mhz"), "status": record.get("status"),
                      "tools": record.get("tools"),
                      "netlist_checked": bool((record.get("netlist_check") or {}).get("passed"))},
        "constraints": constraints_name(shaped),
        "flash": flash_command(shaped),
        "streams": {"in0_V": {"bits": design.in_bits, "words_per_frame": design.in_words},
                    "out0_V": {"bits": design.out_bits, "words_per_frame": design.out_words}},
        "frames": frames,
        "simulation_changes": changes,
        "driver": {"runs_host_nodes": bool(driver["host"]["runs"]),
                   "why": driver["host"]["why"] or driver.get("refused", "")},
        "files": put.digests,
    }  # fmt: skip


def _screen(stage: str) -> None:
    """ExportError when what sim.sh compiles would reach the host when simulated (as every
    simulation here is screened), compiled as sim.sh compiles it (no defines)."""
    from brainsmith.hardware.rtlsim.screen import PreprocessError, UnsafeSource, screen
    from brainsmith.hardware.rtlsim.verilator import ToolchainError, find_toolchain

    with open(os.path.join(stage, "sim", "files.f")) as handle:
        listed = handle.read().split()
    paths = [os.path.join(stage, name) for name in listed]
    try:
        screen(paths, find_toolchain(), stage, dict(zip(paths, listed, strict=True)), defines=())
    except ToolchainError as exc:
        raise ExportError(f"the export's RTL cannot be checked: {exc}", "make setup") from None
    except (UnsafeSource, PreprocessError) as exc:
        raise ExportError(f"the build's RTL cannot be exported: {exc}",
                          "build the model again") from None  # fmt: skip


def _readme(design: Streams, shaped: BoardBuild, frames: int, driver: Json) -> str:
    from brainsmith.hardware.board.cell_models import PLL_MODELS

    board, made = shaped.board, shaped.made
    pll_file = PLL_MODELS[board.family]
    flash = flash_command(shaped)
    host = driver["host"]
    if driver.get("refused"):
        runs = f"It cannot run this design: {driver['refused']}."
    elif host["runs"]:
        steps = [n["op"] for n in host["before"]], [n["op"] for n in host["after"]]
        runs = ("It runs the host's nodes before the accelerator "
                f"({', '.join(steps[0]) or 'none'}) and after it ({', '.join(steps[1]) or 'none'}) "
                "in numpy, as `brainsmith run` does.")  # fmt: skip
    else:
        runs = (f"It runs the accelerator alone ({host['why']}): give `--input` at the "
                "accelerator's boundary with `--accelerator`.")  # fmt: skip
    fmax = min((shaped.record.get("fmax_mhz") or {}).values(), default=0.0)
    timing = (
        f"nextpnr reached {fmax:.1f} MHz: timing met."
        if shaped.record.get("met")
        else f"**Timing not met**: nextpnr reached {fmax:.1f} MHz, below the PLL's clock; the "
        "board may not compute what the simulation does."
    )
    return f"""# {board.name}: a brainsmith build's bitstream

Exported with `brainsmith export` from a build for the `{board.name}` ({board.part}); it needs
neither the build folder nor brainsmith. The accelerator runs at {made.clock_mhz:g} MHz (the
PLL from the board's {board.clock_mhz:g} MHz oscillator) behind brainsmith's host link, which
the host reaches over the board's USB UART at {made.baud:,} baud. {timing}

## Flash

Load the bitstream into the FPGA (lost at power off) with
[openFPGALoader](https://github.com/trabucayre/openFPGALoader), from this folder:

    {flash}

Add `-f` before the file to write the board's configuration flash instead (minutes).

## Run

    pip install numpy pyserial
    python3 driver.py --port /dev/ttyUSB0

runs the {frames} frames of `vectors/input.npy` on the board and compares the outputs with
`vectors/output.npy`, what the build's Python execution gives (PASS, or FAIL naming the first
difference); `--input x.npy --output y.npy` runs your inputs (one, or N on axis 0),
`--identify` says what the board holds. {runs} The board must answer IDENTIFY with this
design's hash, `{design.design_hash[:16]}`.

## Simulate

    ./sim.sh

Verilator 5 compiles `board_top` from `rtl/` as the bitstream was made from it, its PLL
modelled as passing the oscillator through (`sim/{pll_file}`), and sends the host link's
frames of the {frames} vectors over a bit-level UART at the board's {made.clocks_per_bit}
clocks per bit: every reply must be the expected one (`sim/expected.hex`). It prints PASS with
the accelerator's own cycle count, or FAIL and the first difference. `sim/rtl/` holds the
files Verilator reads changed (see `manifest.json`); synthesis reads `rtl/`.

## What is here

- `{shaped.bit_name}`: the bitstream (its SHA-256 in `manifest.json`).
- `{constraints_name(shaped)}`: the pins (and an ECP5's oscillator) nextpnr placed the top with.
- `rtl/`: the sources Yosys read for the bitstream, in its order (`rtl/files.f`, top
  `board_top`): the accelerator as a Lattice part reads it, brainsmith's host link
  (`host_link.sv`, `uart_rx.sv`, `uart_tx.sv`, `crc16.sv`) and `board_top.sv` (the PLL, the
  reset, the link and the accelerator). Byte for byte what Yosys read, but for the parameter
  files' folder: `data/` here. Run tools from this folder.
- `data/`: the layers' weights and thresholds (`$readmemh`).
- `driver.py`, `driver.json`, `vectors/`: the host's side.
- `sim.sh`, `sim/`: the simulation.
- `manifest.json`: the board, the bitstream's clock and baud, the design's hash, its streams
  and each file's SHA-256.
"""


__all__ = [
    "BoardBuild",
    "board_build",
    "driver_module",
    "driver_spec",
    "exported_text",
    "flash_command",
    "link_frames",
    "write_board",
]
