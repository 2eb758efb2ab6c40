"""SIGINT and SIGTERM during an exploration: it stops, writes explore.json as ``interrupted``
and exits, also when what runs ignores the signal.

While ``Stopping`` is active (main thread only), both signals raise ``BuildInterrupted``
(brainsmith.interrupts, as during a build), so the exploration cancels what is left
and records what finished. A variant running in this process (``--workers 0``) may not let
go: a step that swallows the exception, or code stuck outside Python. A watchdog thread
hears every signal (through ``signal.set_wakeup_fd``, which works even then) and, when the
exploration has not stopped ``GRACE`` seconds after the first signal, or at the second,
calls ``abandon(signum)`` (which records the exploration) and ends the process with
``128 + signum``.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable

from brainsmith.interrupts import SIGNALS, BuildInterrupted

GRACE = 8.0  # seconds an exploration has to stop by itself after SIGINT or SIGTERM


class Stopping:
    """``with Stopping(abandon):`` SIGINT and SIGTERM raise BuildInterrupted once; then the
    watchdog gives the exploration ``GRACE`` seconds (or until the next signal)."""

    def __init__(self, abandon: Callable[[int], None], grace: float = GRACE) -> None:
        self.abandon = abandon
        self.grace = grace
        self.signum: int | None = None  # the first signal, once one arrived
        self._lock = threading.Lock()
        self._closed = False
        self._previous: dict[int, object] = {}
        self._wakeup = -1
        self._sockets: tuple[socket.socket, socket.socket] | None = None

    def __enter__(self) -> Stopping:
        if threading.current_thread() is not threading.main_thread():
            return self  # signals reach the main thread only: its caller handles them
        reader, writer = socket.socketpair()
        writer.setblocking(False)
        self._sockets = (reader, writer)
        self._wakeup = signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)
        for signum in SIGNALS:
            self._previous[signum] = signal.getsignal(signum)
            if self._previous[signum] is not signal.SIG_IGN:  # a background job stays so
                signal.signal(signum, self._handler)
        threading.Thread(target=self._watch, name="brainsmith-explore-stop", daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._sockets is None:
            return
        with self._lock:  # an abandon under way finishes (and ends the process) first
            self._closed = True
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)  # type: ignore[arg-type]
        signal.set_wakeup_fd(self._wakeup)
        self._sockets[1].close()  # the watchdog reads the end of the stream and returns

    def _handler(self, signum: int, frame: object) -> None:
        if self.signum is not None:
            return  # already stopping: the clean-up is not cut short (the watchdog decides)
        self.signum = signum
        raise BuildInterrupted(signum)

    def _watch(self) -> None:
        signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS)  # the main thread takes them
        assert self._sockets is not None
        reader = self._sockets[0]
        try:
            self._wait_for_signals(reader)
        finally:
            reader.close()

    def _wait_for_signals(self, reader: socket.socket) -> None:
        """Until the exploration stops by itself (the stream ends): after a first signal,
        give up at a second one or once the grace is over."""
        first: tuple[int, float] | None = None
        while True:
            ready, _, _ = select.select([reader], [], [], self._wait(first))
            if not ready:  # the grace is over
                return self._give_up(first[0] if first else signal.SIGINT)
            data = reader.recv(64)
            if not data:
                return  # the exploration stopped by itself
            for signum in _signals(data):
                if first is not None:
                    return self._give_up(first[0])
                first = (signum, time.monotonic())

    def _wait(self, first: tuple[int, float] | None) -> float | None:
        """How long to wait for the next signal: for ever before the ``first`` (signal,
        when), then what is left of the grace."""
        return None if first is None else max(0.0, first[1] + self.grace - time.monotonic())

    def _give_up(self, signum: int) -> None:
        with self._lock:
            if self._closed:
                return
            try:
                self.abandon(signum)
            finally:
                for stream in (sys.stdout, sys.stderr):
                    with contextlib.suppress(OSError, ValueError):
                        stream.flush()
                os._exit(128 + signum)


def _signals(data: bytes) -> list[int]:
    """The stopping signals among the bytes the signal handler wrote (one per signal)."""
    return [s for s in data if s in SIGNALS]
