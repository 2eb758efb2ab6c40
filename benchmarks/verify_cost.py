"""What per-step verification costs: the zoo's conv nets (FINN's CNV at full CIFAR-10 size,
2-bit, exported on demand; the ResNet-8, the MobileNet block, the keyword spotter), each
built with no blueprint at 100,000 fps with ``verify: none`` and with ``verify: each`` plus
the torch vectors, alternating, each run a fresh process.

    .venv/bin/python -m benchmarks.verify_cost [--runs 3] [--model zoo/cnv_w2a2 ...]

Prints the medians and the ratios, and merges into benchmarks/results/verify_cost.json (one
row per model) the per-step times (the step, and its verification) of the median run of each
variant.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

from benchmarks.build_overhead import child

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
MODELS = REPO / "examples" / "models"
TARGET = 1.3  # verify: each at most 1.3x the build without verification
MODELS_MEASURED = ("zoo/cnv_w2a2", "zoo/resnet8", "zoo/mobilenet_block", "zoo/kws_conv1d")

BUILD = """
import time
began = time.perf_counter()
import brainsmith
result = brainsmith.build({model!r}, None, {out!r}, verify={verify!r},
                          input_npy={inputs!r}, expected_npy={expected!r},
                          options={{"target_fps": 100000}})
assert result.status == "ok"
print(time.perf_counter() - began, flush=True)
import os; os._exit(0)
"""


def model_path(name: str) -> Path:
    path = MODELS / f"{name}.onnx"
    if not path.is_file() and name.startswith("zoo/"):
        from examples.zoo import export_network

        export_network(name.removeprefix("zoo/"))
    return path


def steps_of(out: str) -> list[dict]:
    report = json.loads(Path(out, "report.json").read_text())
    return [
        {
            "step": s["name"],
            "seconds": s.get("seconds"),
            "verify_seconds": (s.get("verification") or {}).get("seconds"),
            "unchanged": bool((s.get("verification") or {}).get("unchanged")),
            "max_error": (s.get("verification") or {}).get("max_error"),
        }
        for s in report["steps"]
        if s["status"] == "ok"
    ]


def measure(name: str, runs: int) -> dict:
    path = model_path(name)
    inputs, expected = (str(path.with_name(f"{path.stem}_{k}.npy")) for k in ("input", "expected"))
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    samples: dict[str, list[tuple[float, float, float, list[dict]]]] = {"none": [], "each": []}
    with tempfile.TemporaryDirectory(prefix="brainsmith-bench-") as tmp:
        for index in range(runs + 1):  # run 0 warms the page cache and is discarded
            for verify in ("none", "each"):
                out = os.path.join(tmp, f"{verify}-{index}")
                code = BUILD.format(
                    model=str(path),
                    out=out,
                    verify=verify,
                    inputs=inputs if verify == "each" else None,
                    expected=expected if verify == "each" else None,
                )
                wall, flow, cpu = child(code, env)
                if index:
                    samples[verify].append((wall, flow, cpu, steps_of(out)))
                shutil.rmtree(out, ignore_errors=True)
    result: dict = {"benchmark": "verify_cost", "model": str(path.relative_to(REPO)), "runs": runs}
    for verify, values in samples.items():
        ordered = sorted(values, key=lambda v: v[0])
        result[f"verify_{verify}"] = {
            "process_wall_s": round(statistics.median(v[0] for v in values), 3),
            "cpu_s": round(statistics.median(v[2] for v in values), 3),
            "runs_wall_s": [round(v[0], 3) for v in values],
            "steps_of_median_run": ordered[len(ordered) // 2][3],
        }
    ratio = result["verify_each"]["process_wall_s"] / result["verify_none"]["process_wall_s"]
    result.update(
        ratio_wall=round(ratio, 4),
        ratio_cpu=round(result["verify_each"]["cpu_s"] / result["verify_none"]["cpu_s"], 4),
        target_ratio=TARGET,
        meets_target=ratio <= TARGET,
        load_average=list(os.getloadavg()),
    )
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="fresh processes per variant")
    parser.add_argument(
        "--model", action="append", help="a model under examples/models (repeatable)"
    )
    args = parser.parse_args()
    from benchmarks.machine import machine_info

    results = [measure(name, max(1, args.runs)) for name in args.model or MODELS_MEASURED]
    out = HERE / "results" / "verify_cost.json"
    out.parent.mkdir(exist_ok=True)
    kept = json.loads(out.read_text())["models"] if out.exists() else []  # other models' rows
    measured = {result["model"] for result in results}
    rows = [*(row for row in kept if row["model"] not in measured), *results]
    out.write_text(json.dumps({"models": rows, "machine": machine_info()}, indent=2) + "\n")
    for result in results:
        none, each = result["verify_none"], result["verify_each"]
        print(
            f"{result['model']}: verify none {none['process_wall_s']:.1f} s, verify each "
            f"{each['process_wall_s']:.1f} s: {result['ratio_wall']:.2f}x wall, "
            f"{result['ratio_cpu']:.2f}x CPU (target <= {TARGET}x)"
        )
    return 0 if all(result["meets_target"] for result in results) else 1


if __name__ == "__main__":
    sys.exit(main())
