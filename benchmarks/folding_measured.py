"""Folding by measurement: brainsmith's search against FINN's SetFolding at the same fps, each
design built with every layer RTL for an UltraScale+ part and synthesised by Yosys.

Unlike ``benchmarks.folding`` (FINN's estimates only), each folding here is a whole build
(no blueprint, ``--prefer rtl``, ``build.synth`` on, no verification, FIFOs at FINN's
depths for both foldings: ``build.size_fifos`` off): first with
``build.folding.search: finn`` (FINN's SetFolding with its defaults) at the target; where
FINN's folding reaches a lower fps than the target, brainsmith's search then folds for the
fps FINN reached (rounded down), otherwise for the target. Reported per folding: the
estimated fps, Yosys' LUT, FF, DSP, BRAM_18K (a RAMB36 counts as two) and URAM of the
synthesised layers, report.json's estimated totals beside them, the layers synthesised and
the seconds (build, its synthesis). Each build has its own empty synthesis cache.

    .venv/bin/python -m benchmarks.folding_measured [--fps 100000] [--model zoo/resnet8 ...]

Writes benchmarks/results/folding_measured.json (with machine info and the load average
before and after each build), keeping the rows of models not named; ``benchmarks.run`` puts
the table in RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
PART = "xczu7ev-ffvc1156-2-e"
MODELS = ("zoo/resnet8", "zoo/cnv_w2a2")
COMPARED = ("LUT", "FF", "DSP", "BRAM_18K", "URAM")
ESTIMATED = ("LUT", "DSP", "BRAM_18K", "URAM")


def built(name: str, folder: Path, label: str, fps: int, search: str) -> dict:
    """``name`` built at ``fps`` with ``search``'s folding and synthesised: its facts."""
    import brainsmith
    from benchmarks.verify_cost import model_path
    from brainsmith.planning.errors import BuildError

    tag = f"{name.replace('/', '-')}-{search}"
    cache = folder / f"cache-{tag}"
    cache.mkdir(mode=0o700)
    os.environ["BRAINSMITH_CACHE_DIR"] = str(cache)
    row: dict = {"model": name, "folding": label, "target_fps": fps,
                 "load_average_before": list(os.getloadavg())}  # fmt: skip
    began = time.perf_counter()
    try:
        result = brainsmith.build(
            str(model_path(name)), None, str(folder / tag),
            options={"fpga_part": PART, "synth": True, "target_fps": fps, "size_fifos": False,
                     "folding": {"search": search}},
            prefer="rtl", verify="none",
        )  # fmt: skip
    except BuildError as exc:
        row.update(status="failed", step=exc.step, reason=exc.reason,
                   build_s=round(time.perf_counter() - began, 1),
                   load_average_after=list(os.getloadavg()))  # fmt: skip
        return row
    report = result.report
    section = report["synthesis"]
    totals = dict(section["totals"])
    totals["BRAM_18K"] = totals.get("BRAM_18K", 0) + 2 * totals.get("BRAM_36K", 0)
    row.update(
        status=report["status"],
        fps=report["performance"]["estimated_fps"],
        synthesised=sum(1 for x in section["layers"] if x["status"] == "synthesised"),
        synthesis_layers=len(section["layers"]),
        not_synthesised=[
            {"name": x["name"], "status": x["status"], "reason": x["reason"]}
            for x in section["layers"]
            if x["status"] != "synthesised"
        ],
        measured={key: totals.get(key, 0) for key in COMPARED},
        estimated={key: report["totals"].get(key) for key in ESTIMATED},
        estimate_error=section["estimate_error"],
        build_s=round(time.perf_counter() - began, 1),
        synthesis_s=section["seconds"],
        tool=section["tool"],
        load_average_after=list(os.getloadavg()),
    )
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fps", type=int, default=100_000, help="the target frames per second")
    parser.add_argument("--model", action="append", help="a model under examples/models")
    args = parser.parse_args()
    from benchmarks.machine import machine_info

    out = HERE / "results" / "folding_measured.json"
    models = args.model or MODELS
    kept = json.loads(out.read_text())["rows"] if out.exists() else []
    rows: list[dict] = [r for r in kept if r["model"] not in models]  # other models' runs stay
    with tempfile.TemporaryDirectory(prefix="brainsmith-folding-measured-") as tmp:
        for name in models:
            finn = built(name, Path(tmp), "finn (SetFolding, default limits)", args.fps, "finn")
            rows.append(finn)
            print(json.dumps(finn), flush=True)
            if finn["status"] == "ok" and finn["fps"] < args.fps:
                fps, label = math.floor(finn["fps"]), "brainsmith at FINN's fps"
            else:
                fps, label = args.fps, "brainsmith"
            rows.append(built(name, Path(tmp), label, fps, "brainsmith"))
            print(json.dumps(rows[-1]), flush=True)
            data = {"target_fps": args.fps, "part": PART, "jobs": 2, "rows": rows,
                    "machine": machine_info()}  # fmt: skip
            out.write_text(json.dumps(data, indent=2) + "\n")
    print("\n".join(table(json.loads(out.read_text()))))
    print(f"-> {out.relative_to(REPO)}")
    return 0


def table(data: dict) -> list[str]:
    """The RESULTS.md section of a folding_measured.json."""
    lines = [
        "",
        "## Folding by measurement (brainsmith's search vs FINN's SetFolding, Yosys)",
        "",
        f"Each model built with no blueprint, every layer RTL, for `{data['part']}` at 5 ns, "
        "no verification, FIFOs at FINN's depths (not sized), and synthesised by Yosys "
        "(`synth_xilinx` out of context, "
        f"{data['jobs']} layers at a time, an empty cache per build; "
        "`python -m benchmarks.folding_measured`): first with FINN's SetFolding "
        f"(`build.folding.search: finn`, default limits) at {data['target_fps']:,} fps, then "
        "with brainsmith's search at the fps FINN's folding reached where it fell short. "
        "Measured: Yosys' counts (BRAM_18K counts a RAMB36 as two; no place and route); "
        "est.: report.json's estimated totals (FF: not estimated).",
        "",
        "| model | folding | fps (estimated) | layers synthesised | LUT (est.) | FF | DSP (est.) "
        "| BRAM_18K (est.) | URAM (est.) | build | synthesis | load average before / after |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in data["rows"]:
        load = f"{r['load_average_before'][0]:.2f} / {r['load_average_after'][0]:.2f}"
        if r["status"] != "ok":
            lines.append(
                f"| {r['model']} | {r['folding']} | failed at {r['step']}: {r['reason']} "
                f"| | | | | | | {r['build_s']:.0f} s | | {load} |"
            )
            continue
        m, e = r["measured"], r["estimated"]
        cells = [f"{m[k]:,}" + (f" ({_n(e[k])})" if k in ESTIMATED else "") for k in COMPARED]
        lines.append(
            f"| {r['model']} | {r['folding']} | {r['fps']:,.0f} "
            f"| {r['synthesised']} / {r['synthesis_layers']} | {' | '.join(cells)} "
            f"| {r['build_s']:.0f} s | {r['synthesis_s']:.0f} s | {load} |"
        )
    lines += ["", *comparison(data["rows"])]
    return lines


def comparison(rows: list[dict]) -> list[str]:
    """Per model: brainsmith's measured counts against FINN's, resource by resource."""
    lines = []
    for finn, ours in zip(rows[::2], rows[1::2], strict=False):
        if finn["status"] != "ok" or ours["status"] != "ok":
            continue
        failed = [  # a layer one folding has that Yosys did not finish: no fair comparison
            f"{r['folding']}: {x['name']} ({x['reason']})"
            for r in (finn, ours)
            for x in r["not_synthesised"]
            if x["status"] == "failed"
        ]
        if failed:
            lines.append(f"- {finn['model']}: not compared, a layer failed: {'; '.join(failed)}.")
            continue
        parts = []
        for key in COMPARED:
            a, b = ours["measured"][key], finn["measured"][key]
            change = f"{(a - b) / b:+.0%}" if b else ("same" if a == b else "from 0")
            parts.append(f"{key} {a:,} vs {b:,} ({change})")
        lines.append(
            f"- {finn['model']} at {ours['fps']:,.0f} vs {finn['fps']:,.0f} fps, brainsmith vs "
            f"FINN, measured: {'; '.join(parts)}."
        )
    return lines


def _n(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"


if __name__ == "__main__":
    sys.exit(main())
