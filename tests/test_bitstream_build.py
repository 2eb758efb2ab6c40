"""``brainsmith build MODEL --board ulx3s-85f --bitstream``: a Lattice board as the build's
board (FINN folding for a stand-in AMD part, every layer RTL) and the board's bitstream made
after the steps, its figures leading the report; run for real on the shipped MLP (one build
a test run, its bitstream cached with the run's other bitstreams), and the errors that stop
such a build before it begins."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest

from tests.support.farm import LATTICE_MLP_CLOCK_NS, LATTICE_MLP_OPTIONS, REPO, lattice_mlp
from tests.support.processes import Ran, invoke

MLP = REPO / "examples" / "models" / "mlp_4bit.onnx"


def build_command(tmp_path: Path, *arguments: str, model: Path = MLP) -> Ran:
    return invoke("build", str(model), "-o", str(tmp_path / "out"), *arguments, cwd=REPO)


def test_an_unknown_board_lists_finns_boards_and_the_lattice_ones(tmp_path):
    done = build_command(tmp_path, "--board", "ulx3s-65f")
    assert done.returncode == 2, done.stderr
    assert (
        "Pynq-Z1" in done.stderr
        and "or an ECP5, Gowin, iCE40 or GateMate board: ulx3s-12f" in done.stderr
    )
    assert "ulx3s-85f" in done.stderr and not (tmp_path / "out").exists()


@pytest.mark.parametrize("board", [[], ["--board", "Pynq-Z1"]])
def test_a_bitstream_without_a_lattice_board_is_refused_naming_the_boards(tmp_path, board):
    done = build_command(tmp_path, *board, "--bitstream")
    assert done.returncode == 2, done.stderr
    assert "build.bitstream needs an ECP5, Gowin, iCE40 or GateMate board" in done.stderr
    assert "ulx3s-85f" in done.stderr and not (tmp_path / "out").exists()
    assert "orangecrab" not in done.stderr  # no host link reaches it


def test_a_bitstream_for_a_board_without_a_uart_is_refused_before_the_build(tmp_path):
    done = build_command(tmp_path, "--board", "OrangeCrab-r0.2-85f", "--bitstream")
    assert done.returncode == 2, done.stderr
    assert "has no USB UART" in done.stderr and "ulx3s-85f" in done.stderr
    assert (
        "try: use a board with one:" in done.stderr
        and "orangecrab" not in done.stderr.split("try:")[1]
    )
    assert not (tmp_path / "out").exists()


def test_a_lattice_board_beside_an_amd_part_is_refused(tmp_path):
    done = build_command(tmp_path, "--board", "ulx3s-85f", "--part", "xc7z020clg400-1")
    assert done.returncode == 2, done.stderr
    assert "the board ulx3s-85f and the part xc7z020clg400-1 are both set" in done.stderr
    assert "drop --part" in done.stderr


def test_a_blueprints_lattice_board_folds_for_the_stand_in_with_every_layer_rtl(tmp_path):
    from brainsmith.planning.lattice import STAND_IN_PART, finn_target
    from brainsmith.planning.shaping import shape_plan

    blueprint = tmp_path / "lattice.yaml"
    blueprint.write_text(
        "name: lattice\nextends: brainsmith:base\nhw_compiler: {prefer: hls}\n"
        "build: {fpga_part: null, board: ULX3S-85F, bitstream: true}\n"
    )
    plan = shape_plan(str(blueprint))
    assert (plan.build.board, plan.build.bitstream, plan.prefer) == ("ulx3s-85f", True, "rtl")
    assert finn_target(plan.build) == (STAND_IN_PART, None)
    assert plan.blueprint["hw_compiler"]["prefer"] == "rtl"
    assert any("prefer: hls became rtl" in note for note in plan.notes)
    assert any(
        f"FINN made the layers for {STAND_IN_PART}" in n
        and "estimates are for the stand-in (LUT6)" in n
        and "nextpnr's" in n
        for n in plan.notes
    )


@pytest.mark.parametrize(
    ("blueprint", "options", "mhz"),
    [
        (None, {"board": "ulx3s-85f"}, 80.0),  # no clock anywhere: the family's at grade 6
        ("mlp.yaml", {"board": "ulx3s-85f"}, 80.0),  # a blueprint without one alike
        ("mlp.yaml", {"board": "ecp5-5g-evn"}, None),  # a grade-8 part: its own
        (None, {"board": "ulx3s-85f", "clock_ns": 10.0}, 100.0),  # the caller's clock stays
    ],
)
def test_a_board_build_with_no_clock_asks_for_what_its_speed_grade_reaches(blueprint, options, mhz):
    """Neither blueprint nor caller names a clock: a board build asks for the clock its
    family reaches at the part's speed grade (measured, with room to spare), not FINN's 200
    MHz, and a note says so; a clock given is kept. An AMD part runs at FINN's 5 ns."""
    from brainsmith.builder.lattice import board_clock
    from brainsmith.hardware.place_route.ecp5 import CLOCK_MHZ
    from brainsmith.planning.shaping import shape_plan

    source = str(REPO / "blueprints" / blueprint) if blueprint else None
    plan = board_clock(shape_plan(source, options=options))
    said = [note for note in plan.notes if note.startswith("clock: ")]
    if "clock_ns" in options:
        assert plan.build.clock_ns == options["clock_ns"] and not said
        return
    grade = 8 if options["board"] == "ecp5-5g-evn" else 6
    mhz = mhz or CLOCK_MHZ[grade]
    assert plan.build.clock_ns == pytest.approx(1000 / mhz, abs=1e-3)
    assert plan.blueprint["build"]["clock_ns"] == plan.build.clock_ns  # as report.json records
    assert len(said) == 1 and said[0].startswith(
        f"clock: {mhz:.1f} MHz, brainsmith's default for ECP5 speed grade {grade}"
    )
    assert "the slowest board build measured" in said[0] and "--clock-ns" in said[0]
    amd = board_clock(shape_plan(source, options={"fpga_part": "xczu7ev-ffvc1156-2-e"}))
    assert amd.build.clock_ns is None and amd.build.period_ns == 5.0
    assert not [note for note in amd.notes if note.startswith("clock: ")]
    nexus = board_clock(shape_plan(source, options={"fpga_part": "LIFCL-40-9BG400C"}))
    assert nexus.build.period_ns == 5.0 and not nexus.clock_chosen  # none measured: FINN's
    (unmeasured,) = [note for note in nexus.notes if note.startswith("clock: ")]
    assert unmeasured.startswith("clock: 200.0 MHz, FINN's default: brainsmith keeps no measured")


def test_the_ecp5_family_has_a_clock_for_every_speed_grade_its_parts_have():
    from brainsmith.hardware.place_route.ecp5 import ECP5
    from brainsmith.hardware.place_route.parts import SPEEDS

    assert set(ECP5.clock_mhz) == set(SPEEDS)
    assert all(50.0 <= mhz <= 200.0 for mhz in ECP5.clock_mhz.values())


def test_a_default_clock_is_the_slowest_board_build_measured_less_the_refold_margin():
    """The shipped MLP folded for 1,000,000 fps asked 90 MHz (the grade-6 default then) of a
    ULX3S-85F and reached 85.9 MHz, so the build was folded again and placed twice. Each
    default is now the slowest Fmax measured on a board at its grade (scaled from grade 6
    where no board was placed), less the margin a refold takes, rounded down to 5 MHz: below
    every board build measured, those of benchmarks/results too."""
    from brainsmith.builder.refold import MARGIN
    from brainsmith.hardware.place_route import default_clocks
    from brainsmith.hardware.place_route.ecp5 import ECP5

    table = default_clocks.DEFAULTS["ECP5"]
    assert (
        ECP5.clock_mhz == default_clocks.clock_mhz("ECP5") == {g: d.mhz for g, d in table.items()}
    )
    assert default_clocks.MARGIN == MARGIN
    for grade, default in table.items():
        reach = default.fmax_mhz * default.scale
        assert reach * (1 - MARGIN) - 5 < default.mhz <= reach * (1 - MARGIN), grade
        assert default.mhz % 5 == 0 and default.measured in default.why
    assert table[6].fmax_mhz == 85.9 and ECP5.clock_mhz[6] * (1 + MARGIN) < 85.9
    assert ECP5.clock_mhz[6] < ECP5.clock_mhz[7] < ECP5.clock_mhz[8]
    results = REPO / "benchmarks" / "results"
    boards = [min(row["fmax_mhz"], default=0.0) if isinstance(row["fmax_mhz"], dict)
              else row["fmax_mhz"] for row in (
        *json.loads((results / "bitstream.json").read_text())["networks"].values(),
        *json.loads((results / "board_plain.json").read_text())["runs"].values(),
    )]  # fmt: skip
    assert boards and min(boards) >= table[6].fmax_mhz
    assert default_clocks.default_clock("Nexus", 9) is None  # FINN's 5 ns: none measured


def bit_logs(folder: Path) -> dict[Path, int]:
    return {log: log.stat().st_mtime_ns for log in (folder / "bitstream").rglob("*.log")}


@pytest.mark.slow
@pytest.mark.xdist_group("synthesis")
def test_the_mlp_is_built_into_a_ulx3s_85f_bitstream_with_fps_at_the_clock_reached(farm, capsys):
    from brainsmith.cli.build import print_summary
    from brainsmith.report.measured import unchecked

    folder = lattice_mlp(farm)
    report = json.loads((folder / "report.json").read_text())
    section = report["bitstream"]
    bit = folder / section["bitstream"]
    assert section["bitstream"] == "bitstream/ulx3s-85f.bit" and bit.is_file()
    assert hashlib.sha256(bit.read_bytes()).hexdigest() == section["sha256"]
    # a run leaves nextpnr's log; a result from the bitstream cache has none to leave
    assert (folder / "bitstream" / "run" / "nextpnr.log").is_file() != section["cached"]
    assert report["fpga_part"] == section["part"] == "LFE5U-85F-6BG381C"
    assert report["board"] == section["board"] == "ulx3s-85f"
    assert section["clock_mhz"] == 1000 / LATTICE_MLP_CLOCK_NS and section["fmax_mhz"]
    assert set(section["seconds"]) >= {"synth", "place_route", "pack"}
    assert set(section["tools"]) == {"yosys", "nextpnr", "ecppack"}
    assert section["status"] == ("timing met" if section["met"] else "timing not met")
    assert section["resources"]["TRELLIS_COMB"]["used"] > 1000
    assert all(0 <= r["used"] <= r["available"] for r in section["resources"].values())
    assert section["in_words"] > 1 and section["baud"] == 3_000_000
    assert any("FINN made the layers for xc7z020clg400-1" in n for n in report["notes"])
    costed = "the folding is costed on LFE5U-85F-6BG381C (83,640 LUT4, 83,640 FF, 156 MULT18"
    assert any(n.startswith(costed) for n in report["notes"]), report["notes"]
    folding = json.loads((folder / "finn" / "report" / "folding.json").read_text())
    assert folding["part"] == "LFE5U-85F-6BG381C" and "LUT" not in folding["totals"]
    path = section["critical_path"]  # the slowest clock's, its ends named by layer
    layers = {layer["name"] for layer in report["layers"]} | {"host link", "board top"}
    assert path["start"] in layers and path["end"] in layers, path
    assert 1000 / path["delay_ns"] == pytest.approx(min(section["fmax_mhz"].values()), rel=1e-3)

    perf = report["performance"]
    fmax = min(section["fmax_mhz"].values())
    clock = section["clock_mhz"] if section["met"] else min(section["clock_mhz"], fmax)
    assert list(perf)[:2] == ["fps", "fps_source"] and perf["clock_mhz"] == clock
    assert perf["cycles_source"] == "Verilator"  # the FIFO sizing simulated the design
    assert perf["fps"] == pytest.approx(clock * 1e6 / perf["cycles_per_frame"], rel=1e-3)
    assert perf["fps_source"] == "nextpnr clock, Verilator cycles"
    assert unchecked(report) is None  # nextpnr checked the clock and counted the resources

    print_summary(report)
    screen = capsys.readouterr().out.splitlines()
    throughput = next(i for i, line in enumerate(screen) if "throughput" in line)
    assert f"fps at {clock:.1f} MHz (nextpnr clock, Verilator cycles)" in screen[throughput]
    asked = f"fps at the {1000 / LATTICE_MLP_CLOCK_NS:.1f} MHz asked (FINN's estimate"
    assert screen[throughput + 2].startswith("  paces       the accelerator ")  # three side by side
    assert screen[throughput + 3].startswith("  estimated") and asked in screen[throughput + 3]
    assert any("bitstream/ulx3s-85f.bit for ulx3s-85f" in line for line in screen)
    assert any(
        line.strip().startswith("critical path ") and path["start"] in line for line in screen
    )
    if not section["met"]:  # said in the first lines
        assert any("timing not met" in line for line in screen[:4])
    page = (folder / "report.html").read_text()
    assert "nextpnr clock, Verilator cycles" in page and "clock constraint" in page
    print(json.dumps({"bitstream": section, "performance": perf}))


def outside_details(page: str) -> str:
    """report.html without its details section (FINN's estimates for the stand-in part)."""
    before, _, rest = page.partition("<details class='stand-in'>")
    return before + rest.partition("</details>")[2]


def clocks_said(text: str) -> list[str]:
    """Every clock frequency ``text`` gives, as written ("125.0")."""
    return re.findall(r"(\d[\d,.]*) ?MHz", text)


@pytest.mark.slow
@pytest.mark.xdist_group("synthesis")
def test_a_board_builds_page_shows_the_parts_own_resources_and_a_bitstream_card(farm, capsys):
    """report.html of ``brainsmith build MODEL --board ulx3s-85f --bitstream``: the first
    screen's meters, the summary's resources, the layer table and the charts are the ECP5
    part's own LUT4, FF, MULT18 and EBR (nextpnr's counts of the bitstream; per layer the
    family's fitted models), FINN's LUT6 estimates for the stand-in only in a details section;
    a card gives the Fmax, the clock constraint, the critical path by layer, each stage's
    seconds and the gate-level verdict; clocks are given to 0.1 MHz."""
    from qonnx.core.modelwrapper import ModelWrapper
    from qonnx.custom_op.registry import getCustomOp

    from brainsmith.builder.result import BuildResult
    from brainsmith.cli.build import print_summary
    from brainsmith.clock import mhz_text
    from brainsmith.frameworks.finn.rtl_costs import family_estimate
    from brainsmith.hardware.place_route.ecp5 import ECP5
    from brainsmith.report.text import number

    folder = lattice_mlp(farm)
    report = json.loads((folder / "report.json").read_text())
    section, family = report["bitstream"], report["family_resources"]
    assert family["part"] == "LFE5U-85F-6BG381C" and family["stand_in"] == "xc7z020clg400-1"
    assert family["resources"] == ["LUT4", "FF", "MULT18", "EBR"]
    assert family["available"] == {"LUT4": 83_640, "FF": 83_640, "MULT18": 156, "EBR": 208}
    cells = {"LUT4": "TRELLIS_COMB", "FF": "TRELLIS_FF", "MULT18": "MULT18X18D", "EBR": "DP16KD"}
    placed = {key: section["resources"][cell]["used"] for key, cell in cells.items()}
    assert {key: c["used"] for key, c in family["placed"].items()} == placed
    model = ModelWrapper(str(folder / "final.onnx"))
    nodes = {node.name: node for node in model.graph.node}
    names = [layer["name"] for layer in report["layers"]]
    assert list(family["layers"]) == names and not family["incomplete"]
    for name in names:  # each layer's figures are the ECP5 models' of the built layer
        assert family["layers"][name] == family_estimate(
            getCustomOp(nodes[name]), ECP5.cost_models, model
        ), name
    assert family["totals"]["MULT18"] == sum(f["MULT18"] for f in family["layers"].values()) > 0

    page = (folder / "report.html").read_text()
    shown = outside_details(page)
    card = page.split("<div class='verdict bitstream'>", 1)[1].split("</table></div>", 1)[0]
    first = page.split("<div class='verdict'>", 1)[1].split("<div class='verdict bitstream'>")[0]
    for key in cells:  # nextpnr's counts on the first screen, as a share of the part
        assert f"<b>{key}</b>" in first and f"{placed[key]:,} of " in first, key
    for finns in ("BRAM_18K", "URAM", "<b>LUT</b>", "<b>DSP</b>"):  # the stand-in's figures
        assert finns not in shown, finns
    details = page.split("<details class='stand-in'>", 1)[1].split("</details>", 1)[0]
    assert "estimates for the stand-in xc7z020clg400-1 (LUT6)" in details
    assert "BRAM_18K" in details and f"LUT {number(report['totals']['LUT'])} (" in details
    head = shown.split("<table class='layers'>", 1)[1].split("</tr>", 1)[0]
    assert re.findall(r"<th class='num'>(\w+)</th>", head)[:4] == list(cells), head
    mvau = shown.split(">MVAU_rtl_0</a>", 1)[1].split("</tr>", 1)[0]
    figures = family["layers"]["MVAU_rtl_0"]
    assert "".join(f"<td class='num'>{number(figures[k])}</td>" for k in cells) in mvau
    assert "Resources per layer (estimated for LFE5U-85F-6BG381C)" in shown
    rows = dict(re.findall(r"<tr><th>(.*?)</th><td>(.*?)</td></tr>", shown))
    assert rows["resources (placed by nextpnr)"].startswith(f"LUT4 {placed['LUT4']:,} of 83,640")
    assert rows["resources (estimated)"].startswith(f"LUT4 {number(family['totals']['LUT4'])} (")

    fmax = min(section["fmax_mhz"].values())
    assert f"{mhz_text(fmax)} (nextpnr)" in card and "clock constraint" in card
    assert f"{mhz_text(section['clock_mhz'])}, the PLL&#x27;s" in card
    assert f"within {section['critical_path']['start']}" in card or (
        f"from {section['critical_path']['start']}" in card
    )
    for stage in ("synthesis", "place and route", "packing", "gate-level check"):
        assert re.search(rf"{stage} \d+\.\d s", card), stage
    assert "bit for bit equal to the RTL simulation" in card
    assert "unchecked: the clock was checked" not in page

    print_summary(report)
    screen = capsys.readouterr().out
    assert f"placed: LUT4 {placed['LUT4']:,} of 83,640" in screen
    estimated = [line for line in screen.splitlines() if line.startswith("  estimated   LUT4 ")]
    assert len(estimated) == 1 and "of LFE5U-85F-6BG381C" in estimated[0], screen
    assert "xc7z020clg400-1" not in screen.split("  throughput")[1]  # only the notes name it
    for text in (page, screen):
        said = clocks_said(text)
        assert said and all(re.fullmatch(r"\d+\.\d", mhz) for mhz in said), said
    shown_in_a_notebook = repr(BuildResult.load(folder))  # its one line, the part's too
    assert f"LUT4 {placed['LUT4']:,}, FF {placed['FF']:,}" in shown_in_a_notebook
    assert "BRAM_18K" not in shown_in_a_notebook


@pytest.mark.wide  # make test: brainsmith bitstream on the same design is served by the cache
@pytest.mark.xdist_group("synthesis")
def test_a_second_identical_build_reuses_the_cached_bitstream(farm, tmp_path):
    import brainsmith

    first = json.loads((lattice_mlp(farm) / "report.json").read_text())["bitstream"]
    again = brainsmith.build(
        str(MLP), str(REPO / "blueprints" / "mlp.yaml"), str(tmp_path / "again"),
        options=LATTICE_MLP_OPTIONS,
        verify="none",
    )  # fmt: skip
    section = dict(again.report["bitstream"])
    assert section["cached"] and section["sha256"] == first["sha256"]
    # the gate-level check runs again (its simulators from rtlsim's cache) and passes
    assert section.pop("netlist_check")["passed"] and first.pop("netlist_check")["passed"]
    assert {**section, "cached": False} == {**first, "cached": False}
    assert bit_logs(Path(again.output_dir)) == {}  # no tool ran: no log written
    bit = Path(again.output_dir) / "bitstream" / "ulx3s-85f.bit"
    assert hashlib.sha256(bit.read_bytes()).hexdigest() == first["sha256"]


def missed_clock_report(tmp_path: Path) -> dict:
    """A report.json as a build with --bitstream writes it when nextpnr misses the clock."""
    section = {
        "bitstream": "bitstream/ulx3s-85f.bit", "board": "ulx3s-85f",
        "part": "LFE5U-85F-6BG381C", "clock_mhz": 200.0, "met": False,
        "status": "timing not met", "fmax_mhz": {"clk": 52.5},
    }  # fmt: skip
    estimate = {"estimated_fps": 5e6, "max_cycles": 40, "critical_path_cycles": 136}
    rtlsim = {"stitched": {"cycles_per_frame": 41.0, "latency_cycles": 147}}
    return {"section": section, "estimate": estimate, "rtlsim": rtlsim, "folder": str(tmp_path)}


def test_a_missed_clock_gives_the_figures_at_the_fmax_reached_and_says_so_first(tmp_path):
    from brainsmith.builder.bitstream import performance_at_clock
    from brainsmith.report.measured import unchecked
    from brainsmith.report.text import clocked_lines, warning_lines

    given = missed_clock_report(tmp_path)
    section = given["section"]
    clocked = performance_at_clock(section, given["estimate"], given["rtlsim"], given["folder"])
    assert clocked is not None and clocked["clock_mhz"] == 52.5
    assert clocked["fps"] == pytest.approx(52.5e6 / 41, rel=1e-6)
    assert clocked["latency_ns"] == pytest.approx(147 * 1000 / 52.5, abs=0.1)
    assert "timing not met" in clocked["clock_note"] and "52.5 MHz" in clocked["clock_note"]
    report = {"bitstream": section, "performance": {**clocked, **given["estimate"]}}
    assert clocked_lines(report)[0].startswith(f"{round(52.5e6 / 41):,} fps at 52.5 MHz")
    assert warning_lines(report)[0].startswith("timing not met on ulx3s-85f: nextpnr reached")
    assert unchecked(report) is None  # the bitstream's lines say it: nothing is unchecked


def test_without_a_simulation_the_cycles_are_finns_estimate_and_say_so(tmp_path):
    from brainsmith.builder.bitstream import performance_at_clock

    given = missed_clock_report(tmp_path)
    section = {**given["section"], "met": True, "clock_mhz": 50.0, "fmax_mhz": {"clk": 60.0}}
    clocked = performance_at_clock(section, given["estimate"], None, given["folder"])
    assert clocked is not None and clocked["clock_mhz"] == 50.0 and clocked["clock_note"] is None
    assert (clocked["cycles_per_frame"], clocked["cycles_source"]) == (40, "estimate")
    assert clocked["fps_source"] == "nextpnr clock, estimate cycles"
    (tmp_path / "fifo_sizing.json").write_text(
        json.dumps({"sized": True, "cycles_per_frame": 42.0, "latency_cycles": 150})
    )
    sized = performance_at_clock(section, given["estimate"], None, given["folder"])
    assert sized is not None and (sized["cycles_per_frame"], sized["cycles_source"]) == (
        42.0, "Verilator"
    )  # fmt: skip


def test_a_binary_mlp_for_a_lattice_board_blocks_at_specialize_naming_its_hls_layers(tmp_path):
    """FINN's RTL matrix layer takes no 1-bit (XNOR) operands, so a binary TFC's matrix
    layers can only be HLS, which no Lattice part has: check marks each BLOCKS (it once said
    "ready to build"), and the build stops at specialize, naming them, instead of after every
    later step at its bitstream."""
    path = REPO / "examples" / "models" / "zoo" / "tfc_w1a1.onnx"
    done = invoke("check", str(path), "--board", "ulx3s-85f", "--json")
    assert done.returncode == 1, done.stderr
    result = json.loads(done.stdout)
    blocking = [n for n in result["nodes"] if n["placement"] == "backend"]
    assert [n["name"] for n in blocking] == ["MVAU_0", "MVAU_1", "MVAU_2", "MVAU_3"]
    assert all(n["reason"].startswith("ulx3s-85f has no HLS flow, and ") for n in blocking)
    assert not result["ok"]
    built = build_command(tmp_path, "--board", "ulx3s-85f", "--bitstream", model=path)
    assert built.returncode == 1, built.stderr
    assert "build failed in step 'specialize': ulx3s-85f has no HLS flow" in built.stderr
    assert "MVAU_0, MVAU_1, MVAU_2, MVAU_3: prefer: rtl, but no RTL variant" in built.stderr
    assert not (tmp_path / "out" / "bitstream").exists()


@pytest.mark.parametrize(
    ("model", "host"),
    [("mlp_4bit", {"Mul": "after", "Add": "after"}),
     ("residual", {"Transpose": "before", "Mul": "after"})],
)  # fmt: skip
def test_with_no_blueprint_a_lattice_board_leaves_layers_it_cannot_have_to_the_host(model, host):
    """The default flow turns a classifier's float output scale and bias into FINN's
    elementwise layers, whose RTL needs a Versal part: for a Lattice board check shows them on
    the host and every hardware layer RTL (they once became HLS layers that ended the build at
    its bitstream), while a residual sum of two integer streams stays hardware, as
    brainsmith's IntAdd."""
    path = REPO / "examples" / "models" / f"{model}.onnx"
    done = invoke("check", str(path), "--board", "ulx3s-85f", "--json")
    assert done.returncode == 0, done.stderr
    nodes = json.loads(done.stdout)["nodes"]
    hardware = [n for n in nodes if n["placement"] == "hardware"]
    assert hardware and all(n["backend"].endswith("_rtl") for n in hardware), hardware
    assert {n["op_type"]: n["placement"] for n in nodes if n["placement"] != "hardware"} == host
    (scale,) = [n["reason"] for n in nodes if n["op_type"] == "Mul"]
    assert "ulx3s-85f has no HLS flow" in scale and "blueprint" not in scale, scale
    adds = [n["backend"] for n in hardware if n["op_type"] == "ElementwiseAdd"]
    assert adds == (["IntAdd_rtl"] if model == "residual" else [])


@pytest.mark.slow
@pytest.mark.xdist_group("synthesis")
def test_with_no_blueprint_the_mlp_becomes_the_same_bitstream(farm, tmp_path):
    """``brainsmith build MODEL --board ulx3s-85f --bitstream`` with no blueprint makes the
    design blueprints/mlp.yaml makes: the run's bitstream cache serves it."""
    import brainsmith

    first = json.loads((lattice_mlp(farm) / "report.json").read_text())["bitstream"]
    built = brainsmith.build(str(MLP), None, str(tmp_path / "out"), options=LATTICE_MLP_OPTIONS,
                             verify="none")  # fmt: skip
    section = built.report["bitstream"]
    assert built.report["status"] == "ok" and section["sha256"] == first["sha256"]
    assert any("has no HLS flow" in note for note in built.report["notes"])


@pytest.mark.wide  # make test: their sources as Yosys reads them, their checks (above)
@pytest.mark.xdist_group("bitstream-networks")  # beside the synthesis group, not after it
@pytest.mark.parametrize("model", ["conv_pad", "residual", "cnv", "zoo/kws_conv1d"])
def test_a_conv_or_residual_net_becomes_a_ulx3s_85f_bitstream(tmp_path, model):
    """The shipped padded conv net (two of brainsmith's RTL pooling layers, sliding windows,
    matrix layers), residual block (a fork, an integer sum, global pooling), CNV and a 1-D
    keyword-spotting net with no blueprint: placed, routed and packed at 100 MHz, timing met
    at that clock (not folded again for a slower one), each netlist answering as its RTL at
    gate level."""
    import brainsmith

    built = brainsmith.build(
        str(REPO / "examples" / "models" / f"{model}.onnx"), None, str(tmp_path / "out"),
        options={"board": "ulx3s-85f", "bitstream": True, "clock_ns": 10.0, "refold_rounds": 0},
        verify="none",
    )  # fmt: skip
    section = built.report["bitstream"]
    assert built.report["status"] == "ok" and section["met"], section
    assert section["clock_mhz"] == pytest.approx(100.0)
    assert {layer["backend"] for layer in built.report["layers"]} == {"rtl"}
    assert section["resources"]["DP16KD"]["used"] > 0
    check = section["netlist_check"]  # the mapped logic answers as the RTL, at gate level
    assert check["ran"] and check["passed"] and check["frames"] == 4, check
    bit = Path(built.output_dir) / section["bitstream"]
    assert hashlib.sha256(bit.read_bytes()).hexdigest() == section["sha256"]


def bitstream_report(met: bool, fmax: float, clock_ns: float = 5.0, rounds: int = 2) -> dict:
    """report.json's fields a refold round reads, as a build with --bitstream writes them."""
    section = {"met": met, "fmax_mhz": {"clk": fmax}, "clock_mhz": 1000 / clock_ns,
               "refold_rounds": rounds}  # fmt: skip
    return {"status": "ok", "clock_ns": clock_ns, "bitstream": section}


def test_a_missed_clock_is_folded_again_just_below_the_fmax_reached_a_few_rounds_at_most():
    from brainsmith.builder.refold import MARGIN, next_clock_ns

    missed = bitstream_report(False, 100.806)
    assert next_clock_ns(missed, 0) == 10.45  # 1000 / (100.806 * 0.95), up to 0.01 ns
    assert 1000 / next_clock_ns(missed, 0) < 100.806 * (1 - MARGIN) + 0.1
    assert next_clock_ns(missed, 1) == 10.45 and next_clock_ns(missed, 2) is None
    assert next_clock_ns(bitstream_report(True, 120.0), 0) is None  # met: nothing to do
    assert next_clock_ns(bitstream_report(False, 100.806, rounds=0), 0) is None  # never
    assert next_clock_ns(bitstream_report(False, 99.0, clock_ns=20.0), 0) is None  # no slower
    assert next_clock_ns({**missed, "status": "failed"}, 0) is None
    assert next_clock_ns({"status": "ok", "clock_ns": 5.0}, 0) is None  # no bitstream


def test_a_round_built_again_says_its_own_seconds_and_whether_its_netlist_was_checked():
    """The build's seconds count from the command's start, so a round's own are its report's
    less the rounds' before it; a round built again skips the gate-level check (its netlist
    is thrown away), which ``slower_clock_ns`` tells the bitstream step before it runs."""
    from brainsmith.builder.refold import round_record, slower_clock_ns

    missed = bitstream_report(False, 100.806)
    missed["seconds"] = 300.0
    missed["bitstream"]["netlist_check"] = {"ran": False}
    record = round_record(missed, 120.0)
    assert record["seconds"] == 180.0 and record["netlist_checked"] is False
    assert record["clock_ns"] == 5.0  # the build's clock, where the section names none asked
    missed["bitstream"]["asked_mhz"] = 125.0  # a round placed again at a clock of its own
    assert round_record(missed, 120.0)["clock_ns"] == 8.0
    assert slower_clock_ns(missed["bitstream"], 5.0, 0) == 10.45
    assert slower_clock_ns(missed["bitstream"], 5.0, 2) is None  # the last round: checked


def test_a_default_clock_missed_is_placed_again_below_the_fmax_with_the_folding_kept():
    """At brainsmith's default clock a round that misses is made again at the PLL's clock at
    or below the Fmax reached less the margin (81.25 MHz of the ULX3S' 25 MHz for 85.9 MHz
    reached), its folding kept, while that folding still meets the target there; else the
    build is folded again for the target (None)."""
    from brainsmith.builder.refold import MARGIN, settled_mhz, settled_record
    from brainsmith.hardware.board.boards import board

    missed = {"met": False, "fmax_mhz": {"clk": 85.94}, "asked_mhz": 90.0, "clock_mhz": 90.0,
              "refold_rounds": 2}  # fmt: skip
    ulx3s = board("ulx3s-85f")  # its 25 MHz oscillator
    assert ulx3s.clock_mhz == 25.0
    assert settled_mhz(missed, ulx3s, 0, 80, 1_000_000) == 81.25 <= 85.94 * (1 - MARGIN)
    assert settled_mhz(missed, ulx3s, 0, 80, None) == 81.25  # no target: the folding stands
    assert settled_mhz(missed, ulx3s, 0, 90, 1_000_000) is None  # 902,778 fps: fold again
    assert settled_mhz(missed, ulx3s, 0, 0, 1_000_000) is None  # no cycles known: fold again
    assert settled_mhz(missed, ulx3s, 2, 80, None) is None  # the rounds are used up
    assert settled_mhz({**missed, "met": True}, ulx3s, 0, 80, None) is None
    record = settled_record(missed, 41.04)
    assert record == {"clock_ns": 11.111, "clock_mhz": 90.0, "fmax_mhz": 85.94, "met": False,
                      "seconds": 41.0, "netlist_checked": False, "refolded": False}  # fmt: skip


@pytest.mark.wide  # two places and routes of the MLP at 20,000 fps: about three minutes
@pytest.mark.xdist_group("synthesis")
def test_a_board_build_at_a_default_clock_it_misses_keeps_its_folding_and_places_again(
    tmp_path, capsys, monkeypatch
):
    """A default the design misses (200 MHz for grade 6 here, the MLP reaching about 130):
    the bitstream is made again at the PLL's clock below the Fmax reached (and again below
    that round's, should nextpnr miss it too), the steps not run again and the folding kept
    (the build's clock stays the default the folding was for); the first round, its netlist
    not checked, is in ``bitstream.refolds`` and the summary."""
    import brainsmith
    from brainsmith.cli.build import print_summary
    from brainsmith.hardware.place_route.ecp5 import ECP5

    monkeypatch.setitem(ECP5.clock_mhz, 6, 200.0)  # type: ignore[index]
    built = brainsmith.build(
        str(MLP), str(REPO / "blueprints" / "mlp.yaml"), str(tmp_path / "out"),
        options={"board": "ulx3s-85f", "bitstream": True, "target_fps": 20_000}, verify="none",
    )  # fmt: skip
    report, section = built.report, built.report["bitstream"]
    first = section["refolds"][0]  # (nextpnr may miss the clock below it too: again lower)
    assert first["clock_mhz"] == 200.0
    for before, after in zip(section["refolds"], [*section["refolds"][1:], section], strict=True):
        assert before["refolded"] is False and not before["met"]
        assert not before["netlist_checked"] and before["seconds"] > 0
        assert after["clock_mhz"] <= before["fmax_mhz"] * 0.95 < after["clock_mhz"] * 1.03
    assert report["clock_ns"] == 5.0 and report["target"]["met"]  # the folding for 200 MHz
    assert section["met"] and section["netlist_check"]["ran"], section
    assert section["asked_mhz"] == section["clock_mhz"]  # what the PLL makes, cached or not
    assert report["performance"]["clock_mhz"] == pytest.approx(section["clock_mhz"], rel=1e-4)
    assert [s["name"] for s in report["steps"]].count("folding") == 1
    assert any(n.startswith("clock: 200.0 MHz, brainsmith's default") for n in report["notes"])
    made = f"clock: the bitstream runs at {section['clock_mhz']:.1f} MHz: nextpnr reached"
    assert any(n.startswith(made) and "20,000 fps still met" in n for n in report["notes"])
    assert not list(tmp_path.glob("out.round-*"))
    print_summary(report)
    screen = capsys.readouterr().out
    assert "round 1: 200.0 MHz asked" in screen
    assert "placed again at a clock below it, the folding kept" in screen
    page = (Path(built.output_dir) / "report.html").read_text()
    assert "not met: placed again at a clock below it, the folding kept" in page


@pytest.mark.wide  # two iCE40 places and routes of the MLP folded to fill the UP5K: about 2 min
@pytest.mark.xdist_group("synthesis")
def test_a_default_clock_missed_by_a_folding_short_of_its_target_is_settled_not_refolded(
    tmp_path, monkeypatch
):
    """The plain command for a part the target does not fit (the shipped MLP's 1,000,000 fps
    on an iCEBreaker, whose UP5K stops the folding at about 16,000): a default clock it
    misses (60 MHz here, about 36 reached) is settled, the bitstream placed again at the
    PLL's clock below the Fmax with the folding kept, not the whole build folded again for a
    slower clock (it used to: the same folding again, the steps and a round of place and
    route over; on a GateMate the larger refold crashed nextpnr)."""
    import brainsmith
    from brainsmith.hardware.place_route.ice40 import ICE40

    monkeypatch.setitem(ICE40.clock_mhz, 0, 60.0)  # type: ignore[index]
    built = brainsmith.build(
        str(MLP), str(REPO / "blueprints" / "mlp.yaml"), str(tmp_path / "out"),
        options={"board": "icebreaker", "bitstream": True}, verify="none",
    )  # fmt: skip
    report, section = built.report, built.report["bitstream"]
    assert report["target"]["met"] is False and section["refolds"], section
    assert all(r["refolded"] is False for r in section["refolds"]), section["refolds"]
    assert [s["name"] for s in report["steps"]].count("folding") == 1
    assert section["refolds"][0]["clock_mhz"] == pytest.approx(60.0, abs=1.0)
    assert section["clock_mhz"] < section["refolds"][0]["fmax_mhz"]
    kept = "already short of 1,000,000 fps: a slower clock would fold no further"
    assert any(n.startswith("clock: the bitstream runs at") and kept in n for n in report["notes"])


@pytest.mark.wide  # a 5,400-cell place and route: 4 to 14 minutes cold, seconds cached
@pytest.mark.xdist_group("synthesis")
def test_the_mlp_at_a_million_fps_meets_the_default_clock_in_one_round(tmp_path):
    """``brainsmith build examples/models/mlp_4bit.onnx blueprints/mlp.yaml --board ulx3s-85f
    --bitstream``, no clock: at 90 MHz (the default before) it reached 85.9 MHz and was built
    twice; at the default now it meets timing in the first round, the target met, its netlist
    checked, the note saying the clock and where it was measured."""
    import brainsmith
    from brainsmith.hardware.place_route.ecp5 import CLOCK_MHZ

    built = brainsmith.build(
        str(MLP), str(REPO / "blueprints" / "mlp.yaml"), str(tmp_path / "out"),
        options={"board": "ulx3s-85f", "bitstream": True}, verify="none",
    )  # fmt: skip
    report, section = built.report, built.report["bitstream"]
    assert section["met"] and not section["refolds"], section
    assert section["clock_mhz"] == CLOCK_MHZ[6] and report["target"]["met"]
    assert section["netlist_check"]["ran"] and section["netlist_check"]["passed"]
    said = [note for note in report["notes"] if note.startswith("clock: ")]
    assert said and "reached 85.9 MHz" in said[0] and "--clock-ns" in said[0], said


def test_a_refolded_build_says_its_clock_and_how_the_first_rounds_was_chosen():
    """report.json of a round folded again says why its clock (below the Fmax the round
    before reached) and keeps the note of how the first round's clock was chosen."""
    from brainsmith.builder.refold import chosen_clock, refold_notes

    chosen = chosen_clock({"notes": ["clock: 80.0 MHz, brainsmith's default for ...", "other"]})
    rounds = [{"clock_mhz": 80.0, "fmax_mhz": 76.3}]
    said = refold_notes(chosen, rounds, 13.8)
    assert said == [
        "clock: 72.5 MHz, 5% below the 76.3 MHz round 1 reached at 80.0 MHz (nextpnr): the "
        "build was folded again for it",
        "round 1's clock: 80.0 MHz, brainsmith's default for ...",
    ]
    assert refold_notes(chosen, [], 5.0) == [] and chosen_clock({"notes": None}) == []


@pytest.mark.parametrize("rounds", ["-1", "6", "two"])
def test_refold_rounds_outside_0_to_5_is_refused_before_the_build(tmp_path, rounds):
    done = build_command(tmp_path, "--board", "ulx3s-85f", "--bitstream", "--refold-rounds", rounds)
    assert done.returncode == 2, done.stderr
    assert ("--refold-rounds" in done.stderr) and not (tmp_path / "out").exists()


@pytest.mark.wide  # two whole builds with their bitstreams: about two and a half minutes
@pytest.mark.xdist_group("synthesis")
def test_a_bitstream_that_misses_its_clock_is_built_again_for_a_clock_that_closes(tmp_path, capsys):
    """The MLP asked for 200 MHz on the ECP5 reaches about 100: the build folds again for a
    clock 5 % below that and makes a bitstream whose PLL clock nextpnr meets; the first
    round is in ``bitstream.refolds``, and every round, the bitstream's last, is in the
    summary and report.html with its clocks, its Fmax and its seconds; its folder is gone."""
    import brainsmith
    from brainsmith.cli.build import print_summary
    from brainsmith.clock import Clock, mhz_text

    built = brainsmith.build(
        str(MLP), str(REPO / "blueprints" / "mlp.yaml"), str(tmp_path / "out"),
        options={"board": "ulx3s-85f", "bitstream": True, "clock_ns": 5.0, "target_fps": 20_000},
        verify="none",
    )  # fmt: skip
    report = built.report
    section = report["bitstream"]
    (first, *later) = section["refolds"]
    assert first["clock_mhz"] == 200 and not first["met"] and first["fmax_mhz"] < 190
    assert report["clock_ns"] > 5.0 and 1000 / report["clock_ns"] < first["fmax_mhz"]
    assert section["met"] or len(later) + 1 == section["refold_rounds"], section
    if section["met"]:  # the figures are at the PLL's clock, which closes
        assert report["performance"]["clock_mhz"] == pytest.approx(section["clock_mhz"], rel=1e-4)
    assert report["target"]["met"]  # 20,000 fps still met at the slower clock
    assert not list(tmp_path.glob("out.round-*")), list(tmp_path.iterdir())
    from brainsmith.report.text import bitstream_lines

    assert any(line.startswith("round 1: 200.0 MHz asked") for line in bitstream_lines(section))
    assert not first["netlist_checked"] and first["seconds"] > 0  # thrown away: not checked
    assert report["seconds"] > sum(r["seconds"] for r in section["refolds"])  # the command's

    page = (Path(built.output_dir) / "report.html").read_text()
    card = page.split("<div class='verdict bitstream'>", 1)[1].split("<div class='notes'>")[0]
    print_summary(report)
    screen = capsys.readouterr().out
    rounds = section["refolds"]
    for index, done in enumerate(rounds, start=1):
        cells = [str(index), str(Clock.from_ns(done["clock_ns"])),
                 str(Clock.from_mhz(done["clock_mhz"])), mhz_text(done["fmax_mhz"])]  # fmt: skip
        assert "".join(f"<td>{cell}</td>" for cell in cells) in card, (cells, card)
        assert f"<td>{done['seconds']:.0f} s</td>" in card
        assert f"round {index}: {cells[2]} asked, {cells[3]} reached (nextpnr)" in screen
    last = len(rounds) + 1  # the round that made the bitstream
    own = report["seconds"] - sum(done["seconds"] for done in rounds)
    fmax = mhz_text(min(section["fmax_mhz"].values()))
    made = str(Clock.from_mhz(section["clock_mhz"]))
    assert f"<td>{last} (this bitstream)</td>" in card and f"<td>{fmax}</td>" in card
    assert f"<td>{own:.0f} s</td>" in card
    asked = Clock.from_mhz(section["asked_mhz"])
    assert (
        f"round {last}: {asked} asked, {made} made, {fmax} reached (nextpnr): "
        f"{section['status']}, this bitstream ({own:.0f} s)"
    ) in screen
    placed = report["family_resources"]["placed"]  # nextpnr's counts after the refold too
    assert f"placed: LUT4 {placed['LUT4']['used']:,} of 83,640" in screen
    first_screen = page.split("<div class='verdict'>", 1)[1].split("class='verdict bitstream'")[0]
    assert "<b>LUT4</b> <span class='track measured'>" in first_screen
    assert f"{placed['LUT4']['used']:,} of 83,640" in first_screen


@pytest.mark.wide  # a whole build with its bitstream and gate-level check: about 4 minutes
@pytest.mark.xdist_group("bitstream-networks")
def test_a_tfc_w2a2_becomes_a_ulx3s_85f_bitstream_matching_torch(tmp_path):
    """FINN's TFC-w2a2 (zoo, a fresh Brevitas export): every layer RTL, verified against
    torch's outputs, placed and routed at 50 MHz with timing met; its 2-bit products are LUTs,
    so the multiplier blocks are not used up (they once were: nextpnr ran out of MULT18X18D)."""
    import brainsmith

    zoo = REPO / "examples" / "models" / "zoo"
    built = brainsmith.build(
        str(zoo / "tfc_w2a2.onnx"), None, str(tmp_path / "out"),
        input_npy=str(zoo / "tfc_w2a2_input.npy"), expected_npy=str(zoo / "tfc_w2a2_expected.npy"),
        options={"board": "ulx3s-85f", "bitstream": True, "clock_ns": 20.0, "target_fps": 50_000},
    )  # fmt: skip
    report = built.report
    section = report["bitstream"]
    assert report["status"] == "ok" and section["met"], section
    assert {layer["backend"] for layer in report["layers"]} == {"rtl"}
    assert section["netlist_check"]["passed"], section["netlist_check"]
    assert section["resources"]["MULT18X18D"]["used"] < 78  # half the part's at most
    assert report["target"]["met"]


@pytest.mark.wide  # the MLP placed on an iCEBreaker at the clock below its Fmax: about 2 min
@pytest.mark.xdist_group("synthesis")
def test_a_build_falling_back_on_the_round_that_routed_is_placed_below_its_fmax(tmp_path, capsys):
    """The round after a refold whose tools failed (the GateMate's nextpnr crashing on the
    larger folding, ``refold.refolded``): the round that routed is built again, its
    bitstream placed at once at the PLL's clock below the Fmax it reached, not at its own
    clock nor refolded, its netlist checked; the failed round in the report, the notes, the
    first screen and the page."""
    from brainsmith.builder.refold import failed_record, fallback_mhz, refold_notes
    from brainsmith.builder.runner import _build_once
    from brainsmith.cli.build import print_summary
    from brainsmith.hardware.board.boards import board

    crash = "nextpnr-ice40 crashed with seed 1 and with seed 2"
    routed = {"clock_ns": 25.0, "clock_mhz": 40.0, "fmax_mhz": 36.3, "met": False,
              "seconds": 60.0, "netlist_checked": False}  # fmt: skip
    rounds = [routed, failed_record(29.0, crash, 90.0)]
    built = _build_once(
        str(MLP), str(REPO / "blueprints" / "mlp.yaml"), str(tmp_path / "out"),
        input_npy=None, expected_npy=None, force=False, verify="none",
        options={"board": "icebreaker", "bitstream": True, "clock_ns": 25.0}, prefer=None,
        progress=False, start=None, stop_after=None, exclude=(), refolds=rounds,
        began=0.0, notes=refold_notes([], rounds, 25.0),
    )  # fmt: skip
    report, section = built.report, built.report["bitstream"]
    mhz = fallback_mhz(rounds, board("icebreaker", linked=True))
    assert mhz is not None and section["asked_mhz"] == mhz < 36.3 * 0.95 + 1e-9
    assert [r.get("failed") for r in section["refolds"]] == [None, crash]  # nothing settled
    assert section["netlist_check"]["ran"], section["netlist_check"]
    assert report["clock_ns"] == 25.0  # round 1's folding
    assert any("round 2, folded for" in n and crash in n for n in report["notes"])
    print_summary(report)
    screen = capsys.readouterr().out
    assert f"round 2: 34.5 MHz asked, not placed ({crash})" in screen, screen
    assert "the folding that routed placed again" in screen
    page = (Path(built.output_dir) / "report.html").read_text()
    assert "not placed (" in page
