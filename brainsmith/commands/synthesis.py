"""``brainsmith synth BUILD_DIR``: synthesise the RTL layers of a finished build with Yosys.

Every RTL layer of the build's final model is synthesised out of context for the family of
the build's part (``brainsmith.hardware.synthesis``); the results, with FINN's estimate for each
layer beside them, go to BUILD_DIR/synthesis.json, and each layer's Yosys run (its fixed
sources, script and log) to BUILD_DIR/synthesis/<layer>/.
"""

from __future__ import annotations

import errno
import io
import json
import os
from collections.abc import Callable

from brainsmith.files import FULL_DISKS, DiskFull, disk_full, write_text
from brainsmith.frameworks.finn.env import contain_finn_output, prepare_finn
from brainsmith.frameworks.finn.facts import RESOURCES
from brainsmith.hardware.synthesis import NotSynthesisable, YosysMissing, family_of, find_yosys
from brainsmith.hardware.synthesis.families import ULTRASCALE_PLUS_PART
from brainsmith.hardware.synthesis.run import CacheError, synthesise_design
from brainsmith.intake.build_folder import (
    FolderError,
    gated_build,
    load_layer_plugins,
    quiet,
    refuse_changed_hdl,
)
from brainsmith.report.measured import synthesis_run

TYPE_CHECKING = False
if TYPE_CHECKING:
    from qonnx.core.modelwrapper import ModelWrapper

    from brainsmith.files import Json
    from brainsmith.hardware.synthesis import DesignSynthesis, LayerSynthesis
    from brainsmith.hardware.synthesis.yosys import Yosys
    from brainsmith.report_schema import BuildReport, Layer

RESULT = "synthesis.json"
WORKDIR = "synthesis"


def synthesise_build_folder(
    folder: str,
    *,
    jobs: int = 2,
    note: Callable[[str], None] | None = None,
    allow_changed: bool = False,
    warn: Callable[[str], None] | None = None,
) -> Json:
    """Synthesise ``folder``'s RTL layers; returns what it wrote to ``folder``/synthesis.json.
    Raises FolderError (``reason``, ``hint``) for a folder that is not a finished build or
    fails the gate (``intake.gate``), HDL the build did not generate (unless
    ``allow_changed``: then each file is named to ``warn``), a missing Yosys or a part Yosys
    cannot map."""
    report, model, _ = gated_build(folder)  # before anything is written into the folder
    with contain_finn_output(io.StringIO()):
        prepare_finn()
    load_layer_plugins(model, folder)
    refuse_changed_hdl(model, folder, None, "synthesise", allow_changed, warn or quiet)
    part = _synthesisable_part(report, folder)
    yosys = _yosys(note or quiet)
    workdir = os.path.join(folder, WORKDIR)
    try:
        result = _synthesised(model, part, workdir, yosys, jobs, note)
        data = as_json(result, report, folder)
        write_text(os.path.join(folder, RESULT), json.dumps(data, indent=2) + "\n")
    except DiskFull as exc:
        raise FolderError(exc.reason, exc.hint) from exc
    except OSError as exc:
        full = _full_disk(exc, workdir)
        if full is None:
            raise
        raise FolderError(full.reason, full.hint) from exc
    return data


def _full_disk(exc: OSError, workdir: str) -> DiskFull | None:
    """The DiskFull that ``exc`` means when the disk holding ``workdir`` is full (None when
    it is not)."""
    if exc.errno in FULL_DISKS:
        return DiskFull(workdir, code=exc.errno)
    return DiskFull(workdir, code=errno.ENOSPC) if disk_full(workdir) else None


def _synthesisable_part(report: BuildReport, folder: str) -> str:
    """The part the build names, if Yosys can map to it; FolderError otherwise."""
    part = report.get("fpga_part") or ""
    if not part:
        raise FolderError(f"{folder}/report.json names no fpga_part", "build it again")
    try:
        family_of(part)
    except NotSynthesisable as exc:
        hint = f"brainsmith build MODEL BLUEPRINT --part {ULTRASCALE_PLUS_PART}"
        raise FolderError(str(exc), hint) from None
    return part


def _yosys(note: Callable[[str], None]) -> Yosys:
    """Yosys, started; FolderError saying how to install it when it is missing."""
    try:
        note("starting Yosys (the first run after installing takes about a minute)")
        return find_yosys()
    except YosysMissing as exc:
        raise FolderError(str(exc), exc.hint) from exc


def _synthesised(
    model: ModelWrapper,
    part: str,
    workdir: str,
    yosys: Yosys,
    jobs: int,
    note: Callable[[str], None] | None,
) -> DesignSynthesis:
    """Every RTL layer of ``model`` through Yosys, logged to ``workdir``/synth.log."""
    os.makedirs(workdir, exist_ok=True)
    log_path = os.path.join(workdir, "synth.log")
    with open(log_path, "w") as log, contain_finn_output(log):
        try:
            return synthesise_design(model, part, workdir, yosys, jobs=jobs, note=note)
        except CacheError as exc:
            hint = "set BRAINSMITH_CACHE_DIR to a folder of your own"
            raise FolderError(str(exc), hint) from exc


def _finns(layer: Layer) -> dict[str, float | None]:
    """FINN's own estimate per resource (None where FINN has none, whoever filled it in)."""
    by = layer.get("estimated_by") or {}
    return {
        key: layer[key]
        if key not in layer["not_estimated"] and by.get(key, "finn") == "finn"
        else None
        for key in RESOURCES
    }


def as_json(result: DesignSynthesis, report: BuildReport, folder: str) -> Json:
    """synthesis.json: per layer its status, reason, Yosys' counts and FINN's estimate."""
    estimates = {layer["name"]: layer for layer in report.get("layers") or []}
    layers = [_layer_json(layer, estimates.get(layer.name), folder) for layer in result.layers]
    return {
        "part": result.part,
        "family": result.family,
        "yosys": result.tool,
        "seconds": round(result.seconds, 2),
        "layers": layers,
        "totals": result.totals,
        "finn_totals": {key: _finn_total(layers, key) for key in RESOURCES},
    }


def _layer_json(layer: LayerSynthesis, estimate: Layer | None, folder: str) -> Json:
    """One layer of synthesis.json, beside FINN's ``estimate`` for it (None: no estimate)."""
    return {
        "name": layer.name,
        "op_type": layer.op_type,
        "status": layer.status,
        "reason": layer.reason,
        "counts": layer.counts,
        "other_cells": layer.other,
        **synthesis_run(layer, folder),
        "finn_estimate": None if estimate is None else _finns(estimate),
    }


def _finn_total(layers: list[Json], key: str) -> float | None:
    """FINN's estimate summed over the synthesised layers; None if one has no estimate."""
    values = _synthesised_estimates(layers, key)
    known = [float(value) for value in values if value is not None]
    if not values or len(known) < len(values):
        return None
    return sum(known)


def _synthesised_estimates(layers: list[Json], key: str) -> list[float | None]:
    """FINN's estimate of ``key`` for each synthesised layer (None where it has none)."""
    return [
        (layer["finn_estimate"] or {}).get(key)
        for layer in layers
        if layer["status"] == "synthesised"
    ]
