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
    from typing import TypeGuard

    from brainsmith.plugin.discovery.sources import ModuleFacts, ScannedFile
    from brainsmith.plugin.discovery.stamps import Stamp


Extract = Callable[[ast.Module, str, bool], "ModuleFacts"]  # per-file facts
KnownFacts = dict[str, list["str | ModuleFacts"]]  # relpath -> [sha256 of the content, facts]
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
) -> tuple[dict[str, ScannedFile], list[Stamp]]:
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
    known = known or {}
    files: dict[str, ScannedFile] = {}
    folders: list[Stamp] = []
    for dirpath, filenames, links_out, folder_stamp in _walk(root):
        folders.append(folder_stamp)
        for name, target in links_out:
            full = os.path.join(dirpath, name)
            identity = _identity(full)
            if identity is not None:
                reason = f"{full}: a link out of the package (to {target}); not read"
                files[os.path.relpath(full, root)] = [*identity, "", {"error": reason}]
        for filename in filenames:
            full = os.path.join(dirpath, filename)
            rel = os.path.relpath(full, root)
            identity = _identity(full)
            if identity is not None:
                reusable = [*_facts(previous.get(rel)), *_facts(known.get(rel))]
                facts = _extract(full, _module_of(rel, prefix), extract, reusable)
                files[rel] = [*identity, *facts]
    return files, folders


def _identity(path: str) -> list[int] | None:
    """``[mtime_ns, size, inode, ctime_ns]`` of ``path`` (None when it is gone)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_mtime_ns, st.st_size, st.st_ino, st.st_ctime_ns]


def _module_of(rel: str, prefix: str) -> str:
    """The dotted module name of the file ``rel`` below the package ``prefix``."""
    module = module_name_for(rel)
    return f"{prefix}.{module}".strip(".") if prefix else module


def facts_of(entry: ScannedFile) -> ModuleFacts:
    """The facts of a scanned file (its last field)."""
    facts = entry[-1]
    return facts if isinstance(facts, dict) else {"error": f"no facts, but {facts!r}"}


def _facts(entry: object) -> list[tuple[str, ModuleFacts]]:
    """``[(sha256, facts)]`` of a scan-data entry or shipped ``[sha256, facts]`` (read from a
    cache file: anything else is no entry)."""
    if isinstance(entry, list) and len(entry) in (2, 6):
        digest, facts = entry[-2:]
        if isinstance(digest, str) and digest and _is_facts(facts):
            return [(digest, facts)]
    return []


def _is_facts(value: object) -> TypeGuard[ModuleFacts]:
    """Facts read from a cache file are a dict (their fields are checked where they are read)."""
    return isinstance(value, dict)


def _walk(root: str) -> Iterator[tuple[str, list[str], list[tuple[str, str]], Stamp]]:
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
        listing = _listing(folder, real_root)
        if listing is None:
            continue
        subfolders, names, out = listing
        yield folder, sorted(names), sorted(out), stamp
        pending.extend(sorted(subfolders, reverse=True))


def _listing(
    folder: str, real_root: str
) -> tuple[list[str], list[str], list[tuple[str, str]]] | None:
    """``(subfolders to walk, Python file names, [(name, real path)] of links out of root)``
    in ``folder``; None when it cannot be listed."""
    try:
        with os.scandir(folder) as listing:
            entries = list(listing)
    except OSError:
        return None
    subfolders: list[str] = []
    names: list[str] = []
    out: list[tuple[str, str]] = []
    for entry in entries:
        kind, target = _entry_kind(entry, real_root)
        if kind == "folder":
            subfolders.append(entry.path)
        elif kind == "module":
            names.append(entry.name)
        elif kind == "out":
            out.append((entry.name, target))
    return subfolders, names, out


def _entry_kind(entry: os.DirEntry[str], real_root: str) -> tuple[str, str]:
    """``("folder", "")`` to walk, ``("module", "")`` to read, ``("out", real path)`` for a
    link to a folder out of root, ``("", "")`` to pass by (a link that stays inside root: its
    target is scanned where it is)."""
    try:
        link = entry.is_symlink()
        is_folder = entry.is_dir()  # of a link: what it leads to
    except OSError:
        return "", ""
    if not (_walked(entry.name) if is_folder else entry.name.endswith(".py")):
        return "", ""
    if not link:
        return ("folder" if is_folder else "module"), ""
    target = os.path.realpath(entry.path)
    if inside(target, real_root):
        return "", ""
    return ("out", target) if is_folder else ("module", "")


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
    path: str, module: str, extract: Extract, reusable: list[tuple[str, ModuleFacts]]
) -> tuple[str, ModuleFacts]:
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


def folder_stamps(root: str, files: dict[str, ScannedFile], folders: list[Stamp]) -> list[Stamp]:
    """Stamps of every walked folder and scanned file, as the scan saw them: notices new,
    edited and deleted files anywhere in the tree, also in folders that held no Python file
    yet, and changes made while the scan ran."""
    return [*folders, *(_file_stamp(os.path.join(root, rel), files[rel]) for rel in sorted(files))]


def _file_stamp(path: str, entry: ScannedFile) -> Stamp:
    """A scanned file's stamp: its path and the identity the scan took (its first fields)."""
    return [path, *(field for field in entry[:4] if isinstance(field, int))]
