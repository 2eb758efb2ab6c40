"""The shipped blueprints and every ``yaml`` example in docs/blueprints.md are valid (or fail
exactly as the page says), and the reference there covers every key of the format."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from brainsmith.blueprint import BlueprintError, load_blueprint
from brainsmith.blueprint.options import BUILD_KEYS
from brainsmith.blueprint.schema import HW_KEYS, KERNEL_KEYS, PHASES, TOP_KEYS
from tests.conftest import run_python
from tests.test_blueprint_support import use_toy_registry, write

REPO = Path(__file__).resolve().parents[1]
SHIPPED = sorted((REPO / "blueprints").glob("*.yaml"))
DOCS = (REPO / "docs" / "blueprints.md").read_text()
EXAMPLES = re.findall(r"```yaml\n(.*?)```", DOCS, re.S)


@pytest.fixture(autouse=True)
def toys(isolated_hub, tmp_path_factory, monkeypatch):
    use_toy_registry(tmp_path_factory, monkeypatch)


@pytest.fixture
def docs_folder(tmp_path) -> Path:
    """The shipped blueprints (also as ``blueprints/``), the files the examples name, and the
    examples marked ``# file:``."""
    for path in SHIPPED:
        shutil.copy(path, tmp_path / path.name)
    (tmp_path / "blueprints").symlink_to(REPO / "blueprints")
    write(tmp_path, "folding.json", "{}")
    for text in EXAMPLES:
        named = re.match(r"# file: (\S+)\n", text)
        if named:
            write(tmp_path, named[1], text)
    return tmp_path


def test_blueprints_folder_ships_the_example_networks():
    assert [path.name for path in SHIPPED] == [
        "base.yaml",
        "cnv.yaml",
        "conv_pad.yaml",
        "mlp.yaml",
        "mlp_explore.yaml",
        "residual.yaml",
        "residual_rtl.yaml",
        "transformer.yaml",
    ]


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_shipped_blueprint_is_valid(path):
    blueprint = load_blueprint(path)
    assert blueprint.skipped == ()
    assert blueprint.build is not None and blueprint.build.fpga_part


def test_mlp_blueprint_builds_matmul_and_thresholding_as_rtl():
    blueprint = load_blueprint(REPO / "blueprints" / "mlp.yaml")
    assert [
        (k.qualified_name, [b.qualified_name for b in backends])
        for k, backends in blueprint.kernels
    ] == [
        ("brainsmith:matmul", ["brainsmith:MatMulRTL"]),
        ("finn:Thresholding", ["finn:Thresholding_rtl"]),
    ]
    assert blueprint.chain[1] == str(REPO / "blueprints" / "base.yaml")
    assert [s.qualified_name for s in blueprint.steps][:2] == [
        "brainsmith:cleanup",
        "brainsmith:qonnx_to_finn",
    ]


def test_transformer_blueprint_has_its_kernels_and_expands_norms_before_hardware():
    blueprint = load_blueprint(REPO / "blueprints" / "transformer.yaml")
    assert [k.kernel.qualified_name for k in blueprint.kernels] == [
        "brainsmith:LayerNorm",
        "brainsmith:softmax",
        "brainsmith:matmul",
        "finn:Thresholding",
        "finn:ElementwiseMul",
    ]
    assert "brainsmith:ExpandNorms" in [
        s.qualified_name for s in blueprint.transforms_phased["pre_hw"]
    ]


def test_shipped_blueprint_loads_only_the_plugin_module_that_is_used():
    result = run_python(f"""
        import sys
        from brainsmith.plugin import load_blueprint_plugins

        plugins = load_blueprint_plugins({str(REPO / "blueprints" / "transformer.yaml")!r})
        modules = sorted({{spec.module for c in plugins.values() for spec in c.specs()}})

        def imported():
            heavy = [m for m in ("finn", "qonnx", "onnx", "torch") if m in sys.modules]
            return heavy + [m for m in modules if m in sys.modules]

        print(imported())
        plugins["transforms"].ExpandNorms
        print(imported())
    """)
    assert result.returncode == 0, result.stderr
    after_load, after_use = result.stdout.splitlines()
    assert after_load == "[]"
    assert after_use == "['qonnx', 'onnx', 'brainsmith.transforms.expand_norms']"


@pytest.mark.parametrize("index", range(len(EXAMPLES)))
def test_docs_yaml_example_behaves_as_documented(docs_folder, index):
    text = EXAMPLES[index]
    named = re.match(r"# file: (\S+)\n", text)
    path = docs_folder / (named[1] if named else f"example-{index}.yaml")
    write(docs_folder, path.name, text)
    expected = re.match(r"# expect-error: (.+)\n", text)
    if expected is None:
        load_blueprint(path)
        return
    with pytest.raises(BlueprintError) as err:
        load_blueprint(path)
    assert expected[1] in str(err.value)


def test_docs_have_examples_of_errors_and_of_valid_blueprints():
    errors = [text for text in EXAMPLES if text.startswith("# expect-error:")]
    assert len(errors) >= 5 and len(EXAMPLES) - len(errors) >= 5


@pytest.mark.parametrize("key", [*TOP_KEYS, *HW_KEYS, *KERNEL_KEYS, *PHASES, *BUILD_KEYS])
def test_docs_reference_every_key(key):
    assert f"| `{key}` |" in DOCS
