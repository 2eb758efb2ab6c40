"""Modules of plugin folders get unique names, a package per folder (issue case 8): a plugin file
named like a standard-library module and two folders with a module of one name all load; real
clashes are reported by health."""

from __future__ import annotations

import sys

import pytest

from brainsmith.plugin.manager import get_plugin_manager, reset_plugin_system
from brainsmith.plugins import transforms
from tests.support.plugins import PLUGIN


def plugin(name: str, prelude: str = "") -> str:
    return PLUGIN.format(name=name, prelude=prelude)


@pytest.fixture
def two_folders(tmp_path, monkeypatch):
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    monkeypatch.setenv("BRAINSMITH_PLUGIN_DIRS", f"{first}:{second}")
    reset_plugin_system()
    return first, second


def broken(health: dict) -> list[str]:
    return [f"{p['plugin']}: {p['reason']}" for p in health["broken_plugins"]]


def test_plugin_file_named_like_a_standard_library_module_loads(plugin_folder):
    plugin_folder("csv.py", plugin("CsvT"))
    assert transforms.CsvT.__name__ == "CsvT"
    assert sys.modules["csv"].__file__.startswith(sys.base_prefix)  # the stdlib's csv is intact
    health = get_plugin_manager().health_check()
    assert health["status"] == "healthy", broken(health)


def test_two_folders_with_a_module_of_one_name_both_load(two_folders):
    first, second = two_folders
    (first / "shared.py").write_text(plugin("SharedA"))
    (second / "shared.py").write_text(plugin("SharedB"))
    assert transforms.SharedA.__name__ == "SharedA"
    assert transforms.SharedB.__name__ == "SharedB"
    assert transforms.SharedA.__module__ != transforms.SharedB.__module__
    health = get_plugin_manager().health_check()
    assert health["status"] == "healthy", broken(health)


def test_sibling_modules_import_each_other_by_plain_and_relative_name(plugin_folder):
    plugin_folder("helpers.py", "SCALE = 3\n")
    prelude = "import helpers\nfrom . import helpers as relative\nassert helpers is relative\n"
    plugin_folder("scaled.py", plugin("Scaled", prelude) + "\nScaled.scale = helpers.SCALE\n")
    assert transforms.Scaled.scale == 3


def test_a_plugin_folder_package_keeps_its_own_init(plugin_folder):
    plugin_folder("__init__.py", "FOLDER_VALUE = 7\n")
    plugin_folder("uses_init.py", plugin("UsesInit", "from . import FOLDER_VALUE"))
    assert transforms.UsesInit.__name__ == "UsesInit"


def test_one_qualified_name_in_two_folders_is_reported_as_a_clash(two_folders):
    first, second = two_folders
    (first / "shared.py").write_text(plugin("Same"))
    (second / "shared.py").write_text(plugin("Same"))
    health = get_plugin_manager().health_check()
    assert health["status"] == "degraded"
    assert any("user:Same is defined twice" in line for line in broken(health)), broken(health)


def test_plain_import_of_a_name_the_standard_library_owns_is_reported(plugin_folder):
    plugin_folder("csv.py", plugin("CsvT"))
    plugin_folder("reader.py", plugin("Reader", "import csv"))
    health = get_plugin_manager().health_check()
    lines = broken(health)
    assert any(
        "reader.py" in line
        and "`import csv` gets the standard library's csv" in line
        and "from . import csv" in line
        for line in lines
    ), lines


def test_plain_import_of_a_name_two_folders_provide_is_reported(two_folders):
    first, second = two_folders
    (first / "shared.py").write_text("WHO = 'first'\n")
    (second / "shared.py").write_text("WHO = 'second'\n")
    (second / "user.py").write_text(plugin("UsesShared", "import shared"))
    lines = broken(get_plugin_manager().health_check())
    assert any("user.py" in line and f"gets {first / 'shared.py'}" in line for line in lines), lines
