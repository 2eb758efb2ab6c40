"""Plugin packages read from source (entry point group ``brainsmith.plugin_packages``):
listed without importing them, imported when a plugin is used, edits and broken files
noticed like in a plugin folder; built as wheels and pip-installed for real."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.conftest import run_python
from tests.support.packages import build_wheel, pip_install_target, write_project

GROUP = "brainsmith.plugin_packages"
INIT = '"""Acme\'s layers: nothing is imported here."""\n'
TRANSFORMS = '''
import sys

from qonnx.transformation.base import Transformation

from brainsmith.plugin import transform

sys.modules["acme_lazy"].imported = True


@transform(name="AcmeTag", stage="cleanup")
class AcmeTag(Transformation):
    """Tags the model."""

    def apply(self, model):
        model.set_metadata_prop("acme", "tagged")
        return model, False
'''

LIST = """
import json, sys
from brainsmith.plugin.manager import get_plugin_manager

manager = get_plugin_manager()
registry = manager.registry()
print(json.dumps({
    "specs": sorted(s.qualified_name for s in registry.specs() if s.framework == "acme-lazy"),
    "imported": sorted(m for m in sys.modules if m.startswith("acme_lazy")),
    "problems": [[p.plugin, p.reason] for p in registry.problems],
}))
"""


def install(root: Path, dist: str, module: str, files: dict, value: str | None = None) -> dict:
    project = write_project(
        root / "src", dist, module, INIT, {module: value or module}, files, group=GROUP
    )
    site = root / "site"
    pip_install_target(build_wheel(project, root / "dist"), site)
    path = os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))
    return {"site": site, "env": {"PYTHONPATH": path}}


def listed(env: dict) -> dict:
    result = run_python(LIST, env=env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.fixture
def package(tmp_path) -> dict:
    return install(tmp_path, "acme-lazy", "acme_lazy", {"transforms.py": TRANSFORMS})


def test_plugins_are_listed_without_importing_the_package(package):
    found = listed(package["env"])
    assert found["specs"] == ["acme-lazy:AcmeTag"]
    assert found["imported"] == []
    assert not [p for p in found["problems"] if "acme" in p[0]]


def test_using_a_plugin_imports_its_module(package):
    result = run_python(
        """
        import sys
        from brainsmith.plugins import transforms
        tag = transforms.AcmeTag()
        assert sys.modules["acme_lazy"].imported is True
        print(type(tag).__module__)
        """,
        env=package["env"],
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "acme_lazy.transforms"


def test_an_edited_installed_file_is_read_again(package):
    assert listed(package["env"])["specs"] == ["acme-lazy:AcmeTag"]
    module = package["site"] / "acme_lazy" / "transforms.py"
    module.write_text(module.read_text().replace('name="AcmeTag"', 'name="AcmeMark"'))
    assert listed(package["env"])["specs"] == ["acme-lazy:AcmeMark"]


def test_a_broken_file_is_reported_by_path_and_the_others_are_kept(tmp_path):
    files = {"transforms.py": TRANSFORMS, "broken.py": "def oops(:\n"}
    env = install(tmp_path, "acme-lazy", "acme_lazy", files)["env"]
    found = listed(env)
    assert found["specs"] == ["acme-lazy:AcmeTag"]
    assert any("broken.py" in plugin for plugin, _ in found["problems"])


@pytest.mark.parametrize(
    ("value", "reason"),
    [("acme_lazy.transforms", "is not one"), ("acme_elsewhere", "no package acme_elsewhere")],
)
def test_an_entry_point_that_names_no_package_is_reported(tmp_path, value, reason):
    env = install(tmp_path, "acme-lazy", "acme_lazy", {"transforms.py": TRANSFORMS}, value)["env"]
    found = listed(env)
    assert found["specs"] == []
    assert any(value in plugin and reason in why for plugin, why in found["problems"]), found
