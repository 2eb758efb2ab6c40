"""The gate-level check (``brainsmith.hardware.board.gate_level``): the ECP5 cell models brainsmith
adds to Yosys' (DP16KD block RAM, MULT18X18D) compute what the RTL Yosys mapped onto them
computes, in every mode ``synth_ecp5`` uses; the shipped MLP's bitstream netlist answers as
its RTL, and a netlist with one LUT's function inverted is caught, naming the first
differing output word."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.support.farm import all_rtl_mlp, lattice_mlp
from tests.support.verilator import run_bench

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("synthesis")]

# Memories and products as FINN's RTL writes them, each next to what Yosys maps it to
DESIGNS = """
module rom9 (input clk, input [10:0] addr, output reg [8:0] q);  // x9 reads (weights)
  reg [8:0] mem [0:2047];
  initial for (int i = 0; i < 2048; i++) mem[i] = 9'((i * 37 + 11) % 512);
  always @(posedge clk) q <= mem[addr];
endmodule
module rom4 (input clk, input [11:0] addr, output reg [3:0] q);  // x4 reads
  reg [3:0] mem [0:4095];
  initial for (int i = 0; i < 4096; i++) mem[i] = 4'((i * 7 + i / 5) % 16);
  always @(posedge clk) q <= mem[addr];
endmodule
module sdp36 (input clk, input we, input [8:0] wa, input [35:0] wd, input [8:0] ra,
              output reg [35:0] q);  // the pseudo-dual-port x36 mode (the host link's buffers)
  reg [35:0] mem [0:511];
  always @(posedge clk) begin if (we) mem[wa] <= wd; q <= mem[ra]; end
endmodule
module tdp18 (input clk, input we, input [1:0] be, input [9:0] a, input [17:0] d,
              input [9:0] b, output reg [17:0] qa, output reg [17:0] qb);  // bytes, two ports
  reg [17:0] mem [0:1023];
  always @(posedge clk) begin
    if (we && be[0]) mem[a][8:0] <= d[8:0];
    if (we && be[1]) mem[a][17:9] <= d[17:9];
    qa <= mem[a];
  end
  always @(posedge clk) qb <= mem[b];
endmodule
module mul (input clk, input signed [7:0] a, input signed [9:0] b, input [11:0] c,
            input [15:0] e, output reg signed [17:0] p, output reg [27:0] u);
  always @(posedge clk) begin p <= a * b; u <= c * e; end
endmodule
"""

BENCH = """
module bench;
  logic clk = 0, we = 0;
  logic [1:0] be = 0;
  logic [11:0] addr = 0;
  logic [8:0] wa = 0, ra = 0;
  logic [9:0] a = 0, b = 0;
  logic [35:0] wd = 0;
  logic [17:0] d = 0;
  logic signed [7:0] x = 0;
  logic signed [9:0] y = 0;
  logic [11:0] c = 0;
  logic [15:0] e = 0;
  wire [8:0] r9 [2];
  wire [3:0] r4 [2];
  wire [35:0] r36 [2];
  wire [17:0] qa [2], qb [2], p [2];
  wire [27:0] u [2];
  rom9 rom9_rtl (.clk, .addr(addr[10:0]), .q(r9[0]));
  rom9_gates rom9_net (.clk, .addr(addr[10:0]), .q(r9[1]));
  rom4 rom4_rtl (.clk, .addr, .q(r4[0]));
  rom4_gates rom4_net (.clk, .addr, .q(r4[1]));
  sdp36 sdp_rtl (.clk, .we, .wa, .wd, .ra, .q(r36[0]));
  sdp36_gates sdp_net (.clk, .we, .wa, .wd, .ra, .q(r36[1]));
  tdp18 tdp_rtl (.clk, .we, .be, .a, .d, .b, .qa(qa[0]), .qb(qb[0]));
  tdp18_gates tdp_net (.clk, .we, .be, .a, .d, .b, .qa(qa[1]), .qb(qb[1]));
  mul mul_rtl (.clk, .a(x), .b(y), .c, .e, .p(p[0]), .u(u[0]));
  mul_gates mul_net (.clk, .a(x), .b(y), .c, .e, .p(p[1]), .u(u[1]));
  int differences = 0;
  initial begin
    for (int cycle = 0; cycle < 4000; cycle++) begin
      #1 clk = 1;
      #1 clk = 0;
      if (cycle > 1200 && {r9[0], r4[0], r36[0], qa[0], qb[0], p[0], u[0]} !==
                          {r9[1], r4[1], r36[1], qa[1], qb[1], p[1], u[1]}) begin
        differences++;
        if (differences < 5)
          $display("cycle %0d: rtl %h %h %h %h %h %h %h, netlist %h %h %h %h %h %h %h", cycle,
                   r9[0], r4[0], r36[0], qa[0], qb[0], p[0], u[0],
                   r9[1], r4[1], r36[1], qa[1], qb[1], p[1], u[1]);
      end
      addr = 12'($urandom);
      we = cycle < 1100 ? 1'b1 : 1'($urandom);
      be = cycle < 1100 ? 2'b11 : 2'($urandom);
      wa = cycle < 1100 ? 9'(cycle) : 9'($urandom);
      a = cycle < 1100 ? 10'(cycle) : 10'($urandom);
      ra = 9'($urandom);
      b = 10'($urandom);
      wd = {4'($urandom), $urandom};
      d = 18'($urandom);
      x = 8'($urandom);
      y = 10'($urandom);
      c = 12'($urandom);
      e = 16'($urandom);
    end
    $display("differences %0d", differences);
    $finish;
  end
endmodule
"""


def yosys_netlists(folder: Path, tops: tuple[str, ...]) -> dict[str, str]:
    """Each of ``tops`` of DESIGNS mapped by ``synth_ecp5``, renamed ``<top>_gates``, in one
    Yosys run (the sources read once, each top mapped from them as read): top -> its netlist."""
    from brainsmith.hardware.synthesis.yosys import RUN

    script = f"read_verilog -sv {folder}/designs.sv; design -save read"
    for top in tops:
        script += (f"; design -load read; synth_ecp5 -top {top}; rename {top} {top}_gates; "
                   f"write_verilog -noattr {folder}/{top}_gates.v")  # fmt: skip
    done = subprocess.run(
        [*RUN, "-q", "-p", script], capture_output=True, text=True, timeout=600, cwd=folder,
        env={**os.environ, "YOWASP_MOUNT": f"{folder}={folder}"},
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    return {top: (folder / f"{top}_gates.v").read_text() for top in tops}


def test_the_cell_models_compute_what_the_rtl_yosys_mapped_onto_them_computes(tmp_path):
    from brainsmith.hardware.board.cell_models import ecp5_cell_models, lattice_models

    (tmp_path / "designs.sv").write_text(DESIGNS)
    netlists = yosys_netlists(tmp_path, ("rom9", "rom4", "sdp36", "tdp18", "mul"))
    widths = {top: set(re.findall(r"\.DATA_WIDTH_[AB]\(32'd(\d+)\)", text))
              for top, text in netlists.items()}  # fmt: skip
    assert {"9"} <= widths["rom9"] and {"4"} <= widths["rom4"] and "36" in widths["sdp36"]
    assert "18" in widths["tdp18"]
    assert len(re.findall(r"^\s*MULT18X18D\b", netlists["mul"], re.M)) == 2
    (tmp_path / "cells.v").write_text(ecp5_cell_models())
    (tmp_path / "models.v").write_text(lattice_models())
    (tmp_path / "bench.sv").write_text(BENCH)
    sources = ["bench.sv", "designs.sv", *(f"{top}_gates.v" for top in netlists), "cells.v",
               "models.v"]  # fmt: skip
    output = run_bench(tmp_path, sources)
    assert "differences 0" in output, output[-3000:]


def test_the_mlps_bitstream_netlist_answers_as_its_rtl_at_gate_level(farm, capsys):
    from brainsmith.cli.build import print_summary

    folder = lattice_mlp(farm)
    report = json.loads((folder / "report.json").read_text())
    section = report["bitstream"]
    check = section["netlist_check"]
    assert check["ran"] and check["passed"], check
    assert check["frames"] == 4 and check["words"] > 1 and not check["first_difference"]
    assert check["bench_frames"] == 4 and check["bench_cycles"] > 4  # cycle for cycle too
    assert (folder / section["netlist"]).is_file()
    print_summary(report)
    said = "netlist: 4 frames at gate level (Verilator, ECP5 cell models) bit for bit equal"
    out = capsys.readouterr().out
    assert said in out
    assert f"the first 4 times back to back in the RTL's {check['bench_cycles']:,} cycles" in out
    # three paces side by side: the accelerator's, the design's own count's, the link's
    perf = report["performance"]
    assert perf["counted_fps"] == pytest.approx(perf["fps"], rel=0.02), perf
    assert 0 < section["link_fps"] == perf["link_fps"] < perf["fps"] / 10
    assert re.search(r"paces +the accelerator [\d,]+ fps \(nextpnr clock, \w+ cycles\) · counted "
                     r"by the design [\d,]+ fps \(the link's counter, simulated: 4 frames back to "
                     r"back in [\d,]+ cycles, the first alone in [\d,]+\) · through the link "
                     r"[\d,]+ fps \(UART [\d,]+ baud, two requests outstanding\)", out), out  # fmt: skip
    assert "<th>paces</th>" in (folder / "report.html").read_text()
    assert said.removeprefix("netlist: ") in (folder / "report.html").read_text()  # its card


def rebuilt_code_folders(folder: Path) -> dict[str, str]:
    """FINN's code folders of ``folder`` (``code_gen_ipgen_<layer>_<8 random characters>``)
    renamed as another build names them, every text file naming them rewritten."""
    renamed = {}
    for path in sorted((folder / "finn" / "build").glob("code_gen_*")):
        new = path.name[:-8] + "renamed0"
        path.rename(path.with_name(new))
        renamed[path.name] = new
    for path in folder.rglob("*"):
        if (
            path.is_file()
            and not path.is_symlink()
            and path.suffix in (".f", ".v", ".sv", ".onnx", ".json")
        ):
            data = path.read_bytes()
            changed = data
            for old, new in renamed.items():
                changed = changed.replace(old.encode(), new.encode())
            if changed != data:
                path.write_bytes(changed)
    return renamed


def test_a_passed_check_is_not_simulated_again_for_the_same_netlist_and_frames(farm, tmp_path):
    """A cached rebuild into another folder makes the same netlist: its check is the earlier
    verdict, kept in rtlsim's cache under the design's content, both simulators' sources (the
    folder's path and FINN's random code folder names taken out) and the frames sent."""
    import shutil

    from brainsmith.hardware.board.boards import board
    from brainsmith.hardware.board.gate_level import VERDICT, check_netlist
    from brainsmith.hardware.board.streams import streams
    from brainsmith.hardware.rtlsim.compile import cache_root

    folder = lattice_mlp(farm)
    section = json.loads((folder / "report.json").read_text())["bitstream"]
    copy = Path(shutil.copytree(folder, tmp_path / "again", symlinks=True))
    renamed = rebuilt_code_folders(copy)  # as a new build names them: another random suffix
    assert renamed, "no code folder of FINN's in the copy"
    first, again = (
        check_netlist(
            streams(str(where)),
            str(where / section["netlist"]),
            board(section["board"]),
            section["clocks_per_bit"],
        )
        for where in (folder, copy)
    )  # the build's own check may have left the first one's verdict
    assert first.passed and again.passed and again.cached, again
    assert (
        (again.frames, again.words)
        == (first.frames, first.words)
        == (4, section["netlist_check"]["words"])
    )
    verdicts = [name for name in os.listdir(cache_root()) if name.startswith(VERDICT.split("{")[0])]
    assert verdicts, "no verdict in rtlsim's cache"


def test_a_netlist_with_one_lut_inverted_is_caught_naming_the_first_differing_word(farm, tmp_path):
    from brainsmith.hardware.board.boards import board
    from brainsmith.hardware.board.gate_level import check_netlist
    from brainsmith.hardware.board.streams import streams

    folder = lattice_mlp(farm)
    section = json.loads((folder / "report.json").read_text())["bitstream"]
    text = (folder / section["netlist"]).read_text()
    # a LUT before the accumulator of a matrix layer's first PE (brainsmith's core on a Lattice
    # part): the outputs of that PE depend on it
    found = re.search(
        r"LUT4 #\(\s*\.INIT\(16'h([0-9a-f]{4})\)\s*\) \\(\S*genPE\[0\]\.Acc_TRELLIS_FF_Q\S*_LUT4_Z)\s",
        text,
    )
    assert found, "no LUT before a matrix layer's accumulator"
    inverted = f"{~int(found[1], 16) & 0xFFFF:04x}"
    mutated = tmp_path / "netlist.v"
    mutated.write_text(text[: found.start(1)] + inverted + text[found.end(1) :])
    check = check_netlist(streams(str(folder)), str(mutated), board(section["board"]),
                          section["clocks_per_bit"])  # fmt: skip
    assert not check.passed and not check.cached, f"inverting {found[2]} changed no output"
    assert re.fullmatch(
        r"frame \d+, output word \d+: the netlist gave 0x[0-9a-f]+, the RTL 0x[0-9a-f]+",
        check.first_difference,
    ), check.first_difference


def test_the_simulators_compiled_meanwhile_take_a_copy_of_the_netlist_and_go_when_stopped(
    tmp_path,
):
    """A board build compiles the gate-level check's simulators while nextpnr runs: the netlist
    is copied as soon as Yosys writes it (its run folder is published, moved, when the tools
    end), and stopping (a round thrown away, Ctrl-C) ends the thread and removes the copy."""
    from brainsmith.builder.bitstream import Precompiled
    from brainsmith.hardware.board.boards import board

    run = tmp_path / "run"
    run.mkdir()
    (run / "netlist.v").write_text("module board_top(input clk); endmodule\n")
    boards = Precompiled("the build has no whole design", board("ulx3s-85f", linked=True))
    boards.synthesised(str(run / "netlist.v"), 30)
    assert boards.netlist is not None
    copy, clocks_per_bit = Path(boards.netlist[0]), boards.netlist[1]
    run.rename(tmp_path / "published")
    assert copy.read_text() == "module board_top(input clk); endmodule\n"
    assert clocks_per_bit == 30 and copy.name == "netlist.v"
    boards.stop()
    assert not boards.thread.is_alive() and not copy.parent.exists()


def test_the_simulated_board_is_the_rtl_the_parts_tools_read(farm):
    """The RTL side of the gate-level check (and of ``run --simulate``) is what Yosys read
    for the bitstream, a Lattice part's fixes included: the jet tagger's netlist took 10,388
    cycles for the BENCH where FINN's RTL as written took 10,381 (its deep threshold
    memories read through one more register on a Lattice part), and the check refused a
    netlist that was right. An AMD part's build is simulated as FINN wrote it."""
    from brainsmith.hardware.board.simulated import board_design
    from brainsmith.hardware.board.streams import streams
    from brainsmith.hardware.rtlsim.compile import source_texts

    texts = dict(source_texts(board_design(streams(str(lattice_mlp(farm))))))
    assert "brainsmith's matrix-vector core for Lattice parts" in texts["mvu.sv"]
    assert "brainsmith's vector-vector core" in texts["mvu_vvu_8sx9_dsp58.sv"]
    amd = all_rtl_mlp(farm)
    texts = dict(source_texts(board_design(streams(str(amd)))))
    assert "for Lattice parts" not in texts["mvu.sv"]


@pytest.mark.wide  # the jet tagger to a ULX3S-85F bitstream: about 4 min
def test_a_network_with_deep_threshold_memories_passes_its_gate_level_check(tmp_path):
    """``brainsmith build jet_tagger.onnx --board ulx3s-85f --bitstream`` (its own vectors):
    its thresholds of up to 2,048 words are read through one more register on a Lattice
    part; the netlist answers as that RTL, cycle for cycle (it failed the check before)."""
    import brainsmith

    zoo = Path(__file__).resolve().parents[1] / "examples" / "models" / "zoo"
    built = brainsmith.build(
        str(zoo / "jet_tagger.onnx"), None, str(tmp_path / "out"),
        input_npy=str(zoo / "jet_tagger_input.npy"),
        expected_npy=str(zoo / "jet_tagger_expected.npy"),
        options={"board": "ulx3s-85f", "bitstream": True},
    )  # fmt: skip
    check = built.report["bitstream"]["netlist_check"]
    assert check["ran"] and check["passed"], check
    assert check["bench_frames"] == 4 and check["bench_cycles"] > 4
