"""Files written whole or not at all: to a temporary name, then renamed into place, so an
error or a full disk never leaves a cut-off file (``write_atomically``, ``write_bytes``,
``write_text``: the package's one atomic writer); a full disk named as such (``DiskFull``).
Files read bounded and only if regular (``read_regular``), each once within ``read_once``:
a command on a build folder checks and uses the same bytes."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import stat
from contextvars import ContextVar

from brainsmith.errors import BrainsmithError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import IO, Any

    import numpy as np
    from qonnx.core.modelwrapper import ModelWrapper

    # A JSON object of no fixed shape: a blueprint, a file FINN wrote (report.json's parts
    # are typed in brainsmith.report_schema)
    Json = dict[str, Any]
    from collections.abc import Iterator


MAX_JSON_BYTES = 64 * 2**20  # report.json of the largest network is a few MiB
MAX_SOURCE_BYTES = 256 * 2**20  # an RTL or parameter file; the largest layer's are a few MiB


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


# within ``read_once``: the folders it covers and the bytes read there so far, by path
_READ: ContextVar[tuple[tuple[str, ...], dict[str, bytes]] | None] = ContextVar(
    "brainsmith_read_once", default=None
)


@contextlib.contextmanager
def read_once(*folders: str) -> Iterator[None]:
    """Within it (this thread and context), ``read_regular`` opens each path below
    ``folders`` once and answers again with the bytes it read then: what a command checked
    of a build's generated design is what it uses, even if a file changes meanwhile. Only
    for folders the command does not write."""
    roots = tuple(os.path.join(os.path.abspath(folder), "") for folder in folders)
    token = _READ.set((roots, {}))
    try:
        yield
    finally:
        _READ.reset(token)


def read_regular(path: str, limit: int) -> bytes:
    """The bytes of the regular file ``path``, at most ``limit`` of them; DamagedFile for a
    FIFO, a device or a socket (refused without blocking on it) or a larger file. Within
    ``read_once``, a path below its folders read before gives the bytes read then."""
    scope, key = _READ.get(), os.path.abspath(path)
    if scope is None or not key.startswith(scope[0]):
        return _read_regular(path, limit)
    read = scope[1]
    if key not in read:
        read[key] = _read_regular(path, limit)
    elif len(read[key]) > limit:
        raise DamagedFile(f"{path} is larger than {limit:,} bytes")
    return read[key]


def _read_regular(path: str, limit: int) -> bytes:
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


NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
PRIVATE = 0o600  # a new file's mode: the owner's alone (cache entries, tempfile's default)
PUBLIC = 0o666  # what open() gives: anyone may read what the umask lets them


def write_atomically(
    path: str, write: Callable[[str], None], mode: int = PRIVATE, temporary: str | None = None
) -> None:
    """``write(temporary)``, then rename it to ``path``; on any error the temporary file is
    removed and the error raised. The temporary file beside ``path`` is made new (exclusive,
    never through a link, an unpredictable name unless ``temporary`` names it) with ``mode``
    (less the umask), so nothing planted there is written through."""
    _replace(path, lambda descriptor, name: write(name), mode, temporary)


def write_bytes(
    path: str,
    data: bytes,
    mode: int = PRIVATE,
    temporary: str | None = None,
    folder: int | None = None,
) -> None:
    """``data`` as the file ``path``, whole or not at all (as ``write_atomically``); with
    ``folder`` (a directory descriptor) ``path`` is a name in that folder, never a path
    that a link swapped in above it could redirect."""
    _replace(path, lambda descriptor, name: _write_all(descriptor, data), mode, temporary, folder)


def write_text(path: str, text: str, mode: int = PRIVATE) -> None:
    """``text`` (UTF-8) as the file ``path``, whole or not at all."""
    write_bytes(path, text.encode(), mode)


def _replace(
    path: str,
    fill: Callable[[int, str], None],
    mode: int,
    temporary: str | None = None,
    folder: int | None = None,
) -> None:
    """``fill(descriptor, temporary)`` on a new temporary file, then rename it to ``path``."""
    temporary, descriptor = _new_file(path, mode, temporary, folder)
    try:
        try:
            fill(descriptor, temporary)
        finally:
            os.close(descriptor)
        os.replace(temporary, path, src_dir_fd=folder, dst_dir_fd=folder)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary, dir_fd=folder)
        raise


def _new_file(path: str, mode: int, temporary: str | None, folder: int | None) -> tuple[str, int]:
    """(``temporary`` or a new name beside ``path``, the descriptor of the file made there)."""
    if temporary is not None:
        return temporary, os.open(temporary, NEW_FILE, mode, dir_fd=folder)
    parent, name = os.path.split(path)
    while True:
        candidate = os.path.join(parent, f".{name}.{os.urandom(6).hex()}.partial")
        with contextlib.suppress(FileExistsError):
            return candidate, os.open(candidate, NEW_FILE, mode, dir_fd=folder)


def _write_all(descriptor: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(descriptor, view) :]


def save_model(model: ModelWrapper, path: str) -> None:
    """``model.save(path)``, complete or not at all."""
    write_atomically(path, model.save)


# -- NumPy arrays a user or a folder gives ---------------------------------------------------
MAX_ARRAY_BYTES = 2**30  # the values of one .npy, or of all arrays of one .npz
MAX_ARCHIVE_MEMBERS = 64


def read_npy(path: str, limit: int = MAX_ARRAY_BYTES) -> np.ndarray:
    """The array in the ``.npy`` file ``path``: a regular file (a FIFO is refused without
    blocking) whose header declares real numbers (no objects, no structured or complex
    values) of at most ``limit`` bytes, all present in the file. DamagedFile otherwise,
    decided from the header before any value is read; never unpickles."""
    descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    with os.fdopen(descriptor, "rb") as handle:
        status = os.fstat(descriptor)
        if not stat.S_ISREG(status.st_mode):
            raise DamagedFile(f"{path} is not a regular file (a FIFO, a device or a socket)")
        return _read_array(handle, path, status.st_size, limit)


def read_npz(path: str, limit: int = MAX_ARRAY_BYTES) -> dict[str, np.ndarray]:
    """The arrays of the ``.npz`` archive ``path`` by name, each checked as ``read_npy``
    checks one, at most ``limit`` bytes of values in all and ``MAX_ARCHIVE_MEMBERS`` arrays:
    an archive that would decompress to more is refused from its headers."""
    import zipfile

    descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    with os.fdopen(descriptor, "rb") as handle:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            raise DamagedFile(f"{path} is not a regular file (a FIFO, a device or a socket)")
        try:
            with zipfile.ZipFile(handle) as archive:
                members = archive.infolist()
                if len(members) > MAX_ARCHIVE_MEMBERS:
                    raise DamagedFile(
                        f"{path} holds {len(members)} arrays, over the limit of {MAX_ARCHIVE_MEMBERS}"
                    )
                arrays, left = {}, limit
                for member in members:
                    name = member.filename.removesuffix(".npy")
                    if member.file_size > left + 4096:
                        raise DamagedFile(
                            f"{path} ({name}) unpacks to {member.file_size:,} bytes, over the limit of {limit:,}"
                        )
                    with archive.open(member) as stream:
                        array = _read_array(stream, f"{path} ({name})", member.file_size, left)
                    arrays[name] = array
                    left -= array.nbytes
        except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, OSError) as exc:
            raise DamagedFile(f"{path} is not a readable .npz archive: {exc}") from None
    return arrays


def _read_array(handle: IO[bytes], path: str, size: int, limit: int) -> np.ndarray:
    """The array ``handle`` holds (``size`` bytes in all), checked from its header first."""
    import numpy as np
    from numpy.lib import format as npy

    try:
        version = npy.read_magic(handle)
        if version == (1, 0):
            shape, fortran, dtype = npy.read_array_header_1_0(handle)
        elif version == (2, 0):
            shape, fortran, dtype = npy.read_array_header_2_0(handle)
        else:
            raise ValueError(f"format version {version} is not one numpy.save writes")
    except ValueError as exc:
        raise DamagedFile(f"{path} is not a NumPy .npy array: {exc}") from None
    if dtype.hasobject:
        raise DamagedFile(f"{path} holds Python objects, not numbers (never unpickled)")
    if dtype.fields is not None or dtype.kind not in "biuf":
        raise DamagedFile(f"{path} holds {dtype} values, not real numbers")
    if any(int(dim) < 0 for dim in shape):
        raise DamagedFile(f"{path} declares the shape {shape}, with a negative dimension")
    count = 1
    for dim in shape:
        count *= int(dim)
    declared = count * dtype.itemsize
    if declared > limit:
        raise DamagedFile(
            f"{path} declares {shape} {dtype} values ({declared:,} bytes), over the limit of {limit:,}"
        )
    held = size - handle.tell()  # the bytes after the header
    if declared > held:
        raise DamagedFile(
            f"{path} declares {declared:,} bytes of values but is {size:,} bytes long "
            f"({held:,} after its header)"
        )
    if declared < held:  # numpy.save writes the values and nothing after them
        raise DamagedFile(
            f"{path} holds {held:,} bytes after its header, which declares {declared:,}"
        )
    data = handle.read(declared)
    if len(data) != declared:
        raise DamagedFile(f"{path} ends before its {declared:,} bytes of values")
    array = np.frombuffer(data, dtype=dtype).copy()
    return array.reshape(shape, order="F" if fortran else "C")
