"""What ``--verify each`` costs beside the default ``verify: final`` on the README's
quick-start network: README's Python block exports my_net.onnx with its vectors (x.npy,
y.npy) into a temporary folder, then README's build command runs there as written, and again
with ``--verify each``, alternating, each a fresh ``brainsmith`` process timed from outside
(wall, and CPU of the process and the helpers it waited for).

    .venv/bin/python -m benchmarks.quick_start_verify [--runs 3]

Writes benchmarks/results/quick_start_verify.json (medians, every run, the steps each mode
verified, the load, the machine) and its section of benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.first_hour import update_results, watching_load

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
RESULT = HERE / "results" / "quick_start_verify.json"
HEADING = "## Verification on the quick-start network (verify: final vs each)"
BIN = Path(sys.executable).parent
MODES = ("final", "each")


def quick_start() -> tuple[str, str]:
    """README's quick-start Python block and its ``brainsmith build`` line."""
    text = (REPO / "README.md").read_text()
    section = text[text.index("## Quick start") : text.index("## The two commands")]
    blocks = re.findall(r"```(python|sh)\n(.*?)```", section, re.S)
    (python,) = [body for lang, body in blocks if lang == "python"]
    lines = [line.split("#")[0].strip() for lang, body in blocks if lang == "sh"
             for line in body.splitlines()]  # fmt: skip
    (build,) = [
        line for line in lines if line.startswith("brainsmith build ") and "--board" not in line
    ]
    return python, build


def timed(argv: list[str], cwd: Path) -> dict:
    """``argv`` run in ``cwd``: wall and CPU seconds; raises if it fails."""
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    with tempfile.TemporaryFile("w+") as out:
        began = time.perf_counter()
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - began
        out.seek(0)
        text = out.read()
    if os.waitstatus_to_exitcode(status):
        raise SystemExit(f"{shlex.join(argv)} failed:\n{text[-3000:]}")
    return {"wall_s": round(wall, 2), "cpu_s": round(usage.ru_utime + usage.ru_stime, 2)}


def checked(folder: Path) -> dict:
    """The steps a build verified, their verification seconds, and the summary's line."""
    report = json.loads((folder / "report.json").read_text())
    checks = [s for s in report["steps"] if s.get("verification")]
    rerun = [s for s in checks if not s["verification"].get("unchanged")]
    return {
        "steps": len(report["steps"]),
        "verified_steps": len(checks),
        "run_again": len(rerun),
        "verify_s": round(sum(s["verification"].get("seconds") or 0.0 for s in checks), 2),
        "build_s": report["seconds"],
    }


def measure(runs: int) -> dict:
    python, build = quick_start()
    samples: dict[str, list[dict]] = {mode: [] for mode in MODES}
    record: dict = {}
    with tempfile.TemporaryDirectory(prefix="brainsmith-bench-") as tmp:
        folder = Path(tmp)
        timed([sys.executable, "-c", python], folder)
        argv = shlex.split(build)
        with watching_load(record):
            for index in range(runs + 1):  # run 0 warms the page cache and is discarded
                for mode in MODES:
                    out = folder / f"{mode}-{index}"
                    flags = ["--verify", "each"] if mode == "each" else []
                    run = timed([*argv[:-1], str(out), *flags], folder)
                    if index:
                        samples[mode].append({**run, **checked(out)})
                    shutil.rmtree(out, ignore_errors=True)
    result: dict = {"benchmark": "quick_start_verify", "command": build, "runs": runs}
    for mode, values in samples.items():
        result[mode] = {
            "wall_s": round(statistics.median(v["wall_s"] for v in values), 2),
            "cpu_s": round(statistics.median(v["cpu_s"] for v in values), 2),
            "verify_s": round(statistics.median(v["verify_s"] for v in values), 2),
            "runs": values,
        }
    result["ratio_wall"] = round(result["each"]["wall_s"] / result["final"]["wall_s"], 3)
    result["ratio_cpu"] = round(result["each"]["cpu_s"] / result["final"]["cpu_s"], 3)
    return {**result, "load": record, "measured": time.strftime("%Y-%m-%d %H:%M:%S")}


def section(data: dict) -> list[str]:
    """The RESULTS.md section of ``data``."""
    machine, load = data["machine"], data["load"]
    during = load.get("load_1min_during", {})
    lines = [
        HEADING,
        "",
        f"README's quick-start network (`my_net.onnx`, exported by README's Python block) built "
        f"with README's command `{data['command']}` (`verify: final`, the default) and again with "
        f"`--verify each`, alternating, {data['runs']} fresh processes each after one discarded "
        f"warm-up pair, timed from outside (`python -m benchmarks.quick_start_verify`); medians. "
        f"{machine['cpu_count']} cores ({machine['cpu']}); 1-minute load average "
        f"{load['load_before'][0]} → {load['load_after'][0]} (mean {during.get('mean', '-')}, max "
        f"{during.get('max', '-')} during).",
        "",
        "| verify | steps verified (run again) | wall | CPU | verification | runs (wall) |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for mode in MODES:
        row = data[mode]
        first = row["runs"][0]
        walls = ", ".join(f"{run['wall_s']:.1f}" for run in row["runs"])
        lines.append(
            f"| {mode} | {first['verified_steps']} of {first['steps']} ({first['run_again']}) | "
            f"{row['wall_s']:.1f} s | {row['cpu_s']:.1f} s | {row['verify_s']:.2f} s | {walls} s |"
        )
    lines += [
        "",
        f"`--verify each` / `final`: {data['ratio_wall']:.2f}x wall, {data['ratio_cpu']:.2f}x "
        f"CPU. Verification = the seconds report.json gives the checks "
        f"(`steps[].verification.seconds`). Measured {data['measured']}. Raw numbers: "
        f"`benchmarks/results/quick_start_verify.json`.",
    ]
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="fresh processes per mode")
    args = parser.parse_args()
    from benchmarks.machine import machine_info

    data = {**measure(max(1, args.runs)), "machine": machine_info()}
    RESULT.parent.mkdir(exist_ok=True)
    RESULT.write_text(json.dumps(data, indent=2) + "\n")
    lines = section(data)
    update_results(lines, HEADING)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
