"""Build the example models in examples/models/ (deterministic): ``python -m examples.make_models``.

- ``mlp_4bit.onnx``: a 64->32->10 MLP in QONNX form, 4-bit weights and activations, laid out
  the way a Brevitas export is (Quant nodes on the input, on each weight and after each ReLU).
- ``transformer_block.onnx``: the pre-norm projection of a transformer block: affine
  LayerNormalization, Dropout, an 8-bit quantized 32x32 projection with 4-bit weights,
  division by sqrt(d) and an 8-bit quantized Softmax.

Weights are random (seeded); activation scales are calibrated on seeded random inputs.
"""

from __future__ import annotations

import sys
from itertools import pairwise
from pathlib import Path

import numpy as np
from onnx import NodeProto, TensorProto, helper
from qonnx.core.modelwrapper import ModelWrapper
from qonnx.transformation.infer_shapes import InferShapes
from qonnx.util.basic import qonnx_make_model

MODELS = Path(__file__).resolve().parent / "models"
QUANT_DOMAIN = "qonnx.custom_op.general"
ONNX_OPSET = 17  # FINN's LayerNorm conversion expects opset-17 LayerNormalization
SEED = 2024


class GraphBuilder:
    """Collects nodes and constants of one graph, naming tensors predictably."""

    def __init__(self) -> None:
        self.nodes: list[NodeProto] = []
        self.constants: dict[str, np.ndarray] = {}

    def const(self, name: str, value: np.ndarray | float) -> str:
        self.constants[name] = np.asarray(value, dtype=np.float32)
        return name

    def node(self, op_type: str, inputs: list[str], output: str, **attrs: object) -> str:
        domain = QUANT_DOMAIN if op_type == "Quant" else ""
        self.nodes.append(
            helper.make_node(op_type, inputs, [output], name=output, domain=domain, **attrs)
        )
        return output

    def quant(
        self,
        source: str,
        name: str,
        scale: np.ndarray | float,
        bits: int,
        signed: bool,
        narrow: bool = False,
    ) -> str:
        """A Brevitas-style integer Quant node (zero point 0, round-to-nearest-even)."""
        inputs = [
            source,
            self.const(f"{name}_scale", scale),
            self.const(f"{name}_zeropt", 0.0),
            self.const(f"{name}_bitwidth", float(bits)),
        ]
        return self.node(
            "Quant", inputs, name, signed=int(signed), narrow=int(narrow), rounding_mode="ROUND"
        )

    def quant_weight(self, name: str, weight: np.ndarray, bits: int) -> str:
        """Per-output-channel symmetric narrow-range weight quantization."""
        levels = 2 ** (bits - 1) - 1
        scale = np.abs(weight).max(axis=0, keepdims=True) / levels
        return self.quant(
            self.const(name, weight), f"{name}_quant", scale, bits, signed=True, narrow=True
        )

    def model(
        self, name: str, inputs: dict[str, list[int]], outputs: dict[str, list[int]]
    ) -> ModelWrapper:
        graph = helper.make_graph(
            self.nodes,
            name,
            [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs.items()],
            [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in outputs.items()],
            initializer=[
                helper.make_tensor(n, TensorProto.FLOAT, v.shape, v.flatten().tolist())
                for n, v in self.constants.items()
            ],
        )
        opsets = [helper.make_opsetid("", ONNX_OPSET), helper.make_opsetid(QUANT_DOMAIN, 1)]
        proto = qonnx_make_model(graph, producer_name="brainsmith-examples", opset_imports=opsets)
        return ModelWrapper(proto).transform(InferShapes(), cleanup=False)


def calibrated_scale(values: np.ndarray, bits: int, signed: bool) -> float:
    """Scale that maps the 99.9th percentile of |values| to the largest quantized level.

    Rounded to 6 significant digits: the calibration data come from matrix products, whose
    last bits depend on the CPU's BLAS kernels, and the committed models must regenerate
    byte for byte on any machine.
    """
    levels = 2 ** (bits - 1) - 1 if signed else 2**bits - 1
    return float(f"{np.percentile(np.abs(values), 99.9) / levels:.6g}")


def quantize(
    values: np.ndarray, scale: float | np.ndarray, bits: int, signed: bool, narrow: bool = False
) -> np.ndarray:
    low = -(2 ** (bits - 1)) + int(narrow) if signed else 0
    high = 2 ** (bits - 1) - 1 if signed else 2**bits - 1
    return np.clip(np.round(values / scale), low, high) * scale


def make_mlp(seed: int = SEED) -> ModelWrapper:
    """64 -> 32 -> 10 MLP with 4-bit weights and activations (QONNX Quant nodes)."""
    rng = np.random.default_rng(seed)
    sizes = [64, 32, 10]
    weights = [
        (rng.normal(size=(fan_in, fan_out)) / np.sqrt(fan_in)).astype(np.float32)
        for fan_in, fan_out in pairwise(sizes)
    ]
    biases = [(0.1 * rng.normal(size=n)).astype(np.float32) for n in sizes[1:]]
    calibration = rng.normal(size=(256, sizes[0])).astype(np.float32)

    g = GraphBuilder()
    in_scale = calibrated_scale(calibration, 4, signed=True)
    tensor = g.quant("global_in", "input_quant", in_scale, 4, signed=True)
    activations = quantize(calibration, in_scale, 4, signed=True)
    for layer, (weight, bias) in enumerate(zip(weights, biases, strict=True)):
        w_quant = g.quant_weight(f"fc{layer}_weight", weight, 4)
        tensor = g.node("MatMul", [tensor, w_quant], f"fc{layer}_matmul")
        last = layer == len(weights) - 1
        tensor = g.node(
            "Add",
            [tensor, g.const(f"fc{layer}_bias", bias)],
            "global_out" if last else f"fc{layer}_add",
        )
        if last:
            break
        tensor = g.node("Relu", [tensor], f"fc{layer}_relu")
        pre_activation = np.maximum(activations @ _fake_quant_weight(weight, 4) + bias, 0)
        scale = calibrated_scale(pre_activation, 4, signed=False)
        tensor = g.quant(tensor, f"fc{layer}_act_quant", scale, 4, signed=False)
        activations = quantize(pre_activation, scale, 4, signed=False)
    return g.model("mlp_4bit", {"global_in": [1, sizes[0]]}, {"global_out": [1, sizes[-1]]})


def make_transformer_block(seed: int = SEED) -> ModelWrapper:
    """LayerNorm(affine) -> Dropout -> 8-bit x 4-bit projection -> /sqrt(d) -> 8-bit Softmax."""
    rng = np.random.default_rng(seed + 1)
    seq, dim = 16, 32
    gamma = (1 + 0.1 * rng.normal(size=dim)).astype(np.float32)
    beta = (0.1 * rng.normal(size=dim)).astype(np.float32)
    weight = (rng.normal(size=(dim, dim)) / np.sqrt(dim)).astype(np.float32)
    calibration = rng.normal(size=(64, seq, dim)).astype(np.float32)

    g = GraphBuilder()
    normed = g.node(
        "LayerNormalization",
        ["global_in", g.const("ln_gamma", gamma), g.const("ln_beta", beta)],
        "ln",
        axis=-1,
        epsilon=1e-5,
    )
    dropped = g.node("Dropout", [normed, g.const("dropout_ratio", 0.1)], "dropout")
    ln_values = _layernorm(calibration) * gamma + beta
    ln_scale = calibrated_scale(ln_values, 8, signed=True)
    tensor = g.quant(dropped, "ln_quant", ln_scale, 8, signed=True)
    w_quant = g.quant_weight("proj_weight", weight, 4)
    tensor = g.node("MatMul", [tensor, w_quant], "proj_matmul")
    tensor = g.node("Div", [tensor, g.const("sqrt_dim", np.sqrt(dim))], "scale_div")
    logits = quantize(ln_values, ln_scale, 8, True) @ _fake_quant_weight(weight, 4) / np.sqrt(dim)
    logit_scale = calibrated_scale(logits, 8, signed=True)
    tensor = g.quant(tensor, "logits_quant", logit_scale, 8, signed=True)
    g.node("Softmax", [tensor], "global_out", axis=-1)
    shape = [1, seq, dim]
    return g.model("transformer_block", {"global_in": shape}, {"global_out": shape})


def _fake_quant_weight(weight: np.ndarray, bits: int) -> np.ndarray:
    scale = np.abs(weight).max(axis=0, keepdims=True) / (2 ** (bits - 1) - 1)
    return quantize(weight, scale, bits, signed=True, narrow=True)


def _layernorm(values: np.ndarray, eps: float = 1e-5) -> np.ndarray:
    centred = values - values.mean(axis=-1, keepdims=True)
    return centred / np.sqrt((centred**2).mean(axis=-1, keepdims=True) + eps)


def main(folder: Path = MODELS) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name, make in (("mlp_4bit", make_mlp), ("transformer_block", make_transformer_block)):
        path = folder / f"{name}.onnx"
        make().save(str(path))
        written.append(path)
    return written


if __name__ == "__main__":
    for path in main(Path(sys.argv[1]) if len(sys.argv) > 1 else MODELS):
        print(f"{path} ({path.stat().st_size} bytes)")
