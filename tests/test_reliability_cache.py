"""Cache faults the hub survives beyond those in tests/test_cache.py: a plugin module deleted
after discovery, index records of the wrong shape, damaged side files (scan data, config memo)
and a write cut short by the file-size limit. In each case the hub keeps working, the bad data
is not trusted and no partial file is left behind."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import pytest

from brainsmith.plugin import memo
from brainsmith.plugin.config import load_config
from brainsmith.plugin.discovery import index_name
from brainsmith.plugin.errors import PluginLoadError
from brainsmith.plugin.folders import package_name
from brainsmith.plugin.manager import get_plugin_manager, reset_plugin_system
from brainsmith.plugins import transforms
from tests.conftest import run_python

PLUGIN = """
from qonnx.transformation.base import Transformation
from brainsmith.plugin.core import transform


@transform(name="{name}")
class {name}(Transformation):
    def apply(self, model):
        return model, False
"""

SUMMARY = """
import json
from brainsmith.plugin.manager import get_plugin_manager
manager = get_plugin_manager()
registry = manager.registry()
health = manager.health_check()
print(json.dumps({
    "cache": manager.get_performance_stats()["index_cache"],
    "count": len(registry.specs()),
    "user": sorted(s.name for s in registry.specs(framework="user")),
    "broken": health["broken_plugins"],
    "loads": transforms_load(),
}))
"""
LOADS = """
def transforms_load():
    from brainsmith.plugins import transforms
    return [transforms.FoldConstants.__name__]
"""


def summary(env: dict | None = None) -> tuple[dict, str]:
    """A fresh process's view of the hub: (summary, its stderr)."""
    result = run_python(LOADS + SUMMARY, env=env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1]), result.stderr


def cache_files() -> list[Path]:
    return sorted(Path(os.environ["BRAINSMITH_CACHE_DIR"]).iterdir())


def main_index(suffix: str = "") -> Path:
    """The index file of the current configuration (``suffix="-files"``: its scan data)."""
    return Path(memo.path_for(index_name() + suffix))


def assert_complete_files_only() -> None:
    """No temp files, and every memo file decodes."""
    for path in cache_files():
        assert path.suffix == ".bsm", f"left behind: {path.name}"
        assert memo.decode(path.read_bytes(), str(path)) is not None, f"damaged: {path.name}"


# -- a plugin module deleted after discovery ---------------------------------------------------


def test_plugin_module_deleted_after_discovery_fails_clearly_on_use(plugin_folder):
    plugin_folder("kept_mod.py", PLUGIN.format(name="Kept"))
    gone = plugin_folder("gone_mod.py", PLUGIN.format(name="Gone"))
    get_plugin_manager().registry()
    gone.unlink()
    with pytest.raises(PluginLoadError) as err:
        transforms.Gone  # noqa: B018
    message = str(err.value)
    module = f"{package_name(str(plugin_folder.folder))}.gone_mod"
    assert "transform user:Gone" in message and f"its module {module}" in message
    assert "gone_mod.py) is not installed or was deleted or renamed since discovery" in message
    assert transforms.Kept.__name__ == "Kept"


def test_plugin_module_deleted_after_discovery_is_dropped_by_the_next_discovery(plugin_folder):
    plugin_folder("kept_mod2.py", PLUGIN.format(name="Kept"))
    gone = plugin_folder("gone_mod2.py", PLUGIN.format(name="Gone"))
    get_plugin_manager().registry()
    assert b"gone_mod2" in main_index().read_bytes()
    gone.unlink()
    with pytest.raises(PluginLoadError):
        transforms.Gone  # noqa: B018
    reset_plugin_system()
    registry = get_plugin_manager().registry()
    assert [s.name for s in registry.specs(framework="user")] == ["Kept"]
    assert get_plugin_manager().health_check()["status"] == "healthy"
    assert b"gone_mod2" not in main_index().read_bytes()


# -- index records of the wrong shape ----------------------------------------------------------


def forge_index(change) -> None:
    """Rewrite the index in place, keeping its (valid) stamp: only the payload is wrong."""
    path = main_index()
    stamp, payload = memo.decode(path.read_bytes(), str(path))
    change(payload)
    assert memo.write(path.name[: -len(".bsm")], stamp, payload)


def _sources_not_a_mapping(payload: dict) -> None:
    payload["sources"] = ["qonnx", "finn"]


def _checked_not_a_number(payload: dict) -> None:
    payload["sources"]["qonnx"]["checked"] = "yesterday"


def _specs_not_a_list(payload: dict) -> None:
    payload["sources"]["qonnx"]["specs"] = {"FoldConstants": "qonnx.x:FoldConstants"}


@pytest.mark.parametrize(
    "change",
    [_sources_not_a_mapping, _checked_not_a_number, _specs_not_a_list],
    ids=["sources-not-a-mapping", "checked-not-a-number", "specs-not-a-list"],
)
def test_index_of_the_wrong_shape_is_discarded_and_rebuilt(change):
    before, _ = summary()
    forge_index(change)
    after, _ = summary()
    assert after["cache"] == "miss" and after["count"] == before["count"]
    assert after["loads"] == ["FoldConstants"] and after["broken"] == []
    assert summary()[0]["cache"] == "hit"


@pytest.mark.parametrize(
    "record",
    [
        ["transform", "Short"],
        ["transform", "MetaText", "qonnx", "qonnx.core:MetaText", "not a mapping", ""],
        ["plugin", "NoType", "qonnx", "qonnx.core:NoType", {}, ""],
    ],
    ids=["too-short", "metadata-not-a-mapping", "unknown-type"],
)
def test_malformed_index_record_is_reported_and_the_rest_used(record):
    before, _ = summary()
    forge_index(lambda payload: payload["sources"]["qonnx"]["specs"].append(record))
    after, _ = summary()
    assert after["cache"] == "hit" and after["count"] == before["count"]
    assert after["loads"] == ["FoldConstants"]
    assert [p["reason"] for p in after["broken"]] == ["malformed index record; ignored"]
    assert record[1] in after["broken"][0]["plugin"]


# -- damaged side files ------------------------------------------------------------------------


def test_damaged_scan_data_file_only_costs_a_rescan(plugin_folder):
    plugin_folder("first_mod.py", PLUGIN.format(name="First"))
    summary()
    files = main_index("-files")
    files.write_bytes(os.urandom(files.stat().st_size))
    plugin_folder("second_mod.py", PLUGIN.format(name="Second"))
    after, stderr = summary()
    assert after["user"] == ["First", "Second"] and after["broken"] == []
    assert "unknown format; discarding it" in stderr
    assert_complete_files_only()


@pytest.mark.parametrize(
    "damage",
    [
        lambda raw: raw[: len(raw) // 2],
        lambda raw: os.urandom(len(raw)),
        lambda raw: memo.MAGIC + b"\xff" * 16,
    ],
    ids=["truncated", "random-bytes", "garbage-after-header"],
)
def test_damaged_config_memo_is_discarded_and_the_file_reread(
    tmp_path, monkeypatch, caplog, damage
):
    config = tmp_path / "config.yaml"
    config.write_text("plugin_system:\n  cache_ttl: 42\n")
    monkeypatch.setenv("BRAINSMITH_CONFIG", str(config))
    assert load_config().cache_ttl == 42
    stored = Path(memo.path_for("config"))
    stored.write_bytes(damage(stored.read_bytes()))
    with caplog.at_level(logging.WARNING, logger="brainsmith.plugin"):
        assert load_config().cache_ttl == 42
    assert "discarding it" in caplog.text
    assert_complete_files_only()


def test_config_memo_holding_the_wrong_type_is_ignored(tmp_path, monkeypatch):
    config = tmp_path / "config.yaml"
    config.write_text("plugin_system:\n  cache_ttl: 42\n")
    monkeypatch.setenv("BRAINSMITH_CONFIG", str(config))
    load_config()
    stored = Path(memo.path_for("config"))
    stamp, _ = memo.decode(stored.read_bytes(), str(stored))
    memo.write("config", stamp, ["cache_ttl", 1])
    assert load_config().cache_ttl == 42


# -- a write cut short ---------------------------------------------------------------------------

LIMITED = """
import resource, signal
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
resource.setrlimit(resource.RLIMIT_FSIZE, (32 * 1024, 32 * 1024))
"""


@pytest.mark.cold_cache
def test_write_cut_short_by_the_file_size_limit_leaves_no_partial_file():
    result = run_python(LIMITED + LOADS + SUMMARY)
    assert result.returncode == 0, result.stderr
    limited = json.loads(result.stdout.strip().splitlines()[-1])
    assert "could not write cache file" in result.stderr and "File too large" in result.stderr
    assert limited["cache"] == "disabled" and limited["loads"] == ["FoldConstants"]
    assert_complete_files_only()
    assert not [p for p in cache_files() if p.name.startswith("index-")]
    unlimited, _ = summary()
    assert unlimited["cache"] == "miss" and unlimited["count"] == limited["count"]
    assert_complete_files_only()
