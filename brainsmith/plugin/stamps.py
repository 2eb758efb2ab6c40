"""Cheap change detection by ``stat``: what a file or folder is, not just when it was written.

A stamp is ``[path, mtime_ns, size, inode, ctime_ns]``. The inode changes when a file is
replaced (pip, editors that save by rename); the ctime changes on every write and cannot be
set back by a program (``touch``/``os.utime`` restore the mtime only), so a same-size edit
with its mtime restored is still noticed. A missing path stamps as ``[path, 0, -1, 0, 0]``.
"""

from __future__ import annotations

import os
import sys

MISSING = (0, -1, 0, 0)


def stamp_of(path: str) -> list:
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return [path, *MISSING]
    return [path, st.st_mtime_ns, st.st_size, st.st_ino, st.st_ctime_ns]


def stamp_paths(paths: list[str]) -> list:
    """The stamp of each path, in order."""
    return [stamp_of(path) for path in paths]


def unchanged(stamps: list) -> bool:
    """True when every recorded stamp still matches its path (stops at the first change)."""
    stat = os.stat
    for recorded in stamps:
        try:
            path, mtime, size, inode, ctime = recorded
        except (TypeError, ValueError):
            return False
        try:
            st = stat(path)
        except (OSError, ValueError, TypeError):
            if size == -1:
                continue
            return False
        if (
            st.st_mtime_ns != mtime
            or st.st_size != size
            or st.st_ino != inode
            or st.st_ctime_ns != ctime
        ):
            return False
    return True


def search_path() -> list[str]:
    """``sys.path`` as absolute folders, in order (``""`` is the working directory)."""
    cwd = None
    entries: list[str] = []
    for entry in sys.path:
        if not isinstance(entry, str):
            continue
        if not entry or not os.path.isabs(entry):
            cwd = cwd or os.getcwd()
            entry = os.path.normpath(os.path.join(cwd, entry))
        if entry not in entries:
            entries.append(entry)
    return entries
