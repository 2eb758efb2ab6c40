"""One exception tree: every error brainsmith raises for its user is a BrainsmithError that
carries its culprit as attributes."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import brainsmith
from brainsmith.errors import BrainsmithError

PACKAGE = Path(brainsmith.__file__).parent
REPO = PACKAGE.parent
# Signals passed between brainsmith's own functions, never raised to a user.
INTERNAL = {"ImportTimeout", "PluginExit", "ImportAssertion", "NotSimulated", "ExecutorError"}
# Scripts an export carries, which run without brainsmith (the board's driver.py)
STANDALONE = PACKAGE / "export" / "files"


def exception_classes() -> list[tuple[str, str]]:
    """(module path, class name) of every class in brainsmith named like an error, but for
    the standalone scripts' own."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.is_relative_to(STANDALONE):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef) and node.name.endswith(("Error", "Failed")):
                found.append((str(path.relative_to(REPO)), node.name))
    return found


@pytest.mark.parametrize(("path", "name"), exception_classes())
def test_every_error_class_derives_from_brainsmith_error(path, name):
    if name in INTERNAL:
        pytest.skip("an internal signal, converted before it reaches the user")
    import importlib

    module = importlib.import_module(path[:-3].replace("/", "."))
    assert issubclass(getattr(module, name), BrainsmithError), f"{path}: {name}"


def test_a_config_error_names_its_file_and_key(tmp_path, monkeypatch):
    from brainsmith.plugin.errors import ConfigError
    from brainsmith.plugin.settings.config import load_config

    config = tmp_path / "config.yaml"
    config.write_text("plugin_system:\n  cache_ttl: soon\n")
    monkeypatch.setenv("BRAINSMITH_CONFIG", str(config))
    with pytest.raises(ConfigError) as caught:
        load_config()
    assert isinstance(caught.value, BrainsmithError)
    assert (caught.value.file, caught.value.key) == (str(config), "plugin_system.cache_ttl")


def test_a_bad_decorator_names_its_file_line_and_type():
    from brainsmith.plugin.decorators import transform
    from brainsmith.plugin.errors import PluginMetadataError

    with pytest.raises(PluginMetadataError) as caught:
        line = _line() + 1
        transform(name="not a name!")
    assert caught.value.where == f"{__file__}:{line}"
    assert caught.value.plugin_type == "transform"


def test_a_blueprint_error_and_a_build_error_share_the_root(tmp_path):
    from brainsmith.blueprint import BlueprintError, load_blueprint
    from brainsmith.builder import BuildError

    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nkernels: [no_such_kernel_anywhere]\n")
    with pytest.raises(BrainsmithError) as caught:
        load_blueprint(bad)
    assert isinstance(caught.value, BlueprintError)
    with pytest.raises(BrainsmithError) as caught:
        brainsmith.build(str(tmp_path / "missing.onnx"), str(REPO / "blueprints" / "mlp.yaml"))
    assert isinstance(caught.value, BuildError) and caught.value.step == "setup"


def _line() -> int:
    import sys

    return sys._getframe(1).f_lineno
