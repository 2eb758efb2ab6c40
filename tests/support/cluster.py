"""A real Dask cluster for tests: a ``dask scheduler`` and ``dask worker`` processes (with
their nannies) on the loopback interface, started and always torn down by the caller."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

DASK = str(Path(sys.executable).with_name("dask"))
START_TIMEOUT = 120  # seconds for the scheduler and the workers to come up


def _start(args: list[str], log: Path, env: dict[str, str] | None) -> subprocess.Popen:
    with open(log, "w") as handle:
        return subprocess.Popen(
            [DASK, *args], stdout=handle, stderr=subprocess.STDOUT, start_new_session=True, env=env
        )


def _stop(process: subprocess.Popen) -> None:
    """End a process group this helper started: SIGTERM, then SIGKILL after 20 s."""
    if process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)


def _address(info: Path) -> str | None:
    """The address in the scheduler file, once it is written in full (the scheduler writes
    it in place: a loaded machine may show it empty or cut short for a while)."""
    try:
        return json.loads(info.read_text())["address"]
    except (OSError, ValueError, KeyError):
        return None


@contextlib.contextmanager
def dask_cluster(
    folder: Path, workers: int = 2, env: dict[str, str] | None = None
) -> Iterator[tuple[str, Path]]:
    """A scheduler and ``workers`` single-threaded workers on 127.0.0.1, their logs and
    scheduler file in ``folder``, all started with ``env`` (default: this process's);
    yields (the scheduler's address, its scheduler file)."""
    from distributed import Client

    info = folder / "scheduler.json"
    common = ["--no-dashboard", "--host", "127.0.0.1"]
    # the scheduler's HTTP server on a free port: 8787 may be another test's
    scheduler = ["scheduler", "--port", "0", "--dashboard-address", "127.0.0.1:0"]
    log = folder / "s.log"
    processes = [_start([*scheduler, "--scheduler-file", str(info), *common], log, env)]
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while (address := _address(info)) is None:
            assert processes[0].poll() is None, log.read_text()
            assert time.monotonic() < deadline, "no scheduler file: " + log.read_text()
            time.sleep(0.2)
        worker = ["worker", address, "--nworkers", str(workers), "--nthreads", "1", *common]
        processes.append(_start(worker, folder / "w.log", env))
        with Client(address, timeout=30) as client:
            client.wait_for_workers(workers, timeout=max(1.0, deadline - time.monotonic()))
        yield address, info
    finally:
        for process in reversed(processes):
            _stop(process)
