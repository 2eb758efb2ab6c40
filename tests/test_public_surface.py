"""One public surface: brainsmith.plugin is the contract, brainsmith.plugins the everyday
API, brainsmith.plugin.lifecycle the lifecycle API; names that moved are gone from their old
homes, and a removed argument is refused saying what to write instead."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

import brainsmith.plugin
import brainsmith.plugins
from brainsmith.plugin import lifecycle
from brainsmith.version import __version__
from tests.conftest import run_python

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


# Packages and modules that moved or were renamed, by their old names.
OLD_MODULES = [
    "brainsmith.plugin.blueprint",
    "brainsmith.plugin.blueprint.model",
    "brainsmith.builder.gate",
    "brainsmith.rtlsim",
    "brainsmith.rtlsim.sources",
    "brainsmith.synthesis",
    "brainsmith.place_route",
    "brainsmith.board",
    "brainsmith.board.driver",
    "brainsmith.hardware.rtlsim.sources",
    "brainsmith.hardware.rtlsim.packing",
    "brainsmith.hardware.synthesis.sources",
    "brainsmith.hardware.place_route.sources",
    "brainsmith.verification.steps",
    "brainsmith.blueprint.model",
]


@pytest.mark.parametrize("old", OLD_MODULES)
def test_a_moved_modules_old_name_is_gone(old):
    with pytest.raises(ModuleNotFoundError) as err:
        importlib.import_module(old)
    assert err.value.name in OLD_MODULES  # the old name itself, or the old package it is in


def test_importing_brainsmith_adds_no_import_hook_and_stays_cheap():
    result = run_python(
        """
        import sys
        before = list(sys.meta_path)
        import brainsmith
        added = [type(finder).__module__ for finder in sys.meta_path if finder not in before]
        loaded = sorted(name for name in sys.modules if name.startswith("brainsmith"))
        print(added, loaded, callable(brainsmith.build), brainsmith.__version__)
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"[] ['brainsmith'] True {__version__}"


def test_the_folding_searchs_names_are_served_by_its_module_only():
    import brainsmith.frameworks.finn.folding as folding

    with pytest.raises(AttributeError, match="has no attribute 'FoldingRecord'"):
        folding.FoldingRecord  # noqa: B018
