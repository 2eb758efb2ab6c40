"""What a worker runs: one segment of the execution tree, as a brainsmith build.

A shared segment is a build that stops after its last step and leaves a checkpoint; a
variant's own segment continues from its parent's checkpoint to the end, in the variant's
folder, with report.json and report.html like any build. Each finished segment leaves
``explore-node.json`` (written last) so ``--resume`` can tell complete work from cut work.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
import traceback
from dataclasses import asdict, dataclass, field
from typing import cast

from brainsmith.files import PUBLIC, read_json, write_text
from brainsmith.frameworks.finn.env import prepare_finn
from brainsmith.interrupts import BuildInterrupted
from brainsmith.metrics import span
from brainsmith.planning.plan import BuildPlan
from brainsmith.report.charts import render_charts
from brainsmith.version import __version__

TYPE_CHECKING = False
if TYPE_CHECKING:
    from brainsmith.files import Json
    from brainsmith.report_schema import BuildReport

NODE_FILE = "explore-node.json"
# FINN's settings and brainsmith's output redirection are per process: one build at a time,
# even on a worker with several threads.
_BUILD_LOCK = threading.Lock()


@dataclass
class NodeTask:
    """One segment to run: steps ``start`` to ``stop`` of ``plan`` (``stop`` None: to the
    end, a variant's own folder)."""

    id: str
    key: str
    folder: str
    model: str
    plan: BuildPlan
    start: int
    stop: int | None
    vectors: tuple[str, str] | None = None
    topic: str = ""  # where a Dask worker announces the start (one per exploration)


@dataclass
class NodeResult:
    """How a segment ended: ``ok`` or ``failed`` (``failed_in`` names the shared segment
    whose failure it inherited); ``report`` is a variant's report.json."""

    id: str
    status: str
    folder: str
    key: str = ""
    seconds: float = 0.0
    checkpoint: str = ""
    error: Json | None = None
    failed_in: str = ""
    report: BuildReport | None = field(default=None, repr=False)
    worker: str = ""
    reused: bool = False

    def save(self) -> None:
        """Record the outcome in the segment's folder (atomically, last)."""
        os.makedirs(self.folder, exist_ok=True)
        data = {k: v for k, v in asdict(self).items() if k != "report"}
        path = os.path.join(self.folder, NODE_FILE)
        write_text(path, json.dumps(data, indent=1), PUBLIC)


def load_result(folder: str, key: str) -> NodeResult | None:
    """The finished result recorded in ``folder`` for ``key``; None when there is none."""
    try:
        result = NodeResult(**read_json(os.path.join(folder, NODE_FILE)))
    except (OSError, ValueError, TypeError):
        return None
    if result.key != key or result.status not in ("ok", "failed"):
        return None
    result.folder = folder  # where it is now (the output may have moved)
    if result.checkpoint:
        result.checkpoint = folder
    if result.status == "ok" and not _products_load(result, folder):
        return None
    result.reused = True
    return result


def _products_load(result: NodeResult, folder: str) -> bool:
    """Whether what a finished segment left in ``folder`` loads: its checkpoint (a shared
    segment's), else its build report (a variant's, then kept in ``result``)."""
    if result.checkpoint:
        from brainsmith.builder.checkpoint import Checkpoint

        try:
            Checkpoint.load(result.checkpoint, within=exploration_folder(folder))
        except ValueError:
            return False
        return True
    try:
        result.report = cast("BuildReport", read_json(os.path.join(folder, "report.json")))
    except (OSError, ValueError):
        return False
    return True


def final(error: Json | None) -> bool:
    """Whether a failure is final, kept by --resume: not one that ran out of time or whose
    worker died running it (--resume runs those again)."""
    return not (error or {}).get("timed_out") and not (error or {}).get("worker_died")


def exploration_folder(node_folder: str) -> str:
    """The exploration's folder, from a segment's (``<exploration>/segments/<id>``) or a
    variant's (``<exploration>/variants/<id>``): the files its checkpoints may name."""
    return os.path.dirname(os.path.dirname(os.path.abspath(node_folder)))


def run_node(task: NodeTask, parent: NodeResult | None = None) -> NodeResult:
    """Run ``task`` after ``parent`` (its parent segment's result, None at the root)."""
    if parent is not None and parent.status != "ok":
        result = NodeResult(
            task.id,
            "failed",
            task.folder,
            task.key,
            error=parent.error,
            failed_in=parent.failed_in or parent.id,
        )
        if task.stop is None and final(parent.error):
            result.save()
        return result
    if task.stop is not None:  # Dask recomputes a segment whose worker died after it ran
        finished = load_result(task.folder, task.key)
        if finished is not None and finished.status == "ok":
            finished.reused = False
            return finished

    with _BUILD_LOCK, span("brainsmith.segment", node=task.id, folder=task.folder):
        _announce(task.topic, task.id, task.folder)
        began = time.perf_counter()
        result = _build(task, parent)
        result.seconds = round(time.perf_counter() - began, 3)
        result.worker = _worker_name()
    result.save()
    return result


def _build(task: NodeTask, parent: NodeResult | None) -> NodeResult:
    from brainsmith.builder import BuildError, build
    from brainsmith.builder.checkpoint import Checkpoint

    try:
        start = None
        if parent is not None:
            start = Checkpoint.load(parent.checkpoint, within=exploration_folder(task.folder))
        built = build(
            task.model,
            task.plan,
            task.folder,
            input_npy=task.vectors[0] if task.vectors else None,
            expected_npy=task.vectors[1] if task.vectors else None,
            force=True,  # a cut earlier attempt is moved aside, never written into
            start=start,
            stop_after=task.stop,
        )
    except BuildError as exc:
        if exc.exit_code in (128 + signal.SIGINT, 128 + signal.SIGTERM):
            raise BuildInterrupted(exc.exit_code - 128) from exc
        error = {"step": exc.step, "reason": exc.reason, "hint": exc.hint, "report": exc.report}
        return NodeResult(task.id, "failed", task.folder, task.key, error=error)
    except Exception as exc:  # a broken plugin or a full disk fails this segment only
        traceback.print_exc()
        error = {
            "step": "setup",
            "reason": f"{type(exc).__name__}: {exc}",
            "hint": f"see {os.path.join(task.folder, 'build.log')}",
        }
        return NodeResult(task.id, "failed", task.folder, task.key, error=error)
    report = built.report
    if built.checkpoint is not None or report["status"] == "stopped":  # (they go together)
        return NodeResult(task.id, "ok", task.folder, task.key, checkpoint=built.output_dir)
    return NodeResult(task.id, "ok", task.folder, task.key, report=report)


def _announce(topic: str, node: str, folder: str) -> None:
    """Tell the exploring client that ``node`` started, where (the worker and its process)
    and which build.log its folder holds before (on a Dask worker only): should the process
    die, the client reads the step it was in from the new build.log."""
    if not topic:
        return
    try:
        from distributed import get_worker

        worker = get_worker()
        message = {
            "started": node,
            "worker": worker.address,
            "pid": os.getpid(),
            "log": log_identity(os.path.join(folder, "build.log")),
        }
        worker.log_event(topic, message)
    except (ImportError, ValueError):
        pass


def log_identity(path: str) -> int | None:
    """Which file ``path`` is (its inode, the same on every machine of a shared file
    system), None if there is none: a build moves an earlier attempt's folder aside, so a
    new build.log is another file."""
    try:
        return os.stat(path).st_ino
    except OSError:
        return None


def _worker_name() -> str:
    try:
        from distributed import get_worker

        return str(get_worker().name)
    except (ImportError, ValueError):
        return "local"


def warm_up() -> None:
    """Load FINN and what a build uses, so a worker's first segment does not wait for it."""
    from brainsmith.builder import runner  # noqa: F401

    prepare_finn()
    import finn.custom_op.fpgadataflow  # noqa: F401
    import qonnx.core.modelwrapper  # noqa: F401

    import brainsmith.steps.dataflow  # noqa: F401

    render_charts([{"name": "warm-up", "LUT": 1, "cycles": 1}])  # matplotlib and its fonts


def check_worker(folder: str) -> Json:
    """What a worker sees: the output folder, brainsmith's version, Python's."""
    import platform

    return {
        "sees_output": os.path.isdir(folder),
        "brainsmith": __version__,
        "python": platform.python_version(),
    }
