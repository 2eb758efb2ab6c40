"""One registry per process, one index per environment (issue case 7): ``types`` and
``frameworks`` are filtered views of the process's registry; nothing replaces it, so health,
loaded plugins and instances survive ``load_blueprint`` and filtered discoveries."""

from __future__ import annotations

import json
import os
import textwrap

import pytest

from brainsmith.blueprint import load_blueprint, load_blueprint_plugins
from brainsmith.plugin.errors import PluginLoadError
from brainsmith.plugin.manager import get_plugin_manager
from brainsmith.plugins import kernels, transforms
from tests.conftest import run_python
from tests.support.plugins import PLUGIN

BLUEPRINT = """
name: pick-one
hw_compiler:
  transforms: [Picked, qonnx:FoldConstants]
steps: [finn:step_tidy_up]
"""


def write_blueprint(tmp_path) -> str:
    path = tmp_path / "pick.yaml"
    path.write_text(BLUEPRINT)
    return str(path)


@pytest.fixture
def hub_in_use(plugin_folder):
    """A hub with a loaded plugin, a cached instance and a broken plugin (health degraded)."""
    plugin_folder("picked.py", PLUGIN.format(name="Picked", prelude=""))
    plugin_folder("broken.py", PLUGIN.format(name="Broken", prelude="raise RuntimeError('no')"))
    manager = get_plugin_manager()
    registry = manager.registry()
    instance = manager.get_instance("transform", "Picked")
    with pytest.raises(PluginLoadError):
        transforms.Broken  # noqa: B018
    assert manager.health_check()["status"] == "degraded"
    return manager, registry, instance


FILTERED_CALLS = {
    "types": lambda m, bp: m.discover_plugins(types=["kernel"]),
    "frameworks": lambda m, bp: m.discover_plugins(frameworks=["finn"]),
    "load_blueprint": lambda m, bp: load_blueprint(bp),
    "load_blueprint_plugins": lambda m, bp: load_blueprint_plugins(bp),
}


@pytest.mark.parametrize("call", list(FILTERED_CALLS))
def test_filtered_discovery_and_blueprints_leave_the_process_registry_intact(
    hub_in_use, tmp_path, call
):
    manager, registry, instance = hub_in_use
    FILTERED_CALLS[call](manager, write_blueprint(tmp_path))
    assert manager.registry() is registry
    health = manager.health_check()
    assert health["status"] == "degraded"
    assert any("Broken" in p["plugin"] for p in health["broken_plugins"])
    assert registry.find("transform", "Picked").loaded
    assert manager.get_instance("transform", "Picked") is instance
    assert kernels.get_spec("LayerNorm").qualified_name == "brainsmith:LayerNorm"
    assert transforms.qonnx.FoldConstants.__name__ == "FoldConstants"


def test_a_filtered_discovery_returns_only_what_it_asks_for():
    manager = get_plugin_manager()
    view = manager.discover_plugins(types=["kernel"], frameworks=["finn"])
    assert {(s.type, s.framework) for s in view.specs()} == {("kernel", "finn")}
    assert view.find("kernel", "MVAU").qualified_name == "finn:MVAU"
    assert len(manager.registry().specs()) > len(view.specs())


def test_a_plugin_calling_filtered_discovery_at_import_breaks_nothing(plugin_folder, tmp_path):
    blueprint = write_blueprint(tmp_path)
    meddler = (
        "from brainsmith.plugin.manager import get_plugin_manager\n"
        "from brainsmith.blueprint import load_blueprint\n"
        "get_plugin_manager().discover_plugins(frameworks=['finn'])\n"
        f"load_blueprint({blueprint!r})"
    )
    plugin_folder("picked.py", PLUGIN.format(name="Picked", prelude=""))
    plugin_folder("meddler.py", PLUGIN.format(name="Meddler", prelude=meddler))
    manager = get_plugin_manager()
    registry = manager.registry()
    assert transforms.Meddler.__name__ == "Meddler"
    assert manager.registry() is registry
    assert transforms.Picked.__name__ == "Picked"
    assert kernels.get_spec("LayerNorm").qualified_name == "brainsmith:LayerNorm"
    assert manager.health_check()["status"] == "healthy"


FILTERS = """
import json, os, sys
from brainsmith.plugin.manager import get_plugin_manager
from brainsmith.plugin.discovery.sources import package_scan
manager = get_plugin_manager()
counts = {}
for name, view in [
    ("all", manager.discover_plugins()),
    ("kernels", manager.discover_plugins(types=["kernel"])),
    ("finn", manager.discover_plugins(frameworks=["finn"])),
]:
    counts[name] = len(view.specs())
cache = os.environ["BRAINSMITH_CACHE_DIR"]
print(json.dumps({"counts": counts, "parsed": package_scan.parsed_files,
                  "index_files": sorted(n for n in os.listdir(cache) if n.startswith("index-"))}))
"""


def test_every_filtered_discovery_reads_the_one_index_without_a_scan():
    result = run_python(FILTERS)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout.strip().splitlines()[-1])
    assert data["parsed"] == 0  # the session's warm index served every view
    counts = data["counts"]
    assert counts["all"] > counts["kernels"] > 0 and counts["all"] > counts["finn"] > 0, counts
    before = sorted(n for n in os.listdir(os.environ["BRAINSMITH_CACHE_DIR"]))
    assert data["index_files"] == [n for n in before if n.startswith("index-")]


def test_a_blueprint_imports_only_the_plugins_it_names(plugin_folder, tmp_path):
    plugin_folder("picked.py", PLUGIN.format(name="Picked", prelude=""))
    plugin_folder("other.py", PLUGIN.format(name="Other", prelude=""))
    blueprint = write_blueprint(tmp_path)
    folder = str(plugin_folder.folder)
    code = f"""
        import json, sys
        from brainsmith.plugin.manager import get_plugin_manager
        from brainsmith.plugin.discovery.sources import package_scan
        from brainsmith.plugin import load_blueprint_plugins

        def plugin_files():
            return sorted(
                m.__file__.rpartition("/")[2] for m in list(sys.modules.values())
                if (getattr(m, "__file__", None) or "").startswith({folder!r})
            )

        plugins = load_blueprint_plugins({blueprint!r})
        before_use = plugin_files()
        for collection in plugins.values():
            for name in collection.list_plugins():
                getattr(collection, name)
        print(json.dumps({{"before": before_use, "after": plugin_files(),
                          "parsed": package_scan.parsed_files}}))
    """
    listing = "from brainsmith.plugin.manager import get_plugin_manager as g; g().registry()"
    first = run_python(listing)  # indexes the new plugin folder
    assert first.returncode == 0, first.stderr
    second = run_python(textwrap.dedent(code))
    assert second.returncode == 0, second.stderr
    data = json.loads(second.stdout.strip().splitlines()[-1])
    assert data == {"before": [], "after": ["picked.py"], "parsed": 0}
