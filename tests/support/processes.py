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
