"""Blueprint mode remembers a resolved selection: a fresh process serves it without YAML,
and never serves one that an edit, an install or a run-time plugin has made stale."""

from __future__ import annotations

import json
import textwrap

from tests.conftest import run_python

SELECT = """
import json, sys
from brainsmith.plugin import load_blueprint_plugins
chosen = load_blueprint_plugins({path!r})
print(json.dumps({{
    "names": {{k: sorted(s.qualified_name for s in c.specs()) for k, c in chosen.items()}},
    "resolved": "yaml" in sys.modules,
}}))
"""


def select(path, env=None) -> dict:
    result = run_python(SELECT.format(path=str(path)), env=env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def write(path, text: str):
    path.write_text(textwrap.dedent(text))
    return path


BASE = """
name: base
hw_compiler:
  transforms: [ExpandNorms]
  kernels: [MVAU]
"""


def test_a_second_process_serves_the_selection_without_reading_yaml(tmp_path):
    blueprint = write(tmp_path / "bp.yaml", BASE)
    first, second = select(blueprint), select(blueprint)
    assert first["resolved"] and not second["resolved"]
    assert second["names"] == first["names"]
    assert first["names"]["transforms"] == ["brainsmith:ExpandNorms"]
    assert "finn:MVAU" in first["names"]["kernels"]
    assert any(name.startswith("finn:MVAU_") for name in first["names"]["backends"])


def test_an_edit_to_the_blueprint_or_a_file_it_extends_is_seen(tmp_path):
    base = write(tmp_path / "base.yaml", BASE)
    child = write(tmp_path / "child.yaml", "name: child\nextends: base.yaml\n")
    assert select(child)["names"]["transforms"] == ["brainsmith:ExpandNorms"]
    write(base, BASE.replace("[ExpandNorms]", "[ExpandNorms, ConvertDivToMul]"))
    edited = select(child)
    assert edited["resolved"]
    assert edited["names"]["transforms"] == ["brainsmith:ConvertDivToMul", "brainsmith:ExpandNorms"]
    write(child, "name: child\nextends: base.yaml\nhw_compiler:\n  transforms: [ConvertDivToMul]\n")
    assert select(child)["names"]["transforms"] == ["brainsmith:ConvertDivToMul"]


def test_a_plugin_installed_since_changes_the_selection(tmp_path, plugin_folder):
    blueprint = write(
        tmp_path / "bp.yaml", "name: opt\nhw_compiler:\n  transforms: [ExpandNorms, ~FoldMark]\n"
    )
    assert select(blueprint)["names"]["transforms"] == ["brainsmith:ExpandNorms"]
    plugin_folder(
        "fold_mark.py",
        """
        from qonnx.transformation.base import Transformation
        from brainsmith.plugin import transform

        @transform(name="FoldMark")
        class FoldMark(Transformation):
            def apply(self, model):
                return model, False
        """,
    )
    after = select(blueprint)
    assert after["resolved"]
    assert after["names"]["transforms"] == ["brainsmith:ExpandNorms", "user:FoldMark"]


def test_a_plugin_added_at_run_time_is_never_served_from_a_remembered_selection(tmp_path):
    blueprint = write(
        tmp_path / "bp.yaml", "name: rt\nhw_compiler:\n  transforms: [~RuntimeMark]\n"
    )
    assert select(blueprint)["names"]["transforms"] == []
    plugin = write(
        tmp_path / "runtime_mark.py",
        """
        from qonnx.transformation.base import Transformation
        from brainsmith.plugin import transform

        @transform(name="RuntimeMark")
        class RuntimeMark(Transformation):
            def apply(self, model):
                return model, False
        """,
    )
    code = (
        "from brainsmith.plugin.lifecycle import load_plugin\n"
        f"load_plugin({str(plugin)!r})\n" + SELECT.format(path=str(blueprint))
    )
    result = run_python(code)
    assert result.returncode == 0, result.stderr
    seen = json.loads(result.stdout.strip().splitlines()[-1])
    assert seen["resolved"] and seen["names"]["transforms"] == ["runtime-mark:RuntimeMark"]


def test_a_broken_blueprint_is_reported_every_time(tmp_path):
    blueprint = write(tmp_path / "bp.yaml", BASE)
    select(blueprint)
    write(blueprint, BASE.replace("ExpandNorms", "ExpandNormz"))
    for _ in range(2):
        result = run_python(SELECT.format(path=str(blueprint)))
        assert result.returncode != 0
        assert "bp.yaml:4" in result.stderr and "ExpandNorms" in result.stderr  # did you mean
