"""RemoveInferenceNoOps: drop Identity and inference-mode Dropout nodes."""

from __future__ import annotations

from onnx import NodeProto
from qonnx.core.modelwrapper import ModelWrapper
from qonnx.transformation.base import Transformation

from brainsmith.plugin import transform
from brainsmith.transforms.graph_rewrite import bypass_node


@transform(
    name="RemoveInferenceNoOps",
    stage="cleanup",
    description="Remove Identity nodes and Dropout nodes that run in inference mode",
)
class RemoveInferenceNoOps(Transformation):  # type: ignore[misc]
    """Remove Identity nodes and Dropout nodes that run in inference mode.

    Both copy their input at inference time but are not FINN kernels, so one left between
    two hardware layers splits the dataflow partition. Unlike QONNX's RemoveIdentityOps,
    a Dropout with any ratio is removed, because its ratio is unused unless
    ``training_mode`` is true; a Dropout whose mask output is read is kept.
    """

    def apply(self, model: ModelWrapper) -> tuple[ModelWrapper, bool]:
        for node in list(model.graph.node):
            if node.domain in ("", "ai.onnx") and _is_noop(model, node):
                bypass_node(model, node)
        return model, False  # one pass visits every node


def _is_noop(model: ModelWrapper, node: NodeProto) -> bool:
    if node.op_type == "Identity":
        return True
    if node.op_type != "Dropout":
        return False
    if len(node.output) > 1 and node.output[1] and model.find_consumers(node.output[1]):
        return False
    if len(node.output) > 1 and node.output[1] in {t.name for t in model.graph.output}:
        return False
    training = node.input[2] if len(node.input) > 2 else ""
    if not training:
        return True
    flag = model.get_initializer(training)
    return flag is not None and not bool(flag)
