"""Configuration keys do what the docs say (issue case 9): ``performance_tracking: false`` turns
statistics off; a framework left out of ``frameworks`` is reported as disabled by configuration,
never as "not installed"."""

from __future__ import annotations

import pytest

from brainsmith.blueprint import BlueprintError, load_blueprint
from brainsmith.plugin.errors import PluginNotFoundError
from brainsmith.plugin.manager import get_plugin_manager, reset_plugin_system
from brainsmith.plugins import transforms

TRACKED = {"discovery_time_ms", "cache_hit_rate", "index_cache", "source_timings_ms", "discoveries"}


def use_config(tmp_path, monkeypatch, text: str):
    path = tmp_path / "project" / ".brainsmith" / "config.yaml"
    path.parent.mkdir(parents=True)
    path.write_text(text)
    monkeypatch.setenv("BRAINSMITH_CONFIG", str(path))
    reset_plugin_system()
    return path


def use_the_hub() -> dict:
    manager = get_plugin_manager()
    manager.discover_plugins()
    manager.discover_plugins(types=["kernel"])
    assert transforms.qonnx.FoldConstants.__name__ == "FoldConstants"
    return manager.get_performance_stats()


def test_performance_tracking_off_collects_no_statistics(tmp_path, monkeypatch):
    use_config(tmp_path, monkeypatch, "plugin_system:\n  performance_tracking: false\n")
    stats = use_the_hub()
    assert stats["performance_tracking"] is False
    assert not TRACKED & set(stats), sorted(TRACKED & set(stats))
    assert stats["plugin_count"] >= 400


def test_performance_tracking_on_collects_statistics(tmp_path, monkeypatch):
    use_config(tmp_path, monkeypatch, "plugin_system:\n  performance_tracking: true\n")
    stats = use_the_hub()
    assert stats["performance_tracking"] is True
    assert set(stats) >= TRACKED and stats["discoveries"] >= 1


DISABLED = "plugin_system:\n  frameworks: [brainsmith, qonnx]\n"


def test_a_disabled_framework_namespace_says_it_is_disabled_by_configuration(tmp_path, monkeypatch):
    path = use_config(tmp_path, monkeypatch, DISABLED)
    with pytest.raises(PluginNotFoundError) as caught:
        transforms.finn.Streamline  # noqa: B018
    message = str(caught.value)
    assert "framework 'finn' is disabled by configuration" in message
    assert f"plugin_system.frameworks in {path}" in message
    assert "not installed" not in message


def test_a_disabled_framework_is_reported_as_disabled_by_health_and_lookups(tmp_path, monkeypatch):
    use_config(tmp_path, monkeypatch, DISABLED)
    manager = get_plugin_manager()
    health = manager.health_check()
    assert "disabled by configuration" in health["missing_frameworks"]["finn"]
    assert health["disabled_frameworks"] == ["finn", "user"]  # both left out of the list
    with pytest.raises(PluginNotFoundError, match="disabled by configuration"):
        manager.registry().find("transform", "finn:Streamline")


def test_a_blueprint_naming_a_disabled_framework_says_so(tmp_path, monkeypatch):
    use_config(tmp_path, monkeypatch, DISABLED)
    blueprint = tmp_path / "bp.yaml"
    blueprint.write_text("name: x\nhw_compiler:\n  transforms: [finn:Streamline]\n")
    with pytest.raises(BlueprintError) as caught:
        load_blueprint(blueprint)
    assert "framework 'finn' is disabled by configuration" in str(caught.value)
    assert "not installed" not in str(caught.value)
