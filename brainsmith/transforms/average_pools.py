"""Average pooling as Brevitas exports it, made something FINN's layers compute exactly.

Brevitas's ``TruncAvgPool2d``/``TruncAvgPool1d`` export an ``AveragePool`` followed by a
``Trunc``: the window's sum of integers, shifted right and rounded (``ROUND`` by default,
or ``FLOOR``), then clamped to the output width. FINN converts only the floor-rounded square
2D case (``QuantAvgPool2d``, a shift); any other rounding or window ends the build.

``TruncAvgPoolToThresholds`` rewrites every other pair into a window sum and thresholds:
the sum of integers is a whole number, and the truncation is a non-decreasing map from it to
the output's integers, which a ``MultiThreshold`` with one integer threshold per step
computes exactly for any rounding mode, clamp or window. ``AveragePoolToSumPool`` then
makes the (integer) ``AveragePool``, and a ``ReduceMean`` over a sequence's tokens, each
token's channels or an image's pixels, a sliding window and a ``ReduceSum``, which FINN's ``InferPoolFromReduce``
turns into an accumulating ``Pool`` layer.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from onnx import NodeProto, helper
from qonnx.core.datatype import DataType
from qonnx.core.modelwrapper import ModelWrapper
from qonnx.custom_op.general.quant import max_int, min_int
from qonnx.custom_op.general.trunc import trunc_v2
from qonnx.custom_op.registry import getCustomOp
from qonnx.transformation.base import Transformation
from qonnx.transformation.infer_shapes import InferShapes

from brainsmith.frameworks.finn.recipe.networks import node_int, node_ints
from brainsmith.plugin import transform
from brainsmith.transforms.graph_rewrite import (
    add_initializer,
    rewrite_each,
    sole_reader,
    unique_tensor_name,
)

QONNX_DOMAIN = "qonnx.custom_op.general"


@transform(stage="topology_opt")
class TruncAvgPoolToThresholds(Transformation):  # type: ignore[misc]
    """AveragePool -> Trunc (any rounding, any window) as a window sum and thresholds.

    Rewrite ``AveragePool -> Trunc`` as ``Mul(1/s) -> AveragePool -> Mul(K) ->
    MultiThreshold -> Mul(output scale)`` where FINN cannot convert it.

    ``s`` is the scale of the ``Quant`` that feeds the pool (zero point 0), ``K`` the window
    size: the ``MultiThreshold`` reads the window's sum of integers, and its thresholds are
    the sums at which QONNX's own ``Trunc`` (evaluated on every possible sum) steps up.
    Streamlining then absorbs ``Mul(1/s)`` into the quantizer before and ``Mul(K)`` into the
    thresholds. Floor-rounded square 2D windows are left to FINN (``QuantAvgPool2d``); a pair
    whose input is not a per-tensor quantizer's is left alone.
    """

    def apply(self, model: ModelWrapper) -> tuple[ModelWrapper, bool]:
        if rewrite_each(model, "AveragePool", _rewrite):
            model = model.transform(InferShapes())
        return model, False  # one pass rewrites every pair


def _finn_converts(pool: NodeProto, trunc: NodeProto) -> bool:
    """Whether FINN's ``AvgPoolAndTruncToQuantAvgPool`` takes the pair (and computes it)."""
    kernel = node_ints(pool, "kernel_shape")
    rounding = getCustomOp(trunc).get_nodeattr("rounding_mode").upper()
    return rounding == "FLOOR" and len(kernel) == 2 and kernel[0] == kernel[1]


@dataclass(frozen=True)
class Quantizer:
    """The scale and integer range of a per-tensor ``Quant`` with zero point 0."""

    scale: float
    smallest: int
    largest: int


@dataclass(frozen=True)
class TruncatedPool:
    """An ``AveragePool -> Trunc`` pair of a quantizer's integers, with the ``Trunc``'s
    constants (its zero point 0) and the window size."""

    pool: NodeProto
    trunc: NodeProto
    quantizer: Quantizer
    scale: float
    zero: float
    in_bits: float
    out_scale: float
    out_bits: float
    window: int

    @property
    def sums(self) -> np.ndarray:
        """Every sum of a window of the quantizer's integers."""
        q = self.quantizer
        return np.arange(self.window * q.smallest, self.window * q.largest + 1)


def _quantizer(model: ModelWrapper, tensor: str) -> Quantizer | None:
    """The per-tensor ``Quant`` (zero point 0) that produces ``tensor``."""
    producer = model.find_producer(tensor)
    if producer is None or producer.op_type != "Quant":
        return None
    scale, zero, bits = (model.get_initializer(name) for name in producer.input[1:4])
    if any(c is None or c.size != 1 for c in (scale, zero, bits)) or zero.item() != 0:
        return None
    quant = getCustomOp(producer)
    signed, narrow = quant.get_nodeattr("signed"), quant.get_nodeattr("narrow")
    width = int(bits.item())
    return Quantizer(
        float(scale.item()),
        int(min_int(signed, narrow, width)),
        int(max_int(signed, narrow, width)),
    )


def _truncated_pool(model: ModelWrapper, pool: NodeProto, trunc: NodeProto) -> TruncatedPool | None:
    quantizer = _quantizer(model, pool.input[0])
    constants = [model.get_initializer(name) for name in trunc.input[1:]]
    if quantizer is None or any(c is None or c.size != 1 for c in constants):
        return None
    scale, zero, in_bits, out_scale, out_bits = (float(c.item()) for c in constants)
    if zero != 0 or _pads_averaged_apart(pool):
        return None  # zero points and border windows of fewer values are not this one's
    window = int(np.prod(node_ints(pool, "kernel_shape")))
    return TruncatedPool(pool, trunc, quantizer, scale, zero, in_bits, out_scale, out_bits, window)


def _pads_averaged_apart(pool: NodeProto) -> bool:
    """Whether ``pool`` pads and averages a border window over fewer values."""
    return any(node_ints(pool, "pads")) and not node_int(pool, "count_include_pad", 0)


def _levels(found: TruncatedPool) -> np.ndarray:
    """The output integer QONNX's ``Trunc`` gives for each window sum."""
    trunc_attrs = getCustomOp(found.trunc)
    levels = trunc_v2(
        (found.sums * found.quantizer.scale / found.window).astype(np.float32),
        np.float32(found.scale),
        np.float32(found.zero),
        np.float32(found.in_bits),
        trunc_attrs.get_nodeattr("narrow"),
        trunc_attrs.get_nodeattr("signed"),
        np.float32(found.out_scale),
        np.float32(found.out_bits),
        trunc_attrs.get_nodeattr("rounding_mode"),
    )
    rounded: np.ndarray = np.round(levels / found.out_scale).astype(np.int64)
    return rounded


def _rewrite(model: ModelWrapper, pool: NodeProto) -> bool:
    consumers = model.find_consumers(pool.output[0]) or []
    trunc = consumers[0] if len(consumers) == 1 else None
    if trunc is None or trunc.op_type != "Trunc" or _finn_converts(pool, trunc):
        return False
    found = _truncated_pool(model, pool, trunc)
    if found is None:
        return False
    levels = _levels(found)
    if np.any(np.diff(levels) < 0):
        return False
    _insert_thresholds(model, found, levels)
    return True


def _insert_thresholds(model: ModelWrapper, found: TruncatedPool, levels: np.ndarray) -> None:
    """``Mul(1/s) -> pool -> Mul(K) -> MultiThreshold -> Mul(output scale)`` in place of
    the pair, the thresholds stepping where ``levels`` do."""
    pool, trunc, quantizer = found.pool, found.trunc, found.quantizer
    low, high = int(levels[0]), int(levels[-1])
    # half a step below each sum where the level steps up: the float mean times the window
    # is that whole number only to single precision (22.999998 for 23)
    sums = found.sums
    steps = [float(sums[np.argmax(levels >= level)]) - 0.5 for level in range(low + 1, high + 1)]
    signed = bool(getCustomOp(trunc).get_nodeattr("signed"))
    out_dtype = DataType[f"{'INT' if signed else 'UINT'}{int(found.out_bits)}"]

    to_int = _scalar_node(model, "Mul", pool.input[0], 1.0 / quantizer.scale, "avgpool_int")
    pool.input[0] = to_int.output[0]
    smallest, largest = quantizer.smallest, quantizer.largest
    model.set_tensor_datatype(
        to_int.output[0], DataType.get_smallest_possible(smallest if smallest < 0 else largest)
    )
    to_sum = _scalar_node(model, "Mul", pool.output[0], float(found.window), "avgpool_sum")
    thresholds = add_initializer(
        model, f"{trunc.name or 'Trunc'}_thresholds", np.array([steps], dtype=np.float32)
    )
    counted = unique_tensor_name(model, f"{pool.output[0]}_levels")
    threshold = helper.make_node(
        "MultiThreshold",
        [to_sum.output[0], thresholds],
        [counted],
        domain=QONNX_DOMAIN,
        out_dtype=out_dtype.name,
        out_bias=float(low),
        name=f"{trunc.name or 'Trunc'}_MultiThreshold",
    )
    model.set_tensor_datatype(counted, out_dtype)
    out_scale = add_initializer(model, "avgpool_out_scale", np.array(found.out_scale, np.float32))
    rescale = helper.make_node("Mul", [counted, out_scale], [trunc.output[0]])
    at = list(model.graph.node).index(pool)
    model.graph.node.insert(at, to_int)
    at = list(model.graph.node).index(trunc)
    model.graph.node.remove(trunc)
    for offset, node in enumerate((to_sum, threshold, rescale)):
        model.graph.node.insert(at + offset, node)


def _scalar_node(
    model: ModelWrapper, op_type: str, tensor: str, value: float, base: str
) -> NodeProto:
    """``op_type(tensor, value)`` writing a new tensor (not yet in the graph)."""
    factor = add_initializer(model, base, np.array(value, dtype=np.float32))
    result = unique_tensor_name(model, f"{tensor}_{base}")
    return helper.make_node(op_type, [tensor, factor], [result])


@transform(stage="streamline")
class AveragePoolToSumPool(Transformation):  # type: ignore[misc]
    """AveragePool or ReduceMean of integers -> Im2Col, ReduceSum (FINN's accumulating Pool).

    Rewrite an ``AveragePool`` (NCHW) of an integer tensor as ``Transpose -> Im2Col ->
    Reshape -> ReduceSum -> Transpose`` and a division by the window size: the lowered form
    FINN's ``InferPoolFromReduce`` makes an accumulating ``Pool`` layer behind a sliding
    window. A ``ReduceMean`` of integers over the tokens of a ``(1, T, D)`` sequence (one
    window of ``T x 1`` on the channels-last ``(1, T, 1, D)``), over each token's channels
    (a ``1 x D`` window per token of ``(1, T, D, 1)``) or over the pixels of an NCHW image
    is lowered the same way, its output shape restored by a ``Reshape``. The
    division goes into the thresholds that read the pool (``x/K >= t`` is ``x >= ceil(K t)``
    for an integer ``x``), or stays a ``Mul`` for streamlining to move.
    """

    def apply(self, model: ModelWrapper) -> tuple[ModelWrapper, bool]:
        rewrite_each(model, "AveragePool", _lower)
        rewrite_each(model, "ReduceMean", _lower)
        return model, False


@dataclass(frozen=True)
class Windows:
    """The geometry of an NCHW ``AveragePool`` named ``name`` (batch 1)."""

    name: str
    channels: int
    height: int
    width: int
    out_h: int
    out_w: int
    kernel: list[int]
    strides: list[int]
    pads: list[int]
    # a ReduceMean's: its input channels-last (a sequence) or not, and its output's shape
    sequence: bool = False
    out_shape: list[int] | None = None

    @property
    def window(self) -> int:
        return int(np.prod(self.kernel))

    def sums_shape(self) -> list[int]:
        """The channels-last shape of the window sums."""
        return [1, self.out_h, self.out_w, self.channels]


def _windows(model: ModelWrapper, pool: NodeProto, shape: list[int]) -> Windows:
    _, channels, height, width = shape
    _, _, out_h, out_w = model.get_tensor_shape(pool.output[0])
    return Windows(
        name=pool.name or "AveragePool",
        channels=channels,
        height=height,
        width=width,
        out_h=out_h,
        out_w=out_w,
        kernel=node_ints(pool, "kernel_shape"),
        strides=node_ints(pool, "strides", [1, 1]),
        pads=node_ints(pool, "pads", [0, 0, 0, 0]),
    )


def _sum_type(source: DataType, window: int) -> DataType:
    """The narrowest integer type holding every sum of ``window`` values of ``source``."""
    low, high = window * int(source.min()), window * int(source.max())
    total = DataType.get_smallest_possible(low if abs(low) > abs(high) else high)
    if low < 0 and not total.signed():
        total = DataType.get_smallest_possible(-high - 1)
    return total


def _mean_windows(model: ModelWrapper, mean: NodeProto, shape: list[int]) -> Windows | None:
    """A ``ReduceMean`` over a sequence's tokens, each token's channels or an image's pixels
    as windows."""
    from brainsmith.transforms.mean_scales import averaged_axes

    axes, out_shape = averaged_axes(model, mean), model.get_tensor_shape(mean.output[0])
    if shape[0] != 1 or out_shape is None:
        return None
    name = mean.name or "ReduceMean"
    if len(shape) == 3 and axes == [1]:  # (1, T, D): channels-last (1, T, 1, D)
        _, tokens, channels = shape
        return Windows(name, channels, tokens, 1, 1, 1, [tokens, 1], [1, 1], [0, 0, 0, 0],
                       sequence=True, out_shape=out_shape)  # fmt: skip
    if len(shape) == 3 and axes == [2]:  # over each token's channels: (1, T, D, 1), 1 x D
        _, tokens, channels = shape
        return Windows(name, 1, tokens, channels, tokens, 1, [1, channels], [1, 1],
                       [0, 0, 0, 0], sequence=True, out_shape=out_shape)  # fmt: skip
    if len(shape) == 4 and axes == [2, 3]:
        _, channels, height, width = shape
        return Windows(mean.name or "ReduceMean", channels, height, width, 1, 1,
                       [height, width], [1, 1], [0, 0, 0, 0], out_shape=out_shape)  # fmt: skip
    return None


def _lower(model: ModelWrapper, pool: NodeProto) -> bool:
    """``pool`` as window sums, when it averages a tensor of integers."""
    source = model.get_tensor_datatype(pool.input[0])
    shape = model.get_tensor_shape(pool.input[0])
    if not source.is_integer() or shape is None:
        return False
    if pool.op_type == "ReduceMean":
        found = _mean_windows(model, pool, shape)
        if found is None:
            return False
        windows = found
    elif len(shape) != 4 or _pads_averaged_apart(pool):
        return False
    else:
        windows = _windows(model, pool, shape)
    total = _sum_type(source, windows.window)
    nodes, summed = _window_sums(model, pool, windows, source, total)
    reader = sole_reader(model, pool.output[0])
    at = list(model.graph.node).index(pool)
    model.graph.node.remove(pool)
    if reader is not None and _reads_channels(model, reader, windows):
        _thresholds_on_sums(model, reader, summed, windows)
    else:
        nodes.extend(_mean_of_sums(model, pool, windows, summed, total))
    for offset, node in enumerate(nodes):
        model.graph.node.insert(at + offset, node)
    return True


def _reads_channels(model: ModelWrapper, reader: NodeProto, windows: Windows) -> bool:
    """Whether ``reader`` is a threshold layer whose thresholds are one row, or one per
    channel of the window sums."""
    if reader.op_type != "MultiThreshold":
        return False
    thresholds = model.get_initializer(reader.input[1])
    return thresholds is not None and thresholds.shape[0] in (1, windows.channels)


def _window_sums(
    model: ModelWrapper, pool: NodeProto, windows: Windows, source: DataType, total: DataType
) -> tuple[list[NodeProto], str]:
    """``Transpose -> Im2Col -> Reshape -> ReduceSum`` from ``pool``'s input, and the
    channels-last sums they write."""
    name, channels, window = windows.name, windows.channels, windows.window
    out_h, out_w = windows.out_h, windows.out_w
    nhwc_shape = [1, windows.height, windows.width, channels]  # a sequence's: a reshape
    nhwc = _tensor(model, f"{name}_nhwc", nhwc_shape, source)
    columns = _tensor(model, f"{name}_windows", [1, out_h, out_w, window * channels], source)
    grouped = _tensor(model, f"{name}_grouped", [1, out_h, out_w, window, channels], source)
    summed = _tensor(model, f"{name}_sum", windows.sums_shape(), total)
    group_shape = add_initializer(
        model, f"{name}_group_shape", np.array([1, out_h, out_w, window, channels], np.int64)
    )
    axes = add_initializer(model, f"{name}_axes", np.array([-2], dtype=np.int64))
    if windows.sequence:
        layout = helper.make_node(
            "Reshape", [pool.input[0], _shape(model, f"{name}_nhwc_shape", nhwc_shape)], [nhwc]
        )
    else:
        layout = helper.make_node("Transpose", [pool.input[0]], [nhwc], perm=[0, 2, 3, 1])
    nodes = [
        layout,
        helper.make_node(
            "Im2Col",
            [nhwc],
            [columns],
            domain=QONNX_DOMAIN,
            stride=windows.strides,
            kernel_size=windows.kernel,
            pad_amount=windows.pads,
            pad_value=0,
            depthwise=1,
            input_shape=f"(1,{windows.height},{windows.width},{channels})",
            name=f"Im2Col_{name}",
        ),
        helper.make_node("Reshape", [columns, group_shape], [grouped]),
        helper.make_node("ReduceSum", [grouped, axes], [summed], keepdims=0),
    ]
    return nodes, summed


def _mean_of_sums(
    model: ModelWrapper, pool: NodeProto, windows: Windows, summed: str, total: DataType
) -> list[NodeProto]:
    """Back to ``pool``'s layout, then divided by the window: what ``pool`` wrote."""
    shape = windows.out_shape or [1, windows.channels, windows.out_h, windows.out_w]
    back = _tensor(model, f"{windows.name}_sum_nchw", shape, total)
    return [
        _restore(model, windows, summed, back),
        _rescale(model, back, pool.output[0], 1.0 / windows.window),
    ]


def _restore(model: ModelWrapper, windows: Windows, tensor: str, result: str) -> NodeProto:
    """The channels-last ``tensor`` of window results as the pool or mean wrote them."""
    if windows.out_shape is None:
        return helper.make_node("Transpose", [tensor], [result], perm=[0, 3, 1, 2])
    shape = _shape(model, f"{windows.name}_out_shape", windows.out_shape)
    return helper.make_node("Reshape", [tensor, shape], [result])


def _shape(model: ModelWrapper, base: str, shape: list[int]) -> str:
    return add_initializer(model, base, np.array(shape, dtype=np.int64))


def _thresholds_on_sums(
    model: ModelWrapper, reader: NodeProto, summed: str, windows: Windows
) -> None:
    """Make ``reader`` (thresholds of the mean) read the channels-last ``summed`` instead:
    thresholds times the window, rounded up, and its layout changed back after it."""
    window, shape = windows.window, windows.sums_shape()
    scaled = model.get_initializer(reader.input[1]).astype(np.float64) * window
    nearest = np.round(scaled)  # a threshold the window divided (single precision) snaps back
    scaled = np.where(np.abs(scaled - nearest) < 1e-3, nearest, np.ceil(scaled))
    reader.input[1] = add_initializer(
        model, f"{reader.name}_sum_thresholds", scaled.astype(np.float32)
    )
    reader.input[0] = summed
    getCustomOp(reader).set_nodeattr("data_layout", "NHWC")
    result = reader.output[0]
    counted = _tensor(model, f"{result}_nhwc", shape, model.get_tensor_datatype(result))
    reader.output[0] = counted
    at = list(model.graph.node).index(reader)
    model.graph.node.insert(at + 1, _restore(model, windows, counted, result))


def _rescale(model: ModelWrapper, tensor: str, result: str, factor: float) -> NodeProto:
    value = add_initializer(model, "avgpool_mean", np.array(factor, dtype=np.float32))
    return helper.make_node("Mul", [tensor, value], [result])


def _tensor(model: ModelWrapper, base: str, shape: list[int], dtype: DataType) -> str:
    name = unique_tensor_name(model, base)
    model.graph.value_info.append(helper.make_tensor_value_info(name, 1, shape))
    model.set_tensor_datatype(name, dtype)
    return name
