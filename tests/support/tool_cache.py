"""The test run's tool caches, kept between runs on one machine as ccache keeps compiles.

Verilator executables, Yosys' counts, nextpnr's placements and bitstreams are cached by
brainsmith, the test plugins' wheels by ``tests.support.packages`` and mypy's analysis by
mypy (``tests/test_typing.py``), under keys of their
content and the tools' versions, so a run may reuse what an earlier run made as safely as a
user's second build does. The folder is
``$XDG_CACHE_HOME/brainsmith-test-tools`` (``~/.cache/...``), or ``BRAINSMITH_TEST_TOOL_CACHE``;
it is trusted under the rules of brainsmith's own caches (a folder of this user's alone,
created 0700), else the run keeps its tools in its own folder, as it does with
``BRAINSMITH_TEST_TOOL_CACHE=run`` (a cold run). Past ``KEEP_BYTES`` the entries used least
recently are removed at the start of a run.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
from pathlib import Path

from brainsmith.plugin.settings.memo import default_cache_dir, dir_problem

VARIABLE = "BRAINSMITH_TEST_TOOL_CACHE"
TOOLS = ("rtlsim", "synthesis", "bitstream", "place_route", "wheels", "mypy")
KEEP_BYTES = 6 * 1024**3


def kept_root() -> Path | None:
    """The kept folder; None for a cold run, or when the kept one is not this user's alone
    (with a warning saying why): the run then keeps its tools in its own folder."""
    chosen = os.environ.get(VARIABLE, "")
    if chosen == "run":
        return None
    root = Path(chosen or Path(default_cache_dir()).parent / "brainsmith-test-tools")
    try:
        root.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        return _refused(f"{root} cannot be created ({exc.strerror})")
    problem = f"{root} is a link" if root.is_symlink() else dir_problem(str(root))
    return _refused(problem) if problem else root


def _refused(problem: str) -> None:
    print(f"the kept tool cache is not used: {problem}; this run compiles afresh", file=sys.stderr)


def _size(path: Path) -> int:
    total = 0
    for folder, _, names in os.walk(path):
        for name in names:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(folder, name)).st_size
    return total


def prune(root: Path, keep_bytes: int = KEEP_BYTES) -> list[Path]:
    """Remove the least recently changed entries of each tool's folder under ``root`` until
    the whole holds at most ``keep_bytes``; the removed entries."""
    entries = [
        entry for tool in TOOLS if (root / tool).is_dir() for entry in (root / tool).iterdir()
    ]
    sized = sorted(((e.lstat().st_mtime, _size(e), e) for e in entries), key=lambda t: t[0])
    total, removed = sum(size for _, size, _ in sized), []
    for _, size, entry in sized:
        if total <= keep_bytes:
            break
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)
        total -= size
        removed.append(entry)
    return removed
