"""Plugin code that tries to end the process is contained like any other failure.

``SystemExit`` (``sys.exit()``), ``KeyboardInterrupt`` and ``GeneratorExit`` raised by a
plugin's import, hook or availability check become ``PluginExit``, an ordinary exception
that the hub reports with the plugin's name. A real Ctrl-C still stops the command: while
plugin code runs in the main thread, SIGINT is routed through a handler that marks the
interrupt as real before handing it to the handler it replaced (Python's default, which
raises ``KeyboardInterrupt``, or the application's, such as a build's). With SIGINT ignored
or left to the system, no real Ctrl-C raises anything there. (Signals only reach the main
thread, so a ``KeyboardInterrupt`` in any other thread was raised by code.)
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


ENDINGS = (SystemExit, KeyboardInterrupt, GeneratorExit)


class PluginExit(Exception):
    """Plugin code raised SystemExit, KeyboardInterrupt or GeneratorExit; ``original`` is it."""

    def __init__(self, original: BaseException) -> None:
        self.original = original
        super().__init__(describe(original))


def describe(exc: BaseException) -> str:
    """``called sys.exit(3) at file:line`` / ``raised KeyboardInterrupt at file:line``."""
    if isinstance(exc, SystemExit):
        what = f"called sys.exit({exc.code!r})" if exc.code is not None else "called sys.exit()"
    else:
        what = f"raised {type(exc).__name__}"
    return f"{what} at {origin(exc)}; a plugin must not end the process"


@contextlib.contextmanager
def contained() -> Iterator[None]:
    """Run plugin code: its attempts to end the process raise PluginExit instead."""
    watch = _watch_sigint()
    try:
        yield
    except ENDINGS as exc:
        if isinstance(exc, KeyboardInterrupt) and watch.real_interrupt():
            raise
        raise PluginExit(exc) from exc
    finally:
        watch.close()


class _SigintWatch:
    """Marks a SIGINT that arrives while plugin code runs in the main thread as real."""

    _lock = threading.Lock()
    _depth = 0
    _received = False
    _previous: Any = None  # the handler before ours, as signal.getsignal() gave it

    def __init__(self, active: bool, main_thread: bool = True) -> None:
        self.active = active  # our handler is installed
        self.main_thread = main_thread

    def real_interrupt(self) -> bool:
        if not self.main_thread:
            return False  # signals are delivered to the main thread only
        if not self.active:
            return True  # SIGINT's handler is not Python's: assume the user pressed it
        return _SigintWatch._received

    def close(self) -> None:
        if not self.active:
            return
        import signal

        with _SigintWatch._lock:
            _SigintWatch._depth -= 1
            if _SigintWatch._depth == 0 and signal.getsignal(signal.SIGINT) is _on_sigint:
                signal.signal(signal.SIGINT, _SigintWatch._previous)


def _on_sigint(signum: int, frame: Any) -> None:
    _SigintWatch._received = True
    previous = _SigintWatch._previous
    if callable(previous):
        previous(signum, frame)
    else:
        raise KeyboardInterrupt


def _watch_sigint() -> _SigintWatch:
    if threading.current_thread() is not threading.main_thread():
        return _SigintWatch(False, main_thread=False)
    import signal

    with _SigintWatch._lock:
        if _SigintWatch._depth == 0:
            current = signal.getsignal(signal.SIGINT)
            if current is None:
                return _SigintWatch(False)  # set outside Python: assume the user pressed it
            _SigintWatch._previous = current
            _SigintWatch._received = False
            if callable(current):  # Python's default handler or the application's
                signal.signal(signal.SIGINT, _on_sigint)
        _SigintWatch._depth += 1
    return _SigintWatch(True)


def origin(exc: BaseException) -> str:
    """``file:line`` where ``exc`` was raised."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return f"{tb.tb_frame.f_code.co_filename}:{tb.tb_lineno}" if tb else "unknown location"
