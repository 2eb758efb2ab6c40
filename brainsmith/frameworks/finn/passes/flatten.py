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
from qonnx.transformation.base import Transformation
from qonnx.util.basic import get_by_name

NHWC_TO_NCHW = [0, 3, 1, 2]


class RemoveFlattenForks(Transformation):
    """Remove each Flatten (or flattening Reshape) whose every reader is a hardware layer,
    with the transpose before it absorbed into each reader's weights."""

    def apply(self, model):
        for node in list(model.graph.node):
            flattening = node.op_type in ("Flatten", "Reshape") and _flattens(model, node)
            if flattening and _remove(model, node):
                return model, True
        return model, False


def _flattens(model, node) -> bool:
    before, after = model.get_tensor_shape(node.input[0]), model.get_tensor_shape(node.output[0])
    return bool(before and after and len(after) == 2 and before[0] == after[0])


def _remove(model, flatten) -> bool:
    """Remove ``flatten`` (and a transpose before it) if every reader takes it."""
    from finn.util.fpgadataflow import is_fpgadataflow_node

    readers = model.find_consumers(flatten.output[0]) or []
    producer = model.find_producer(flatten.input[0])
    outputs = {t.name for t in model.graph.output}
    if not readers or producer is None or flatten.output[0] in outputs:
        return False
    if not all(is_fpgadataflow_node(reader) for reader in readers):
        return False
    if is_fpgadataflow_node(producer):
        _rewire(readers, flatten.output[0], flatten.input[0])
        model.graph.node.remove(flatten)
        return True
    if producer.op_type != "Transpose" or _perm(producer) != NHWC_TO_NCHW:
        return False
    source = model.find_producer(producer.input[0])
    shape = model.get_tensor_shape(producer.input[0])
    alone = (model.find_consumers(producer.output[0]) or []) == [flatten]
    if not (source is not None and is_fpgadataflow_node(source) and alone and shape):
        return False
    weights = [_weights(model, reader) for reader in readers]
    matrices = [w for w in weights if w is not None]
    if len(matrices) != len(readers) or len({r.input[1] for r in readers}) != len(readers):
        return False  # a reader without its own weights cannot absorb the transpose
    _, height, width, channels = shape
    for reader, matrix in zip(readers, matrices, strict=True):
        rows, cols = matrix.shape  # channels-first order of the rows -> channels-last
        permuted = matrix.reshape(channels, height, width, cols).transpose(1, 2, 0, 3)
        model.set_initializer(reader.input[1], permuted.reshape(rows, cols))
    _rewire(readers, flatten.output[0], producer.input[0])
    model.graph.node.remove(flatten)
    model.graph.node.remove(producer)
    return True


def _weights(model, reader) -> np.ndarray | None:
    """The weight matrix of a matrix layer ``reader`` (None for any other reader)."""
    if not reader.op_type.startswith("MVAU") or len(reader.input) < 2:
        return None
    return model.get_initializer(reader.input[1])


def _rewire(readers, old: str, new: str) -> None:
    for reader in readers:
        for index, name in enumerate(reader.input):
            if name == old:
                reader.input[index] = new


def _perm(node) -> list[int]:
    attribute = get_by_name(node.attribute, "perm")
    return list(attribute.ints) if attribute is not None else []
