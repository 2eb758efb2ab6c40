"""Installed distributions as the index sees them: which exist on ``sys.path`` and which files
say that one was installed, reinstalled or edited (read at scan time, stamped on warm starts).
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

METADATA_DIRS = (".dist-info", ".egg-info")
# What pip rewrites on every (re)install, and what an editable install points at.
STAMPED_FILES = ("RECORD", "METADATA", "PKG-INFO", "entry_points.txt", "direct_url.json")


def metadata_dirs(folder: str) -> list[str]:
    """The ``*.dist-info`` / ``*.egg-info`` names in a ``sys.path`` folder, sorted."""
    try:
        names = os.listdir(folder)
    except (OSError, ValueError):
        return []
    return sorted(name for name in names if name.endswith(METADATA_DIRS))


def stamped_files(dist_path: str) -> list[str]:
    """A distribution's metadata folder and the files in it that every install rewrites."""
    return [dist_path, *(os.path.join(dist_path, name) for name in STAMPED_FILES)]


def is_editable(dist_path: str) -> bool:
    """True for ``pip install -e`` (PEP 610 ``direct_url.json``): its code lives elsewhere."""
    info = _direct_url(dist_path)
    return bool((info.get("dir_info") or {}).get("editable"))


def editable_project(dist_path: str) -> str | None:
    """The project folder an editable install was made from (``direct_url.json``), if any."""
    info = _direct_url(dist_path)
    url = info.get("url")
    if not (info.get("dir_info") or {}).get("editable") or not isinstance(url, str):
        return None
    from urllib.parse import unquote, urlsplit

    parts = urlsplit(url)
    return unquote(parts.path) if parts.scheme == "file" and parts.path else None


def _direct_url(dist_path: str) -> dict[str, Any]:
    """The distribution's PEP 610 ``direct_url.json`` ({} when absent or unreadable)."""
    try:
        with open(os.path.join(dist_path, "direct_url.json"), "rb") as handle:
            raw = handle.read(65536)
    except OSError:
        return {}
    import json

    try:
        info = json.loads(raw)
    except ValueError:
        return {}
    if not isinstance(info, dict) or not isinstance(info.get("dir_info") or {}, dict):
        return {}
    return info


def owner_of(package_root: str) -> str | None:
    """The metadata folder of the distribution that installed ``package_root``, if any."""
    package = os.path.basename(package_root)
    folder = os.path.dirname(package_root)
    names = metadata_dirs(folder)
    simple = package.lower().replace("-", "_")
    likely = [n for n in names if simple in n.lower().replace("-", "_")]
    for name in likely + [n for n in names if n not in likely]:
        if _provides(os.path.join(folder, name), package):
            return os.path.join(folder, name)
    return None


def _provides(dist_path: str, package: str) -> bool:
    try:
        with open(os.path.join(dist_path, "top_level.txt"), encoding="utf-8") as handle:
            return package in handle.read().split()
    except OSError:
        pass
    try:
        with open(os.path.join(dist_path, "RECORD"), encoding="utf-8") as handle:
            return any(line.startswith(f"{package}/") for line in handle)
    except (OSError, UnicodeDecodeError):
        return False
