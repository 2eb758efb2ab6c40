"""Import the object behind a spec, turning every failure into a PluginLoadError that says why."""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
import threading
import time
import weakref

from brainsmith.plugin.adapters import install_hint
from brainsmith.plugin.containment import PluginExit, contained
from brainsmith.plugin.errors import PluginLoadError
from brainsmith.plugin.spec import PluginSpec

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any


class ImportTimeout(Exception):
    """An import that did not finish within the configured load timeout."""


class RecordRefused(PluginLoadError):
    """An index record naming an object other than the plugin its source registers."""


DISAGREES = "the discovery cache disagrees with the plugin's source"


def import_target(spec: PluginSpec, timeout: float = 0.0) -> object:
    """Import ``spec.target`` (``module:qualname``) and return the object.

    With ``timeout`` > 0 the import runs in a worker thread and a PluginLoadError is raised
    after that many seconds (``plugin_system.load_timeout``); Python cannot stop a thread, so
    the import goes on in the background and the plugin's module stays locked until it ends.
    """
    module_name, _, qualname = spec.target.partition(":")
    _check_declared(spec, module_name)
    if spec.metadata.get("plugin_dir"):
        from brainsmith.plugin.discovery import folders

        folders.activate()  # the configured folders, a package each
    from brainsmith.plugin.adapters import prepare_import

    try:
        with contained():
            prepare_import(module_name)
            module = import_bounded(module_name, timeout)
    except ImportTimeout:
        raise PluginLoadError(
            f"cannot load {spec.type} {spec.qualified_name}: importing {module_name} "
            f"({_where(spec)}) did not finish within {timeout:g} s (plugin_system.load_timeout); "
            "it goes on in the background and other plugins are unaffected",
            spec,
        ) from None
    except ModuleNotFoundError as exc:
        missing = (exc.name or "").partition(".")[0]
        top = module_name.partition(".")[0]
        hint = install_hint(missing) if missing == top else None
        if hint:
            raise PluginLoadError(
                f"cannot load {spec.type} {spec.qualified_name}: {hint}", spec
            ) from exc
        if exc.name and (module_name == exc.name or module_name.startswith(exc.name + ".")):
            raise PluginLoadError(
                f"cannot load {spec.type} {spec.qualified_name}: its module {module_name} "
                f"({_where(spec)}) is not installed or was deleted or renamed since discovery "
                "(a new discovery drops it; `brainsmith cache clear` forces one)",
                spec,
            ) from exc
        raise PluginLoadError(
            f"cannot load {spec.type} {spec.qualified_name} from {_where(spec)}: "
            f"it imports '{exc.name}', which is not installed (pip install {missing or exc.name})",
            spec,
        ) from exc
    except PluginExit as exc:
        raise PluginLoadError(
            f"cannot load {spec.type} {spec.qualified_name}: importing {module_name} "
            f"({_where(spec)}) {exc}",
            spec,
        ) from exc
    except SyntaxError as exc:
        raise PluginLoadError(
            f"cannot load {spec.type} {spec.qualified_name}: syntax error in "
            f"{exc.filename}:{exc.lineno}: {exc.msg}",
            spec,
        ) from exc
    except Exception as exc:
        raise PluginLoadError(
            f"cannot load {spec.type} {spec.qualified_name}: importing {module_name} "
            f"({_where(spec)}) raised {type(exc).__name__}: {exc}",
            spec,
        ) from exc
    obj: object = module
    try:
        for part in qualname.split("."):
            obj = getattr(obj, part)
    except AttributeError:
        raise PluginLoadError(
            f"cannot load {spec.type} {spec.qualified_name}: module {module_name} has no "
            f"attribute {qualname!r} (was it renamed? run `brainsmith cache clear`)",
            spec,
        ) from None
    problem = not_this_plugin(spec, obj)
    if problem and spec.record is None:  # added at run time, not read from the index
        raise PluginLoadError(
            f"refusing to serve {spec.type} {spec.qualified_name}: {spec.target} {problem}", spec
        )
    if problem:
        raise RecordRefused(
            f"refusing to serve {spec.type} {spec.qualified_name}: {spec.target} {problem} "
            f"({DISAGREES}; it is rebuilt)",
            spec,
        )
    return obj


def not_this_plugin(spec: PluginSpec, obj: object) -> str | None:
    """Why ``obj`` is not the plugin ``spec`` describes; None when it is.

    Whatever an index says, only what its source registers is served: an object defined in
    the named module under the named qualname that is, for decorated plugins, marked by the
    decorator with this type and name, and for a framework with an adapter what the adapter
    says the framework registers under that name."""
    from brainsmith.plugin.adapters import adapter_class

    defined = (getattr(obj, "__module__", None), getattr(obj, "__qualname__", None))
    if defined != (spec.module, spec.qualname):
        return f"is {type(obj).__name__} {defined[0]}.{defined[1]}, defined elsewhere"
    adapter = adapter_class(spec.framework)
    if adapter is not None:
        if adapter.serves(spec, obj):
            return None
        return f"is not a {spec.type} {spec.framework} registers as {spec.name!r}"
    from brainsmith.plugin.metadata import PLUGIN_ATTRIBUTE

    marker = getattr(obj, "__dict__", {}).get(PLUGIN_ATTRIBUTE)
    if not isinstance(marker, dict) or marker.get("type") != spec.type:
        return f"is not decorated with @{spec.type}"
    if marker.get("name") != spec.name:
        return f"is the {spec.type} named {marker.get('name')!r}, not {spec.name!r}"
    return None


def agree_with_source(spec: PluginSpec, obj: object) -> str | None:
    """Make ``spec``'s metadata what ``obj``'s decorator registered where its index record
    says otherwise; returns how the record differed (None when it agrees, and for a spec
    added at run time or an object with no decorator: a framework's class).

    What ``not_this_plugin`` checks for the type and name, this checks for the rest. The
    record's own ``line`` and ``plugin_dir`` are kept, and a pip package's record may add
    the version ranges the package declares for all its plugins (``BRAINSMITH_PLUGIN``)."""
    from brainsmith.plugin.discovery.trust import BUILTIN_FRAMEWORKS, VERSION_KEYS
    from brainsmith.plugin.metadata import PLUGIN_ATTRIBUTE

    marker = getattr(obj, "__dict__", {}).get(PLUGIN_ATTRIBUTE)
    if spec.record is None or not isinstance(marker, dict):
        return None
    recorded: dict[str, Any] = spec.record[4]
    own: dict[str, Any] = {k: recorded[k] for k in ("line", "plugin_dir") if k in recorded}
    cached = {k: v for k, v in recorded.items() if k not in own}
    registered = {k: v for k, v in marker.items() if k not in ("type", "name", "line")}
    if spec.framework not in BUILTIN_FRAMEWORKS:
        declared = {k: cached[k] for k in VERSION_KEYS if k in cached and k not in registered}
        registered.update(declared)
    keys = sorted({*cached, *registered})
    differs = [k for k in keys if _plain(cached.get(k)) != _plain(registered.get(k))]
    if not differs:
        return None
    spec.metadata = {**registered, **own}
    return "; ".join(
        f"{k}: cached {_shown(cached, k)}, source {_shown(registered, k)}" for k in differs
    )


def _plain(value: object) -> object:
    """``value`` with tuples as lists (a record read from JSON has lists where a decorator
    keeps tuples)."""
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _shown(metadata: dict[str, Any], key: str) -> str:
    """A value for a message: its ``repr`` (escapes visible), cut; "none" when absent."""
    if key not in metadata:
        return "none"
    text = repr(metadata[key])
    return text if len(text) <= 80 else text[:77] + "..."


DEADLOCK_RETRIES = 5
IMPORT_TURN_WAIT = 30.0  # seconds a thread waits for its turn before importing anyway
_IMPORTING = threading.RLock()
_holder: threading.Thread | None = None  # whose turn it is; written only by that thread
_given_up: weakref.WeakSet[threading.Thread] = weakref.WeakSet()  # timed out, maybe for good


@contextlib.contextmanager
def import_turn(wait: float | None = None) -> Iterator[None]:
    """Plugin imports in this process take turns.

    Python 3.11's per-module import locks see deadlocks where there are none when threads
    import one package graph at once (CPython gh-83065, gh-106176): an import is then handed
    a partially initialised module (``partially initialized module 'onnx' has no attribute
    'version'``) or refused with ``_DeadlockError``. A turn not given within
    ``wait`` seconds (an import that hangs, a plugin that loads plugins from a thread of its
    own while being imported) is taken anyway, so a wait here is bounded. A turn held by an
    import that its load timeout gave up on is not waited for at all: that import may never
    end, and the plugins loaded after it must not pay for it. ``wait`` defaults to
    ``IMPORT_TURN_WAIT``."""
    global _holder
    if _holder in _given_up:
        turn = _IMPORTING.acquire(blocking=False)
    else:
        turn = _IMPORTING.acquire(timeout=IMPORT_TURN_WAIT if wait is None else wait)
    outer = _holder
    if turn:
        _holder = threading.current_thread()
    try:
        yield
    finally:
        if turn:
            _holder = outer
            _IMPORTING.release()


def import_bounded(module_name: str, timeout: float) -> object:
    """Import ``module_name`` (in its turn); a ``_DeadlockError`` is retried after the other
    import has ended."""
    module = sys.modules.get(module_name)
    if module is not None and not _initializing(module):
        return module
    attempt = 0
    while True:
        try:
            return _import_within(module_name, timeout)
        except BaseException as exc:
            folders = sys.modules.get("brainsmith.plugin.discovery.folders")
            if folders is not None:
                folders.drop_dead_aliases()
            if type(exc).__name__ != "_DeadlockError" or attempt == DEADLOCK_RETRIES:
                raise
        attempt += 1
        time.sleep(0.02 * attempt)


def _initializing(module: object) -> bool:
    return bool(getattr(getattr(module, "__spec__", None), "_initializing", False))


def _import_within(module_name: str, timeout: float) -> object:
    """``importlib.import_module``, given up on after ``timeout`` seconds (0: wait forever)."""
    if timeout <= 0:
        with import_turn():
            return importlib.import_module(module_name)
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            with import_turn(wait=timeout / 2), contained():  # a hung import holds its turn
                outcome["module"] = importlib.import_module(module_name)
        except BaseException as exc:  # handed to the caller below
            outcome["error"] = exc

    worker = threading.Thread(target=run, name=f"brainsmith-import:{module_name}", daemon=True)
    worker.start()
    worker.join(min(timeout, threading.TIMEOUT_MAX))
    if worker.is_alive():
        _given_up.add(worker)  # the imports after it do not wait for its turn
        raise ImportTimeout(module_name)
    if "error" in outcome:
        raise outcome["error"]
    return outcome["module"]


def _check_declared(spec: PluginSpec, module_name: str) -> None:
    """A pip package's plugin is imported only from a package that declares brainsmith
    plugins, whatever a (stale or forged) discovery index says."""
    from brainsmith.plugin.discovery.trust import BUILTIN_FRAMEWORKS

    if spec.framework in BUILTIN_FRAMEWORKS:
        return
    from brainsmith.plugin.discovery.sources.entry_points import declared_packages

    top = module_name.partition(".")[0]
    if top not in declared_packages():
        raise PluginLoadError(
            f"cannot load {spec.type} {spec.qualified_name}: no installed package declares "
            f"'{top}' in its brainsmith.plugins entry points; refusing to import {spec.target} "
            "(the discovery index is stale or was tampered with: run `brainsmith cache clear`)",
            spec,
        )


def _where(spec: PluginSpec) -> str:
    return os.path.relpath(spec.source) if spec.source else spec.module
