"""Hot reloading of plugin folders (``PluginManager.watch()``, ``brainsmith plugins watch``).

watchdog reports file-system events; a burst of them (an editor saving, ``git checkout``) is
gathered for ``debounce`` seconds, then the manager refreshes: new and deleted plugins appear
and disappear, and an edited folder's modules are imported anew on their next use.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable

from brainsmith.plugin import log

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from watchdog.events import FileSystemEvent
    from watchdog.observers.api import BaseObserver

    from brainsmith.plugin.manager import PluginManager


# Events that change what a folder holds; reads (opened, closed without writing) do not.
CHANGES = ("created", "deleted", "modified", "moved", "closed")


class PluginWatcher:
    """Watches plugin folders and refreshes ``manager`` when their Python files change."""

    def __init__(
        self,
        manager: PluginManager,
        folders: tuple[str, ...],
        on_change: Callable[..., Any] | None = None,
        debounce: float = 0.2,
    ) -> None:
        self.manager = manager
        self.folders = tuple(folders)
        self.on_change = on_change
        self.debounce = debounce
        self._observer: BaseObserver | None = None
        self._timer: threading.Timer | None = None
        self._lock = threading.Lock()

    def start(self) -> PluginWatcher:
        from watchdog.observers import Observer

        observer = Observer()
        handler = _Handler(self)
        watched = 0
        for folder in self.folders:
            if os.path.isdir(folder):
                observer.schedule(handler, folder, recursive=True)  # type: ignore[arg-type]  # duck-typed handler

                watched += 1
            else:
                log.warning("plugin folder %s does not exist; not watching it", folder)
        if not watched:
            from brainsmith.plugin.errors import PluginError

            raise PluginError(
                f"none of the plugin folders exists ({', '.join(self.folders)}); nothing to watch"
            )
        observer.daemon = True
        observer.start()
        self._observer = observer
        return self

    def stop(self) -> None:
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
        if self._observer is not None:
            self._observer.stop()
            self._observer.join(timeout=10)
            self._observer = None

    def __enter__(self) -> PluginWatcher:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def changed(self, path: str) -> None:
        """A relevant event: refresh once the burst it belongs to is over."""
        log.debug("plugin folder change: %s", path)
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
            self._timer = threading.Timer(self.debounce, self._refresh)
            self._timer.daemon = True
            self._timer.start()

    def _refresh(self) -> None:
        try:
            changes = self.manager.refresh()
        except Exception as exc:  # a watcher thread must not die: report and keep watching
            log.warning("refreshing plugins failed: %s: %s", type(exc).__name__, exc)
            return
        if changes and self.on_change is not None:
            try:
                self.on_change(changes)
            except Exception as exc:
                log.warning("the watch callback raised %s: %s", type(exc).__name__, exc)


def relevant(path: str) -> bool:
    """Python files and folders matter; bytecode caches and hidden files do not."""
    parts = path.split(os.sep)
    if "__pycache__" in parts or any(p.startswith(".") for p in parts if p):
        return False
    name = parts[-1]
    return name.endswith(".py") or "." not in name


class _Handler:
    """The watchdog event handler (duck-typed: ``dispatch`` is all the observer calls)."""

    def __init__(self, watcher: PluginWatcher) -> None:
        self.watcher = watcher

    def dispatch(self, event: FileSystemEvent) -> None:
        if event.event_type not in CHANGES or (
            event.is_directory and event.event_type == "modified"
        ):
            return  # a folder's own "modified" only repeats the events of what is inside it
        for path in (event.src_path, getattr(event, "dest_path", "")):
            if path and relevant(os.fsdecode(path)):
                self.watcher.changed(os.fsdecode(path))
                return
