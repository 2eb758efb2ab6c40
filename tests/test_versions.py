"""Versions: VersionInfo, and plugins that need another brainsmith say so everywhere."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

import brainsmith
from brainsmith.cli import cli
from brainsmith.plugin import PluginLoadError
from brainsmith.plugin.lifecycle import VersionInfo
from brainsmith.plugin.lifecycle.versions import incompatibility, package_metadata
from brainsmith.plugin.manager import get_plugin_manager
from brainsmith.plugins import transforms

TOO_NEW = """
from qonnx.transformation.base import Transformation
from brainsmith.plugin import transform


@transform(name="FutureFold", min_brainsmith_version="99.0")
class FutureFold(Transformation):
    def apply(self, model):
        return model, False
"""
REASON = f"needs brainsmith >= 99.0.0, this is {brainsmith.__version__}"


def test_current_is_the_package_version():
    assert str(VersionInfo.current()) == brainsmith.__version__


def test_versions_order_by_major_minor_patch():
    assert VersionInfo(0, 9, 9) < VersionInfo(1, 0, 0) < VersionInfo(1, 0, 1) < VersionInfo(1, 1)
    assert VersionInfo.parse("1.2") == VersionInfo(1, 2, 0)


def test_str_and_repr():
    assert str(VersionInfo(1, 2, 3)) == "1.2.3"
    assert repr(VersionInfo(1, 2, 3)) == "VersionInfo(1, 2, 3)"


def test_compatible_means_same_major_and_not_older():
    current = VersionInfo(1, 4, 0)
    assert current.is_compatible_with(VersionInfo(1, 2, 0))
    assert not current.is_compatible_with(VersionInfo(1, 5, 0))
    assert not current.is_compatible_with(VersionInfo(0, 1, 0))


def test_invalid_version_parts_are_rejected():
    with pytest.raises(ValueError, match="non-negative"):
        VersionInfo(1, -1)
    with pytest.raises(ValueError, match="not a version: 'one'"):
        VersionInfo.parse("one")


def test_minimum_above_current_is_incompatible():
    assert incompatibility({"min_brainsmith_version": "99.0"}) == REASON


def test_maximum_below_current_is_incompatible():
    assert incompatibility({"max_brainsmith_version": "0.0.1"}).startswith(
        "needs brainsmith <= 0.0.1"
    )


def test_pep440_specifier_is_honoured():
    assert incompatibility({"brainsmith_version": ">=0.1,<99"}) is None
    assert "needs brainsmith >=50" in incompatibility({"brainsmith_version": ">=50"})


def test_minimum_alone_means_the_same_major_version():
    reason = incompatibility({"min_brainsmith_version": "1.2"}, version="2.0.0")
    assert reason.startswith("needs brainsmith 1.x (>= 1.2.0), this is 2.0.0")
    assert incompatibility({"min_brainsmith_version": "1.2"}, version="1.9.0") is None


def test_minimum_with_maximum_allows_the_whole_range():
    declared = {"min_brainsmith_version": "0.0.1", "max_brainsmith_version": "9"}
    assert incompatibility(declared) is None


def test_package_metadata_rejects_unknown_keys_and_bad_versions():
    _, problems = package_metadata({"min_brainsmith_version": "x.y", "colour": "red"}, "pkg")
    assert any("'min_brainsmith_version' must be a version" in p for p in problems)
    assert any("unknown key 'colour'" in p for p in problems)


def test_incompatible_folder_plugin_is_listed_with_all_and_says_why(plugin_folder):
    plugin_folder("future.py", TOO_NEW)
    result = CliRunner().invoke(cli, ["plugins", "list", "--all", "--json", "-f", "user"])
    assert result.exit_code == 0, result.output
    # (plugins decorated at import elsewhere in this process are user plugins too)
    [entry] = [e for e in json.loads(result.output) if e["name"] == "FutureFold"]
    assert entry["error"] == f"unavailable: {REASON}"


def test_incompatible_plugin_is_hidden_from_the_default_listing(plugin_folder):
    plugin_folder("future.py", TOO_NEW)
    plugin_folder(
        "present.py",
        TOO_NEW.replace("FutureFold", "PresentFold").replace(', min_brainsmith_version="99.0"', ""),
    )
    result = CliRunner().invoke(cli, ["plugins", "list", "--json", "-f", "user"])
    assert [e["name"] for e in json.loads(result.output)] == ["PresentFold"]


def test_plugins_info_shows_why_it_is_unavailable(plugin_folder):
    plugin_folder("future.py", TOO_NEW)
    result = CliRunner().invoke(cli, ["plugins", "info", "FutureFold"])
    assert result.exit_code == 0, result.output
    assert REASON in result.output


def test_health_check_lists_the_incompatible_plugin(plugin_folder):
    plugin_folder("future.py", TOO_NEW)
    health = get_plugin_manager().health_check()
    assert health["status"] == "degraded"
    [broken] = [p for p in health["broken_plugins"] if "FutureFold" in p["plugin"]]
    assert broken["reason"] == f"unavailable: {REASON}"


def test_using_an_incompatible_plugin_fails_with_the_reason(plugin_folder):
    plugin_folder("future.py", TOO_NEW)
    with pytest.raises(PluginLoadError, match="transform user:FutureFold is unavailable: needs"):
        transforms.FutureFold  # noqa: B018


def test_incompatible_plugin_module_is_not_imported(plugin_folder):
    plugin_folder("future.py", TOO_NEW + "\nimport sys\nsys.future_was_imported = True\n")
    import sys

    with pytest.raises(PluginLoadError):
        transforms.FutureFold  # noqa: B018
    assert not hasattr(sys, "future_was_imported")


def test_decorating_at_runtime_with_an_incompatible_version_marks_it_unavailable():
    from brainsmith.plugin import step

    @step(name="future_step", max_brainsmith_version="0.0.1")
    def future_step(model, cfg):
        return model

    spec = get_plugin_manager().registry().find("step", "future_step")
    assert spec.error.startswith("unavailable: needs brainsmith <= 0.0.1")
    with pytest.raises(PluginLoadError, match="future_step is unavailable"):
        get_plugin_manager().registry().load(spec)


def test_pip_package_declaring_a_newer_brainsmith_is_unavailable(tmp_path):
    from tests.support.packages import PluginVenv, build_wheel, write_project

    source = 'BRAINSMITH_PLUGIN = {"min_brainsmith_version": "99.0"}\n' + TOO_NEW.replace(
        ', min_brainsmith_version="99.0"', ""
    )
    project = write_project(tmp_path, "acme-future", "acme_future", source)
    venv = PluginVenv(tmp_path / "venv")
    venv.install(build_wheel(project, tmp_path / "dist"))
    result = venv.run(
        """
        import json
        from brainsmith.plugin.manager import get_plugin_manager
        from brainsmith.plugins import transforms
        spec = transforms.get_spec("acme-future:FutureFold")
        try:
            transforms.FutureFold
        except ImportError as exc:
            used = str(exc)
        health = get_plugin_manager().health_check()["broken_plugins"]
        print(json.dumps({"error": spec.error, "used": used, "health": health}))
        """,
        env={"BRAINSMITH_CACHE_DIR": str(tmp_path / "cache")},
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["error"] == f"unavailable: {REASON}"
    assert data["used"] == f"transform acme-future:FutureFold is unavailable: {REASON}"
    assert any(REASON in p["reason"] for p in data["health"])
