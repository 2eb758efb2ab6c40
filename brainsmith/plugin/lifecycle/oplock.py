"""One lock for every plugin lifecycle change: load, unload and reload of a path, register
and unregister of a plugin package.

Design. ``LOCK`` guards the bookkeeping (which plugins are loaded, which names are taken)
and is held only for those few dictionary updates, never while plugin code runs. An
operation first takes its plugin with ``operation(name)``: other operations on the same
plugin wait until it is done, operations on other plugins go ahead. The plugin's code (its
import, ``initialize``/``cleanup`` hooks) then runs with ``LOCK`` released, so a plugin import
that needs a module another thread is importing never waits while holding it.

Waiting for a plugin that another operation holds could still deadlock in two ways; both
raise ``PluginError`` at once instead of waiting:

- a cycle of waits: the plugin's own code loads, unloads or reloads it, or operation A waits
  for B while B waits for A;
- a wait from module-level code (a module being imported calls ``load_plugin``): Python holds
  that module's import lock, which the operation being waited for may need.
"""

from __future__ import annotations

import _thread
import contextlib
import sys
import threading
from collections.abc import Iterator

from brainsmith.plugin.errors import PluginError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import FrameType


LOCK = threading.RLock()
_done = threading.Condition(LOCK)
_holders: dict[str, int] = {}  # plugin -> thread running an operation on it
_waiting: dict[int, str] = {}  # thread -> plugin it waits for


@contextlib.contextmanager
def operation(plugin: str) -> Iterator[None]:
    """Run one lifecycle operation on ``plugin``; others on it wait (see the module doc)."""
    me = _thread.get_ident()
    with LOCK:
        while plugin in _holders:
            if _waits_for_itself(plugin, me):
                raise PluginError(
                    f"plugin '{plugin}' is being loaded, unloaded or reloaded by code that waits "
                    "for this call (a plugin's own code cannot load, unload or reload it)"
                )
            if _inside_import():
                raise PluginError(
                    f"plugin '{plugin}' is being loaded, unloaded or reloaded in another thread; "
                    "module-level code cannot wait for it (Python's import locks could "
                    "deadlock): call this outside import-time code, or retry"
                )
            _waiting[me] = plugin
            try:
                _done.wait()
            finally:
                del _waiting[me]
        _holders[plugin] = me
    try:
        yield
    finally:
        with LOCK:
            del _holders[plugin]
            _done.notify_all()


def _waits_for_itself(plugin: str, me: int) -> bool:
    """True when waiting for ``plugin`` would close a cycle of waits back to this thread."""
    holder = _holders.get(plugin)
    seen: set[int] = set()
    while holder is not None and holder not in seen:
        if holder == me:
            return True
        seen.add(holder)
        awaited = _waiting.get(holder)
        holder = _holders.get(awaited) if awaited is not None else None
    return False


def _inside_import() -> bool:
    """True while this thread runs a module's import (and so holds its import lock)."""
    frame: FrameType | None = sys._getframe(2)
    while frame is not None:
        code = frame.f_code
        if code.co_name == "_find_and_load" and code.co_filename.startswith("<frozen importlib"):
            return True
        frame = frame.f_back
    return False
