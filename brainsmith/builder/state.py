"""The state of one build: its resolved steps, their records and the finished result."""

from __future__ import annotations

import contextlib
import faulthandler
import io
import os
import re
import stat
import time
from dataclasses import dataclass, field
from typing import cast

from brainsmith.builder.outdir import OutputFolder
from brainsmith.intake.model import CheckedModel
from brainsmith.planning.context import BuildContext
from brainsmith.planning.plan import BuildPlan
from brainsmith.report.console import Progress

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator

    from finn.builder.build_dataflow_config import DataflowBuildConfig
    from qonnx.core.modelwrapper import ModelWrapper

    from brainsmith.builder.checkpoint import Checkpoint
    from brainsmith.report.charts import ChartWorker
    from brainsmith.report_schema import (
        BitstreamSection,
        BuildReport,
        RtlsimSection,
        StepEntry,
        StepStatus,
        SynthesisSection,
        Verification,
    )
    from brainsmith.verification.verifier import Vectors


@dataclass
class StepRecord:
    """What happened in one step, as written to report.json."""

    name: str
    plugin: str
    status: StepStatus = "pending"
    seconds: float | None = None
    verification: Verification | None = None
    reason: str = ""
    model: str = ""

    def as_dict(self) -> StepEntry:
        return cast("StepEntry", {k: v for k, v in self.__dict__.items() if v not in (None, "")})


@dataclass
class BuildRun:
    """Everything one build keeps while it runs."""

    plan: BuildPlan
    folder: OutputFolder
    model: CheckedModel
    progress: Progress
    verify: str
    user_vectors: tuple[str, str] | None  # the --input/--expected paths
    vectors: Vectors | None = None  # (samples, expected) loaded from them
    started_at: float = field(default_factory=time.perf_counter)  # perf_counter() as build() began
    records: list[StepRecord] = field(default_factory=list)
    current: int | None = None  # the step running now
    latest_model: ModelWrapper | None = None  # the model after the last step that finished
    report: BuildReport | None = None  # as last written
    log: BuildLog | None = None  # build.log, open for writing
    cfg: DataflowBuildConfig = None  # set as the build starts (FINN is untyped: Any)
    context: BuildContext = field(default_factory=BuildContext)  # the plan's, once it runs
    charts: ChartWorker | None = None
    resumed_from: Checkpoint | None = None  # the checkpoint this build continues, if any
    stop_after: int | None = None  # run only the steps before this index
    rtlsim: RtlsimSection | None = (
        None  # verify: rtlsim results (brainsmith.hardware.rtlsim.DesignResult)
    )
    synthesis: SynthesisSection | None = None  # build.synth: Yosys' counts per layer
    bitstream: BitstreamSection | None = None  # build.bitstream: the board's bitstream
    refolds: list[dict[str, object]] = field(default_factory=list)  # rounds that missed

    @property
    def output_dir(self) -> str:
        return self.folder.path

    @property
    def model_path(self) -> str:
        return self.model.path

    @property
    def notes(self) -> list[str]:
        return self.model.notes

    @property
    def report_dir(self) -> str:
        """Where FINN writes its estimate reports."""
        return os.path.join(self.output_dir, "finn", "report")

    @property
    def build_log(self) -> BuildLog:
        """build.log, open from before the first step until the build ends."""
        if self.log is None:
            raise RuntimeError("build.log is not open: the build has not started")
        return self.log

    def path(self, *parts: str) -> str:
        return os.path.join(self.output_dir, *parts)


class BuildLog(io.TextIOBase):
    """build.log: FINN's output. A failed write (a full disk) is kept in ``error`` instead
    of breaking FINN's ``print`` mid-step; the build checks ``error`` after each step."""

    def __init__(self, path: str) -> None:
        super().__init__()
        self.path = path
        self.error: OSError | None = None
        self._file = open(path, "w", encoding="utf-8")  # noqa: SIM115 - closed by close()

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        if self.error is None:
            try:
                self._file.write(text)
            except OSError as exc:
                self.error = exc
        return len(text)

    def flush(self) -> None:
        if self.error is None and not self._file.closed:
            try:
                self._file.flush()
            except OSError as exc:
                self.error = exc

    def close(self) -> None:
        self.flush()
        with contextlib.suppress(OSError):
            self._file.close()
        super().close()

    def step_started(self, number: int, name: str) -> None:
        """Step ``number``'s header, on disk at once: the last one names the step a process
        that died was in (``last_words``)."""
        self.write(f"\n===== step {number}: {name} =====\n")
        self.flush()

    @contextlib.contextmanager
    def crash_dumps(self) -> Iterator[None]:
        """While the block runs, a crash of the process (SIGSEGV, SIGFPE, SIGABRT, SIGBUS,
        SIGILL: native code gone wrong) appends Python's traceback to build.log
        (``faulthandler``), unless the process dumps crashes elsewhere already."""
        dumping = False
        if not faulthandler.is_enabled() and self.error is None:
            with contextlib.suppress(OSError, ValueError):  # (no dumps then, as before)
                faulthandler.enable(self._file)
                dumping = True
        try:
            yield
        finally:
            if dumping:
                faulthandler.disable()


_HEADER = re.compile(rb"===== step \d+: (.+) =====")
_FATAL = b"Fatal Python error: "
_LINE_BYTES = 1 << 16  # longer lines are read in pieces (a header or a dump line is short)


def last_words(path: str) -> tuple[str, str]:
    """What the build.log at ``path`` says last: the step that started last ("setup" if
    none did) and the fatal error a crash dumped after its header ("" if none, e.g.
    "Segmentation fault"). A missing or unreadable log, or one that is not a regular file
    (never blocked on), says ("setup", "")."""
    step, fatal = "setup", ""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return step, fatal
    if not stat.S_ISREG(os.fstat(descriptor).st_mode):
        os.close(descriptor)
        return step, fatal
    start = True  # at the start of a line
    with os.fdopen(descriptor, "rb") as handle, contextlib.suppress(OSError):
        for piece in iter(lambda: handle.readline(_LINE_BYTES), b""):
            if start:
                line = piece.rstrip(b"\r\n")
                if found := _HEADER.fullmatch(line):
                    step, fatal = found[1].decode("utf-8", "replace"), ""
                elif line.startswith(_FATAL):
                    fatal = line[len(_FATAL) :].decode("utf-8", "replace").strip()
            start = piece.endswith(b"\n")
    return step, fatal
