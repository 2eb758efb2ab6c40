"""``brainsmith verify-rtl BUILD_DIR``: simulate the RTL layers of a finished build.

The inputs are the build's own verification inputs (regenerated from the original model
with the same seed and count, so the same vectors as ``verify: rtlsim``) or a user's
``.npy`` file. The results replace the ``rtlsim`` section of the folder's report.json and
report.html.

Only the folder's own files are simulated: code paths that final.onnx records in the folder
the build was made in are taken from this folder (a moved or copied build), and every HDL
file to compile must be recorded with its hash in ``finn/hdl_manifest.json`` (written by the
build with final.onnx) or come from the installed finn-rtllib; anything else is refused before
Verilator runs, unless ``allow_changed`` (then each is named in a warning). RTL that would
reach the host is refused in any case (``brainsmith.hardware.rtlsim.screen``).
"""

from __future__ import annotations

import os
import traceback
from collections.abc import Callable
from typing import TextIO, cast

import numpy as np

from brainsmith.builder.rtl_check import WORKDIR
from brainsmith.files import DamagedFile, DiskFull, read_npy, read_npz, write_text
from brainsmith.frameworks.finn.env import contain_finn_output, prepare_finn
from brainsmith.frameworks.finn.execution import graph_inputs
from brainsmith.hardware.rtlsim import ToolchainError, find_toolchain, simulate_design
from brainsmith.hardware.rtlsim.screen import UnsafeSource
from brainsmith.intake.build_folder import (
    FolderError,
    gated_build,
    load_layer_plugins,
    quiet,
    refuse_changed_hdl,
)
from brainsmith.intake.model import InputError, check_model, kernel_domains
from brainsmith.report.contents import to_json, write_html
from brainsmith.report.rtl_tables import rtlsim_section

TYPE_CHECKING = False
if TYPE_CHECKING:
    from qonnx.core.modelwrapper import ModelWrapper

    from brainsmith.hardware.rtlsim.layers import DesignResult
    from brainsmith.intake.model import CheckedModel
    from brainsmith.report_schema import BuildReport
    from brainsmith.verification.verifier import Sample


def verify_build_folder(
    folder: str,
    *,
    samples: int | None = None,
    input_npy: str | None = None,
    only: list[str] | None = None,
    note: Callable[[str], None] | None = None,
    allow_changed: bool = False,
    warn: Callable[[str], None] | None = None,
) -> DesignResult:
    """Simulate ``folder``'s RTL layers; returns the DesignResult (report files updated).
    ``allow_changed`` simulates HDL files the build did not generate as they are, each
    named to ``warn``."""
    report, model, parent = gated_build(folder)
    try:
        find_toolchain()
    except ToolchainError as exc:
        raise FolderError(str(exc), "install Verilator (make setup)") from exc
    prepare_finn()
    load_layer_plugins(model, folder)
    _check_layer_names(model, folder, only)
    refuse_changed_hdl(model, folder, only, "simulate", allow_changed, warn or quiet)
    workdir = os.path.join(folder, *WORKDIR)
    os.makedirs(workdir, exist_ok=True)
    log_path = os.path.join(workdir, "verify-rtl.log")
    with open(log_path, "w") as log, contain_finn_output(log):
        vectors = _inputs(report, parent or model, samples, input_npy)
        try:
            result = _simulate(model, vectors, workdir, parent, report, only, note, bool(input_npy))
        except Exception as exc:
            raise _simulation_error(exc, log, log_path) from exc
    _update_report(folder, report, result)
    return result


def _check_layer_names(model: ModelWrapper, folder: str, only: list[str] | None) -> None:
    """FolderError naming the layers of ``only`` final.onnx does not have."""
    unknown = sorted(set(only or ()) - {n.name for n in model.graph.node})
    if unknown:
        raise FolderError(
            f"no layer named {', '.join(unknown)} in {folder}/final.onnx",
            "pick from: " + ", ".join(n.name for n in model.graph.node),
        )


def _simulation_error(exc: Exception, log: TextIO, log_path: str) -> FolderError:
    """The FolderError for a simulation that failed with ``exc``; an unforeseen one (the
    simulation could not run at all) says why and keeps its traceback in the log."""
    if isinstance(exc, ToolchainError):
        return FolderError(str(exc), "install Verilator (make setup)")
    if isinstance(exc, UnsafeSource):
        return FolderError(str(exc), "remove the task from the RTL, or build the design again")
    if isinstance(exc, DiskFull):
        return FolderError(exc.reason, exc.hint)
    traceback.print_exc(file=log)
    return FolderError(
        f"RTL simulation could not run: {type(exc).__name__}: {exc}", f"see {log_path}"
    )


def _simulate(
    model: ModelWrapper,
    vectors: list[Sample],
    workdir: str,
    parent: ModelWrapper | None,
    report: BuildReport,
    only: list[str] | None,
    note: Callable[[str], None] | None,
    users: bool,
) -> DesignResult:
    return simulate_design(
        model,
        vectors,
        workdir,
        parent,
        only=set(only) if only else None,
        note=note,
        # a finished build names its part (the blueprint's, or its board's)
        stitch=None if only else (cast("str", report["fpga_part"]), float(report["clock_ns"])),
        every_frame=users,  # the user's vectors, every one; generated ones as many as needed
    )


def _inputs(
    report: BuildReport, model: ModelWrapper, samples: int | None, input_npy: str | None
) -> list[Sample]:
    """The verification inputs: from ``input_npy``, else regenerated like the build's."""
    if input_npy:
        frames = _user_inputs(model, input_npy)
        return frames[:samples] if samples else frames
    return _regenerated(report, samples)


def _user_inputs(model: ModelWrapper, input_npy: str) -> list[Sample]:
    """``input_npy``'s frames for ``model``'s one input."""
    inputs = graph_inputs(model)
    if len(inputs) != 1:
        raise FolderError(f"--input needs a single-input model; this one has {len(inputs)}")
    shape = tuple(int(d) if d else 1 for d in model.get_tensor_shape(inputs[0].name))
    x = _input_array(input_npy).astype(np.float32)
    if not _whole_frames(x.size, int(np.prod(shape))):
        raise FolderError(
            f"{input_npy} has shape {x.shape}, not a whole number of inputs of shape {shape}"
        )
    return [(s,) for s in x.reshape(-1, *shape)]


def _whole_frames(size: int, frame: int) -> bool:
    """Whether ``size`` values are one or more whole frames of ``frame`` values."""
    return size > 0 and size % frame == 0


def _regenerated(report: BuildReport, samples: int | None) -> list[Sample]:
    """The build's own verification inputs, generated again from its original model."""
    from qonnx.core.modelwrapper import ModelWrapper
    from qonnx.util.cleanup import cleanup_model

    from brainsmith.verification.verifier import generate_inputs

    checked = _original_model(report.get("model", ""))
    reference = cleanup_model(ModelWrapper(checked.proto))
    return generate_inputs(reference, samples or int(report.get("verify_samples") or 16), seed=0)


def _original_model(original: str) -> CheckedModel:
    """The build's original model, named by report.json, checked as build checks a model
    (its domains imported); FolderError when it is gone or fails the check."""
    if not original or not os.path.isfile(original):
        raise FolderError(
            f"the build's original model {original or '(none recorded)'} is not there to "
            "regenerate the verification inputs",
            "pass --input X.npy with inputs for the model",
        )
    try:
        return check_model(original, kernel_domains())
    except InputError as exc:
        raise FolderError(
            f"the build's original model {original}: {exc.reason}",
            "pass --input X.npy with inputs for the model",
        ) from None


def _input_array(path: str) -> np.ndarray:
    """``--input``'s array: a .npy, or an .npz holding one array; bounded from its headers
    (``files.read_npy``/``read_npz``), real numbers, never unpickled."""
    arrays = _input_arrays(path)
    if any(a.dtype.kind == "f" and not np.isfinite(a).all() for a in arrays.values()):
        raise FolderError(f"--input {path} holds NaN or infinite values", "give finite numbers")
    if len(arrays) != 1:
        raise FolderError(
            f"--input {path} is an .npz archive of {len(arrays)} arrays "
            f"({', '.join(sorted(arrays)) or 'none'}); verify-rtl takes one array of inputs",
            INPUT_HOW,
        )
    return next(iter(arrays.values()))


INPUT_HOW = "give a .npy file saved with numpy.save(path, inputs)"


def _input_arrays(path: str) -> dict[str, np.ndarray]:
    """The arrays in ``--input`` ``path`` by name ("" for a .npy); FolderError when it is
    not a regular file or cannot be read."""
    try:
        if not os.path.isfile(path):
            there = "is not a regular file" if os.path.exists(path) else "does not exist"
            raise FolderError(f"--input {path} {there}", INPUT_HOW)
        with open(path, "rb") as handle:
            archive = handle.read(2) == b"PK"
        return {"": read_npy(path)} if not archive else read_npz(path)
    except (DamagedFile, OSError) as exc:
        raise FolderError(f"--input {exc}", INPUT_HOW) from None


def _update_report(folder: str, report: BuildReport, result: DesignResult) -> None:
    report["rtlsim"] = rtlsim_section(result)
    write_text(os.path.join(folder, "report.json"), to_json(report))
    write_html(folder, report)
