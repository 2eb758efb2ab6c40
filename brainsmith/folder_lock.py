"""One build or exploration per output folder: ``<folder>.lock`` beside it, held with
``flock`` while it runs (also across machines on a shared file system that supports it).

The lock file says what holds it (``build``, ``exploration``), its pid and host, for the
message a second one gets. It is removed on release; a process that dies leaves it unlocked,
and the next one takes it over.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import socket
import stat

from brainsmith.errors import HintedError


class FolderBusy(HintedError):
    """Another build or exploration holds the folder's lock; ``reason`` and ``hint`` say which and
    what to do."""


class FolderLock:
    """``acquire()`` holds ``<folder>.lock`` for ``user`` (what the message of another calls
    it: "build", "exploration") or raises FolderBusy at once; ``release()``."""

    def __init__(self, folder: str, user: str = "exploration") -> None:
        self.folder, self.user = os.path.abspath(folder), user
        self.path = self.folder.rstrip(os.sep) + ".lock"
        self.fd: int | None = None

    def acquire(self) -> None:
        with contextlib.suppress(FileExistsError):  # a file there: opening says ENOTDIR
            os.makedirs(os.path.dirname(self.path), exist_ok=True)
        while self.fd is None:
            fd = self._open()
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = _holder(fd)
                os.close(fd)
                raise self._busy(holder) from None
            if _same_file(fd, self.path):
                self.fd = fd
            else:  # its holder removed it while we opened it: lock the new one
                os.close(fd)
        os.ftruncate(self.fd, 0)
        holder = f"{self.user}, pid {os.getpid()} on {socket.gethostname()}"
        os.write(self.fd, f"{holder}\n".encode())

    def _open(self) -> int:
        """The lock file, opened without following a link and never blocking: a link, a
        second name of another file, a folder or a pipe planted there is refused untouched."""
        flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
        try:
            fd = os.open(self.path, flags, 0o644)
        except OSError:
            if os.path.islink(self.path) or os.path.isdir(self.path):
                raise self._planted("a link or a folder") from None
            raise
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
            os.close(fd)
            raise self._planted("not a file of its own" if stat.S_ISREG(st.st_mode) else
                                "not a regular file")  # fmt: skip
        return fd

    def _planted(self, what: str) -> FolderBusy:
        return FolderBusy(
            f"the lock file of output folder {self.folder}, {self.path}, is {what}; "
            "nothing was written through it",
            f"remove it (rm {self.path}) if nothing of yours made it, then run again",
        )

    def release(self) -> None:
        if self.fd is None:
            return
        with contextlib.suppress(OSError):
            os.unlink(self.path)  # while still holding it: a waiter re-checks the inode
        os.close(self.fd)
        self.fd = None

    def _busy(self, holder: str) -> FolderBusy:
        by = f" ({holder})" if holder else ""
        return FolderBusy(
            f"output folder {self.folder} is in use by another build or exploration{by}; "
            f"its lock is {self.path}",
            "wait for it to finish (or stop it), or choose another output folder (-o)",
        )


def _holder(fd: int) -> str:
    """What the lock file says about its holder (``build, pid N on HOST``), or ""."""
    try:
        text = os.pread(fd, 200, 0).decode("utf-8", "replace")
    except OSError:
        return ""
    line = text.splitlines()[0] if text else ""
    return line if line.isprintable() else ""


def _same_file(fd: int, path: str) -> bool:
    try:
        on_disk = os.lstat(path)
    except OSError:
        return False
    mine = os.fstat(fd)
    return (mine.st_dev, mine.st_ino) == (on_disk.st_dev, on_disk.st_ino)
