"""Build errors: which step failed, why, and what to try."""

from __future__ import annotations


class StepError(Exception):
    """Raised inside a step with a reason the user can act on and a hint."""

    def __init__(self, reason: str, hint: str = "", model: object = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.hint = hint
        self.model = model  # the model the reason's node names refer to, saved by the build


class BuildError(Exception):
    """A build that did not finish: ``step`` (or "setup"), ``reason``, ``hint``.

    ``exit_code`` is 2 for problems with the inputs (model, blueprint, output folder) and
    1 for a failed step or verification; ``report`` is the report.json path, if written.
    """

    def __init__(
        self, step: str, reason: str, hint: str = "", exit_code: int = 1, report: str | None = None
    ) -> None:
        self.step = step
        self.reason = reason
        self.hint = hint
        self.exit_code = exit_code
        self.report = report
        super().__init__(self.message())

    def message(self) -> str:
        if self.step == "setup":
            text = f"cannot build: {self.reason}"
        else:
            text = f"build failed in step '{self.step}': {self.reason}"
        if self.hint:
            text += f"\n  try: {self.hint}"
        if self.report:
            text += f"\n  report: {self.report}"
        return text
