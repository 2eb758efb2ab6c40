"""Small real ONNX models for build tests, written with onnx's helper functions or derived
from the shipped examples."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

REPO = Path(__file__).resolve().parents[2]
MLP = REPO / "examples" / "models" / "mlp_4bit.onnx"
TRANSFORMER = REPO / "examples" / "models" / "transformer_block.onnx"


def _save(graph, path: Path) -> Path:
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def float_mlp(path: Path) -> Path:
    """An unquantized Gemm + Relu network (what a plain torch.onnx.export gives)."""
    rng = np.random.default_rng(0)
    weights = numpy_helper.from_array(rng.standard_normal((64, 32)).astype(np.float32), "W")
    bias = numpy_helper.from_array(np.zeros(32, np.float32), "B")
    graph = helper.make_graph(
        [helper.make_node("Gemm", ["x", "W", "B"], ["y"]), helper.make_node("Relu", ["y"], ["z"])],
        "float_mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, 32])],
        [weights, bias],
    )
    return _save(graph, path)


def float_norm_softmax(path: Path) -> Path:
    """LayerNormalization + Softmax in float: FINN has float kernels for both."""
    scale = numpy_helper.from_array(np.ones(16, np.float32), "scale")
    graph = helper.make_graph(
        [
            helper.make_node("LayerNormalization", ["x", "scale"], ["y"], axis=-1),
            helper.make_node("Softmax", ["y"], ["z"], axis=-1),
        ],
        "float_norm",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 16])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, 8, 16])],
        [scale],
    )
    return _save(graph, path)


def mlp_with(path: Path, change) -> Path:
    """The shipped MLP after ``change(model_proto)``."""
    model = onnx.load(MLP)
    change(model)
    onnx.save(model, path)
    return path


def node_domain(domain: str, op_type: str = "Relu"):
    """A change: the first ``op_type`` node gets ``domain``."""

    def change(model) -> None:
        node = next(n for n in model.graph.node if n.op_type == op_type)
        node.domain = domain

    return change


def dynamic_axis(axis: int, name: str = "batch"):
    """A change: axis ``axis`` of the graph input and output becomes symbolic."""

    def change(model) -> None:
        for tensor in (model.graph.input[0], model.graph.output[0]):
            dim = tensor.type.tensor_type.shape.dim[axis]
            dim.Clear()
            dim.dim_param = name
        del model.graph.value_info[:]

    return change


def export_zoo(name: str, folder: Path) -> Path:
    """Export zoo entry ``name`` (Brevitas, the zoo's seed) with its vectors into ``folder``;
    for the full-size networks the repository leaves to be exported on demand."""
    exported = subprocess.run(
        [sys.executable, "-c", "import sys; from pathlib import Path\n"
         "from examples.zoo import export_network\n"
         "export_network(sys.argv[1], Path(sys.argv[2]))", name, str(folder)],
        capture_output=True, text=True, cwd=REPO, timeout=900,
    )  # fmt: skip
    assert exported.returncode == 0, exported.stderr[-3000:]
    return folder / f"{name}.onnx"


CONV_1X1 = {"kernel_shape": [1, 1], "strides": [1, 1], "pads": [0, 0, 0, 0], "dilations": [1, 1],
            "group": 1}  # fmt: skip


def deep_ties(
    path: Path, layers: int = 8, channels: int = 32, image: int = 0, seed: int = 0
) -> Path:
    """A chain of integer layers whose quantizer inputs land on half steps: each layer a
    6-bit quantizer (scale 1), a product with sparse 2-bit weights (a 1x1 convolution on
    ``image`` x ``image`` NCHW inputs, else a matrix product) and a scale of 1/2, so about
    half of every quantizer's inputs lie exactly halfway between two steps, and which ones
    depends on how each earlier layer rounded its own (a cascade of rounding ties)."""
    rng = np.random.default_rng(seed)
    shape = [1, channels, image, image] if image else [1, channels]
    constants = {"one": 1.0, "zero": 0.0, "six": 6.0, "two": 2.0, "half": 0.5}
    initializers = [numpy_helper.from_array(np.float32(v), k) for k, v in constants.items()]

    def quant(x: str, out: str, bits: str) -> onnx.NodeProto:
        return helper.make_node("Quant", [x, "one", "zero", bits], [out],
                                domain="qonnx.custom_op.general", signed=1, narrow=0,
                                rounding_mode="ROUND")  # fmt: skip

    nodes, h = [], "x"
    for i in range(layers):
        nodes.append(quant(h, f"q{i}", "six"))
        if i == layers - 1:
            break
        sparse = rng.random((channels, channels)) < 4 / channels
        weights = (sparse * rng.choice([-1.0, 1.0], (channels, channels))).astype(np.float32)
        if image:
            weights = weights.T.reshape(channels, channels, 1, 1)
        initializers.append(numpy_helper.from_array(weights, f"w{i}"))
        nodes.append(quant(f"w{i}", f"wq{i}", "two"))
        product = helper.make_node("Conv", [f"q{i}", f"wq{i}"], [f"m{i}"], **CONV_1X1) \
            if image else helper.make_node("MatMul", [f"q{i}", f"wq{i}"], [f"m{i}"])  # fmt: skip
        nodes += [product, helper.make_node("Mul", [f"m{i}", "half"], [f"h{i}"])]
        h = f"h{i}"
    graph = helper.make_graph(
        nodes,
        "deep_ties",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info(f"q{layers - 1}", TensorProto.FLOAT, shape)],
        initializers,
    )
    return _save(graph, path)
