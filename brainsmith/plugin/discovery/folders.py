"""Plugin folders as packages: each folder is imported as a package of its own, so its modules
have unique names (``bsm_my_plugins_1a2b3c4d.csv``) that clash neither with the standard
library, installed packages, nor another folder's module of the same file name.

A plain import of a sibling (``import helpers`` in a plugin file) keeps working when no
installed module has that name: the finder, consulted after every other one, answers with the
folder's module under its package name, so the file runs once. ``from . import helpers`` says
the same thing without ambiguity.
"""

from __future__ import annotations

import contextlib
import os
import sys
import zlib

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence
    from importlib.machinery import ModuleSpec
    from types import ModuleType


PREFIX = "bsm_"


def package_name(folder: str) -> str:
    """The package a plugin folder is imported as: its name plus a hash of its path."""
    base = os.path.basename(os.path.normpath(folder))
    safe = "".join(c if c.isalnum() or c == "_" else "_" for c in base) or "folder"
    digest = zlib.crc32(os.fsencode(folder)) & 0xFFFFFFFF
    name = f"{PREFIX}{safe}_{digest:08x}"
    return name if name.isidentifier() else f"{PREFIX}folder_{digest:08x}"


def module_of(folder: str, relpath: str) -> str:
    """``helpers.py`` in ``folder`` -> ``<package>.helpers``; its ``__init__.py`` -> the package."""
    from brainsmith.plugin.discovery.sources.pyscan import module_name_for

    inner = module_name_for(relpath)
    package = package_name(folder)
    return f"{package}.{inner}" if inner else package


def top_level_names(folder: str) -> list[str]:
    """Names a plain ``import NAME`` could mean in ``folder``: its modules and sub-folders."""
    try:
        entries = sorted(os.listdir(folder))
    except OSError:
        return []
    return [stem for entry in entries if (stem := _importable_stem(folder, entry))]


def _importable_stem(folder: str, entry: str) -> str:
    """The name ``import NAME`` finds the folder entry ``entry`` by ("" for none)."""
    stem, dot, ext = entry.partition(".")
    if stem == "__init__" or not stem.isidentifier():
        return ""
    if (dot and ext == "py") or (not dot and os.path.isdir(os.path.join(folder, entry))):
        return stem
    return ""


class PluginFolderFinder:
    """Imports plugin folders as packages (``sys.meta_path``, consulted last)."""

    def __init__(self) -> None:
        self.folders: dict[str, str] = {}  # package name -> folder, in configured order

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if path is not None or "." in fullname:
            return None  # submodules are found through the package's __path__
        import importlib.util

        folder = self.folders.get(fullname)
        if folder is not None:
            init = os.path.join(folder, "__init__.py")
            if os.path.isfile(init):
                return importlib.util.spec_from_file_location(
                    fullname, init, submodule_search_locations=[folder]
                )
            # (duck-typed loaders: subclassing importlib.abc.Loader would import 27 ms more)
            spec = importlib.util.spec_from_loader(fullname, _EmptyPackage(), is_package=True)  # type: ignore[arg-type]
            if spec is not None:
                spec.submodule_search_locations = [folder]
            return spec
        for package, folder in list(self.folders.items()):
            if fullname in _plain_names(folder):
                alias = _Alias(f"{package}.{fullname}")
                return importlib.util.spec_from_loader(fullname, alias)  # type: ignore[arg-type]
        return None


class _EmptyPackage:
    """The loader of a plugin folder without ``__init__.py``: an empty package."""

    def create_module(self, spec: ModuleSpec) -> None:
        return None

    def exec_module(self, module: ModuleType) -> None:
        pass


class _Alias:
    """``import helpers`` -> the module ``<package>.helpers`` itself (never a second copy)."""

    def __init__(self, canonical: str) -> None:
        self.canonical = canonical
        self._spec: ModuleSpec | None = None

    def create_module(self, spec: ModuleSpec) -> ModuleType:
        # The import statement's own path: a module another thread is importing is waited
        # for, and a circular import between threads gets the partial module, as for any
        # plain import (importlib.import_module would raise _DeadlockError there).
        __import__(self.canonical)
        module = sys.modules[self.canonical]
        self._spec = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        module.__spec__ = self._spec


# the import system set the alias's spec; restore its own


_listings: dict[str, tuple[int, set[str]]] = {}


def _plain_names(folder: str) -> set[str]:
    """``top_level_names`` of ``folder``, listed again only when the folder changed."""
    try:
        mtime = os.stat(folder).st_mtime_ns
    except OSError:
        return set()
    cached = _listings.get(folder)
    if cached is None or cached[0] != mtime:
        cached = _listings[folder] = (mtime, set(top_level_names(folder)))
    return cached[1]


_finder = PluginFolderFinder()


_configured: list[tuple[str, ...]] = [()]  # the process's plugin folders, set by the manager


def configure(folders: tuple[str, ...]) -> None:
    """Remember the configured plugin folders (the manager does, at each discovery)."""
    _configured[0] = tuple(folders)


def activate(folders: tuple[str, ...] | None = None) -> None:
    """Make plugin folders (the configured ones by default) importable as packages (done when
    a plugin of one loads); plain sibling imports try them in this order."""
    folders = _configured[0] if folders is None else folders
    if len(_finder.folders) != len(folders) or list(_finder.folders.values()) != list(folders):
        _finder.folders = {package_name(folder): folder for folder in folders}
    if _finder not in sys.meta_path:
        sys.meta_path.append(_finder)


def drop_dead_aliases() -> None:
    """Forget plain-name aliases of plugin-folder modules whose import failed (Python removed
    the module itself), so the next attempt fails, or works, the same way as the first."""
    for name, module in list(sys.modules.items()):
        canonical = getattr(module, "__name__", "")
        alias = name != canonical and isinstance(canonical, str) and canonical.startswith(PREFIX)
        if alias and sys.modules.get(canonical) is not module:
            sys.modules.pop(name, None)


def forget(folder: str | None = None) -> list[str]:
    """Drop a folder's imported modules (every plugin folder's when ``folder`` is None) and
    the plain-name aliases of them; returns their names."""
    doomed = _folder_modules(folder)
    identities = {id(module) for module in doomed.values()}
    aliases = [
        name
        for name, module in list(sys.modules.items())
        if name not in doomed and id(module) in identities
    ]
    for name in [*doomed, *aliases]:
        sys.modules.pop(name, None)
    discard_bytecode(doomed.values())
    return sorted(doomed)


def _folder_modules(folder: str | None) -> dict[str, ModuleType]:
    """The imported modules of the plugin folder ``folder`` (of every one when None)."""
    if folder is None:
        return {n: m for n, m in list(sys.modules.items()) if n.startswith(PREFIX)}
    package = package_name(folder)
    return {n: m for n, m in list(sys.modules.items()) if n.partition(".")[0] == package}


def discard_bytecode(modules: Iterable[ModuleType]) -> None:
    """Remove the bytecode files of ``modules``, dropped because their code changed: Python
    takes bytecode as current while the source's whole seconds and size are those it was
    compiled from, so an edit within the same second that keeps the size would be missed."""
    for module in modules:
        cached = getattr(module, "__cached__", None)
        if isinstance(cached, str):
            with contextlib.suppress(OSError):  # absent, or a folder this user cannot write
                os.unlink(cached)
