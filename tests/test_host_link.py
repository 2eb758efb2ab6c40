"""The host link (brainsmith/hardware/board): link.py's frames in Python, and brainsmith_host_link in
Verilator with a bit-level UART on one side (tests/data/host_link/uart_tb.cpp, driven by
link.py over pipes) and an accelerator on the other: a stand-in that stalls at random, and the
shipped MLP's stitched all-RTL accelerator (slow)."""

from __future__ import annotations

import hashlib
import json
import random
import subprocess
import zlib
from importlib.resources import files as package_files
from pathlib import Path

import numpy as np
import pytest

from brainsmith.errors import BrainsmithError
from brainsmith.hardware.board import link
from brainsmith.hardware.board.link import Decoder, Identity, Link, LinkError, crc16, encode

DATA = Path(__file__).parent / "data" / "host_link"
RTL = package_files("brainsmith.hardware.board") / "rtl"
LINK_SOURCES = link.RTL  # the order every tool reads them in
CPB = 8  # clocks per bit in simulation
READ_CYCLES = 400_000  # a read gives up after this many cycles: beyond the link's timeout
STANDIN = {"CLKS_PER_BIT": CPB, "IN_BITS": 12, "OUT_BITS": 24, "IN_WORDS": 6, "OUT_WORDS": 3}
STANDIN_HASH = hashlib.sha256(b"standin").hexdigest()


def simulated(test):
    """A test that runs a Verilator simulation: slow (make test-fast runs no simulator), on
    the worker of the run's other simulations."""
    return pytest.mark.slow(pytest.mark.xdist_group("rtlsim")(test))


# ---- link.py ---------------------------------------------------------------------------------


def test_crc16_is_ccitt_false():
    assert crc16(b"123456789") == 0x29B1
    assert crc16(b"") == 0xFFFF


def test_a_frame_round_trips_through_the_decoder_with_garbage_before_it():
    frame = encode(link.INFER, 7, bytes([0xB5, 0, 1, 2]))
    assert frame[:5] == bytes([0xB5, 0x02, 7, 4, 0])
    decoder = Decoder()
    assert decoder.feed(b"\x00\x11" + frame[:6]) == []  # garbage, then half a frame
    assert decoder.feed(frame[6:] + frame) == [link.Frame(0x02, 7, bytes([0xB5, 0, 1, 2]))] * 2
    assert decoder.skipped == 2
    bad = bytearray(frame)
    bad[-3] ^= 1
    with pytest.raises(LinkError, match="bad CRC"):
        decoder.feed(bytes(bad) + frame)
    assert decoder.feed(b"") == [link.Frame(0x02, 7, bytes([0xB5, 0, 1, 2]))]  # resumed


def test_a_bad_crc_names_both_values():
    frame = bytearray(encode(link.IDENTIFY, 1))
    frame[-1] ^= 0xFF
    with pytest.raises(LinkError, match=r"expected 0x[0-9A-F]{4}, got 0x[0-9A-F]{4}") as caught:
        Decoder().feed(bytes(frame))
    assert isinstance(caught.value, BrainsmithError)


class Replay:
    """A transport that returns given bytes, then nothing (a timeout)."""

    def __init__(self, data: bytes) -> None:
        self.data, self.written = data, b""

    def write(self, data: bytes) -> None:
        self.written += data

    def read(self, size: int) -> bytes:
        got, self.data = self.data[:size], self.data[size:]
        return got


def test_a_short_read_and_an_error_reply_are_clear():
    frame = encode(link.RESULT, 3, b"\x01\x02\x03\x04\x05")
    with pytest.raises(LinkError, match="timed out waiting for a frame; got 6 bytes: b5 82"):
        link.read_frame(Replay(frame[:6]))
    after = Replay(frame + b"tail")
    assert link.read_frame(after).payload == b"\x01\x02\x03\x04\x05" and after.data == b"tail"
    error = link.read_frame(Replay(encode(link.ERROR, 3, b"\x01")))
    with pytest.raises(LinkError, match=r"INFER reply to request 3, got error 1 \(bad CRC\)"):
        link.expect(error, link.RESULT, 3)
    with pytest.raises(LinkError, match="INFER reply to request 4, got INFER reply to request 3"):
        link.expect(link.Frame(link.RESULT, 3, b""), link.RESULT, 4)


def test_words_and_bytes_round_trip():
    words = [0, 1, 0xABC, 0xFFF]
    data = link.words_to_bytes(words, 12)
    assert data == bytes([0, 0, 1, 0, 0xBC, 0x0A, 0xFF, 0x0F])
    assert link.bytes_to_words(data, 12) == words
    assert link.bytes_to_words(link.words_to_bytes([5, 2**31], 32), 32) == [5, 2**31]
    with pytest.raises(LinkError, match="does not fit 12 bits"):
        link.words_to_bytes([4096], 12)


def test_an_identity_parses_and_builds_requests():
    payload = (
        b"BSMH\x01" + (12).to_bytes(2, "little") + (24).to_bytes(2, "little")
        + (6).to_bytes(4, "little") + (3).to_bytes(4, "little") + (8).to_bytes(4, "little")
        + bytes.fromhex(STANDIN_HASH)
    )  # fmt: skip
    identity = Identity.parse(payload)
    assert identity == Identity(1, 12, 24, 6, 3, 8, STANDIN_HASH)
    assert len(identity.request(range(6))) == 12
    assert identity.result(bytes(range(9)) + (77).to_bytes(4, "little")) == (
        [0x020100, 0x050403, 0x080706], 77)  # fmt: skip
    with pytest.raises(LinkError, match="expected 6 input words, got 2"):
        identity.request([1, 2])
    with pytest.raises(LinkError, match="53-byte IDENTIFY reply"):
        Identity.parse(payload[:-1])


def test_bench_s_checksum_of_repeated_frames_is_zlib_s_at_any_count():
    rng = random.Random(3)
    words = [rng.randrange(1 << 24) for _ in range(3)]
    data = link.words_to_bytes(words, 24)
    for times in (*range(0, 20), 33, 1000):
        assert link.crc32_of_words(words, 24, times) == zlib.crc32(data * times), times
    assert link.crc32_combine(zlib.crc32(b"ab"), zlib.crc32(b"cde"), 3) == zlib.crc32(b"abcde")
    link.crc32_of_words(words, 24, 2**32 - 1)  # the largest N a BENCH runs: steps, not a loop


def test_a_board_speaking_another_protocol_version_is_named_as_such():
    """A bitstream of an earlier brainsmith (version 1: no BENCH) answers IDENTIFY; the
    host side says which versions differ, not that the board is silent."""
    payload = b"BSMH\x01" + bytes(16) + bytes.fromhex(STANDIN_HASH)
    with pytest.raises(link.OtherVersion, match="speaks protocol version 1, this brainsmith "
                       "version 2: its bitstream was made by another brainsmith"):  # fmt: skip
        Link(Replay(encode(link.IDENTITY, 1, payload))).identify()


# ---- the RTL in Verilator --------------------------------------------------------------------


@pytest.mark.parametrize(
    "params",
    [{}, {"IN_BITS": 32, "IN_WORDS": 64, "OUT_BITS": 16, "OUT_WORDS": 10}, {"CLKS_PER_BIT": 4}],
    ids=["defaults", "mlp", "fastest"],
)
def test_the_link_is_lint_clean(params):
    """Verilator's -Wall finds nothing (but the brainsmith_ prefix the file names lack)."""
    from brainsmith.hardware.rtlsim.verilator import find_toolchain

    toolchain = find_toolchain()
    sources = [str(RTL / name) for name in LINK_SOURCES]
    given = [f"-G{key}={value}" for key, value in params.items()]
    command = [toolchain.verilator, "--lint-only", "-Wall", "-Wno-DECLFILENAME", *given,
               "--top-module", "brainsmith_host_link", *sources]  # fmt: skip
    result = subprocess.run(command, capture_output=True, text=True, env=toolchain.env)
    assert result.returncode == 0 and "%Warning" not in result.stderr, result.stderr


def top_module(accelerator: str, params: dict[str, int], design_hash: str) -> str:
    """``tb_top``: the host link wired to ``accelerator``'s in0_V/out0_V."""
    given = ", ".join(f".{k}({v})" for k, v in params.items())
    in_bits, out_bits = params["IN_BITS"], params["OUT_BITS"]
    return f"""
module tb_top (input logic clk, input logic rst_n, input logic uart_rx, output logic uart_tx);
  logic [{in_bits - 1}:0] in_data;
  logic [{out_bits - 1}:0] out_data;
  logic in_valid, in_ready, out_valid, out_ready;
  brainsmith_host_link #({given}, .DESIGN_HASH(256'h{design_hash})) link (
    .clk, .rst_n, .uart_rx, .uart_tx,
    .m_tdata(in_data), .m_tvalid(in_valid), .m_tready(in_ready),
    .s_tdata(out_data), .s_tvalid(out_valid), .s_tready(out_ready));
  {accelerator} accelerator (
    .ap_clk(clk), .ap_rst_n(rst_n),
    .in0_V_TDATA(in_data), .in0_V_TVALID(in_valid), .in0_V_TREADY(in_ready),
    .out0_V_TDATA(out_data), .out0_V_TVALID(out_valid), .out0_V_TREADY(out_ready));
endmodule
"""


def verilate(sources: list[Path], top: str, folder: Path) -> Path:
    """The simulator of ``sources`` + ``top`` (tb_top.sv) + uart_tb.cpp, built in ``folder``
    with the project's Verilator and flags."""
    from brainsmith.hardware.rtlsim.compile import CXX_FLAGS, make_command
    from brainsmith.hardware.rtlsim.verilator import VERILATOR_FLAGS, find_toolchain

    toolchain = find_toolchain()
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "tb_top.sv").write_text(top)
    obj = folder / "obj"
    bench = package_files("brainsmith.hardware.board") / "sim"  # uart_bench.h
    command = [toolchain.verilator, *VERILATOR_FLAGS, "--top-module", "tb_top",
               "-CFLAGS", f"{CXX_FLAGS} -I{bench}", "--Mdir", str(obj), "-o", "sim",
               *map(str, sources), str(folder / "tb_top.sv"), str(DATA / "uart_tb.cpp")]  # fmt: skip
    for step in (command, make_command(str(obj))):
        result = subprocess.run(step, capture_output=True, text=True, env=toolchain.env,
                                timeout=900)  # fmt: skip
        assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return obj / "sim"


class Simulation:
    """A link.py transport onto the simulated UART: ``read`` runs the simulation until the
    bytes came or ``READ_CYCLES`` passed (a timeout)."""

    def __init__(self, executable: Path) -> None:
        self.process = subprocess.Popen(
            [str(executable), str(CPB)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        self.framing_errors = 0
        self.cycle = 0

    def command(self, line: str) -> str:
        assert self.process.stdin and self.process.stdout
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()
        return self.process.stdout.readline()

    def write(self, data: bytes) -> None:
        assert self.process.stdin
        self.process.stdin.write(f"W {data.hex()}\n")

    def read(self, size: int) -> bytes:
        data, cycle, errors = self.command(f"R {size} {READ_CYCLES}").split()
        self.cycle, self.framing_errors = int(cycle), int(errors)
        return b"" if data == "-" else bytes.fromhex(data)

    def idle(self, cycles: int) -> None:
        self.cycle = int(self.command(f"I {cycles}"))

    def close(self) -> None:
        self.process.communicate("Q\n", timeout=30)  # and closes the pipes


def standin_outputs(words: list[int]) -> list[int]:
    pairs = zip(words[::2], words[1::2], strict=True)
    return [(a * 3 + b * 5 + 7) % (1 << STANDIN["OUT_BITS"]) for a, b in pairs]


@pytest.fixture(scope="module")
def standin(tmp_path_factory) -> Path:
    sources = [Path(str(RTL / name)) for name in LINK_SOURCES] + [DATA / "standin.sv"]
    top = top_module("standin_accel", STANDIN, STANDIN_HASH)
    return verilate(sources, top, tmp_path_factory.mktemp("standin"))


@pytest.fixture
def sim(standin):
    simulation = Simulation(standin)
    yield simulation
    simulation.close()
    assert simulation.framing_errors == 0


def frames(count: int, seed: int = 1) -> list[list[int]]:
    rng = random.Random(seed)
    return [[rng.randrange(1 << STANDIN["IN_BITS"]) for _ in range(6)] for _ in range(count)]


@simulated
def test_identify_returns_the_hash_and_parameters(sim):
    identity = Link(sim).identify()
    assert identity == Identity(2, 12, 24, 6, 3, CPB, STANDIN_HASH)


@simulated
def test_infer_returns_each_frames_outputs_and_its_cycles(sim):
    host = Link(sim)
    inputs = frames(5)
    results = host.infer_many(inputs)  # two requests outstanding: sent while replies go out
    assert [outputs for outputs, _ in results] == [standin_outputs(f) for f in inputs]
    for _, cycles in results:  # 6 words in, 3 out, 5 cycles' latency each, random stalls
        assert 5 + 5 < cycles < 200
    assert host.infer(inputs[0])[0] == standin_outputs(inputs[0])


@simulated
def test_bench_runs_a_frame_n_times_and_counts_and_checksums_every_output_word(sim):
    host = Link(sim)
    frame = frames(1, seed=7)[0]
    wanted = standin_outputs(frame)
    cycles = []
    for count in (1, 2, 40):
        benched = host.bench(frame, count)
        assert benched.outputs == wanted and benched.frames == count
        assert benched.crc32 == link.crc32_of_words(wanted, STANDIN["OUT_BITS"], count)
        assert count * (6 + 5) < benched.cycles <= count * 200, benched  # 6 words in each
        cycles.append(benched.cycles)
    assert cycles == sorted(cycles)
    assert host.infer(frame)[0] == wanted  # INFER goes on after BENCH


@simulated
def test_a_bench_of_no_frames_or_of_the_wrong_length_is_an_error_and_the_link_goes_on(sim):
    host = Link(sim)
    frame = frames(1, seed=8)[0]
    host.identify()
    payload = (0).to_bytes(4, "little") + link.words_to_bytes(frame, STANDIN["IN_BITS"])
    seq = host.send(link.BENCH, payload)
    with pytest.raises(LinkError, match=r"error 6 \(a BENCH of no frames\)"):
        host.reply(link.BENCHED, seq)
    seq = host.send(link.BENCH, payload[:-1])
    with pytest.raises(LinkError, match=r"error 2 \(wrong length\)"):
        host.reply(link.BENCHED, seq)
    with pytest.raises(LinkError, match="1 to 4,294,967,295 frames, not 0"):
        host.bench(frame, 0)
    assert host.bench(frame, 3).outputs == standin_outputs(frame)


@simulated
def test_a_corrupted_byte_gets_a_crc_error_and_the_next_frame_works(sim):
    host = Link(sim)
    identity = host.identify()
    request = bytearray(encode(link.INFER, 9, identity.request(frames(1)[0])))
    request[8] ^= 0x10
    sim.write(bytes(request))
    with pytest.raises(LinkError, match=r"got error 1 \(bad CRC\) to request 9"):
        host.reply(link.RESULT, 9)
    words = frames(1, seed=2)[0]
    assert host.infer(words)[0] == standin_outputs(words)


@simulated
def test_a_truncated_frame_times_out_and_the_next_frame_works(sim):
    host = Link(sim)
    identity = host.identify()
    sim.write(encode(link.INFER, 9, identity.request(frames(1)[0]))[:-5])  # bytes lost
    began = sim.cycle
    with pytest.raises(LinkError, match=r"got error 4 \(byte timeout\) to request 9"):
        host.reply(link.RESULT, 9)
    assert sim.cycle - began >= link.TIMEOUT_BYTES * 10 * CPB
    words = frames(1, seed=3)[0]
    assert host.infer(words)[0] == standin_outputs(words)


@simulated
def test_bytes_before_a_sync_are_skipped(sim):
    host = Link(sim)
    sim.write(bytes([0x00, 0xFF, 0x12, 0x81, 0x5A]))
    assert host.identify().design_hash == STANDIN_HASH
    sim.write(b"noise without a sync byte")
    words = frames(1, seed=4)[0]
    assert host.infer(words)[0] == standin_outputs(words)


@simulated
def test_a_wrong_length_and_an_unknown_type_are_errors(sim):
    host = Link(sim)
    sim.write(encode(link.IDENTIFY, 5, b"x"))
    with pytest.raises(LinkError, match=r"got error 2 \(wrong length\) to request 5"):
        host.reply(link.IDENTITY, 5)
    sim.write(encode(link.INFER, 6, bytes(11)))
    with pytest.raises(LinkError, match=r"got error 2 \(wrong length\) to request 6"):
        host.reply(link.RESULT, 6)
    sim.write(encode(0x33, 7))
    with pytest.raises(LinkError, match=r"got error 3 \(unknown type\) to request 7"):
        host.reply(link.IDENTITY, 7)
    assert host.identify().in_words == 6


@simulated
def test_a_request_beyond_the_two_the_link_holds_is_refused_and_the_link_goes_on(sim):
    """The link answers IDENTIFY 1 (60 bytes) while it holds IDENTIFY 2 (7 bytes). An INFER
    right behind them finds both places taken and is dropped unanswered; one that starts
    before IDENTIFY 1's reply is out (41 bytes later) and ends after it is refused as busy."""
    host = Link(sim)
    identity = host.identify()
    for gap, answer in ((0, None), (41, r"error 5 \(busy\)")):
        request = encode(link.INFER, 3, identity.request(frames(1)[0]))
        sim.write(encode(link.IDENTIFY, 1) + encode(link.IDENTIFY, 2) + bytes(gap) + request)
        assert [Identity.parse(host.reply(link.IDENTITY, seq)) for seq in (1, 2)] == [identity] * 2
        with pytest.raises(LinkError, match=answer or "timed out waiting for a frame; got 0 "):
            host.reply(link.RESULT, 3)
        words = frames(1, seed=5)[0]
        assert host.infer(words)[0] == standin_outputs(words)


# ---- the shipped MLP's stitched accelerator (slow) --------------------------------------------


def stitched(build: Path, folder: Path) -> tuple[list[Path], dict[str, int], object]:
    """The sources of ``build``'s stitched accelerator as Verilator compiles them (packages
    first, parameter files by absolute path), the link's parameters for it and its model."""
    from finn_xsi.srcutil import order_pkg_first
    from qonnx.core.modelwrapper import ModelWrapper
    from qonnx.custom_op.registry import getCustomOp

    from brainsmith.hardware.rtlsim.layer_design import verilator_ready

    listed = (build / "finn" / "stitched_rtl" / "files.f").read_text().split()
    folder.mkdir(parents=True, exist_ok=True)
    sources = []
    for index, path in enumerate(order_pkg_first(listed)):
        copy = folder / f"{index:02d}_{Path(path).name}"
        copy.write_text(verilator_ready(path, Path(path).read_text()))
        sources.append(copy)
    model = ModelWrapper(str(build / "final.onnx"))
    first, last = getCustomOp(model.graph.node[0]), getCustomOp(model.graph.node[-1])
    params = {
        "CLKS_PER_BIT": CPB,
        "IN_BITS": first.get_instream_width(),
        "OUT_BITS": last.get_outstream_width(),
        "IN_WORDS": int(np.prod(first.get_folded_input_shape()[:-1])),
        "OUT_WORDS": int(np.prod(last.get_folded_output_shape()[:-1])),
    }
    return sources, params, model


@pytest.fixture(scope="module")
def mlp(farm, tmp_path_factory):
    """The link and the all-RTL MLP's stitched accelerator, compiled: (simulator, link
    parameters, design hash, model, build folder)."""
    from tests.support.farm import all_rtl_mlp

    build = all_rtl_mlp(farm)
    folder = tmp_path_factory.mktemp("mlp")
    sources, params, model = stitched(build, folder / "rtl")
    design_hash = hashlib.sha256((build / "finn/stitched_rtl/accelerator.sv").read_bytes())
    top = top_module("accelerator", params, design_hash.hexdigest())
    link_sources = [Path(str(RTL / name)) for name in LINK_SOURCES]
    executable = verilate([*sources, *link_sources], top, folder / "sim")
    return executable, params, design_hash.hexdigest(), model, build


@pytest.mark.wide  # make test: brainsmith run --simulate, the MLP behind the link (test_run_driver)
@simulated
def test_the_mlp_answers_through_the_link_as_in_python(mlp, tmp_path):
    from qonnx.custom_op.registry import getCustomOp

    from brainsmith.hardware.rtlsim.beats import pack_beats, unpack_beats
    from brainsmith.hardware.rtlsim.layers import layer_tensors
    from brainsmith.steps.fifos import random_frames

    executable, params, design_hash, model, build = mlp
    first, last = getCustomOp(model.graph.node[0]), getCustomOp(model.graph.node[-1])
    source, sink = model.graph.input[0].name, model.graph.output[0].name
    contexts = layer_tensors(model, random_frames(model, 3), str(tmp_path / "python"))
    requests = [
        pack_beats(
            np.asarray(context[source], np.float32).reshape(first.get_folded_input_shape()),
            first.get_input_datatype(),
            params["IN_BITS"],
        )
        for context in contexts
    ]
    simulation = Simulation(executable)
    try:
        host = Link(simulation)
        identity = host.identify()
        assert identity == Identity(
            link.VERSION, *(params[k] for k in ("IN_BITS", "OUT_BITS", "IN_WORDS", "OUT_WORDS")), CPB,
            design_hash,
        )  # fmt: skip
        results = host.infer_many(requests)
        benched = host.bench(requests[0], 64)
    finally:
        simulation.close()
    assert simulation.framing_errors == 0
    for (outputs, _), context in zip(results, contexts, strict=True):
        got = unpack_beats(
            outputs, last.get_output_datatype(), last.get_folded_output_shape(), params["OUT_BITS"]
        )
        assert np.array_equal(got.reshape(context[sink].shape), context[sink])
    first_outputs = results[0][0]
    assert benched.outputs == first_outputs
    assert benched.crc32 == link.crc32_of_words(first_outputs, params["OUT_BITS"], 64)
    sized = json.loads((build / "finn/report/fifo_sizing.json").read_text())
    assert benched.cycles < 64 * sized["latency_cycles"]  # the frames overlap
    for _, cycles in results:  # flat out, as the FIFO sizing's own simulation fed it
        assert sized["latency_cycles"] / 2 < cycles < 2 * sized["latency_cycles"]


def test_the_link_rtl_every_tool_reads_is_every_file_of_its_folder():
    """Yosys, Verilator and export read the link's RTL from one list (link.RTL): a file
    added to brainsmith/hardware/board/rtl/ and not listed would be left out by all three."""
    on_disk = sorted(entry.name for entry in RTL.iterdir() if entry.name.endswith(".sv"))
    assert sorted(link.RTL) == on_disk
    assert [entry.name for entry in link.rtl_files()] == list(link.RTL)
