"""ExpandNorms: move LayerNormalization's affine scale and bias into separate Mul and Add nodes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
from onnx import NodeProto, TensorProto, helper
from qonnx.core.modelwrapper import ModelWrapper
from qonnx.transformation.base import Transformation
from qonnx.transformation.infer_shapes import InferShapes

from brainsmith.plugin import transform
from brainsmith.transforms.graph_rewrite import (
    add_initializer,
    drop_initializer_if_unused,
    rewrite_each,
    unique_tensor_name,
)

Mode = Literal["affine", "primitive"]
ONNX_DEFAULTS = {"axis": -1, "epsilon": 1e-5}  # FINN's InferLayerNorm fails when these are implicit


@transform(stage="topology_opt")
class ExpandNorms(Transformation):  # type: ignore[misc]
    """Split LayerNormalization into a plain norm plus Mul (scale) and Add (bias).

    FINN's ``InferLayerNorm`` only converts a LayerNormalization whose scale is all ones,
    which has an explicit zero bias input and explicit ``axis``/``epsilon`` attributes; the
    extracted Mul/Add are then absorbed by streamlining (e.g. into the next MultiThreshold).

    ``mode="affine"`` (default) keeps one LayerNormalization in exactly that form, so FINN
    turns it into its LayerNorm kernel. ``mode="primitive"`` replaces the norm by
    ReduceMean/Sub/Mul/ReduceMean/Add/Sqrt/Div, for targets without a LayerNorm kernel.
    """

    def __init__(self, mode: Mode = "affine") -> None:
        super().__init__()
        if mode not in ("affine", "primitive"):
            raise ValueError(f"ExpandNorms mode must be 'affine' or 'primitive', got {mode!r}")
        self.mode = mode

    def apply(self, model: ModelWrapper) -> tuple[ModelWrapper, bool]:
        if rewrite_each(model, "LayerNormalization", self._expand, onnx_only=True):
            model = model.transform(InferShapes())
        return model, False

    def _expand(self, model: ModelWrapper, node: NodeProto) -> bool:
        norm = _norm(model, node)
        if norm is None or not self._takes(model, norm):
            return False
        originals = list(node.input[1:])
        result = node.output[0]
        normed = unique_tensor_name(model, f"{result}_normed") if norm.affine else result
        index = _position(model, node)
        if self.mode == "affine":
            _make_plain(model, node, norm.scale, norm.bias)
            node.output[0] = normed
            new_nodes: list[NodeProto] = []
            index += 1
        else:
            new_nodes = _primitive_norm(model, node, normed)
            model.graph.node.remove(node)
        new_nodes.extend(_affine_nodes(model, norm, normed, result))
        for shift, new in enumerate(new_nodes):
            model.graph.node.insert(index + shift, new)
        for name in originals:
            drop_initializer_if_unused(model, name)
        return True

    def _takes(self, model: ModelWrapper, norm: Norm) -> bool:
        """Whether this mode rewrites ``norm``: one not yet in the form FINN converts
        (affine), one the primitive ops compute exactly (primitive)."""
        if self.mode == "affine":
            return bool(norm.affine) or not norm.has_bias or not _explicit_attributes(norm.node)
        return _primitives_compute_the_same(model, norm.node)


@dataclass(frozen=True)
class Norm:
    """A LayerNormalization with constant scale and bias, and the ``(op_type, parameter)``
    of the Mul and Add that take its affine part out (none for a unit scale, zero bias)."""

    node: NodeProto
    scale: np.ndarray
    bias: np.ndarray | None
    has_bias: bool
    affine: list[tuple[str, str]]


def _norm(model: ModelWrapper, node: NodeProto) -> Norm | None:
    scale = model.get_initializer(node.input[1])
    has_bias = len(node.input) > 2 and node.input[2] != ""
    bias = model.get_initializer(node.input[2]) if has_bias else None
    if scale is None or (has_bias and bias is None):
        return None  # a computed scale/bias cannot be checked or moved safely
    affine = [("Mul", node.input[1])] if not np.all(scale == 1) else []
    if bias is not None and np.any(bias):
        affine.append(("Add", node.input[2]))
    return Norm(node, scale, bias, has_bias, affine)


def _affine_nodes(model: ModelWrapper, norm: Norm, normed: str, result: str) -> list[NodeProto]:
    """The Mul and Add from ``normed`` to ``result`` that apply ``norm``'s scale and bias."""
    nodes = []
    tail = normed
    for position, (op_type, parameter) in enumerate(norm.affine):
        last = position == len(norm.affine) - 1
        out = result if last else unique_tensor_name(model, f"{result}_scaled")
        label = f"{norm.node.name or result}_{'scale' if op_type == 'Mul' else 'bias'}"
        nodes.append(helper.make_node(op_type, [tail, parameter], [out], name=label))
        tail = out
    return nodes


def _make_plain(
    model: ModelWrapper, node: NodeProto, scale: np.ndarray, bias: np.ndarray | None
) -> None:
    """Unit scale, explicit zero bias, explicit axis and epsilon: FINN requires all four."""
    present = {attr.name for attr in node.attribute}
    for name, default in ONNX_DEFAULTS.items():
        if name not in present:
            node.attribute.append(helper.make_attribute(name, default))
    base = node.output[0]
    node.input[1] = add_initializer(model, f"{base}_unit_scale", np.ones_like(scale))
    zeros = np.zeros_like(scale if bias is None else bias)
    zero_bias = add_initializer(model, f"{base}_zero_bias", zeros)
    if len(node.input) > 2:
        node.input[2] = zero_bias
    else:
        node.input.append(zero_bias)


def _explicit_attributes(node: NodeProto) -> bool:
    return set(ONNX_DEFAULTS) <= {attr.name for attr in node.attribute}


def _primitives_compute_the_same(model: ModelWrapper, node: NodeProto) -> bool:
    """Primitive ops reproduce the norm only for float32 inputs of known rank, no extra outputs."""
    if any(node.output[1:]):
        return False  # Mean/InvStdDev outputs are read by someone
    info = model.get_tensor_valueinfo(node.input[0])
    if info is not None and info.type.tensor_type.elem_type != TensorProto.FLOAT:
        return False  # LayerNormalization computes in float32 (stash_type); Sub/Div would not
    return model.get_tensor_shape(node.input[0]) is not None


def _position(model: ModelWrapper, node: NodeProto) -> int:
    for index, candidate in enumerate(model.graph.node):
        if candidate is node:
            return index
    raise ValueError(f"node {node.name!r} is not in the graph")


@dataclass(frozen=True)
class Reduction:
    """How a ReduceMean gets its axes: as an input (opset 18 on) or as an attribute
    (``axes``; None adds no attribute)."""

    inputs: list[str]
    axes: list[int] | None


def _primitive_norm(model: ModelWrapper, node: NodeProto, out: str) -> list[NodeProto]:
    """(x - mean) / sqrt(var + eps) over the normalized axes, in standard ONNX ops."""
    x, base = node.input[0], node.output[0]
    attrs = {attr.name: helper.get_attribute_value(attr) for attr in node.attribute}
    rank = len(model.get_tensor_shape(x))
    axes = list(range(attrs.get("axis", -1) % rank, rank))
    eps = np.array(attrs.get("epsilon", 1e-5), dtype=np.float32)
    if model.get_opset_imports().get("", 17) >= 18:  # ReduceMean's axes became an input
        axes_name = add_initializer(model, f"{base}_axes", np.array(axes, dtype=np.int64))
        reduce = Reduction(inputs=[axes_name], axes=None)
    else:
        reduce = Reduction(inputs=[], axes=axes)

    def name(suffix: str) -> str:
        return unique_tensor_name(model, f"{base}_{suffix}")

    def reduce_mean(source: str, target: str) -> NodeProto:
        inputs = [source, *reduce.inputs]
        return helper.make_node("ReduceMean", inputs, [target], keepdims=1, axes=reduce.axes)

    mean, centred, squared, var = name("mean"), name("centred"), name("squared"), name("var")
    shifted, std = name("var_eps"), name("std")
    eps_name = add_initializer(model, f"{base}_epsilon", eps)
    return [
        reduce_mean(x, mean),
        helper.make_node("Sub", [x, mean], [centred]),
        helper.make_node("Mul", [centred, centred], [squared]),
        reduce_mean(squared, var),
        helper.make_node("Add", [var, eps_name], [shifted]),
        helper.make_node("Sqrt", [shifted], [std]),
        helper.make_node("Div", [centred, std], [out]),
    ]
