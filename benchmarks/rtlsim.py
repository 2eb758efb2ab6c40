"""The whole-network RTL loop: ``brainsmith build MODEL --prefer rtl --verify rtlsim`` (no
blueprint), which sizes the FIFOs by simulating the accelerator in Verilator and then checks
the whole stitched design against Python (each layer alone only where the whole cannot be
stitched or does not match).

    .venv/bin/python -m benchmarks.rtlsim [--model cnv --model zoo/resnet8 ...]

Each build runs as a fresh process with its own empty cache (every layer and the stitched
design compiled), measured from outside: wall seconds, and the peak resident memory of the
largest process (the build, a compiler or a simulator). From the build's reports: the sizing
step's seconds (its one compile of the stitched design, its simulations), the check's seconds
(the stitched design's simulation; the compiles of layers simulated alone), cycles per frame with the
sized FIFOs (flat out) against FINN's estimate (the slowest layer's cycles), and the total
FIFO depth. Afterwards, from the cached executable, the same design flat out with unbounded
FIFOs: the pace the sizing must keep. Writes benchmarks/results/rtlsim.json (machine info,
load average before and after each build); ``benchmarks.run`` puts the table in RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
# network -> target fps: the shipped examples as the documented command builds them (no
# target), the zoo's networks at the 100,000 fps its builds use (FINN's full-size CNV w2a2
# reaches 15,625 on the default part)
NETWORKS = {
    "cnv": None,
    "conv_pad": None,
    "residual": None,
    "zoo/resnet8": 100_000,
    "zoo/mobilenet_block": 100_000,
    "zoo/cnv_w2a2": 100_000,
}
PART = "xcvc1902-vsva2197-2MP-e-S"  # the default blueprint's
CLOCK_NS = 5.0


def measure(name: str, tmp: Path) -> dict:
    """Build ``name`` in a child process (``--one``): its row."""
    began = time.perf_counter()
    load = list(os.getloadavg())
    result = subprocess.run(
        [sys.executable, "-m", "benchmarks.rtlsim", "--one", name, "--folder", str(tmp)],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=7200,
    )
    if result.returncode != 0:
        return {"model": name, "status": "failed", "error": result.stderr[-2000:],
                "wall_s": round(time.perf_counter() - began, 1)}  # fmt: skip
    row: dict = json.loads(result.stdout.splitlines()[-1])
    row.update(load_average_before=load, load_average_after=list(os.getloadavg()))
    return row


def one(name: str, tmp: Path) -> dict:
    """Build ``name`` (a grandchild process) and read its reports."""
    from benchmarks.verify_cost import model_path

    path = model_path(name)
    tag = name.replace("/", "-")
    cache, out = tmp / f"cache-{tag}", tmp / f"out-{tag}"
    cache.mkdir(mode=0o700)
    env = {**os.environ, "BRAINSMITH_CACHE_DIR": str(cache)}
    command = [sys.executable, "-m", "brainsmith", "build", str(path), "--prefer", "rtl",
               "--verify", "rtlsim", "-o", str(out), "-q"]  # fmt: skip
    if NETWORKS.get(name):
        command += ["--target-fps", str(NETWORKS[name])]
    began = time.perf_counter()
    built = subprocess.run(command, capture_output=True, text=True, env=env, timeout=7200)
    wall = time.perf_counter() - began
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024  # MiB
    if built.returncode != 0:
        raise SystemExit(f"brainsmith build {name} failed:\n{built.stderr}{built.stdout}")
    report = json.loads((out / "report.json").read_text())
    sizing = json.loads((out / "finn" / "report" / "fifo_sizing.json").read_text())
    steps = {s["name"]: s.get("seconds") or 0.0 for s in report["steps"]}
    rtlsim = report["rtlsim"]
    stitched = rtlsim["stitched"] or {}
    alone = [x for x in rtlsim["layers"] if x.get("compile_seconds") is not None]
    if not sizing["sized"]:
        return {"model": name, "target_fps": NETWORKS.get(name), "status": "not sized",
                "reason": sizing["reason"], "wall_s": round(wall, 1),
                "peak_memory_mib": round(peak), "check_s": round(rtlsim["seconds"], 1),
                "check_layers_alone": len(alone)}  # fmt: skip
    os.environ["BRAINSMITH_CACHE_DIR"] = str(cache)
    unbounded = _unbounded(out)
    return {
        "model": name,
        "target_fps": NETWORKS.get(name),
        "status": report["status"],
        "layers": len(rtlsim["layers"]),
        "fifos": len(sizing["fifos"]),
        "wall_s": round(wall, 1),
        "peak_memory_mib": round(peak),
        "sizing_s": round(steps.get("fifo_depths", 0.0), 1),
        "sizing_compile_s": sizing["compile_seconds"],
        "sizing_simulations": sizing["simulations"],
        "check_s": round(rtlsim["seconds"], 1),
        "check_layers_alone": len(alone),
        "check_layers_compile_s": round(sum(x["compile_seconds"] for x in alone), 1),
        "check_stitched_compile_cached": stitched.get("compile_cached"),
        "check_stitched_simulate_s": stitched.get("simulate_seconds"),
        "check_frames": stitched.get("frames"),
        "bit_exact": stitched.get("status") == "match",
        "layers_matching": sum(x.get("status") == "match" for x in rtlsim["layers"]),
        "float_layers": sizing.get("float_layers", []),
        # the check's stitched run; a design with float layers: the sizing's own bounded run
        "estimated_cycles_per_frame": stitched.get("estimated_cycles_per_frame")
        or sizing["estimated_cycles_per_frame"],
        "sized_cycles_per_frame": stitched.get("cycles_per_frame") or sizing["cycles_per_frame"],
        "unbounded_cycles_per_frame": unbounded,
        "total_fifo_depth": sizing["total_depth"],
    }


def _unbounded(out: Path) -> float | None:
    """The final design flat out with unbounded FIFOs (the cached executable)."""
    from qonnx.core.modelwrapper import ModelWrapper

    from brainsmith.frameworks.finn.layers import require_layers
    from brainsmith.hardware.rtlsim.layers import layer_tensors
    from brainsmith.hardware.rtlsim.stitched.partition import simulate_partition
    from brainsmith.steps.fifos import FRAMES, random_frames

    model = ModelWrapper(str(out / "final.onnx"))
    require_layers(model, "final.onnx")
    work = out / "unbounded"
    contexts = layer_tensors(model, random_frames(model, FRAMES), str(work / "python"))
    result = simulate_partition(model, contexts, str(work), PART, CLOCK_NS, interval=0)
    return result.get("cycles_per_frame")


def table(data: dict) -> list[str]:
    """The RESULTS.md section of an rtlsim.json."""
    lines = [
        "",
        "## The whole-network RTL loop (FIFO sizing and the RTL check in Verilator)",
        "",
        "`brainsmith build MODEL --prefer rtl --verify rtlsim` with no blueprint (the default "
        f"blueprint's part at {CLOCK_NS:g} ns; the zoo's networks with `--target-fps 100000`), "
        "each a fresh process with an empty compile "
        "cache (`python -m benchmarks.rtlsim`). Sizing: the `fifo_depths` step (one compile "
        "of the stitched design; simulations of 4 random frames more than the pipeline holds "
        "at once). Check: the stitched "
        "design with the sized FIFOs (cached executable) on the 16 verification inputs, each "
        "layer compiled and simulated alone only where the whole is not simulated. Cycles per frame are simulated: "
        "with the sized FIFOs and with unbounded ones, flat out, against FINN's estimate "
        "(the slowest layer's cycles); float layers are simulated in exact single precision. "
        "Memory: the peak resident set of the largest process.",
        "",
        "| model | layers (FIFOs) | total | sizing (compile) | check (layers alone) "
        "| cycles/frame sized / unbounded / FINN est. | bit-exact | FIFO depth | peak memory "
        "| load average before / after |",
        "|---|---:|---:|---:|---:|---:|---|---:|---:|---|",
    ]
    for r in data.get("rows", []):  # (an rtlsim.json of the former verify-rtl runs has none)
        if r["status"] == "not sized":
            reason = " ".join(r["reason"].split())  # one table row
            reason = reason if len(reason) <= 240 else reason[:239] + "…"
            lines.append(
                f"| {r['model']} | not sized: {reason} | {r['wall_s']:.0f} s | "
                f"| {r['check_s']:.0f} s ({r['check_layers_alone']} alone) |||| "
                f"{r['peak_memory_mib']:,} MiB | {r['load_average_before'][0]:.2f} / "
                f"{r['load_average_after'][0]:.2f} |"
            )
            continue
        if r["status"] != "ok":
            lines.append(f"| {r['model']} | failed: {r.get('error', '')[:80]} |||||||||")
            continue
        pace = " / ".join(
            f"{r[k]:,.0f}" if r[k] else "-"
            for k in ("sized_cycles_per_frame", "unbounded_cycles_per_frame",
                      "estimated_cycles_per_frame")
        )  # fmt: skip
        exact = "yes" if r["bit_exact"] else "no"
        if r.get("float_layers") and not r["bit_exact"]:  # the whole is not checked: its layers
            exact = (
                f"{r['layers_matching']} layers alone match; float "
                f"{', '.join(r['float_layers'])} not simulated"
            )
        lines.append(
            f"| {r['model']} | {r['layers']} ({r['fifos']}) | {r['wall_s']:.0f} s "
            f"| {r['sizing_s']:.0f} s ({r['sizing_compile_s']:.0f} s) "
            f"| {r['check_s']:.0f} s ({r['check_layers_alone']} in "
            f"{r['check_layers_compile_s']:.0f} s) | {pace} | {exact} "
            f"| {r['total_fifo_depth']:,} | {r['peak_memory_mib']:,} MiB "
            f"| {r['load_average_before'][0]:.2f} / {r['load_average_after'][0]:.2f} |"
        )
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", action="append", help="a model under examples/models")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    parser.add_argument("--folder", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one(args.one, Path(args.folder))))
        return 0
    from benchmarks.machine import machine_info

    out = HERE / "results" / "rtlsim.json"
    models = args.model or NETWORKS
    kept = json.loads(out.read_text()).get("rows", []) if out.exists() else []
    rows = [r for r in kept if r["model"] not in models]  # other models' runs stay
    with tempfile.TemporaryDirectory(prefix="brainsmith-rtlsim-") as tmp:
        for name in models:
            rows.append(measure(name, Path(tmp)))
            print(json.dumps(rows[-1]), flush=True)
            order = {n: i for i, n in enumerate(NETWORKS)}
            rows.sort(key=lambda r: order.get(r["model"], len(order)))
            data = {"benchmark": "rtlsim", "rows": rows, "machine": machine_info()}
            out.write_text(json.dumps(data, indent=2) + "\n")
    print("\n".join(table(json.loads(out.read_text()))))
    print(f"-> {out.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
