"""Checkpoints: a build stopped after some steps, continued later by other builds.

``build(..., stop_after=N)`` runs the first N steps and writes ``checkpoint.json`` in its
folder instead of final.onnx and the reports; ``build(..., start=Checkpoint.load(folder))``
continues from there: it takes the checkpoint's model and completed step records (their
models stay where they were written) and runs the remaining steps. Design-space exploration
(``brainsmith.explore``) runs a prefix of steps shared by many variants once this way and
feeds its model to each of them.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass, field

from brainsmith.builder.state import StepRecord
from brainsmith.files import PUBLIC, read_json, write_text
from brainsmith.frameworks.finn.env import prepare_finn
from brainsmith.frameworks.finn.folding.record import read_record
from brainsmith.frameworks.finn.layers import LayerPluginError, require_layers, stamp
from brainsmith.planning.errors import BuildError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from qonnx.core.modelwrapper import ModelWrapper

    from brainsmith.builder.state import BuildRun
    from brainsmith.files import Json
    from brainsmith.planning.shaping import Step

FILE = "checkpoint.json"
VERSION = 1


@dataclass
class Checkpoint:
    """Where a stopped build left off; paths are absolute."""

    folder: str  # the stopped build's output folder
    records: list[StepRecord]  # the steps done (ok or skipped), in order; models absolute
    model: str  # the model after them
    dataflow_parent: str | None = None  # the graph around the dataflow partition, once made
    reports: str = ""  # FINN's report folder (estimates, folding) to carry over
    # op type -> the plugin providing that layer (brainsmith.frameworks.finn.layers), so a
    # fresh process continuing the build loads it before it reads the model
    layer_plugins: dict[str, dict[str, str]] = field(default_factory=dict)
    name: str = ""  # the build's name

    def save(self) -> str:
        """Write checkpoint.json atomically (last, so a complete file means a complete build).
        Paths are stored relative to the folder, so a moved output tree stays usable."""

        def relative(path: str | None) -> str | None:
            return os.path.relpath(path, self.folder) if path else path

        records = [{**r.__dict__, "model": relative(r.model) or ""} for r in self.records]
        data = {
            "version": VERSION,
            "records": records,
            "model": relative(self.model),
            "dataflow_parent": relative(self.dataflow_parent),
            "reports": relative(self.reports),
            "layer_plugins": self.layer_plugins,
            "name": self.name,
        }
        path = os.path.join(self.folder, FILE)
        write_text(path, json.dumps(data, indent=1), PUBLIC)
        return path

    @classmethod
    def load(cls, folder: str, within: str | None = None) -> Checkpoint:
        """The checkpoint in ``folder``; ValueError when it is missing, incomplete or foreign,
        or names a file outside ``within`` (default: ``folder``; an exploration's segments
        name each other's files inside the exploration's folder)."""
        path = os.path.join(folder, FILE)
        folder = os.path.abspath(folder)
        try:
            checkpoint = cls._from_json(folder, read_json(path))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"no usable checkpoint in {folder}: {exc}") from exc
        checkpoint._require_own_files(path, within or folder)
        return checkpoint

    @classmethod
    def _from_json(cls, folder: str, data: Json) -> Checkpoint:
        """The checkpoint ``data`` (checkpoint.json's) describes, its paths made absolute."""
        if data.get("version") != VERSION:
            raise ValueError(f"version {data.get('version')!r}, expected {VERSION}")
        records = [StepRecord(**entry) for entry in data["records"]]
        for record in records:
            record.model = _in_folder(folder, record.model) or ""
        return cls(
            folder,
            records,
            _in_folder(folder, data["model"]) or "",
            _in_folder(folder, data.get("dataflow_parent")),
            _in_folder(folder, data.get("reports")) or "",
            _layer_plugins(data.get("layer_plugins")),
            str(data.get("name") or ""),
        )

    def _require_own_files(self, path: str, root: str) -> None:
        """ValueError when the checkpoint (in ``path``) names a file outside ``root`` or a
        model that is missing."""
        named = [self.model, self.dataflow_parent, self.reports]
        named += [record.model for record in self.records]
        outside = _outside([p for p in named if p], root)
        if outside:
            raise ValueError(
                f"checkpoint {path} names files outside {root}: {', '.join(outside)}"
                "; a checkpoint only continues from files its own build wrote"
            )
        missing = [p for p in (self.model, self.dataflow_parent) if p and not os.path.isfile(p)]
        if missing:
            raise ValueError(f"checkpoint {path} names missing files: {', '.join(missing)}")


def _in_folder(folder: str, value: object) -> str | None:
    """A path checkpoint.json stores (relative to ``folder``) made absolute; None if empty."""
    return os.path.normpath(os.path.join(folder, str(value))) if value else None


def _layer_plugins(value: object) -> dict[str, dict[str, str]]:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(v, dict) for v in value.values()):
        raise ValueError("layer_plugins is not a mapping of op types to plugins")
    return value


def _outside(paths: list[str], root: str) -> list[str]:
    """The ``paths`` that do not resolve (symbolic links followed) to a place under ``root``."""
    base = os.path.realpath(root)
    return [p for p in paths if os.path.commonpath([base, os.path.realpath(p)]) != base]


def make_checkpoint(run: BuildRun, model: ModelWrapper) -> Checkpoint:
    """The checkpoint of ``run`` (a ``BuildRun``) after its last step, written to its folder."""
    layer_plugins = stamp(model)
    if run.resumed_from is not None:
        layer_plugins = {**run.resumed_from.layer_plugins, **layer_plugins}
    done = [r for r in run.records if r.status in ("ok", "skipped")]
    records = [_absolute(r, run.output_dir) for r in done]
    with_model = [r.model for r in records if r.model]
    if with_model:
        model_path = with_model[-1]
    else:  # nothing changed the model here: keep it as it came
        model_path = run.path("intermediate_models", "checkpoint.onnx")
        os.makedirs(os.path.dirname(model_path), exist_ok=True)
        model.save(model_path)
    parent: str | None
    parent = run.path("intermediate_models", "dataflow_parent.onnx")
    if not os.path.isfile(parent):
        parent = run.resumed_from.dataflow_parent if run.resumed_from is not None else None
    checkpoint = Checkpoint(
        run.output_dir, records, model_path, parent, run.report_dir, layer_plugins, run.plan.name
    )
    checkpoint.save()
    return checkpoint


def continue_from(run: BuildRun, checkpoint: Checkpoint, steps: list[Step]) -> ModelWrapper:
    """Take over ``checkpoint`` in ``run``: its step records, dataflow parent and FINN
    reports; returns its model."""
    from qonnx.core.modelwrapper import ModelWrapper

    names = [r.name for r in checkpoint.records]
    if names != [s.name for s in steps[: len(names)]]:
        raise BuildError.setup(
            f"checkpoint {checkpoint.folder} ran the steps {', '.join(names)}, which do not "
            "begin this build's steps",
            "continue a checkpoint with the blueprint that made it",
        )
    for index, record in enumerate(checkpoint.records):
        copy = StepRecord(**record.__dict__)
        if copy.model:
            copy.model = os.path.relpath(copy.model, run.output_dir)
        run.records[index] = copy
    model = ModelWrapper(checkpoint.model)
    require_layers_of(model, checkpoint)
    if checkpoint.dataflow_parent:
        run.context.dataflow_parent = ModelWrapper(checkpoint.dataflow_parent)
    if checkpoint.reports and os.path.isdir(checkpoint.reports):
        shutil.copytree(checkpoint.reports, run.report_dir, dirs_exist_ok=True)
        run.context.folding, problem = read_record(run.report_dir)
        run.context.notes.extend([problem] if problem else [])
    return model


def require_layers_of(model: ModelWrapper, checkpoint: Checkpoint) -> None:
    """Load the plugins providing the checkpoint model's layers; a BuildError naming the
    layer type and the missing package otherwise."""
    prepare_finn()
    try:
        require_layers(model, checkpoint.model, checkpoint.layer_plugins)
    except LayerPluginError as exc:
        raise BuildError.setup(
            f"cannot continue checkpoint {checkpoint.folder}: {exc.reason}", exc.hint
        ) from exc


def _absolute(record: StepRecord, folder: str) -> StepRecord:
    copy = StepRecord(**record.__dict__)
    if copy.model:
        copy.model = os.path.normpath(os.path.join(folder, copy.model))
    return copy
