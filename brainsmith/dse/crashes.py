"""A segment whose worker process died while running it: recorded as failed in the step it
was in, with how the process ended, and not run again by brainsmith (Dask's own retries are
the scheduler's: once more on the local cluster, ``allowed-failures`` on the user's).

The step is the last one the segment's build.log names (each step's header reaches the file
before the step runs). How the process ended: the fatal signal Python's faulthandler wrote to
build.log (native code crashed it: SIGSEGV ...), else the exit status the local cluster's
nanny saw (SIGKILL from the out-of-memory killer, an ``os._exit``), when known.
"""

from __future__ import annotations

import logging
import os
import re
import signal
import threading
import time
from collections.abc import Callable

from brainsmith.builder.state import last_words
from brainsmith.dse.tasks import NodeResult, NodeTask, log_identity

# faulthandler's name of each fatal signal it catches
FATAL_SIGNALS = {
    "Segmentation fault": "SIGSEGV",
    "Floating-point exception": "SIGFPE",
    "Bus error": "SIGBUS",
    "Illegal instruction": "SIGILL",
    "Aborted": "SIGABRT",
}
# what a nanny logs when its worker process ends (distributed.nanny)
_DEATH = re.compile(r"Worker process (\d+) (?:exited with status (\d+)|was killed by signal (\d+))")


class WorkerDeaths(logging.Filter):
    """Exit statuses of the local cluster's worker processes by pid, taken from what their
    nannies (which run in this process) log; other records below ERROR are dropped, as the
    exploration's ``distributed`` log level did before. ``close()`` removes it."""

    def __init__(self) -> None:
        super().__init__()
        self.statuses: dict[int, int] = {}  # pid -> exit code; -N: killed by signal N
        self.changed = threading.Condition()
        self.logger = logging.getLogger("distributed.nanny")
        self.level = self.logger.level
        self.logger.addFilter(self)
        self.logger.setLevel(logging.INFO)

    def filter(self, record: logging.LogRecord) -> bool:
        if not record.args and isinstance(record.msg, str):
            found = _DEATH.match(record.msg)
            if found:
                pid, status, killed = found.groups()
                with self.changed:
                    self.statuses[int(pid)] = int(status) if status else -int(killed)
                    self.changed.notify_all()
        return record.levelno >= logging.ERROR

    def wait(self, pid: int, seconds: float) -> int | None:
        """Process ``pid``'s exit status, waiting up to ``seconds`` for its nanny to see it."""
        deadline = time.monotonic() + seconds
        with self.changed:
            while pid not in self.statuses and (left := deadline - time.monotonic()) > 0:
                self.changed.wait(left)
            return self.statuses.get(pid)

    def close(self) -> None:
        self.logger.removeFilter(self)
        self.logger.setLevel(self.level)


def crashed(
    task: NodeTask, worker: str, old_log: int | None, exit_status: Callable[[], int | None]
) -> NodeResult:
    """The failed result of ``task``, whose worker (``worker``, an address) died running it.
    ``old_log`` is the identity of the build.log its folder held before it started (a log
    from an earlier run says nothing about this crash); ``exit_status()`` the process's exit
    status, if known, asked for only when build.log does not say how it ended."""
    log = os.path.join(task.folder, "build.log")
    step, fatal = ("setup", "") if log_identity(log) == old_log else last_words(log)
    if fatal:
        known = fatal in FATAL_SIGNALS
        how = f"{FATAL_SIGNALS[fatal]} ({fatal})" if known else f"Fatal Python error: {fatal}"
        hint = (
            "native code (an extension module, a ctypes call) crashed the process: "
            f"{log} ends with Python's traceback of the crash"
        )
    else:
        how, hint = _ending(exit_status(), log)
    error = {
        "step": step,
        "reason": f"the worker running it died: {how}",
        "hint": f"{hint}; once fixed, --resume runs it again",
        "worker_died": True,
    }
    result = NodeResult(task.id, "failed", task.folder, task.key, error=error)
    result.worker = worker
    return result


def _ending(status: int | None, log: str) -> tuple[str, str]:
    """How a process with exit status ``status`` ended, and what to look at."""
    if status is None:
        return "how is not known", f"see the end of {log} and the worker's log"
    if status < 0:
        name = _signal_name(-status)
        if -status == signal.SIGKILL:
            return name, (
                "killed from outside, most often by the out-of-memory killer (see dmesg): "
                "fewer workers per machine, or more memory"
            )
        return name, f"see the end of {log}"
    return f"it exited with status {status}", (
        f"something in the step ended the process (os._exit, a library's exit()); see the "
        f"end of {log}"
    )


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"
