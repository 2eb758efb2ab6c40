"""MergeOpChains: fold chains of constant Add->Add and Mul->Mul into a single node."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from onnx import NodeProto
from qonnx.core.modelwrapper import ModelWrapper
from qonnx.transformation.base import Transformation

from brainsmith.plugin import transform
from brainsmith.transforms.graph_rewrite import (
    ONNX_DOMAINS,
    add_initializer,
    drop_initializer_if_unused,
    graph_io_names,
)

COMBINE = {"Add": np.add, "Mul": np.multiply}


@transform(stage="topology_opt")
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


@dataclass(frozen=True)
class ConstantOperand:
    """A binary node's dynamic input and its constant one."""

    dynamic: str
    constant: str


@dataclass(frozen=True)
class Chain:
    """``second(first(x, a), b)``, two nodes of one type, each with a constant operand."""

    first: NodeProto
    second: NodeProto
    x: str
    a: str
    b: str


def _merge_one(model: ModelWrapper) -> bool:
    protected = graph_io_names(model)
    for first in model.graph.node:
        chain = _chain_from(model, first, protected)
        if chain is not None:
            _fold(model, chain)
            return True
    return False


def _chain_from(model: ModelWrapper, first: NodeProto, protected: set[str]) -> Chain | None:
    """The chain ``first`` starts, when its result is read by its like alone."""
    if first.op_type not in COMBINE or first.domain not in ONNX_DOMAINS:
        return None
    split = _split_constant(model, first)
    if split is None or first.output[0] in protected:
        return None
    consumers = model.find_consumers(first.output[0])
    second = consumers[0] if len(consumers) == 1 else None
    if second is None or (second.op_type, second.domain) != (first.op_type, first.domain):
        return None
    second_split = _split_constant(model, second)
    if second_split is None or second_split.dynamic != first.output[0]:
        return None
    return Chain(first, second, split.dynamic, split.constant, second_split.constant)


def _fold(model: ModelWrapper, chain: Chain) -> None:
    """One node computing ``chain``: the second reads ``x`` and the combined constant."""
    a, b = model.get_initializer(chain.a), model.get_initializer(chain.b)
    combined = _combine(chain.first.op_type, a, b)
    chain.second.input[0] = chain.x
    chain.second.input[1] = add_initializer(model, f"{chain.b}_merged", combined)
    model.graph.node.remove(chain.first)
    for name in (chain.a, chain.b):
        drop_initializer_if_unused(model, name)


def _split_constant(model: ModelWrapper, node: NodeProto) -> ConstantOperand | None:
    """The operands of a binary node with exactly one initializer."""
    if len(node.input) != 2:
        return None
    left, right = (model.get_initializer(name) is not None for name in node.input)
    if right and not left:
        return ConstantOperand(node.input[0], node.input[1])
    if left and not right:
        return ConstantOperand(node.input[1], node.input[0])
    return None


def _combine(op_type: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if np.issubdtype(a.dtype, np.floating):
        wide: np.ndarray = COMBINE[op_type](a.astype(np.float64), b.astype(np.float64))
        return wide.astype(a.dtype)
    combined: np.ndarray = COMBINE[op_type](a, b)
    return combined.astype(a.dtype)  # integer wrap-around is associative too
