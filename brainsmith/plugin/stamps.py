"""Cheap change detection: (path, mtime_ns, size) of files and folders."""

from __future__ import annotations

import os


def stamp_paths(paths: list[str]) -> list:
    """[path, mtime_ns, size] for each path; a missing path is [path, 0, -1]."""
    stamps = []
    for path in paths:
        try:
            st = os.stat(path)
            stamps.append([path, st.st_mtime_ns, st.st_size])
        except OSError:
            stamps.append([path, 0, -1])
    return stamps
