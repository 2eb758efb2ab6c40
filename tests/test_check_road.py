"""``brainsmith check`` says whether a network reaches a board: a bitstream, ``run
--simulate`` and ``export`` take only a design whose every layer is RTL. README's quick-start
network gets an HLS layer with the default flow (its thresholds fused into a matrix layer),
and check names the flag that makes every layer RTL, a claim ``check --board`` then bears out."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.estimate_accuracy import quick_start_python
from tests.support.processes import invoke

REPO = Path(__file__).resolve().parents[1]
BOARD = "ulx3s-85f"

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("check")]


@pytest.fixture(scope="module")
def my_net(tmp_path_factory) -> Path:
    """README's quick-start network, exported by README's own Python block."""
    folder = tmp_path_factory.mktemp("quick-start")
    subprocess.run([sys.executable, "-c", quick_start_python()], cwd=folder, check=True,
                   capture_output=True, timeout=600)  # fmt: skip
    return folder / "my_net.onnx"


def checked(*args: str | Path) -> dict:
    done = invoke("check", *args, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def hardware(result: dict) -> list[dict]:
    return [n for n in result["nodes"] if n["placement"] == "hardware"]


def test_the_quick_start_network_is_told_which_flag_reaches_the_board(my_net):
    done = invoke("check", my_net)
    assert done.returncode == 0, done.stderr
    said = done.stdout.splitlines()[-1]
    assert said.startswith("to a board: MVAU_0 (thresholds fused (RTL has none)) is HLS"), said
    assert "a bitstream, run --simulate and export need every layer RTL" in said
    assert said.endswith(
        f"with --board {BOARD} (or --prefer rtl) all 4 hardware layers are RTL "
        f"(check --board {BOARD})"
    ), said
    documented = " ".join((REPO / "docs" / "build.md").read_text().split())
    assert f"`{said}`" in documented  # docs/build.md quotes the line as check prints it


@pytest.mark.parametrize("flag", [["--board", BOARD], ["--prefer", "rtl"]])
def test_what_check_promised_is_what_the_flag_makes(my_net, flag):
    result = checked(my_net, *flag)
    layers = hardware(result)
    assert len(layers) == 4 and all(n["backend"].endswith("_rtl") for n in layers), layers
    if flag[0] == "--board":
        assert result["road"] == (
            f"every hardware layer is RTL, as {BOARD} needs: build --bitstream makes {BOARD}'s "
            "bitstream; run --simulate and export take the build"
        )
    else:
        assert result["road"].startswith("every hardware layer is RTL: a bitstream, run")


@pytest.mark.parametrize("board", ["tang-primer-20k", "icebreaker", "gatemate-a1-evb"])
def test_every_family_s_board_is_told_export_takes_the_build(my_net, board):
    """``export`` takes a board build of every family (its constraints, PLL and sim.sh)."""
    result = checked(my_net, "--board", board)
    assert result["road"].endswith(
        f"build --bitstream makes {board}'s bitstream; run --simulate and export take the build"
    ), result["road"]


def test_a_lattice_part_is_pointed_to_place_route(my_net):
    result = checked(my_net, "--part", "LIFCL-40-9BG400C")
    assert all(n["backend"].endswith("_rtl") for n in hardware(result))
    assert "place-route BUILD_DIR --part LIFCL-40-9BG400C makes its bitstream" in result["road"]


def test_an_ecp5_part_alone_is_told_a_bitstream_needs_a_board(my_net):
    """An ECP5 part alone is placed out of context: no pins, so no bitstream."""
    road = checked(my_net, "--part", "LFE5U-85F-6BG381C")["road"]
    assert "place-route BUILD_DIR --part LFE5U-85F-6BG381C places and routes it out of " in road
    assert "a bitstream needs a board of its family, such as --board ulx3s-85f" in road, road
    assert "makes its bitstream" not in road


def test_a_network_no_board_can_take_is_told_where_it_would_stop():
    """A binary TFC's matrix layers are HLS only (FINN's RTL layer takes no 1-bit operands):
    check says a board build would stop at them instead of promising the board."""
    result = checked(REPO / "examples" / "models" / "zoo" / "tfc_w1a1.onnx")
    road = result["road"]
    assert "MVAU_0 (" in road and " are HLS, and " in road, road
    assert road.endswith(
        f"with --board {BOARD} the build would stop at MVAU_0, MVAU_1, MVAU_2, MVAU_3 "
        f"(check --board {BOARD})"
    ), road
