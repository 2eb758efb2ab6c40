"""The blueprint-driven FINN build: ``brainsmith.build(model, blueprint, output_dir)``.

Runs the blueprint's steps (brainsmith's standard flow by default) on a QONNX model,
verifies the model after each step against the cleaned QONNX model, and writes
intermediate models, report.json and report.html. See docs/build.md.

This package is callable: once any ``brainsmith.build.*`` module is imported, Python
binds ``brainsmith.build`` to the package, and ``brainsmith.build(...)`` must still build.
"""

from __future__ import annotations

import sys
import types

from brainsmith.build.errors import BuildError, StepError
from brainsmith.build.runner import build
from brainsmith.build.state import BuildResult, StepRecord

__all__ = ["BuildError", "BuildResult", "StepError", "StepRecord", "build"]


class _CallablePackage(types.ModuleType):
    def __call__(self, *args, **kwargs) -> BuildResult:
        return build(*args, **kwargs)


sys.modules[__name__].__class__ = _CallablePackage
