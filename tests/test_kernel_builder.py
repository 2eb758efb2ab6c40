"""Custom kernels from KernelBuilder: hub plugins and QONNX custom ops, run on real models."""

from __future__ import annotations

import math

import numpy as np
import pytest
from onnx import TensorProto, helper
from qonnx.core.datatype import DataType
from qonnx.core.modelwrapper import ModelWrapper
from qonnx.core.onnx_exec import execute_onnx
from qonnx.transformation.infer_datatypes import InferDataTypes
from qonnx.transformation.infer_shapes import InferShapes
from qonnx.util.basic import qonnx_make_model

from brainsmith.plugin import PluginError
from brainsmith.plugin.lifecycle import (
    KernelBuilder,
    execute_kernel,
    is_custom_kernel_registered,
    list_custom_kernels,
    register_example_kernels,
)
from brainsmith.plugin.lifecycle.kernel_builder import (
    DOMAIN,
    KernelExecutionError,
    KernelInputError,
)
from brainsmith.plugin.manager import get_plugin_manager
from brainsmith.plugins import kernels

RNG = np.random.default_rng(7)


def model_with(op_type: str, inputs: dict, initializers: dict | None = None, **attrs):
    """x -> Mul(x, 2) -> <op_type>(...) -> y, shapes and datatypes inferred by QONNX."""
    names = list(inputs) + list(initializers or {})
    nodes = [
        helper.make_node("Mul", [names[0], "two"], ["doubled"]),
        helper.make_node(op_type, ["doubled", *names[1:]], ["y"], domain=DOMAIN, **attrs),
    ]
    graph = helper.make_graph(
        nodes,
        "custom_kernel_graph",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs.items()],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    opsets = [helper.make_opsetid("", 13), helper.make_opsetid(DOMAIN, 1)]
    model = ModelWrapper(qonnx_make_model(graph, opset_imports=opsets))
    model.set_initializer("two", np.array(2.0, dtype=np.float32))
    for name, value in (initializers or {}).items():
        model.set_initializer(name, value)
    return model.transform(InferShapes()).transform(InferDataTypes())


def reference(name: str, *arrays: np.ndarray) -> np.ndarray:
    if name == "swish":
        return arrays[0] * (1 / (1 + np.exp(-arrays[0])))
    if name == "gelu":
        return np.array(
            [0.5 * v * (1 + math.erf(v / math.sqrt(2))) for v in arrays[0].ravel()]
        ).reshape(arrays[0].shape)
    if name == "power":
        return arrays[0] ** arrays[1]
    x, scale, bias = arrays
    normed = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5)
    return normed * scale + bias


EXAMPLE_INPUTS = {
    "swish": [RNG.normal(size=(2, 5))],
    "gelu": [RNG.normal(size=(3, 4))],
    "power": [RNG.uniform(0.5, 2, size=(2, 3)), RNG.uniform(-2, 2, size=(3,))],
    "layer_norm": [RNG.normal(size=(2, 4)), RNG.normal(size=4), RNG.normal(size=4)],
}


def test_build_registers_a_kernel_plugin_that_is_a_qonnx_custom_op():
    from qonnx.custom_op.base import CustomOp

    KernelBuilder("swish2").execute(lambda x: x / (1 + np.exp(-x))).build()
    assert issubclass(kernels.swish2, CustomOp)
    assert get_plugin_manager().registry().find("kernel", "swish2").qualified_name == "user:swish2"
    assert list_custom_kernels() == ["swish2"] and is_custom_kernel_registered("swish2")


def test_execute_kernel_runs_on_numpy_arrays():
    KernelBuilder("add3", num_inputs=3).execute(lambda a, b, c: a + b + c).build()
    assert execute_kernel("add3", [np.ones(2), np.ones(2), np.ones(2)]).tolist() == [3.0, 3.0]


def test_model_with_a_custom_kernel_runs_in_execute_onnx():
    KernelBuilder("swish2").execute(lambda x: x / (1 + np.exp(-x))).build()
    model = model_with("swish2", {"x": [2, 3]})
    x = RNG.normal(size=(2, 3)).astype(np.float32)
    y = execute_onnx(model, {"x": x})["y"]
    np.testing.assert_allclose(y, reference("swish", 2 * x), rtol=1e-6)


def test_qonnx_infers_the_shape_and_datatype_the_kernel_declares():
    (
        KernelBuilder("row_sum")
        .execute(lambda x: x.sum(axis=-1))
        .infer_shape(lambda shape: shape[:-1])
        .infer_datatype(lambda dt: "INT8")
        .build()
    )
    model = model_with("row_sum", {"x": [2, 3]})
    assert model.get_tensor_shape("y") == [2]
    assert model.get_tensor_datatype("y") == DataType["INT8"]


@pytest.mark.parametrize("name", sorted(EXAMPLE_INPUTS))
def test_example_kernel_matches_numpy_reference(name):
    register_example_kernels()
    inputs = EXAMPLE_INPUTS[name]
    np.testing.assert_allclose(execute_kernel(name, inputs), reference(name, *inputs), rtol=1e-6)


def test_example_kernels_are_brainsmith_plugins():
    assert register_example_kernels() == ["swish", "gelu", "power", "layer_norm"]
    frameworks = {kernels.get_spec(n).framework for n in ("swish", "gelu", "power", "layer_norm")}
    assert frameworks == {"brainsmith"}


def test_layer_norm_runs_in_a_model_with_its_epsilon_attribute():
    register_example_kernels()
    scale, bias = np.ones(4, np.float32), np.zeros(4, np.float32)
    model = model_with("layer_norm", {"x": [2, 4]}, {"scale": scale, "bias": bias}, epsilon=1.0)
    x = RNG.normal(size=(2, 4)).astype(np.float32)
    doubled = 2 * x
    expected = (doubled - doubled.mean(-1, keepdims=True)) / np.sqrt(
        doubled.var(-1, keepdims=True) + 1.0
    )
    np.testing.assert_allclose(execute_onnx(model, {"x": x})["y"], expected, rtol=1e-5)


def test_wrong_input_count_names_the_kernel_and_the_expected_count():
    register_example_kernels()
    with pytest.raises(KernelInputError, match="kernel 'swish' expects 1 input, got 2"):
        execute_kernel("swish", [np.ones(2), np.ones(2)])


def test_wrong_dtype_names_the_kernel_and_the_expected_dtype():
    register_example_kernels()
    with pytest.raises(
        KernelInputError, match=r"kernel 'gelu'.*input 0 must be a float array, got int"
    ):
        execute_kernel("gelu", [np.arange(3)])


def test_non_numeric_input_is_rejected():
    register_example_kernels()
    with pytest.raises(KernelInputError, match="input 0 has dtype <U1; expected a numeric"):
        execute_kernel("swish", [np.array(["a"])])


def test_wrong_shape_names_the_kernel_and_the_expected_shape():
    register_example_kernels()
    x, scale, bias = np.ones((2, 4)), np.ones(3), np.zeros(4)
    with pytest.raises(
        KernelInputError, match=r"'layer_norm'.*scale must have shape \(4,\), got \(3,\)"
    ):
        execute_kernel("layer_norm", [x, scale, bias])


def test_shapes_that_do_not_broadcast_are_rejected():
    register_example_kernels()
    with pytest.raises(KernelInputError, match=r"kernel 'power': input shapes \(2, 3\), \(4,\)"):
        execute_kernel("power", [np.ones((2, 3)), np.ones(4)])


def test_failing_execute_is_reported_with_the_kernel_name_and_registry_stays_usable():
    def execute(x):
        raise ZeroDivisionError("tile size 0")

    KernelBuilder("fragile").execute(execute).build()
    KernelBuilder("steady").execute(lambda x: x + 1).build()
    with pytest.raises(
        KernelExecutionError, match=r"kernel 'fragile' \(user:fragile\) failed"
    ) as err:
        execute_kernel("fragile", [np.ones(2)])
    assert "tile size 0" in str(err.value) and "test_kernel_builder.py" in str(err.value)
    health = get_plugin_manager().health_check()["broken_plugins"]
    assert any("fragile" in p["plugin"] and "tile size 0" in p["reason"] for p in health)
    assert is_custom_kernel_registered("fragile")
    assert execute_kernel("steady", [np.ones(2)]).tolist() == [2.0, 2.0]


def test_execute_returning_the_wrong_shape_is_caught():
    KernelBuilder("liar").execute(lambda x: x.ravel()[:1]).build()
    with pytest.raises(
        KernelExecutionError, match=r"returned shape \(1,\), but its shape inference"
    ):
        execute_kernel("liar", [np.ones((2, 2))])


def test_a_kernel_needs_an_execute_function():
    with pytest.raises(PluginError, match=r"kernel 'empty' needs .execute\(fn\)"):
        KernelBuilder("empty").build()


def test_kernel_names_must_be_identifiers_without_a_version_suffix():
    with pytest.raises(PluginError, match="no '_vN' suffix"):
        KernelBuilder("swish_v2")
    with pytest.raises(PluginError, match="must be an identifier"):
        KernelBuilder("my-kernel")


def test_a_name_taken_by_another_framework_is_refused_and_kept():
    KernelBuilder("clash").execute(lambda x: x).build(framework="acme")
    with pytest.raises(PluginError, match="already registered by acme:clash"):
        KernelBuilder("clash").execute(lambda x: -x).build()
    assert execute_kernel("clash", [np.ones(1)]).tolist() == [1.0]


def test_rebuilding_in_the_same_framework_replaces_the_kernel():
    KernelBuilder("scale").execute(lambda x: x * 2).build()
    KernelBuilder("scale").execute(lambda x: x * 3).build()
    assert execute_kernel("scale", [np.ones(1)]).tolist() == [3.0]
    assert len(kernels.specs()) == len({s.qualified_name for s in kernels.specs()})


def test_unknown_kernel_suggests_registered_ones():
    register_example_kernels()
    with pytest.raises(LookupError, match="did you mean 'swish'"):
        execute_kernel("swsh", [np.ones(1)])
