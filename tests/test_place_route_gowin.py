"""brainsmith place-route for Gowin: part names, the pins of the board amaranth-boards
describes with the part written as nextpnr's CST constraints, a part's capacities from
nextpnr-himbaechel-gowin's report, a bitstream's IDCODE read back, and the run's shipped MLP
folded for a small board placed, routed behind the host link, packed by gowin_pack and read
back by gowin_unpack with the real tools (a GW2A-18 in make test, a GW1NR-9 in make
test-wide)."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from brainsmith.hardware.place_route.families import target
from brainsmith.hardware.place_route.gowin import GOWIN, PACKING, board_pins, cst
from brainsmith.hardware.place_route.packing import PARTIAL
from brainsmith.hardware.place_route.parts import UnknownPart, gowin_part
from tests.support.processes import invoke


@pytest.mark.parametrize(
    ("name", "device", "chip"),
    [
        ("GW2A-LV18PG256C8/I7", "GW2A-LV18PG256C8/I7", "GW2A-18C"),
        ("gw2a-lv18pg256c8", "GW2A-LV18PG256C8/I7", "GW2A-18C"),
        ("GW1NR-LV9QN88PC6/I5", "GW1NR-LV9QN88PC6/I5", "GW1N-9C"),
    ],
)
def test_a_gowin_part_is_nextpnrs_device_and_chip_database(name, device, chip):
    family, part = target(name)
    assert family is GOWIN and part.arguments() == ["--device", device, "--vopt", f"family={chip}"]
    assert "/" not in part.name  # the name a bitstream file is called by


@pytest.mark.parametrize("name", ["GW1N-LV1QN48C6/I5", "GW2A-LV18PG256C8/I7; echo", "GW5A-25A"])
def test_an_unknown_gowin_part_lists_the_known_ones(name):
    with pytest.raises(UnknownPart) as error:
        gowin_part(name)
    assert "GW2A-LV18PG256C8/I7 (GW2A-18C, the tang_primer_20k's)" in str(error.value)
    assert "GW1NR-LV9QN88PC6/I5" in str(error.value)


def test_the_tang_primer_20ks_clock_and_uart_pins_come_from_amaranth_boards():
    pins = board_pins(gowin_part("GW2A-LV18PG256C8"))
    assert {port: site for port, (site, _) in pins.items()} == {
        "clk_osc": "H11", "uart_rx": "T13", "uart_tx": "M11",
    }  # fmt: skip
    text = cst(pins)
    assert 'IO_LOC "clk_osc" H11;\nIO_PORT "clk_osc" IO_TYPE=LVCMOS33;' in text
    assert 'IO_PORT "uart_rx" IO_TYPE=LVCMOS33 PULL_MODE=UP;' in text


def test_a_gw2a_18s_capacities_come_from_nextpnrs_report(tmp_path, monkeypatch):
    from brainsmith.hardware.place_route.capacities import part_capacities

    monkeypatch.setenv("BRAINSMITH_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("BRAINSMITH_PLACE_ROUTE_CACHE", raising=False)
    found = part_capacities(gowin_part("GW2A-LV18PG256C8"), family=GOWIN)
    assert found.available == {
        "LUT4": 20_736, "FF": 15_552, "ALU": 15_552, "MULT9": 96, "BSRAM": 46,
    }  # fmt: skip
    assert found.source.startswith("nextpnr-himbaechel-gowin ")


def test_a_bitstreams_idcode_names_its_die(tmp_path):
    header = ["1" * 80, "1" * 16, "1010010111000011"]
    idcode = f"{0x06 << 56 | 0x0000081B:064b}"
    (tmp_path / PARTIAL).write_text("\n".join([*header, idcode, "0" * 64]) + "\n")
    assert PACKING.read_device(str(tmp_path)) == "GW2A-18C"
    (tmp_path / PARTIAL).write_text("\n".join([*header, "0" * 64]) + "\n")
    assert PACKING.read_device(str(tmp_path)) == ""


def placed(farm, tmp_path: Path, part: str, mhz: str) -> tuple[dict, str]:
    """The run's MLP folded for the ULX3S (20,000 fps) placed on ``part`` at ``mhz``: the
    result written and the command's stdout."""
    from tests.support.farm import lattice_mlp

    folder = Path(shutil.copytree(lattice_mlp(farm), tmp_path / "mlp", symlinks=True))
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    env = {"BRAINSMITH_CACHE_DIR": str(cache)}  # the run's kept place-and-route cache: once
    ran = invoke("place-route", str(folder), "--part", part, "--mhz", mhz, env=env)
    assert ran.returncode in (0, 3), ran.stderr  # 3: placed, the clock missed
    data = json.loads((folder / "place_route" / "report.json").read_text())
    assert ran.returncode == (0 if data["met"] else 3) and min(data["fmax_mhz"].values()) > 0
    assert data["family"] == "Gowin" and data["logic"] == "LUT4"
    resources = data["resources"]
    assert 1000 < resources["LUT4"]["used"] < resources["LUT4"]["available"]
    assert resources["IOB"]["used"] == 3 and "host link" in data["placed"]
    assert "gowin_pack (apycula " in data["tools"]["packer"] and data["seconds"]["unpack"] > 0
    content = (folder / data["bitstream"]).read_bytes()
    assert content.startswith(b"1" * 16) and hashlib.sha256(content).hexdigest() == data["sha256"]
    run = folder / "place_route" / "run"  # empty where the kept tool cache had the result
    assert data["cached"] != (run / "unpacked.txt").is_file()
    assert data["cached"] or (run / "unpacked.txt").stat().st_size > 0
    return data, ran.stdout


@pytest.mark.slow
@pytest.mark.wide  # make test packs for the GW2A-18 (nextpnr 100 s here, the GW1NR-9's 129 s)
@pytest.mark.xdist_group("synthesis")
def test_the_small_mlp_is_placed_routed_and_packed_on_a_gw1nr_9(farm, tmp_path):
    """The Tang Nano 9K's part, on its pins."""
    data, stdout = placed(farm, tmp_path, "GW1NR-LV9QN88PC6/I5", "27")
    assert data["part"] == "GW1NR-LV9QN88PC6" and data["resources"]["LUT4"]["available"] == 8640
    assert "clk_osc on 52, uart_rx on 18, uart_tx on 17" in data["placed"]
    assert "bitstream place_route/GW1NR-LV9QN88PC6.bit, packed by gowin_pack" in stdout


@pytest.mark.slow
@pytest.mark.xdist_group("synthesis")
def test_the_small_mlp_is_placed_routed_and_packed_on_a_gw2a_18(farm, tmp_path):
    """The one Gowin bitstream of make test: the Tang Primer 20K's part, on its pins."""
    data, stdout = placed(farm, tmp_path, "GW2A-LV18PG256C8/I7", "27")  # its oscillator
    assert data["part"] == "GW2A-LV18PG256C8" and data["resources"]["LUT4"]["available"] == 20_736
    assert "clk_osc on H11, uart_rx on T13, uart_tx on M11" in data["placed"]
    assert "bitstream place_route/GW2A-LV18PG256C8.bit, packed by gowin_pack" in stdout
