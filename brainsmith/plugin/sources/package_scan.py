"""Walk a folder of Python sources, re-reading only files whose mtime or size changed."""

from __future__ import annotations

import ast
import os
from collections.abc import Callable

from brainsmith.plugin.sources.pyscan import module_name_for
from brainsmith.plugin.stamps import stamp_paths

Extract = Callable[[ast.Module, str, bool], dict]
SKIP_DIRS = {"__pycache__", "tests", "test"}
parsed_files = 0  # files read and parsed in this process (the rest were reused from the index)


def scan_folder(root: str, prefix: str, previous: dict | None, extract: Extract) -> dict:
    """``{relpath: [mtime_ns, size, data]}`` for every ``.py`` file below ``root``.

    ``prefix`` is the dotted package name of ``root`` ("" for a plain folder on sys.path).
    ``data`` is ``extract(tree, module, is_package)`` or ``{"error": message}``.
    """
    previous = previous or {}
    files: dict[str, list] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(
            d for d in dirnames if d not in SKIP_DIRS and not d.startswith(".") and "-" not in d
        )
        for filename in sorted(filenames):
            if not filename.endswith(".py"):
                continue
            full = os.path.join(dirpath, filename)
            rel = os.path.relpath(full, root)
            try:
                st = os.stat(full)
            except OSError:
                continue
            old = previous.get(rel)
            if old is not None and old[0] == st.st_mtime_ns and old[1] == st.st_size:
                files[rel] = old
                continue
            module = module_name_for(rel)
            module = f"{prefix}.{module}".strip(".") if prefix else module
            files[rel] = [st.st_mtime_ns, st.st_size, _extract(full, module, extract)]
    return files


def _extract(path: str, module: str, extract: Extract) -> dict:
    global parsed_files
    parsed_files += 1
    try:
        with open(path, "rb") as handle:
            tree = ast.parse(handle.read(), filename=path)
    except SyntaxError as exc:
        return {"error": f"{path}:{exc.lineno}: syntax error: {exc.msg}"}
    except (OSError, ValueError) as exc:
        return {"error": f"{path}: cannot read: {exc}"}
    return extract(tree, module, path.endswith("__init__.py"))


def folder_stamps(root: str, files: dict) -> list:
    """Stamps of ``root``'s directories and scanned files: notices new, edited, deleted files."""
    dirs = {root}
    for rel in files:
        parent = os.path.dirname(os.path.join(root, rel))
        while parent.startswith(root) and parent not in dirs:
            dirs.add(parent)
            parent = os.path.dirname(parent)
    return stamp_paths(sorted(dirs) + [os.path.join(root, rel) for rel in sorted(files)])
