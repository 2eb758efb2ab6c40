"""User plugin folders: discovered from source without importing, imported on first use."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from brainsmith.plugin.discovery.folders import package_name
from brainsmith.plugin.manager import get_plugin_manager
from brainsmith.plugins import steps, transforms
from tests.conftest import run_python

IDENTITY = """
from qonnx.transformation.base import Transformation
from brainsmith.plugin.core import transform

@transform(name="{name}", stage="cleanup", description="identity for tests")
class {name}(Transformation):
    def apply(self, model):
        return model, False
"""


def test_folder_plugin_is_listed_without_importing_its_module(plugin_folder):
    plugin_folder("lazy_mod.py", IDENTITY.format(name="LazyOne"))
    assert "LazyOne" in transforms.list_plugins()
    assert "lazy_mod" not in sys.modules
    spec = get_plugin_manager().registry().find("transform", "LazyOne")
    assert spec.framework == "user" and spec.metadata["stage"] == "cleanup"
    assert spec.source.endswith("lazy_mod.py") and spec.metadata["line"] == 5


def test_folder_plugin_is_imported_on_first_use(plugin_folder):
    plugin_folder("used_mod.py", IDENTITY.format(name="UsedOne"))
    module = f"{package_name(str(plugin_folder.folder))}.used_mod"  # a package per folder
    assert module not in sys.modules
    cls = transforms.UsedOne
    assert module in sys.modules
    assert cls.__name__ == "UsedOne" and cls.__module__ == module
    assert transforms.user.UsedOne is cls


def test_nested_package_modules_are_scanned(plugin_folder):
    plugin_folder("pkg/__init__.py", "")
    plugin_folder("pkg/deep.py", IDENTITY.format(name="DeepOne"))
    package = package_name(str(plugin_folder.folder))
    assert transforms.get_spec("DeepOne").target == f"{package}.pkg.deep:DeepOne"


def test_steps_in_folders_are_found(plugin_folder):
    plugin_folder(
        "my_steps.py",
        """
        from brainsmith.plugin.core import step

        @step(name="my_step", description="does little")
        def my_step(model, cfg):
            return model
    """,
    )
    assert steps.my_step.__name__ == "my_step"


def test_syntax_error_in_one_file_leaves_the_others_working(plugin_folder):
    plugin_folder("good.py", IDENTITY.format(name="GoodOne"))
    plugin_folder("broken.py", "def oops(:\n")
    assert "GoodOne" in transforms.list_plugins()
    health = get_plugin_manager().health_check()
    assert health["status"] == "degraded"
    assert any(
        "broken.py" in p["plugin"] and "syntax error" in p["reason"]
        for p in health["broken_plugins"]
    )


def test_files_that_cannot_be_scanned_are_named_and_the_others_work(plugin_folder, tmp_path):
    """A FIFO, a file linked to /dev/zero, an unhashable metadata literal and 150 KB of
    nested subscripts: each is named with its reason within seconds, the good plugin works."""
    import os

    plugin_folder("good.py", IDENTITY.format(name="GoodOne"))
    os.mkfifo(plugin_folder.folder / "pipe.py")
    os.symlink("/dev/zero", plugin_folder.folder / "zero.py")
    plugin_folder(
        "unhashable.py",
        """
        from brainsmith.plugin.core import transform

        @transform(name="Odd", description={[1]: 2})
        class Odd:
            pass
        """,
    )
    plugin_folder("deep.py", "x = a" + "[0]" * 50_000 + "\n")
    result = run_python(
        """
        import json
        from brainsmith.plugins import transforms
        from brainsmith.plugin.manager import get_plugin_manager
        print(json.dumps([transforms.list_plugins(),
                          get_plugin_manager().health_check()["broken_plugins"]]))
        """,
        env={"BRAINSMITH_PLUGIN_DIRS": str(plugin_folder.folder),
             "BRAINSMITH_CACHE_DIR": str(tmp_path / "cache")},
        timeout=60,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    listed, broken = json.loads(result.stdout.splitlines()[-1])
    assert "GoodOne" in listed
    reasons = {Path(p["plugin"]).name: p["reason"] for p in broken}
    assert "not a regular file" in reasons["pipe.py"], reasons
    assert "not a regular file" in reasons["zero.py"], reasons
    assert "unhashable" in reasons["unhashable.py"], reasons
    assert "nested too deeply" in reasons["deep.py"], reasons


def test_invalid_metadata_in_source_is_reported_not_registered(plugin_folder):
    plugin_folder(
        "bad_meta.py",
        """
        from brainsmith.plugin.core import backend

        @backend(name="NoKernel", backend_type="hls")
        class NoKernel:
            pass
    """,
    )
    assert "NoKernel" not in get_plugin_manager().registry().specs("backend")
    broken = get_plugin_manager().health_check()["broken_plugins"]
    assert any(p["plugin"] == "NoKernel" and "'kernel' is required" in p["reason"] for p in broken)


def test_non_literal_metadata_is_reported_with_the_fix(plugin_folder):
    plugin_folder(
        "dynamic.py",
        """
        from qonnx.transformation.base import Transformation
        from brainsmith.plugin.core import transform
        STAGE = "cleanup"

        @transform(name="Dyn", stage=STAGE)
        class Dyn(Transformation):
            def apply(self, model):
                return model, False
    """,
    )
    broken = get_plugin_manager().health_check()["broken_plugins"]
    assert any("must be a literal value" in p["reason"] for p in broken)


def test_import_error_of_plugin_dependency_is_clear_on_use(plugin_folder):
    plugin_folder(
        "needs_dep.py",
        """
        import not_installed_dependency_abc
        from brainsmith.plugin.core import transform
        @transform(name="NeedsDep")
        class NeedsDep:
            pass
    """,
    )
    import pytest

    from brainsmith.plugin.errors import PluginLoadError

    with pytest.raises(PluginLoadError) as err:
        transforms.NeedsDep  # noqa: B018
    assert "not_installed_dependency_abc" in str(err.value)
    assert "pip install not_installed_dependency_abc" in str(err.value)


def test_plugin_dirs_from_project_config_are_relative_to_the_project(tmp_path):
    project = tmp_path / "proj"
    (project / ".brainsmith").mkdir(parents=True)
    (project / "plugins").mkdir()
    (project / "plugins" / "cfg_mod.py").write_text(IDENTITY.format(name="FromConfig"))
    (project / ".brainsmith" / "config.yaml").write_text(
        "plugin_system:\n  plugin_dirs: [plugins]\n"
    )
    result = run_python(
        "from brainsmith.plugins import transforms; print(transforms.FromConfig.__module__)",
        env={"BRAINSMITH_CONFIG": ""},
        cwd=project / "plugins",
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"{package_name(str(project / 'plugins'))}.cfg_mod"
