"""``brainsmith.explore()``: build every variant of a design-space blueprint, running the
steps variants share once, on Dask, and judge the results.

Output folder::

    explore.json  report.html          the variants, their metrics, the Pareto front, timings
    segments/<id>/                     shared segments: their models and a checkpoint
    variants/<id>/                     each variant's build (report.json, report.html, ...)
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import cast

from brainsmith.blueprint import BlueprintError, load_blueprint
from brainsmith.builder.outdir import default_output_dir, os_problem, prepare_output_dir
from brainsmith.dse.progress import ExploreProgress
from brainsmith.dse.results import write_json
from brainsmith.dse.stopping import Stopping
from brainsmith.dse.tasks import NodeResult, NodeTask, load_result
from brainsmith.dse.tree import Segment, build_tree, root_key, show, step_keys
from brainsmith.dse.variants import SpaceError, Variant, expand
from brainsmith.errors import BrainsmithError
from brainsmith.folder_lock import FolderBusy, FolderLock
from brainsmith.metrics import ExploreMetrics
from brainsmith.planning.errors import BuildError, option
from brainsmith.planning.plan import PlanError
from brainsmith.planning.shaping import with_overrides
from brainsmith.plugin.errors import PluginError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from brainsmith.blueprint.resolved import Blueprint
    from brainsmith.dse.executor import DaskCluster, InProcess
    from brainsmith.dse.progress import ExploreProgress
    from brainsmith.files import Json
    from brainsmith.metrics import ExploreMetrics


class ExploreError(BrainsmithError):
    """An exploration that could not run (exit code 2) or was interrupted (130 by SIGINT,
    143 by SIGTERM)."""

    def __init__(self, reason: str, hint: str = "", exit_code: int = 2) -> None:
        self.reason, self.hint, self.exit_code = reason, hint, exit_code
        super().__init__(self.message())

    def message(self) -> str:
        return self.reason + (f"\n  try: {self.hint}" if self.hint else "")


@dataclass
class ExploreResult:
    """A finished exploration: its folder and explore.json's content."""

    output_dir: str
    data: Json
    json_path: str
    html_path: str

    @property
    def variants(self) -> list[Json]:
        variants: list[Json] = self.data["variants"]
        return variants

    @property
    def pareto(self) -> list[Json]:
        return [v for v in self.variants if v["pareto"]]


def explore(
    model: str,
    blueprint: str | os.PathLike[str] | Blueprint,
    output_dir: str | None = None,
    *,
    workers: int | None = None,
    scheduler: str | None = None,
    resume: bool = False,
    force: bool = False,
    input_npy: str | None = None,
    expected_npy: str | None = None,
    progress: bool = False,
    metrics_port: int | None = None,
    variant_timeout: float | None = None,
    scheduler_timeout: float | None = None,
    fpga_part: str | None = None,
    board: str | None = None,
) -> ExploreResult:
    """Build each variant of ``blueprint``'s design space on ``model`` into ``output_dir``.

    ``workers``: processes of the local Dask cluster (default: the number of cores; 0 runs
    everything in this process, without Dask). ``scheduler``: the ``tcp://HOST:PORT``
    address (or scheduler JSON file) of an existing Dask cluster instead. ``resume``:
    keep what an earlier run into the same folder finished. ``metrics_port``: serve
    Prometheus metrics on 127.0.0.1:PORT while the exploration runs. ``variant_timeout``:
    seconds a segment may run before it is stopped and its variants recorded as timed out
    (needs worker processes). ``scheduler_timeout``: seconds to reach ``scheduler`` and hear
    it answer (default 10). ``fpga_part`` or ``board``: every variant built for that part or
    board instead of the blueprint's (a Lattice board: every layer RTL, as for ``build``).
    SIGINT and SIGTERM stop the exploration (see
    ``brainsmith.dse.stopping``); one output folder takes one exploration at a time.
    Raises ExploreError.
    """
    started = time.perf_counter()
    _refuse_in_a_starting_worker(sys._getframe(1).f_globals)
    _check_options(workers, scheduler, variant_timeout)
    _check_scheduler_timeout(scheduler, scheduler_timeout)
    _check_inputs(model, input_npy, expected_npy)
    loaded = _load(blueprint)
    variants = _targeted(_variants(loaded), fpga_part, board)
    vectors = (
        (os.path.abspath(input_npy), os.path.abspath(expected_npy))
        if input_npy and expected_npy
        else None
    )
    root = root_key(model, vectors)
    for variant in variants:
        variant.keys = step_keys(variant.plan, root)
    roots = build_tree(variants)
    folder = os.path.abspath(output_dir or _default_folder(loaded.name))
    with _locked(folder):
        _prepare(folder, resume, force)
        run = Exploration(loaded, variants, roots, folder, os.path.abspath(model), vectors)
        run.variant_timeout = variant_timeout
        run.scheduler_timeout = scheduler_timeout
        if resume:
            run.adopt_finished()
        if metrics_port is not None:
            run.metrics = _serve_metrics(metrics_port, loaded.name)
        try:
            run.execute(workers, scheduler, progress, started)
        finally:
            if run.metrics is not None:
                run.metrics.close()
    if run.result is None:  # execute() writes it, or raises
        raise RuntimeError("the exploration ended without a result")
    return run.result


def _refuse_in_a_starting_worker(caller: Json) -> None:
    """A worker process of the local cluster runs the user's script again, as
    ``__mp_main__``, while it starts; an unguarded ``explore(...)`` there (``caller``: the
    calling code's globals) would start an exploration inside each worker."""
    if caller.get("__name__") != "__mp_main__":
        return
    where = caller.get("__file__") or "the script"
    raise ExploreError(
        f"brainsmith.explore was called while a worker process started: each worker of the "
        f"local cluster runs {where} again, and its explore(...) call with it",
        'put the call under if __name__ == "__main__": (docs/explore.md)',
    )


def _check_options(
    workers: int | None, scheduler: str | None, variant_timeout: float | None
) -> None:
    if scheduler and workers is not None:
        raise ExploreError(
            "--workers and --scheduler contradict each other: --workers sizes the local "
            "cluster, an existing cluster brings its own workers",
            "keep one of them",
        )
    if variant_timeout is None:
        return
    if not variant_timeout > 0:  # (NaN too)
        raise ExploreError(
            f"--variant-timeout is {variant_timeout}, not a number of seconds > 0",
            "e.g. --variant-timeout 3600",
        )
    if workers == 0:
        raise ExploreError(
            "--variant-timeout needs worker processes: a variant running in this process "
            "(--workers 0) cannot be stopped",
            "use --workers 1 (or more), or leave --variant-timeout out",
        )


def _check_scheduler_timeout(scheduler: str | None, seconds: float | None) -> None:
    if seconds is None:
        return
    if not 0 < seconds <= 3600:  # (NaN too)
        raise ExploreError(
            f"--scheduler-timeout is {seconds}, not a number of seconds from 0 to 3600",
            "e.g. --scheduler-timeout 30",
        )
    if not scheduler:
        raise ExploreError(
            "--scheduler-timeout is for an existing cluster: a local one is started, not reached",
            "pass --scheduler too, or leave --scheduler-timeout out",
        )


@contextlib.contextmanager
def _locked(folder: str) -> Iterator[None]:
    """Hold ``folder``'s exploration lock, or refuse at once (ExploreError)."""
    lock = FolderLock(folder)
    try:
        lock.acquire()
    except FolderBusy as exc:
        raise ExploreError(exc.reason, exc.hint) from None
    except OSError as exc:
        reason, hint = os_problem(exc)
        raise ExploreError(
            f"cannot lock output folder {folder} ({lock.path}): {reason}", hint
        ) from None
    try:
        yield
    finally:
        lock.release()


def _serve_metrics(port: int, name: str) -> ExploreMetrics:
    try:
        return ExploreMetrics(port, name)
    except OSError as exc:
        raise ExploreError(
            f"cannot serve metrics on 127.0.0.1:{port}: {exc.strerror or exc}",
            "choose a free port for --metrics-port",
        ) from None


class Exploration:
    """One exploration's state: the tree, what finished and the outputs."""

    def __init__(
        self,
        blueprint: Blueprint,
        variants: list[Variant],
        roots: list[Segment],
        folder: str,
        model: str,
        vectors: tuple[str, str] | None,
    ) -> None:
        self.blueprint = blueprint
        self.variants = variants
        self.roots = roots
        self.nodes = {node.id: node for root in roots for node in root.walk()}
        self.folder = folder
        self.model = model
        self.vectors = vectors
        self.results: dict[str, NodeResult] = {}
        self.ran: set[str] = set()
        self.status = "running"
        self.signum: int = signal.SIGINT  # what interrupted it
        self.variant_timeout: float | None = None
        self.scheduler_timeout: float | None = None  # seconds to reach --scheduler
        self.running: dict[str, float] = {}  # segments under way -> when they started
        self.started = time.perf_counter()
        self.writing = threading.Lock()  # explore.json: the main thread's, or abandon()'s
        self.executor_facts: Json = {}
        self.setup_seconds = 0.0  # until the executor was ready
        self.teardown_seconds = 0.0  # stopping it
        self.metrics: ExploreMetrics | None = None  # with --metrics-port
        self.result: ExploreResult | None = None

    def node_folder(self, node: Segment) -> str:
        return os.path.join(self.folder, "segments" if node.shared else "variants", node.id)

    def adopt_finished(self) -> None:
        """Take every segment an earlier run finished with the same inputs (--resume)."""
        for node in self.nodes.values():
            found = load_result(self.node_folder(node), node.key)
            if found is not None:
                self.results[node.id] = found

    def tasks(self) -> list[tuple[NodeTask, str | None]]:
        """The segments still to run for the variants that are not finished, parents first."""
        wanted: list[Segment] = []
        for node in self.nodes.values():
            if node.shared or node.id in self.results:
                continue
            for step in node.path():
                if step.id not in self.results and step not in wanted:
                    wanted.append(step)
        wanted.sort(key=lambda n: (len(n.path()), list(self.nodes).index(n.id)))
        return [(self._task(n), n.parent.id if n.parent else None) for n in wanted]

    def _task(self, node: Segment) -> NodeTask:
        return NodeTask(
            id=node.id,
            key=node.key,
            folder=self.node_folder(node),
            model=self.model,
            plan=node.variants[0].plan,
            start=node.start,
            stop=node.stop if node.shared else None,
            vectors=self.vectors,
        )

    def execute(
        self, workers: int | None, scheduler: str | None, progress: bool, started: float
    ) -> None:
        """Run what is left; SIGINT/SIGTERM stop it (``Stopping``), recorded as interrupted."""
        self.started = started
        with Stopping(self.abandon):
            self._execute(workers, scheduler, progress, started)

    def _execute(
        self, workers: int | None, scheduler: str | None, progress: bool, started: float
    ) -> None:
        tasks = self.tasks()
        executor = self._started_executor(workers, scheduler, tasks)
        self.setup_seconds = time.perf_counter() - started
        display = ExploreProgress.silent()
        try:
            if progress:
                display = self._progress()
            if executor is not None:
                self._write(None)  # "running", every variant pending: visible from the start
                executor.run(
                    tasks,
                    dict(self.results),
                    lambda node: self._started(node, display),
                    lambda r: self._finished(r, display),
                )
            self.status = "complete"
        except KeyboardInterrupt as exc:
            self.signum = getattr(exc, "signum", signal.SIGINT)
            self.status = "interrupted"
        finally:
            display.close()
            self._wind_down(executor, started)
        if self.status == "interrupted":
            raise ExploreError(
                f"{self._interrupted()}; the rest were cancelled",
                "continue with the same command and --resume",
                exit_code=128 + self.signum,
            )

    def _started_executor(
        self, workers: int | None, scheduler: str | None, tasks: list[tuple[NodeTask, str | None]]
    ) -> DaskCluster | InProcess | None:
        """The executor for ``tasks`` (None without any); a cluster that cannot start stops
        here: nothing ran, nothing is written."""
        if not tasks:
            return None
        try:
            executor = _executor(self.folder, workers, scheduler, tasks, self)
        except KeyboardInterrupt as exc:
            signum = getattr(exc, "signum", signal.SIGINT)
            raise ExploreError(
                f"interrupted by {signal.Signals(signum).name} while the Dask cluster started",
                "run the command again",
                128 + signum,
            ) from None
        self.executor_facts = executor.description
        return executor

    def _progress(self) -> ExploreProgress:
        """The progress display: a line per segment, with the variants it builds."""
        return ExploreProgress(
            {n.id: _label(n) for n in self.nodes.values()},
            {n.id: [v.id for v in n.variants] for n in self.nodes.values()},
            title=f"brainsmith explore {self.blueprint.name}: {len(self.variants)} variants "
            f"-> {self.folder}",
        )

    def _wind_down(self, executor: DaskCluster | InProcess | None, started: float) -> None:
        """The executor closed (its teardown timed), the segments that finished meanwhile
        collected after an interrupt, an unexpected error recorded as failed, and the record
        written."""
        if executor is not None:
            stopping = time.perf_counter()
            executor.close()
            self.teardown_seconds = time.perf_counter() - stopping
        if self.status == "interrupted":
            self._collect_late()
        elif self.status == "running":  # an unexpected error: keep what finished
            self.status = "failed"
        self.result = self._write(started)

    def _interrupted(self) -> str:
        done = sum(r.id in self.results for r in self.variants)
        name = signal.Signals(self.signum).name
        return f"interrupted by {name}: {done} of {len(self.variants)} variants finished"

    def abandon(self, signum: int) -> None:
        """The exploration did not stop after SIGINT/SIGTERM (a variant running in this
        process ignores it): record it as interrupted and say so; the caller then ends the
        process (``Stopping``). Runs in the watchdog thread."""
        self.signum, self.status = signum, "interrupted"
        stuck = ", ".join(sorted(set(self.running) - set(self.results))) or "the exploration"
        if self.writing.acquire(timeout=5):  # held on: nothing may write after this
            try:
                self._collect_late()
                self._write(self.started, locked=True)
            except Exception as exc:  # the state may be mid-change: keep the old record
                _say(f"warning: explore.json not updated: {exc}")
        _say(
            f"error: {self._interrupted()}; {stuck} did not stop (it ignores the "
            "interrupt) and was abandoned\n"
            "  try: continue with the same command and --resume"
        )

    def _started(self, node: str, display: ExploreProgress) -> None:
        self.running[node] = time.perf_counter()
        display.started(node)

    def _collect_late(self) -> None:
        """Segments that finished while the cluster stopped are finished, not cancelled."""
        for node in self.nodes.values():
            if node.id not in self.results:
                found = load_result(self.node_folder(node), node.key)
                if found is not None:
                    found.reused = False
                    self.results[node.id] = found
                    if not found.failed_in:
                        self.ran.add(node.id)

    def _finished(self, result: NodeResult, display: ExploreProgress) -> None:
        self.results[result.id] = result
        if self.metrics is not None:
            shared = self.nodes[result.id].shared
            self.metrics.finished(result.id, result.status, result.seconds, not shared)
        if not result.failed_in:
            self.ran.add(result.id)
        node = self.nodes[result.id]
        display.finished(result.id, result.status, _summary(node, result), _settled(node, result))
        if not node.shared:
            self._write(None)

    def _write(self, started: float | None, locked: bool = False) -> ExploreResult:
        from brainsmith.dse.record import assemble
        from brainsmith.dse.report import write_report

        if not locked:
            with self.writing:
                return self._write(started, locked=True)
        data = assemble(self, started)
        json_path = os.path.join(self.folder, "explore.json")
        html_path = os.path.join(self.folder, "report.html")
        write_json(data, json_path)
        if started is not None:
            write_report(data, html_path)
        return ExploreResult(self.folder, data, json_path, html_path)


def _settled(node: Segment, result: NodeResult) -> dict[str, str]:
    """Variant id -> status, for the variants ``result`` (of ``node``) settles: its own, or
    every variant below a shared segment that failed."""
    if not node.shared:
        return {node.id: result.status}
    return {v.id: "failed" for v in node.variants} if result.status == "failed" else {}


def _summary(node: Segment, result: NodeResult) -> str:
    """The progress line's summary of ``result``: where a segment failed, or a variant's
    metrics ("" otherwise)."""
    if result.status == "failed" and not result.failed_in and result.error:
        return f"{result.error['step']}: {result.error['reason']}"[:160]
    if not node.shared and result.report:
        from brainsmith.dse.report import metric_text

        return metric_text(result.report)
    return ""


def _say(text: str) -> None:
    """Write to the process's standard error (a build in this process may have redirected
    ``sys.stderr`` to its log)."""
    with contextlib.suppress(OSError):
        os.write(2, (text + "\n").encode("utf-8", "replace"))


def _label(node: Segment) -> str:
    if node.shared:
        return f"{node.id} steps {node.start + 1}-{node.stop} for {len(node.variants)} variants"

    choices = " ".join(
        f"{k.partition('.')[2]}={show(v)}" for k, v in node.variants[0].choices.items()
    )
    return f"{node.id} {choices}"


def _executor(
    folder: str,
    workers: int | None,
    scheduler: str | None,
    tasks: list[tuple[NodeTask, str | None]],
    run: Exploration,
) -> InProcess | DaskCluster:
    from brainsmith.dse.executor import (
        CONNECT_TIMEOUT,
        DaskCluster,
        ExecutorError,
        InProcess,
        default_workers,
    )

    if workers == 0:
        return InProcess()
    try:
        import distributed  # noqa: F401
    except ImportError:
        raise ExploreError(
            "brainsmith explore runs on Dask, and the distributed package is not installed",
            "pip install 'brainsmith[explore]', or pass --workers 0 to run in this process",
        ) from None
    tails = sum(task.stop is None for task, _ in tasks)
    try:
        return DaskCluster(
            folder,
            workers or min(default_workers(), tails),
            scheduler,
            run.variant_timeout,
            run.scheduler_timeout or CONNECT_TIMEOUT,
        )
    except ExecutorError as exc:
        raise ExploreError(exc.reason, exc.hint) from None


def _check_inputs(model: str, input_npy: str | None, expected_npy: str | None) -> None:
    if not os.path.isfile(model):
        raise ExploreError(
            f"model file {model} does not exist", "check the path of the QONNX model"
        )
    if (input_npy is None) != (expected_npy is None):
        raise ExploreError(
            "--input and --expected must be given together", "pass both files, or neither"
        )
    for path in (p for p in (input_npy, expected_npy) if p):
        if not os.path.isfile(path):
            raise ExploreError(f"file {path} does not exist", "check the path")


def _load(blueprint: str | os.PathLike[str] | Blueprint) -> Blueprint:
    if hasattr(blueprint, "design_space"):
        return cast("Blueprint", blueprint)
    try:
        return load_blueprint(str(blueprint))
    except BlueprintError as exc:
        raise ExploreError(
            str(exc), f"fix the blueprint (brainsmith blueprint validate {blueprint})"
        ) from exc
    except (PluginError, OSError) as exc:
        raise ExploreError(
            f"blueprint {blueprint}: {exc}", "check the plugin configuration"
        ) from exc


def _variants(blueprint: Blueprint) -> list[Variant]:
    try:
        variants = expand(blueprint)
    except SpaceError as exc:
        hint = f"add a design_space: (docs/explore.md), or build it: brainsmith build MODEL {blueprint.path}"
        if blueprint.design_space is not None:
            hint = "fewer alternatives, or search: {strategy: random, max_variants: N}"
        raise ExploreError(str(exc), hint) from exc
    except PlanError as exc:
        raise ExploreError(
            f"blueprint {blueprint.path}: {exc}", "fix the blueprint's kernels"
        ) from exc
    if any(v.plan.options is None for v in variants):
        raise ExploreError(
            f"blueprint {blueprint.name} has no build: section",
            "add build: with fpga_part (or board) and target_fps",
        )
    return variants


def _targeted(variants: list[Variant], part: str | None, board: str | None) -> list[Variant]:
    """``variants`` built for ``part`` or ``board`` (``--part``, ``--board``) instead of the
    blueprint's, checked as ``build`` checks them; ExploreError when the design space itself
    varies the target (the variants would become the same) or the target is refused."""
    if not part and not board:
        return variants
    given = option("part") if part else option("board")
    varied = sorted({k for v in variants for k in v.choices if k.endswith(("fpga_part", "board"))})
    if varied:
        raise ExploreError(
            f"{given} and the design space's {', '.join(varied)} both choose the target",
            f"drop {given}, or the design space's {varied[0]}",
        )
    try:
        overrides = {"fpga_part": part, "board": board}
        return [replace(v, plan=with_overrides(v.plan, overrides, None)) for v in variants]
    except BuildError as exc:
        raise ExploreError(exc.reason, exc.hint) from None


def _default_folder(name: str) -> str:
    return default_output_dir(f"{name}-explore")


def _prepare(folder: str, resume: bool, force: bool) -> None:
    """Make ``folder`` ready; errors name the options as the caller gave them (the command
    sets ``command_line_names``)."""
    if resume and force:
        raise ExploreError(
            f"{option('resume')} and {option('force')} contradict each other", "keep one of them"
        )
    if resume and os.path.isdir(folder):
        return
    try:
        prepare_output_dir(folder, force)
    except BuildError as exc:
        hint = exc.hint
        if "not empty" in exc.reason:
            hint = f"pass {option('resume')} to continue the exploration in it, " + hint
        raise ExploreError(exc.reason, hint) from exc
