"""Files written whole or not at all: to a temporary name, then renamed into place, so an
error or a full disk never leaves a cut-off file; a full disk named as such (``DiskFull``)."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import stat

from brainsmith.errors import BrainsmithError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from qonnx.core.modelwrapper import ModelWrapper

    # A JSON object of no fixed shape: a blueprint, a file FINN wrote (report.json's parts
    # are typed in brainsmith.report.schema)
    Json = dict[str, Any]


MAX_JSON_BYTES = 64 * 2**20  # report.json of the largest network is a few MiB


class DamagedFile(BrainsmithError, ValueError):
    """A JSON file that cannot be used; ``str()`` names the file and what is wrong."""


FULL_DISKS = (errno.ENOSPC, errno.EDQUOT)  # errnos of a disk (or quota) with no space left
FULL_DISK_BYTES = 2**20  # less free space than this counts as a full disk


class DiskFull(BrainsmithError, OSError):
    """The disk holding ``folder`` is full (``code``: ENOSPC, or EDQUOT for a quota), found
    by a write or by a tool that failed there; ``hint`` says what to do."""

    def __init__(self, folder: str, hint: str = "", code: int = errno.ENOSPC) -> None:
        super().__init__(code, os.strerror(code))
        self.folder = folder
        self.reason = f"the disk holding {folder} is full ({os.strerror(code)})"
        self.hint = hint or f"free space on that disk (df -h {folder})"

    def __str__(self) -> str:
        return self.reason


def disk_full(folder: str) -> bool:
    """Less than ``FULL_DISK_BYTES`` left where ``folder`` is (some writers report a full
    disk without an errno: "2048 requested and 992 written"; Verilator not at all)."""
    try:
        stats = os.statvfs(folder)
    except OSError:
        return False
    return stats.f_bavail * stats.f_frsize < FULL_DISK_BYTES


def read_regular(path: str, limit: int) -> bytes:
    """The bytes of the regular file ``path``, at most ``limit`` of them; DamagedFile for a
    FIFO, a device or a socket (refused without blocking on it) or a larger file."""
    descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    with os.fdopen(descriptor, "rb") as handle:
        status = os.fstat(descriptor)
        if not stat.S_ISREG(status.st_mode):
            raise DamagedFile(f"{path} is not a regular file (a FIFO, a device or a socket)")
        if status.st_size > limit:
            raise DamagedFile(f"{path} is larger than {limit:,} bytes")
        raw = handle.read(limit + 1)
    if len(raw) > limit:
        raise DamagedFile(f"{path} is larger than {limit:,} bytes")
    return raw


def read_json(path: str, limit: int = MAX_JSON_BYTES) -> Json:
    """The JSON object in ``path``: a regular file of at most ``limit`` bytes, UTF-8 JSON,
    an object (not a list or a number). DamagedFile otherwise, naming the file and why (not a
    regular file, too large, not JSON, nested too deeply); OSError when it cannot be opened.
    A FIFO or a device is refused without blocking on it."""
    raw = read_regular(path, limit)
    try:
        data = json.loads(raw)
    except RecursionError:
        raise DamagedFile(f"{path} is nested too deeply to be read") from None
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError
        raise DamagedFile(f"{path} is not JSON ({exc})") from None
    if not isinstance(data, dict):
        raise DamagedFile(f"{path} holds a JSON {type(data).__name__}, not an object")
    return data


def write_atomically(path: str, write: Callable[[str], None]) -> None:
    """``write(temporary_path)``, then rename it to ``path``; on error nothing is left."""
    folder, name = os.path.split(path)
    temporary = os.path.join(folder, f".{name}.partial")
    try:
        write(temporary)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def write_text(path: str, text: str) -> None:
    def write(target: str) -> None:
        with open(target, "w", encoding="utf-8") as handle:
            handle.write(text)

    write_atomically(path, write)


def save_model(model: ModelWrapper, path: str) -> None:
    """``model.save(path)``, complete or not at all."""
    write_atomically(path, model.save)
