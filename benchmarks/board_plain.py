"""The board as README's commands reach it: README's quick-start network and the shipped MLP,
each from a model to a ULX3S-85F bitstream with the command a user types (no clock, no
target, no refold flags), a fresh ``brainsmith`` process each, timed from outside, with the
tools' caches empty (a private cache folder and Verilator/Yosys/nextpnr caches of its own).

    .venv/bin/python -m benchmarks.board_plain

Writes benchmarks/results/board_plain.json (wall and CPU seconds, the clock asked and
reached, the refold rounds, the stages' seconds, throughput and latency, the load, the
machine) and its section of benchmarks/RESULTS.md.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.first_hour import publish, watching_load
from benchmarks.quick_start_verify import timed

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
RESULT = HERE / "results" / "board_plain.json"
HEADING = "## README's board commands, as written (build --board ulx3s-85f --bitstream)"
MLP = "brainsmith build {repo}/examples/models/mlp_4bit.onnx --board ulx3s-85f --bitstream -o {out}"


def readme_commands() -> tuple[str, str]:
    """README's quick-start Python block and its board build line."""
    text = (REPO / "README.md").read_text()
    section = text[text.index("## Quick start") : text.index("## The two commands")]
    (python,) = re.findall(r"```python\n(.*?)```", section, re.S)
    lines = [line.split("#")[0].strip() for line in section.splitlines()]
    (board,) = [
        line for line in lines if line.startswith("brainsmith build ") and "--board" in line
    ]
    return python, board


def facts(folder: Path) -> dict:
    """What the build's report.json says of its clock, rounds, stages and pace."""
    report = json.loads((folder / "report.json").read_text())
    bitstream = report.get("bitstream") or {}
    check = bitstream.get("netlist_check") or {}
    stages = {**(bitstream.get("seconds") or {}), "gate_level": check.get("seconds")}
    return {
        "build_s": report.get("seconds"),
        "clock_asked_mhz": bitstream.get("clock_mhz"),
        "fmax_mhz": min((bitstream.get("fmax_mhz") or {0: 0.0}).values()),
        "timing_met": bitstream.get("met"),
        "rounds": 1 + len(bitstream.get("refolds") or []),
        "stages_s": stages,
        "gate_level_passed": check.get("passed"),
        "estimated_fps": (report.get("performance") or {}).get("estimated_fps"),
        "status": report.get("status"),
    }


def measure() -> dict:
    python, board = readme_commands()
    runs: dict[str, dict] = {}
    record: dict = {}
    with tempfile.TemporaryDirectory(prefix="brainsmith-board-plain-") as tmp:
        folder = Path(tmp)
        cache = folder / "cache"
        cache.mkdir(mode=0o700)
        os.environ.update({"BRAINSMITH_CACHE_DIR": str(cache)})
        for variable in ("BRAINSMITH_RTLSIM_CACHE", "BRAINSMITH_SYNTHESIS_CACHE"):
            os.environ.pop(variable, None)
        timed([sys.executable, "-c", python], folder)
        commands = {
            "README's quick-start network": board,
            "the shipped MLP": MLP.format(repo=REPO, out="mlp_board"),
        }
        with watching_load(record):
            for name, command in commands.items():
                argv = shlex.split(command)
                out = folder / argv[argv.index("-o") + 1]
                runs[name] = {"command": command, **timed(argv, folder), **facts(out)}
    return {"benchmark": "board_plain", "runs": runs, "load": record,
            "measured": time.strftime("%Y-%m-%d %H:%M:%S")}  # fmt: skip


def when_and_load(data: dict) -> str:
    """When ``data`` was measured and the 1-minute load average before, after and meanwhile."""
    load = data["load"]
    during = load.get("load_1min_during", {})
    return (
        f"{data['measured']}; 1-minute load average {load.get('load_before', ['?'])[0]} before, "
        f"{load.get('load_after', ['?'])[0]} after, mean {during.get('mean', '?')}"
    )


def section(data: dict) -> list[str]:
    """The RESULTS.md section of ``data``."""
    lines = [
        HEADING,
        "",
        "Each network from its model to a ULX3S-85F bitstream with the command README gives, in "
        f"a fresh process with empty caches (`python -m benchmarks.board_plain`, "
        f"{when_and_load(data)}):",
        "",
        "| network | command | wall | CPU | clock asked | Fmax reached | rounds | gate-level check |",
        "|---|---|---:|---:|---:|---:|---:|---|",
    ]
    for name, run in data["runs"].items():
        check = run["stages_s"].get("gate_level")
        checked = f"passed, {check:.0f} s" if run.get("gate_level_passed") else "failed"
        lines.append(
            f"| {name} | `{run['command'].split(' -o ')[0]}` | {run['wall_s']:.0f} s | "
            f"{run['cpu_s']:.0f} s | {run['clock_asked_mhz'] or 0:.1f} MHz | "
            f"{run['fmax_mhz']:.1f} MHz{'' if run.get('timing_met') else ' (missed)'} | "
            f"{run['rounds']} | {checked} |"
        )
    return lines


def main() -> int:
    from benchmarks.machine import machine_info

    data = {**measure(), "machine": machine_info()}
    return publish(data, section(data), RESULT, HEADING)


if __name__ == "__main__":
    sys.exit(main())
