"""The nodes a build leaves on the host (the dataflow parent graph around the accelerator):
which, before or after it, and their share of the network's multiply-accumulates."""

from __future__ import annotations

import math
from collections import Counter

TYPE_CHECKING = False
if TYPE_CHECKING:
    import onnx
    from qonnx.core.modelwrapper import ModelWrapper

    from brainsmith.report_schema.estimates import CpuNode, CpuNodes

PARTITION = "StreamingDataflowPartition"
MAC_OPS = ("MatMul", "Gemm", "Conv")
SCALING_OPS = ("Mul", "Div", "Add", "Sub")


def cpu_nodes(parent: ModelWrapper | None, accelerator_macs: float = 0.0) -> CpuNodes | None:
    """The nodes outside the accelerator (the dataflow parent graph), by op type, and the
    host's share of the network's multiply-accumulates (``accelerator_macs``: FINN's count
    for the accelerator's layers)."""
    if parent is None:
        return None
    outside = [n for n in parent.graph.node if n.op_type != PARTITION]
    nodes = _sides(parent, outside)
    by_type = dict(Counter(node["op_type"] for node in nodes))
    host = sum(host_macs(parent, node) for node in outside)
    total = host + accelerator_macs
    return {
        "count": len(nodes),
        "op_types": by_type,
        "nodes": nodes,
        "model": "final_parent.onnx",
        "output_scaling": bool(nodes) and all(_scales_output(parent, outside, nodes)),
        "host_macs": host,
        "host_share": round(host / total, 4) if total else None,
    }


def _sides(parent: ModelWrapper, outside: list[onnx.NodeProto]) -> list[CpuNode]:
    """The nodes outside the accelerator, each before or after it (the partition)."""
    order = [n.op_type for n in parent.graph.node]
    split = order.index(PARTITION) if PARTITION in order else 0
    return [  # the first ``split`` nodes precede the partition
        {"name": n.name, "op_type": n.op_type, "side": "before" if position < split else "after"}
        for position, n in enumerate(outside)
    ]


def _scales_output(
    parent: ModelWrapper, outside: list[onnx.NodeProto], nodes: list[CpuNode]
) -> list[bool]:
    """Per node outside: whether it follows the accelerator and only scales its output."""
    return [
        record["side"] == "after" and _output_scaling(parent, node)
        for node, record in zip(outside, nodes, strict=True)
    ]


def host_macs(model: ModelWrapper, node: onnx.NodeProto) -> int:
    """Multiply-accumulates one frame costs ``node`` on the host (matrix products and
    convolutions; other nodes count 0)."""
    if node.op_type not in MAC_OPS:
        return 0
    tensors = (node.input[0], node.output[0], node.input[1])
    shape_in, shape_out, weights = (model.get_tensor_shape(tensor) for tensor in tensors)
    if not shape_in or not shape_out or not weights:
        return 0
    return math.prod(int(size) for size in shape_out) * _per_output(node, shape_in, weights)


def _per_output(node: onnx.NodeProto, shape_in: list[int], weights: list[int]) -> int:
    """The products each output of ``node`` sums."""
    if node.op_type == "Conv":  # C_in / groups x kernel products
        return math.prod(int(size) for size in weights[1:])
    transposed = any(a.name == "transA" and a.i for a in node.attribute)
    return int(shape_in[-2] if transposed else shape_in[-1])


def _output_scaling(parent: ModelWrapper, node: onnx.NodeProto) -> bool:
    """A constant scale or bias applied to one computed tensor: the output's dequantisation,
    which FINN's flows leave on the host when it follows the accelerator."""
    computed = [name for name in node.input if parent.get_initializer(name) is None]
    return node.op_type in SCALING_OPS and len(computed) == 1 and len(node.input) == 2
