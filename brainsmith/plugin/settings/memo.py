"""Small persisted records in the user's private cache directory.

Format: a magic line, then ``marshal`` data made of plain containers and scalars
(marshal builds data, it never runs code; readers type-check what they use, and the
discovery index is further checked so it can only name modules of its own sources).
Files are written whole by ``brainsmith.files.write_bytes`` (a temp file moved into
place), so readers never see half a file; temp files of killed writers are removed by the next write. Reads
take regular files of this user only, at most 64 MiB, without following symbolic links or
blocking on FIFOs. A directory that is missing, not ours, or writable by others disables
persistence with one warning; it never breaks the hub, and ``remove_all`` never touches it.
"""

from __future__ import annotations

import errno
import marshal
import os
import stat

from brainsmith.plugin import log
from brainsmith.plugin.errors import CacheDirectoryError

MAGIC = b"BSMEMO1\n"
MAX_BYTES = 64 << 20  # a memo file is at most a few MB; anything larger is not ours
ORPHAN_AGE = 600  # seconds after which a temp file is an orphan even if its pid is alive
_STEM_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-")
_PLAIN = (str, int, float, bool, type(None))
_warned: set[str] = set()


def cache_dir() -> str:
    override = os.environ.get("BRAINSMITH_CACHE_DIR")
    if override:
        return os.path.abspath(override)
    return default_cache_dir()


def default_cache_dir() -> str:
    """``$XDG_CACHE_HOME/brainsmith`` (``~/.cache/brainsmith``)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "brainsmith")


def private_folder(name: str) -> str | None:
    """``<cache>/<name>``, created private (0700), or None when it or the cache directory is
    not a folder only this user can write."""
    root = os.path.join(cache_dir(), name)
    if usable_dir(cache_dir(), create=True) and usable_dir(root, create=True):
        return root
    return None


def tool_cache(name: str, variable: str, what: str) -> tuple[str | None, str]:
    """(the folder environment ``variable`` names, else ``<cache>/<name>``, created private
    (0700), or None when it is not this user's alone; what to tell the user then)."""
    chosen = os.environ.get(variable)
    if chosen:
        problem = (f"{variable}={chosen} is not a folder only this user can write; "
                   "point it at a folder of your own or unset it")  # fmt: skip
        return (chosen if usable_dir(chosen, create=True) else None), problem
    problem = (f"the {what} {os.path.join(cache_dir(), name)} is not a private folder of this "
               "user; set BRAINSMITH_CACHE_DIR to a folder of your own")  # fmt: skip
    return private_folder(name), problem


def usable_dir(path: str, create: bool, quiet: bool = False) -> bool:
    """True when ``path`` is a directory only this user can write (created 0700 if asked).

    Why not is a warning (once per directory), or a debug message when ``quiet``."""
    if create and not os.path.lexists(path):
        try:
            os.makedirs(path, mode=0o700, exist_ok=True)
        except OSError as exc:
            _warn_once(
                path,
                f"cache directory {path} cannot be created ({exc.strerror}); "
                "discovery results will not be persisted",
                quiet,
            )
            return False
    problem = dir_problem(path)
    if problem is not None:
        if os.path.lexists(path):  # a missing directory is not worth a warning
            _warn_once(path, f"{problem}; persistence disabled", quiet)
        return False
    return True


def dir_problem(path: str) -> str | None:
    """Why ``path`` is not a cache directory of this user's own; None when it is."""
    try:
        st = os.stat(path)
    except OSError as exc:
        return f"cache directory {path} cannot be used ({exc.strerror})"
    if not stat.S_ISDIR(st.st_mode):
        return f"cache path {path} is not a directory"
    if hasattr(os, "getuid") and st.st_uid != os.getuid():
        return (
            f"cache directory {path} belongs to another user; refusing to use it "
            "(set BRAINSMITH_CACHE_DIR to a folder of your own)"
        )
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return (
            f"cache directory {path} is writable by other users; refusing to use it "
            f"(run: chmod 700 {path})"
        )
    return None


def _warn_once(key: str, message: str, quiet: bool = False) -> None:
    if quiet:
        log.debug(message)
    elif key not in _warned:
        _warned.add(key)
        log.warning(message)


def path_for(name: str, directory: str | None = None) -> str:
    return os.path.join(directory or cache_dir(), f"{name}.bsm")


def read(
    name: str, stamp: object, directory: str | None = None, quiet: bool = False
) -> object | None:
    """The payload stored under ``name`` if its stamp equals ``stamp``; otherwise None."""
    directory = directory or cache_dir()
    if not usable_dir(directory, create=False, quiet=quiet):
        return None
    path = path_for(name, directory)
    raw = read_regular_file(path)
    if raw is None:
        return None
    record = decode(raw, path)
    if record is None or record[0] != stamp:
        return None
    value: object = record[1]
    return value


def read_regular_file(path: str, limit: int = MAX_BYTES) -> bytes | None:
    """The bytes of ``path`` if it is a regular file of this user's, at most ``limit`` bytes.

    A symbolic link, FIFO, device or socket is refused without blocking (``O_NOFOLLOW``,
    ``O_NONBLOCK``, then ``fstat``), as is anything larger than the limit: a damaged or
    planted cache file costs a warning and a rescan, never memory, time or a hang."""
    fd = _open_cache_file(path)
    if fd is None:
        return None
    try:
        problem = _file_problem(os.fstat(fd), limit)
        if problem:
            log.warning("cache file %s %s; ignoring it", path, problem)
            return None
        data = _read_upto(fd, limit + 1)
    except OSError as exc:
        log.warning("cache file %s is unreadable (%s); ignoring it", path, exc.strerror)
        return None
    finally:
        os.close(fd)
    if len(data) > limit:  # it grew while being read
        log.warning("cache file %s is larger than %d MiB; ignoring it", path, limit >> 20)
        return None
    return data


def _open_cache_file(path: str) -> int | None:
    """A descriptor of ``path`` opened without following a link or blocking on a FIFO; None
    (and a warning unless it is missing) when it cannot be opened."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        return os.open(path, flags | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            log.warning("cache file %s is a symbolic link; ignoring it", path)
        else:
            log.warning("cache file %s is unreadable (%s); ignoring it", path, exc.strerror)
        return None


def _read_upto(fd: int, size: int) -> bytes:
    """At most ``size`` bytes of ``fd``, read in chunks of 1 MiB."""
    chunks = []
    remaining = size
    while remaining > 0:
        chunk = os.read(fd, min(remaining, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def _file_problem(st: os.stat_result, limit: int) -> str | None:
    if not stat.S_ISREG(st.st_mode):
        return "is not a regular file"
    if hasattr(os, "getuid") and st.st_uid != os.getuid():
        return "belongs to another user"
    if st.st_size > limit:
        return f"is larger than {limit >> 20} MiB"
    return None


def decode(raw: bytes, path: str) -> tuple[object, object] | None:
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


def write(
    name: str,
    stamp: object,
    payload: object,
    directory: str | None = None,
    quiet: bool = False,
) -> bool:
    """Atomically store ``payload``; False (and nothing left behind) when that is impossible
    (a warning says why, or a debug message when ``quiet``).

    Temp files that writers killed before their rename left behind are removed here."""
    directory = directory or cache_dir()
    if not usable_dir(directory, create=True, quiet=quiet):
        return False
    path = path_for(name, directory)
    tmp = f"{path}.{os.getpid()}-{os.urandom(4).hex()}.tmp"
    try:
        _store(MAGIC + marshal.dumps([_plainify(stamp), _plainify(payload)]), tmp, path)
    except (OSError, ValueError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else str(exc)
        report = log.debug if quiet else log.warning
        report("could not write cache file %s (%s); continuing without it", path, reason)
        return False
    remove_orphans(directory)
    return True


def _store(data: bytes, tmp: str, path: str) -> None:
    """Write ``data`` to the new private file ``tmp``, then move it to ``path`` (raises
    OSError, or ValueError for data over the size limit)."""
    from brainsmith.files import PRIVATE, write_bytes

    if len(data) > MAX_BYTES:
        raise ValueError(f"{len(data) >> 20} MiB is over the {MAX_BYTES >> 20} MiB limit")
    write_bytes(path, data, PRIVATE, temporary=tmp)


def remove_orphans(directory: str) -> int:
    """Delete temp files whose writer died before renaming them; returns how many."""
    import time

    removed = 0
    now = time.time()
    for name in _listdir(directory):
        pid = temp_file_pid(name)
        if pid is None or pid == os.getpid():
            continue
        full = os.path.join(directory, name)
        if not _in_use(full, pid, now):
            removed += remove_if_ours(full)
    return removed


def _in_use(path: str, pid: int, now: float) -> bool:
    """The temp file ``path`` is gone, or young and its writer ``pid`` alive (another
    process is writing it right now)."""
    try:
        young = now - os.lstat(path).st_mtime < ORPHAN_AGE
    except OSError:
        return True
    return young and _alive(pid)


def remove_all(directory: str | None = None) -> int:
    """Delete the memo files brainsmith wrote in the cache directory; returns how many.

    Only a directory that passes the same checks as for writing is touched, and only files
    named like memo files whose first bytes are the memo header (or empty temp files):
    whatever else the folder holds stays. Raises CacheDirectoryError for a directory that
    is not the user's own."""
    directory = directory or cache_dir()
    if not os.path.lexists(directory):
        return 0
    problem = dir_problem(directory)
    if problem is not None:
        raise CacheDirectoryError(f"{problem}; nothing was removed", directory)
    return sum(
        remove_if_ours(os.path.join(directory, name))
        for name in _listdir(directory)
        if is_memo_name(name) or temp_file_pid(name) is not None
    )


def memo_files(directory: str) -> list[str]:
    """Names of the memo files (not temp files) brainsmith wrote in ``directory``."""
    return sorted(
        name
        for name in _listdir(directory)
        if is_memo_name(name) and _is_ours(os.path.join(directory, name), temp=False)
    )


def is_memo_name(name: str) -> bool:
    """``index-1a2b3c4d.bsm``, ``config.bsm``: the names ``write`` gives its files."""
    return name.endswith(".bsm") and _is_stem(name[:-4])


def temp_file_pid(name: str) -> int | None:
    """The writer's pid for a temp file name ``<memo name>.<pid>[-<hex>].tmp``; else None."""
    if not name.endswith(".tmp"):
        return None
    base, _, tail = name[:-4].rpartition(".")
    pid, _, token = tail.partition("-")
    if is_memo_name(base) and _is_pid(pid) and _is_token(token):
        return int(pid)
    return None


def _is_pid(text: str) -> bool:
    return text.isascii() and text.isdigit() and len(text) <= 10


def _is_token(text: str) -> bool:
    """The random part of a temp file's name: at most 32 lowercase hex digits."""
    return len(text) <= 32 and all(c in "0123456789abcdef" for c in text)


def _is_stem(stem: str) -> bool:
    return 0 < len(stem) <= 120 and stem[0].isalpha() and set(stem) <= _STEM_CHARS


def _is_ours(path: str, temp: bool) -> bool:
    """A regular file of this user that starts with the memo header (a temp file may be empty)."""
    raw = b""
    try:
        fd = os.open(
            path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
        )
    except OSError:
        return False
    try:
        st = os.fstat(fd)
        if _file_problem(st, 1 << 62) is None:
            raw = os.read(fd, len(MAGIC))
        else:
            return False
    except OSError:
        return False
    finally:
        os.close(fd)
    return raw == MAGIC or (temp and raw == b"" and st.st_size == 0)


def remove_if_ours(path: str) -> int:
    """Delete ``path`` if brainsmith wrote it (see ``remove_all``); 1 if removed, else 0."""
    if not _is_ours(path, temp=path.endswith(".tmp")):
        return 0
    try:
        os.unlink(path)
    except OSError:
        return 0
    return 1


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, OSError):
        return True
    return True


def _listdir(directory: str) -> list[str]:
    try:
        return os.listdir(directory)
    except OSError:
        return []


def _plainify(value: object) -> object:
    if isinstance(value, tuple | list):
        return [_plainify(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plainify(v) for k, v in value.items()}
    return value
