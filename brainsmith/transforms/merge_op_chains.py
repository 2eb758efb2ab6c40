"""MergeOpChains: fold chains of constant Add->Add and Mul->Mul into a single node."""

from __future__ import annotations

import numpy as np
from onnx import NodeProto
from qonnx.core.modelwrapper import ModelWrapper
from qonnx.transformation.base import Transformation

from brainsmith.plugin import transform
from brainsmith.transforms.graph_rewrite import (
    add_initializer,
    drop_initializer_if_unused,
    graph_io_names,
)

COMBINE = {"Add": np.add, "Mul": np.multiply}


@transform(
    name="MergeOpChains",
    stage="topology_opt",
    description="Fold Add(Add(x, a), b) into Add(x, a+b) and Mul(Mul(x, a), b) into Mul(x, a*b)",
)
class MergeOpChains(Transformation):  # type: ignore[misc]
    """Fold constant Add->Add and Mul->Mul chains into one Add or Mul with a combined constant.

    Affine extraction (ExpandNorms), scale handling and Div conversion leave such chains;
    one node per chain means fewer ops for streamlining to move. Only chains whose middle
    tensor has a single reader and is not a graph output are folded; constants may sit at
    either input. Float constants are combined in float64 and rounded once.
    """

    def apply(self, model: ModelWrapper) -> tuple[ModelWrapper, bool]:
        while _merge_one(model):
            pass
        return model, False  # every chain has been folded


def _merge_one(model: ModelWrapper) -> bool:
    protected = graph_io_names(model)
    for first in model.graph.node:
        if first.op_type not in COMBINE or first.domain not in ("", "ai.onnx"):
            continue
        split = _split_constant(model, first)
        if split is None or first.output[0] in protected:
            continue
        consumers = model.find_consumers(first.output[0])
        if len(consumers) != 1 or consumers[0].op_type != first.op_type:
            continue
        second = consumers[0]
        if second.domain != first.domain:
            continue
        second_split = _split_constant(model, second)
        if second_split is None or second_split[0] != first.output[0]:
            continue
        (x, a_name), (_, b_name) = split, second_split
        a, b = model.get_initializer(a_name), model.get_initializer(b_name)
        combined = _combine(first.op_type, a, b)
        second.input[0] = x
        second.input[1] = add_initializer(model, f"{b_name}_merged", combined)
        model.graph.node.remove(first)
        for name in (a_name, b_name):
            drop_initializer_if_unused(model, name)
        return True
    return False


def _split_constant(model: ModelWrapper, node: NodeProto) -> tuple[str, str] | None:
    """(dynamic input, constant input) of a binary node with exactly one initializer."""
    if len(node.input) != 2:
        return None
    left, right = (model.get_initializer(name) is not None for name in node.input)
    if right and not left:
        return node.input[0], node.input[1]
    if left and not right:
        return node.input[1], node.input[0]
    return None


def _combine(op_type: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if np.issubdtype(a.dtype, np.floating):
        wide: np.ndarray = COMBINE[op_type](a.astype(np.float64), b.astype(np.float64))
        return wide.astype(a.dtype)
    combined: np.ndarray = COMBINE[op_type](a, b)
    return combined.astype(a.dtype)  # integer wrap-around is associative too
