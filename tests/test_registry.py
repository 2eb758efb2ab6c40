"""The unified registry: qualified names never collide, short names resolve by priority."""

from __future__ import annotations

import sys

import pytest

from brainsmith.plugin.errors import PluginLoadError, PluginNotFoundError
from brainsmith.plugin.registry import Registry
from brainsmith.plugin.spec import PluginSpec


def spec(name: str, framework: str, target: str = "", type: str = "transform") -> PluginSpec:
    return PluginSpec(type, name, framework, target or f"{framework}_mod:{name}")


def test_qualified_names_of_different_frameworks_coexist():
    registry = Registry()
    registry.add(spec("Streamline", "finn"))
    registry.add(spec("Streamline", "qonnx"))
    assert registry.find("transform", "finn:Streamline").framework == "finn"
    assert registry.find("transform", "qonnx:Streamline").framework == "qonnx"


def test_short_name_resolves_by_default_priority():
    from brainsmith.errors import DuplicatePluginWarning

    registry = Registry()
    for framework in ("qonnx", "finn", "acme-plugins"):
        registry.add(spec("Fold", framework))
    with pytest.warns(DuplicatePluginWarning, match="acme-plugins:Fold .* is shadowed by"):
        registry.add(spec("Fold", "brainsmith"))
    assert registry.find("transform", "Fold").framework == "brainsmith"
    registry.remove(registry.find("transform", "brainsmith:Fold"))
    assert registry.find("transform", "Fold").framework == "acme-plugins"


def test_priority_is_configurable():
    registry = Registry(priority=("qonnx", "finn", "brainsmith"))
    registry.add(spec("Fold", "brainsmith"))
    registry.add(spec("Fold", "qonnx"))
    assert registry.find("transform", "Fold").framework == "qonnx"


def test_same_qualified_name_twice_keeps_first_and_warns_at_the_second(tmp_path):
    from brainsmith.errors import DuplicatePluginWarning

    registry = Registry()
    first = registry.add(spec("Dup", "user", "a:Dup"))
    second = spec("Dup", "user", "b:Dup")
    second.source, second.metadata["line"] = str(tmp_path / "b.py"), 7
    with pytest.warns(DuplicatePluginWarning, match="user:Dup is defined twice") as caught:
        kept = registry.add(second)
    assert kept is first
    assert (caught[0].filename, caught[0].lineno) == (str(tmp_path / "b.py"), 7)
    assert any("a:Dup" in p.reason and "b:Dup" in p.reason for p in registry.problems)


def test_a_user_plugin_shadowed_by_a_built_in_warns_at_its_file_and_line(tmp_path):
    from brainsmith.errors import DuplicatePluginWarning

    registry = Registry()
    registry.add(spec("ExpandNorms", "brainsmith"))
    mine = spec("ExpandNorms", "user", "norms:ExpandNorms")
    mine.source, mine.metadata["line"] = str(tmp_path / "norms.py"), 4
    with pytest.warns(DuplicatePluginWarning, match="user:ExpandNorms .* shadowed") as caught:
        registry.add(mine)
    assert (caught[0].filename, caught[0].lineno) == (str(tmp_path / "norms.py"), 4)
    assert [(h.qualified_name, w.qualified_name) for h, w in registry.shadowed()] == [
        ("user:ExpandNorms", "brainsmith:ExpandNorms")
    ]
    registry.add(spec("Streamline", "finn"))
    registry.add(spec("Streamline", "qonnx"))  # built-ins sharing a name: by design, silent
    assert len(registry.shadowed()) == 1


def test_kernel_lookups_ignore_case():
    registry = Registry()
    registry.add(spec("matmul", "brainsmith", type="kernel"))
    registry.add(spec("LayerNorm", "brainsmith", type="kernel"))
    assert registry.find("kernel", "MatMul").name == "matmul"
    assert registry.find("kernel", "brainsmith:layernorm").name == "LayerNorm"
    with pytest.raises(PluginNotFoundError):
        registry.find("transform", "MATMUL")


def test_unknown_name_suggests_close_match():
    registry = Registry()
    registry.add(spec("Streamline", "finn"))
    with pytest.raises(PluginNotFoundError) as err:
        registry.find("transform", "finn:Streamlin")
    message = str(err.value)
    assert "did you mean 'Streamline'" in message
    assert "brainsmith plugins list --type transform --framework finn" in message


def test_not_found_is_an_attribute_error_so_getattr_defaults_work():
    with pytest.raises(AttributeError):
        Registry().find("kernel", "nothing")


def test_unknown_type_is_rejected():
    with pytest.raises(ValueError, match="unknown plugin type 'transfrom'"):
        Registry().find("transfrom", "X")


LAZY = """
from qonnx.transformation.base import Transformation
from brainsmith.plugin import transform


@transform(name="Lazy")
class Lazy(Transformation):
    def apply(self, model):
        return model, False
"""


def test_load_imports_on_first_use_and_keeps_object(tmp_path, monkeypatch):
    (tmp_path / "lazy_mod.py").write_text(LAZY)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(sys.modules, "lazy_mod", None)  # forgotten again after the test
    monkeypatch.delitem(sys.modules, "lazy_mod")
    registry = Registry()
    entry = registry.add(spec("Lazy", "user", "lazy_mod:Lazy"))
    assert not entry.loaded and "lazy_mod" not in sys.modules
    assert registry.get("transform", "Lazy") is sys.modules["lazy_mod"].Lazy
    assert entry.loaded


def test_load_refuses_an_object_its_source_does_not_register():
    registry = Registry()
    registry.add(spec("OrderedDict", "user", "collections:OrderedDict"))
    with pytest.raises(PluginLoadError, match=r"refusing to serve transform user:OrderedDict"):
        registry.get("transform", "OrderedDict")


def test_load_error_names_plugin_and_missing_module():
    registry = Registry()
    registry.add(spec("Gone", "user", "no_such_module_xyz:Gone"))
    with pytest.raises(PluginLoadError, match=r"user:Gone.*no_such_module_xyz.*not installed"):
        registry.get("transform", "Gone")
    assert registry.find("transform", "Gone").error


def test_case_insensitive_lookup_orders_by_priority():
    registry = Registry()
    registry.add(spec("MatMul", "finn"))
    registry.add(spec("matmul", "brainsmith"))
    hits = registry.find_case_insensitive("transform", "MATMUL")
    assert [h.framework for h in hits] == ["brainsmith", "finn"]
