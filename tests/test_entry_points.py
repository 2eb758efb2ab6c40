"""Pip-installed plugin packages (entry points ``brainsmith.plugins``), built and installed for real."""

from __future__ import annotations

import json

import pytest

from tests.conftest import once
from tests.support.packages import PluginVenv, build_wheel, write_project

# the module fixture is made once: every test of the module on one worker
pytestmark = pytest.mark.xdist_group("entry-points")

GOOD = '''
from qonnx.transformation.base import Transformation
from brainsmith.plugin.core import kernel, step, transform


@transform(name="AcmeFold", stage="cleanup")
class AcmeFold(Transformation):
    """Folds the acme way."""

    def apply(self, model):
        model.set_metadata_prop("acme", "folded")
        return model, False


@kernel(name="AcmeKernel", description="a kernel from a package")
class AcmeKernel:
    pass


@step(name="acme_step")
def acme_step(model, cfg):
    """Runs AcmeFold."""
    return model.transform(AcmeFold())
'''

LIST = """
import json
from brainsmith.plugin.manager import get_plugin_manager
registry = get_plugin_manager().registry()
print(json.dumps({
    "specs": sorted([s.type, s.qualified_name] for s in registry.specs()
                    if s.framework.startswith("acme")),
    "health": get_plugin_manager().health_check(),
}))
"""


@pytest.fixture(scope="module")
def wheels(tmp_path_factory):
    root = tmp_path_factory.mktemp("projects")
    dist = root / "dist"
    return {
        "good": build_wheel(write_project(root, "acme-fpga-plugins", "acme_plugins", GOOD), dist),
        "import_error": build_wheel(
            write_project(root, "acme-broken", "acme_broken", "import acme_missing_dependency\n"),
            dist,
        ),
        "bad_metadata": build_wheel(
            write_project(
                root,
                "acme-badmeta",
                "acme_badmeta",
                """
            from brainsmith.plugin.core import backend
            @backend(name="B", kernel="k", backend_type="verilog")
            class B:
                pass
            """,
            ),
            dist,
        ),
        "missing_module": build_wheel(
            write_project(
                root, "acme-ghost", "acme_ghost", "", entry_points={"plugins": "acme_ghost.nowhere"}
            ),
            dist,
        ),
    }


@pytest.fixture
def venv(tmp_path):
    return PluginVenv(tmp_path / "venv")


@pytest.fixture
def good_venv(tmp_path_factory, wheels) -> PluginVenv:
    """One virtualenv holding the good package, for the tests that only read it (each with a
    cache of its own)."""

    def make() -> PluginVenv:
        made = PluginVenv(tmp_path_factory.mktemp("good-venv") / "venv")
        made.install(wheels["good"])
        return made

    return once("entry-points good venv", make)


def listing(venv: PluginVenv, tmp_path) -> dict:
    result = venv.run(LIST, env={"BRAINSMITH_CACHE_DIR": str(tmp_path / "cache")}, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_installed_package_plugins_use_the_distribution_name(good_venv, tmp_path):
    venv = good_venv
    specs = listing(venv, tmp_path)["specs"]
    assert specs == [
        ["kernel", "acme-fpga-plugins:AcmeKernel"],
        ["step", "acme-fpga-plugins:acme_step"],
        ["transform", "acme-fpga-plugins:AcmeFold"],
    ]


def test_plugins_info_names_a_package_plugins_file_and_line(good_venv, tmp_path):
    venv = good_venv
    result = venv.run(
        """
        import sys
        from brainsmith.cli import main
        sys.argv = ["brainsmith", "plugins", "info", "AcmeFold"]
        main()
    """,
        env={"BRAINSMITH_CACHE_DIR": str(tmp_path / "cache"), "COLUMNS": "300"},
    )
    assert result.returncode == 0, result.stderr
    source = next(line for line in result.stdout.splitlines() if line.strip().startswith("source"))
    assert source.rstrip().endswith("acme_plugins/__init__.py:6"), source  # @transform(...)


def test_package_plugins_work_through_the_collections(good_venv, tmp_path):
    venv = good_venv
    result = venv.run(
        """
        from brainsmith.plugins import transforms, steps
        print(transforms.AcmeFold.__module__, transforms.acme_fpga_plugins.AcmeFold is transforms.AcmeFold,
              steps.acme_step.__name__)
    """,
        env={"BRAINSMITH_CACHE_DIR": str(tmp_path / "cache")},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["acme_plugins", "True", "acme_step"]


@pytest.mark.parametrize(
    ("broken", "dist", "reason"),
    [
        ("import_error", "acme-broken", "acme_missing_dependency"),
        ("bad_metadata", "acme-badmeta", "'backend_type' must be 'hls' or 'rtl'"),
        ("missing_module", "acme-ghost", "acme_ghost.nowhere"),
    ],
)
def test_broken_package_is_reported_and_others_keep_working(
    venv, wheels, tmp_path, broken, dist, reason
):
    venv.install(wheels["good"], wheels[broken])
    data = listing(venv, tmp_path)
    assert ["transform", "acme-fpga-plugins:AcmeFold"] in data["specs"]
    health = data["health"]
    assert health["status"] == "degraded"
    assert any(dist in p["plugin"] and reason in p["reason"] for p in health["broken_plugins"])


def test_new_install_and_uninstall_invalidate_the_warm_index(venv, wheels, tmp_path):
    assert listing(venv, tmp_path)["specs"] == []
    venv.install(wheels["good"])
    assert len(listing(venv, tmp_path)["specs"]) == 3
    venv.uninstall("acme-fpga-plugins")
    assert listing(venv, tmp_path)["specs"] == []
