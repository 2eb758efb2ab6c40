"""The one exception tree: every error brainsmith raises for its user is a ``BrainsmithError``.

``except BrainsmithError`` catches them all; each subclass carries its culprit as attributes
(the plugin, file, key, step or folder) and ``hint`` says what to do next (may be empty).

    BrainsmithError
    ├── HintedError           a reason and a hint: boards, place and route, export, Yosys...
    ├── PluginError           plugin hub (brainsmith.plugin.errors): not found, load, metadata,
    │   └── BlueprintError    config, cache directory, lifecycle, kernels; blueprints
    ├── YAMLInputError        a YAML file that cannot be read safely (file, line, column)
    ├── DamagedFile           a JSON file that cannot be used (brainsmith.files.read_json)
    ├── BuildError            brainsmith build (step, reason, hint, exit_code, report)
    │   StepError, PlanError, InputError, FolderError, ResultError (a build's result)
    └── ExploreError          brainsmith explore; SpaceError; rtlsim's ToolchainError,
                              CompileError, SimulationFailed
"""

from __future__ import annotations


class BrainsmithError(Exception):
    """Base of every error brainsmith raises; ``hint`` says what to do next (or is empty)."""

    hint: str = ""


class HintedError(BrainsmithError):
    """An error of a reason (its message) and a hint: what to do next (or empty)."""

    def __init__(self, reason: str, hint: str = "") -> None:
        super().__init__(reason)
        self.reason, self.hint = reason, hint


class StepError(BrainsmithError):
    """Raised inside a build step with a reason the user can act on and a hint; the build
    turns it into a BuildError naming the step (``model``: the model its nodes refer to)."""

    def __init__(self, reason: str, hint: str = "", model: object = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.hint = hint
        self.model = model


class DuplicatePluginWarning(UserWarning):
    """Two plugins of one type share a qualified name; attributed to the second one's
    file and line (the first is kept)."""


class SkippedKernelWarning(UserWarning):
    """``kernels: auto`` left out an installed kernel whose declaration it cannot use (the
    message names it and why); a blueprint that lists the kernel fails instead."""
