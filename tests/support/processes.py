"""The ``brainsmith`` command as a child process, its output captured as text."""

from __future__ import annotations

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
