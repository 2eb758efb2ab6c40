"""brainsmith place-route for Cologne Chip GateMate: part names as the chip databases of
nextpnr-himbaechel-gatemate name them, a CCGM1A1's capacities from nextpnr's report, a
read-back's device, and the run's shipped MLP folded for a small board placed, routed behind
the host link, packed by gmpack and read back by gmunpack with the real tools."""

from __future__ import annotations

import hashlib
import json
import shutil
from importlib.resources import files
from pathlib import Path

import pytest

from brainsmith.hardware.place_route.families import target
from brainsmith.hardware.place_route.gatemate import GATEMATE, unpacked_device
from brainsmith.hardware.place_route.parts import GATEMATE_PARTS as PARTS
from brainsmith.hardware.place_route.parts import UnknownPart, gatemate_part
from tests.support.processes import invoke

PART = "CCGM1A1"


def test_a_gatemate_part_is_nextpnrs_device():
    family, part = target("ccgm1a1")
    assert family is GATEMATE and part.arguments() == ["--device", PART]


@pytest.mark.parametrize("name", ["CCGM1A4", "CCGM1A1; echo", "CCGM"])
def test_an_unknown_gatemate_part_lists_the_known_ones(name):
    with pytest.raises(UnknownPart) as error:
        gatemate_part(name)
    assert "GateMate parts are CCGM1A1, CCGM1A2 not yet; e.g. CCGM1A1" in str(error.value)


def test_the_two_die_ccgm1a2_is_refused_saying_why():
    with pytest.raises(UnknownPart) as error:
        gatemate_part("ccgm1a2")
    assert str(error.value).startswith(
        "CCGM1A2 is not placed by brainsmith: its two dies stop nextpnr-himbaechel-gatemate 0.11.1"
    )


def test_place_route_refuses_an_unknown_gatemate_part_naming_the_known_ones(tmp_path):
    ran = invoke("place-route", str(tmp_path), "--part", "CCGM1A4")
    assert ran.returncode == 2 and not (tmp_path / "place_route").exists()
    assert (
        "'CCGM1A4' is not a GateMate part; GateMate parts are CCGM1A1, CCGM1A2 not yet; "
        "e.g. CCGM1A1" in ran.stderr
    )
    assert "try: --part as one of the forms named above" in ran.stderr


def test_every_part_has_a_chip_database_in_nextpnr_himbaechel_gatemate():
    share = files("yowasp_nextpnr_himbaechel_gatemate").joinpath("share", "himbaechel", "gatemate")
    found = {entry.name for entry in share.iterdir()}
    assert found == {f"chipdb-{part}.bin" for part in PARTS}


def test_a_ccgm1a1s_capacities_come_from_nextpnrs_report(tmp_path, monkeypatch):
    from brainsmith.hardware.place_route.capacities import part_capacities

    monkeypatch.setenv("BRAINSMITH_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("BRAINSMITH_PLACE_ROUTE_CACHE", raising=False)
    found = part_capacities(gatemate_part(PART), family=GATEMATE)
    assert found.available == {"LT": 40_960, "FF": 40_960, "RAM": 64}  # two of each a CPE
    assert found.source.startswith("nextpnr-himbaechel-gatemate ")


def test_a_gatemate_read_back_names_its_device():
    assert unpacked_device("bitstream: CMD_DLCU\n.device CCGM1A1\n\n.config 0\n") == PART
    assert unpacked_device(".config 0\n") == ""


def test_a_critical_path_between_flip_flops_yosys_named_is_named_by_its_nets():
    """synth_gatemate leaves the flip-flops Yosys' own names: a path's ends are named by the
    nets next to them (the routed path of make test's run, shortened)."""
    from brainsmith.hardware.place_route.critical_path import critical_path

    def step(kind: str, source: str, sink: str, net: str = "") -> dict[str, object]:
        ends = {"from": {"cell": source}, "to": {"cell": sink}, "delay": 1.0, "type": kind}
        return {**ends, "net": net} if net else ends

    ff, lut, rd = "$auto$ff.cc:337:slice$9485", "$abc$21268$blif$1090", "$auto$ff.cc:slice$7311"
    path = [
        step("clk-skew", ff, rd, "accelerator.n0.ap_clk"),
        step("clk-to-q", ff, ff),
        step("routing", ff, lut, "accelerator.n5.core.impl.genStages[2].genPE[0].Pf[11]"),
        step("logic", lut, lut),
        step("routing", lut, rd, "$abc$21268$new_n3492"),
        step("routing", lut, rd, "$\\accelerator.n7.core.Threshs$rdreg[0]$d[0]"),
        step("setup", rd, rd),
    ]
    clock = "accelerator.n0.ap_clk"
    report = {"critical_paths": [{"from": f"posedge {clock}", "to": f"posedge {clock}",
                                  "path": path}]}  # fmt: skip
    instances = {"n5": "Thresholding_rtl_0", "n7": "Thresholding_rtl_1"}
    found = critical_path(report, {clock: 47.5}, instances)
    assert found is not None
    assert (found["start"], found["end"]) == ("Thresholding_rtl_0", "Thresholding_rtl_1")
    assert (found["start_cell"], found["end_cell"], found["steps"]) == (ff, rd, 7)


@pytest.mark.slow
@pytest.mark.xdist_group("synthesis")
def test_the_small_mlp_is_placed_routed_and_packed_on_a_ccgm1a1(farm, tmp_path):
    """The shipped MLP as the run's ULX3S build folds it (20,000 fps), every product in CPEs
    (GateMate has no hard multiplier): the one GateMate bitstream of make test, placed at the
    25 MHz asked, packed by gmpack and read back by gmunpack (in the run that places it; later
    runs of the kept tool cache take its result and bitstream from there; a gmunpack that
    crashes on it leaves it unread, said in its tools). nextpnr is most of
    its time (193 to 265 s of 215 to 290 s here)."""
    from tests.support.farm import lattice_mlp

    folder = Path(shutil.copytree(lattice_mlp(farm), tmp_path / "mlp", symlinks=True))
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    env = {"BRAINSMITH_CACHE_DIR": str(cache)}  # the run's kept place-and-route cache: once
    ran = invoke("place-route", str(folder), "--part", PART, "--mhz", "25", env=env)
    assert ran.returncode in (0, 3), ran.stderr  # 3: placed, the clock missed
    data = json.loads((folder / "place_route" / "report.json").read_text())
    assert ran.returncode == (0 if data["met"] else 3) and min(data["fmax_mhz"].values()) > 0
    assert data["family"] == "GateMate" and data["logic"] == "CPE_LT" and data["part"] == PART
    assert data["constraint_mhz"] == 25
    resources = data["resources"]
    assert 1000 < resources["CPE_LT"]["used"] < resources["CPE_LT"]["available"] == 40_960
    assert resources["GPIO"]["used"] == 3 and "host link" in data["placed"]
    layers = {layer["name"] for layer in json.loads((folder / "report.json").read_text())["layers"]}
    path = data["critical_path"]  # its ends Yosys-named flip-flops, named by their nets' layers
    assert {path["start"], path["end"]} <= layers | {"host link"}, path
    assert "gmpack (yowasp-nextpnr-himbaechel-gatemate " in data["tools"]["packer"]
    content = (folder / data["bitstream"]).read_bytes()
    assert content.startswith(b"\xd9") and hashlib.sha256(content).hexdigest() == data["sha256"]
    run = folder / "place_route" / "run"
    if data["cached"]:  # placed by an earlier run of the kept tool cache: its result and .bit
        assert not list(run.iterdir())
    elif "read_back" in data["tools"]:  # gmunpack crashed on it: kept unread, and said so
        assert data["tools"]["read_back"].startswith("gmunpack crashed reading the bitstream")
        assert "wasm trap" in (run / "gmunpack.log").read_text()
    else:  # the bitstream gmunpack read back
        unpacked = (run / "unpacked.txt").read_text()
        assert ".device CCGM1A1" in unpacked.splitlines()[:4] and data["seconds"]["unpack"] > 0
    assert f"bitstream place_route/{PART}.bit, packed by gmpack" in ran.stdout
