"""ConvertDivToMul: turn a float Div by a constant into a Mul by its reciprocal."""

from __future__ import annotations

import numpy as np
from onnx import NodeProto
from qonnx.core.modelwrapper import ModelWrapper
from qonnx.transformation.base import Transformation

from brainsmith.plugin import transform
from brainsmith.transforms.graph_rewrite import (
    add_initializer,
    drop_initializer_if_unused,
    rewrite_each,
)


@transform(stage="topology_opt")
class ConvertDivToMul(Transformation):  # type: ignore[misc]
    """Replace ``Div(x, c)`` by ``Mul(x, 1/c)`` for a float constant ``c`` without zeros.

    Streamlining moves and absorbs Mul nodes (into thresholds, past MatMul) but not Div.
    Integer Div truncates and is left alone; the reciprocal is rounded once, from float64,
    and gets its own initializer so another reader of ``c`` is unaffected.
    """

    def apply(self, model: ModelWrapper) -> tuple[ModelWrapper, bool]:
        rewrite_each(model, "Div", _convert, onnx_only=True)
        return model, False  # one pass converts every eligible Div


def _convert(model: ModelWrapper, node: NodeProto) -> bool:
    divisor = model.get_initializer(node.input[1])
    if divisor is None or not np.issubdtype(divisor.dtype, np.floating) or np.any(divisor == 0):
        return False
    reciprocal = (1.0 / divisor.astype(np.float64)).astype(divisor.dtype)
    old = node.input[1]
    node.op_type = "Mul"
    node.input[1] = add_initializer(model, f"{old}_reciprocal", reciprocal)
    drop_initializer_if_unused(model, old)
    return True
