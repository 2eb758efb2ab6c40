"""Where segments run: a Dask cluster (an embedded local one by default, or an existing
one by its scheduler address), or this process, one segment at a time (``workers=0``).

Each segment is one Dask task whose argument is its parent's result, so Dask starts it as
soon as the parent has finished, on any free worker. Workers must see the exploration's
output folder (one machine, or a shared file system on a cluster) and run the same
brainsmith; both are checked before anything is submitted.

A segment whose worker dies while running it (a crash, the out-of-memory killer) is tried
once more by the local cluster's scheduler (``LOCAL_ALLOWED_FAILURES``), as often as its
``distributed.scheduler.allowed-failures`` says by a user's scheduler, and then recorded as
failed in the step it was in (``brainsmith.dse.crashes``); brainsmith does not run it again.
Segments lost with that worker before they started run again (``DaskCluster._alone``).
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
import time
import uuid
from collections.abc import Callable, Iterator

from brainsmith.dse.crashes import WorkerDeaths, crashed
from brainsmith.dse.tasks import NodeResult, NodeTask, check_worker, run_node, warm_up
from brainsmith.files import read_json
from brainsmith.version import __version__

TYPE_CHECKING = False
if TYPE_CHECKING:
    from distributed import Client, Future, LocalCluster

    from brainsmith.files import Json


Tasks = list[tuple[NodeTask, str | None]]  # the segments to run, each with its parent's id
Results = dict[str, NodeResult]  # the segments finished, by id
Started = Callable[[str], None]
Done = Callable[[NodeResult], None]
CONNECT_TIMEOUT = 10.0  # default seconds to reach a scheduler and hear it answer, all told
WORKER_TIMEOUT = 60  # seconds to wait for a first worker of an existing cluster
RESTART_TIMEOUT = 30  # seconds for a worker to restart after a segment ran out of time
POLL = 0.2  # seconds between looks at the running segments
# How often the local cluster's scheduler runs a segment again when its worker dies running
# it: once (a worker lost to something else, the segment runs on), not Dask's default of 3,
# each a crash and a worker restart more for a segment that crashes its worker every time.
LOCAL_ALLOWED_FAILURES = 1
DEATH_NOTICE = 5  # seconds to wait for a local worker's nanny to report how it ended
SCHEDULER_FILE_BYTES = 1 << 20


class ExecutorError(RuntimeError):
    """The cluster cannot be used; ``hint`` says what to do."""

    def __init__(self, reason: str, hint: str) -> None:
        super().__init__(reason)
        self.reason, self.hint = reason, hint


class InProcess:
    """Runs the segments here, one after the other (no Dask)."""

    description: dict[str, str | int] = {"executor": "in-process", "workers": 1}

    def run(self, tasks: Tasks, done: Results, started: Started, finished: Done) -> None:
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
        self,
        folder: str,
        workers: int | None = None,
        scheduler: str | None = None,
        limit: float | None = None,
        connect_timeout: float = CONNECT_TIMEOUT,
    ) -> None:
        from distributed import Client

        self.cluster = None
        self.description: dict[str, str | int]
        self.topic = f"brainsmith-explore-{uuid.uuid4().hex[:12]}"
        self.limit = limit  # seconds a segment may run; then its worker is restarted
        self.began: dict[str, tuple[float, str]] = {}  # segment -> (start, worker address)
        self.starts: dict[str, Json] = {}  # segment -> its last start's announcement
        self.stopped: dict[str, NodeResult] = {}  # segments stopped for running too long
        self.deaths: WorkerDeaths | None = None  # the local workers' exit statuses
        logging.getLogger("distributed").setLevel(logging.ERROR)
        if scheduler:
            self.client = _connect(scheduler, connect_timeout)
            self.description = {"executor": "dask", "scheduler": scheduler}
        else:
            self.cluster = _local_cluster(workers or default_workers())
            self.client = Client(self.cluster)
            self.deaths = WorkerDeaths()
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

        try:
            seen = self.client.run(
                check_worker, os.path.abspath(folder), callback_timeout=WORKER_TIMEOUT
            )
        except TimeoutError:
            raise ExecutorError(
                f"the Dask workers of {self.client.scheduler.address} did not answer within "
                f"{WORKER_TIMEOUT} s",
                "see the workers' logs; restart hung workers",
            ) from None
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

    def run(self, tasks: Tasks, done: Results, started: Started, finished: Done) -> None:
        self.client.subscribe_topic(self.topic, lambda event: self._announced(event, started))
        # Every worker loads FINN at once, instead of when its first segment arrives.
        warm = [
            self.client.submit(warm_up, workers=[w], allow_other_workers=False, pure=False)
            for w in self.client.scheduler_info()["workers"]
        ]
        futures, parents, by_id = self._submit(tasks, done)
        results: dict[str, NodeResult] = dict(done)
        died: list[NodeTask] = []
        try:
            for node, future in self._settle(dict(futures), by_id):
                result = self._settled(node, future, by_id[node])
                if result is None:
                    died.append(by_id[node])
                    continue
                results[node] = result
                finished(result)
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

    def _announced(self, event: tuple[float, Json], started: Started) -> None:
        """A worker's message that it started a segment: when, where, and ``started``."""
        message = event[1]
        self.began[message["started"]] = (time.monotonic(), message.get("worker", ""))
        self.starts[message["started"]] = message
        started(message["started"])

    def _submit(
        self, tasks: Tasks, done: Results
    ) -> tuple[dict[str, Future[NodeResult]], dict[str, str | None], dict[str, NodeTask]]:
        """Every segment submitted after its parent (its future, else its result in
        ``done``): (the futures, each one's parent, the segments, by id)."""
        futures: dict[str, Future[NodeResult]] = {}
        parents: dict[str, str | None] = {}
        by_id: dict[str, NodeTask] = {}
        for task, parent in tasks:
            task.topic = self.topic
            argument = futures[parent] if parent in futures else done.get(parent or "")
            futures[task.id] = self.client.submit(
                run_node, task, argument, key=f"{self.topic}-{task.id}", pure=False
            )
            parents[task.id], by_id[task.id] = parent, task
        return futures, parents, by_id

    def _settled(self, node: str, future: Future[NodeResult], task: NodeTask) -> NodeResult | None:
        """How segment ``node`` ended: stopped, finished, or crashed with its worker; None
        when Dask lost it with a dying worker before it started (run again alone)."""
        if node in self.stopped:
            return self.stopped[node]
        if future.status == "finished":
            return future.result()
        if node in self.began and _killed(future):  # it ran when its worker died
            return self._crashed(task)
        return None

    def _settle(
        self, pending: dict[str, Future[NodeResult]], tasks: dict[str, NodeTask]
    ) -> Iterator[tuple[str, Future[NodeResult]]]:
        """Yield ``(segment id, future)`` as each ends; stop those over the time limit."""
        while pending:
            ended = [node for node, future in pending.items() if future.done()]
            for node in ended:
                yield node, pending.pop(node)
            if not ended:
                for node in self._overdue(pending):
                    self._stop(tasks[node], pending[node])
                time.sleep(POLL)

    def _overdue(self, pending: dict[str, Future[NodeResult]]) -> list[str]:
        if self.limit is None:
            return []
        now = time.monotonic()
        return [
            node
            for node in pending
            if node in self.began and node not in self.stopped
            and now - self.began[node][0] > self.limit
        ]  # fmt: skip

    def _stop(self, task: NodeTask, future: Future[NodeResult]) -> None:
        """Cancel a segment that ran out of time and restart the worker running it (Python
        cannot stop a running task otherwise); segments below it fail with it."""
        began, worker = self.began[task.id]
        self.stopped[task.id] = _timed_out(task, self.limit or 0, time.monotonic() - began)
        self.client.cancel([future], force=True)
        if worker:
            with contextlib.suppress(Exception):
                self.client.restart_workers(
                    [worker], timeout=RESTART_TIMEOUT, raise_for_error=False
                )

    def _alone(
        self, task: NodeTask, parent: NodeResult | None, futures: dict[str, Future[NodeResult]]
    ) -> NodeResult:
        """Run again, by itself, a segment Dask lost with a dying worker before it started.

        A worker that dies (a crash, the out-of-memory killer) takes down every segment the
        scheduler had placed on it, not only the one running; those that had not started
        run again, alone, and finish. (A culprit whose start went unannounced, by dying at
        once, is named when it dies again here.)
        """
        if parent is not None and parent.status != "ok":
            return run_node(task, parent)  # records the parent's error, runs nothing
        self.began.pop(task.id, None)
        future = self.client.submit(
            run_node, task, parent, key=f"{self.topic}-{task.id}-alone", pure=False
        )
        futures[task.id] = future  # cancelled with the others on Ctrl-C
        for _ in self._settle({task.id: future}, {task.id: task}):
            pass
        if task.id in self.stopped:
            return self.stopped[task.id]
        if _killed(future):
            return self._crashed(task)
        try:
            result: NodeResult = future.result()
        except Exception:
            return _lost(task, future)
        return result

    def _crashed(self, task: NodeTask) -> NodeResult:
        """A segment whose worker died running it, failed in the step it was in."""
        start = self.starts.get(task.id, {})
        pid = start.get("pid")

        def exit_status() -> int | None:
            if self.deaths is None or not isinstance(pid, int):
                return None  # (a user's cluster: its nannies are elsewhere)
            return self.deaths.wait(pid, DEATH_NOTICE)

        result = crashed(task, str(start.get("worker", "")), start.get("log"), exit_status)
        if task.id in self.began:
            result.seconds = round(time.monotonic() - self.began[task.id][0], 3)
        return result

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.client.close(timeout=10)
        if self.cluster is not None:
            with contextlib.suppress(Exception):
                self.cluster.close(timeout=20)
        if self.deaths is not None:
            self.deaths.close()


def default_workers() -> int:
    return max(1, os.cpu_count() or 1)


def _timed_out(task: NodeTask, limit: float, seconds: float) -> NodeResult:
    """A segment stopped for running longer than ``limit`` seconds."""
    error = {
        "step": "timeout",
        "reason": f"did not finish within {limit:g} s (--variant-timeout); its worker was "
        "restarted to stop it",
        "hint": "raise --variant-timeout if it needs longer, or see its build.log for the "
        "step that hangs; --resume runs it again",
        "timed_out": True,
    }
    result = NodeResult(task.id, "failed", task.folder, task.key, error=error)
    result.seconds = round(seconds, 3)
    return result


def _killed(future: Future[NodeResult]) -> bool:
    """Whether ``future`` failed because the worker running it died (Dask's KilledWorker)."""
    from distributed import KilledWorker

    return future.status == "error" and isinstance(future.exception(), KilledWorker)


def _lost(task: NodeTask, future: Future[NodeResult]) -> NodeResult:
    """A task Dask could not finish for another reason than its worker's death: it was
    cancelled, or Dask itself failed it."""
    if future.status == "cancelled":
        reason, hint = "cancelled", "run the exploration again with --resume"
    else:
        exc = future.exception()
        reason = f"{type(exc).__name__}: {exc}"
        hint = "Dask could not run it; see the workers' logs, then --resume"
    error = {"step": "setup", "reason": reason, "hint": hint}
    return NodeResult(task.id, "failed", task.folder, task.key, error=error)


def _connect(given: str, timeout: float = CONNECT_TIMEOUT) -> Client:
    """A client of the scheduler at ``given`` (an address or scheduler file), or
    ExecutorError within about ``timeout`` seconds."""
    from distributed import Client

    address = _address(given)
    where = address if address == given else f"{address} (from {given})"
    _probe(address, where, timeout)
    try:
        return Client(address, timeout=timeout)
    except (OSError, TimeoutError, ValueError) as exc:
        raise _unreachable(where, str(exc)) from None


def _address(given: str) -> str:
    """The scheduler address ``given`` names: itself, or the ``address`` of a scheduler file."""
    if not (given.endswith(".json") and os.path.isfile(given)):
        return given
    try:
        address = read_json(given, SCHEDULER_FILE_BYTES)["address"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ExecutorError(
            f"scheduler file {given} names no scheduler address ({type(exc).__name__}: {exc})",
            "pass the file that `dask scheduler --scheduler-file FILE` writes, or its "
            "tcp://HOST:PORT address",
        ) from None
    if not isinstance(address, str) or not address.isprintable():
        raise ExecutorError(
            f"scheduler file {given}: its address is not text", "pass the scheduler's address"
        )
    return address


def _probe(address: str, where: str, timeout: float) -> None:
    """Connect and ask the scheduler who it is, all within ``timeout`` seconds: a
    server that never accepts, accepts and says nothing, or answers garbage is refused;
    nothing listening is said at once (Dask's connect retries until its timeout)."""
    refused = _refused(address)
    if refused:
        raise _unreachable(where, refused)
    answer: list[object] = []
    thread = threading.Thread(target=_identity, args=(address, answer, timeout), daemon=True)
    thread.start()
    thread.join(timeout + 2)  # the thread keeps its own deadline; this is a backstop
    found = answer[0] if answer else TimeoutError()
    if isinstance(found, dict) and found.get("type") == "Scheduler":
        return
    if isinstance(found, TimeoutError):
        problem = f"no answer within {timeout:g} s"
    elif isinstance(found, OSError):
        problem = str(found)[:300]
    else:  # garbage (a frame of 3 EiB ...), or another service's reply
        kind = f" ({type(found).__name__})" if isinstance(found, BaseException) else ""
        problem = f"it answered, but not as a Dask scheduler{kind}"
    raise _unreachable(where, problem)


def _refused(address: str) -> str:
    """Why a ``tcp://`` address refuses a connection (nothing listens there), else ""."""
    import socket
    from urllib.parse import urlsplit

    if not address.startswith("tcp://"):
        return ""
    try:
        parts = urlsplit(address)
        socket.create_connection((parts.hostname, parts.port), timeout=1).close()
    except ConnectionRefusedError as exc:
        return f"nothing listens at that port ({exc.strerror or 'connection refused'})"
    except (OSError, ValueError):
        return ""  # the probe itself says what it finds
    return ""


def _identity(address: str, answer: list[object], timeout: float) -> None:
    """``answer.append(the scheduler's identity)``, or the exception that prevented it."""
    import asyncio

    async def ask() -> object:
        from distributed.comm import connect
        from distributed.security import Security

        arguments = Security().get_connection_args("client")
        comm = await connect(address, timeout=timeout, **arguments)
        try:
            await comm.write({"op": "identity", "reply": True})
            return await comm.read()
        finally:
            comm.abort()

    try:
        answer.append(asyncio.run(asyncio.wait_for(ask(), timeout)))
    except BaseException as exc:  # handed to the waiting thread
        answer.append(exc)


def _unreachable(where: str, problem: str) -> ExecutorError:
    return ExecutorError(
        f"cannot reach the Dask scheduler at {where}: {problem}",
        "check that it is the address `dask scheduler` printed (tcp://HOST:PORT) or its "
        "--scheduler-file, that the scheduler runs and that no firewall blocks the port; "
        "or leave --scheduler out to run on this machine",
    )


def _local_cluster(workers: int) -> LocalCluster:
    """A local cluster of ``workers`` processes with one thread each (FINN builds are
    single-threaded Python; one build per process keeps FINN's global settings apart),
    whose scheduler tries a segment whose worker died once more, not Dask's default 3 times."""
    from distributed import LocalCluster

    with _sigint_ignored(), _workers_must_start():  # Ctrl-C is this process's to handle
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
            scheduler_kwargs={"allowed_failures": LOCAL_ALLOWED_FAILURES},
        )


@contextlib.contextmanager
def _workers_must_start() -> Iterator[None]:
    """Dask's "Nanny failed to start" as an ExecutorError with what usually causes it."""
    try:
        yield
    except RuntimeError as exc:
        if "failed to start" not in str(exc):
            raise
        raise ExecutorError(
            f"the local cluster's worker processes did not start ({exc}); each worker's own "
            "error is printed above it",
            'a script that calls brainsmith.explore needs if __name__ == "__main__": '
            "around the call (workers import the script again); otherwise see the error above",
        ) from exc


@contextlib.contextmanager
def _sigint_ignored() -> Iterator[None]:
    """Processes started in the block inherit an ignored SIGINT (the main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
