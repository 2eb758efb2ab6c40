"""The ``brainsmith`` command as a child process, its output captured as text."""

from __future__ import annotations

import socket
import subprocess
import sys


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
