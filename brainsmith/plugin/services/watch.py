"""Hot reloading of plugin folders (``PluginManager.watch()``, ``brainsmith plugins watch``).

watchdog reports file-system events; a burst of them (an editor saving, ``git checkout``) is
gathered for ``debounce`` seconds, then the manager refreshes: new and deleted plugins appear
and disappear, and an edited folder's modules are imported anew on their next use.

The operating system watches a folder, not its name: a folder replaced by another (a symbolic
link switched to a new release, a folder deleted and made again) would go unwatched. Every
``POLL`` seconds each folder's identity (device and inode, symbolic links followed) is
compared with the one watched; a new one is watched instead, and the plugins refreshed.
Events can also be lost (written while a replaced folder was being watched anew, a queue
overflowing in a burst) or raced by a refresh, so the same poll compares every file and
folder with the stamps the registry was made from (``PluginManager.folders_changed``, a
``stat`` each) and refreshes on any difference: the registry comes to hold what the folders
hold, whatever the events were.
"""

from __future__ import annotations

import contextlib
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
POLL = 0.5  # seconds between checks that each watched folder is still the one at its path


class PluginWatcher:
    """Watches plugin folders and refreshes ``manager`` when their Python files change."""

    def __init__(
        self,
        manager: PluginManager,
        folders: tuple[str, ...],
        on_change: Callable[..., object] | None = None,
        debounce: float = 0.2,
    ) -> None:
        self.manager = manager
        self.folders = tuple(folders)
        self.on_change = on_change
        self.debounce = debounce
        self._observer: BaseObserver | None = None
        self._timer: threading.Timer | None = None
        self._lock = threading.Lock()
        self._handler = _Handler(self)
        self._watches: dict[str, tuple[tuple[int, int] | None, Any]] = {}
        self._stopped = threading.Event()
        self._poller: threading.Thread | None = None

    def start(self) -> PluginWatcher:
        from watchdog.observers import Observer

        observer = Observer()
        observer.daemon = True
        self._observer = observer
        for folder in self.folders:
            if not self._watch(folder, identity(folder)):
                log.warning("plugin folder %s does not exist; watching for it to appear", folder)
        if not any(watch for _, watch in self._watches.values()):
            from brainsmith.plugin.errors import PluginError

            self._observer = None
            raise PluginError(
                f"none of the plugin folders exists ({', '.join(self.folders)}); nothing to watch"
            )
        observer.start()
        self._poller = threading.Thread(target=self._poll, name="plugin-folder-poll", daemon=True)
        self._poller.start()
        return self

    def _watch(self, folder: str, now: tuple[int, int] | None) -> bool:
        """Watch what is at ``folder`` now (instead of what was); False if nothing is."""
        assert self._observer is not None
        _, old = self._watches.get(folder, (None, None))
        if old is not None:
            with contextlib.suppress(KeyError, OSError):  # its folder is gone, and its watch
                self._observer.unschedule(old)
        watch = None
        if now is not None:
            try:  # duck-typed handler: dispatch() is all the observer calls
                watch = self._observer.schedule(self._handler, folder, recursive=True)  # type: ignore[arg-type]
            except OSError as exc:  # replaced again meanwhile: the next poll tries again
                log.debug("cannot watch %s yet: %s", folder, exc)
                now = None
        self._watches[folder] = (now, watch)
        return watch is not None

    def lost(self, folder: str) -> None:
        """The watched folder at ``folder`` went (deleted, moved away): the next poll watches
        whatever is there then, even if it reuses the old folder's inode."""
        for watched, (_, watch) in list(self._watches.items()):
            if os.path.normpath(watched) == os.path.normpath(folder):
                self._watches[watched] = (None, watch)

    def _poll(self) -> None:
        while not self._stopped.wait(POLL):
            for folder in self.folders:
                now = identity(folder)
                if now != self._watches.get(folder, (None, None))[0]:
                    log.debug("plugin folder %s was replaced; watching the new one", folder)
                    self._watch(folder, now)
                    self.changed(folder)
            if self.manager.folders_changed() and not self._pending():
                self.changed("the plugin folders")  # lost or raced events: converge anyway

    def stop(self) -> None:
        self._stopped.set()
        if self._poller is not None:
            self._poller.join(timeout=10)
            self._poller = None
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

    def _pending(self) -> bool:
        """Whether a refresh is waiting for its burst to end."""
        timer = self._timer
        return timer is not None and timer.is_alive()

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


def identity(folder: str) -> tuple[int, int] | None:
    """(device, inode) of the folder at ``folder`` (symbolic links followed); None if none."""
    try:
        st = os.stat(folder)
    except (OSError, ValueError):
        return None
    return (st.st_dev, st.st_ino) if os.path.isdir(folder) else None


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
        if event.is_directory and event.event_type in ("deleted", "moved"):
            self.watcher.lost(os.fsdecode(event.src_path))
        for path in (event.src_path, getattr(event, "dest_path", "")):
            if path and relevant(os.fsdecode(path)):
                self.watcher.changed(os.fsdecode(path))
                return
