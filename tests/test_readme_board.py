"""README's "To a board", run as written on README's own quick-start network: its build for a
ULX3S-85F makes every layer RTL and a bitstream whose netlist the gate-level check finds equal
to the RTL, ``run --simulate`` sends that design frames on a simulated board, and the export,
with the build folder deleted, simulates the board top alone (``./sim.sh``). The commands that
need a board on USB (``flash``, ``run --port``) are left out."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.estimate_accuracy import quick_start_python
from tests.support.processes import invoke

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent

pytestmark = [pytest.mark.slow, pytest.mark.wide, pytest.mark.xdist_group("synthesis")]


def board_commands() -> list[list[str]]:
    """The commands of README's "To a board" blocks that need no board on USB."""
    text = (REPO / "README.md").read_text()
    section = text[text.index("### To a board") : text.index("## The two commands")]
    bodies = re.findall(r"```bash\n(.*?)```", section, re.S)
    lines = [shlex.split(line, comments=True) for body in bodies for line in body.splitlines()]
    usb = [["brainsmith", "flash"]]
    return [w for w in lines if w and w[:2] not in usb and "--port" not in w]


def test_readmes_board_commands_take_its_network_to_a_checked_bitstream(tmp_path):
    subprocess.run([sys.executable, "-c", quick_start_python()], cwd=tmp_path, check=True,
                   capture_output=True, timeout=600)  # fmt: skip
    commands = board_commands()
    assert [words[:2] for words in commands] == [
        ["brainsmith", "build"], ["brainsmith", "run"], ["brainsmith", "export"],
        ["my_net_export/sim.sh"],
    ]  # fmt: skip
    build, run, export, sim = commands
    built = invoke(*build[1:], cwd=tmp_path)
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    folder = tmp_path / build[build.index("-o") + 1]
    report = json.loads((folder / "report.json").read_text())
    hardware = [layer for layer in report["layers"] if layer["op_type"] != "StreamingFIFO"]
    assert {layer["backend"] for layer in report["layers"]} == {"rtl"}, hardware
    assert {layer["op_type"] for layer in hardware} >= {"MVAU", "Thresholding"}
    bitstream = report["bitstream"]
    assert bitstream["met"] and (folder / bitstream["bitstream"]).is_file()
    assert bitstream["netlist_check"]["passed"], bitstream["netlist_check"]

    ran = invoke(*run[1:], cwd=tmp_path)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "latency" in ran.stdout and "throughput" in ran.stdout, ran.stdout

    exported = invoke(*export[1:], cwd=tmp_path)
    assert exported.returncode == 0, exported.stdout + exported.stderr
    shutil.rmtree(folder)  # the export stands alone
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run(sim, cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=1200)  # fmt: skip
    assert done.returncode == 0 and "PASS" in done.stdout, done.stdout + done.stderr
