"""A target family from a pip package: a real wheel, installed with pip, whose entry point in
``brainsmith.families`` adds a family ``brainsmith place-route`` places for, beside packages
whose family cannot be loaded or claims a family's parts (left out, named, the rest working)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.farm import unplaced_mlp
from tests.support.packages import build_wheel, pip_install_target, write_project

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("synthesis")]

# the ECP5 under part names of its own: a family's whole contract, nothing of ECP5's changed
DEMO = """\
from dataclasses import replace

from brainsmith.hardware.place_route.ecp5 import ECP5
from brainsmith.hardware.place_route.parts import UnknownPart, ecp5_part

SIZES = ("12F", "25F", "45F", "85F")


def parse(name):
    size = name.strip().upper().removeprefix("XDEMO-")
    if size not in SIZES:
        raise UnknownPart(f"{name!r} is not an XDEMO part; {known()}")
    return ecp5_part(f"LFE5U-{size}-6BG381C")


def known():
    return "XDEMO-<" + "|".join(SIZES) + ">"


FAMILY = replace(ECP5, name="XDEMO", prefixes=("XDEMO",), parse=parse, known=known)
"""
BROKEN = """\
from brainsmith.hardware.place_route.ecp5 import ECP5

CLAIMS_ECP5 = ECP5
raise ImportError("the vendor's place and route is not installed")
"""
CLAIMS = """\
from dataclasses import replace

from brainsmith.hardware.place_route.ecp5 import ECP5

FAMILY = replace(ECP5, name="ECP5 again", prefixes=("LFE5U",))
NOT_A_FAMILY = "ECP5"
"""


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """A folder of three pip-installed packages: a usable family, one that fails to import,
    one claiming ECP5's parts and one naming no Family."""
    root = tmp_path_factory.mktemp("families")
    target = root / "site"
    packages = [
        ("brainsmith-xdemo", "brainsmith_xdemo", DEMO, {"xdemo": "brainsmith_xdemo:FAMILY"}),
        ("brainsmith-vendor", "brainsmith_vendor", BROKEN, {"vendor": "brainsmith_vendor:X"}),
        ("brainsmith-claims", "brainsmith_claims", CLAIMS, {
            "again": "brainsmith_claims:FAMILY", "word": "brainsmith_claims:NOT_A_FAMILY"}),
    ]  # fmt: skip
    for dist, module, source, points in packages:
        project = write_project(root / "src", dist, module, source, points, None,
                                group="brainsmith.families")  # fmt: skip
        pip_install_target(build_wheel(project, root / "wheels"), target)
    return target


def run(site: Path, *command: str, cache: Path | None = None) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]),
    }
    if cache is not None:
        env["BRAINSMITH_CACHE_DIR"] = str(cache)
        env.pop("BRAINSMITH_PLACE_ROUTE_CACHE", None)
    return subprocess.run([sys.executable, *command], capture_output=True, text=True, env=env,
                          timeout=900)  # fmt: skip


def test_a_pip_packages_family_takes_its_parts_and_the_broken_ones_are_named(installed):
    found = run(installed, "-c", (
        "from brainsmith.hardware.place_route.families import families, target\n"
        "family, part = target('xdemo-85f')\n"
        "print(family.name, part.name, [f.name for f in families().usable])\n"
        "print(target('LFE5U-85F-6BG381C')[0].name)"
    ))  # fmt: skip
    assert found.returncode == 0, found.stderr
    assert found.stdout.splitlines() == [
        "XDEMO LFE5U-85F-6BG381C ['ECP5', 'Nexus', 'iCE40', 'Gowin', 'GateMate', 'XDEMO']",
        "ECP5",  # a package claiming ECP5's parts takes none of them
    ]


@pytest.fixture(scope="module")
def unplaced(hub, farm, tmp_path_factory) -> tuple[Path, Path]:
    """A private copy of the run's all-RTL MLP build and an empty cache."""
    return unplaced_mlp(farm, tmp_path_factory.mktemp("third-family"))


def test_an_unknown_part_lists_every_family_and_why_installed_ones_are_left_out(
    installed, unplaced
):
    folder, cache = unplaced
    result = run(installed, "-m", "brainsmith", "place-route", str(folder), "--part", "ZZ-1",
                 cache=cache)  # fmt: skip
    assert result.returncode == 2, result.stderr
    message = " ".join(result.stderr.split())
    assert "XDEMO-<12F|25F|45F|85F>" in message and "LFE5U" in message, message
    assert (
        "the family 'vendor' of brainsmith-vendor (brainsmith_vendor:X) could not be loaded: "
        "ImportError: the vendor's place and route is not installed" in message
    ), message
    assert "the family 'again' of brainsmith-claims" in message and "claims LFE5" in message
    word = "the family 'word' of brainsmith-claims (brainsmith_claims:NOT_A_FAMILY) is a str"
    assert f"{word}, not a Family" in message, message
    assert not (folder / "place_route").exists()


@pytest.mark.wide  # a whole place and route; make test places and routes the MLP for its board
def test_brainsmith_places_and_routes_for_the_third_family(installed, unplaced):
    folder, cache = unplaced
    result = run(installed, "-m", "brainsmith", "place-route", str(folder), "--part", "XDEMO-85F",
                 cache=cache)  # fmt: skip
    assert result.returncode in (0, 3), result.stderr  # 3: placed, the clock missed
    data = json.loads((folder / "place_route" / "report.json").read_text())
    assert data["part"] == "LFE5U-85F-6BG381C", data  # XDEMO-85F, as the family parses it
    assert data["resources"]["TRELLIS_COMB"]["available"] == 83_640
    assert data["resources"]["TRELLIS_COMB"]["used"] > 1000
