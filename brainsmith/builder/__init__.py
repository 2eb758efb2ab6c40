"""The blueprint-driven FINN build: ``brainsmith.build(model, blueprint, output_dir)``.

Runs the blueprint's steps (brainsmith's standard flow by default) on a QONNX model,
verifies the model after each step against the cleaned QONNX model, and writes
intermediate models, report.json and report.html. See docs/build.md.
"""

from __future__ import annotations

from brainsmith.builder.result import BuildResult, ResultError
from brainsmith.builder.runner import build
from brainsmith.builder.state import StepRecord
from brainsmith.errors import StepError
from brainsmith.planning.errors import BuildError

__all__ = ["BuildError", "BuildResult", "ResultError", "StepError", "StepRecord", "build"]
