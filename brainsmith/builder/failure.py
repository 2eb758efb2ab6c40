"""A failed build: the step recorded as failed, the reports written, the BuildError raised
(exit code 2 when the output folder is at fault)."""

from __future__ import annotations

import errno
import os

from brainsmith import interrupts
from brainsmith.builder.outdir import DISK_FULL, os_problem
from brainsmith.builder.state import BuildRun
from brainsmith.files import disk_full
from brainsmith.planning.errors import BuildError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import NoReturn

    from qonnx.core.modelwrapper import ModelWrapper

OUTPUT_ERRORS = DISK_FULL | {errno.EROFS}  # the output folder's fault, not the step's


def fail_output(
    run: BuildRun, model: ModelWrapper | None, index: int | None, exc: OSError, what: str
) -> NoReturn:
    """Fail for an OSError of the output folder (a full disk, ...): exit code 2."""
    if exc.errno is None and disk_full(run.output_dir):
        exc = OSError(errno.ENOSPC, f"{os.strerror(errno.ENOSPC)}: {exc}")
    reason, hint = os_problem(exc)
    fail(run, model, index, f"{what} in {run.output_dir}: {reason}", hint, exit_code=2)


def fail(
    run: BuildRun,
    model: ModelWrapper | None,
    index: int | None,
    reason: str,
    hint: str,
    exit_code: int = 1,
    name: str = "finish",
    tools_failed: bool = False,
) -> NoReturn:
    """Record step ``index`` (None: the stage ``name`` after the steps) as failed, write the
    reports, raise (``tools_failed``: as BuildError's)."""
    from brainsmith.builder.reporting import write_reports

    if index is not None:
        record = run.records[index]
        record.status, record.reason, name = "failed", reason, record.name
        short = reason if len(reason) < 70 else reason[:67] + "..."
        run.progress.finish(index, "failed", detail=short)
    error = BuildError(
        name, reason, hint, exit_code, report=run.path("report.json"), tools_failed=tools_failed
    )
    with interrupts.blocked():
        try:
            write_reports(run, model, "failed", error=error)
        except OSError as exc:
            error.report = None
            error.reason += f" (report.json could not be written either: {os_problem(exc)[0]})"
        interrupts.settled()
    raise error
