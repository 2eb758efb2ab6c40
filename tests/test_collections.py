"""``tfm.X``, ``tfm.finn.X``: attribute access, completion and helpful misses."""

from __future__ import annotations

import pytest

from brainsmith.plugin.errors import PluginNotFoundError
from brainsmith.plugins import backends, kernels, steps, transforms


def test_framework_namespaces_reach_qonnx_and_finn():
    from qonnx.transformation.fold_constants import FoldConstants

    assert transforms.qonnx.FoldConstants is FoldConstants
    assert transforms.finn.Streamline.__module__ == "finn.transformation.streamline"


def test_qualified_lookup_by_item():
    assert transforms["qonnx:FoldConstants"].__name__ == "FoldConstants"


def test_dir_completes_plugin_and_framework_names():
    names = dir(transforms)
    assert "finn" in names and "qonnx" in names and "list_plugins" in names
    assert "Streamline" in dir(transforms.finn)


def test_unknown_attribute_suggests_names():
    with pytest.raises(AttributeError) as err:
        transforms.finn.Streamlin  # noqa: B018
    assert "did you mean 'Streamline'" in str(err.value)
    assert isinstance(err.value, PluginNotFoundError)


def test_list_plugins_per_type_and_framework():
    assert "MVAU" in kernels.finn.list_plugins()
    assert "MVAU_hls" in backends.finn.list_plugins()
    assert "step_streamline" in steps.finn.list_plugins()
    assert set(transforms.qonnx.list_plugins()) <= set(transforms.list_plugins())


def test_contains_and_get_spec_do_not_import():
    from tests.conftest import run_python

    result = run_python("""
        import sys
        from brainsmith.plugins import transforms
        assert "finn:InferLayerNorm" in transforms
        assert "NoSuchThing" not in transforms
        print(transforms.get_spec("finn:InferLayerNorm").target)
        print(sorted(m for m in sys.modules if m.split(".")[0] in ("finn", "qonnx", "onnx")))
    """)
    assert result.returncode == 0, result.stderr
    target, imported = result.stdout.splitlines()
    assert target.endswith(":InferLayerNorm")
    assert imported == "[]"


def test_collections_are_read_only():
    with pytest.raises(AttributeError, match="read-only"):
        transforms.Foo = 1


def test_repeated_lookup_is_cached_and_reset_forgets_it():
    namespace = transforms.qonnx
    first = namespace.FoldConstants
    assert vars(namespace)["FoldConstants"] is first
    from brainsmith.plugins import reset_plugin_system

    reset_plugin_system()
    assert "FoldConstants" not in vars(namespace)
    assert transforms.qonnx.FoldConstants is first


def test_transform_from_namespace_runs_on_a_model():
    import numpy as np
    from onnx import TensorProto, helper
    from qonnx.core.modelwrapper import ModelWrapper
    from qonnx.util.basic import qonnx_make_model

    inp = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    out = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    nodes = [helper.make_node("Relu", ["x"], ["h"]), helper.make_node("Identity", ["h"], ["y"])]
    model = ModelWrapper(qonnx_make_model(helper.make_graph(nodes, "g", [inp], [out])))
    model = model.transform(transforms.qonnx.RemoveIdentityOps())
    model = model.transform(transforms.qonnx.InferShapes())
    assert [n.op_type for n in model.graph.node] == ["Relu"]
    from qonnx.core.onnx_exec import execute_onnx

    x = np.array([[-1.0, 2.0, -3.0, 4.0]], dtype=np.float32)
    assert np.array_equal(execute_onnx(model, {"x": x})["y"], np.maximum(x, 0))


def test_framework_namespace_is_a_plain_attribute_after_first_use():
    namespace = transforms.qonnx
    assert vars(transforms)["qonnx"] is namespace  # tfm.qonnx.X: two plain attribute reads
    first = namespace.FoldConstants
    assert transforms.qonnx.FoldConstants is first
    from brainsmith.plugins import reset_plugin_system

    reset_plugin_system()
    assert "qonnx" not in vars(transforms)
