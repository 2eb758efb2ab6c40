"""The output folder: never written into silently, never someone else's folder moved, and
every write either complete or absent.

- A missing or empty folder is used; a non-empty one is an error, unless ``force`` and
  brainsmith made it (it holds the marker file ``.brainsmith-build``): then it is moved
  aside to ``<folder>.old-<YYYYmmdd-HHMMSS>``, never deleted.
- Files are written to a temporary name and renamed into place, so a full disk leaves no
  cut-off file. A small reserve file is kept during the build and given up to write the
  report of a build that failed because the disk is full.
- Operating-system errors become ``BuildError`` (exit code 2) saying what went wrong and
  what to try.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import time
from dataclasses import dataclass

from brainsmith.planning.errors import BuildError, option

TYPE_CHECKING = False
if TYPE_CHECKING:
    pass

DEFAULT_ROOT = "build-out"
MARKER = ".brainsmith-build"
RESERVE = ".brainsmith-reserve"
RESERVE_BYTES = 8 * 1024
DISK_FULL = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG}


def os_problem(exc: OSError) -> tuple[str, str]:
    """(what went wrong, what to try) for an operating-system error, in plain words."""
    other = f"choose another output folder ({option('output')})"
    known = {
        errno.ENOSPC: ("the disk is full", "free space on that disk (df -h), or " + other),
        errno.EDQUOT: ("the disk quota is used up", "free space in your quota, or " + other),
        errno.EFBIG: (
            "a file would exceed the file-size limit (ulimit -f)",
            "raise the limit (ulimit -f unlimited), or " + other,
        ),
        errno.EROFS: ("the file system is read-only", other + " on a writable disk"),
        errno.EACCES: ("permission denied", other + " that you can write"),
        errno.EPERM: ("the operation is not permitted there", other + " that you can write"),
        errno.ENOTDIR: ("a part of the path is a file, not a folder", other),
        errno.ENOENT: ("a part of the path does not exist and cannot be created there", other),
        errno.EBUSY: ("the folder is in use (a mount point or the working directory)", other),
        errno.ELOOP: ("the path has a loop of symbolic links", other),
        errno.ENAMETOOLONG: ("the path is too long", other),
    }
    text = exc.strerror or type(exc).__name__
    reason, hint = known.get(exc.errno, (text, other)) if exc.errno is not None else (text, other)
    return (f"{reason} ({text})" if reason != text else reason), hint


def output_error(
    what: str, exc: OSError, step: str = "setup", report: str | None = None
) -> BuildError:
    """A BuildError (exit code 2) for an OSError while ``what`` (e.g. "writing x.onnx")."""
    reason, hint = os_problem(exc)
    return BuildError(step, f"{what}: {reason}", hint, exit_code=2, report=report)


@dataclass
class OutputFolder:
    """The folder a build writes: ``path`` (absolute), where an old folder was moved, and
    whether this build created it."""

    path: str
    moved_aside: str | None = None
    created: bool = True

    def discard(self) -> None:
        """Undo: remove what the build made; put a folder moved aside back."""
        with contextlib.suppress(OSError):
            if self.created:
                shutil.rmtree(self.path)
            else:
                for entry in os.scandir(self.path):
                    if entry.is_dir(follow_symlinks=False):
                        shutil.rmtree(entry.path)
                    else:
                        os.unlink(entry.path)
            if self.moved_aside:
                os.rename(self.moved_aside, self.path)

    def release_reserve(self) -> bool:
        """Give the reserved space back (to write a report on a full disk)."""
        try:
            os.unlink(os.path.join(self.path, RESERVE))
            return True
        except OSError:
            return False


def default_output_dir(name: str, root: str = DEFAULT_ROOT) -> str:
    """A fresh ``build-out/<name>-<timestamp>`` folder path (suffixed if taken)."""
    base = os.path.join(root, f"{name}-{time.strftime('%Y%m%d-%H%M%S')}")
    path, n = base, 1
    while os.path.lexists(path):
        n += 1
        path = f"{base}-{n}"
    return path


def prepare_output_dir(
    path: str, force: bool = False, keep: tuple[str | None, ...] = ()
) -> OutputFolder:
    """Create ``path`` for a build; ``keep`` are input files a move aside must not take."""
    full = os.path.abspath(path)
    try:
        return _prepare(full, force, keep)
    except OSError as exc:
        raise output_error(f"cannot use output folder {full}", exc) from exc


def _prepare(path: str, force: bool, keep: tuple[str | None, ...]) -> OutputFolder:
    if os.path.islink(path) and not os.path.exists(path):
        raise BuildError.setup(
            f"output folder {path} is a symbolic link to {os.readlink(path)}, which does not exist",
            f"remove the link, or choose another output folder ({option('output')})",
        )
    if os.path.exists(path) and not os.path.isdir(path):
        raise BuildError.setup(
            f"output path {path} is a file, not a folder",
            f"choose a folder ({option('output')})",
        )
    moved, created = None, not os.path.exists(path)
    if not created and os.listdir(path):
        _may_move_aside(path, force, keep)
        moved = _aside_name(path)
        os.rename(path, moved)
        created = True
    os.makedirs(path, exist_ok=True)
    folder = OutputFolder(path, moved, created)
    try:
        with open(os.path.join(path, MARKER), "w") as handle:
            handle.write("made by brainsmith build; --force may move this folder aside\n")
        with open(os.path.join(path, RESERVE), "wb") as handle:
            handle.write(b"\0" * RESERVE_BYTES)
    except OSError:
        folder.discard()
        raise
    return folder


def _may_move_aside(path: str, force: bool, keep: tuple[str | None, ...]) -> None:
    ours = os.path.isfile(os.path.join(path, MARKER)) and not os.path.islink(
        os.path.join(path, MARKER)
    )
    if not force:
        hint = f"choose another output folder ({option('output')})"
        if ours:
            hint += f", or pass {option('force')} to move the old one aside to {path}.old-<time>"
        raise BuildError.setup(f"output folder {path} is not empty", hint)
    if not ours:
        raise BuildError.setup(
            f"output folder {path} is not empty and was not made by brainsmith build (it has "
            f"no {MARKER} file); {option('force')} moves aside only brainsmith's own output "
            "folders",
            f"choose another output folder ({option('output')}), or move or empty {path} yourself",
        )
    inside = [p for p in keep if p and _within(os.path.abspath(p), path)]
    if inside:
        raise BuildError.setup(
            f"output folder {path} holds {inside[0]}, an input of this build; moving it "
            "aside would take the input with it",
            f"keep inputs outside the output folder, or choose another ({option('output')})",
        )


def _within(path: str, folder: str) -> bool:
    return os.path.commonpath([os.path.realpath(path), os.path.realpath(folder)]) == (
        os.path.realpath(folder)
    )


def _aside_name(path: str) -> str:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    moved, n = f"{path}.old-{stamp}", 1
    while os.path.lexists(moved):
        n += 1
        moved = f"{path}.old-{stamp}-{n}"
    return moved
