"""How long the build-folder gate takes: on the shipped 4-bit MLP built for an UltraScale+ part
(every layer RTL), a copy forged with every trick at once (a layer named by a path, Yosys
commands in a top module name, a relative code folder, a domain naming a module in the
folder, a link out of the folder, an HLS layer before the accelerator naming a program) is
given to ``brainsmith synth``, ``brainsmith verify-rtl`` and ``BuildResult.load`` in fresh
processes; the honest build is opened by the gate in-process.

    .venv/bin/python -m benchmarks.folder_gate [--repeats 5]

Each figure is the median wall time of the whole command (interpreter start included) until
it exits with the refusal, and of ``open_build_folder`` on the honest build. Writes
benchmarks/results/folder_gate.json and the RESULTS.md section.
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
from pathlib import Path

import onnx
from onnx import helper

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
PART = "xczu7ev-ffvc1156-2-e"
HEADING = "## The build-folder gate"
LOAD = (
    "from brainsmith.builder import BuildResult\n"
    "from brainsmith.builder.result import ResultError\n"
    "import sys\n"
    "try:\n"
    "    BuildResult.load(sys.argv[1])\n"
    "except ResultError:\n"
    "    sys.exit(2)\n"
)


def forge(folder: Path) -> None:
    """Every trick at once, on ``folder``'s final.onnx, final_parent.onnx and files."""
    final = onnx.load(folder / "final.onnx")
    by_name = {n.name: n for n in final.graph.node}
    by_name["MVAU_rtl_1"].name = str(folder.parent)
    for attribute in by_name["MVAU_rtl_0"].attribute:
        if attribute.name == "gen_top_module":
            attribute.s = b"MVAU_rtl_0\ntee -q -o /share/xilinx/cells_map.v help"
    for attribute in by_name["Thresholding_rtl_0"].attribute:
        if attribute.name == "code_gen_dir_ipgen":
            attribute.s = b"../../elsewhere"
    by_name["Thresholding_rtl_1"].domain = "folder_module"
    onnx.save(final, folder / "final.onnx")
    parent = onnx.load(folder / "final_parent.onnx")
    host = parent.graph.node[-1]
    host.domain, host.op_type = "finn.custom_op.fpgadataflow.hls", "Thresholding_hls"
    host.attribute.append(helper.make_attribute("exec_mode", "cppsim"))
    host.attribute.append(helper.make_attribute("executable_path", str(folder / "program")))
    onnx.save(parent, folder / "final_parent.onnx")
    (folder / "folder_module.py").write_text("raise SystemExit('imported')\n")
    data = next((folder / "finn").rglob("*.dat"))
    data.unlink()
    data.symlink_to("/etc/passwd")


def timed(argv: list[str], repeats: int) -> tuple[float, int, str]:
    """Median seconds of ``argv``, its exit code and the first line of its error output."""
    times, result = [], None
    for _ in range(repeats):
        began = time.perf_counter()
        result = subprocess.run(argv, capture_output=True, text=True, timeout=600)
        times.append(time.perf_counter() - began)
    assert result is not None
    return statistics.median(times), result.returncode, (result.stderr.splitlines() or [""])[0]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    repeats = parser.parse_args().repeats
    import brainsmith
    from benchmarks.first_hour import update_results
    from benchmarks.machine import machine_info
    from brainsmith.intake.gate import open_build_folder

    with tempfile.TemporaryDirectory(prefix="brainsmith-gate-") as tmp:
        honest = Path(tmp) / "mlp"
        brainsmith.build(
            str(REPO / "examples" / "models" / "mlp_4bit.onnx"),
            str(REPO / "blueprints" / "mlp.yaml"),
            str(honest),
            options={"fpga_part": PART},
            prefer="rtl",
            verify="none",
        )
        forged = Path(shutil.copytree(honest, Path(tmp) / "forged" / "copy", symlinks=True))
        forge(forged)
        load_before = list(os.getloadavg())
        gate_times = []
        for _ in range(repeats):
            began = time.perf_counter()
            open_build_folder(honest)
            gate_times.append(time.perf_counter() - began)
        rows = {
            "synth": timed([sys.executable, "-m", "brainsmith", "synth", str(forged)], repeats),
            "verify-rtl": timed(
                [sys.executable, "-m", "brainsmith", "verify-rtl", str(forged)], repeats
            ),
            "BuildResult.load": timed([sys.executable, "-c", LOAD, str(forged)], repeats),
        }
        load_after = list(os.getloadavg())
    result = {
        "machine": machine_info(),
        "load_before": load_before,
        "load_after": load_after,
        "repeats": repeats,
        "gate_on_honest_build_s": statistics.median(gate_times),
        "forged": {
            name: {"seconds": s, "exit": code, "first_line": line}
            for name, (s, code, line) in rows.items()
        },
    }
    (HERE / "results").mkdir(exist_ok=True)
    (HERE / "results" / "folder_gate.json").write_text(json.dumps(result, indent=2) + "\n")
    lines = [
        HEADING,
        "",
        "`python -m benchmarks.folder_gate` (median of "
        f"{repeats}; wall time of a fresh process, interpreter start included; load "
        f"{load_before[0]:.1f} before, {load_after[0]:.1f} after; "
        f"{result['machine']['cpu_count']} cores). The shipped MLP, every layer RTL, forged "
        "with every trick at once (a layer named by a path, Yosys commands in a top module "
        "name, a relative code folder, a domain naming a module in the folder, a link out, "
        "an HLS layer naming a program):",
        "",
        "| command on the forged folder | refused in | exit |",
        "|---|---:|---:|",
    ]
    for name, (seconds, code, _) in rows.items():
        lines.append(f"| `{name}` | {seconds:.2f} s | {code} |")
    lines += [
        "",
        f"The gate on the honest build (in-process, files walked, report and both models "
        f"checked): {result['gate_on_honest_build_s'] * 1000:.0f} ms.",
    ]
    update_results(lines, HEADING)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
