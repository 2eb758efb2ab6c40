"""The one way brainsmith runs a tool: Verilator, make, the compiled simulators, Yosys,
nextpnr, the packers and openFPGALoader, each with what it prints bounded (``run_bounded``).

Their output is read as it comes, at most a given number of bytes in all, and kept in
memory or written to a log: RTL that prints without end (a ``$display`` in a loop) or
macros that expand without end cannot fill the memory or the disk. A process that prints
more, or runs longer than its time limit (if it has one), is killed; so is one whose wait
is interrupted (Ctrl-C, or SIGTERM raised as an exception), or whose caller, waiting in
another thread, asks it to stop (``stop``). The tools of one job (a synthesis of many
layers, a place and route's stages) are ``Processes``: stopped together, so none outlives
the job.
"""

from __future__ import annotations

import os
import selectors
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import IO, BinaryIO

MIB = 2**20
CHUNK = 64 * 1024
STOP_POLL = 0.2  # seconds between looks at a ``stop`` event


class Stopped(Exception):
    """The process was killed because its caller set ``stop``."""


class TooMuchOutput(Exception):
    """The process printed more than ``limit`` bytes and was killed; the message names the
    line it printed most often in ``printed`` (what it printed, or its last chunk)."""

    def __init__(self, limit: int, printed: bytes = b"") -> None:
        repeated = most_repeated(printed)
        super().__init__(
            f"printed more than {limit // MIB} MiB; stopped{f'; {repeated}' if repeated else ''}"
        )
        self.limit = limit


def most_repeated(printed: bytes, shown: int = 200) -> str:
    """``the line printed most often: "<line>" (N times)`` for the line ``printed`` repeats
    most (cut to ``shown`` characters); empty if no line repeats."""
    lines = Counter(printed.decode(errors="replace").splitlines())
    line, count = max(lines.items(), key=lambda item: item[1], default=("", 0))
    if count < 2:
        return ""
    cut = line.strip()
    cut = cut if len(cut) <= shown else cut[: shown - 3] + "..."
    return f'the line printed most often: "{cut}" ({count:,} times)'


@dataclass(frozen=True)
class Finished:
    """A process that ended by itself: its exit code and what it printed."""

    returncode: int
    stdout: str
    stderr: str


def run_bounded(
    command: Sequence[str],
    *,
    cwd: str,
    timeout: float | None,
    limit: int,
    env: Mapping[str, str] | None = None,
    log: BinaryIO | None = None,
    stop: threading.Event | None = None,
) -> Finished:
    """Run ``command`` in ``cwd``; its stdout and stderr are kept, or with ``log`` written
    there as they come (stderr with stdout), at most ``limit`` bytes in all.

    Raises TooMuchOutput when it prints more, ``subprocess.TimeoutExpired`` when it runs
    longer than ``timeout`` seconds (None: no limit), Stopped once ``stop`` is set; the
    process is killed first.
    """
    process = subprocess.Popen(
        list(command),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT if log is not None else subprocess.PIPE,
        cwd=cwd,
        env=env,
    )
    streams = [stream for stream in (process.stdout, process.stderr) if stream is not None]
    output = _Output(streams, limit, log)
    deadline = _Deadline.after(list(command), timeout)
    try:
        _read(streams, output, deadline, stop)
        left = deadline.left()
        returncode = process.wait(None if left is None else max(0.0, left))
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        for stream in streams:
            stream.close()
    return Finished(returncode, *output.texts())


@dataclass(frozen=True)
class _Deadline:
    """When ``command``, given ``timeout`` seconds (None: no limit), is out of time."""

    command: list[str]
    timeout: float | None
    at: float | None  # time.monotonic()

    @classmethod
    def after(cls, command: list[str], timeout: float | None) -> _Deadline:
        return cls(command, timeout, None if timeout is None else time.monotonic() + timeout)

    def left(self) -> float | None:
        """Seconds left (None: no limit)."""
        return None if self.at is None else self.at - time.monotonic()

    def check(self) -> float | None:
        """Seconds left; ``subprocess.TimeoutExpired`` when none are."""
        left = self.left()
        if left is not None and left <= 0:
            raise subprocess.TimeoutExpired(self.command, self.timeout or 0.0)
        return left


class _Output:
    """What the process printed: kept per stream (stdout, stderr), or written to ``log``,
    at most ``limit`` bytes in all."""

    def __init__(self, streams: list[IO[bytes]], limit: int, log: BinaryIO | None) -> None:
        self.kept = {stream.fileno(): bytearray() for stream in streams}
        self.limit, self.log, self.printed = limit, log, 0

    def take(self, fd: int, chunk: bytes) -> None:
        """``chunk`` read from ``fd``; TooMuchOutput once more than ``limit`` was printed."""
        room = max(0, self.limit - self.printed)
        self.printed += len(chunk)
        if self.log is not None:
            self.log.write(chunk[:room])
        else:
            self.kept[fd] += chunk[:room]
        if self.printed > self.limit:
            last = chunk if self.log is not None else self.kept[fd]
            raise TooMuchOutput(self.limit, bytes(last))

    def texts(self) -> tuple[str, str]:
        """(stdout, stderr) as kept ("" for a stream written to the log)."""
        stdout, stderr = [bytes(t).decode(errors="replace") for t in (*self.kept.values(), b"")[:2]]
        return stdout, stderr


def _read(
    streams: list[IO[bytes]], output: _Output, deadline: _Deadline, stop: threading.Event | None
) -> None:
    """Every chunk of ``streams`` into ``output`` until they close, ``deadline`` passes or
    ``stop`` is set."""
    with selectors.DefaultSelector() as selector:
        for stream in streams:
            selector.register(stream, selectors.EVENT_READ)
        while selector.get_map():
            wait = deadline.check()
            if stop is not None:
                if stop.is_set():
                    raise Stopped(" ".join(deadline.command))
                wait = STOP_POLL if wait is None else min(wait, STOP_POLL)
            for key, _ in selector.select(wait):
                chunk = os.read(key.fd, CHUNK)
                if chunk:
                    output.take(key.fd, chunk)
                else:
                    selector.unregister(key.fileobj)


class Processes:
    """The tool processes of one job: ``stop()`` sets ``signal``, which every ``run_bounded``
    given it heeds (its process killed within ``STOP_POLL`` seconds by the thread waiting for
    it); a job stopped starts no more."""

    def __init__(self) -> None:
        self.signal = threading.Event()

    @property
    def stopped(self) -> bool:
        return self.signal.is_set()

    def stop(self) -> None:
        self.signal.set()
