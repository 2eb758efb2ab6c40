"""The state of one build: its resolved steps, their records and the finished result."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field

from brainsmith.builder.context import BuildContext
from brainsmith.builder.plan import BuildPlan
from brainsmith.builder.progress import Progress


@dataclass
class StepRecord:
    """What happened in one step, as written to report.json."""

    name: str
    plugin: str
    status: str = "pending"  # ok | skipped | failed | pending
    seconds: float | None = None
    verification: dict | None = None
    reason: str = ""
    model: str = ""

    def as_dict(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if v not in (None, "")}


@dataclass
class BuildResult:
    """A finished build: its folder, report (as in report.json) and final model."""

    output_dir: str
    report: dict
    model: object = None  # the final ModelWrapper
    report_path: str = ""
    html_path: str = ""
    checkpoint: object = None  # with build(stop_after=N): the Checkpoint written instead

    @property
    def status(self) -> str:
        return self.report["status"]

    @property
    def performance(self) -> dict:
        return self.report.get("performance", {})

    @property
    def totals(self) -> dict:
        return self.report.get("totals", {})


@dataclass
class Step:
    """A step of the plan, resolved: its function, or why it is skipped."""

    name: str
    plugin: str
    fn: object = None
    skip_reason: str = ""
    verifiable: bool = True  # False for FINN's hardware steps (Vivado products)


@dataclass
class BuildRun:
    """Everything one build keeps while it runs."""

    plan: BuildPlan
    output_dir: str
    model_path: str
    progress: Progress
    verify: str
    user_vectors: tuple[str, str] | None
    moved_aside: str | None
    started: float = field(default_factory=time.perf_counter)
    records: list[StepRecord] = field(default_factory=list)
    report: dict = field(default_factory=dict)
    log: object = None  # build.log, open for writing
    cfg: object = None  # the FINN DataflowBuildConfig
    context: BuildContext | None = None
    charts: object = None  # ChartWorker
    start: object = None  # the Checkpoint this build continues, if any
    stop_after: int | None = None  # run only the steps before this index

    @property
    def report_dir(self) -> str:
        """Where FINN writes its estimate reports."""
        return os.path.join(self.output_dir, "finn", "report")

    def path(self, *parts: str) -> str:
        return os.path.join(self.output_dir, *parts)
