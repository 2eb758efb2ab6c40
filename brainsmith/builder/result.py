"""A build's result in Python: its one-line summary and HTML view, running the built design
on inputs, and reopening a build folder (``BuildResult.load``), in a fresh process too.

``run`` executes the whole built graph as verification does (``brainsmith.verification.verifier``):
the nodes that stay on the host before and after the accelerator, and the accelerator's
hardware layers in Python (``brainsmith.frameworks.finn.execution``), one input at a time.
"""

from __future__ import annotations

import io
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from brainsmith.builder.checkpoint import Checkpoint
from brainsmith.files import DamagedFile
from brainsmith.frameworks.finn.env import contain_finn_output, prepare_finn
from brainsmith.frameworks.finn.execution import executable, fix_python_execution, graph_inputs
from brainsmith.frameworks.finn.layers import LayerPluginError, require_layers
from brainsmith.hardware.board.driver import Board
from brainsmith.intake.gate import UntrustedFolder, open_build_folder
from brainsmith.intake.inputs import ResultError as ResultError
from brainsmith.intake.inputs import sample_shape as _sample_shape
from brainsmith.intake.inputs import samples as _samples
from brainsmith.report.html import first_screen
from brainsmith.report.text import number, total_text
from brainsmith.report.units import RESOURCES, finite

TYPE_CHECKING = False
if TYPE_CHECKING:
    import numpy as np
    from qonnx.core.modelwrapper import ModelWrapper

    from brainsmith.builder.checkpoint import Checkpoint
    from brainsmith.report_schema import BuildReport, Performance, StoppedReport

REBUILD = "build it again with brainsmith.build(model, blueprint, output_dir)"


@dataclass
class BuildResult:
    """A finished build: its folder, report (as in report.json) and final model."""

    output_dir: str
    report: BuildReport | StoppedReport  # stopped: build(stop_after=N)
    model: ModelWrapper | None = None  # the final model
    report_path: str = ""
    html_path: str = ""
    checkpoint: Checkpoint | None = None  # with build(stop_after=N): written instead

    @property
    def status(self) -> str:
        return self.report["status"]

    @property
    def performance(self) -> Performance | dict[str, float | None]:
        return self.report["performance"] if self.report["status"] != "stopped" else {}

    @property
    def totals(self) -> dict[str, float]:
        return self.report["totals"] if self.report["status"] != "stopped" else {}

    @classmethod
    def load(cls, output_dir: str | os.PathLike[str]) -> BuildResult:
        """The result of the build in ``output_dir``, in this process or any later one
        (the folder may have moved); ResultError when it holds no build."""
        return load(output_dir, cls)

    def run(self, x: np.ndarray, device: str | None = None) -> np.ndarray:
        """The built design's outputs for ``x``: one input, or several on axis 0 (as
        ``--input`` files hold them), run in Python through the whole built graph, host
        nodes around the accelerator included; ResultError for a build without a design,
        a folder no longer there or a wrong shape. With ``device`` (a serial port: a board
        flashed with this build), the accelerator runs there (``brainsmith.hardware.board.driver``)."""
        if device is not None:
            with Board(self, device) as board:
                return board.run(x)
        return run(self, x)

    def __repr__(self) -> str:
        return summary(self)

    def _repr_html_(self) -> str:
        """report.html's first screen, for notebooks."""
        return html_view(self)


# -- reopening a build folder ---------------------------------------------------------------
def load(folder: str | os.PathLike[str], result: type[BuildResult]) -> BuildResult:
    """The ``result`` (``BuildResult``) of the build in ``folder`` (its report.json, or
    checkpoint.json of a build stopped after some steps); the folder may have been moved
    since it was built."""
    path = os.path.abspath(folder)
    if not os.path.isdir(path):
        what = "is not a folder" if os.path.exists(path) else "does not exist"
        raise ResultError(f"build folder {path} {what}", "give the build's output_dir")
    report_path = os.path.join(path, "report.json")
    if os.path.isfile(report_path):
        return _finished(path, report_path, result)
    if os.path.isfile(os.path.join(path, "checkpoint.json")):
        return _stopped(path, result)
    raise ResultError(
        f"{path} is not a brainsmith build folder (no report.json or checkpoint.json)",
        "give the output_dir of brainsmith.build (the command's -o OUTDIR)",
    )


def _finished(folder: str, report_path: str, result: type[BuildResult]) -> BuildResult:
    """A finished build, through the gate (``intake.gate``): a folder from elsewhere is
    untrusted input, its names, paths and domains checked before anything uses them."""
    try:
        opened = open_build_folder(folder)
    except (DamagedFile, OSError) as exc:
        raise ResultError(f"cannot read {report_path}: {exc}", REBUILD) from None
    except UntrustedFolder as exc:
        raise ResultError(exc.reason, exc.hint) from exc
    html = os.path.join(folder, "report.html")
    return result(
        folder, opened.report, opened.model, report_path, html if os.path.isfile(html) else ""
    )


def _stopped(folder: str, result: type[BuildResult]) -> BuildResult:
    from qonnx.core.modelwrapper import ModelWrapper

    try:
        checkpoint = Checkpoint.load(folder)
    except ValueError as exc:
        raise ResultError(str(exc), REBUILD) from exc
    report: StoppedReport = {
        "name": checkpoint.name or os.path.basename(folder),
        "status": "stopped",
        "steps": [r.as_dict() for r in checkpoint.records],
    }
    return result(folder, report, ModelWrapper(checkpoint.model), checkpoint=checkpoint)


# -- the one-line summary and the HTML view -------------------------------------------------
def summary(result: BuildResult) -> str:
    """``<BuildResult mlp ok: 1,250,000 fps, 1.92 µs, LUT 552, ... in build-out/mlp-...>``."""
    report, status = result.report, result.status
    if status == "ok":
        what = "ok: " + ", ".join(_figures(cast("BuildReport", report)))
    elif status == "stopped":
        what = _stopped_at(report)
    else:
        error = cast("BuildReport", report).get("error")
        what = f"{status} in step {error['step']}" if error else status
    return f"<BuildResult {report['name']} {what} in {_shown(result.output_dir)}>"


def _figures(report: BuildReport) -> list[str]:
    perf, goal = report.get("performance") or {}, report.get("target")  # type: ignore[unreachable]  # a report.json read back may lack it
    fps = f"{number(perf.get('estimated_fps'))} fps"
    if goal and not goal["met"]:
        fps += f" (target {number(goal['target_fps'])} missed)"
    latency = finite(perf.get("estimated_latency_ns"))
    figures = [fps, number(latency / 1000, " µs") if latency else "latency -"]
    family = report.get("family_resources")
    if family:  # a Lattice build: its part's own resources, as placed or else as estimated
        placed = family.get("placed")
        if placed:
            return figures + [f"{key} {number(counts['used'])}" for key, counts in placed.items()]
        at_least = "at least " if family.get("incomplete") else ""
        return figures + [f"{key} {at_least}{number(family['totals'].get(key))}"
                          for key in family["resources"]]  # fmt: skip
    totals, incomplete = report.get("totals") or {}, report.get("incomplete") or {}
    return figures + [total_text(k, totals[k], incomplete) for k in RESOURCES if k in totals]


def _stopped_at(report: BuildReport | StoppedReport) -> str:
    done = [s for s in report["steps"] if s["status"] in ("ok", "skipped")]
    return f"stopped after step {len(done)} ({done[-1]['name']})" if done else "stopped"


def _shown(path: str) -> str:
    """``path`` relative to the working folder when inside it, else absolute."""
    relative = os.path.relpath(path)
    return path if relative.startswith("..") else relative


def html_view(result: BuildResult) -> str:
    """report.html's first screen as an HTML fragment, with a link to the page."""
    report = cast("BuildReport", result.report)  # a stopped one has only name and steps
    lines = []
    if result.status == "stopped":
        lines = [f"{_stopped_at(report)}: a checkpoint in {result.output_dir}"]
    link = None
    if result.html_path:  # relative inside the working folder, else a file URI
        relative = os.path.relpath(result.html_path)
        outside = relative == os.pardir or relative.startswith(os.pardir + os.sep)
        link = Path(result.html_path).absolute().as_uri() if outside else relative
    return first_screen(report, link, lines)


# -- running the design -----------------------------------------------------------------------
def run(result: BuildResult, x: np.ndarray) -> np.ndarray:
    """The design's outputs for ``x`` (one input, or several on axis 0)."""
    import numpy as np

    from brainsmith.verification.verifier import run as execute

    model, parent = _design(result)
    fix_python_execution()
    runnable = parent if parent is not None else model
    samples, single = _samples(runnable, np.asarray(x))
    with (
        tempfile.TemporaryDirectory(prefix="brainsmith-run-") as workdir,
        contain_finn_output(io.StringIO()),
    ):
        outputs = execute(executable(model, parent, workdir), samples)
    shape = _sample_shape(runnable, runnable.graph.output[0].name)
    got = np.stack([o[0].reshape(shape) for o in outputs])
    return got[0] if single else got


def _design(result: BuildResult) -> tuple[ModelWrapper, ModelWrapper | None]:
    """The final model and the graph around it, as the folder holds them now (through the
    gate), with the plugins of their layers loaded."""
    _check_runnable(result)

    try:
        opened = open_build_folder(result.output_dir)
    except UntrustedFolder as exc:
        raise ResultError(exc.reason, exc.hint) from exc
    model, parent = opened.model, opened.parent
    if model is None:
        raise ResultError(f"{result.output_dir} holds no final.onnx", REBUILD)
    prepare_finn()
    try:
        require_layers(model, os.path.join(result.output_dir, "final.onnx"))
    except LayerPluginError as exc:
        raise ResultError(exc.reason, exc.hint) from exc
    _one_input_and_output(parent if parent is not None else model)
    return model, parent


def _check_runnable(result: BuildResult) -> None:
    folder, status = result.output_dir, result.status
    if status == "stopped":
        raise ResultError(
            f"the build in {folder} {_stopped_at(result.report)}: there is no design to run",
            "continue it: brainsmith.build(model, blueprint, other_dir, start=result.checkpoint)",
        )
    if status != "ok":
        error = cast("BuildReport", result.report).get("error")
        where = f" in step {error['step']!r}" if error else ""
        raise ResultError(
            f"the build in {folder} {status}{where}: there is no design to run",
            f"see {os.path.join(folder, 'report.html')}, fix the cause and build again",
        )
    if not os.path.isfile(os.path.join(folder, "final.onnx")):
        raise ResultError(
            f"build folder {folder} is not there any more (moved or deleted): its final.onnx "
            "and final_parent.onnx are needed to run the design",
            "reopen it where it is now: BuildResult.load(folder); or build it again",
        )


def _one_input_and_output(model: ModelWrapper) -> None:
    inputs = [i.name for i in graph_inputs(model)]
    outputs = [o.name for o in model.graph.output]
    if len(inputs) != 1 or len(outputs) != 1:
        raise ResultError(
            f"run takes one array and returns one: this design has the inputs "
            f"{', '.join(inputs)} and the outputs {', '.join(outputs)}",
            "run final_parent.onnx with FINN's execute_onnx, as brainsmith.verification.verifier.run does",
        )
