"""SIGINT and SIGTERM during a build: the build stops where it is and says so.

While ``handled()`` is active (main thread only), both signals raise ``BuildInterrupted``,
which the build turns into a report with ``status: interrupted``. ``blocked()`` holds
them back while a report is written (the signal mask for the main thread, and the handler
for a signal another thread took). Once the outcome is written (``settled()``), a
signal changes nothing any more: the handler only notes it (``late_signals()``).
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from collections.abc import Callable, Iterator

TYPE_CHECKING = False
if TYPE_CHECKING:
    from sys import UnraisableHookArgs

    UnraisableHook = Callable[[UnraisableHookArgs], object]

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class BuildInterrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM arrived during a build; ``signum`` says which."""

    def __init__(self, signum: int = signal.SIGINT) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name


class _State:
    settled = False  # the build's outcome is written
    pending: int | None = None  # a signal raised but not yet reported
    late: list[int] = []  # signals received after the outcome was written
    holding = 0  # depth of blocked() blocks
    held: list[int] = []  # signals a thread without the mask took during blocked()


def _handler(signum: int, frame: object) -> None:
    if _State.settled:
        _State.late.append(signum)
        return
    if _State.holding:  # the signal mask covers the main thread only: another thread
        _State.held.append(signum)  # (a chart worker, FINN's) may have taken it
        return
    _State.pending = signum
    raise BuildInterrupted(signum)


def check() -> None:
    """Raise BuildInterrupted again if a signal's exception was swallowed on its way up
    (some libraries' imports use a bare ``except:``)."""
    if _State.pending is not None and not _State.settled:
        raise BuildInterrupted(_State.pending)


@contextlib.contextmanager
def signal_first() -> Iterator[None]:
    """An exception raised in the block while a signal is pending is the signal's doing (a
    C extension's init turns it into ``ImportError``): raise BuildInterrupted instead."""
    try:
        yield
    except Exception:
        check()
        raise


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


@contextlib.contextmanager
def handled() -> Iterator[None]:
    """SIGINT/SIGTERM raise BuildInterrupted in the block (an ignored signal stays ignored);
    the old handlers come back after. The outermost ``handled()`` starts unsettled."""
    if not _main_thread():
        yield
        return
    previous = {s: signal.getsignal(s) for s in SIGNALS}
    if all(p is not _handler for p in previous.values()):
        _State.settled, _State.pending, _State.late = False, None, []
    for s in SIGNALS:
        if previous[s] is not signal.SIG_IGN:  # e.g. SIGINT of a background job stays ignored
            signal.signal(s, _handler)
    hook = sys.unraisablehook
    sys.unraisablehook = _quiet_interruption(hook)
    try:
        yield
    finally:
        sys.unraisablehook = hook
        for s, handler in previous.items():
            signal.signal(s, handler)


def _quiet_interruption(hook: UnraisableHook) -> UnraisableHook:
    """``hook`` for everything but a BuildInterrupted raised where it cannot propagate (a
    callback from C code while FINN loads): Python would print its traceback, yet the build
    reports the interruption once ``check()`` raises it again."""

    def unraisable(info: UnraisableHookArgs) -> object:
        if isinstance(info.exc_value, BuildInterrupted):
            return None
        return hook(info)

    return unraisable


def settled() -> None:
    """The build's outcome is written: later signals are only noted."""
    _State.settled = True


def late_signals() -> list[int]:
    """Signals that arrived after the outcome was written."""
    return list(_State.late)


def _take() -> list[int]:
    """Consume the SIGINT/SIGTERM signals held back so far."""
    taken, _State.held = _State.held, []
    for s in signal.sigpending() & set(SIGNALS):
        if signal.sigtimedwait([s], 0) is not None:
            taken.append(s)
    return taken


@contextlib.contextmanager
def blocked() -> Iterator[Callable[[], list[int]]]:
    """Hold SIGINT/SIGTERM back in the block; yields ``take()``, which returns (and
    consumes) those that arrived. Any still held at the end are consumed too: noted when
    the outcome is settled, else raised as BuildInterrupted."""
    if not _main_thread():
        yield list
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS)
    late: list[int] = []
    _State.holding += 1
    try:
        yield _take
    finally:
        late = _take()
        signal.pthread_sigmask(signal.SIG_SETMASK, old)
        _State.holding -= 1
        late, _State.held = late + _State.held, []  # (any taken while the mask came off)
    if late and _State.settled:
        _State.late.extend(late)
    elif late:
        _State.pending = late[0]
        raise BuildInterrupted(late[0])
