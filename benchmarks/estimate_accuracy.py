"""The first screen's LUT and DSP estimates against Yosys' counts, per layer and per network.

README's quick-start network (``my_net.onnx``, exported by README's Python block) and the
shipped 4-bit MLP (``examples/models/mlp_4bit.onnx`` with ``blueprints/mlp.yaml``), each
built with ``--prefer rtl --synth --verify none`` for a 7-series part (the Pynq-Z1's
``xc7z020clg400-1``) and an UltraScale+ part (``xczu7ev-ffvc1156-2-e``), one fresh
``brainsmith build`` process at a time. From each report.json: every layer's estimate (and
who made it, ``estimated_by``) beside Yosys' count, and the estimated and measured totals of
the synthesised layers (the numbers the build's summary prints). Also the host's cost of the
quick-start network's float input quantizer (the layer ``Thresholding_rtl_0`` otherwise
builds), to compare with what it costs in hardware.

    .venv/bin/python -m benchmarks.estimate_accuracy [--before OLD.json] [--networks ...]

``--networks cnv conv_pad residual`` measures the shipped networks held out of every fit
(``examples/models/<name>.onnx`` with ``blueprints/<name>.yaml``) instead; the runs of
networks not measured are kept from the previous results, each with its own load and time.

Writes benchmarks/results/estimate_accuracy.json (every layer's estimate and count, the
totals, the load, the machine) and its section of benchmarks/RESULTS.md (with ``--before``:
beside the network totals of an earlier run's results). Yosys' counts are cached by content
(``brainsmith.hardware.synthesis``), so a second run synthesises nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.first_hour import update_results, watching_load
from benchmarks.machine import machine_info

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
RESULT = HERE / "results" / "estimate_accuracy.json"
HEADING = "## Estimates against Yosys on the first screen (python -m benchmarks.estimate_accuracy)"
BIN = Path(sys.executable).parent
PARTS = {"7-series": "xc7z020clg400-1", "UltraScale+": "xczu7ev-ffvc1156-2-e"}
KEYS = ("LUT", "DSP")
# the shipped networks and their blueprints: the MLP, and networks held out of every fit
SHIPPED = {"mlp_4bit": "mlp", "cnv": "cnv", "conv_pad": "conv_pad", "residual": "residual"}
DEFAULT = ("quick_start", "mlp_4bit")
HELD_OUT = ("cnv", "conv_pad", "residual")


def quick_start_python() -> str:
    """README's quick-start Python block (it exports my_net.onnx, x.npy and y.npy)."""
    text = (REPO / "README.md").read_text()
    section = text[text.index("## Quick start") : text.index("## The two commands")]
    (python,) = re.findall(r"```python\n(.*?)```", section, re.S)
    return python


def networks(folder: Path, names: tuple[str, ...] = DEFAULT) -> dict[str, list[str]]:
    """Each of ``names``' model and blueprint arguments (the quick-start one exported here)."""
    if "quick_start" in names:
        subprocess.run([sys.executable, "-c", quick_start_python()], cwd=folder, check=True,
                       capture_output=True)  # fmt: skip
    found = {"quick_start": [str(folder / "my_net.onnx")]}
    for name, blueprint in SHIPPED.items():
        found[name] = [
            str(REPO / "examples" / "models" / f"{name}.onnx"),
            str(REPO / "blueprints" / f"{blueprint}.yaml"),
        ]
    return {name: found[name] for name in names}


def build(arguments: list[str], part: str, out: Path) -> dict:
    """One fresh ``brainsmith build`` with synthesis; its report.json and wall seconds. The
    build imports this checkout's brainsmith (the environment's may be another worktree's)."""
    argv = [str(BIN / "brainsmith"), "build", *arguments, "--prefer", "rtl", "--part", part,
            "--synth", "--verify", "none", "-o", str(out)]  # fmt: skip
    path = os.pathsep.join(filter(None, (str(REPO), os.environ.get("PYTHONPATH"))))
    began = time.perf_counter()
    done = subprocess.run(
        argv, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": path}
    )
    if done.returncode:
        raise SystemExit(f"{shlex.join(argv)} failed:\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
    report: dict = json.loads((out / "report.json").read_text())
    return {"report": report, "seconds": round(time.perf_counter() - began, 1)}


def layers(report: dict) -> list[dict]:
    """Per synthesised layer: its kind, folding, estimate (and its source) and Yosys' count."""
    counted = {x["name"]: x for x in report["synthesis"]["layers"] if x.get("counts")}
    found = []
    for layer in report["layers"]:
        synthesised = counted.get(layer["name"])
        if synthesised is None:
            continue
        counts = synthesised["counts"]
        found.append(
            {
                "name": layer["name"],
                "kind": synthesised["op_type"],
                "estimate": {key: layer.get(key) for key in KEYS},
                "estimated_by": {key: layer.get("estimated_by", {}).get(key) for key in KEYS},
                "yosys": {
                    **{key: counts[key] for key in KEYS},
                    "BRAM_18K": counts["BRAM_18K"] + 2 * counts["BRAM_36K"],
                    "FF": counts["FF"],
                },
            }
        )
    return found


def error(estimate: float | None, measured: float) -> float | None:
    """(estimate - count) / count; None without an estimate or where Yosys counts 0."""
    if estimate is None or not measured:
        return None
    return round((estimate - measured) / measured, 4)


def host_quantizer_seconds(frames: int = 100_000) -> float:
    """Seconds per frame the host takes to quantise a frame of 64 float32 inputs to INT8 as
    the quick-start network's first layer does (scale, round half to even, clip), numpy,
    over ``frames`` frames at once."""
    import numpy as np

    x = np.random.default_rng(0).uniform(-1, 1, (frames, 64)).astype(np.float32)
    began = time.perf_counter()
    np.clip(np.round(x / np.float32(0.0078125)), -128, 127).astype(np.int8)
    return (time.perf_counter() - began) / frames


def measure(names: tuple[str, ...] = DEFAULT) -> dict:
    """Build and synthesise ``names`` for each part, one fresh process at a time."""
    results: list[dict] = []
    record: dict = {}
    measured = time.strftime("%Y-%m-%d %H:%M:%S")
    with tempfile.TemporaryDirectory(prefix="brainsmith-bench-") as tmp:
        folder = Path(tmp)
        found = networks(folder, names)
        with watching_load(record):
            for network, arguments in found.items():
                for family, part in PARTS.items():
                    run = build(arguments, part, folder / f"{network}-{family}")
                    report, synthesis = run["report"], run["report"]["synthesis"]
                    results.append(
                        {
                            "network": network,
                            "family": family,
                            "part": part,
                            "held_out": network in HELD_OUT,
                            "seconds": run["seconds"],
                            "layers": layers(report),
                            "estimated": {k: synthesis["estimated"].get(k) for k in KEYS},
                            "yosys": {k: synthesis["totals"].get(k) for k in KEYS},
                            "error": {k: synthesis["estimate_error"].get(k) for k in KEYS},
                        }
                    )
                    print(network, family, results[-1]["estimated"], results[-1]["yosys"])
    for run in results:  # each run's conditions, kept where later runs measure others
        run["load"], run["measured"] = record, measured
    return {
        "benchmark": "estimate_accuracy",
        "runs": results,
        "host_quantizer_s_per_frame": host_quantizer_seconds(),
        "load": record,
        "machine": machine_info(),
        "measured": measured,
    }


def merged(data: dict, earlier: dict) -> dict:
    """``data`` with ``earlier``'s runs of the networks ``data`` did not measure (each run
    keeps its own load and time), in the order of ``DEFAULT`` and ``HELD_OUT``."""
    fresh = {run["network"] for run in data["runs"]}
    kept = [
        {
            **run,
            "load": run.get("load", earlier["load"]),
            "measured": run.get("measured", earlier["measured"]),
        }
        for run in earlier["runs"]
        if run["network"] not in fresh
    ]
    order = {name: index for index, name in enumerate((*DEFAULT, *HELD_OUT))}
    runs = sorted([*kept, *data["runs"]], key=lambda run: order.get(run["network"], len(order)))
    return {**data, "runs": runs}


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:+.0f} %"


def _count(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"


def section(data: dict) -> list[str]:
    """The RESULTS.md section of ``data``."""
    machine = data["machine"]
    batches: dict[str, dict] = {}  # each time runs were measured: its networks and load
    for run in data["runs"]:
        batch = batches.setdefault(run.get("measured", data["measured"]), {"networks": []})
        batch["load"] = run.get("load", data["load"])
        if run["network"] not in batch["networks"]:
            batch["networks"].append(run["network"])
    conditions = "; ".join(
        f"{', '.join(batch['networks'])} measured {when}, 1-minute load average "
        f"{batch['load'].get('load_before', '?')} before, {batch['load'].get('load_after', '?')} "
        "after"
        for when, batch in batches.items()
    )
    held_out = sorted({run["network"] for run in data["runs"] if run.get("held_out")})
    lines = [
        HEADING,
        "",
        "README's quick-start network and the shipped 4-bit MLP (`blueprints/mlp.yaml`)"
        + (
            f", and the shipped networks no model was fitted to ({', '.join(held_out)}: "
            "`examples/models/<name>.onnx` with `blueprints/<name>.yaml`)"
            if held_out
            else ""
        )
        + ", each built with `--prefer rtl --synth --verify none` for a 7-series and an "
        "UltraScale+ part, one fresh process at a time; Yosys (`synth_xilinx`, out of context) "
        "counts every RTL layer. The estimate is the build's (report.json, the summary's "
        "`estimated ... for the same layers`); the error is (estimate - count) / count. "
        f"{machine['cpu_count']} cores ({machine['cpu']}); {conditions}.",
        "",
        "| network | part | LUT estimate / Yosys | error | before | DSP estimate / Yosys "
        "| error | before |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    before = {(r["network"], r["part"]): r for r in data.get("before", [])}
    for run in data["runs"]:
        est, yos, err = run["estimated"], run["yosys"], run["error"]
        old = before.get((run["network"], run["part"]), {"estimated": {}, "error": {}})
        was = {
            key: f"{_count(old['estimated'].get(key))} ({_percent(old['error'].get(key))})"
            if key in old["estimated"]
            else "-"
            for key in KEYS
        }
        lines.append(
            f"| {run['network']} | {run['part']} | {_count(est['LUT'])} / {_count(yos['LUT'])} "
            f"| {_percent(err['LUT'])} | {was['LUT']} | {_count(est['DSP'])} / "
            f"{_count(yos['DSP'])} | {_percent(err['DSP'])} | {was['DSP']} |"
        )
    lines += ["", *_off(data["runs"])]
    lines += [
        "",
        "Per layer (estimate by `estimated_by`, Yosys' count):",
        "",
        "| network | part | layer | LUT (by) | LUT error | DSP (by) | DSP error |",
        "|---|---|---|---:|---:|---:|---:|",
    ]
    for run in data["runs"]:
        for layer in run["layers"]:
            est, by, yos = layer["estimate"], layer["estimated_by"], layer["yosys"]
            lines.append(
                f"| {run['network']} | {run['part']} | {layer['name']} "
                f"| {_count(est['LUT'])} / {yos['LUT']:,} ({by['LUT']}) "
                f"| {_percent(error(est['LUT'], yos['LUT']))} "
                f"| {_count(est['DSP'])} / {yos['DSP']} ({by['DSP']}) "
                f"| {_percent(error(est['DSP'], yos['DSP']))} |"
            )
    per_frame = data["host_quantizer_s_per_frame"]
    lines += [
        "",
        f"The quick-start network's float input quantizer on the host instead (numpy: scale, "
        f"round, clip 64 float32 values to INT8, 100,000 frames at once): "
        f"{per_frame * 1e9:,.0f} ns per frame on this machine.",
    ]
    return lines


def _off(runs: list[dict], bound: float = 0.25) -> list[str]:
    """The layers whose LUT estimate is more than ``bound`` off Yosys' count, by kind."""
    kinds: dict[str, list[str]] = {}
    for run in runs:
        for layer in run["layers"]:
            found = error(layer["estimate"]["LUT"], layer["yosys"]["LUT"])
            if found is not None and abs(found) > bound:
                kinds.setdefault(layer["kind"], []).append(
                    f"{run['network']} {run['family']} {layer['name']} "
                    f"{_count(layer['estimate']['LUT'])} / {layer['yosys']['LUT']:,} "
                    f"({_percent(found)})"
                )
    if not kinds:
        return [f"Every layer's LUT estimate is within {100 * bound:.0f} % of Yosys' count."]
    return [
        f"Layers whose LUT estimate is more than {100 * bound:.0f} % off Yosys' count "
        "(estimate / count):",
        "",
        *(f"- {kind}: {'; '.join(found)}" for kind, found in kinds.items()),
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, help="an earlier run's results, to compare")
    parser.add_argument(
        "--networks", nargs="+", default=list(DEFAULT), choices=["quick_start", *SHIPPED],
        help="networks to measure (the others' runs are kept from the previous results)",
    )  # fmt: skip
    args = parser.parse_args()
    data = measure(tuple(args.networks))
    if RESULT.exists():
        data = merged(data, json.loads(RESULT.read_text()))
    if args.before:
        earlier = json.loads(args.before.read_text())
        data["before"] = [
            {k: run[k] for k in ("network", "part", "estimated", "yosys", "error")}
            for run in earlier["runs"]
        ]
        data["before_measured"] = earlier["measured"]
    RESULT.write_text(json.dumps(data, indent=2) + "\n")
    update_results(section(data), HEADING)
    print("\n".join(section(data)))
    print(f"-> {RESULT.relative_to(REPO)}, benchmarks/RESULTS.md")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    sys.exit(main())
