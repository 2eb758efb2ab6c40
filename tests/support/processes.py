"""The ``brainsmith`` command, in the test's own process (``invoke``) or as a child process
(``brainsmith``, ``run_brainsmith``), its output captured as text.

A test of what a command prints or refuses runs it in-process: click's runner with the
test's environment, working folder and a fresh plugin system, as ``brainsmith ARGS`` would
see them, without starting Python and importing FINN again. A test whose subject is the
process itself (a signal, an exit code after FINN, start-up, the environment) starts one.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Ran:
    """What a command did: as ``subprocess.CompletedProcess`` names it; it unpacks as
    ``run_brainsmith``'s (exit code, stdout, stderr)."""

    returncode: int
    stdout: str
    stderr: str

    def __iter__(self):
        return iter((self.returncode, self.stdout, self.stderr))


def invoke(
    *args: str | os.PathLike,
    env: dict[str, str | None] | None = None,
    cwd: str | os.PathLike | None = None,
    input: str | None = None,
    logs_on_stderr: bool = False,
) -> Ran:
    """``brainsmith ARGS`` run in this process: its exit code, stdout and stderr. ``env``
    is added to the environment (a None value removes a variable) and ``cwd`` entered for
    the run only; the plugin system is
    reset before and after, so the command discovers as a fresh process would. pytest's log
    capture takes warnings and worse only meanwhile; with ``logs_on_stderr`` log records reach
    stderr instead, as in a process of its own, whose root logger has no handler (Python's
    last resort writes warnings there)."""
    from click.testing import CliRunner

    from brainsmith.cli.app import cli
    from brainsmith.plugin.manager import reset_plugin_system

    runner = CliRunner()
    logs = _root_logger_bare() if logs_on_stderr else _root_handlers_at_warning()
    with _entered(cwd), _signal_handlers_kept(), logs:
        reset_plugin_system()
        try:
            words = [str(a) for a in args]
            result = runner.invoke(cli, words, env=env, input=input, prog_name="brainsmith",
                                   catch_exceptions=False)  # fmt: skip
        finally:
            reset_plugin_system()
    return Ran(result.exit_code, result.stdout, result.stderr)


@contextlib.contextmanager
def _root_logger_bare():
    """The root logger without handlers at WARNING for the block, as a fresh process has it."""
    import logging

    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    root.handlers.clear()
    root.setLevel(logging.WARNING)
    try:
        yield
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)


@contextlib.contextmanager
def _root_handlers_at_warning():
    """The root logger's handlers (pytest's log capture) take warnings and worse for the block:
    handling every debug record of a build's passes was half of an in-process build's time."""
    import logging

    handlers = logging.getLogger().handlers[:]
    levels = [handler.level for handler in handlers]
    for handler in handlers:
        handler.setLevel(max(handler.level, logging.WARNING))
    try:
        yield
    finally:
        for handler, level in zip(handlers, levels, strict=True):
            handler.setLevel(level)


@contextlib.contextmanager
def _signal_handlers_kept():
    """SIGINT's and SIGTERM's handlers as they were before, whatever the command installed
    and did not put back (a process would end with them; the test's process goes on)."""
    import signal

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    kept = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, handler in kept.items():
            if signal.getsignal(s) is not handler and handler is not None:
                signal.signal(s, handler)


@contextlib.contextmanager
def _entered(cwd: str | os.PathLike | None):
    if cwd is None:
        yield
        return
    before = os.getcwd()
    os.chdir(Path(cwd))
    try:
        yield
    finally:
        os.chdir(before)


def brainsmith(*args: str, **kwargs) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "brainsmith.cli", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **kwargs,
    )


def run_brainsmith(*args: str, timeout: float = 600, **kwargs) -> tuple[int, str, str]:
    """``brainsmith ARGS`` to the end: (exit code, stdout, stderr); killed after ``timeout``."""
    proc = brainsmith(*args, **kwargs)
    try:
        out, err = proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return proc.returncode, out, err


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def on_terminal(*args: str, env: dict[str, str], timeout: float = 120) -> tuple[int, str]:
    """``brainsmith ARGS`` with a pseudo-terminal as its stdout and stderr, as a user's shell
    runs it: (exit code, everything it wrote, escape sequences included)."""
    import os
    import pty
    import select
    import time

    primary, secondary = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "brainsmith.cli", *args],
        stdin=subprocess.DEVNULL, stdout=secondary, stderr=secondary, env=env,
    )  # fmt: skip
    os.close(secondary)
    written = bytearray()
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            if select.select([primary], [], [], 1)[0]:
                try:
                    chunk = os.read(primary, 65536)
                except OSError:  # the child closed its end
                    break
                if not chunk:
                    break
                written += chunk
            elif proc.poll() is not None:
                break
        code = proc.wait(timeout=max(1.0, deadline - time.monotonic()))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(primary)
    return code, written.decode(errors="replace")
