"""A pytest plugin for plugin authors: each test gets an isolated, freshly reset hub.

Installed with brainsmith (entry point ``pytest11``), so the fixture is simply there::

    def test_my_transform_is_registered(brainsmith_hub):
        folder = brainsmith_hub.plugin_folder()
        (folder / "mine.py").write_text(SOURCE)
        assert "Mine" in brainsmith_hub.registry().specs("transform", "user")[0].name

The fixture points the discovery cache at a private temporary folder, ignores the
project's ``.brainsmith/config.yaml``, and resets the plugin system before and after the
test, so tests neither see each other's plugins nor the developer's cache.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest


class IsolatedHub:
    """The plugin manager of one test, plus helpers to add plugin folders."""

    def __init__(self, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.root = root
        self._monkeypatch = monkeypatch
        self._folders: list[str] = []

    @property
    def manager(self):
        from brainsmith.plugin.manager import get_plugin_manager

        return get_plugin_manager()

    def registry(self):
        """The registry (discovering on first use)."""
        return self.manager.registry()

    def plugin_folder(self, name: str = "plugins") -> Path:
        """A new folder whose decorated plugins the hub discovers (framework ``user``)."""
        folder = self.root / name
        folder.mkdir(parents=True, exist_ok=True)
        self._folders.append(str(folder))
        self._monkeypatch.setenv("BRAINSMITH_PLUGIN_DIRS", os.pathsep.join(self._folders))
        self.reset()
        return folder

    def reset(self) -> None:
        """Forget everything discovered so far (the next use rediscovers)."""
        from brainsmith.plugin.manager import reset_plugin_system

        reset_plugin_system()


def isolate_environment(monkeypatch: pytest.MonkeyPatch, cache: Path, config: Path) -> None:
    """Point brainsmith at ``cache`` and ``config`` (written empty if missing) and clear every
    other setting brainsmith reads from the environment (``plugin.config.ENV_VARS``)."""
    from brainsmith.plugin.config import ENV_VARS

    if not config.exists():
        config.write_text("plugin_system: {}\n")
    for var in ENV_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("BRAINSMITH_CACHE_DIR", str(cache))
    monkeypatch.setenv("BRAINSMITH_CONFIG", str(config))


@pytest.fixture
def brainsmith_hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """An isolated brainsmith plugin hub for one test."""
    cache = tmp_path / "brainsmith-cache"
    cache.mkdir(mode=0o700)
    isolate_environment(monkeypatch, cache, tmp_path / "brainsmith-config.yaml")
    hub = IsolatedHub(tmp_path, monkeypatch)
    hub.reset()
    yield hub
    hub.reset()
