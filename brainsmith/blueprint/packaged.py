"""The blueprints brainsmith ships (``brainsmith/blueprints/*.yaml``, package data), which a
blueprint in any folder extends by name: ``extends: brainsmith:base``."""

from __future__ import annotations

import os

PREFIX = "brainsmith:"
FOLDER = os.path.join(os.path.dirname(os.path.dirname(__file__)), "blueprints")


def packaged() -> dict[str, str]:
    """Name -> absolute path of every packaged blueprint, sorted by name."""
    try:
        files = os.listdir(FOLDER)
    except OSError:
        return {}
    return {
        name[: -len(".yaml")]: os.path.join(FOLDER, name)
        for name in sorted(files)
        if name.endswith(".yaml")
    }


def is_packaged_reference(extends: str) -> bool:
    """Whether ``extends`` names a packaged blueprint (``brainsmith:NAME``), not a path."""
    return extends.startswith(PREFIX)


def packaged_path(extends: str) -> str | None:
    """The file of ``brainsmith:NAME``; None when brainsmith ships no such blueprint (a name is
    looked up, never joined to a path)."""
    return packaged().get(extends[len(PREFIX) :])


def references() -> list[str]:
    """``brainsmith:NAME`` for every packaged blueprint."""
    return [PREFIX + name for name in packaged()]
