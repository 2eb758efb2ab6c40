"""Small persisted records in the user's private cache directory.

Format: a magic line, then ``marshal`` data made of plain containers and scalars
(marshal builds data, it never runs code; readers type-check what they use, and the
discovery index is further checked so it can only name modules of its own sources).
Files are written to a temp file and moved into place with ``os.replace``, so readers
never see half a file. A directory that is missing, not ours, or writable by others
disables persistence with one warning; it never breaks the hub.
"""

from __future__ import annotations

import contextlib
import marshal
import os
import stat

from brainsmith.plugin import log

MAGIC = b"BSMEMO1\n"
_PLAIN = (str, int, float, bool, type(None))
_warned: set[str] = set()


def cache_dir() -> str:
    override = os.environ.get("BRAINSMITH_CACHE_DIR")
    if override:
        return os.path.abspath(override)
    from brainsmith.plugin.config import default_cache_dir

    return default_cache_dir()


def usable_dir(path: str, create: bool) -> bool:
    """True when ``path`` is a directory only this user can write (created 0700 if asked)."""
    try:
        st = os.stat(path)
    except OSError:
        if not create:
            return False
        try:
            os.makedirs(path, mode=0o700, exist_ok=True)
            st = os.stat(path)
        except OSError as exc:
            _warn_once(
                path,
                f"cache directory {path} cannot be created ({exc.strerror}); "
                "discovery results will not be persisted",
            )
            return False
    if not stat.S_ISDIR(st.st_mode):
        _warn_once(path, f"cache path {path} is not a directory; persistence disabled")
        return False
    if hasattr(os, "getuid") and st.st_uid != os.getuid():
        _warn_once(
            path,
            f"cache directory {path} belongs to another user; refusing to use it "
            "(set BRAINSMITH_CACHE_DIR to a folder of your own)",
        )
        return False
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        _warn_once(
            path,
            f"cache directory {path} is writable by other users; refusing to use it "
            f"(run: chmod 700 {path})",
        )
        return False
    return True


def _warn_once(key: str, message: str) -> None:
    if key not in _warned:
        _warned.add(key)
        log.warning(message)


def path_for(name: str, directory: str | None = None) -> str:
    return os.path.join(directory or cache_dir(), f"{name}.bsm")


def read(name: str, stamp: object, directory: str | None = None) -> object | None:
    """The payload stored under ``name`` if its stamp equals ``stamp``; otherwise None."""
    directory = directory or cache_dir()
    if not usable_dir(directory, create=False):
        return None
    path = path_for(name, directory)
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
    except FileNotFoundError:
        return None
    except OSError as exc:
        log.warning("cache file %s is unreadable (%s); ignoring it", path, exc.strerror)
        return None
    record = decode(raw, path)
    if record is None or record[0] != stamp:
        return None
    return record[1]


def decode(raw: bytes, path: str) -> tuple | None:
    """Decode a memo file; a foreign, truncated or corrupt file yields None and a warning."""
    if not raw.startswith(MAGIC):
        log.warning("cache file %s has an unknown format; discarding it", path)
        return None
    try:
        record = marshal.loads(raw[len(MAGIC) :])
    except (EOFError, ValueError, TypeError):
        log.warning("cache file %s is corrupt or truncated; discarding it", path)
        return None
    if not (isinstance(record, list) and len(record) == 2 and is_plain(record[0])):
        log.warning("cache file %s holds unexpected data; discarding it", path)
        return None
    return record[0], record[1]


def is_plain(value: object, depth: int = 0) -> bool:
    """Only lists, dicts with string keys, and scalars (no code objects, sets or bytes)."""
    if depth > 32:
        return False
    if isinstance(value, _PLAIN):
        return True
    if isinstance(value, list):
        return all(is_plain(item, depth + 1) for item in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and is_plain(v, depth + 1) for k, v in value.items())
    return False


def write(name: str, stamp: object, payload: object, directory: str | None = None) -> bool:
    """Atomically store ``payload``; False (and nothing left behind) when that is impossible."""
    directory = directory or cache_dir()
    if not usable_dir(directory, create=True):
        return False
    path = path_for(name, directory)
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        data = MAGIC + marshal.dumps([_plainify(stamp), _plainify(payload)])
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
        finally:
            os.close(fd)
        os.replace(tmp, path)
        return True
    except (OSError, ValueError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else str(exc)
        log.warning("could not write cache file %s (%s); continuing without it", path, reason)
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        return False


def _plainify(value: object) -> object:
    if isinstance(value, tuple):
        return [_plainify(v) for v in value]
    if isinstance(value, list):
        return [_plainify(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plainify(v) for k, v in value.items()}
    return value


def remove_all(directory: str | None = None) -> int:
    """Delete every memo file in the cache directory; returns how many were removed."""
    directory = directory or cache_dir()
    removed = 0
    try:
        names = os.listdir(directory)
    except OSError:
        return 0
    for name in names:
        if name.endswith((".bsm", ".tmp")):
            try:
                os.unlink(os.path.join(directory, name))
                removed += 1
            except OSError:
                pass
    return removed
