"""brainsmith place-route for Lattice Nexus: part names read and pins found in nextpnr-nexus'
own chip database (fast), an unknown part refused listing both families' forms, and the
shipped MLP's all-RTL build placed and routed behind the host link on a LIFCL-40 with
synth_nexus and nextpnr-nexus run for real and packed into a bitstream by prjoxide (make
test-wide)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from brainsmith.hardware.place_route.families import target
from brainsmith.hardware.place_route.nexus_pins import io_type, link_pins, package_pads
from brainsmith.hardware.place_route.parts import NEXUS_DEVICES, UnknownPart, nexus_part
from tests.support.farm import REPO, ULTRASCALE_PLUS, all_rtl_mlp

PART = "LIFCL-40-9BG400C"


def place_route(folder: Path, cache: Path, *args: str, timeout: float = 1800):
    env = {**os.environ, "BRAINSMITH_CACHE_DIR": str(cache)}
    env.pop("BRAINSMITH_PLACE_ROUTE_CACHE", None)
    return subprocess.run(
        [sys.executable, "-m", "brainsmith", "place-route", str(folder), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
    )


@pytest.mark.parametrize(
    ("name", "device", "package"),
    [
        ("LIFCL-40-9BG400C", "LIFCL-40", "BG400"),
        ("lifcl-17-8sg72c", "LIFCL-17", "SG72"),
        ("LIFCL-17-7UWG72I", "LIFCL-17", "UWG72"),
        ("LFD2NX-40-8BG256IES2", "LFD2NX-40", "BG256"),
    ],
)
def test_a_nexus_part_name_is_passed_whole_as_nextpnrs_device(name, device, package):
    family, part = target(name)
    assert family.name == "Nexus" and (part.device, part.package) == (device, package)
    assert part.arguments() == ["--device", name.upper()]


@pytest.mark.parametrize(
    "name",
    [
        "LIFCL-33-9BG400C",  # no such device
        "LIFCL-40-6BG400C",  # no such speed
        "LIFCL-17-9BG400C",  # the 17 has no BG400
        "LFD2NX-17-8BG256C",  # nextpnr-nexus has no Certus-NX 17
        "LIFCL-40-9BG400C; echo",
    ],
)
def test_an_unknown_nexus_part_lists_the_known_ones(name):
    with pytest.raises(UnknownPart) as error:
        nexus_part(name)
    assert "LIFCL-40-9BG400C" in str(error.value) and "BG400" in str(error.value)


@pytest.mark.parametrize(
    ("device", "package"), [(d, p) for d, packages in NEXUS_DEVICES.items() for p in packages]
)
def test_every_package_has_a_clock_pin_and_two_io_in_nextpnrs_database(device, package):
    clock, rx, tx = link_pins(device, package)
    pins = {pad.pin for pad in package_pads(device, package)}
    assert {clock.pin, rx.pin, tx.pin} <= pins and len({clock.pin, rx.pin, tx.pin}) == 3
    assert any(function.startswith("PCLKT") for function in clock.functions)


def test_the_crosslink_nx_40s_bg400_pins():
    assert len(package_pads("LIFCL-40", "BG400")) == 218  # bonded I/O, D-PHY and SerDes pads
    clock, rx, tx = link_pins("LIFCL-40", "BG400")
    assert (clock.pin, rx.pin, tx.pin) == ("J2", "D7", "D8")  # bank 7, 3.3 V
    assert clock.functions == ("PCLKT7_2",) and rx.bank == tx.bank == 7


def test_a_pin_of_a_high_performance_bank_takes_its_own_1_8_v_standard():
    """nextpnr-nexus refuses LVCMOS18 in a high-performance bank ("requires a wide-range
    bank"): such a pin is constrained as LVCMOS18H, a wide-range one as LVCMOS33."""
    pads = {pad.pin: pad for pad in package_pads("LIFCL-40", "BG400")}
    assert pads["R7"].bank == 4 and io_type(pads["R7"]) == "LVCMOS18H"  # PCLKT4_3
    assert io_type(pads["J2"]) == "LVCMOS33"


def test_an_unknown_part_lists_the_ecp5_and_nexus_forms_with_exit_2(tmp_path):
    result = place_route(tmp_path, tmp_path / "cache", "--part", "XC7A35T-1CPG236C", timeout=120)
    assert result.returncode == 2, result.stderr
    assert "LFE5U-85F-6BG381C" in result.stderr and "LIFCL-40-9BG400C" in result.stderr
    assert not (tmp_path / "place_route").exists()


@pytest.mark.slow
@pytest.mark.wide  # make test places and routes for ECP5 once; the Nexus run is make test-wide
@pytest.mark.xdist_group("synthesis")
def test_the_mlp_is_placed_and_routed_behind_the_host_link_on_a_lifcl_40(hub, farm, tmp_path):
    folder = Path(shutil.copytree(all_rtl_mlp(farm), tmp_path / "mlp", symlinks=True))
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    result = place_route(folder, cache, "--part", PART)
    assert result.returncode in (0, 3), result.stderr  # 3: placed, the clock missed
    data = json.loads((folder / "place_route" / "report.json").read_text())
    clock_ns = json.loads((folder / "report.json").read_text())["clock_ns"]
    assert data["part"] == PART and data["constraint_mhz"] == pytest.approx(1000 / clock_ns)
    assert len(data["fmax_mhz"]) == 1 and min(data["fmax_mhz"].values()) > 0
    assert result.returncode == (0 if data["met"] else 3)
    resources = data["resources"]
    assert data["family"] == "Nexus" and data["logic"] == "OXIDE_COMB"
    assert resources["OXIDE_COMB"]["available"] == 32_256  # the LIFCL-40's, as nextpnr counts
    assert all(0 <= r["used"] <= r["available"] for r in resources.values())
    assert resources["OXIDE_COMB"]["used"] > 1000 and resources["SEIO33_CORE"]["used"] == 3
    assert data["seconds"]["synth_nexus"] > 0 and data["seconds"]["nextpnr"] > 0
    assert "host link" in data["placed"] and "nextpnr-nexus" in data["tools"]["nextpnr"]
    pdc = (folder / "place_route" / "run" / "part.pdc").read_text()
    assert "ldc_set_location -site {J2} [get_ports clk_osc]" in pdc
    assert "MHz reached" in result.stdout and "OXIDE_COMB" in result.stdout
    # packed by prjoxide and read back as a LIFCL-40's; a cached run brings the bitstream back
    assert data["bitstream"] == f"place_route/{PART}.bit" and "prjoxide" in data["tools"]["packer"]
    bitstream = folder / data["bitstream"]
    assert bitstream.read_bytes().startswith(b"LSCC")
    assert hashlib.sha256(bitstream.read_bytes()).hexdigest() == data["sha256"]
    assert data["seconds"]["pack"] > 0 and data["seconds"]["unpack"] > 0
    unpacked = (folder / "place_route" / "run" / "unpacked.txt").read_text()
    assert '{ oxide.device="LIFCL-40" }' in unpacked
    assert f"bitstream place_route/{PART}.bit, packed by prjoxide" in result.stdout
    bitstream.unlink()
    again = place_route(folder, cache, "--part", PART)
    assert again.returncode == result.returncode and "(cached)" in again.stdout, again.stderr
    assert hashlib.sha256(bitstream.read_bytes()).hexdigest() == data["sha256"]


@pytest.mark.slow
@pytest.mark.wide
@pytest.mark.xdist_group("synthesis")
@pytest.mark.parametrize("model", ["tfc_w2a2", "jet_tagger"])
def test_a_zoo_mlp_is_placed_and_routed_on_a_lifcl_40(model, farm, tmp_path):
    """FINN's TFC-w2a2 (3 x 64 neurons, 2-bit weights and activations) and the LHC jet tagger
    (16-64-32-32-5, 6-bit, batch norms), every layer RTL and folded for the build's default
    target, placed and routed on a LIFCL-40 within its multipliers. (The jet tagger's clock
    could not be routed from its pin before brainsmith's matrix core for Lattice parts.)"""
    built = farm.build(REPO / "examples" / "models" / "zoo" / f"{model}.onnx", None,
                       options={"fpga_part": ULTRASCALE_PLUS}, prefer="rtl", verify="none")  # fmt: skip
    folder = Path(shutil.copytree(built.output_dir, tmp_path / model, symlinks=True))
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    result = place_route(folder, cache, "--part", PART)
    assert result.returncode in (0, 3), result.stderr  # 3: placed, the clock missed
    data = json.loads((folder / "place_route" / "report.json").read_text())
    resources = data["resources"]
    assert all(0 <= r["used"] <= r["available"] for r in resources.values())
    assert 0 < resources["MULT9_CORE"]["used"] < resources["MULT9_CORE"]["available"]
    assert resources["OXIDE_COMB"]["used"] > 1000 and min(data["fmax_mhz"].values()) > 0


@pytest.mark.slow
@pytest.mark.wide
@pytest.mark.xdist_group("synthesis")
def test_the_mlp_built_with_no_blueprint_has_its_clock_routed_on_a_lifcl_40(farm, tmp_path):
    """The shipped MLP built --prefer rtl with no blueprint: nextpnr-nexus' default router
    finds no route for its clock from the pin to the clock buffer ("Failed to route arc 0.0
    of net 'clk'", whichever PCLK pin carries it); the run routes it with router1 instead,
    says so, and packs the bitstream."""
    built = farm.build(REPO / "examples" / "models" / "mlp_4bit.onnx", None,
                       options={"fpga_part": ULTRASCALE_PLUS}, prefer="rtl", verify="none")  # fmt: skip
    folder = Path(shutil.copytree(built.output_dir, tmp_path / "mlp", symlinks=True))
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    result = place_route(folder, cache, "--part", PART)
    assert result.returncode in (0, 3), result.stderr  # 3: placed, the clock missed
    data = json.loads((folder / "place_route" / "report.json").read_text())
    assert min(data["fmax_mhz"].values()) > 0 and data["resources"]["DCC"]["used"] == 1
    assert "clk_osc on J2" in data["placed"]  # a PCLK pin: PCLKT7_2
    if "nextpnr_rerouted" in data["seconds"]:  # router2 stopped at the clock
        assert "routed with nextpnr --router router1" in data["placed"]
        assert "Failed to route arc" in data["placed"] and "router1" in result.stdout
    assert (folder / data["bitstream"]).read_bytes().startswith(b"LSCC")


def test_fasm_the_packer_cannot_place_fails_naming_its_panic_and_leaves_no_bitstream(tmp_path):
    """prjoxide, run for real on a routed design naming a tile no LIFCL-40 has: the packer's
    own message, its log named, and no bitstream, whole or partial."""
    from brainsmith.hardware.place_route.errors import PlaceRouteError
    from brainsmith.hardware.place_route.nexus import NEXUS, PACKING
    from brainsmith.hardware.plan import Stages

    (tmp_path / PACKING.routed).write_text(
        '{ oxide.device="LIFCL-40" }\n\nNO_SUCH_TILE.NO_SUCH_FEATURE\n'
    )
    with Stages() as stages, pytest.raises(PlaceRouteError) as error:
        PACKING.pack(NEXUS.package, stages, str(tmp_path), PART, 600)
    assert str(error.value).startswith("prjoxide pack: ") and "panicked at" in str(error.value)
    assert error.value.hint == f"see {tmp_path / 'prjoxide-pack.log'}"
    assert not [path.name for path in tmp_path.iterdir() if ".bit" in path.name]
    assert stages.seconds["pack"] > 0 and "unpack" not in stages.seconds


def test_a_nexus_read_back_names_its_device():
    from brainsmith.hardware.place_route.nexus import unpacked_device

    fasm = '{ oxide.device="LIFCL-40" }\n{ oxide.device_variant="" }\n\nCIB_R0C72__BANKREF0\n'
    assert unpacked_device(fasm) == "LIFCL-40" and unpacked_device("CIB_R0C72\n") == ""
