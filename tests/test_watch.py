"""Hot reloading of plugin folders: ``PluginManager.watch()`` and ``brainsmith plugins watch``
(watchdog) notice new, edited and deleted plugin files at once and serve the new code."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys

import pytest

from brainsmith.plugin.errors import PluginError
from brainsmith.plugin.manager import get_plugin_manager
from brainsmith.plugins import transforms

PLUGIN = """
from qonnx.transformation.base import Transformation
from brainsmith.plugin.core import transform


@transform(name="{name}")
class {name}(Transformation):
    VERSION = {version}

    def apply(self, model):
        return model, False
"""


def plugin(name: str, version: int = 1) -> str:
    return PLUGIN.format(name=name, version=version)


def next_change(changes: queue.Queue, wanted: str):
    """The first reported change whose summary mentions ``wanted``."""
    seen = []
    while True:
        try:
            change = changes.get(timeout=60)
        except queue.Empty:
            raise AssertionError(f"no change mentioning {wanted!r}; saw {seen}") from None
        seen.append(str(change))
        if wanted in str(change):
            return change


def test_watch_picks_up_a_new_plugin_file_at_once(plugin_folder):
    manager = get_plugin_manager()
    manager.registry()
    changes: queue.Queue = queue.Queue()
    with manager.watch(on_change=changes.put):
        plugin_folder("fresh.py", plugin("Fresh"))
        change = next_change(changes, "Fresh")
    assert change.added == ("transform user:Fresh",)
    assert transforms.Fresh.VERSION == 1


def test_watch_hot_reloads_an_edited_plugin_that_is_in_use(plugin_folder):
    path = plugin_folder("hot.py", plugin("Hot", 1))
    manager = get_plugin_manager()
    old = manager.get_instance("transform", "Hot")
    assert transforms.Hot.VERSION == 1
    changes: queue.Queue = queue.Queue()
    with manager.watch(on_change=changes.put):
        path.write_text(plugin("Hot", 2))
        change = next_change(changes, "Hot")
    assert change.reloaded == ("transform user:Hot",)
    assert transforms.Hot.VERSION == 2
    assert manager.get_instance("transform", "Hot") is not old


def test_watch_drops_a_deleted_plugin(plugin_folder):
    path = plugin_folder("gone.py", plugin("Gone"))
    manager = get_plugin_manager()
    assert transforms.Gone.VERSION == 1
    changes: queue.Queue = queue.Queue()
    with manager.watch(on_change=changes.put):
        path.unlink()
        change = next_change(changes, "Gone")
    assert change.removed == ("transform user:Gone",)
    assert "Gone" not in transforms


def test_watch_reports_a_broken_edit_and_recovers_when_it_is_fixed(plugin_folder):
    path = plugin_folder("fickle.py", plugin("Fickle", 1))
    manager = get_plugin_manager()
    assert transforms.Fickle.VERSION == 1
    changes: queue.Queue = queue.Queue()
    with manager.watch(on_change=changes.put):
        path.write_text("def broken(:\n")
        change = next_change(changes, "syntax error")
        assert any("fickle.py" in problem for problem in change.problems)
        path.write_text(plugin("Fickle", 3))
        next_change(changes, "Fickle")
    assert transforms.Fickle.VERSION == 3


def test_watch_without_plugin_folders_is_an_error():
    with pytest.raises(PluginError, match="no plugin folders to watch"):
        get_plugin_manager().watch()


def brainsmith_watch(env: dict) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "brainsmith", "plugins", "watch"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **env},
    )


def test_brainsmith_plugins_watch_prints_changes_and_stops_on_ctrl_c(tmp_path):
    process = brainsmith_watch({"BRAINSMITH_PLUGIN_DIRS": str(tmp_path)})
    try:
        assert f"watching 1 plugin folder: {tmp_path}" in process.stdout.readline()
        (tmp_path / "fresh.py").write_text(plugin("Fresh"))
        line = process.stdout.readline()
        assert "+ transform user:Fresh" in line, line + process.stderr.read()
        (tmp_path / "fresh.py").write_text(plugin("Fresh", 2))
        assert "~ transform user:Fresh" in process.stdout.readline()
    finally:
        process.send_signal(signal.SIGINT)
        _out, err = process.communicate(timeout=30)
    assert process.returncode == 0, err
    assert "Traceback" not in err


def test_brainsmith_plugins_watch_without_folders_says_what_to_set():
    process = brainsmith_watch({})
    _out, err = process.communicate(timeout=120)
    assert process.returncode == 2
    assert "no plugin folders to watch" in err and "BRAINSMITH_PLUGIN_DIRS" in err


def test_an_edit_in_the_same_second_at_the_same_size_serves_the_new_code(
    plugin_folder, monkeypatch
):
    """Python takes a module's bytecode as current while the source's whole seconds and size
    are those it was compiled from: an edit within the same second that keeps the size
    (VERSION = 1 -> 2) must still be served, with bytecode written as users' Pythons write it."""
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    path = plugin_folder("quick.py", plugin("Quick", 1))
    second = int(path.stat().st_mtime)
    os.utime(path, ns=(second * 10**9 + 100_000_000,) * 2)
    manager = get_plugin_manager()
    assert transforms.Quick.VERSION == 1
    cached = sys.modules[transforms.Quick.__module__].__cached__
    assert cached and os.path.isfile(cached)  # compiled and written
    changes: queue.Queue = queue.Queue()
    with manager.watch(on_change=changes.put):
        path.write_text(plugin("Quick", 2))
        os.utime(path, ns=(second * 10**9 + 600_000_000,) * 2)
        change = next_change(changes, "Quick")
    assert change.reloaded == ("transform user:Quick",)
    assert transforms.Quick.VERSION == 2
