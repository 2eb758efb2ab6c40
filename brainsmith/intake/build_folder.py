"""A finished build folder opened by a command (``verify-rtl``, ``synth``, ``place-route``,
``bitstream``, ``flash``): the ``FolderError`` each raises, its report.json and models read
once, when the folder passed the gate (``gate.py``), the plugins of its layers loaded, and the HDL a
command would compile checked against what the build generated (``finn/hdl_manifest.json``).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable

from brainsmith.errors import BrainsmithError
from brainsmith.files import DamagedFile
from brainsmith.frameworks.finn.layers import LayerPluginError, require_layers
from brainsmith.hardware.rtlsim.layer_design import NotSimulated, layer_design
from brainsmith.hardware.rtlsim.manifest import NAME, ManifestError, check, inside, load
from brainsmith.intake.gate import BuildFolder, UntrustedFolder, open_build_folder

TYPE_CHECKING = False
if TYPE_CHECKING:
    from qonnx.core.modelwrapper import ModelWrapper

    from brainsmith.hardware.rtlsim.manifest import Manifest
    from brainsmith.report_schema import BuildReport


class FolderError(BrainsmithError):
    """A build folder a command cannot use: ``reason``, ``hint``, ``exit_code``."""

    def __init__(self, reason: str, hint: str = "", exit_code: int = 2) -> None:
        super().__init__(reason)
        self.reason, self.hint, self.exit_code = reason, hint, exit_code


def _unfinished(folder: str, report: BuildReport) -> FolderError:
    """The FolderError for a build that stopped before writing final.onnx."""
    error = report.get("error")
    step = error.get("step", "?") if error else "?"
    return FolderError(
        f"the build in {folder} did not finish (failed in step "
        f"{step!r}): there is no final.onnx to simulate",
        "fix the build and run it again",
    )


def gated_build(folder: str) -> tuple[BuildReport, ModelWrapper, ModelWrapper | None]:
    """``folder``'s report, final model and the graph around it (``gated_folder``)."""
    opened = gated_folder(folder)
    assert opened.model is not None  # gated_folder refuses a build without one
    return opened.report, opened.model, opened.parent


def gated_folder(folder: str) -> BuildFolder:
    """The finished build in ``folder``, each file read once, once the folder passed the gate
    (``brainsmith.intake.gate``); FolderError for a folder that is no build folder, a report
    that cannot be read, a build that did not finish or has no final.onnx, or what the gate
    refused."""
    try:
        opened = open_build_folder(folder)
    except FileNotFoundError:
        raise FolderError(
            f"{folder} is not a brainsmith build folder (no report.json)",
            "give the output folder of brainsmith build (its -o OUTDIR)",
        ) from None
    except UntrustedFolder as exc:
        raise FolderError(exc.reason, exc.hint) from None
    except (DamagedFile, OSError) as exc:
        raise FolderError(
            f"the build's report cannot be read: {exc}",
            "this folder's report.json is damaged: build the model again (brainsmith build)",
        ) from None
    if not os.path.isfile(os.path.join(folder, "final.onnx")):
        raise _unfinished(folder, opened.report)
    if opened.model is None:
        raise FolderError(f"the build in {folder} has no final.onnx", "build it again")
    return opened


def load_layer_plugins(model: ModelWrapper, folder: str) -> None:
    """Load the plugins that provide final.onnx's layers (recorded by the build)."""
    try:
        require_layers(model, os.path.join(folder, "final.onnx"))
    except LayerPluginError as exc:
        raise FolderError(exc.reason, exc.hint) from exc


def quiet(message: str) -> None:
    """A note or a warning nobody is shown."""


CHANGED_HINT = (
    "build it again (brainsmith build MODEL BLUEPRINT -o FOLDER) to {verb} what it "
    "generates, or pass --allow-changed-rtl to {verb} the files as they are"
)


def refuse_changed_hdl(
    model: ModelWrapper,
    folder: str,
    only: list[str] | None,
    verb: str,
    allow_changed: bool = False,
    warn: Callable[[str], None] = quiet,
) -> None:
    """FolderError for the first HDL file to ``verb`` that the build did not generate; with
    ``allow_changed``, each named to ``warn`` instead."""
    for problem in unrecorded_hdl(model, folder, only):
        if not allow_changed:
            raise FolderError(problem, CHANGED_HINT.format(verb=verb))
        warn(f"{problem}; {verb.removesuffix('e')}ed as it is (--allow-changed-rtl)")


def unrecorded_hdl(model: ModelWrapper, folder: str, only: list[str] | None) -> list[str]:
    """Why each HDL file of ``model``'s layers (``only`` these) is not what the build
    generated."""
    finn_dir = os.path.join(folder, "finn")
    try:
        manifest = load(finn_dir)
    except ManifestError as exc:
        return [f"the record of generated RTL {os.path.join(finn_dir, NAME)} is damaged: {exc}"]
    if manifest is None:  # said once, for every file inside the folder
        root = os.path.realpath(folder)
        outside = [p for p in _compiled(model, only) if not inside(os.path.realpath(p), root)]
        return [MISSING.format(folder=folder), *_unchecked(outside, folder, None)]
    return _unchecked(_compiled(model, only), folder, manifest)


MISSING = (
    "{folder} has no record of the RTL its build generated (finn/hdl_manifest.json): it was "
    "built before brainsmith recorded one, or the record was removed"
)


def _unchecked(paths: list[str], folder: str, manifest: Manifest | None) -> list[str]:
    """Why each of ``paths`` is not what ``manifest`` records (``rtlsim.manifest.check``)."""
    return [problem for path in paths if (problem := check(path, folder, manifest))]


def _compiled(model: ModelWrapper, only: list[str] | None) -> list[str]:
    """The HDL files, sorted, that simulating ``model``'s layers (``only`` these) compiles."""
    files: set[str] = set()
    for node in model.graph.node:
        if not only or node.name in only:
            with contextlib.suppress(NotSimulated):  # a layer that is not compiled
                files.update(layer_design(model, node).files)
    return sorted(files)
