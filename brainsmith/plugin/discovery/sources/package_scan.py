"""Walk a folder of Python sources, parsing only files whose content changed."""

from __future__ import annotations

import ast
import hashlib
import os
from collections.abc import Callable, Iterator

from brainsmith.files import read_regular
from brainsmith.plugin.discovery.sources.pyscan import module_name_for
from brainsmith.plugin.discovery.stamps import stamp_of

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


Extract = Callable[[ast.Module, str, bool], "dict[str, Any]"]  # per-file facts
KnownFacts = dict[str, list["Any"]]  # relpath -> [sha256 of the content, its facts]
SKIP_DIRS = {"__pycache__", "tests", "test"}
parsed_files = 0  # files read and parsed in this process (the rest were reused from the index)
# The largest module of a package worth scanning; beyond it a file is named, not read (the
# largest .py of FINN, QONNX and their dependencies is under 1 MiB)
MAX_SOURCE_BYTES = 8 * 2**20


def scan_folder(
    root: str,
    prefix: str,
    previous: object,
    extract: Extract,
    known: KnownFacts | None = None,
) -> tuple[dict[str, Any], list[Any]]:
    """``({relpath: [mtime_ns, size, inode, ctime_ns, sha256, data]}, [folder stamps])`` below
    ``root``.

    ``prefix`` is the dotted package name of ``root``. ``data`` is ``extract(tree, module,
    is_package)`` or ``{"error": message}`` (``sha256`` then empty), kept with the SHA-256 of
    the content it was read from: a file is read at every scan, and ``previous`` data is
    reused only for the content it was made from (not for a file whose stamp merely matches),
    as are the facts ``known`` holds for a release brainsmith ships them for. The walked folders include those without Python
    files, so a file added to any of them is noticed. Every stamp is taken before what it
    stands for is read (a folder before it is listed, a file before it is parsed): a change
    made while the scan runs then differs from the stamp and is noticed at the next check,
    never recorded as already seen.

    A symbolic link to a folder below ``root`` is never followed: one that leads out of
    ``root`` is named with ``{"error": "<path>: a link out of the package (to <target>); not
    read"}``. A link to a module outside ``root`` is read as the module (setuptools' strict
    editable install links every file; the read takes regular files of at most 8 MiB only).
    A link that stays inside is skipped, its target being scanned where it is (a module
    reached twice would be two modules with the same plugins).
    """
    previous = previous if isinstance(previous, dict) else {}
    files: dict[str, list[Any]] = {}
    folders: list[Any] = []
    for dirpath, filenames, links_out, folder_stamp in _walk(root):
        folders.append(folder_stamp)
        for name, target in links_out:
            full = os.path.join(dirpath, name)
            try:
                st = os.stat(full)
            except OSError:
                continue
            reason = f"{full}: a link out of the package (to {target}); not read"
            identity = [st.st_mtime_ns, st.st_size, st.st_ino, st.st_ctime_ns]
            files[os.path.relpath(full, root)] = [*identity, "", {"error": reason}]
        for filename in filenames:
            full = os.path.join(dirpath, filename)
            rel = os.path.relpath(full, root)
            try:
                st = os.stat(full)
            except OSError:
                continue
            identity = [st.st_mtime_ns, st.st_size, st.st_ino, st.st_ctime_ns]
            module = module_name_for(rel)
            module = f"{prefix}.{module}".strip(".") if prefix else module
            reusable = [*_facts(previous.get(rel)), *_facts((known or {}).get(rel))]
            files[rel] = [*identity, *_extract(full, module, extract, reusable)]
    return files, folders


def _facts(entry: object) -> list[tuple[str, dict[str, Any]]]:
    """``[(sha256, facts)]`` of a scan-data entry or shipped ``[sha256, facts]`` (read from a
    cache file: anything else is no entry)."""
    if isinstance(entry, list) and len(entry) in (2, 6):
        digest, facts = entry[-2:]
        if isinstance(digest, str) and digest and isinstance(facts, dict):
            return [(digest, facts)]
    return []


def _walk(root: str) -> Iterator[tuple[str, list[str], list[tuple[str, str]], list[Any]]]:
    """``(folder, sorted Python file names, [(name, real path)] of the links in it that lead
    out of root, stamp taken before listing it)`` for ``root`` and the package folders below
    it, top down. No link to a folder is followed. A link to a module outside root is read
    like a module (a strict editable install is a tree of such links; the read is bounded
    and of regular files only); a link to one inside is skipped (its target is scanned)."""
    real_root = os.path.realpath(root)
    pending = [root]
    while pending:
        folder = pending.pop()
        stamp = stamp_of(folder)
        try:
            with os.scandir(folder) as listing:
                entries = list(listing)
        except OSError:
            continue
        subfolders, names, out = [], [], []
        for entry in entries:
            try:
                link = entry.is_symlink()
                is_folder = entry.is_dir()  # of a link: what it leads to
            except OSError:
                continue
            if not (_walked(entry.name) if is_folder else entry.name.endswith(".py")):
                continue
            if link:
                target = os.path.realpath(entry.path)
                if inside(target, real_root):
                    continue
                if is_folder:
                    out.append((entry.name, target))
                else:
                    names.append(entry.name)
            elif is_folder:
                subfolders.append(entry.path)
            else:
                names.append(entry.name)
        yield folder, sorted(names), sorted(out), stamp
        pending.extend(sorted(subfolders, reverse=True))


def inside(path: str, folder: str) -> bool:
    """``path`` is ``folder`` or below it (both real paths: no link on the way)."""
    return os.path.commonpath([path, folder]) == folder


def link_out(path: str, folder: str) -> str | None:
    """The real path of ``path`` when a symbolic link on the way leads it out of ``folder``;
    None when it stays inside."""
    real = os.path.realpath(path)
    return None if inside(real, os.path.realpath(folder)) else real


def _walked(name: str) -> bool:
    return name not in SKIP_DIRS and not name.startswith(".") and "-" not in name


def _extract(
    path: str, module: str, extract: Extract, reusable: list[tuple[str, dict[str, Any]]]
) -> tuple[str, dict[str, Any]]:
    """``(sha256 of the content, its facts)``: the facts of ``reusable`` made from this very
    content, else parsed (``""`` and an error for a file that cannot be read)."""
    global parsed_files
    try:
        content = read_regular(path, MAX_SOURCE_BYTES)
    except (OSError, ValueError) as exc:
        return "", {"error": f"{path}: cannot read: {exc}"}
    digest = hashlib.sha256(content).hexdigest()
    for made_from, facts in reusable:
        if made_from == digest:
            return digest, facts
    parsed_files += 1
    try:
        tree = ast.parse(content, filename=path)
        return digest, extract(tree, module, path.endswith("__init__.py"))
    except SyntaxError as exc:
        return digest, {"error": f"{path}:{exc.lineno}: syntax error: {exc.msg}"}
    except (RecursionError, MemoryError):
        return digest, {"error": f"{path}: nested too deeply to be scanned"}
    except (ValueError, TypeError) as exc:  # e.g. a metadata literal with an unhashable key
        return digest, {"error": f"{path}: cannot be scanned: {type(exc).__name__}: {exc}"}


def folder_stamps(root: str, files: dict[str, Any], folders: list[Any]) -> list[Any]:
    """Stamps of every walked folder and scanned file, as the scan saw them: notices new,
    edited and deleted files anywhere in the tree, also in folders that held no Python file
    yet, and changes made while the scan ran."""
    return [*folders, *([os.path.join(root, rel), *files[rel][:4]] for rel in sorted(files))]
