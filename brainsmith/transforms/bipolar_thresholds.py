"""BipolarThresholdsToBinary: a bipolar activation becomes 0/1 thresholds and ``2x - 1``."""

from __future__ import annotations

import numpy as np
from onnx import NodeProto, helper
from qonnx.core.datatype import DataType
from qonnx.core.modelwrapper import ModelWrapper
from qonnx.custom_op.registry import getCustomOp
from qonnx.transformation.base import Transformation

from brainsmith.plugin import transform
from brainsmith.transforms.graph_rewrite import add_initializer, unique_tensor_name


@transform(stage="streamline")
class BipolarThresholdsToBinary(Transformation):  # type: ignore[misc]
    """Bipolar MultiThreshold -> 0/1 MultiThreshold (UINT2), Mul 2, Add -1.

    Rewrite each ``MultiThreshold`` with a bipolar output (``out_scale`` 2, ``out_bias``
    -1: -1 or +1) as one giving 0 or 1 followed by ``Mul 2`` and ``Add -1``. Its output is
    two bits wide (``UINT2``): FINN's matrix layers take no unsigned 1-bit operand.

    QONNX's ``ConvertBipolarMatMulToXnorPopcount`` does this where both operands of a matrix
    product are bipolar; a bipolar activation read by anything else (a matrix layer with
    multi-bit weights, say) keeps its scale and bias, which FINN's ``InferThresholdingLayer``
    refuses ("out_scale must be 1"). Streamlining then moves the ``Mul`` and ``Add`` past the
    next linear layer into its thresholds, as for any other scale.
    """

    def apply(self, model: ModelWrapper) -> tuple[ModelWrapper, bool]:
        for node in [n for n in model.graph.node if n.op_type == "MultiThreshold"]:
            thresholds = getCustomOp(node)
            if (
                thresholds.get_nodeattr("out_dtype") != "BIPOLAR"
                or thresholds.get_nodeattr("out_scale") != 2.0
                or thresholds.get_nodeattr("out_bias") != -1.0
            ):
                continue
            thresholds.set_nodeattr("out_dtype", "UINT2")
            thresholds.set_nodeattr("out_scale", 1.0)
            thresholds.set_nodeattr("out_bias", 0.0)
            chain = [node, *_passed(model, node.output[0])]
            for link in chain[:-1]:
                model.set_tensor_datatype(link.output[0], DataType["UINT2"])
            _insert_2x_minus_1(model, chain[-1])
        return model, False  # one pass rewrites every bipolar activation


PASSED = ("MaxPool", "MaxPoolNHWC", "Transpose", "Reshape", "Flatten", "Im2Col")


def _passed(model: ModelWrapper, tensor: str) -> list[NodeProto]:
    """The nodes after ``tensor`` that ``2x - 1`` commutes with — max pools (an increasing
    map keeps the maximum), layout changes, unpadded sliding windows — each the only reader
    of the one before; ``2x - 1`` goes after them, next to the layer that computes with it."""
    outputs = {t.name for t in model.graph.output}
    chain: list[NodeProto] = []
    while tensor not in outputs:
        readers = model.find_consumers(tensor) or []
        if len(readers) != 1 or readers[0].op_type not in PASSED:
            break
        reader = readers[0]
        if reader.op_type == "Im2Col" and any(getCustomOp(reader).get_nodeattr("pad_amount")):
            break  # its zero padding would become -1
        chain.append(reader)
        tensor = reader.output[0]
    return chain


def _insert_2x_minus_1(model: ModelWrapper, producer: NodeProto) -> None:
    """Make ``producer`` write its 0/1 result to a new tensor, then ``Mul 2`` and ``Add -1``
    write the tensor it wrote before."""
    result = producer.output[0]
    binary = unique_tensor_name(model, f"{result}_binary")
    doubled = unique_tensor_name(model, f"{result}_doubled")
    producer.output[0] = binary
    two = add_initializer(model, f"{producer.name}_two", np.array(2.0, dtype=np.float32))
    minus_one = add_initializer(model, f"{producer.name}_minus_one",
                                np.array(-1.0, dtype=np.float32))  # fmt: skip
    shape = model.get_tensor_shape(result)
    for name in (binary, doubled):
        model.set_tensor_shape(name, shape)
    index = list(model.graph.node).index(producer)
    model.graph.node.insert(index + 1, helper.make_node(
        "Mul", [binary, two], [doubled], name=f"{producer.name}_to_bipolar_mul"))  # fmt: skip
    model.graph.node.insert(index + 2, helper.make_node(
        "Add", [doubled, minus_one], [result], name=f"{producer.name}_to_bipolar_add"))  # fmt: skip
    model.set_tensor_datatype(binary, DataType["UINT2"])
    model.set_tensor_datatype(doubled, DataType["FLOAT32"])
    model.set_tensor_datatype(result, DataType["FLOAT32"])
