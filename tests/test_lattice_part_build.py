"""brainsmith build for a Lattice part named by --part (no board): an ECP5 or Nexus part is
taken as a board's part is (every layer RTL, FINN folding for a stand-in 7-series part, the
folding costed on the part's own resources as its nextpnr reports them); a Nexus part's
bitstream is placed, routed and packed on pins of brainsmith's choosing. An unknown part
names the AMD, ECP5 and Nexus forms."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import brainsmith
from brainsmith.report.measured import unchecked
from tests.support.processes import invoke

REPO = Path(__file__).resolve().parents[1]
MLP = REPO / "examples" / "models" / "mlp_4bit.onnx"
NEXUS = "LIFCL-40-9BG400C"


@pytest.mark.parametrize("part", ["LIFCL-99-9BG400C", "ACME-1000", "LFE5U-65F-6BG381C"])
def test_an_unknown_part_names_the_amd_ecp5_and_nexus_forms(part, tmp_path):
    ran = invoke("build", str(MLP), "--part", part, "-o", str(tmp_path / "out"))
    assert ran.returncode == 2, ran.stderr
    assert "LIFCL-40-9BG400C" in ran.stderr and "LFE5U-85F-6BG381C" in ran.stderr, ran.stderr
    if not part.startswith(("LIFCL", "LFE5")):
        assert "xc7z020clg400-1" in ran.stderr  # AMD's form too
    assert not (tmp_path / "out").exists()


def test_an_ecp5_parts_bitstream_is_refused_naming_a_board_of_its_family(tmp_path):
    ran = invoke("build", str(MLP), "--part", "LFE5U-85F-6BG381C", "--bitstream",
                 "-o", str(tmp_path / "out"))  # fmt: skip
    assert ran.returncode == 2, ran.stderr
    assert "a board of the family instead (--board ulx3s-85f)" in ran.stderr
    assert "orangecrab" not in ran.stderr and "tang-primer-20k" not in ran.stderr
    assert "brainsmith place-route BUILD_DIR --part LFE5U-85F-6BG381C" in ran.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
@pytest.mark.xdist_group("build")
def test_a_nexus_part_build_is_folded_and_costed_for_the_part(hub, tmp_path):
    """The MLP built --part LIFCL-40-9BG400C with no blueprint: every layer RTL, FINN's
    layers for the stand-in, the folding and the report in the LIFCL-40's own LUT4, FF,
    MULT18 and EBR as nextpnr-nexus counts them; place-route takes the folder."""
    result = brainsmith.build(str(MLP), None, str(tmp_path / "out"),
                              options={"fpga_part": NEXUS.lower()}, verify="none")  # fmt: skip
    report = result.report
    assert result.status == "ok" and report["fpga_part"] == NEXUS and report["board"] is None
    notes = " ".join(report["notes"])
    assert f"a stand-in for {NEXUS}" in notes and "xc7z020clg400-1" in notes
    assert f"the folding is costed on {NEXUS} (32,256 LUT4, 32,256 FF, 56 MULT18, 84 EBR" in notes
    assert "nextpnr-nexus" in notes
    family = report["family_resources"]
    assert family["family"] == "Nexus" and family["part"] == NEXUS
    assert family["available"] == {"LUT4": 32_256, "FF": 32_256, "MULT18": 56, "EBR": 84}
    assert family["totals"]["LUT4"] > 0 and "synth_ecp5" in family["source"]
    hardware = [n for n in result.model.graph.node if "fpgadataflow" in n.domain]
    assert hardware and all(n.domain.endswith(".rtl") for n in hardware)
    how = unchecked(json.loads((Path(result.output_dir) / "report.json").read_text())) or ""
    assert f"brainsmith place-route {result.output_dir} --part {NEXUS} measures both" in how


@pytest.mark.slow
@pytest.mark.wide  # places, routes and packs for Nexus (minutes); make test builds for the part
@pytest.mark.xdist_group("synthesis")
def test_a_nexus_part_build_with_bitstream_places_routes_and_packs_it(hub, tmp_path):
    """build --part LIFCL-40-9BG400C --bitstream: after the last step the accelerator is
    placed, routed and packed behind the host link on pins brainsmith chose, as place-route
    makes it: BUILD/bitstream/LIFCL-40-9BG400C.bit, the report's bitstream naming the part,
    no board, the pins and nextpnr's figures; the summary says so; place-route takes the
    folder (the same design: from the cache)."""
    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, "-m", "brainsmith", "build", str(MLP), "--part", NEXUS, "--bitstream",
         "--verify", "none", "--refold-rounds", "0", "-o", str(out)],
        capture_output=True, text=True, timeout=3600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = json.loads((out / "report.json").read_text())
    section = report["bitstream"]
    assert section["bitstream"] == f"bitstream/{NEXUS}.bit" and section["board"] == ""
    assert section["part"] == NEXUS and "clk_osc on J2" in section["placed"]
    assert (out / section["bitstream"]).read_bytes().startswith(b"LSCC")
    assert min(section["fmax_mhz"].values()) > 0 and section["resources"]["OXIDE_COMB"]["used"]
    assert not section["netlist_check"]["ran"] and "Nexus" in section["netlist_check"]["reason"]
    placed = report["family_resources"]["placed"]
    assert placed["LUT4"]["cell"] == "OXIDE_COMB" and placed["LUT4"]["used"] > 1000
    assert f"bitstream/{NEXUS}.bit for {NEXUS} (no board; clk_osc on J2" in done.stdout
    # place-route takes the part's build (its RTL is the stand-in's, not a Versal part's)
    again = subprocess.run(
        [sys.executable, "-m", "brainsmith", "place-route", str(out), "--part", NEXUS],
        capture_output=True, text=True, timeout=3600,
    )  # fmt: skip
    assert again.returncode in (0, 3) and "(cached)" in again.stdout, again.stderr
