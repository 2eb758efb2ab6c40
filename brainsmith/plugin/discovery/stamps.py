"""Cheap change detection by ``stat``: what a file or folder is, not just when it was written,
and what the folders on ``sys.path`` hold.

A stamp is ``[path, mtime_ns, size, inode, ctime_ns]``. The inode changes when a file is
replaced (pip, editors that save by rename); the ctime changes on every write and cannot be
set back by a program (``touch``/``os.utime`` restore the mtime only), so a same-size edit
with its mtime restored is still noticed. A missing path stamps as ``[path, 0, -1, 0, 0]``.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import TypeGuard

    Stamp = list[str | int]  # [path, mtime_ns, size, inode, ctime_ns]
    Survey = list[list[object]]  # a folder's stamp, its distributions, its framework packages


MISSING = (0, -1, 0, 0)


def digest32(text: str) -> int:
    """A 32-bit digest of ``text``, for names and keys: its UTF-8 bytes read as one number,
    modulo the largest prime below 2**32. Any one changed byte changes it; computed in C with
    no module to load (this runs on every warm start, on texts of a few kB)."""
    return int.from_bytes(text.encode(), "little") % 4294967291


def stamp_of(path: str) -> Stamp:
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return [path, *MISSING]
    return [path, st.st_mtime_ns, st.st_size, st.st_ino, st.st_ctime_ns]


def stamp_paths(paths: list[str]) -> list[Stamp]:
    """The stamp of each path, in order."""
    return [stamp_of(path) for path in paths]


def unchanged(stamps: object) -> bool:
    """True when every recorded stamp still matches its path (stops at the first change);
    False for anything that is not a list of stamps (a record without one)."""
    if not isinstance(stamps, list):
        return False
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
        if _differs(st, mtime, size, inode, ctime):
            return False
    return True


def _differs(st: os.stat_result, mtime: object, size: object, inode: object, ctime: object) -> bool:
    """The file's stat is not the one recorded."""
    return (
        st.st_mtime_ns != mtime
        or st.st_size != size
        or st.st_ino != inode
        or st.st_ctime_ns != ctime
    )


STAT_RANGE = range(-(1 << 63), 1 << 64)  # what st_mtime_ns, st_size, st_ino, st_ctime_ns can be


def in_range(stamps: object) -> bool:
    """True when ``stamps`` is a list of stamps whose numbers ``os.stat`` could have given
    (read from a cache file or Redis: a huge or non-integer number is refused, never used)."""
    return isinstance(stamps, list) and all(_stamp_in_range(entry) for entry in stamps)


def _stamp_in_range(entry: object) -> bool:
    """``[path, mtime_ns, size, inode, ctime_ns]`` with numbers ``os.stat`` could give."""
    if not (isinstance(entry, list) and len(entry) >= 5 and isinstance(entry[0], str)):
        return False
    return all(type(number) is int and number in STAT_RANGE for number in entry[1:5])


def search_path() -> list[str]:
    """``sys.path`` as absolute folders, in order (``""`` is the working directory)."""
    cwd = None
    entries: list[str] = []
    path: list[object] = list(sys.path)  # anything may be appended to sys.path
    for entry in path:
        if not isinstance(entry, str):
            continue
        if not entry or not os.path.isabs(entry):
            try:
                cwd = cwd or os.getcwd()
            except OSError:  # the working directory was deleted: imports skip it too
                continue
            entry = os.path.normpath(os.path.join(cwd, entry))
        if entry not in entries:
            entries.append(entry)
    return entries


# -- the environment: what each sys.path folder holds that can change discovery -------------
# The distributions installed in it (pip replaces a distribution's whole ``.dist-info`` folder
# on every install, so its inode and mtime identify the install) and the QONNX/FINN packages
# in it (which copy ``import qonnx`` finds). A folder whose stamp is unchanged is not listed
# again, so a warm start costs one ``stat`` per ``sys.path`` entry.

METADATA_DIRS = (".dist-info", ".egg-info")
FRAMEWORK_PACKAGES = ("finn", "qonnx")


def survey(previous: object = None) -> Survey:
    """``[[folder, mtime_ns, size, inode, ctime_ns, distributions, framework packages], ...]``
    for ``sys.path`` in order; ``distributions`` is ``[[name, inode, mtime_ns], ...]``."""
    known = {}
    if isinstance(previous, list):
        known = {e[0]: e for e in previous if isinstance(e, list) and len(e) == 7}
    found = []
    for folder in search_path():
        stamp = stamp_of(folder)
        old = known.get(folder)
        if old is not None and old[:5] == stamp:
            found.append(old)
            continue
        found.append([*stamp, *_contents(folder)])
    return found


def _contents(folder: str) -> tuple[list[list[str | int]], list[str]]:
    try:
        names = os.listdir(folder)
    except (OSError, ValueError):
        return [], []
    dists: list[list[str | int]] = []
    for name in sorted(n for n in names if n.endswith(METADATA_DIRS)):
        try:
            st = os.stat(os.path.join(folder, name))
        except OSError:
            continue
        dists.append([name, st.st_ino, st.st_mtime_ns])
    present = set(names)
    packages = [p for p in FRAMEWORK_PACKAGES if p in present or f"{p}.py" in present]
    return dists, packages


def distributions(environment: object) -> list[object]:
    """The distributions of an environment, folder by folder: what entry points depend on."""
    if not _valid(environment):
        return [None]
    return [[e[0], e[5]] for e in environment if e[5]]


def framework_packages(environment: object) -> list[object]:
    """Where QONNX and FINN packages lie on ``sys.path``: what the adapters depend on."""
    if not _valid(environment):
        return [None]
    return [[e[0], e[6]] for e in environment if e[6]]


def _valid(environment: object) -> TypeGuard[Survey]:
    return isinstance(environment, list) and all(
        isinstance(e, list) and len(e) == 7 for e in environment
    )
