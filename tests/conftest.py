"""Shared fixtures: every test gets its own cache directory, config and a fresh hub."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PYTHON = sys.executable


@pytest.fixture(autouse=True)
def isolated_hub(tmp_path_factory, monkeypatch):
    """A private cache dir, no project config from the repo, and a reset plugin system."""
    cache = tmp_path_factory.mktemp("cache")
    os.chmod(cache, 0o700)
    monkeypatch.setenv("BRAINSMITH_CACHE_DIR", str(cache))
    config = tmp_path_factory.mktemp("config") / "config.yaml"
    config.write_text("plugin_system: {}\n")
    monkeypatch.setenv("BRAINSMITH_CONFIG", str(config))
    for var in (
        "BRAINSMITH_PLUGIN_CACHE_TTL",
        "BRAINSMITH_PLUGIN_MODE",
        "BRAINSMITH_PLUGIN_DEBUG",
        "BRAINSMITH_PLUGIN_DIRS",
    ):
        monkeypatch.delenv(var, raising=False)
    from brainsmith.plugin.manager import reset_plugin_system

    reset_plugin_system()
    yield
    reset_plugin_system()


def run_python(
    code: str, env: dict | None = None, cwd: str | Path | None = None, timeout: float = 300
) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh interpreter with the test's environment (plus ``env``)."""
    full_env = {**os.environ, **(env or {})}
    return subprocess.run(
        [PYTHON, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env=full_env,
        cwd=cwd,
        timeout=timeout,
    )


@pytest.fixture
def plugin_folder(tmp_path, monkeypatch):
    """A user plugin folder registered through BRAINSMITH_PLUGIN_DIRS; returns a writer."""
    folder = tmp_path / "my_plugins"
    folder.mkdir()
    monkeypatch.setenv("BRAINSMITH_PLUGIN_DIRS", str(folder))

    def write(name: str, source: str) -> Path:
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(source))
        return path

    write.folder = folder
    return write
