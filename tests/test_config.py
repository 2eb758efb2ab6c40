"""Configuration: environment > project file > defaults; bad values name the key."""

from __future__ import annotations

import pytest

from brainsmith.plugin.errors import ConfigError
from brainsmith.plugin.settings.config import load_config
from tests.support.processes import invoke


def write_config(tmp_path, monkeypatch, text: str):
    path = tmp_path / "config.yaml"
    path.write_text(text)
    monkeypatch.setenv("BRAINSMITH_CONFIG", str(path))
    return path


def test_defaults():
    config = load_config()
    assert config.cache_ttl == 300
    assert config.framework_priority[:2] == ("brainsmith", "user")
    assert config.framework_priority[-2:] == ("finn", "qonnx")


def test_project_file_values_are_used(tmp_path, monkeypatch):
    write_config(
        tmp_path,
        monkeypatch,
        "plugin_system:\n  cache_ttl: 12\n"
        "  frameworks: [brainsmith, qonnx]\n  performance_tracking: false\n",
    )
    config = load_config()
    assert config.cache_ttl == 12
    assert config.frameworks == ("brainsmith", "qonnx")
    assert config.performance_tracking is False


def test_environment_overrides_project_file(tmp_path, monkeypatch):
    write_config(tmp_path, monkeypatch, "plugin_system:\n  cache_ttl: 12\n")
    monkeypatch.setenv("BRAINSMITH_PLUGIN_CACHE_TTL", "7")
    monkeypatch.setenv("BRAINSMITH_PLUGIN_DEBUG", "1")
    config = load_config()
    assert (config.cache_ttl, config.debug) == (7, True)


def test_bad_env_value_names_variable_and_allowed_values(monkeypatch):
    monkeypatch.setenv("BRAINSMITH_PLUGIN_DEBUG", "maybe")
    with pytest.raises(ConfigError) as err:
        load_config()
    assert "BRAINSMITH_PLUGIN_DEBUG" in str(err.value)
    assert "true or false" in str(err.value)


def test_bad_file_value_names_file_and_key(tmp_path, monkeypatch):
    path = write_config(tmp_path, monkeypatch, "plugin_system:\n  cache_ttl: -5\n")
    with pytest.raises(ConfigError) as err:
        load_config()
    assert str(path) in str(err.value) and "plugin_system.cache_ttl" in str(err.value)
    assert "seconds >= 0" in str(err.value)


def test_unknown_key_is_an_error_with_the_allowed_keys(tmp_path, monkeypatch):
    write_config(tmp_path, monkeypatch, "plugin_system:\n  cache_tll: 5\n")
    with pytest.raises(
        ConfigError, match=r"unknown key plugin_system.cache_tll; allowed keys: cache_ttl"
    ):
        load_config()


NO_MODES = (
    "discovery modes are gone (every discovery reads the one index and imports a plugin only "
    "when it is used); to narrow what is registered, set plugin_system.frameworks"
)


def test_the_removed_discovery_mode_key_is_refused_with_what_to_write_instead(
    tmp_path, monkeypatch
):
    path = write_config(tmp_path, monkeypatch, "plugin_system:\n  discovery_mode: full\n")
    with pytest.raises(ConfigError) as err:
        load_config()
    assert str(err.value) == (
        f"{path}: plugin_system.discovery_mode is no longer a setting: delete it; {NO_MODES}"
    )
    assert (err.value.file, err.value.key) == (str(path), "plugin_system.discovery_mode")


def test_the_removed_discovery_mode_variable_is_refused_with_what_to_do_instead(monkeypatch):
    monkeypatch.setenv("BRAINSMITH_PLUGIN_MODE", "blueprint")
    with pytest.raises(ConfigError) as err:
        load_config()
    assert str(err.value) == (
        f"environment variable BRAINSMITH_PLUGIN_MODE is no longer read: unset it; {NO_MODES}"
    )
    assert err.value.file == "BRAINSMITH_PLUGIN_MODE"


def test_the_command_line_names_a_removed_setting_without_a_traceback(tmp_path, monkeypatch):
    path = write_config(tmp_path, monkeypatch, "plugin_system:\n  discovery_mode: blueprint\n")
    result = invoke("plugins", "list")
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith(f"error: {path}: plugin_system.discovery_mode is no longer")
    assert "Traceback" not in result.stderr


def test_invalid_yaml_names_line_and_column(tmp_path, monkeypatch):
    path = write_config(tmp_path, monkeypatch, "plugin_system:\n  cache_ttl: [1\n")
    with pytest.raises(ConfigError, match=rf"{path}:\d+:\d+: invalid YAML"):
        load_config()


def test_python_tags_are_refused(tmp_path, monkeypatch):
    write_config(tmp_path, monkeypatch, "plugin_system: !!python/object/apply:os.system ['true']\n")
    with pytest.raises(ConfigError, match="not allowed"):
        load_config()


def test_parsed_project_file_is_memoised_and_refreshed_on_edit(tmp_path, monkeypatch):
    path = write_config(tmp_path, monkeypatch, "plugin_system:\n  cache_ttl: 12\n")
    assert load_config().cache_ttl == 12
    path.write_text("plugin_system:\n  cache_ttl: 34\n")
    assert load_config().cache_ttl == 34
