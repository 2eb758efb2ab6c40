"""Walk a folder of Python sources, re-reading only files whose stamp changed."""

from __future__ import annotations

import ast
import os
from collections.abc import Callable

from brainsmith.plugin.discovery.sources.pyscan import module_name_for
from brainsmith.plugin.discovery.stamps import stamp_paths

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


Extract = Callable[[ast.Module, str, bool], "dict[str, Any]"]  # per-file facts
SKIP_DIRS = {"__pycache__", "tests", "test"}
parsed_files = 0  # files read and parsed in this process (the rest were reused from the index)


def scan_folder(
    root: str, prefix: str, previous: dict[str, Any] | None, extract: Extract
) -> tuple[dict[str, Any], list[str]]:
    """``({relpath: [mtime_ns, size, inode, ctime_ns, data]}, [walked folders])`` below ``root``.

    ``prefix`` is the dotted package name of ``root``. ``data`` is ``extract(tree, module,
    is_package)`` or ``{"error": message}``. The walked folders (relative, ``""`` for
    ``root``) include those without Python files, so a file added to any of them is noticed.
    """
    previous = previous if isinstance(previous, dict) else {}
    files: dict[str, list[Any]] = {}
    folders: list[str] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(
            d for d in dirnames if d not in SKIP_DIRS and not d.startswith(".") and "-" not in d
        )
        rel_dir = os.path.relpath(dirpath, root)
        folders.append("" if rel_dir == os.curdir else rel_dir)
        for filename in sorted(filenames):
            if not filename.endswith(".py"):
                continue
            full = os.path.join(dirpath, filename)
            rel = os.path.relpath(full, root)
            try:
                st = os.stat(full)
            except OSError:
                continue
            identity = [st.st_mtime_ns, st.st_size, st.st_ino, st.st_ctime_ns]
            old = previous.get(rel)
            if isinstance(old, list) and len(old) == 5 and old[:4] == identity:
                files[rel] = old
                continue
            module = module_name_for(rel)
            module = f"{prefix}.{module}".strip(".") if prefix else module
            files[rel] = [*identity, _extract(full, module, extract)]
    return files, folders


def _extract(path: str, module: str, extract: Extract) -> dict[str, Any]:
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


def folder_stamps(root: str, files: dict[str, Any], folders: list[str]) -> list[Any]:
    """Stamps of every walked folder and scanned file: notices new, edited and deleted files
    anywhere in the tree, also in folders that held no Python file yet."""
    paths = [os.path.join(root, rel) if rel else root for rel in folders]
    return stamp_paths(paths + [os.path.join(root, rel) for rel in sorted(files)])
