"""An average pool or a mean between two quantizers (Brevitas's ``nn.AvgPool2d`` or
``x.mean(dim=1)`` on the floats a ``QuantReLU`` returns, then a ``QuantIdentity``) is a
hardware layer, and so is the classifier after it: the quantizer's scale moves past the
mean, which then sums the quantizer's integers in FINN's accumulating ``Pool``. Before, the
mean read floats, and it, its quantizer, the flatten and the classifier ran on the host.
``check`` names the host nodes the build leaves, node for node."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from qonnx.core.datatype import DataType
from qonnx.core.modelwrapper import ModelWrapper
from qonnx.core.onnx_exec import execute_onnx
from qonnx.transformation.infer_shapes import InferShapes
from qonnx.util.basic import qonnx_make_model

from brainsmith.commands.check_model import check
from brainsmith.transforms.average_pools import AveragePoolToSumPool
from brainsmith.transforms.mean_scales import MoveScalesPastMeans
from tests.support.tiers import breadth

REPO = Path(__file__).resolve().parents[1]
ZOO_DIR = REPO / "examples" / "models" / "zoo"
SHIPPED = ["ds_cnn_avg", "mlp_mixer"]
# Other sizes and widths of each kind: name -> call of an examples.zoo function
FRESH = {
    "ds_cnn_avg_w3a5": "ds_cnn(channels=6, blocks=1, weight_bits=3, act_bits=5, pool_bits=3, "
    "coefficients=8, frames=20, classes=5, pool='avg')",
    "ds_cnn_adaptive_w5a3": "ds_cnn(channels=10, blocks=1, weight_bits=5, act_bits=3, "
    "pool_bits=6, coefficients=6, frames=16, pool='adaptive')",
    "avg_window_3": "pooled_signed(channels=6, weight_bits=4, act_bits=4, pool_bits=4, window=3)",
    "mixer_w5a3": "mlp_mixer(dim=12, tokens=6, hidden=20, weight_bits=5, act_bits=3, "
    "pool_bits=5, classes=7)",
    "mixer_channel_mean": "mlp_mixer(dim=10, tokens=6, hidden=16, classes=5, mean_dim=2)",
    "mixer_token_mlp_w3a5": "mlp_mixer(dim=12, tokens=8, hidden=20, weight_bits=3, act_bits=5, "
    "pool_bits=4, token_mixing=True)",
}
ON_HOST = {("Transpose", "before"), ("Mul", "after"), ("Add", "after")}  # layout, output scale
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def scaled_mean(mean: onnx.NodeProto, shape: list[int], factor: np.ndarray) -> ModelWrapper:
    """x -> Mul(factor) -> ``mean`` (reading ``s``, writing ``y``)."""
    graph = helper.make_graph(
        [helper.make_node("Mul", ["x", "c"], ["s"]), mean], "mean",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(factor.astype(np.float32), "c")],
    )  # fmt: skip
    model = qonnx_make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    return ModelWrapper(model).transform(InferShapes())


POOL = helper.make_node("AveragePool", ["s"], ["y"], kernel_shape=[3, 2], strides=[2, 2])
TOKENS = helper.make_node("ReduceMean", ["s"], ["y"], axes=[1], keepdims=0)
PIXELS = helper.make_node("ReduceMean", ["s"], ["y"], axes=[2, 3], keepdims=1)


@pytest.mark.parametrize(
    ("mean", "shape", "factor"),
    [
        (POOL, [1, 3, 7, 6], np.array(0.375)),
        (POOL, [1, 3, 7, 6], np.array([0.5, -2.0, 3.0]).reshape(1, 3, 1, 1)),
        (TOKENS, [1, 5, 4], np.array([0.5, 1.5, -0.25, 2.0])),
        (PIXELS, [1, 3, 4, 4], np.array([1.5, 0.25, 3.0]).reshape(3, 1, 1)),
    ],
    ids=["pool-scalar", "pool-channels", "tokens-channels", "pixels-channels"],
)
def test_a_scale_moves_past_a_mean_and_it_computes_the_same(mean, shape, factor):
    model = scaled_mean(mean, shape, factor)
    x = np.random.default_rng(5).normal(size=shape).astype(np.float32)
    want = execute_onnx(model, {"x": x})["y"]
    moved = model.transform(MoveScalesPastMeans())
    assert [n.op_type for n in moved.graph.node] == [mean.op_type, "Mul"]
    assert np.allclose(execute_onnx(moved, {"x": x})["y"], want, atol=1e-6, rtol=1e-6)


def test_a_scale_that_varies_over_the_averaged_axis_stays():
    model = scaled_mean(TOKENS, [1, 5, 4], np.arange(1, 6, dtype=np.float32).reshape(5, 1))
    moved = model.transform(MoveScalesPastMeans())
    assert [n.op_type for n in moved.graph.node] == ["Mul", "ReduceMean"]


def integer_mean(thresholds: np.ndarray | None, axis: int) -> ModelWrapper:
    """INT4 tokens (1 x 6 x 4) -> ReduceMean over the tokens or the channels
    (-> MultiThreshold)."""
    nodes = [helper.make_node("ReduceMean", ["x"], ["m"], axes=[axis], keepdims=0)]
    out = "m"
    if thresholds is not None:
        nodes.append(helper.make_node("MultiThreshold", ["m", "t"], ["y"], out_dtype="UINT2",
                                      domain="qonnx.custom_op.general"))  # fmt: skip
        out = "y"
    graph = helper.make_graph(
        nodes, "tokens",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 6, 4])],
        [helper.make_tensor_value_info(out, TensorProto.FLOAT, None)],
    )  # fmt: skip
    model = ModelWrapper(qonnx_make_model(graph, opset_imports=[helper.make_opsetid("", 13)]))
    if thresholds is not None:
        model.set_initializer("t", thresholds.astype(np.float32))
    model.set_tensor_datatype("x", DataType["INT4"])
    return model.transform(InferShapes())


@pytest.mark.parametrize(
    ("axis", "thresholds"),
    [
        (1, None),
        (1, np.array([[-1.2, 0.0, 2 / 3]] * 4)),
        (2, np.array([[-0.6, 0.25, 1.5]])),
        (2, np.array([[-0.6, 0.25, 1.5]] * 6)),  # one row per token: stays a Mul
    ],
    ids=["tokens", "tokens-thresholds", "channels-thresholds", "channels-per-token"],
)
def test_a_mean_of_integer_tokens_becomes_a_window_sum_that_computes_the_same(axis, thresholds):
    """Lowered to windows and a sum (what FINN's ``InferPoolFromReduce`` takes): one window
    of all tokens, or one of each token's channels; its 1/K a Mul or in the thresholds that
    read it, exactly."""
    model = integer_mean(thresholds, axis)
    lowered = model.transform(AveragePoolToSumPool())
    ops = [n.op_type for n in lowered.graph.node]
    assert "ReduceMean" not in ops and {"Im2Col", "ReduceSum"} <= set(ops), ops
    assert ("Mul" in ops) == (thresholds is None or thresholds.shape[0] == 6)
    rng = np.random.default_rng(2)
    for _ in range(20):
        x = {"x": rng.integers(-8, 8, size=(1, 6, 4)).astype(np.float32)}
        sink = model.graph.output[0].name
        want, got = execute_onnx(model, x)[sink], execute_onnx(lowered, x)[sink]
        assert got.shape == want.shape and np.allclose(got, want, atol=1e-6), (got, want)


def test_a_quantizer_after_a_linear_layer_on_transposed_tokens_thresholds_its_features():
    """A Mixer's token MLP: the quantizer after a linear layer on ``x.transpose(1, 2)`` gets
    QONNX's transposed layout (``NCW``); with it, the layer's bias absorbed into the
    thresholds (one row per feature) lands on the wrong axis and the model stops running."""
    from finn.transformation.streamline.absorb import AbsorbAddIntoMultiThreshold

    from brainsmith.transforms.linear_layouts import ThresholdsOnLinearFeatures

    rng = np.random.default_rng(4)
    nodes = [
        helper.make_node("Transpose", ["x"], ["t"], perm=[0, 2, 1]),
        helper.make_node("MatMul", ["t", "w"], ["p"]),
        helper.make_node("Add", ["p", "b"], ["a"]),
        helper.make_node("MultiThreshold", ["a", "th"], ["y"], out_dtype="UINT2",
                         data_layout="NCW", domain="qonnx.custom_op.general"),
    ]  # fmt: skip
    graph = helper.make_graph(
        nodes, "tokens",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 6])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(rng.integers(-3, 4, (8, 5)).astype(np.float32), "w"),
         numpy_helper.from_array(rng.normal(size=5).astype(np.float32), "b"),
         numpy_helper.from_array(np.array([[-1.0, 0.5, 2.0]], np.float32), "th")],
    )  # fmt: skip
    model = ModelWrapper(qonnx_make_model(graph, opset_imports=[helper.make_opsetid("", 13)]))
    model = model.transform(InferShapes())
    x = {"x": rng.normal(size=(1, 8, 6)).astype(np.float32)}
    want = execute_onnx(model, x)["y"]
    fixed = model.transform(ThresholdsOnLinearFeatures())
    absorbed = fixed.transform(AbsorbAddIntoMultiThreshold())
    assert [n.op_type for n in absorbed.graph.node] == ["Transpose", "MatMul", "MultiThreshold"]
    assert np.array_equal(execute_onnx(absorbed, x)["y"], want)


def assert_check_names_what_the_build_leaves(model: Path, built) -> None:
    """check's host nodes are the build's, node for node, and its hardware layers the final
    model's (each shuffle split into the layers folding makes of it)."""
    predicted = check(model)
    assert predicted.ok, predicted.error
    host = [(n["name"], n["op_type"]) for n in built.report["cpu_nodes"]["nodes"]]
    on_host = [n for n in predicted.nodes if n.placement in ("before", "after", "tail", "host")]
    assert sorted(host) == sorted((n.name, n.op_type) for n in on_host)
    final = onnx.load(str(Path(built.output_dir) / "final.onnx"))
    # a Shuffle (a transpose) is split into other layers when folded: check names no backend
    hardware = [n.backend for n in predicted.nodes if n.placement == "hardware"]
    split = ("InnerShuffle", "OuterShuffle")
    made = [n.op_type for n in final.graph.node if not n.op_type.startswith(split)]
    assert made == [b for b in hardware if b != "-"]


def assert_mean_and_classifier_in_hardware(built) -> None:
    from tests.test_zoo import assert_built_and_matches_torch

    assert_built_and_matches_torch(built)
    report = built.report
    assert {(n["op_type"], n["side"]) for n in report["cpu_nodes"]["nodes"]} <= ON_HOST
    kinds = [layer["op_type"] for layer in report["layers"]]
    assert {"Pool", "GlobalAccPool"} & set(kinds), kinds
    assert kinds[-1] == "MVAU", kinds  # the classifier after the pool


@pytest.mark.slow
@pytest.mark.xdist_group("mean-pools")
@pytest.mark.parametrize("name", SHIPPED)
def test_a_pool_or_mean_and_the_classifier_after_it_are_hardware_and_match_torch(hub, farm, name):
    """The zoo's DS-CNN with an ``nn.AvgPool2d`` and its MLP-Mixer block (before: 9 and 6
    host nodes, the ``AveragePool`` or ``ReduceMean`` and all after it among them; now 3 and
    2): built with no blueprint,
    verified after each step against torch, the pool and the classifier in hardware."""
    from tests.test_zoo import ZooBuilds

    built = ZooBuilds(farm)[name]
    assert_mean_and_classifier_in_hardware(built)
    assert_check_names_what_the_build_leaves(ZOO_DIR / f"{name}.onnx", built)


@pytest.fixture(scope="module")
def fresh(tmp_path_factory) -> Path:
    """``FRESH``, exported in one process (torch and Brevitas load once)."""
    from tests.conftest import once
    from tests.test_zoo import export

    def make() -> Path:
        folder = tmp_path_factory.mktemp("mean_pools")
        export(folder, FRESH)
        return folder

    return once("mean pool exports", make)


@pytest.mark.slow
@pytest.mark.xdist_group("mean-pools")
@pytest.mark.parametrize("name", breadth(FRESH, keep=0))
def test_other_sizes_and_widths_of_each_kind_build_and_match_torch(hub, fresh, tmp_path, name):
    """Fresh exports: a DS-CNN at other widths with a window pool and with an adaptive one, a
    3x3 window pool that does not cover the map, a Mixer at other sizes, one averaging each
    token's channels, and one with its token MLP on transposed tokens, as timm writes it."""
    from tests.test_zoo import build

    built = build(fresh / f"{name}.onnx", tmp_path / name)
    assert_mean_and_classifier_in_hardware(built)
    assert_check_names_what_the_build_leaves(fresh / f"{name}.onnx", built)
