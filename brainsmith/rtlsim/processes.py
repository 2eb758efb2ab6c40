"""Running Verilator, make and the compiled simulators with what they print bounded.

Their output is read as it comes, at most a given number of bytes in all, and kept in
memory or written to a log: RTL that prints without end (a ``$display`` in a loop) or
macros that expand without end cannot fill the memory or the disk. A process that prints
more, or runs longer than its time limit (if it has one), is killed; so is one whose wait
is interrupted (Ctrl-C, or SIGTERM raised as an exception).
"""

from __future__ import annotations

import os
import selectors
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import BinaryIO

MIB = 2**20
CHUNK = 64 * 1024


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
    from collections import Counter

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
) -> Finished:
    """Run ``command`` in ``cwd``; its stdout and stderr are kept, or with ``log`` written
    there as they come (stderr with stdout), at most ``limit`` bytes in all.

    Raises TooMuchOutput when it prints more, ``subprocess.TimeoutExpired`` when it runs
    longer than ``timeout`` seconds (None: no limit); the process is killed first.
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
    kept = [bytearray() for _ in streams]  # stdout, stderr (without a log)
    index = {stream.fileno(): number for number, stream in enumerate(streams)}
    deadline = None if timeout is None else time.monotonic() + timeout
    printed = 0
    try:
        with selectors.DefaultSelector() as selector:
            for stream in streams:
                selector.register(stream, selectors.EVENT_READ)
            while selector.get_map():
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    raise subprocess.TimeoutExpired(list(command), timeout or 0.0)
                for key, _ in selector.select(left):
                    chunk = os.read(key.fd, CHUNK)
                    if not chunk:
                        selector.unregister(key.fileobj)
                        continue
                    room = max(0, limit - printed)
                    printed += len(chunk)
                    if log is not None:
                        log.write(chunk[:room])
                    else:
                        kept[index[key.fd]] += chunk[:room]
                    if printed > limit:
                        last = chunk if log is not None else kept[index[key.fd]]
                        raise TooMuchOutput(limit, bytes(last))
        returncode = process.wait(
            None if deadline is None else max(0.0, deadline - time.monotonic())
        )
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        for stream in streams:
            stream.close()
    stdout, stderr = [bytes(text).decode(errors="replace") for text in (*kept, b"")[:2]]
    return Finished(returncode, stdout, stderr)
