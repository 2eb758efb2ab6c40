"""report.json and report.html: the whole truth about a build.

Status, steps (with their saved models and verification), every hardware layer (kernel,
backend, folding, data types, memory style, estimates — or that it has none — and its
generated code), the nodes left on the CPU, whether ``target_fps`` was met and which layer
limits it, utilisation of the FPGA part, FINN's warnings from build.log, notes from the
front door, the resolved blueprint and tool versions.

report.json is written first and last: ``status: running`` when the build starts (a build
whose process is killed leaves that), then ``ok``, ``failed`` or ``interrupted``.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import time
import traceback
from collections.abc import Callable

from brainsmith.builder.outdir import write_text
from brainsmith.builder.units import RESOURCES, bits

RESOURCE_FILE = "estimate_layer_resources.json"
BACKEND_SUFFIXES = {"_hls": "hls", "_rtl": "rtl"}
LAYER_ATTRIBUTES = ("PE", "SIMD", "mem_mode", "ram_style", "resType")
WEIGHTED = ("MVAU", "VVAU")  # Thresholding's "weightDataType" is its thresholds' type
LOG_LINE = re.compile(r"^(WARNING|ERROR|CRITICAL) ([\w.]+): (.*)$")
MAX_WARNINGS = 100


def estimates(report_dir: str, model=None, output_dir: str = "") -> dict:
    """Every layer of ``model`` with FINN's estimates where they exist, totals, performance."""
    resources = _read(report_dir, RESOURCE_FILE)
    cycles = _read(report_dir, "estimate_layer_cycles.json")
    performance = _read(report_dir, "estimate_network_performance.json")
    described = layer_attributes(model, output_dir) if model is not None else {}
    names = list(described) or [n for n in resources if n != "total"] or list(cycles)
    names += [n for n in (*resources, *cycles) if n != "total" and n not in names]
    layers = []
    for name in names:
        layer = {"name": name, **described.get(name, {"op_type": "", "backend": ""})}
        layer["estimated"] = name in resources or name in cycles
        for key in RESOURCES:
            value = resources.get(name, {}).get(key)
            layer[key] = _number(value) if layer["estimated"] else None
        layer["cycles"] = _number(cycles.get(name)) if layer["estimated"] else None
        layers.append(layer)
    totals = {key: _number(resources.get("total", {}).get(key, 0)) for key in RESOURCES}
    return {
        "layers": layers,
        "totals": totals if resources else {},
        "performance": {
            "estimated_fps": performance.get("estimated_throughput_fps"),
            "estimated_latency_ns": performance.get("estimated_latency_ns"),
            "max_cycles": performance.get("max_cycles"),
            "max_cycles_layer": performance.get("max_cycles_node_name"),
            "critical_path_cycles": performance.get("critical_path_cycles"),
        },
    }


def chart_rows(layers: list[dict]) -> list[dict]:
    """What the charts draw: the estimated layers' resources and cycles."""
    keys = ("name", *RESOURCES, "cycles")
    return [{k: layer.get(k) for k in keys} for layer in layers if layer.get("estimated")]


def _read(folder: str, name: str) -> dict:
    path = os.path.join(folder, name)
    if not os.path.isfile(path):
        return {}
    try:
        with open(path) as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return {}


def _number(value: float | str | None) -> float | int:
    number = float(value or 0)
    return int(number) if number.is_integer() else number


def layer_attributes(model, output_dir: str = "") -> dict[str, dict]:
    """Per node: kernel, backend, folding, data types and bit widths, memory style, code."""
    from qonnx.custom_op.registry import getCustomOp

    found = {}
    for node in model.graph.node:
        entry = {"op_type": node.op_type, "backend": ""}
        for suffix, backend in BACKEND_SUFFIXES.items():
            if node.op_type.endswith(suffix):
                entry.update(op_type=node.op_type[: -len(suffix)], backend=backend)
        entry["input_datatype"] = _datatype(model, node.input[0]) if node.input else None
        entry["output_datatype"] = _datatype(model, node.output[0]) if node.output else None
        try:
            op = getCustomOp(node)
            types = op.get_nodeattr_types()
        except Exception:  # attributes are decoration; a node may lack an op class
            op, types = None, {}
        for attr in LAYER_ATTRIBUTES:
            if attr in types:
                value = op.get_nodeattr(attr)
                entry[attr] = int(value) if attr in ("PE", "SIMD") else value
        if "weightDataType" in types and entry["op_type"] in WEIGHTED:
            entry["weight_datatype"] = op.get_nodeattr("weightDataType")
        for role in ("input", "weight", "output"):
            if entry.get(f"{role}_datatype"):
                entry[f"{role}_bits"] = bits(entry[f"{role}_datatype"])
        code = op.get_nodeattr("code_gen_dir_ipgen") if "code_gen_dir_ipgen" in types else ""
        if code and output_dir and os.path.isdir(code):
            entry["code"] = os.path.relpath(code, output_dir)
        found[node.name] = entry
    return found


def _datatype(model, tensor: str) -> str | None:
    try:
        return model.get_tensor_datatype(tensor).name
    except Exception:  # a tensor without shape or annotation
        return None


def cpu_nodes(parent) -> dict | None:
    """The nodes outside the accelerator (the dataflow parent graph), by op type."""
    if parent is None:
        return None
    nodes = [
        {"name": n.name, "op_type": n.op_type}
        for n in parent.graph.node
        if n.op_type != "StreamingDataflowPartition"
    ]
    by_type: dict[str, int] = {}
    for node in nodes:
        by_type[node["op_type"]] = by_type.get(node["op_type"], 0) + 1
    return {"count": len(nodes), "op_types": by_type, "nodes": nodes, "model": "final_parent.onnx"}


def target(performance: dict, target_fps: int | None, clock_ns: float) -> dict | None:
    """Whether the estimated throughput meets ``target_fps``; the layer that limits it."""
    fps = performance.get("estimated_fps")
    if not target_fps or not fps:
        return None
    return {
        "target_fps": target_fps,
        "estimated_fps": fps,
        "met": fps >= target_fps,
        "bottleneck": performance.get("max_cycles_layer"),
        "bottleneck_cycles": performance.get("max_cycles"),
        "target_cycles": int(1e9 / (clock_ns * target_fps)),
    }


def utilisation(part: str | None, totals: dict) -> dict:
    """Estimated use of the part's resources in percent (FF: FINN does not estimate it)."""
    from brainsmith.frameworks.finn.parts import RESOURCE_KEYS, part_resources

    found = part_resources(part) if part else None
    if found is None:
        return {"part": part, "available": None, "percent": None, "source": None}
    available, source = found
    percent = {
        key: round(100 * totals[key] / available[key], 2)
        if key in totals and available[key]
        else None
        for key in RESOURCE_KEYS
    }
    return {"part": part, "available": available, "percent": percent, "source": source}


def finn_warnings(log_path: str) -> list[dict]:
    """Distinct warnings and errors logged to build.log, with how often each came."""
    found: dict[tuple[str, str], dict] = {}
    try:
        with open(log_path, encoding="utf-8", errors="replace") as handle:
            for line in handle:
                match = LOG_LINE.match(line.rstrip("\n"))
                if match is None:
                    continue
                level, source, message = match.groups()
                message = " ".join(message.split())
                entry = found.setdefault(
                    (source, message),
                    {"level": level, "source": source, "message": message, "count": 0},
                )
                entry["count"] += 1
    except OSError:
        return []
    return list(found.values())[:MAX_WARNINGS]


def assemble(run, model, status: str, error=None, setup_seconds: float | None = None) -> dict:
    """The report of ``run`` (a ``BuildRun``) as written to report.json."""
    from brainsmith.frameworks.finn.parts import boards

    options = run.plan.build
    part = options.fpga_part or boards().get(options.board or "")
    found = estimates(run.report_dir, model, run.output_dir)
    parent = run.context.dataflow_parent
    if run.log is not None:
        run.log.flush()
    return {
        "name": run.plan.name,
        "status": status,
        "error": {"step": error.step, "reason": error.reason, "hint": error.hint}
        if error
        else None,
        "model": os.path.abspath(run.model_path) if run.model_path else "",
        "blueprint_path": run.plan.path,
        "output_dir": run.output_dir,
        "moved_aside": run.folder.moved_aside,
        "fpga_part": part,
        "board": options.board,
        "clock_ns": options.clock_ns,
        "target_fps": options.target_fps,
        "verify": run.verify,
        "verify_samples": options.verify_samples,
        "verify_tolerance": {"atol": options.verify_atol, "rtol": options.verify_rtol},
        "seconds": round(time.perf_counter() - run.started, 3),
        "setup_seconds": round(setup_seconds, 3) if setup_seconds is not None else None,
        "notes": list(run.notes) + list(run.context.notes),
        "steps": [r.as_dict() for r in run.records],
        **found,
        "target": target(found["performance"], options.target_fps, options.clock_ns),
        "cpu_nodes": cpu_nodes(parent) if model is not None else None,
        "utilisation": utilisation(part, found["totals"]),
        "warnings": finn_warnings(run.path("build.log")),
        "generated_code": "finn/build",
        "rtlsim": run.rtlsim,
        "blueprint": run.plan.blueprint,
        "versions": versions(),
    }


def write_reports(
    run,
    model,
    status: str,
    error=None,
    setup_seconds: float | None = None,
    before_verdict: Callable[[], None] | None = None,
) -> dict:
    """Write report.json and report.html; raises OSError when report.json cannot be written.

    For an ``ok`` build report.html comes first, then ``before_verdict()``, then report.json,
    the verdict (a failing write raises). Otherwise report.json comes first; report.html follows if it can.
    When the disk is full, the folder's reserve is given up for a short report.json.
    """
    report = assemble(run, model, status, error, setup_seconds)
    run.report = report
    if status == "ok":
        _write_html(run, report)
        if before_verdict is not None:
            before_verdict()
        _write_json(run, report)
        run.folder.release_reserve()
        return report
    _write_json(run, report)
    if status != "running":
        with contextlib.suppress(OSError):  # report.json holds the verdict; no page cut off
            _write_html(run, report)
        run.folder.release_reserve()
    return report


def _write_json(run, report: dict) -> None:
    try:
        write_text(run.path("report.json"), to_json(report))
    except OSError:
        if not run.folder.release_reserve():
            raise
        short = {k: report[k] for k in ("name", "status", "error", "output_dir")}
        short["steps"] = [{"name": s["name"], "status": s["status"]} for s in report["steps"]]
        write_text(run.path("report.json"), to_json(short))


def _write_html(run, report: dict) -> None:
    from brainsmith.builder.charts import render_charts
    from brainsmith.builder.report_html import render

    rows = chart_rows(report["layers"])
    try:
        charts = run.charts.charts(rows) if run.charts else render_charts(rows)
    except Exception:  # a chart problem must not hide the build's result
        charts = {}
        if run.log is not None:
            traceback.print_exc(file=run.log)
    write_text(run.path("report.html"), render(report, charts))


def to_json(report: dict) -> str:
    return json.dumps(report, indent=2, default=str) + "\n"


def versions() -> dict:
    """Versions of brainsmith, FINN, QONNX and Python."""
    import platform
    from importlib.metadata import PackageNotFoundError, version

    from brainsmith.version import __version__

    found = {"brainsmith": __version__}
    for label, dist in (("finn", "finn-plus"), ("qonnx", "qonnx")):
        try:
            found[label] = version(dist)
        except PackageNotFoundError:
            found[label] = "not installed"
    found["python"] = platform.python_version()
    return found
