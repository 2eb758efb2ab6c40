"""What FINN's own builder makes of a network, as a reference for brainsmith's results.

    .venv/bin/python -m benchmarks.finn_reference MODEL.onnx [...] [--out DIR] [--target-fps N]

Runs FINN's runner (``build_dataflow_cfg``) with its estimate-only flow
(``estimate_only_dataflow_steps``, estimate reports only, FINN's other defaults) and reads the
reports it writes. Prints one JSON line per model: ``builds``, the estimated ``fps``, the
``LUT``/``DSP`` totals, the ``error`` FINN logged (or None), the op types FINN left outside
the dataflow (``unmapped``) and the wall ``seconds``. Each model is built in a fresh process:
the builder changes process-wide state (stdout, logging, FINN's settings).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
PART = "xcvc1902-vsva2197-2MP-e-S"
ERROR_CHARS = 300

CHILD = """
import json, os
from benchmarks.finn_reference import finn_builder_result
result = finn_builder_result({model!r}, {out!r}, {fps!r}, {part!r}, {clock!r})
with open({result!r}, "w") as f:
    json.dump(result, f)
os._exit(0)  # skip tearing down FINN's modules (see brainsmith.frameworks.finn.env)
"""


def finn_builder_result(
    model_path: str | os.PathLike,
    output_dir: str | os.PathLike,
    target_fps: int = 100000,
    fpga_part: str = PART,
    clock_ns: float = 5.0,
) -> dict:
    """Build ``model_path`` with FINN's estimate-only flow into ``output_dir`` (in this
    process) and summarise its reports."""
    from brainsmith.frameworks.finn.env import prepare_finn, run_finn_builder

    prepare_finn()  # FINN_BUILD_DIR, FINN's settings and the XSI stand-ins without Vivado
    from finn.builder.build_dataflow_config import (
        DataflowBuildConfig,
        DataflowOutputType,
        estimate_only_dataflow_steps,
    )

    out = Path(output_dir)
    cfg = DataflowBuildConfig(
        output_dir=str(out),
        fpga_part=fpga_part,
        synth_clk_period_ns=clock_ns,
        target_fps=target_fps,
        generate_outputs=[DataflowOutputType.ESTIMATE_REPORTS],
        steps=list(estimate_only_dataflow_steps),
    )
    try:
        code, error = run_finn_builder(str(model_path), cfg), None
    except Exception as exc:  # re-raised by FINN under pytest, or raised before its runner
        code, error = -1, f"{type(exc).__name__}: {exc}"
    if code and error is None:
        error = logged_error(out / "build_dataflow.log")
    return summarise(out, code == 0, error)


def logged_error(log: Path) -> str:
    """``step: exception`` from the log FINN's runner writes (its last step and error)."""
    text = log.read_text(errors="replace") if log.is_file() else ""
    steps = re.findall(r"Running step: (\w+)", text)
    raised = re.findall(r"^((?:\w+\.)*\w*(?:Error|Exception)\b.*)$", text, re.MULTILINE)
    logged = re.findall(
        r"\]ERROR:(?:FINN (?:INTERNAL COMPILER )?ERROR: )?(.*)$", text, re.MULTILINE
    )
    message = (raised or logged or [f"build failed; see {log}"])[-1]
    return (f"{steps[-1]}: {message}" if steps else message)[:ERROR_CHARS]


def summarise(out: Path, ok: bool, error: str | None) -> dict:
    """builds/fps/LUT/DSP/error (and unmapped op types) from FINN's reports in ``out``."""
    report = out / "report"
    performance = _json(report / "estimate_network_performance.json")
    totals = _json(report / "estimate_layer_resources.json").get("total", {})
    fps = performance.get("estimated_throughput_fps")
    builds = ok and fps is not None
    if ok and not builds:
        error = "FINN wrote no performance estimate"
    return {
        "builds": builds,
        "fps": fps,
        "LUT": totals.get("LUT"),
        "DSP": totals.get("DSP"),
        "error": error,
        "unmapped": unmapped_ops(out / "intermediate_models" / "step_convert_to_hw.onnx"),
    }


def unmapped_ops(path: Path) -> list[str] | None:
    """Op types FINN did not convert to hardware layers (they stay outside the dataflow)."""
    if not path.is_file():
        return None
    import onnx

    graph = onnx.load(str(path), load_external_data=False).graph
    dataflow = "finn.custom_op.fpgadataflow"
    return sorted({n.op_type for n in graph.node if not n.domain.startswith(dataflow)})


def _json(path: Path) -> dict:
    return json.loads(path.read_text()) if path.is_file() else {}


def finn_builder_isolated(
    model_path: str | os.PathLike,
    output_dir: str | os.PathLike,
    target_fps: int = 100000,
    fpga_part: str = PART,
    clock_ns: float = 5.0,
    timeout: float | None = None,
) -> dict:
    """``finn_builder_result`` in a fresh process, plus its wall ``seconds``."""
    out = Path(output_dir).resolve()
    out.mkdir(parents=True, exist_ok=True)
    result_file = out / "finn_reference.json"
    result_file.unlink(missing_ok=True)
    code = CHILD.format(
        model=str(Path(model_path).resolve()),
        out=str(out),
        fps=target_fps,
        part=fpga_part,
        clock=clock_ns,
        result=str(result_file),
    )
    began = time.perf_counter()
    try:
        proc = subprocess.run(
            [sys.executable, "-c", code],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        crash = (proc.stderr.strip().splitlines() or [f"exit code {proc.returncode}"])[-1]
    except subprocess.TimeoutExpired:
        crash = f"timed out after {timeout} s"
    seconds = round(time.perf_counter() - began, 1)
    if result_file.is_file():
        return {**json.loads(result_file.read_text()), "seconds": seconds}
    result = {"builds": False, "fps": None, "LUT": None, "DSP": None}
    return {**result, "error": crash[:ERROR_CHARS], "unmapped": None, "seconds": seconds}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="+", type=Path, help="QONNX models (.onnx)")
    parser.add_argument("--out", type=Path, help="build folder (default: a temporary one)")
    parser.add_argument("--target-fps", type=int, default=100000)
    parser.add_argument("--part", default=PART)
    parser.add_argument("--clock-ns", type=float, default=5.0)
    parser.add_argument("--timeout", type=float, help="seconds per model")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="finn-reference-") as tmp:
        folder = args.out or Path(tmp)
        for model in args.models:
            result = finn_builder_isolated(
                model,
                folder / model.stem,
                args.target_fps,
                args.part,
                args.clock_ns,
                args.timeout,
            )
            print(json.dumps({"model": str(model), **result}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
