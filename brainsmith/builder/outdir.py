"""The output folder policy: a build never writes into a non-empty folder silently.

- missing or empty folder: used as is;
- non-empty folder: an error, unless ``force`` — then the old folder is moved aside to
  ``<folder>.old-<YYYYmmdd-HHMMSS>`` (never deleted) and a fresh one is created.
"""

from __future__ import annotations

import os
import time

from brainsmith.builder.errors import BuildError

DEFAULT_ROOT = "build-out"


def default_output_dir(name: str, root: str = DEFAULT_ROOT) -> str:
    """A fresh ``build-out/<name>-<timestamp>`` folder path (suffixed if taken)."""
    base = os.path.join(root, f"{name}-{time.strftime('%Y%m%d-%H%M%S')}")
    path, n = base, 1
    while os.path.exists(path):
        n += 1
        path = f"{base}-{n}"
    return path


def prepare_output_dir(path: str, force: bool = False) -> str | None:
    """Create ``path`` for a build; returns where an old folder was moved, if it was."""
    moved = None
    if os.path.exists(path) and not os.path.isdir(path):
        raise BuildError(
            "setup",
            f"output path {path} is a file, not a folder",
            "choose a folder with -o",
            exit_code=2,
        )
    if os.path.isdir(path) and os.listdir(path):
        if not force:
            raise BuildError(
                "setup",
                f"output folder {path} is not empty",
                "choose another folder with -o, or pass --force to move the old one aside "
                f"to {path.rstrip(os.sep)}.old-<timestamp>",
                exit_code=2,
            )
        moved = f"{path.rstrip(os.sep)}.old-{time.strftime('%Y%m%d-%H%M%S')}"
        n = 1
        while os.path.exists(moved):
            n += 1
            moved = f"{path.rstrip(os.sep)}.old-{time.strftime('%Y%m%d-%H%M%S')}-{n}"
        os.rename(path, moved)
    os.makedirs(path, exist_ok=True)
    return moved
