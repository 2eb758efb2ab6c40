"""One public surface: brainsmith.plugin is the contract, brainsmith.plugins the everyday
API, brainsmith.plugin.lifecycle the lifecycle API (its names are served from there only);
modules that moved still work, with a DeprecationWarning naming their new home; a removed
argument is refused saying what to write instead."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import brainsmith.plugin
import brainsmith.plugins
from brainsmith.plugin import lifecycle
from brainsmith.version import REMOVED_IN

DOCS = Path(__file__).resolve().parents[1] / "docs"


def test_the_contract_is_small_and_every_name_resolves():
    assert len(brainsmith.plugin.__all__) <= 25
    for name in brainsmith.plugin.__all__ + brainsmith.plugins.__all__ + lifecycle.__all__:
        module = next(
            m for m in (brainsmith.plugin, brainsmith.plugins, lifecycle) if name in m.__all__
        )
        assert getattr(module, name) is not None, name
    assert not set(brainsmith.plugin.__all__) & set(lifecycle.__all__)


@pytest.mark.parametrize("module", [brainsmith.plugin, brainsmith.plugins])
def test_the_lifecycle_api_is_served_by_lifecycle_only(module):
    served = [name for name in lifecycle.__all__ if name in dir(module) or hasattr(module, name)]
    assert served == []
    with pytest.raises(AttributeError, match="has no attribute 'load_plugin'"):
        module.load_plugin  # noqa: B018


@pytest.mark.parametrize("old", ["Plugin", "PluginBuilder", "PluginInfo", "PluginRegistry"])
def test_the_bundle_classes_old_names_are_gone(old):
    from brainsmith.plugin.lifecycle import bundles

    for module in (lifecycle, bundles, brainsmith.plugin):
        with pytest.raises(AttributeError, match=f"has no attribute '{old}'"):
            getattr(module, old)


def test_deprecations_are_removed_in_the_release_they_name():
    from packaging.version import Version

    from brainsmith.version import __version__

    assert Version(__version__) < Version(REMOVED_IN), (
        "remove the moved modules' old names"
    )


def test_a_discovery_mode_argument_is_refused_with_what_to_write_instead():
    from brainsmith.plugin.manager import get_plugin_manager

    manager = get_plugin_manager()
    with pytest.raises(TypeError, match=r"discover_plugins\(modes=\.\.\.\) is gone") as err:
        manager.discover_plugins(modes=["blueprint"])
    assert "drop modes=, and narrow a discovery with types= or frameworks=" in str(err.value)
    with pytest.raises(TypeError, match="unexpected keyword argument 'tpyes'; it takes types="):
        manager.discover_plugins(tpyes=["kernel"])
    with pytest.raises(TypeError, match="positional argument"):
        manager.discover_plugins(["blueprint"])


def test_the_docs_import_each_public_name_from_one_module():
    homes: dict[str, set[str]] = {}
    pattern = re.compile(r"^from (brainsmith[\w.]*) import \(?([^)\n]*(?:\n    [^)\n]*)*)", re.M)
    for page in DOCS.glob("*.md"):
        for module, names in pattern.findall(page.read_text()):
            for name in re.findall(r"\w+", names.replace(" as ", " ")):
                homes.setdefault(name, set()).add(module)
    public = set(brainsmith.plugin.__all__) | set(lifecycle.__all__)
    twice = {n: m for n, m in homes.items() if n in public and len(m) > 1}
    assert twice == {}


def test_the_blueprint_packages_old_name_warns_and_serves_the_moved_modules(monkeypatch):
    import sys

    import brainsmith.blueprint
    import brainsmith.blueprint.options

    for name in [n for n in sys.modules if n.startswith("brainsmith.plugin.blueprint")]:
        monkeypatch.delitem(sys.modules, name)
    with pytest.warns(
        DeprecationWarning, match="brainsmith.plugin.blueprint moved to brainsmith.blueprint"
    ) as seen:
        from brainsmith.plugin.blueprint import load_blueprint
        from brainsmith.plugin.blueprint.options import BuildOptions
    assert f"will be removed in brainsmith {REMOVED_IN}" in str(seen[0].message)
    assert load_blueprint is brainsmith.blueprint.load_blueprint
    assert BuildOptions is brainsmith.blueprint.options.BuildOptions


@pytest.mark.parametrize(
    ("old", "new", "name"),
    [
        ("brainsmith.board.driver", "brainsmith.hardware.board.driver", "Board"),
        ("brainsmith.rtlsim.stitched.design", "brainsmith.hardware.rtlsim.stitched.design",
         "StitchedPartition"),
        ("brainsmith.synthesis.yosys", "brainsmith.hardware.synthesis.yosys", "Yosys"),
        ("brainsmith.place_route.parts", "brainsmith.hardware.place_route.parts", "Ecp5Part"),
        ("brainsmith.builder.gate", "brainsmith.intake.gate", "open_build_folder"),
        ("brainsmith.rtlsim.sources", "brainsmith.hardware.rtlsim.layer_design", "LayerDesign"),
        ("brainsmith.hardware.rtlsim.sources", "brainsmith.hardware.rtlsim.layer_design",
         "LayerDesign"),
        ("brainsmith.rtlsim.packing", "brainsmith.hardware.rtlsim.beats", "pack_beats"),
        ("brainsmith.hardware.synthesis.sources", "brainsmith.hardware.synthesis.layer_sources",
         "SynthesisDesign"),
        ("brainsmith.place_route.sources", "brainsmith.hardware.place_route.stitched_sources",
         "StitchedDesign"),
        ("brainsmith.verification.steps", "brainsmith.verification.quantizer_steps", "Tie"),
        ("brainsmith.blueprint.model", "brainsmith.blueprint.resolved", "Blueprint"),
        ("brainsmith.plugin.blueprint.model", "brainsmith.blueprint.resolved", "KernelChoice"),
    ],
)  # fmt: skip
def test_a_moved_modules_old_name_warns_and_is_the_moved_module(monkeypatch, old, new, name):
    import importlib
    import sys

    moved = importlib.import_module(new)
    for loaded in [n for n in sys.modules if brainsmith._new_name(n)]:  # old names imported
        monkeypatch.delitem(sys.modules, loaded)
    moved_to = r"moved to brainsmith\.(hardware|intake|verification|blueprint)\."
    with pytest.warns(DeprecationWarning, match=moved_to):
        module = importlib.import_module(old)
    assert module is moved
    assert getattr(module, name) is getattr(moved, name)
