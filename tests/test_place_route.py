"""brainsmith place-route on the shipped MLP's all-RTL build: synth_ecp5 and nextpnr-ecp5 run
for real (out of context, an ECP5-85F), the result checked against the part and the build's
clock, and a second run served from the cache."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from tests.support.farm import REPO, unplaced_mlp
from tests.support.processes import Ran, invoke

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("synthesis")]
PART = "LFE5U-85F-6BG381C"


def place_route(folder: Path, cache: Path, *args: str) -> Ran:
    """``brainsmith place-route`` in this process (the Ctrl-C test below starts one), with
    this module's own cache, counted here."""
    env = {"BRAINSMITH_CACHE_DIR": str(cache), "BRAINSMITH_PLACE_ROUTE_CACHE": None}
    return invoke("place-route", str(folder), *args, env=env)


@pytest.fixture(scope="module")
def unplaced(hub, farm, tmp_path_factory) -> tuple[Path, Path]:
    """A private copy of the run's all-RTL MLP build and an empty cache of the module's own."""
    return unplaced_mlp(farm, tmp_path_factory.mktemp("place-route"))


@pytest.fixture(scope="module")
def placed(unplaced) -> tuple[Path, Path, Ran]:
    """That copy placed and routed once. make test places and routes the MLP as a board's
    bitstream (tests/test_bitstream_build.py), through the same stages; out of context here,
    in make test-wide."""
    folder, cache = unplaced
    return folder, cache, place_route(folder, cache, "--part", PART)


@pytest.mark.wide
def test_the_mlp_is_placed_and_routed_for_an_ecp5_at_the_builds_clock(placed):
    folder, _, result = placed
    assert result.returncode in (0, 3), result.stderr  # 3: placed, the clock missed
    data = json.loads((folder / "place_route" / "report.json").read_text())
    clock_ns = json.loads((folder / "report.json").read_text())["clock_ns"]
    assert data["constraint_mhz"] == pytest.approx(1000 / clock_ns)
    assert set(data["fmax_mhz"]) == {"ap_clk"} and data["fmax_mhz"]["ap_clk"] > 0
    assert data["met"] == (data["fmax_mhz"]["ap_clk"] >= data["constraint_mhz"])
    assert result.returncode == (0 if data["met"] else 3)
    resources = data["resources"]
    assert resources["TRELLIS_COMB"]["available"] == 83_640  # the 85F's logic cells
    assert all(0 <= r["used"] <= r["available"] for r in resources.values())
    assert resources["TRELLIS_COMB"]["used"] > 1000 and resources["MULT18X18D"]["used"] > 0
    assert data["cells"]["LUT4"] > 0 and data["seconds"]["nextpnr"] > 0
    assert "fifo.sv: block_ram_for_ultra" in data["fixes"]
    path = data["critical_path"]  # named by layer: the instances of accelerator.sv
    layers = {layer["name"] for layer in json.loads((folder / "report.json").read_text())["layers"]}
    assert path["start"] in layers and path["end"] in layers and path["clock"] == "ap_clk"
    assert 1000 / path["delay_ns"] == pytest.approx(data["fmax_mhz"]["ap_clk"], rel=1e-3)
    assert "critical path " in result.stdout
    assert "MHz reached" in result.stdout and "TRELLIS_COMB" in result.stdout


@pytest.mark.wide
def test_a_second_run_is_served_from_the_cache(placed):
    folder, cache, first = placed
    before = json.loads((folder / "place_route" / "report.json").read_text())
    logs = {log: log.stat().st_mtime_ns for log in (folder / "place_route").rglob("*.log")}
    result = place_route(folder, cache, "--part", PART)
    assert result.returncode == first.returncode, result.stderr
    again = json.loads((folder / "place_route" / "report.json").read_text())
    assert again["cached"] and {**again, "cached": False} == before
    assert logs and {log: log.stat().st_mtime_ns for log in logs} == logs  # no tool ran again
    entries = list((cache / "place_route").glob("*.json"))
    assert len(entries) == 1 and (cache / "place_route").stat().st_mode & 0o077 == 0


def test_an_unknown_part_lists_the_known_ones_and_writes_nothing(unplaced):
    """(In make test-wide the module's copy has been placed before: it stays as it was.)"""
    folder, cache = unplaced
    before = written(folder)
    result = place_route(folder, cache, "--part", "LFE5U-65F-6BG381C")
    assert result.returncode == 2 and "LFE5U-85F-6BG381C" in result.stderr
    assert written(folder) == before


def written(folder: Path) -> dict[str, int]:
    """Every file and folder below ``folder``, a file with when it was last written."""
    return {str(p.relative_to(folder)): p.stat().st_mtime_ns if p.is_file() else 0
            for p in folder.rglob("*")}  # fmt: skip


def placing(process: psutil.Process) -> list[psutil.Process]:
    """``process``'s descendants that place and route with nextpnr (not its version probe;
    none once they have ended)."""
    found = []
    for child in process.children(recursive=True):
        try:
            command = child.cmdline()
            if "nextpnr" in " ".join(command) and "--version" not in command:
                found.append(child)
        except (psutil.NoSuchProcess, psutil.ZombieProcess):
            continue
    return found


@pytest.mark.wide  # a second place and route, stopped; make test places and routes once
def test_sigterm_while_placing_stops_nextpnr_and_writes_no_result(placed, tmp_path):
    import signal

    source, _, _ = placed
    folder = Path(
        shutil.copytree(
            source, tmp_path / "mlp", symlinks=True, ignore=shutil.ignore_patterns("place_route")
        )
    )
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    env = {**os.environ, "BRAINSMITH_CACHE_DIR": str(cache)}
    env.pop("BRAINSMITH_PLACE_ROUTE_CACHE", None)
    process = psutil.Popen(
        [sys.executable, "-m", "brainsmith", "place-route", str(folder), "--part", PART],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    deadline, tools = time.monotonic() + 300, list[psutil.Process]()
    while not tools and process.poll() is None and time.monotonic() < deadline:
        tools = placing(process)
        time.sleep(0.2)
    assert tools, process.communicate()
    time.sleep(2)  # nextpnr running
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 143, err
    assert "interrupted (SIGTERM)" in err
    assert not (folder / "place_route" / "report.json").exists()
    assert not list((cache / "place_route").glob("*.json"))
    _, alive = psutil.wait_procs(tools, timeout=30)
    assert not alive, f"nextpnr left running: {alive}"
    assert (folder / "place_route" / "run" / "nextpnr.log").is_file()  # the stopped run's log


def test_a_shared_cache_folder_is_refused_with_exit_2(unplaced, tmp_path):
    folder, _ = unplaced
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    env = {**os.environ, "BRAINSMITH_PLACE_ROUTE_CACHE": str(shared)}
    result = subprocess.run(
        [sys.executable, "-m", "brainsmith", "place-route", str(folder), "--part", PART],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert result.returncode == 2, result.stderr
    assert "BRAINSMITH_PLACE_ROUTE_CACHE" in result.stderr
    # refused after FINN was loaded (the command then ends without the interpreter's
    # teardown): the folder's lock is released all the same
    assert not Path(f"{folder}.lock").exists()


def tree(folder: Path) -> dict[str, int]:
    """Every path below ``folder`` and beside it (its parent's entries), with its size."""
    below = {str(p.relative_to(folder)): p.lstat().st_size for p in folder.rglob("*")}
    beside = {f"../{p.name}": 0 for p in folder.parent.iterdir()}
    return below | beside


@pytest.mark.parametrize(
    ("command", "target"),
    [("place-route", "--part LIFCL-40-9BG400C"), ("bitstream", "--board ulx3s-85f")],
)
def test_a_default_build_is_pointed_to_a_build_for_the_lattice_target(farm, command, target):
    """The default flow builds for a Versal part, whose matrix units no Lattice part can have:
    the refusal names the build for the Lattice target itself (every layer RTL), and leaves
    no lock beside the folder."""
    built = farm.build(REPO / "examples" / "models" / "mlp_4bit.onnx", None, verify="none")
    done = invoke(command, built.output_dir, *target.split())
    assert done.returncode == 2, done.stderr
    said = f"try: build the model for the Lattice target itself, brainsmith build MODEL {target} "
    assert said + "(every layer RTL, folded for its part)" in done.stderr, done.stderr
    assert not Path(f"{built.output_dir}.lock").exists()


def test_a_refused_place_route_or_bitstream_leaves_the_folder_as_it_found_it(unplaced, tmp_path):
    """Refused with exit 2 before any tool ran, after FINN was loaded or before: a cache
    folder others can write, a part no family has, a board with no USB UART. Nothing is left
    in the build folder or beside it: no run folder, no lock."""
    folder = Path(shutil.copytree(unplaced[0], tmp_path / "mlp", symlinks=True))
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    before = tree(folder)
    # a refused cache ends a process after FINN without its teardown: those two run as a
    # user runs them, the others in this process
    refusals = [
        ({"BRAINSMITH_PLACE_ROUTE_CACHE": str(shared)}, ["place-route", "--part", PART], True),
        ({}, ["place-route", "--part", "LFE5U-65F-6BG381C"], False),
        ({"BRAINSMITH_BITSTREAM_CACHE": str(shared)}, ["bitstream", "--board", "ulx3s-85f"], True),
        ({}, ["bitstream", "--board", "orangecrab-r0.2-85f"], False),
    ]
    for env, (command, *args), own_process in refusals:
        if own_process:
            result = subprocess.run(
                [sys.executable, "-m", "brainsmith", command, str(folder), *args],
                capture_output=True, text=True, env={**os.environ, **env}, timeout=300,
            )  # fmt: skip
        else:
            result = invoke(command, str(folder), *args, env=env)
        assert result.returncode == 2, (command, args, result.stderr)
        assert tree(folder) == before, (command, args, set(tree(folder)) ^ set(before))
