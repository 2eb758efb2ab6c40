"""report.json and report.html: status, steps, verification, per-layer estimates,
performance, the resolved blueprint and tool versions.

The HTML file is self-contained (inline CSS and SVG charts) and made from the template
``report_template.html`` next to this module.
"""

from __future__ import annotations

import html
import json
import os
import string
import time
import traceback

RESOURCES = ("LUT", "BRAM_18K", "URAM", "DSP")
RESOURCE_FILE = "estimate_layer_resources.json"
BACKEND_SUFFIXES = {"_hls": "hls", "_rtl": "rtl"}


def estimates(report_dir: str, model=None) -> dict:
    """Per-layer resources and cycles, totals and performance from FINN's estimate files."""
    resources = _read(report_dir, RESOURCE_FILE)
    cycles = _read(report_dir, "estimate_layer_cycles.json")
    performance = _read(report_dir, "estimate_network_performance.json")
    attributes = _layer_attributes(model) if model is not None else {}
    layers = []
    for name in [n for n in resources if n != "total"] or list(cycles):
        layer = {"name": name, **attributes.get(name, {"op_type": "", "backend": ""})}
        for key in RESOURCES:
            layer[key] = _number(resources.get(name, {}).get(key, 0))
        layer["cycles"] = _number(cycles.get(name, 0))
        layers.append(layer)
    totals = {key: _number(resources.get("total", {}).get(key, 0)) for key in RESOURCES}
    return {
        "layers": layers,
        "totals": totals,
        "performance": {
            "estimated_fps": performance.get("estimated_throughput_fps"),
            "estimated_latency_ns": performance.get("estimated_latency_ns"),
            "max_cycles": performance.get("max_cycles"),
            "max_cycles_layer": performance.get("max_cycles_node_name"),
            "critical_path_cycles": performance.get("critical_path_cycles"),
        },
    }


def _read(folder: str, name: str) -> dict:
    path = os.path.join(folder, name)
    if not os.path.isfile(path):
        return {}
    with open(path) as handle:
        return json.load(handle)


def _number(value: object) -> float | int:
    value = float(value or 0)
    return int(value) if value.is_integer() else value


def _layer_attributes(model) -> dict[str, dict]:
    from qonnx.custom_op.registry import getCustomOp

    found = {}
    for node in model.graph.node:
        entry = {"op_type": node.op_type, "backend": ""}
        for suffix, backend in BACKEND_SUFFIXES.items():
            if node.op_type.endswith(suffix):
                entry.update(op_type=node.op_type[: -len(suffix)], backend=backend)
        try:
            op = getCustomOp(node)
            for attr in ("PE", "SIMD"):
                if attr in op.get_nodeattr_types():
                    entry[attr] = int(op.get_nodeattr(attr))
        except Exception:  # attributes are decoration; a node may lack an op class
            pass
        found[node.name] = entry
    return found


def write_reports(run, model, error=None, setup_seconds: float | None = None) -> dict:
    """Assemble the report of ``run`` (a ``BuildRun``) and write report.json and .html."""
    options = run.plan.options
    report = {
        "name": run.plan.name,
        "status": "failed" if error else "ok",
        "error": {"step": error.step, "reason": error.reason, "hint": error.hint}
        if error
        else None,
        "model": os.path.abspath(run.model_path) if run.model_path else "",
        "blueprint_path": run.plan.path,
        "output_dir": run.output_dir,
        "moved_aside": run.moved_aside,
        "fpga_part": options.fpga_part or (run.cfg._resolve_fpga_part() if run.cfg else ""),
        "board": options.board,
        "clock_ns": options.clock_ns,
        "target_fps": options.target_fps,
        "verify": run.verify,
        "verify_samples": options.verify_samples,
        "verify_tolerance": {"atol": options.verify_atol, "rtol": options.verify_rtol},
        "seconds": round(time.perf_counter() - run.started, 3),
        "setup_seconds": round(setup_seconds, 3) if setup_seconds is not None else None,
        "steps": [r.as_dict() for r in run.records],
        "rtlsim": run.rtlsim,
        **estimates(run.report_dir, model),
        "blueprint": run.plan.blueprint,
        "versions": versions(),
    }
    run.report = report
    write_json(report, run.path("report.json"))
    try:
        charts = run.charts.charts(report["layers"]) if run.charts else None
        write_html(report, run.path("report.html"), charts)
    except Exception:  # a chart problem must not hide the build's result
        if run.log is not None:
            traceback.print_exc(file=run.log)
    return report


def versions() -> dict:
    """Versions of brainsmith, FINN, QONNX and Python."""
    import platform
    from importlib.metadata import PackageNotFoundError, version

    import brainsmith

    found = {"brainsmith": brainsmith.__version__}
    for label, dist in (("finn", "finn-plus"), ("qonnx", "qonnx")):
        try:
            found[label] = version(dist)
        except PackageNotFoundError:
            found[label] = "not installed"
    found["python"] = platform.python_version()
    return found


def write_json(report: dict, path: str) -> None:
    with open(path, "w") as handle:
        json.dump(report, handle, indent=2, default=str)
        handle.write("\n")


def write_html(report: dict, path: str, charts: dict[str, str] | None = None) -> None:
    """report.html; ``charts`` as made by ``brainsmith.builder.charts`` (drawn here if None)."""
    from brainsmith.builder.rtl_check import rtlsim_html

    if charts is None:
        from brainsmith.builder.charts import render_charts

        charts = render_charts(report.get("layers", []))
    template_path = os.path.join(os.path.dirname(__file__), "report_template.html")
    with open(template_path) as handle:
        template = string.Template(handle.read())
    perf = report.get("performance", {})
    totals = report.get("totals", {})
    status = report.get("status", "")
    summary = [
        ("status", status),
        ("model", report.get("model", "")),
        ("blueprint", report.get("blueprint_path", "")),
        ("FPGA part", report.get("fpga_part", "")),
        ("clock", f"{report.get('clock_ns', '')} ns"),
        ("estimated throughput", _fmt(perf.get("estimated_fps"), " fps")),
        ("estimated latency", _fmt(perf.get("estimated_latency_ns"), " ns")),
        ("LUT / BRAM_18K / URAM / DSP", " / ".join(_fmt(totals.get(k)) for k in RESOURCES)),
        ("build time", _fmt(report.get("seconds"), " s")),
    ]
    error = report.get("error")
    text = template.substitute(
        title=html.escape(f"brainsmith build: {report.get('name', '')}"),
        status_class="ok" if status == "ok" else "failed",
        error=_error_html(error) if error else "",
        summary="".join(
            f"<tr><th>{html.escape(k)}</th><td>{html.escape(str(v))}</td></tr>" for k, v in summary
        ),
        steps=_steps_html(report.get("steps", [])),
        layers=_layers_html(report.get("layers", [])),
        rtlsim=rtlsim_html(report.get("rtlsim")),
        chart_resources=charts.get("resources", "<p>No estimates.</p>"),
        chart_cycles=charts.get("cycles", "<p>No estimates.</p>"),
        blueprint=html.escape(json.dumps(report.get("blueprint", {}), indent=2)),
        versions=html.escape(", ".join(f"{k} {v}" for k, v in report.get("versions", {}).items())),
    )
    with open(path, "w") as handle:
        handle.write(text)


def _fmt(value: object, unit: str = "") -> str:
    if value is None or value == "":
        return "-"
    if isinstance(value, float):
        return f"{value:,.6g}{unit}" if abs(value) < 1e6 else f"{value:,.0f}{unit}"
    return f"{value:,}{unit}" if isinstance(value, int) else f"{value}{unit}"


def _error_html(error: dict) -> str:
    hint = f"<p>Try: {html.escape(error.get('hint', ''))}</p>" if error.get("hint") else ""
    return (
        f"<div class='error'><p><b>Step {html.escape(error.get('step', ''))} failed:</b> "
        f"{html.escape(error.get('reason', ''))}</p>{hint}</div>"
    )


def _steps_html(steps: list[dict]) -> str:
    longest = max([s.get("seconds") or 0 for s in steps] + [1e-9])
    rows = []
    for step in steps:
        check = step.get("verification") or {}
        if check:
            verdict = "ok" if check.get("ok") else "MISMATCH"
            detail = (
                f"{verdict}, max error {check.get('max_error', 0):.3g} "
                f"({check.get('samples', 0)} inputs)"
            )
            if "user" in check:
                detail += f"; your vectors: max error {check['user'].get('max_error', 0):.3g}"
        else:
            detail = step.get("reason", "")
        seconds = step.get("seconds")
        bar = f"<span class='bar' style='width:{100 * (seconds or 0) / longest:.0f}px'></span>"
        cells = [
            html.escape(step["name"]),
            html.escape(step.get("status", "")),
            f"{bar} {html.escape(_fmt(seconds, ' s'))}",
            html.escape(detail),
        ]
        status = html.escape(step.get("status", ""))
        rows.append(f"<tr class='{status}'>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    return "".join(rows)


def _layers_html(layers: list[dict]) -> str:
    rows = []
    for layer in layers:
        cells = [
            layer["name"],
            layer.get("op_type", ""),
            layer.get("backend", ""),
            layer.get("PE", ""),
            layer.get("SIMD", ""),
            *(layer.get(k, 0) for k in RESOURCES),
            layer.get("cycles", 0),
        ]
        rows.append("<tr>" + "".join(f"<td>{html.escape(_fmt(c))}</td>" for c in cells) + "</tr>")
    return "".join(rows)
