"""Build errors: which step failed, why, and what to try.

Hints name the build's options the way the caller gave them: ``--force`` on the command
line, ``force=True`` from Python (``option("force")``; the command sets
``command_line_names()`` around the build).
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator

from brainsmith.errors import BrainsmithError
from brainsmith.frameworks.finn.facts import step_label

OPTIONS = {  # option: (command line, Python API)
    "output": ("-o OUTDIR", "output_dir=..."),
    "force": ("--force", "force=True"),
    "resume": ("--resume", "resume=True"),
    "input": ("--input", "input_npy"),
    "expected": ("--expected", "expected_npy"),
    "verify": ("--verify", "verify"),
    "prefer": ("--prefer", "prefer"),
    "exclude": ("--exclude", "exclude"),
    "part": ("--part", "options['fpga_part']"),
    "clock-ns": ("--clock-ns", "options['clock_ns']"),
    "target-fps": ("--target-fps", "options['target_fps']"),
    "target-latency-ns": ("--target-latency", "options['target_latency_ns']"),
    "synth": ("--synth", "options['synth']"),
    "board": ("--board", "options['board']"),
    "bitstream": ("--bitstream", "options['bitstream']"),
    "refold-rounds": ("--refold-rounds", "options['refold_rounds']"),
}
_COMMAND_LINE = contextvars.ContextVar("brainsmith_command_line", default=False)


def option(name: str) -> str:
    """How the caller spells build option ``name``: ``--force`` or ``force=True``."""
    return OPTIONS[name][0 if _COMMAND_LINE.get() else 1]


@contextlib.contextmanager
def command_line_names() -> Iterator[None]:
    """Within the block, errors and reports name options as command-line flags."""
    token = _COMMAND_LINE.set(True)
    try:
        yield
    finally:
        _COMMAND_LINE.reset(token)


class BuildError(BrainsmithError):
    """A build that did not finish: ``step`` (or "setup"), ``reason``, ``hint``.

    ``exit_code`` is 2 for problems with the inputs (model, blueprint, vectors, output
    folder or disk), 1 for a failed step or verification and 128 + the signal number
    for an interrupted build; ``report`` is the report.json path, if written;
    ``tools_failed`` when Yosys, nextpnr or a packer failed on the design (not its inputs).
    """

    def __init__(
        self,
        step: str,
        reason: str,
        hint: str = "",
        exit_code: int = 1,
        report: str | None = None,
        tools_failed: bool = False,
    ) -> None:
        self.step = step
        self.reason = reason
        self.hint = hint
        self.exit_code = exit_code
        self.report = report
        self.tools_failed = tools_failed
        super().__init__(reason)

    @classmethod
    def setup(cls, reason: str, hint: str = "", report: str | None = None) -> BuildError:
        """A problem with the build's inputs, found before any step ran (exit code 2)."""
        return cls("setup", reason, hint, exit_code=2, report=report)

    def __str__(self) -> str:
        return self.message()

    @property
    def interrupted(self) -> bool:
        return self.exit_code > 128

    def message(self) -> str:
        text = self._headline()
        if self.hint:
            text += f"\n  try: {self.hint}"
        if self.report:
            text += f"\n  report: {self.report}"
        return text

    def _headline(self) -> str:
        """What happened: interrupted, refused before it started, or failed in a step."""
        step = step_label(self.step)
        if self.interrupted:
            where = "" if self.step == "setup" else f" in step '{step}'"
            return f"build interrupted{where}: {self.reason}"
        if self.step == "setup":
            return f"cannot build: {self.reason}"
        return f"build failed in step '{step}': {self.reason}"
