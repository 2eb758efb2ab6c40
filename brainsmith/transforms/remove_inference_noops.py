"""RemoveInferenceNoOps: drop Identity and inference-mode Dropout nodes."""

from __future__ import annotations

from collections.abc import Callable

from onnx import NodeProto
from qonnx.core.modelwrapper import ModelWrapper
from qonnx.transformation.base import Transformation

from brainsmith.plugin import transform
from brainsmith.transforms.graph_rewrite import ONNX_DOMAINS, bypass_node, graph_output_names


@transform(stage="cleanup")
class RemoveInferenceNoOps(Transformation):  # type: ignore[misc]
    """Remove Identity nodes and Dropout nodes that run in inference mode.

    Both copy their input at inference time but are not FINN kernels, so one left between
    two hardware layers splits the dataflow partition. Unlike QONNX's RemoveIdentityOps,
    a Dropout with any ratio is removed, because its ratio is unused unless
    ``training_mode`` is true; a Dropout whose mask output is read is kept.
    """

    def apply(self, model: ModelWrapper) -> tuple[ModelWrapper, bool]:
        for node in list(model.graph.node):
            if node.domain in ONNX_DOMAINS and _is_noop(model, node):
                bypass_node(model, node)
        return model, False  # one pass visits every node


def _is_noop(model: ModelWrapper, node: NodeProto) -> bool:
    copies = COPIES_AT_INFERENCE.get(node.op_type)
    return copies is not None and copies(model, node)


def _dropout_copies(model: ModelWrapper, node: NodeProto) -> bool:
    """Whether a Dropout runs in inference mode (its ``training_mode`` absent or a false
    constant) and nobody reads its mask."""
    if _mask_read(model, node):
        return False
    training = node.input[2] if len(node.input) > 2 else ""
    if not training:
        return True
    flag = model.get_initializer(training)
    return flag is not None and not bool(flag)


def _mask_read(model: ModelWrapper, node: NodeProto) -> bool:
    """Whether a Dropout's mask output is read by a node or is a graph output."""
    if len(node.output) < 2:
        return False
    mask = node.output[1]
    return bool(mask and model.find_consumers(mask)) or mask in graph_output_names(model)


COPIES_AT_INFERENCE: dict[str, Callable[[ModelWrapper, NodeProto], bool]] = {
    "Identity": lambda model, node: True,
    "Dropout": _dropout_copies,
}
