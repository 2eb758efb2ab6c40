"""The state of one build: its resolved steps, their records and the finished result."""

from __future__ import annotations

import contextlib
import io
import os
import time
from dataclasses import dataclass, field
from typing import cast

from brainsmith.builder.intake import CheckedModel
from brainsmith.builder.outdir import OutputFolder
from brainsmith.planning.context import BuildContext
from brainsmith.planning.plan import BuildPlan
from brainsmith.report.console import Progress

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from finn.builder.build_dataflow_config import DataflowBuildConfig
    from qonnx.core.modelwrapper import ModelWrapper

    from brainsmith.builder.checkpoint import Checkpoint
    from brainsmith.plugin.spec import PluginSpec
    from brainsmith.report.charts import ChartWorker
    from brainsmith.report.schema import (
        BuildReport,
        RtlsimSection,
        StepEntry,
        StepStatus,
        SynthesisSection,
        Verification,
    )
    from brainsmith.verification.verifier import Vectors

    # A step as FINN calls it: (model, cfg) -> model
    StepFunction = Callable[[ModelWrapper, DataflowBuildConfig], ModelWrapper]


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
class Step:
    """A step of the plan, resolved: its function, or why it is skipped."""

    name: str
    plugin: str
    fn: StepFunction | None = None
    skip_reason: str = ""
    verifiable: bool = True  # False for FINN's hardware steps (Vivado products)
    deferred: PluginSpec | None = None  # loaded when it runs (see ``function``)

    def function(self) -> StepFunction | None:
        """The step's function; a deferred one (a FINN hardware step without its tool,
        which runs only for some models) is loaded now: loading one imports all of FINN's
        builder."""
        if self.fn is None and self.deferred is not None:
            from brainsmith.plugin import get_registry

            self.fn = cast("StepFunction", get_registry().load(self.deferred))
        return self.fn


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
    rtlsim: RtlsimSection | None = None  # verify: rtlsim results (brainsmith.rtlsim.DesignResult)
    synthesis: SynthesisSection | None = None  # build.synth: Yosys' counts per layer

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
