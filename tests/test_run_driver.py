"""The board driver (brainsmith/hardware/board/driver.py, ``brainsmith run``): frames packed as the
simulation packs them (fast), and the shipped MLP's all-RTL build run on a simulated board
(the host link and the stitched accelerator in Verilator behind a pseudo-terminal, opened
with pyserial as a port is), bit for bit as ``BuildResult.run`` (slow: one compile)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from brainsmith.clock import Clock
from brainsmith.hardware.board.link import bytes_to_words, words_to_bytes
from brainsmith.hardware.board.streams import DriverError, Streams
from brainsmith.hardware.design import Design, Stream
from tests.support.ports import babble, trickle
from tests.support.processes import Ran, invoke

REPO = Path(__file__).resolve().parents[1]


def simulated(test):
    """A test that runs a Verilator simulation: slow, on the worker of the other ones."""
    return pytest.mark.slow(pytest.mark.xdist_group("rtlsim")(test))


class Layer:
    """The stream methods of a FINN layer that the driver asks of its first and last one."""

    def __init__(self, folded: tuple[int, ...], dtype, width: int) -> None:
        self.folded, self.dtype, self.width = folded, dtype, width

    def get_folded_input_shape(self, index: int = 0):
        return self.folded

    get_folded_output_shape = get_folded_input_shape

    def get_input_datatype(self, index: int = 0):
        return self.dtype

    get_output_datatype = get_input_datatype

    def get_instream_width(self, index: int = 0) -> int:
        return self.width

    get_outstream_width = get_instream_width

    def get_normal_output_shape(self, index: int = 0):
        return (1, int(np.prod(self.folded)))


def layer_streams(folded: tuple[int, ...], name: str) -> tuple[Streams, int]:
    from qonnx.core.datatype import DataType

    dtype = DataType[name]
    bits = 1 if name == "BIPOLAR" else dtype.bitwidth()
    width = (folded[-1] * bits + 7) // 8 * 8  # padded to whole bytes, as FINN's streams are
    layer = Layer(folded, dtype, width)
    words = int(np.prod(folded[:-1]))
    design = Design("accelerator", "", Clock(10.0), Stream(width, words), Stream(width, words))
    return Streams("", design, "0" * 64, layer, layer, None, None), width


def draw(name: str, shape: tuple[int, ...], seed: int) -> np.ndarray:
    from qonnx.core.datatype import DataType

    rng = np.random.default_rng(seed)
    if name == "BIPOLAR":
        return rng.choice([-1.0, 1.0], size=shape).astype(np.float32)
    if name == "FLOAT32":
        return rng.standard_normal(shape).astype(np.float32)
    dtype = DataType[name]
    return rng.integers(int(dtype.min()), int(dtype.max()) + 1, size=shape).astype(np.float32)


PACKED = [("INT4", (1, 16, 4)), ("UINT8", (1, 8, 3)), ("INT3", (1, 4, 5)),
          ("BIPOLAR", (1, 6, 11)), ("INT16", (1, 5, 2)), ("FLOAT32", (1, 64, 1))]  # fmt: skip


@pytest.mark.parametrize("name, folded", PACKED)
def test_a_frame_packs_as_finn_packs_it_and_round_trips(name, folded):
    """The words of a frame are FINN's stream words (element 0 in the lowest bits, padded to
    the TDATA width), their bytes FINN's packed bytes of each word, little-endian, and they
    come back as the frame."""
    from finn.util.data_packing import finnpy_to_packed_bytearray, npy_to_rtlsim_input

    built, width = layer_streams(folded, name)
    frame = draw(name, folded, seed=len(name))
    words = built.pack(frame)
    assert words == [int(w) for w in npy_to_rtlsim_input(frame, built.first.dtype, width)]
    data = words_to_bytes(words, width)
    finn = finnpy_to_packed_bytearray(frame, built.first.dtype, True, True)
    assert data == finn.tobytes()
    back = built.unpack(bytes_to_words(data, width))
    assert np.array_equal(back.reshape(folded), frame)


def test_a_value_outside_the_input_type_is_refused():
    built, _ = layer_streams((1, 4, 2), "INT4")
    with pytest.raises(DriverError, match="cannot be packed"):
        built.pack(np.full((1, 4, 2), 9.0, np.float32))


def test_a_missing_port_is_named_and_exits_2_at_once(tmp_path):
    """The module's one ``brainsmith run`` in a process of its own, start to exit."""
    began = time.monotonic()
    result = brainsmith("run", str(tmp_path), "--port", "/nonexistent")
    assert result.returncode == 2, result.stderr
    assert "/nonexistent: no such serial port" in result.stderr
    assert time.monotonic() - began < 30


def test_the_expected_outputs_are_compared_exactly_or_within_the_float_tolerance():
    from brainsmith.commands.run import compare

    got = np.arange(12, dtype=np.float32).reshape(3, 4)
    compare(got, got.copy(), True, "y.npy", "out")
    compare(got, got * (1 + 1e-6), False, "y.npy", "out")
    wrong = got.copy()
    wrong[1, 2] += 1
    with pytest.raises(DriverError, match=r"frame 1, output out\[2\]: got 6, expected 7") as e:
        compare(got, wrong, True, "y.npy", "out")
    assert e.value.exit_code == 1


def brainsmith(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "brainsmith", *args], capture_output=True, text=True,
        timeout=600, cwd=REPO,
    )  # fmt: skip


def in_process(*args: str) -> Ran:
    return invoke(*args, cwd=REPO)


# ---- the shipped MLP on a simulated board (slow) ------------------------------------------


@pytest.fixture(scope="module")
def mlp(hub, farm, tmp_path_factory):
    """(the all-RTL MLP's build, inputs, BuildResult.run's outputs for them)."""
    from brainsmith.builder.result import BuildResult
    from tests.support.farm import all_rtl_mlp

    build = all_rtl_mlp(farm)
    folder = tmp_path_factory.mktemp("vectors")
    shipped = REPO / "examples" / "models" / "mlp_4bit_input.npy"
    if shipped.is_file():
        x = np.load(shipped)
    else:
        x = np.random.default_rng(5).uniform(-1, 1, (6, 64)).astype(np.float32)
    np.save(folder / "x.npy", x)
    y = BuildResult.load(build).run(x)
    np.save(folder / "y.npy", y)
    return build, folder, y


@simulated
def test_run_on_a_simulated_board_gives_what_python_gives_bit_for_bit(mlp, tmp_path):
    build, vectors, y = mlp
    result = in_process(
        "run", str(build), "--simulate", "--input", str(vectors / "x.npy"),
        "--expected", str(vectors / "y.npy"), "--output", str(tmp_path / "got.npy"),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert np.array_equal(np.load(tmp_path / "got.npy"), y)
    assert "simulated board" in result.stdout and f"outputs equal to {vectors}" in result.stdout
    # the report's words: throughput the build's interval, latency one frame's own count
    line = next(x for x in result.stdout.splitlines() if x.startswith("accelerator at "))
    assert re.search(r"at [\d.]+ MHz \(the build's clock\): throughput [\d,]+ fps, frames "
                     r"streaming, one every [\d,]+ cycles \(the build's interval, "
                     r"(estimate|Verilator)\); latency [\d.,]+ µs, one frame, [\d,]+ cycles "
                     r"from its first input to its last output \(its own count\)$", line), line  # fmt: skip


CHIP = re.compile(
    r"on the chip: ([\d,]+) frames back to back in ([\d,]+) cycles \(its own counter\): "
    r"([\d,]+) fps at ([\d.]+) MHz \(the build's clock\); checksum 0x[0-9a-f]{8} of every "
    r"output word, equal to Python's"
)


def chip_figures(stdout: str) -> tuple[int, int, float]:
    """(frames, cycles, fps) of run --bench's line."""
    found = CHIP.search(stdout)
    assert found, stdout
    frames, cycles, fps = (float(x.replace(",", "")) for x in found.groups()[:3])
    return int(frames), int(cycles), fps


@simulated
def test_bench_counts_frames_on_the_chip_at_the_pace_the_build_streams_them(mlp):
    """run --simulate --bench 3000: the design's own counter over 3,000 frames back to back
    gives the pace the build's pipelined interval says, within 1 %, and its checksum of all
    3,000 frames' outputs is Python's. (They take longer than the simulated board runs on
    after the line's last byte: it runs while a request has no reply.)"""
    build, _, _ = mlp
    result = in_process("run", str(build), "--simulate", "--bench", "3000")
    assert result.returncode == 0, result.stderr
    frames, cycles, fps = chip_figures(result.stdout)
    interval = re.search(r"one every ([\d,]+) cycles", result.stdout)
    assert interval, result.stdout
    assert frames == 3000 and cycles / frames == pytest.approx(
        float(interval.group(1).replace(",", "")), rel=0.01
    )
    clock = float(CHIP.search(result.stdout).group(4))
    assert fps == pytest.approx(frames * clock * 1e6 / cycles, abs=1)


@simulated
def test_a_bench_whose_checksum_is_not_pythons_fails_naming_both(mlp, farm, tmp_path):
    """A copy whose final.onnx (what Python runs) no longer computes what its unchanged
    accelerator does: --bench's checksum differs from Python's, and the run fails with 1."""
    from qonnx.core.modelwrapper import ModelWrapper

    from brainsmith.builder.result import BuildResult

    build, _, _ = mlp
    copy = Path(farm.copy(BuildResult.load(build), tmp_path / "copy").output_dir)
    model = ModelWrapper(str(copy / "final.onnx"))
    node = model.get_nodes_by_op_type("Thresholding_rtl")[0]
    model.set_initializer(node.input[1], model.get_initializer(node.input[1]) + 1000)
    model.save(str(copy / "final.onnx"))
    result = in_process("run", str(copy), "--simulate", "--bench", "10")
    assert result.returncode == 1, result.stderr
    assert re.search(r"BENCH of 10 frames: the (checksum differs|last frame's outputs differ) from "
                     r"Python's execution of the frame \(CRC-32 0x[0-9a-f]{8}, expected "
                     r"0x[0-9a-f]{8}\)", result.stderr), result.stderr  # fmt: skip
    assert "on the chip" not in result.stdout


@simulated
def test_a_conv_net_with_plugin_layers_runs_on_a_simulated_board_as_torch_computed_it(farm):
    """The shipped padded conv net, all RTL: its pooling layers are brainsmith's (a plugin's
    layer type, loaded before the driver reads the design), its inputs and torch's outputs the
    shipped vectors, exactly."""
    from tests.support.farm import all_rtl_conv

    models = REPO / "examples" / "models"
    result = in_process(
        "run", str(all_rtl_conv(farm)), "--simulate", "--input", str(models / "conv_pad_input.npy"),
        "--expected", str(models / "conv_pad_expected.npy"), "--bench", "50",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "8 frames in" in result.stdout and "outputs equal to" in result.stdout
    frames, cycles, _ = chip_figures(result.stdout)  # its checksum equal to Python's
    interval = re.search(r"one every ([\d,]+) cycles", result.stdout)
    assert interval, result.stdout  # the pace the build's interval says, within 1 %
    assert frames == 50 and cycles / frames == pytest.approx(
        float(interval.group(1).replace(",", "")), rel=0.01
    )


@simulated
def test_a_wrong_expected_output_names_the_first_frame_and_output_that_differ(mlp, tmp_path):
    build, vectors, y = mlp
    wrong = y.copy()
    wrong[1, 3] += 1
    np.save(tmp_path / "wrong.npy", wrong)
    result = in_process(
        "run", str(build), "--simulate", "--input", str(vectors / "x.npy"),
        "--expected", str(tmp_path / "wrong.npy"),
    )  # fmt: skip
    assert result.returncode == 1, result.stderr
    assert "error: frame 1, output global_out[3]: got" in result.stderr


@simulated
def test_a_board_holding_another_design_is_refused_by_identify(mlp, farm, tmp_path):
    """The simulated board holds the MLP; a copy whose accelerator differs in one byte has
    another design hash, and the driver stops at IDENTIFY."""
    from brainsmith.builder.result import BuildResult
    from brainsmith.hardware.board.driver import Board
    from brainsmith.hardware.board.simulated import SimulatedBoard

    build, vectors, _ = mlp
    copy = Path(farm.copy(BuildResult.load(build), tmp_path / "copy").output_dir)
    accelerator = copy / "finn" / "stitched_rtl" / "accelerator.sv"
    text = accelerator.read_text()
    accelerator.write_text(text.replace("// Generated", "// generated", 1))
    simulation = SimulatedBoard(str(build))
    with simulation as port:
        with pytest.raises(DriverError, match="the board holds another design") as caught:
            Board(str(copy), port, timeout=30, simulated=True)
        assert caught.value.reason.startswith(f"{port}: the board holds another design (hash ")
        assert caught.value.reason.endswith(f": brainsmith flash {copy}")
        result, x = BuildResult.load(build), np.load(vectors / "x.npy")[:2]
        assert np.array_equal(result.run(x, device=port), result.run(x))  # the board goes on
    assert simulation.process is not None and simulation.process.poll() is not None  # killed
    shutil.rmtree(copy)


@simulated
@pytest.mark.parametrize("talk", [babble, trickle], ids=["babble", "trickle"])
def test_a_board_that_babbles_or_trickles_fails_at_the_exchange_s_deadline(mlp, lying_port, talk):
    from brainsmith.hardware.board.driver import EXCHANGE_READS, Board

    build, _, _ = mlp
    port = lying_port(talk)
    with pytest.raises(DriverError, match=f"{port}: IDENTIFY: no whole frame within") as caught:
        Board(str(build), port, timeout=1.0)  # reads never time out: the deadline ends it
    assert f"within {EXCHANGE_READS * 1.0:g} s" in caught.value.reason
    assert caught.value.exit_code == 1


@simulated
def test_a_board_that_does_not_answer_is_a_timeout_naming_the_port_not_a_hang(mlp):
    import os

    from brainsmith.hardware.board.driver import Board

    build, _, _ = mlp
    master, slave = os.openpty()  # nobody on the other side
    try:
        began = time.monotonic()
        port = os.ttyname(slave)
        with pytest.raises(DriverError, match=f"{port}: IDENTIFY: timed out waiting") as caught:
            Board(str(build), port, timeout=0.5)
        assert caught.value.exit_code == 1 and time.monotonic() - began < 30
    finally:
        os.close(master)
        os.close(slave)


def test_the_interval_a_build_folder_gives_is_a_finite_count_and_a_known_source():
    """report.json is the build folder's word, untrusted: the pipelined interval the build
    describes its design with (and run prints) is a positive finite number, and its source
    one of brainsmith's words, never the report's text."""
    from brainsmith.hardware.board.description import interval_of

    forged = {"cycles_per_frame": 80, "cycles_source": "\x1b[2J\x1b[31mrm -rf"}
    assert interval_of(forged) == (80.0, "estimate")
    assert interval_of({"max_cycles": float("nan")}) is None
    assert interval_of({"cycles_per_frame": -3, "max_cycles": "many"}) is None
    assert interval_of("not a table") is None
    assert interval_of({"cycles_per_frame": 2048, "cycles_source": "Verilator"}) == (
        2048.0,
        "Verilator",
    )


def test_the_link_s_rate_is_the_build_s_own_not_the_fastest_board_s():
    """A simulated run of a GateMateA1-EVB build (its link at 115,200 baud) said what the
    link "would carry at 3,000,000 baud", a rate its board's UART does not take: the last
    line gives the build's own rate, and what it carries as the driver sends (two
    requests outstanding)."""
    from brainsmith.cli.run import summary
    from brainsmith.commands.run import RunOutcome
    from brainsmith.hardware.board.driver import RunFigures

    figures = RunFigures(frames=8, seconds=0.04, cycles=[2383] * 8, bytes_per_frame=294,
                         in_bytes=263, clock_mhz=45.0, clock="the bitstream's PLL",
                         simulated=True, port="/dev/pts/0", baud=115_200)  # fmt: skip
    outcome = RunOutcome(figures, np.zeros((8, 1)), "7b" * 32, 8, "")
    last = summary(outcome)[-1]
    assert last.startswith("at 115,200 baud the link carries 44 frames/s end to end, two "
                           "requests outstanding"), last  # fmt: skip
    assert "3,000,000" not in " ".join(summary(outcome))
