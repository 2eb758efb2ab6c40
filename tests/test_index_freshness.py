"""The index is never stale: every change that decides its content is seen, within the TTL, by
a new process and by a long-running one (issue cases 1-6). Packages are real wheels installed
with pip into real virtualenvs and folders; plugin files are real files."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import textwrap
import time

import pytest

from brainsmith.plugin.manager import get_plugin_manager, reset_plugin_system
from brainsmith.plugins import transforms
from tests.conftest import run_python
from tests.support.packages import PluginVenv, build_wheel, pip_install_target, write_project

# the module fixture is made once: every test of the module on one worker
pytestmark = pytest.mark.xdist_group("index-freshness")

PLUGINS = """
from qonnx.transformation.base import Transformation
from brainsmith.plugin.core import transform
{imports}

{body}
"""
TRANSFORM = '''
@transform(name="{name}")
class {name}(Transformation):
    """{name} of the acme package."""

    def apply(self, model):
        return model, False
'''

VIEW = """
import json
from brainsmith.plugin.manager import get_plugin_manager
manager = get_plugin_manager()
registry = manager.registry()
loads = {}
for spec in sorted(registry.specs("transform"), key=lambda s: s.qualified_name):
    if spec.framework.startswith("acme") or spec.framework == "user":
        try:
            loads[spec.qualified_name] = registry.load(spec).__name__
        except Exception as exc:
            loads[spec.qualified_name] = f"{type(exc).__name__}: {exc}"
health = manager.health_check()
print(json.dumps({
    "acme": sorted(s.qualified_name for s in registry.specs() if s.framework.startswith("acme")),
    "user": sorted(s.name for s in registry.specs(framework="user")),
    "loads": loads,
    "status": health["status"],
    "broken": [p["plugin"] + ": " + p["reason"] for p in health["broken_plugins"]],
    "cache": manager.get_performance_stats()["index_cache"],
}))
"""


def acme_source(*names: str, imports: str = "") -> str:
    return PLUGINS.format(
        imports=imports, body="".join(TRANSFORM.format(name=name) for name in names)
    )


def parse(result: subprocess.CompletedProcess) -> dict:
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def view(env: dict | None = None) -> dict:
    """A new process's registry and health, in this test's interpreter."""
    return parse(run_python(VIEW, env=env))


def venv_view(venv: PluginVenv, env: dict | None = None) -> dict:
    return parse(venv.run(VIEW, env={**(env or {})}))


@pytest.fixture(scope="module")
def wheels(tmp_path_factory):
    root = tmp_path_factory.mktemp("projects")

    def wheel(folder: str, dist: str, module: str, source: str, **kwargs):
        project = write_project(root / folder, dist, module, source, **kwargs)
        return build_wheel(project, root / folder / "dist")

    return {
        "v1": wheel("v1", "acme-fpga-plugins", "acme_plugins", acme_source("AcmeFold", "AcmeKeep")),
        # the same version, rebuilt: AcmeFold removed, AcmeNew added
        "v1-rebuilt": wheel(
            "v1-rebuilt", "acme-fpga-plugins", "acme_plugins", acme_source("AcmeKeep", "AcmeNew")
        ),
        "needy": wheel(
            "needy", "acme-needy", "acme_needy", acme_source("AcmeNeedy", imports="import acme_dep")
        ),
        "dependency": wheel("dep", "acme-dep", "acme_dep", "VALUE = 1\n", entry_points={}),
    }


@pytest.fixture
def venv(tmp_path):
    return PluginVenv(tmp_path / "venv")


ACME = ["acme-fpga-plugins:AcmeFold", "acme-fpga-plugins:AcmeKeep"]


# -- 1. a sys.path entry added or removed ----------------------------------------------------------


def test_plugin_package_on_an_added_sys_path_entry_is_seen_within_the_ttl(tmp_path, wheels):
    target = tmp_path / "target"
    pip_install_target(wheels["v1"], target)
    assert view()["acme"] == []  # the warm index of this interpreter
    added = view({"PYTHONPATH": str(target)})
    assert added["acme"] == ACME
    assert added["loads"]["acme-fpga-plugins:AcmeFold"] == "AcmeFold"
    assert added["status"] == "healthy"


def test_plugins_of_a_removed_sys_path_entry_are_dropped_and_health_stays_true(tmp_path, wheels):
    target = tmp_path / "target"
    pip_install_target(wheels["v1"], target)
    assert view({"PYTHONPATH": str(target)})["acme"] == ACME
    removed = view()
    assert removed["acme"] == [] and removed["status"] == "healthy", removed
    assert view({"PYTHONPATH": str(target)})["acme"] == ACME  # and back again


def test_two_sys_paths_of_one_interpreter_each_see_their_own_plugins(tmp_path, wheels):
    first, second = tmp_path / "first", tmp_path / "second"
    pip_install_target(wheels["v1"], first)
    pip_install_target(wheels["v1-rebuilt"], second)
    for _ in range(2):
        assert view({"PYTHONPATH": str(first)})["acme"] == ACME
        assert view({"PYTHONPATH": str(second)})["acme"] == [
            "acme-fpga-plugins:AcmeKeep",
            "acme-fpga-plugins:AcmeNew",
        ]


# -- 2. reinstalls and edits in place --------------------------------------------------------------


@pytest.mark.parametrize("ttl", ["300", "0"])
def test_force_reinstall_of_the_same_version_shows_added_and_removed_plugins(venv, wheels, ttl):
    env = {"BRAINSMITH_PLUGIN_CACHE_TTL": ttl}
    venv.install(wheels["v1"])
    assert venv_view(venv, env)["acme"] == ACME
    venv.pip("install", "--no-deps", "--no-index", "--force-reinstall", str(wheels["v1-rebuilt"]))
    after = venv_view(venv, env)
    assert after["acme"] == ["acme-fpga-plugins:AcmeKeep", "acme-fpga-plugins:AcmeNew"]
    assert after["loads"]["acme-fpga-plugins:AcmeNew"] == "AcmeNew"
    assert after["status"] == "healthy"


def test_editing_an_installed_plugin_module_in_place_is_seen(venv, wheels):
    venv.install(wheels["v1"])
    assert venv_view(venv)["acme"] == ACME
    module = venv.site / "acme_plugins" / "__init__.py"
    module.write_text(acme_source("AcmeKeep", "AcmeEdited"))
    after = venv_view(venv)
    assert after["acme"] == ["acme-fpga-plugins:AcmeEdited", "acme-fpga-plugins:AcmeKeep"]
    assert after["loads"]["acme-fpga-plugins:AcmeEdited"] == "AcmeEdited"


def test_editing_an_editable_installed_plugin_module_is_seen(venv, tmp_path):
    project = write_project(
        tmp_path / "src", "acme-fpga-plugins", "acme_plugins", acme_source("AcmeFold", "AcmeKeep")
    )
    venv.pip("install", "--no-deps", "--no-build-isolation", "--no-index", "-e", str(project))
    assert venv_view(venv)["acme"] == ACME
    (project / "acme_plugins" / "__init__.py").write_text(acme_source("AcmeKeep", "AcmeEdited"))
    after = venv_view(venv)
    assert after["acme"] == ["acme-fpga-plugins:AcmeEdited", "acme-fpga-plugins:AcmeKeep"]
    assert after["loads"]["acme-fpga-plugins:AcmeEdited"] == "AcmeEdited"


# -- 3. a package that failed is retried ---------------------------------------------------------------


@pytest.mark.parametrize("ttl", ["300", "0"])
def test_package_missing_a_dependency_works_once_the_dependency_is_installed(venv, wheels, ttl):
    env = {"BRAINSMITH_PLUGIN_CACHE_TTL": ttl}
    venv.install(wheels["needy"])
    before = venv_view(venv, env)
    assert before["status"] == "degraded"
    assert any("acme-needy" in p and "acme_dep" in p for p in before["broken"]), before["broken"]
    venv.install(wheels["dependency"])
    after = venv_view(venv, env)
    assert after["acme"] == ["acme-needy:AcmeNeedy"]
    assert after["status"] == "healthy", after["broken"]


# -- 4. an incomplete installation ---------------------------------------------------------------------


def half_installed(venv: PluginVenv):
    """A ``.dist-info`` as an interrupted pip leaves it: entry points, but empty METADATA."""
    broken = venv.site / "acme_half-1.0.dist-info"
    broken.mkdir()
    (broken / "METADATA").write_text("")
    (broken / "entry_points.txt").write_text("[brainsmith.plugins]\nplugins = acme_half\n")
    return broken


def test_incomplete_dist_info_is_skipped_and_named_while_other_packages_work(venv, wheels):
    venv.install(wheels["v1"])
    broken = half_installed(venv)
    data = venv_view(venv)
    assert data["acme"] == ACME
    assert data["loads"]["acme-fpga-plugins:AcmeFold"] == "AcmeFold"
    assert data["status"] == "degraded"
    assert any(str(broken) in p and "METADATA" in p for p in data["broken"]), data["broken"]


def test_repairing_an_incomplete_installation_makes_the_hub_healthy_again(venv, wheels):
    venv.install(wheels["v1"])
    broken = half_installed(venv)
    assert venv_view(venv)["status"] == "degraded"
    shutil.rmtree(broken)
    after = venv_view(venv)
    assert after["acme"] == ACME and after["status"] == "healthy", after


# -- 5. plugin files and folders ------------------------------------------------------------------------

USER_PLUGIN = """
from qonnx.transformation.base import Transformation
from brainsmith.plugin.core import transform


@transform(name="{name}")
class {name}(Transformation):
    def apply(self, model):
        return model, False
"""


def test_same_size_edit_with_the_mtime_restored_is_seen(plugin_folder):
    path = plugin_folder("same_size.py", USER_PLUGIN.format(name="PlugA"))
    assert view()["user"] == ["PlugA"]
    before = path.stat()
    path.write_text(USER_PLUGIN.format(name="PlugB"))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert path.stat().st_size == before.st_size and path.stat().st_mtime_ns == before.st_mtime_ns
    after = view()
    assert after["user"] == ["PlugB"] and after["loads"]["user:PlugB"] == "PlugB"


def test_new_file_in_a_subfolder_that_held_no_python_files_is_seen(plugin_folder):
    plugin_folder("top.py", USER_PLUGIN.format(name="Top"))
    plugin_folder("notes/README.txt", "notes, no code yet\n")
    assert view()["user"] == ["Top"]
    plugin_folder("notes/later.py", USER_PLUGIN.format(name="Later"))
    assert view()["user"] == ["Later", "Top"]


def test_new_file_in_a_new_nested_folder_is_seen(plugin_folder):
    plugin_folder("top.py", USER_PLUGIN.format(name="Top"))
    assert view()["user"] == ["Top"]
    plugin_folder("deep/er/nested.py", USER_PLUGIN.format(name="Nested"))
    assert view()["user"] == ["Nested", "Top"]


# -- 6. a long-running process ------------------------------------------------------------------------------


def seen_by_lookups(condition, seconds: float = 120) -> bool:
    """Whether ``condition()`` (a lookup through the registry) holds within ``seconds``.

    The next check is due after the TTL or, when the last check found nothing, after ten
    times what that check cost (PluginManager._refresh): a loaded machine's slow check puts
    it later than any fixed sleep, so the lookups are repeated until one sees the change."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def user_names(registry) -> list[str]:
    return sorted(s.name for s in registry.specs(framework="user"))


def test_long_running_process_sees_new_and_deleted_plugin_files_after_the_ttl(
    plugin_folder, monkeypatch
):
    monkeypatch.setenv("BRAINSMITH_PLUGIN_CACHE_TTL", "0.2")
    reset_plugin_system()
    plugin_folder("first.py", USER_PLUGIN.format(name="First"))
    manager = get_plugin_manager()
    assert user_names(manager.discover_plugins()) == ["First"]
    second = plugin_folder("second.py", USER_PLUGIN.format(name="Second"))
    time.sleep(0.3)
    assert seen_by_lookups(lambda: user_names(manager.discover_plugins()) == ["First", "Second"])
    assert transforms.Second.__name__ == "Second"
    second.unlink()
    time.sleep(0.3)
    assert seen_by_lookups(lambda: user_names(manager.registry()) == ["First"])
    assert "Second" not in transforms


def test_long_running_process_sees_changes_on_its_next_lookup_after_the_ttl(
    plugin_folder, monkeypatch
):
    monkeypatch.setenv("BRAINSMITH_PLUGIN_CACHE_TTL", "0.2")
    reset_plugin_system()
    plugin_folder("first.py", USER_PLUGIN.format(name="First"))
    assert transforms.First.__name__ == "First"
    plugin_folder("second.py", USER_PLUGIN.format(name="Second"))
    time.sleep(0.3)
    assert seen_by_lookups(lambda: "Second" in transforms)  # lookups, not an explicit discovery
    assert transforms.Second.__name__ == "Second"


LONG_RUNNING = """
import json, sys, time
from brainsmith.plugin.manager import get_plugin_manager
manager = get_plugin_manager()
for line in sys.stdin:
    if line.strip() == "wait":
        time.sleep(0.6)
    registry = manager.discover_plugins()
    names = sorted(s.qualified_name for s in registry.specs() if s.framework.startswith("acme"))
    print(json.dumps(names), flush=True)
"""


def test_long_running_process_sees_a_package_installed_while_it_runs(venv, wheels, tmp_path):
    child = subprocess.Popen(
        [str(venv.python), "-c", textwrap.dedent(LONG_RUNNING)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "BRAINSMITH_PLUGIN_CACHE_TTL": "0.5"},
    )

    def ask(command: str) -> list:
        child.stdin.write(command + "\n")
        child.stdin.flush()
        line = child.stdout.readline()
        assert line, child.stderr.read()
        return json.loads(line)

    try:
        assert ask("now") == []
        venv.install(wheels["v1"])
        assert ask("wait") == ACME
        venv.uninstall("acme-fpga-plugins")
        assert ask("wait") == []
    finally:
        _, err = child.communicate(timeout=60)
    assert child.returncode == 0, err


# -- the working directory on sys.path ------------------------------------------------------------


def test_running_from_another_working_directory_reuses_the_index(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "notes.txt").write_text("no distributions here\n")
    view()
    assert parse(run_python(VIEW, cwd=elsewhere))["cache"] == "hit"


def test_a_plugin_distribution_in_the_working_directory_is_seen(tmp_path, wheels):
    project = tmp_path / "project"
    pip_install_target(wheels["v1"], project)  # ``python -c`` puts the working directory first
    assert view()["acme"] == []
    assert parse(run_python(VIEW, cwd=project))["acme"] == ACME


def test_long_running_process_keeps_loaded_plugins_when_no_python_file_changed(
    plugin_folder, monkeypatch
):
    monkeypatch.setenv("BRAINSMITH_PLUGIN_CACHE_TTL", "0.2")
    reset_plugin_system()
    plugin_folder("kept.py", USER_PLUGIN.format(name="Kept"))
    loaded = transforms.Kept
    (plugin_folder.folder / "__pycache__").mkdir()  # as Python's bytecode cache appears
    plugin_folder("notes/todo.txt", "a note, not code\n")
    time.sleep(0.3)
    assert not get_plugin_manager().refresh()
    assert transforms.Kept is loaded
