"""A build folder opened once and written relative to its descriptor, so a folder below it
swapped for a link between a check and a write changes nothing outside it.

``OpenedFolder(path)`` opens the folder itself (once); each folder below it is opened without
following a link (``O_NOFOLLOW``), files are made new under an unpredictable name and renamed
into place, and trees are removed without leaving the folder (``shutil.rmtree`` with
``dir_fd``). ``staged(folder, "bitstream/run")`` gives tools a private folder (0700, made by
``tempfile.mkdtemp``) that nobody else can change while they run, and publishes it through
the opened folder when the block ends, however it ends.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import shutil
import stat
import tempfile

from brainsmith.errors import HintedError
from brainsmith.files import FULL_DISKS, DiskFull, disk_full, write_bytes

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator

FOLDER_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
NEW_FILE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
COPY_CHUNK = 2**20


class FolderChanged(HintedError):
    """A folder below the opened one is a link or a file now: it changed while a command
    worked in it (nothing was written through it)."""


class OpenedFolder:
    """``path`` opened once; ``write``, ``remove`` and ``publish`` work below it through
    descriptors, never through a link."""

    def __init__(self, path: str) -> None:
        self.path = path  # a link the user names as the folder is followed, once
        self.fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> OpenedFolder:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def shown(self, relative: str) -> str:
        """``relative``'s path as a user reads it."""
        return os.path.join(self.path, relative)

    @contextlib.contextmanager
    def parent(self, relative: str) -> Iterator[tuple[int, str]]:
        """(descriptor of the folder holding ``relative``, its last name): each folder on the
        way opened without following a link, made (0777 less the umask) when missing;
        FolderChanged for a link or a file on the way."""
        *folders, name = _parts(relative)
        fd = os.dup(self.fd)
        try:
            for depth, folder in enumerate(folders):
                with contextlib.suppress(FileExistsError):
                    os.mkdir(folder, dir_fd=fd)
                try:
                    below = os.open(folder, FOLDER_FLAGS, dir_fd=fd)
                except (NotADirectoryError, OSError) as exc:
                    if not isinstance(exc, NotADirectoryError) and exc.errno != errno.ELOOP:
                        raise
                    shown = self.shown(os.path.join(*folders[: depth + 1]))
                    raise FolderChanged(
                        f"{shown} is not a folder now (a link or a file): it changed while "
                        "brainsmith worked in it, and nothing was written through it",
                        f"check who else writes to {self.path}, then run the command again",
                    ) from None
                os.close(fd)
                fd = below
            yield fd, name
        finally:
            os.close(fd)

    def write(self, relative: str, content: bytes) -> None:
        """``content`` as the file ``relative``: written to a new file beside it, then renamed
        over it (a link there is replaced, not followed)."""
        with self.parent(relative) as (fd, name):
            _write_at(fd, name, content)

    def remove(self, relative: str) -> None:
        """The file, link or tree ``relative`` removed (nothing when it is missing); a link
        is removed itself, never what it names."""
        with self.parent(relative) as (fd, name):
            _remove(fd, name)

    def publish(self, source: str, relative: str, *, replace: bool = True) -> None:
        """A copy of the private folder ``source`` as ``relative``, replacing what is there:
        copied under a new name beside it, then renamed into place. With ``replace`` False
        and a folder at ``relative``, only the files of ``source`` are written into it, each
        replacing its namesake, the rest kept."""
        with self.parent(relative) as (fd, name):
            if not replace and _is_folder(fd, name):
                below = os.open(name, FOLDER_FLAGS, dir_fd=fd)
                try:
                    for entry in os.scandir(source):
                        if entry.is_file(follow_symlinks=False):
                            with open(entry.path, "rb") as handle:
                                _write_at(below, entry.name, handle.read())
                finally:
                    os.close(below)
                return
            temporary = _new_name(fd, name)
            try:
                os.mkdir(temporary, 0o755, dir_fd=fd)
                copy = os.open(temporary, FOLDER_FLAGS, dir_fd=fd)
                try:
                    _copy_tree(source, copy)
                finally:
                    os.close(copy)
                _remove(fd, name)
                os.rename(temporary, name, src_dir_fd=fd, dst_dir_fd=fd)
            except BaseException:
                _remove(fd, temporary)
                raise


class Staging:
    """A private folder ``workdir`` for tools, published as ``folder``/``relative``:
    replacing it, or with ``keep`` set (no tool ran: a cached result) added to it, so the
    logs of the run that made the result stay."""

    def __init__(self, folder: OpenedFolder, relative: str) -> None:
        self.folder, self.relative = folder, relative
        self.workdir = tempfile.mkdtemp(prefix="brainsmith-stage-")
        self.keep = False

    def publish(self) -> None:
        self.folder.publish(self.workdir, self.relative, replace=not self.keep)

    def shown(self, path: str) -> str:
        """``path`` (in ``workdir``) as it is once published."""
        inside = os.path.relpath(path, self.workdir)
        if inside == os.curdir:
            return self.folder.shown(self.relative)
        return self.folder.shown(os.path.join(self.relative, inside))

    def take(self, path: str, relative: str) -> str:
        """The file ``path`` (in ``workdir``) moved to ``folder``/``relative``; its new path."""
        with open(path, "rb") as handle:
            content = handle.read()
        try:
            self.folder.write(relative, content)
        except OSError as exc:
            if exc.errno in FULL_DISKS:
                where = self.folder.shown(os.path.dirname(relative))
                raise DiskFull(where, code=exc.errno) from exc
            raise
        os.unlink(path)
        return self.folder.shown(relative)

    def rename_in(self, error: BaseException) -> None:
        """``error``'s message and hint naming the published folder instead of ``workdir``."""
        published = self.folder.shown(self.relative)
        error.args = tuple(
            arg.replace(self.workdir, published) if isinstance(arg, str) else arg
            for arg in error.args
        )
        for attribute in ("reason", "hint"):
            value = getattr(error, attribute, None)
            if isinstance(value, str):
                setattr(error, attribute, value.replace(self.workdir, published))


@contextlib.contextmanager
def staged(folder: str, relative: str) -> Iterator[Staging]:
    """A ``Staging`` whose ``workdir`` is published as ``folder``/``relative`` when the
    block ends (an error leaving it names the published folder; one raised while ``workdir``
    is still empty, a refusal before any tool ran, publishes nothing, so ``folder`` is left
    as it was found); ``folder`` is opened first.
    DiskFull naming the disk that filled: the private folder's (a tool failed or a write
    there ran out of space) or the build folder's (publishing)."""
    with OpenedFolder(folder) as opened:
        staging = Staging(opened, relative)
        try:
            yield staging
        except BaseException as error:
            if not isinstance(error, DiskFull) and _filled(error, staging.workdir):
                raise _private_disk_full() from error
            staging.rename_in(error)
            if os.listdir(staging.workdir):  # refused before anything ran: nothing to show
                with contextlib.suppress(OSError, FolderChanged):  # the logs of a failed run
                    staging.publish()
            raise
        else:
            try:
                staging.publish()
            except OSError as exc:
                if exc.errno in FULL_DISKS:
                    where = opened.shown(os.path.dirname(relative))
                    raise DiskFull(where, code=exc.errno) from exc
                raise
        finally:
            shutil.rmtree(staging.workdir, ignore_errors=True)


def _filled(error: BaseException, workdir: str) -> bool:
    """Whether ``error`` (a write or a tool that failed) came from the disk of ``workdir``
    running out of space."""
    if not isinstance(error, Exception):
        return False
    if isinstance(error, OSError) and error.errno in FULL_DISKS:
        return True
    return disk_full(workdir)


def _private_disk_full() -> DiskFull:
    where = tempfile.gettempdir()
    return DiskFull(
        where,
        f"free space on that disk (df -h {where}), or set TMPDIR to a folder on a disk with "
        "room: the tools work there before their run folder is published",
    )


def _parts(relative: str) -> list[str]:
    parts = [part for part in relative.split("/") if part not in ("", os.curdir)]
    if not parts or os.pardir in parts or os.path.isabs(relative):
        raise ValueError(f"{relative!r} is not a path below a folder")
    return parts


def _new_name(fd: int, name: str) -> str:
    """A name beside ``name`` in the folder ``fd`` that nothing has."""
    while True:
        candidate = f".{name}.{secrets.token_hex(6)}.partial"
        try:
            os.lstat(candidate, dir_fd=fd)
        except FileNotFoundError:
            return candidate


def _write_at(fd: int, name: str, content: bytes) -> None:
    """``content`` as the file ``name`` in the folder ``fd``, through a new file renamed over it."""
    write_bytes(name, content, 0o644, folder=fd)


def _is_folder(fd: int, name: str) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(name, dir_fd=fd).st_mode)
    except FileNotFoundError:
        return False


def _remove(fd: int, name: str) -> None:
    try:
        status = os.lstat(name, dir_fd=fd)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(status.st_mode):
        shutil.rmtree(name, dir_fd=fd)
    else:
        os.unlink(name, dir_fd=fd)


def _copy_tree(source: str, fd: int) -> None:
    """The files and folders of the private folder ``source`` copied into the folder ``fd``
    (links in ``source`` are left out)."""
    for entry in os.scandir(source):
        if entry.is_dir(follow_symlinks=False):
            os.mkdir(entry.name, 0o755, dir_fd=fd)
            below = os.open(entry.name, FOLDER_FLAGS, dir_fd=fd)
            try:
                _copy_tree(entry.path, below)
            finally:
                os.close(below)
        elif entry.is_file(follow_symlinks=False):
            with (
                open(entry.path, "rb") as source_file,
                os.fdopen(os.open(entry.name, NEW_FILE_FLAGS, 0o644, dir_fd=fd), "wb") as out,
            ):
                shutil.copyfileobj(source_file, out, COPY_CHUNK)
