"""Synthesis of the shipped networks: each built with every layer RTL for an UltraScale+ part
and ``build.synth`` on (no verification), then ``brainsmith synth`` on the finished build.

    .venv/bin/python -m benchmarks.synth_networks [--network residual ...]

Networks: examples/models/cnv.onnx, conv_pad.onnx and residual.onnx with their blueprints,
zoo/resnet8.onnx and zoo/mobilenet_block.onnx with none (the default blueprint). Each build
starts with an empty private synthesis cache (BRAINSMITH_CACHE_DIR), so the build's
synthesis is cold (every layer through Yosys, two at a time); ``brainsmith synth`` on the
same folder with the same cache is the warm run (every layer looked up).

Per network: the layers synthesised of all (each other one with its status and reason),
Yosys' totals (LUT, FF, CARRY, DSP, BRAM_18K counting a RAMB36 as two, URAM), the estimated
totals (report.json ``totals``: FINN's cost models, brainsmith's where FINN has none), the
error of the estimate of the synthesised layers' total, per layer kind the worst layer's
error per resource, and the seconds: the build, its synthesis (cold), ``brainsmith synth``
(warm, whole process and synthesis). A build that fails is recorded with its reason.

Writes benchmarks/results/synth_networks.json (with machine info and the load average before
and after each network); ``benchmarks.run`` puts the tables in RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
PART = "xczu7ev-ffvc1156-2-e"
ESTIMATED = ("LUT", "DSP", "BRAM_18K", "URAM")  # what FINN and brainsmith estimate
MEASURED = ("LUT", "FF", "CARRY", "DSP", "BRAM_18K", "URAM")
LUTRAM_NOTE = (
    "The MVAU failures are Yosys' own: for UltraScale(+) its LUT RAM description "
    "(`share/xilinx/lutrams_xcu.txt`) offers a single-port LUT RAM of 16 address bits, one "
    "bit wide, which its mapping file (`lutrams_xc5v_map.v`) has no case for (it maps 5 to 9 "
    "address bits); a layer whose weight memory Yosys places in such a RAM stops there."
)
HLS_NOTE = (
    "The HLS layers have no RTL backend (`--prefer rtl` leaves them HLS); Yosys has no RTL "
    "of theirs to read."
)
# name: (model under examples/models, blueprint under blueprints or None)
NETWORKS = {
    "cnv": ("cnv", "cnv"),
    "conv_pad": ("conv_pad", "conv_pad"),
    "residual": ("residual", "residual"),
    "resnet8": ("zoo/resnet8", None),
    "mobilenet_block": ("zoo/mobilenet_block", None),
}


def load() -> list[float]:
    return list(os.getloadavg())


def synth_json(folder: Path, cache: Path) -> tuple[float, int, dict]:
    """``brainsmith synth FOLDER --json`` with ``cache``: (seconds, exit code, output); exit
    code 1 (a layer Yosys rejects) still has its output."""
    env = {**os.environ, "BRAINSMITH_CACHE_DIR": str(cache)}
    began = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-m", "brainsmith", "synth", str(folder), "--json"],
        capture_output=True, text=True, env=env, timeout=3600,
    )  # fmt: skip
    seconds = time.perf_counter() - began
    if result.returncode not in (0, 1):
        raise RuntimeError(f"brainsmith synth {folder} failed:\n{result.stderr}")
    return seconds, result.returncode, json.loads(result.stdout)


def worst_errors(report: dict) -> dict[str, dict[str, dict]]:
    """Per layer kind (op type) and resource: the layer whose estimate is furthest off."""
    worst: dict[str, dict[str, dict]] = {}
    for layer in report["layers"]:
        for key, error in (layer.get("estimate_error") or {}).items():
            kind = worst.setdefault(layer["op_type"], {})
            if key not in kind or abs(error) > abs(kind[key]["error"]):
                measured = measured_count(layer["measured"], key)
                kind[key] = {"layer": layer["name"], "error": error,
                             "estimate": layer[key], "measured": measured}  # fmt: skip
    return worst


def estimated_layers_error(report: dict) -> dict[str, dict]:
    """Per resource, over the synthesised layers that have an estimate of it: how many, the
    estimates' sum, Yosys' sum and the error of that sum (the report's own error of the
    total needs an estimate of every synthesised layer)."""
    found: dict[str, dict] = {}
    for key in ESTIMATED:
        pairs = [
            (layer[key], measured_count(layer["measured"], key))
            for layer in report["layers"]
            if "measured" in layer
            and layer.get(key) is not None
            and key not in layer.get("not_estimated", ())
        ]
        estimate, measured = sum(p[0] for p in pairs), sum(p[1] for p in pairs)
        found[key] = {
            "layers": len(pairs),
            "estimated": round(estimate, 1),
            "measured": measured,
            "error": round((estimate - measured) / measured, 4) if measured else None,
        }
    return found


def measured_count(counts: dict, key: str) -> int:
    """Yosys' count under an estimate's name (a RAMB36 is two BRAM_18K)."""
    return counts.get(key, 0) + (2 * counts.get("BRAM_36K", 0) if key == "BRAM_18K" else 0)


def layer_rows(report: dict) -> list[dict]:
    """Each layer: its kind, estimates, Yosys' counts and the estimates' errors."""
    return [
        {"name": layer["name"], "op_type": layer["op_type"],
         "estimated": {key: layer.get(key) for key in ESTIMATED},
         "not_estimated": layer.get("not_estimated", []),
         "measured": layer.get("measured"), "estimate_error": layer.get("estimate_error")}
        for layer in report["layers"]
    ]  # fmt: skip


def network(name: str, folder: Path) -> dict:
    """Build ``name`` with synthesis, then synthesise it again warm; the facts of both."""
    import brainsmith
    from benchmarks.verify_cost import model_path
    from brainsmith.planning.errors import BuildError

    model, blueprint = NETWORKS[name]
    cache = folder / f"cache-{name}"
    cache.mkdir(mode=0o700)
    os.environ["BRAINSMITH_CACHE_DIR"] = str(cache)
    out = folder / name
    row: dict = {
        "network": name,
        "model": f"examples/models/{model}.onnx",
        "blueprint": f"blueprints/{blueprint}.yaml" if blueprint else None,
        "load_average_before": load(),
    }
    began = time.perf_counter()
    try:
        result = brainsmith.build(
            str(model_path(model)),
            str(REPO / "blueprints" / f"{blueprint}.yaml") if blueprint else None,
            str(out),
            options={"fpga_part": PART, "synth": True},
            prefer="rtl",
            verify="none",
        )
    except BuildError as exc:
        row.update(status="failed", step=exc.step, reason=exc.reason,
                   build_s=round(time.perf_counter() - began, 1), load_average_after=load())  # fmt: skip
        return row
    build_s = time.perf_counter() - began
    report = result.report
    section = report["synthesis"]
    warm_s, warm_code, warm = synth_json(out, cache)
    synthesised = [x for x in section["layers"] if x["status"] == "synthesised"]
    totals = dict(section["totals"])
    totals["BRAM_18K"] = totals.get("BRAM_18K", 0) + 2 * totals.get("BRAM_36K", 0)
    row.update(
        status=report["status"],
        layers=len(report["layers"]),
        synthesis_layers=len(section["layers"]),
        synthesised=len(synthesised),
        not_synthesised=[
            {
                "name": x["name"],
                "op_type": x["op_type"],
                "status": x["status"],
                "reason": x["reason"],
                "log": x["log"],
            }
            for x in section["layers"]
            if x["status"] != "synthesised"
        ],
        complete=section["complete"],
        tool=section["tool"],
        family=section["family"],
        measured={key: totals.get(key, 0) for key in MEASURED},
        estimated={key: report["totals"].get(key) for key in ESTIMATED},
        incomplete=report.get("incomplete") or {},
        estimated_synthesised=section["estimated"],
        estimate_error=section["estimate_error"],
        estimated_layers_error=estimated_layers_error(report),
        worst_layer_errors=worst_errors(report),
        fixes=sorted({fix for x in section["layers"] for fix in x["fixes"]}),
        build_s=round(build_s, 1),
        cold_synthesis_s=section["seconds"],
        warm_process_s=round(warm_s, 2),
        warm_synthesis_s=warm["seconds"],
        warm_exit_code=warm_code,
        warm_cached=sum(1 for x in warm["layers"] if x["cached"]),
        estimated_fps=report["performance"]["estimated_fps"],
        load_average_after=load(),
        layer_facts=layer_rows(report),
    )
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--network", action="append", choices=list(NETWORKS))
    args = parser.parse_args()
    from benchmarks.machine import machine_info

    rows = []
    out = HERE / "results" / "synth_networks.json"
    with tempfile.TemporaryDirectory(prefix="brainsmith-synth-networks-") as tmp:
        for name in args.network or NETWORKS:
            rows.append(network(name, Path(tmp)))
            print(json.dumps(rows[-1]), flush=True)
            out.write_text(
                json.dumps({"benchmark": "synth_networks", "part": PART, "jobs": 2,
                            "networks": rows, "machine": machine_info()}, indent=2) + "\n"
            )  # fmt: skip
    print("\n".join(section(json.loads(out.read_text()))))
    print(f"-> {out.relative_to(REPO)}")
    return 0


def section(data: dict) -> list[str]:
    """RESULTS.md's section: per network Yosys' totals and the seconds; the estimates beside
    them with their errors; per layer kind the worst layer estimate."""
    done = [r for r in data["networks"] if r["status"] == "ok"]
    tool = done[0]["tool"] if done else "Yosys"
    lines = [
        "",
        "## Synthesis of the shipped networks",
        "",
        f"Each network built with every layer RTL for `{data['part']}`, `build.synth` on and "
        f"no verification; {tool}, `synth_xilinx` out of context, {data['jobs']} layers at a "
        "time, each network with its own empty synthesis cache, then `brainsmith synth` on "
        "the finished build with the same cache (warm) (`python -m benchmarks.synth_networks`). "
        "Yosys' counts of the synthesised layers; BRAM_18K counts a RAMB36 as two; no place "
        "and route:",
        "",
        "| network | layers synthesised | LUT | FF | CARRY | DSP | BRAM_18K | URAM "
        "| build (incl. synthesis) | synthesis cold | warm: process (synthesis) "
        "| load average before / after |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in data["networks"]:
        load = f"{r['load_average_before'][0]:.2f} / {r['load_average_after'][0]:.2f}"
        if r["status"] != "ok":
            lines.append(
                f"| {r['network']} | build failed at {r['step']}: {r['reason']} "
                f"| | | | | | | {r['build_s']:.0f} s | | | {load} |"
            )
            continue
        m = r["measured"]
        lines.append(
            f"| {r['network']} | {r['synthesised']} / {r['synthesis_layers']} "
            f"| {' | '.join(f'{m[k]:,}' for k in MEASURED)} | {r['build_s']:.0f} s "
            f"| {r['cold_synthesis_s']:.1f} s | {r['warm_process_s']:.1f} s "
            f"({r['warm_synthesis_s']:.1f} s) | {load} |"
        )
    missing = [(r["network"], x) for r in done for x in r["not_synthesised"]]
    lines.append("")
    if missing:
        lines.append("Layers not synthesised (the warm run tries a failed layer again):")
        lines.append("")
        lines += [f"- {n}: {x['name']} ({x['op_type']}, {x['status']}): `{x['reason']}`"
                  for n, x in missing]  # fmt: skip
        reasons = {x["reason"] for _, x in missing}
        if any("invalid OPTION_ABITS/WIDTH" in reason for reason in reasons):
            lines += ["", LUTRAM_NOTE]
        if any(reason.startswith("HLS") for reason in reasons):
            lines += ["", HLS_NOTE]
    else:
        lines.append("Every layer of every network built was synthesised.")
    lines += [
        "",
        "Estimated: report.json's `totals` (FINN's cost models; brainsmith's fitted RTL models "
        'where FINN has none), "at least" where some layer has no estimate of that '
        "resource. Beside it, over the synthesised layers that have an estimate of the "
        "resource (how many, of those synthesised): their estimates' sum / Yosys' sum and the "
        "error (estimate - Yosys' count) / Yosys' count; where all of them have one this is "
        "report.json's `synthesis.estimate_error`:",
        "",
        "| network | LUT | DSP | BRAM_18K | URAM |",
        "|---|---|---|---|---|",
    ]
    for r in done:
        cells = []
        for key in ESTIMATED:
            text = ("at least " if key in r["incomplete"] else "") + _n(r["estimated"][key])
            part = r["estimated_layers_error"][key]
            text += f"; {part['layers']} of {r['synthesised']}: {_n(part['estimated'])} / "
            text += f"{part['measured']:,}"
            if part["error"] is not None:
                text += f" ({part['error']:+.0%})"
            cells.append(text)
        lines.append(f"| {r['network']} | {' | '.join(cells)} |")
    lines += [
        "",
        "The worst layer estimate per layer kind and resource (estimate / Yosys' count, "
        "error), where the kind has an estimate and Yosys counts more than 0:",
        "",
        "| network | layer kind | LUT | DSP | BRAM_18K | URAM |",
        "|---|---|---|---|---|---|",
    ]
    for r in done:
        for kind, worst in sorted(r["worst_layer_errors"].items()):
            cells = [
                f"{_n(w['estimate'])} / {w['measured']:,} ({w['error']:+.0%})"
                if (w := worst.get(key))
                else ""
                for key in ESTIMATED
            ]
            lines.append(f"| {r['network']} | {kind} | {' | '.join(cells)} |")
    return lines


def _n(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"


if __name__ == "__main__":
    sys.exit(main())
