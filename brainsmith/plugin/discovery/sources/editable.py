"""The packages of editable installs (``pip install -e``, PEP 660), found without importing.

setuptools' default editable mode installs an import hook: a ``.pth`` file imports the module
``__editable___<dist>_<version>_finder.py`` beside it (listed in the distribution's
``RECORD``), whose ``MAPPING`` dict literal names each top-level package's source folder.
That literal is read with ``ast``; the module is never imported or run here. The hook is
appended to ``sys.meta_path``, after the ``sys.path`` search, so a package found on
``sys.path`` wins, as for imports. setuptools' other modes need nothing of this: ``compat``
puts the project folder on ``sys.path``, ``strict`` a folder of links to the sources.
"""

from __future__ import annotations

import ast
import csv
import os
import re
import shlex
import sys

from brainsmith.plugin.discovery.sources.distributions import editable_project

FINDER = re.compile(r"__editable___\w+_finder\.py")


def locate(name: str, dist_path: str) -> tuple[str | None, str, list[str]]:
    """``(package folder, problem, hook files)`` of the top-level package ``name`` by the
    editable import hooks of the distribution whose metadata folder is ``dist_path``:
    ``(None, "", [])`` when none of them maps ``name``; a problem names what to do."""
    for finder in finder_files(dist_path):
        folder = mapping(finder).get(name)
        if folder is None:
            continue
        if not os.path.isfile(os.path.join(folder, "__init__.py")):
            reason = (
                f"its editable install maps {name} to {folder}, which is no package (no "
                f"__init__.py there; moved or deleted?): {reinstall(dist_path)}"
            )
            return None, reason, [finder]
        if not active(finder):
            reason = (
                f"{name} is installed in editable mode, but its import hook {finder} is not "
                f"active in this Python ({sys.executable}): its .pth file is read only in a "
                f"site-packages folder, not through PYTHONPATH or --target; {reinstall(dist_path)}"
            )
            return None, reason, [finder]
        return folder, "", [finder]
    return None, "", []


def finder_files(dist_path: str) -> list[str]:
    """The setuptools editable finder modules the distribution's ``RECORD`` lists."""
    site = os.path.dirname(dist_path)
    try:
        with open(os.path.join(dist_path, "RECORD"), encoding="utf-8", newline="") as handle:
            rows = list(csv.reader(handle))
    except (OSError, UnicodeDecodeError, csv.Error):
        return []
    names = [row[0] for row in rows if row and FINDER.fullmatch(row[0])]
    return [os.path.join(site, name) for name in names]


def mapping(finder: str) -> dict[str, str]:
    """The finder module's ``MAPPING`` literal, ``{top-level name: folder}`` ({} if unreadable)."""
    try:
        with open(finder, "rb") as handle:
            tree = ast.parse(handle.read(), filename=finder)
    except (OSError, SyntaxError, ValueError):
        return {}
    for node in tree.body:
        value = _assigned(node, "MAPPING")
        table = None if value is None else _literal_mapping(value)
        if table is not None:
            return table
    return {}


def _assigned(node: ast.stmt, name: str) -> ast.expr | None:
    """The value the statement ``node`` assigns to ``name``, if it does."""
    if isinstance(node, ast.Assign):
        targets, value = node.targets, node.value
    elif isinstance(node, ast.AnnAssign) and node.value is not None:
        targets, value = [node.target], node.value
    else:
        return None
    named = any(isinstance(t, ast.Name) and t.id == name for t in targets)
    return value if named else None


def _literal_mapping(value: ast.expr) -> dict[str, str] | None:
    """The ``{str: str}`` items of a dict literal; {} for no literal, None for another one."""
    try:
        found = ast.literal_eval(value)
    except ValueError:
        return {}
    if not isinstance(found, dict):
        return None
    return {k: v for k, v in found.items() if isinstance(k, str) and isinstance(v, str)}


def active(finder: str) -> bool:
    """True when the finder module's hook is on ``sys.meta_path`` (its ``.pth`` ran)."""
    module = os.path.basename(finder)[: -len(".py")]
    return any(getattr(hook, "__module__", None) == module for hook in sys.meta_path)


def reinstall(dist_path: str) -> str:
    """The advice for a distribution installed in editable mode that cannot be read."""
    project = shlex.quote(editable_project(dist_path) or "<project folder>")
    python = shlex.quote(sys.executable)
    return (
        f"install it into this environment with `{python} -m pip install -e {project}` (or "
        "add `--config-settings editable_mode=compat`: the project folder on sys.path)"
    )
