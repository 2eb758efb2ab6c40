"""The flatten between the last convolution and the first fully connected layers, removed for
every layer that reads it.

FINN's ``RemoveCNVtoFCFlatten`` rewires only the first node reading the flattened tensor
(``find_consumer``) and then deletes the flatten: where it forks into several heads, the others
are left reading a tensor nothing produces. ``RemoveFlattenForks`` does what FINN's does, for
every reader, and only where every reader can take it: a flatten between hardware layers is
dropped, and a channels-last to channels-first ``Transpose`` before it is absorbed into the
weights of each matrix layer (``MVAU``) that reads it. Anything else is left as it is.
"""

from __future__ import annotations

import numpy as np
from finn.util.fpgadataflow import is_fpgadataflow_node
from qonnx.transformation.base import Transformation
from qonnx.util.basic import get_by_name

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

    from onnx import NodeProto
    from qonnx.core.modelwrapper import ModelWrapper

NHWC_TO_NCHW = [0, 3, 1, 2]


class RemoveFlattenForks(Transformation):  # type: ignore[misc]
    """Remove each Flatten (or flattening Reshape) whose every reader is a hardware layer,
    with the transpose before it absorbed into each reader's weights."""

    def apply(self, model: ModelWrapper) -> tuple[ModelWrapper, bool]:
        for node in list(model.graph.node):
            flattening = node.op_type in ("Flatten", "Reshape") and _flattens(model, node)
            if flattening and _remove(model, node):
                return model, True
        return model, False


def _flattens(model: ModelWrapper, node: NodeProto) -> bool:
    before, after = model.get_tensor_shape(node.input[0]), model.get_tensor_shape(node.output[0])
    return bool(before and after and len(after) == 2 and before[0] == after[0])


def _remove(model: ModelWrapper, flatten: NodeProto) -> bool:
    """Remove ``flatten`` (and a transpose before it) if every reader takes it."""
    readers: list[NodeProto] = model.find_consumers(flatten.output[0]) or []
    producer = model.find_producer(flatten.input[0])
    if producer is None or not _read_by_hardware(model, flatten, readers):
        return False
    if is_fpgadataflow_node(producer):
        _rewire(readers, flatten.output[0], flatten.input[0])
        model.graph.node.remove(flatten)
        return True
    return _absorb_transpose(model, flatten, producer, readers)


def _read_by_hardware(model: ModelWrapper, flatten: NodeProto, readers: list[NodeProto]) -> bool:
    """Whether ``flatten``'s output, not a graph output, is read by hardware layers alone
    (``readers``, at least one)."""
    outputs = {t.name for t in model.graph.output}
    if not readers or flatten.output[0] in outputs:
        return False
    return all(is_fpgadataflow_node(reader) for reader in readers)


def _absorb_transpose(
    model: ModelWrapper, flatten: NodeProto, transpose: NodeProto, readers: list[NodeProto]
) -> bool:
    """Remove ``flatten`` and the channels-last to channels-first ``transpose`` before it,
    with the transpose absorbed into each reader's weights, if every reader can take it."""
    matrices = _absorbing_weights(model, flatten, transpose, readers)
    if matrices is None:
        return False
    _, height, width, channels = model.get_tensor_shape(transpose.input[0])
    for reader, matrix in zip(readers, matrices, strict=True):
        rows, cols = matrix.shape  # channels-first order of the rows -> channels-last
        permuted = matrix.reshape(channels, height, width, cols).transpose(1, 2, 0, 3)
        model.set_initializer(reader.input[1], permuted.reshape(rows, cols))
    _rewire(readers, flatten.output[0], transpose.input[0])
    model.graph.node.remove(flatten)
    model.graph.node.remove(transpose)
    return True


def _absorbing_weights(
    model: ModelWrapper, flatten: NodeProto, transpose: NodeProto, readers: list[NodeProto]
) -> list[np.ndarray] | None:
    """Each reader's own weight matrix, when ``transpose`` is a channels-last to
    channels-first transpose of a hardware layer's output read by ``flatten`` alone and
    every reader is a matrix layer with weights of its own; else None."""
    if not _hardware_to_channels_first(model, transpose, flatten):
        return None
    weights = [_weights(model, reader) for reader in readers]
    matrices = [w for w in weights if w is not None]
    if len(matrices) != len(readers) or len({r.input[1] for r in readers}) != len(readers):
        return None  # a reader without its own weights cannot absorb the transpose
    return matrices


def _hardware_to_channels_first(
    model: ModelWrapper, transpose: NodeProto, flatten: NodeProto
) -> bool:
    """Whether ``transpose`` turns a hardware layer's channels-last output channels-first
    for ``flatten`` alone."""
    if transpose.op_type != "Transpose" or _perm(transpose) != NHWC_TO_NCHW:
        return False
    source = model.find_producer(transpose.input[0])
    shape = model.get_tensor_shape(transpose.input[0])
    alone = (model.find_consumers(transpose.output[0]) or []) == [flatten]
    return bool(source is not None and is_fpgadataflow_node(source) and alone and shape)


def _weights(model: ModelWrapper, reader: NodeProto) -> np.ndarray | None:
    """The weight matrix of a matrix layer ``reader`` (None for any other reader)."""
    if not reader.op_type.startswith("MVAU") or len(reader.input) < 2:
        return None
    found: np.ndarray | None = model.get_initializer(reader.input[1])
    return found


def _rewire(readers: Sequence[NodeProto], old: str, new: str) -> None:
    for reader in readers:
        for index, name in enumerate(reader.input):
            if name == old:
                reader.input[index] = new


def _perm(node: NodeProto) -> list[int]:
    attribute = get_by_name(node.attribute, "perm")
    return list(attribute.ints) if attribute is not None else []
