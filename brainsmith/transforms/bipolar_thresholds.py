"""BipolarThresholdsToBinary: a bipolar activation becomes 0/1 thresholds and ``2x - 1``."""

from __future__ import annotations

import numpy as np
from onnx import helper
from qonnx.core.datatype import DataType
from qonnx.core.modelwrapper import ModelWrapper
from qonnx.custom_op.registry import getCustomOp
from qonnx.transformation.base import Transformation

from brainsmith.plugin import transform
from brainsmith.transforms.graph_rewrite import add_initializer, unique_tensor_name


@transform(
    name="BipolarThresholdsToBinary",
    stage="streamline",
    description="Bipolar MultiThreshold -> 0/1 MultiThreshold (UINT2), Mul 2, Add -1",
)
class BipolarThresholdsToBinary(Transformation):
    """Rewrite each ``MultiThreshold`` with a bipolar output (``out_scale`` 2, ``out_bias``
    -1: -1 or +1) as one giving 0 or 1 followed by ``Mul 2`` and ``Add -1``. Its output is
    two bits wide (``UINT2``): FINN's matrix layers take no unsigned 1-bit operand.

    QONNX's ``ConvertBipolarMatMulToXnorPopcount`` does this where both operands of a matrix
    product are bipolar; a bipolar activation read by anything else (a matrix layer with
    multi-bit weights, say) keeps its scale and bias, which FINN's ``InferThresholdingLayer``
    refuses ("out_scale must be 1"). Streamlining then moves the ``Mul`` and ``Add`` past the
    next linear layer into its thresholds, as for any other scale.
    """

    def apply(self, model: ModelWrapper) -> tuple[ModelWrapper, bool]:
        bipolar = DataType["BIPOLAR"]
        for index, node in reversed(list(enumerate(model.graph.node))):
            if node.op_type != "MultiThreshold":
                continue
            thresholds = getCustomOp(node)
            if (
                thresholds.get_nodeattr("out_dtype") != "BIPOLAR"
                or thresholds.get_nodeattr("out_scale") != 2.0
                or thresholds.get_nodeattr("out_bias") != -1.0
            ):
                continue
            bipolar_out = node.output[0]
            binary = unique_tensor_name(model, f"{bipolar_out}_binary")
            doubled = unique_tensor_name(model, f"{bipolar_out}_doubled")
            node.output[0] = binary
            thresholds.set_nodeattr("out_dtype", "UINT2")
            thresholds.set_nodeattr("out_scale", 1.0)
            thresholds.set_nodeattr("out_bias", 0.0)
            two = add_initializer(model, f"{node.name}_two", np.array(2.0, dtype=np.float32))
            minus_one = add_initializer(model, f"{node.name}_minus_one",
                                        np.array(-1.0, dtype=np.float32))  # fmt: skip
            shape = model.get_tensor_shape(bipolar_out)
            for name in (binary, doubled):
                model.set_tensor_shape(name, shape)
            model.graph.node.insert(index + 1, helper.make_node(
                "Mul", [binary, two], [doubled], name=f"{node.name}_to_bipolar_mul"))  # fmt: skip
            model.graph.node.insert(index + 2, helper.make_node(
                "Add", [doubled, minus_one], [bipolar_out], name=f"{node.name}_to_bipolar_add"))  # fmt: skip
            model.set_tensor_datatype(binary, DataType["UINT2"])
            model.set_tensor_datatype(doubled, DataType["FLOAT32"])
            if model.get_tensor_datatype(bipolar_out) == bipolar:
                model.set_tensor_datatype(bipolar_out, DataType["FLOAT32"])
        return model, False  # one pass rewrites every bipolar activation
