"""Where segments run: a Dask cluster (an embedded local one by default, or an existing
one by its scheduler address), or this process, one segment at a time (``workers=0``).

Each segment is one Dask task whose argument is its parent's result, so Dask starts it as
soon as the parent has finished, on any free worker. Workers must see the exploration's
output folder (one machine, or a shared file system on a cluster) and run the same
brainsmith; both are checked before anything is submitted.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
import uuid
from collections.abc import Callable

from brainsmith.dse.tasks import NodeResult, NodeTask, check_worker, run_node, warm_up

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


Started = Callable[[str], None]
Done = Callable[[NodeResult], None]
CONNECT_TIMEOUT = 20  # seconds to reach a scheduler
WORKER_TIMEOUT = 60  # seconds to wait for a first worker of an existing cluster


class ExecutorError(RuntimeError):
    """The cluster cannot be used; ``hint`` says what to do."""

    def __init__(self, reason: str, hint: str) -> None:
        super().__init__(reason)
        self.reason, self.hint = reason, hint


class InProcess:
    """Runs the segments here, one after the other (no Dask)."""

    description: dict[str, str | int] = {"executor": "in-process", "workers": 1}

    def run(
        self, tasks: list[tuple[NodeTask, str | None]], done: dict, started: Started, finished: Done
    ) -> None:
        results = dict(done)
        for task, parent in tasks:
            started(task.id)
            result = run_node(task, results.get(parent) if parent else None)
            results[task.id] = result
            finished(result)

    def close(self) -> None:
        pass


class DaskCluster:
    """Runs the segments as Dask tasks on a local cluster or an existing one."""

    def __init__(
        self, folder: str, workers: int | None = None, scheduler: str | None = None
    ) -> None:
        from distributed import Client

        self.cluster = None
        self.description: dict[str, str | int]
        self.topic = f"brainsmith-explore-{uuid.uuid4().hex[:12]}"
        logging.getLogger("distributed").setLevel(logging.ERROR)
        if scheduler:
            self.client = _connect(scheduler)
            self.description = {"executor": "dask", "scheduler": scheduler}
        else:
            self.cluster = _local_cluster(workers or default_workers())
            self.client = Client(self.cluster)
            self.description = {"executor": "dask-local", "workers": len(self.cluster.workers)}
        try:
            self._check(folder)
        except BaseException:
            self.close()
            raise

    def _check(self, folder: str) -> None:
        try:
            self.client.wait_for_workers(1, timeout=WORKER_TIMEOUT)
        except TimeoutError:
            raise ExecutorError(
                f"the Dask scheduler at {self.client.scheduler.address} has no workers",
                f"start workers with: dask worker {self.client.scheduler.address} --nthreads 1",
            ) from None
        from brainsmith.version import __version__

        seen = self.client.run(check_worker, os.path.abspath(folder))
        blind = [w for w, facts in seen.items() if not facts["sees_output"]]
        if blind:
            raise ExecutorError(
                f"Dask worker(s) {', '.join(blind)} cannot see the output folder "
                f"{os.path.abspath(folder)}",
                "put -o on a file system every worker mounts at the same path (NFS, Lustre ...)",
            )
        other = {w: f["brainsmith"] for w, f in seen.items() if f["brainsmith"] != __version__}
        if other:
            raise ExecutorError(
                f"Dask worker(s) run another brainsmith: {other} (here {__version__})",
                "install the same brainsmith (and plugins) where the workers run",
            )
        self.description["workers"] = len(seen)

    def run(
        self, tasks: list[tuple[NodeTask, str | None]], done: dict, started: Started, finished: Done
    ) -> None:
        from distributed import as_completed

        self.client.subscribe_topic(self.topic, lambda event: started(event[1]["started"]))
        # Every worker loads FINN at once, instead of when its first segment arrives.
        warm = [
            self.client.submit(warm_up, workers=[w], allow_other_workers=False, pure=False)
            for w in self.client.scheduler_info()["workers"]
        ]
        futures: dict[str, Any] = {}
        by_key: dict[str, NodeTask] = {}
        parents: dict[str, str | None] = {}
        for task, parent in tasks:
            task.topic = self.topic
            argument = futures[parent] if parent in futures else done.get(parent)
            future = self.client.submit(
                run_node, task, argument, key=f"{self.topic}-{task.id}", pure=False
            )
            futures[task.id], by_key[future.key], parents[task.id] = future, task, parent
        results: dict[str, NodeResult] = dict(done)
        died: list[NodeTask] = []
        try:
            for future in as_completed(list(futures.values())):
                task = by_key[future.key]
                if future.status == "finished":
                    results[task.id] = future.result()
                    finished(results[task.id])
                else:
                    died.append(task)
            died.sort(key=lambda t: list(futures).index(t.id))  # parents first
            for task in died:
                results[task.id] = self._alone(task, results.get(parents[task.id] or ""), futures)
                finished(results[task.id])
        except BaseException:
            self.client.cancel([*futures.values(), *warm], force=True)
            raise
        finally:
            with contextlib.suppress(Exception):
                self.client.unsubscribe_topic(self.topic)

    def _alone(self, task: NodeTask, parent: NodeResult | None, futures: dict) -> NodeResult:
        """Run again, by itself, a segment Dask lost with a dying worker.

        A worker that dies (a crash, the out-of-memory killer) takes down every segment the
        scheduler had placed on it, not only the one that killed it; alone, the innocent
        ones finish and the culprit is named.
        """
        if parent is not None and parent.status != "ok":
            return run_node(task, parent)  # records the parent's error, runs nothing
        future = self.client.submit(
            run_node, task, parent, key=f"{self.topic}-{task.id}-alone", pure=False
        )
        futures[task.id] = future  # cancelled with the others on Ctrl-C
        try:
            return future.result()
        except Exception:
            return _lost(task, future)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.client.close(timeout=10)
        if self.cluster is not None:
            with contextlib.suppress(Exception):
                self.cluster.close(timeout=20)


def default_workers() -> int:
    return max(1, os.cpu_count() or 1)


def _lost(task: NodeTask, future) -> NodeResult:
    """A task Dask could not finish: its worker died, or it was cancelled."""
    if future.status == "cancelled":
        reason, hint = "cancelled", "run the exploration again with --resume"
    else:
        exc = future.exception()
        reason = f"{type(exc).__name__}: {exc}"
        hint = "a worker died running it (out of memory?); see the workers' logs, then --resume"
    error = {"step": "setup", "reason": reason, "hint": hint}
    return NodeResult(task.id, "failed", task.folder, task.key, error=error)


def _connect(address: str):
    from distributed import Client

    scheduler_file = address if address.endswith(".json") and os.path.isfile(address) else None
    try:
        if scheduler_file:
            return Client(scheduler_file=scheduler_file, timeout=CONNECT_TIMEOUT)
        return Client(address, timeout=CONNECT_TIMEOUT)
    except (OSError, TimeoutError, ValueError) as exc:
        raise ExecutorError(
            f"cannot reach the Dask scheduler at {address}: {exc}",
            "start one with `dask scheduler` (it prints its tcp://HOST:PORT address) and pass "
            "that address, or leave --scheduler out to run on this machine",
        ) from None


def _local_cluster(workers: int):
    """A local cluster of ``workers`` processes with one thread each (FINN builds are
    single-threaded Python; one build per process keeps FINN's global settings apart)."""
    from distributed import LocalCluster

    with _sigint_ignored():  # Ctrl-C is this process's to handle, not the workers'
        return LocalCluster(
            n_workers=workers,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            # the scheduler's HTTP server (health, metrics; the dashboard when bokeh is
            # installed) on a free loopback port, so explorations run side by side
            dashboard_address="127.0.0.1:0",
            # workers' own logs (a heartbeat cut short by Ctrl-C ...) would only scramble the
            # progress display; each variant's failure is in its build.log and explore.json
            silence_logs=logging.CRITICAL,
        )


@contextlib.contextmanager
def _sigint_ignored():
    """Processes started in the block inherit an ignored SIGINT (the main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
