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

import numpy as np
from onnx import NodeProto, helper
from qonnx.core.modelwrapper import ModelWrapper
from qonnx.transformation.base import Transformation
from qonnx.transformation.general import SortGraph
from qonnx.transformation.infer_shapes import InferShapes
from qonnx.util.basic import get_by_name

from brainsmith.plugin import transform
from brainsmith.transforms.graph_rewrite import add_initializer, unique_tensor_name

TO_CHANNELS_FIRST = [0, 3, 1, 2]
TO_CHANNELS_LAST = [0, 2, 3, 1]


def block_and_mode(node: NodeProto) -> tuple[int, str]:
    """A DepthToSpace's block size and mode (ONNX's default mode is DCR)."""
    mode = get_by_name(node.attribute, "mode")
    return get_by_name(node.attribute, "blocksize").i, mode.s.decode() if mode else "DCR"


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


@transform(
    name="MoveChannelwiseBeforeDepthToSpace",
    stage="streamline",
    description="DepthToSpace then thresholds or a channelwise Mul/Add -> the same per input "
    "channel, then DepthToSpace",
)
class MoveChannelwiseBeforeDepthToSpace(Transformation):  # type: ignore[misc]
    """``f(DepthToSpace(x))`` becomes ``DepthToSpace(f'(x))`` for a MultiThreshold, or a
    Mul or Add by a scalar or per-channel constant, ``f``: its row for output channel c
    repeated for the r * r input channels that land in c. The DepthToSpace must be read by
    ``f`` alone."""

    def apply(self, model: ModelWrapper) -> tuple[ModelWrapper, bool]:
        outputs = {o.name for o in model.graph.output}
        for node in model.graph.node:
            if node.op_type != "DepthToSpace" or node.output[0] in outputs:
                continue
            readers = model.find_consumers(node.output[0]) or []
            if len(readers) == 1 and self._move(model, node, readers[0]):
                model = model.transform(SortGraph(), make_deepcopy=False, cleanup=False)
                return model.transform(InferShapes()), True
        return model, False

    @staticmethod
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

    def _move(self, model: ModelWrapper, shuffle: NodeProto, reader: NodeProto) -> bool:
        block, mode = block_and_mode(shuffle)
        rank = len(model.get_tensor_shape(shuffle.input[0]) or ())
        if reader.op_type == "MultiThreshold":
            layout = get_by_name(reader.attribute, "data_layout")
            if layout is not None and layout.s.decode() != "NCHW":
                return False
            thresholds = model.get_initializer(reader.input[1])
            if thresholds is None:
                return False
            moved = per_input_channel(thresholds, block, mode)
            reader.input[1] = add_initializer(model, f"{reader.name}_param", moved)
        elif reader.op_type in ("Mul", "Add") and self._thresholded(model, reader):
            side = 1 if reader.input[0] == shuffle.output[0] else 0  # the constant's
            constant = model.get_initializer(reader.input[side])
            rows = None if constant is None else _channel_constant(constant, rank)
            if rows is None:
                return False
            moved = per_input_channel(rows, block, mode).reshape(1, -1, *([1] * (rank - 2)))
            reader.input[side] = add_initializer(model, f"{reader.name}_param", moved)
        else:
            return False
        source, between, result = shuffle.input[0], shuffle.output[0], reader.output[0]
        reader.input[list(reader.input).index(between)] = source
        reader.output[0] = between
        shuffle.input[0], shuffle.output[0] = between, result
        model.set_tensor_shape(between, model.get_tensor_shape(source))
        model.set_tensor_datatype(result, model.get_tensor_datatype(between))
        return True


@transform(
    name="DepthToSpaceInWeightOrder",
    stage="streamline",
    description="A CRD DepthToSpace after a thresholded MatMul -> DCR, the MatMul's columns and "
    "the thresholds' rows reordered",
)
class DepthToSpaceInWeightOrder(Transformation):  # type: ignore[misc]
    """A DepthToSpace in CRD order (torch's PixelShuffle) reading a channels-last
    ``MatMul`` (a lowered convolution) through its thresholds and a transpose becomes one in
    DCR order, with the MatMul's weight columns and the thresholds' rows reordered to match:
    the same values, but each output beat of the layer is a run of input channels, so its
    row buffers are memories of whole beats at any folding. Each node on the way must be
    read by the next alone."""

    def apply(self, model: ModelWrapper) -> tuple[ModelWrapper, bool]:
        changed = False
        for node in model.graph.node:
            if node.op_type == "DepthToSpace" and block_and_mode(node)[1] == "CRD":
                changed |= self._reorder(model, node)
        return model, changed

    @staticmethod
    def _reorder(model: ModelWrapper, shuffle: NodeProto) -> bool:
        chain = []
        tensor = shuffle.input[0]
        for op_type in ("Transpose", "MultiThreshold", "MatMul"):
            producer = model.find_producer(tensor)
            if producer is None or producer.op_type != op_type:
                return False
            if len(model.find_consumers(producer.output[0]) or []) != 1:
                return False
            chain.append(producer)
            tensor = producer.input[0]
        transpose, thresholds, matmul = chain
        layout = get_by_name(thresholds.attribute, "data_layout")
        weights = model.get_initializer(matmul.input[1])
        rows = model.get_initializer(thresholds.input[1])
        if (
            list(get_by_name(transpose.attribute, "perm").ints) != TO_CHANNELS_FIRST
            or layout is None
            or layout.s.decode() != "NHWC"
            or weights is None
            or rows is None
        ):
            return False
        block = block_and_mode(shuffle)[0]
        channels = weights.shape[-1] // (block * block)
        # DCR's input channel s*C + c is CRD's c*r*r + s
        order = np.arange(weights.shape[-1]).reshape(channels, block * block).T.reshape(-1)
        model.set_initializer(matmul.input[1], weights[..., order])
        if rows.shape[0] > 1:
            model.set_initializer(thresholds.input[1], rows[order])
        get_by_name(shuffle.attribute, "mode").s = b"DCR"
        return True


@transform(
    name="InferDepthToSpace",
    stage="fpgadataflow",
    description="Transpose to channels-first then DepthToSpace -> StreamingDepthToSpace layer "
    "then the transpose",
)
class InferDepthToSpace(Transformation):  # type: ignore[misc]
    """A DepthToSpace of integers that reads a channels-last tensor through a transpose
    becomes a channels-last ``StreamingDepthToSpace`` layer followed by that transpose (which
    cancels against a transpose back to channels-last after it)."""

    def apply(self, model: ModelWrapper) -> tuple[ModelWrapper, bool]:
        changed = False
        for node in list(model.graph.node):
            if node.op_type == "DepthToSpace" and node.domain in ("", "ai.onnx"):
                changed |= self._convert(model, node)
        if changed:
            model = model.transform(SortGraph(), make_deepcopy=False, cleanup=False)
            model = model.transform(InferShapes())
        return model, changed

    def _convert(self, model: ModelWrapper, node: NodeProto) -> bool:
        transpose = model.find_producer(node.input[0])
        if transpose is None or transpose.op_type != "Transpose":
            return False
        if list(get_by_name(transpose.attribute, "perm").ints) != TO_CHANNELS_FIRST:
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
        model.set_tensor_shape(
            layer_output, [batch, rows * block, width * block, depth // block**2]
        )
        model.set_tensor_datatype(layer_output, datatype)
        index = list(model.graph.node).index(node)
        model.graph.node.remove(node)
        model.graph.node.insert(index, layer)
        self._transpose_after(model, node, layer, layer_output, index)
        if not model.find_consumers(transpose.output[0]):
            model.graph.node.remove(transpose)
        return True

    @staticmethod
    def _transpose_after(
        model: ModelWrapper, node: NodeProto, layer: NodeProto, layer_output: str, index: int
    ) -> None:
        """Back to channels-first for the DepthToSpace's readers, or straight to the readers
        of a transpose back to channels-last."""
        result = node.output[0]
        readers = model.find_consumers(result) or []
        outputs = {o.name for o in model.graph.output}
        back = readers[0] if len(readers) == 1 else None
        if (
            back is not None
            and result not in outputs
            and back.op_type == "Transpose"
            and list(get_by_name(back.attribute, "perm").ints) == TO_CHANNELS_LAST
        ):
            layer.output[0] = back.output[0]
            model.graph.node.remove(back)
            return
        flip = helper.make_node("Transpose", [layer_output], [result], perm=TO_CHANNELS_FIRST)
        model.graph.node.insert(index + 1, flip)
