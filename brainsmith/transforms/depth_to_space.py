"""Rewrites that bring an ONNX ``DepthToSpace`` (torch's ``nn.PixelShuffle``) into hardware
as brainsmith's ``StreamingDepthToSpace`` (``brainsmith/kernels/depth_to_space.py``).

Brevitas exports a sub-pixel convolution as the convolution's accumulators, their scale, a
DepthToSpace and the output quantizer. ``MoveChannelwiseBeforeDepthToSpace`` moves the
quantizer's thresholds (and any channelwise scale or bias between) in front of the
DepthToSpace, one row per input channel, so FINN's streamlining absorbs the scale into them,
the DepthToSpace moves integers of the output's width, and the layout transpose meets the
thresholds. ``InferDepthToSpace`` then makes the layer channels-last.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from onnx import NodeProto, helper
from qonnx.core.modelwrapper import ModelWrapper
from qonnx.transformation.base import Transformation
from qonnx.transformation.general import SortGraph
from qonnx.transformation.infer_shapes import InferShapes
from qonnx.util.basic import get_by_name

from brainsmith.plugin import transform
from brainsmith.transforms.graph_rewrite import (
    add_initializer,
    perm_of,
    rewrite_each,
    rewrite_first,
    sole_reader,
    string_attribute,
    unique_tensor_name,
)

TO_CHANNELS_FIRST = [0, 3, 1, 2]
TO_CHANNELS_LAST = [0, 2, 3, 1]


def block_and_mode(node: NodeProto) -> tuple[int, str]:
    """A DepthToSpace's block size and mode (ONNX's default mode is DCR)."""
    return get_by_name(node.attribute, "blocksize").i, _mode(node)


def _mode(node: NodeProto) -> str:
    mode = string_attribute(node, "mode")
    return "DCR" if mode is None else mode


def per_input_channel(rows: np.ndarray, block: int, mode: str) -> np.ndarray:
    """Per-output-channel ``rows`` (first axis C, or 1 for all) as rows for the C * r * r
    input channels of a DepthToSpace in ``mode``: input channel k feeds output channel
    ``k // r²`` (CRD) or ``k % C`` (DCR)."""
    if rows.shape[0] == 1:
        return rows
    if mode == "CRD":
        return np.repeat(rows, block * block, axis=0)
    return np.tile(rows, (block * block,) + (1,) * (rows.ndim - 1))


def _channel_constant(values: np.ndarray, rank: int) -> np.ndarray | None:
    """A constant of a channels-first tensor of ``rank`` axes as (channels, 1, ...) rows, or
    None when it varies along another axis."""
    if values.ndim > rank:
        return None
    full = values.reshape((1,) * (rank - values.ndim) + values.shape)
    if full.shape[0] != 1 or any(size != 1 for size in full.shape[2:]):
        return None
    return full.reshape(full.shape[1], 1)


@transform(stage="streamline")
class MoveChannelwiseBeforeDepthToSpace(Transformation):  # type: ignore[misc]
    """DepthToSpace then a threshold or channelwise Mul/Add -> those per input channel first.

    ``f(DepthToSpace(x))`` becomes ``DepthToSpace(f'(x))`` for a MultiThreshold, or a
    Mul or Add by a scalar or per-channel constant, ``f``: its row for output channel c
    repeated for the r * r input channels that land in c. The DepthToSpace must be read by
    ``f`` alone."""

    def apply(self, model: ModelWrapper) -> tuple[ModelWrapper, bool]:
        if not rewrite_first(model, "DepthToSpace", _move_channelwise):
            return model, False
        model = model.transform(SortGraph(), make_deepcopy=False, cleanup=False)
        return model.transform(InferShapes()), True


def _move_channelwise(model: ModelWrapper, shuffle: NodeProto) -> bool:
    """Move the one reader of ``shuffle`` before it, when a rule below takes that reader."""
    reader = sole_reader(model, shuffle.output[0])
    per_input = None if reader is None else PER_INPUT_CHANNEL.get(reader.op_type)
    if reader is None or per_input is None or not per_input(model, shuffle, reader):
        return False
    source, between, result = shuffle.input[0], shuffle.output[0], reader.output[0]
    reader.input[list(reader.input).index(between)] = source
    reader.output[0] = between
    shuffle.input[0], shuffle.output[0] = between, result
    model.set_tensor_shape(between, model.get_tensor_shape(source))
    model.set_tensor_datatype(result, model.get_tensor_datatype(between))
    return True


def _thresholds_per_input_channel(
    model: ModelWrapper, shuffle: NodeProto, reader: NodeProto
) -> bool:
    """Give a channels-first MultiThreshold after ``shuffle`` one row per input channel."""
    thresholds = model.get_initializer(reader.input[1])
    if string_attribute(reader, "data_layout") not in (None, "NCHW") or thresholds is None:
        return False
    moved = per_input_channel(thresholds, *block_and_mode(shuffle))
    reader.input[1] = add_initializer(model, f"{reader.name}_param", moved)
    return True


def _constant_per_input_channel(model: ModelWrapper, shuffle: NodeProto, reader: NodeProto) -> bool:
    """Give a channelwise Mul or Add after ``shuffle`` on the way to thresholds one constant
    per input channel."""
    if not _thresholded(model, reader):
        return False
    rank = len(model.get_tensor_shape(shuffle.input[0]) or ())
    side = 1 if reader.input[0] == shuffle.output[0] else 0  # the constant's
    constant = model.get_initializer(reader.input[side])
    rows = None if constant is None else _channel_constant(constant, rank)
    if rows is None:
        return False
    moved = per_input_channel(rows, *block_and_mode(shuffle))
    moved = moved.reshape(1, -1, *([1] * (rank - 2)))
    reader.input[side] = add_initializer(model, f"{reader.name}_param", moved)
    return True


PER_INPUT_CHANNEL: dict[str, Callable[[ModelWrapper, NodeProto, NodeProto], bool]] = {
    "MultiThreshold": _thresholds_per_input_channel,
    "Mul": _constant_per_input_channel,
    "Add": _constant_per_input_channel,
}


def _thresholded(model: ModelWrapper, node: NodeProto) -> bool:
    """Whether ``node``'s result reaches a MultiThreshold through channelwise Mul and Add
    nodes alone (a scale reaching the output stays after the DepthToSpace)."""
    while True:
        readers = model.find_consumers(node.output[0]) or []
        if len(readers) != 1 or readers[0].op_type not in ("MultiThreshold", "Mul", "Add"):
            return False
        if readers[0].op_type == "MultiThreshold":
            return True
        node = readers[0]


@transform(stage="streamline")
class DepthToSpaceInWeightOrder(Transformation):  # type: ignore[misc]
    """A CRD DepthToSpace after a thresholded MatMul -> DCR, the weights' columns reordered.

    A DepthToSpace in CRD order (torch's PixelShuffle) reading a channels-last
    ``MatMul`` (a lowered convolution) through its thresholds and a transpose becomes one in
    DCR order, with the MatMul's weight columns and the thresholds' rows reordered to match:
    the same values, but each output beat of the layer is a run of input channels, so its
    row buffers are memories of whole beats at any folding. Each node on the way must be
    read by the next alone."""

    def apply(self, model: ModelWrapper) -> tuple[ModelWrapper, bool]:
        return model, rewrite_each(model, "DepthToSpace", _reorder)


@dataclass(frozen=True)
class ThresholdedProduct:
    """``MatMul -> MultiThreshold (NHWC) -> Transpose to channels first`` before a
    DepthToSpace, each read by the next alone, with the weights and threshold rows."""

    matmul: NodeProto
    thresholds: NodeProto
    weights: np.ndarray
    rows: np.ndarray


def _thresholded_product(model: ModelWrapper, shuffle: NodeProto) -> ThresholdedProduct | None:
    chain = _producer_chain(model, shuffle.input[0], ("Transpose", "MultiThreshold", "MatMul"))
    if chain is None:
        return None
    transpose, thresholds, matmul = chain
    weights = model.get_initializer(matmul.input[1])
    rows = model.get_initializer(thresholds.input[1])
    if (
        perm_of(transpose) != TO_CHANNELS_FIRST
        or string_attribute(thresholds, "data_layout") != "NHWC"
        or weights is None
        or rows is None
    ):
        return None
    return ThresholdedProduct(matmul, thresholds, weights, rows)


def _producer_chain(
    model: ModelWrapper, tensor: str, op_types: tuple[str, ...]
) -> list[NodeProto] | None:
    """The producers of ``op_types`` one before the other back from ``tensor``, each read
    by the next alone, else None."""
    chain = []
    for op_type in op_types:
        producer = model.find_producer(tensor)
        if producer is None or producer.op_type != op_type:
            return None
        if len(model.find_consumers(producer.output[0]) or []) != 1:
            return None
        chain.append(producer)
        tensor = producer.input[0]
    return chain


def _reorder(model: ModelWrapper, shuffle: NodeProto) -> bool:
    """A CRD ``shuffle`` made DCR, the product's columns and threshold rows reordered."""
    product = _thresholded_product(model, shuffle) if _mode(shuffle) == "CRD" else None
    if product is None:
        return False
    block = block_and_mode(shuffle)[0]
    weights, rows = product.weights, product.rows
    channels = weights.shape[-1] // (block * block)
    # DCR's input channel s*C + c is CRD's c*r*r + s
    order = np.arange(weights.shape[-1]).reshape(channels, block * block).T.reshape(-1)
    model.set_initializer(product.matmul.input[1], weights[..., order])
    if rows.shape[0] > 1:
        model.set_initializer(product.thresholds.input[1], rows[order])
    get_by_name(shuffle.attribute, "mode").s = b"DCR"
    return True


@transform(stage="fpgadataflow")
class InferDepthToSpace(Transformation):  # type: ignore[misc]
    """Transpose to channels-first, DepthToSpace -> StreamingDepthToSpace, then the transpose.

    A DepthToSpace of integers that reads a channels-last tensor through a transpose
    becomes a channels-last ``StreamingDepthToSpace`` layer followed by that transpose (which
    cancels against a transpose back to channels-last after it)."""

    def apply(self, model: ModelWrapper) -> tuple[ModelWrapper, bool]:
        changed = rewrite_each(model, "DepthToSpace", _convert, onnx_only=True)
        if changed:
            model = model.transform(SortGraph(), make_deepcopy=False, cleanup=False)
            model = model.transform(InferShapes())
        return model, changed


def _convert(model: ModelWrapper, node: NodeProto) -> bool:
    transpose = model.find_producer(node.input[0])
    if transpose is None or transpose.op_type != "Transpose":
        return False
    if perm_of(transpose) != TO_CHANNELS_FIRST:
        return False
    source = transpose.input[0]
    datatype = model.get_tensor_datatype(source)
    shape = model.get_tensor_shape(source)
    if not datatype.is_integer() or shape is None or len(shape) != 4:
        return False
    block, mode = block_and_mode(node)
    batch, rows, width, depth = shape
    layer_output = unique_tensor_name(model, f"{node.name}_channels_last")
    layer = helper.make_node(
        "StreamingDepthToSpace", [source], [layer_output], name=node.name,
        domain="finn.custom_op.fpgadataflow", backend="fpgadataflow", HI=rows, WI=width,
        NumChannels=depth // (block * block), BlockSize=block, Mode=mode, SIMD=1,
        inputDataType=datatype.name, batchSize=batch,
    )  # fmt: skip
    model.set_tensor_shape(layer_output, [batch, rows * block, width * block, depth // block**2])
    model.set_tensor_datatype(layer_output, datatype)
    index = list(model.graph.node).index(node)
    model.graph.node.remove(node)
    model.graph.node.insert(index, layer)
    _transpose_after(model, node, layer, layer_output, index)
    if not model.find_consumers(transpose.output[0]):
        model.graph.node.remove(transpose)
    return True


def _transpose_after(
    model: ModelWrapper, node: NodeProto, layer: NodeProto, layer_output: str, index: int
) -> None:
    """Back to channels-first for the DepthToSpace's readers, or straight to the readers
    of a transpose back to channels-last."""
    result = node.output[0]
    back = sole_reader(model, result)
    if back is not None and back.op_type == "Transpose" and perm_of(back) == TO_CHANNELS_LAST:
        layer.output[0] = back.output[0]
        model.graph.node.remove(back)
        return
    flip = helper.make_node("Transpose", [layer_output], [result], perm=TO_CHANNELS_FIRST)
    model.graph.node.insert(index + 1, flip)
