"""Design-space exploration: ``brainsmith explore`` with prefix reuse against the same
variants built as independent ``brainsmith build`` runs, and the per-variant cost of the
Dask path against running in-process.

The space is the shipped ``blueprints/mlp_explore.yaml`` (12 variants of the 4-bit MLP;
``--space cnv`` uses a 12-variant space of the shipped CNV instead). Every figure is the
wall time of fresh ``brainsmith`` processes, as a user runs them:

- ``explore_2_workers``: ``brainsmith explore --workers 2`` (a local Dask cluster);
- ``builds_sequential`` / ``builds_2_parallel``: one ``brainsmith build`` per variant (its
  plain blueprint written out), one at a time, or two at a time like 2 workers;
- ``explore_1_worker`` / ``explore_in_process``: ``--workers 1`` and ``--workers 0``, whose
  difference, less starting and stopping the cluster, is the Dask overhead per variant.

Variants alternate in each round so that load drifts hit all of them. The goal is explore
at 2 workers >= 2x faster than the independent builds (the fair baseline also runs two at
a time).

    .venv/bin/python -m benchmarks.explore [--runs 3] [--space mlp|cnv]

Prints the medians and writes benchmarks/results/explore.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
BRAINSMITH = str(Path(sys.executable).with_name("brainsmith"))
SPACES = {
    "mlp": ("examples/models/mlp_4bit.onnx", "blueprints/mlp_explore.yaml", None),
    "cnv": (
        "examples/models/cnv.onnx",
        "blueprints/cnv.yaml",
        {
            "design_space": {
                "backends": {"finn:Pool": ["hls"], "finn:Thresholding": ["rtl", "hls"]},
                "build": {"target_fps": [25000, 50000, 100000, 200000, 400000, 800000]},
            }
        },
    ),
}
GOAL = 2.0


def _env() -> dict:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # measure what users get: cached bytecode
    return env


def _run(args: list[str]) -> float:
    began = time.perf_counter()
    done = subprocess.run(args, capture_output=True, text=True, env=_env(), check=False)
    seconds = time.perf_counter() - began
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return seconds


def _blueprint(work: Path, space: str) -> Path:
    """The space's blueprint (written beside the base for a generated space)."""
    _, base, extra = SPACES[space]
    if extra is None:
        return REPO / base
    path = work / f"{space}_space.yaml"
    path.write_text(
        yaml.safe_dump({"name": f"{space}_space", "extends": str(REPO / base), **extra})
    )
    return path


def _variant_blueprints(blueprint: Path, work: Path) -> list[Path]:
    """Each variant written out as a plain blueprint for ``brainsmith build``."""
    from brainsmith.blueprint import load_blueprint

    loaded = load_blueprint(blueprint)
    space = loaded.design_space
    paths = []
    for index in space.indices():
        path = work / f"{space.variant_id(index)}.yaml"
        path.write_text(yaml.safe_dump(space.apply(loaded, index).to_dict(), sort_keys=False))
        paths.append(path)
    return paths


def _explore(model: str, blueprint: Path, out: Path, workers: int) -> tuple[float, dict]:
    seconds = _run(
        [
            BRAINSMITH,
            "explore",
            model,
            str(blueprint),
            "-o",
            str(out),
            "--workers",
            str(workers),
            "-q",
        ]
    )
    data = json.loads((out / "explore.json").read_text())
    assert all(v["status"] == "ok" for v in data["variants"]), "a variant failed"
    return seconds, data


def _builds(model: str, blueprints: list[Path], out: Path, parallel: int) -> float:
    began = time.perf_counter()
    commands = [
        [BRAINSMITH, "build", model, str(bp), "-o", str(out / bp.stem), "-q"] for bp in blueprints
    ]
    with ThreadPoolExecutor(parallel) as pool:
        list(pool.map(_run, commands))
    return time.perf_counter() - began


def measure(runs: int, space: str) -> dict:
    model = str(REPO / SPACES[space][0])
    work = Path(tempfile.mkdtemp(prefix="bench-explore-"))
    blueprint = _blueprint(work, space)
    try:
        variants = _variant_blueprints(blueprint, work)
        _builds(model, variants[:1], work / "warm", 1)  # bytecode and caches, once
        rows: dict[str, list[float]] = {
            k: []
            for k in (
                "explore_2_workers",
                "builds_sequential",
                "builds_2_parallel",
                "explore_1_worker",
                "explore_in_process",
            )
        }
        setup: dict[str, list[float]] = {"explore_1_worker": [], "explore_in_process": []}
        facts: dict = {}
        for run in range(runs):
            out = work / f"run{run}"
            seconds, data = _explore(model, blueprint, out / "e2", 2)
            rows["explore_2_workers"].append(seconds)
            facts = {
                k: data[k]
                for k in ("segments_run", "segments_reused", "steps_run", "steps_without_reuse")
            }
            rows["builds_sequential"].append(_builds(model, variants, out / "seq", 1))
            rows["builds_2_parallel"].append(_builds(model, variants, out / "par", 2))
            for name, workers in (("explore_1_worker", 1), ("explore_in_process", 0)):
                seconds, data = _explore(model, blueprint, out / name, workers)
                rows[name].append(seconds)
                timings = data["timings"]
                setup[name].append(timings["setup_seconds"] + timings["teardown_seconds"])
            shutil.rmtree(out, ignore_errors=True)
            print(
                f"run {run + 1}/{runs}: "
                + ", ".join(f"{k} {v[-1]:.1f} s" for k, v in rows.items()),
                flush=True,
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    median = {k: statistics.median(v) for k, v in rows.items()}
    n = len(variants)
    cluster_start = statistics.median(setup["explore_1_worker"]) - statistics.median(
        setup["explore_in_process"]
    )
    dask_extra = median["explore_1_worker"] - median["explore_in_process"]
    return {
        "benchmark": "explore",
        "model": SPACES[space][0],
        "blueprint": SPACES[space][1]
        if SPACES[space][2] is None
        else {"extends": SPACES[space][1], **SPACES[space][2]},
        "variants": n,
        "runs": runs,
        **facts,
        "seconds": {k: [round(x, 2) for x in v] for k, v in rows.items()},
        "median_seconds": {k: round(v, 2) for k, v in median.items()},
        "speedup_vs_builds_2_parallel": round(
            median["builds_2_parallel"] / median["explore_2_workers"], 2
        ),
        "speedup_vs_builds_sequential": round(
            median["builds_sequential"] / median["explore_2_workers"], 2
        ),
        "goal": f">= {GOAL}x against builds_2_parallel",
        "dask_local_cluster_start_and_stop_seconds": round(cluster_start, 2),
        "dask_overhead_per_variant_seconds": round((dask_extra - cluster_start) / n, 3),
        "dask_overhead_per_variant_with_cluster_start_and_stop_seconds": round(dask_extra / n, 3),
        "load_average": list(os.getloadavg()),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--space", choices=sorted(SPACES), default="mlp")
    args = parser.parse_args()
    from benchmarks.machine import machine_info

    result = {**measure(max(1, args.runs), args.space), "machine": machine_info()}
    name = "explore.json" if args.space == "mlp" else f"explore_{args.space}.json"
    out = HERE / "results" / name
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(
        json.dumps({k: v for k, v in result.items() if k not in ("machine", "seconds")}, indent=2)
    )
    ok = result["speedup_vs_builds_2_parallel"] >= GOAL
    print(
        f"explore at 2 workers: {result['speedup_vs_builds_2_parallel']}x the independent builds (goal {GOAL}x) {'ok' if ok else 'MISSED'}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
