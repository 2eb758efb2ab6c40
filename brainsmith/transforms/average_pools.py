"""Average pooling as Brevitas exports it, made something FINN's layers compute exactly.

Brevitas's ``TruncAvgPool2d``/``TruncAvgPool1d`` export an ``AveragePool`` followed by a
``Trunc``: the window's sum of integers, shifted right and rounded (``ROUND`` by default,
or ``FLOOR``), then clamped to the output width. FINN converts only the floor-rounded square
2D case (``QuantAvgPool2d``, a shift); any other rounding or window ends the build.

``TruncAvgPoolToThresholds`` rewrites every other pair into a window sum and thresholds:
the sum of integers is a whole number, and the truncation is a non-decreasing map from it to
the output's integers, which a ``MultiThreshold`` with one integer threshold per step
computes exactly for any rounding mode, clamp or window. ``AveragePoolToSumPool`` then
makes the (integer) ``AveragePool`` a sliding window and a ``ReduceSum``, which FINN's
``InferPoolFromReduce`` turns into an accumulating ``Pool`` layer.
"""

from __future__ import annotations

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
from brainsmith.transforms.graph_rewrite import add_initializer, unique_tensor_name

QONNX_DOMAIN = "qonnx.custom_op.general"


@transform(
    name="TruncAvgPoolToThresholds",
    stage="topology_opt",
    description="AveragePool -> Trunc (any rounding, any window) as a window sum and thresholds",
)
class TruncAvgPoolToThresholds(Transformation):  # type: ignore[misc]
    """Rewrite ``AveragePool -> Trunc`` as ``Mul(1/s) -> AveragePool -> Mul(K) ->
    MultiThreshold -> Mul(output scale)`` where FINN cannot convert it.

    ``s`` is the scale of the ``Quant`` that feeds the pool (zero point 0), ``K`` the window
    size: the ``MultiThreshold`` reads the window's sum of integers, and its thresholds are
    the sums at which QONNX's own ``Trunc`` (evaluated on every possible sum) steps up.
    Streamlining then absorbs ``Mul(1/s)`` into the quantizer before and ``Mul(K)`` into the
    thresholds. Floor-rounded square 2D windows are left to FINN (``QuantAvgPool2d``); a pair
    whose input is not a per-tensor quantizer's is left alone.
    """

    def apply(self, model: ModelWrapper) -> tuple[ModelWrapper, bool]:
        rewritten = False
        for pool in list(model.get_nodes_by_op_type("AveragePool")):
            consumers = model.find_consumers(pool.output[0]) or []
            pair = len(consumers) == 1 and consumers[0].op_type == "Trunc"
            if pair and not _finn_converts(pool, consumers[0]):
                rewritten |= _rewrite(model, pool, consumers[0])
        if rewritten:
            model = model.transform(InferShapes())
        return model, False  # one pass rewrites every pair


def _finn_converts(pool: NodeProto, trunc: NodeProto) -> bool:
    """Whether FINN's ``AvgPoolAndTruncToQuantAvgPool`` takes the pair (and computes it)."""
    kernel = node_ints(pool, "kernel_shape")
    rounding = getCustomOp(trunc).get_nodeattr("rounding_mode").upper()
    return rounding == "FLOOR" and len(kernel) == 2 and kernel[0] == kernel[1]


def _quantizer(model: ModelWrapper, tensor: str) -> tuple[float, int, int] | None:
    """(scale, smallest, largest integer) of the per-tensor ``Quant`` (zero point 0) that
    produces ``tensor``."""
    producer = model.find_producer(tensor)
    if producer is None or producer.op_type != "Quant":
        return None
    scale, zero, bits = (model.get_initializer(name) for name in producer.input[1:4])
    if any(c is None or c.size != 1 for c in (scale, zero, bits)) or zero.item() != 0:
        return None
    quant = getCustomOp(producer)
    signed, narrow = quant.get_nodeattr("signed"), quant.get_nodeattr("narrow")
    width = int(bits.item())
    return (
        float(scale.item()),
        int(min_int(signed, narrow, width)),
        int(max_int(signed, narrow, width)),
    )


def _rewrite(model: ModelWrapper, pool: NodeProto, trunc: NodeProto) -> bool:
    quantizer = _quantizer(model, pool.input[0])
    constants = [model.get_initializer(name) for name in trunc.input[1:]]
    if quantizer is None or any(c is None or c.size != 1 for c in constants):
        return False
    scale_in, smallest, largest = quantizer
    scale, zero, in_bits, out_scale, out_bits = (float(c.item()) for c in constants)
    pads = node_ints(pool, "pads")
    if zero != 0 or (any(pads) and not node_int(pool, "count_include_pad", 0)):
        return False  # zero points and border windows of fewer values are not this one's
    window = int(np.prod(node_ints(pool, "kernel_shape")))
    sums = np.arange(window * smallest, window * largest + 1)
    trunc_attrs = getCustomOp(trunc)
    levels = trunc_v2(
        (sums * scale_in / window).astype(np.float32),
        np.float32(scale),
        np.float32(zero),
        np.float32(in_bits),
        trunc_attrs.get_nodeattr("narrow"),
        trunc_attrs.get_nodeattr("signed"),
        np.float32(out_scale),
        np.float32(out_bits),
        trunc_attrs.get_nodeattr("rounding_mode"),
    )
    levels = np.round(levels / out_scale).astype(np.int64)
    if np.any(np.diff(levels) < 0):
        return False
    low, high = int(levels[0]), int(levels[-1])
    # half a step below each sum where the level steps up: the float mean times the window
    # is that whole number only to single precision (22.999998 for 23)
    steps = [float(sums[np.argmax(levels >= level)]) - 0.5 for level in range(low + 1, high + 1)]
    signed = bool(trunc_attrs.get_nodeattr("signed"))
    out_dtype = DataType[f"{'INT' if signed else 'UINT'}{int(out_bits)}"]

    to_int = _scalar_node(model, "Mul", pool.input[0], 1.0 / scale_in, "avgpool_int")
    pool.input[0] = to_int.output[0]
    model.set_tensor_datatype(
        to_int.output[0], DataType.get_smallest_possible(smallest if smallest < 0 else largest)
    )
    to_sum = _scalar_node(model, "Mul", pool.output[0], float(window), "avgpool_sum")
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
    rescale = helper.make_node(
        "Mul",
        [counted, add_initializer(model, "avgpool_out_scale", np.array(out_scale, np.float32))],
        [trunc.output[0]],
    )
    at = list(model.graph.node).index(pool)
    model.graph.node.insert(at, to_int)
    at = list(model.graph.node).index(trunc)
    model.graph.node.remove(trunc)
    for offset, node in enumerate((to_sum, threshold, rescale)):
        model.graph.node.insert(at + offset, node)
    return True


def _scalar_node(
    model: ModelWrapper, op_type: str, tensor: str, value: float, base: str
) -> NodeProto:
    """``op_type(tensor, value)`` writing a new tensor (not yet in the graph)."""
    factor = add_initializer(model, base, np.array(value, dtype=np.float32))
    result = unique_tensor_name(model, f"{tensor}_{base}")
    return helper.make_node(op_type, [tensor, factor], [result])


@transform(
    name="AveragePoolToSumPool",
    stage="streamline",
    description="AveragePool of integers -> Im2Col, ReduceSum (FINN's accumulating Pool)",
)
class AveragePoolToSumPool(Transformation):  # type: ignore[misc]
    """Rewrite an ``AveragePool`` (NCHW) of an integer tensor as ``Transpose -> Im2Col ->
    Reshape -> ReduceSum -> Transpose`` and a division by the window size: the lowered form
    FINN's ``InferPoolFromReduce`` makes an accumulating ``Pool`` layer behind a sliding
    window. The division goes into the thresholds that read the pool (``x/K >= t`` is
    ``x >= ceil(K t)`` for an integer ``x``), or stays a ``Mul`` for streamlining to move.
    """

    def apply(self, model: ModelWrapper) -> tuple[ModelWrapper, bool]:
        for pool in list(model.get_nodes_by_op_type("AveragePool")):
            source = model.get_tensor_datatype(pool.input[0])
            shape = model.get_tensor_shape(pool.input[0])
            if source.is_integer() and shape is not None and len(shape) == 4:
                _lower(model, pool, source, shape)
        return model, False


def _lower(model: ModelWrapper, pool: NodeProto, source: DataType, shape: list[int]) -> None:
    pads = node_ints(pool, "pads", [0, 0, 0, 0])
    if any(pads) and not node_int(pool, "count_include_pad", 0):
        return
    kernel = node_ints(pool, "kernel_shape")
    strides = node_ints(pool, "strides", [1, 1])
    _, channels, _, _ = shape
    _, _, out_h, out_w = model.get_tensor_shape(pool.output[0])
    window = int(np.prod(kernel))
    low, high = window * int(source.min()), window * int(source.max())
    total = DataType.get_smallest_possible(low if abs(low) > abs(high) else high)
    if low < 0 and not total.signed():
        total = DataType.get_smallest_possible(-high - 1)

    name = pool.name or "AveragePool"
    nhwc = _tensor(model, f"{name}_nhwc", [1, shape[2], shape[3], channels], source)
    columns = _tensor(model, f"{name}_windows", [1, out_h, out_w, window * channels], source)
    grouped = _tensor(model, f"{name}_grouped", [1, out_h, out_w, window, channels], source)
    summed = _tensor(model, f"{name}_sum", [1, out_h, out_w, channels], total)
    group_shape = add_initializer(
        model, f"{name}_group_shape", np.array([1, out_h, out_w, window, channels], np.int64)
    )
    axes = add_initializer(model, f"{name}_axes", np.array([-2], dtype=np.int64))
    nodes = [
        helper.make_node("Transpose", [pool.input[0]], [nhwc], perm=[0, 2, 3, 1]),
        helper.make_node(
            "Im2Col",
            [nhwc],
            [columns],
            domain=QONNX_DOMAIN,
            stride=strides,
            kernel_size=kernel,
            pad_amount=pads,
            pad_value=0,
            depthwise=1,
            input_shape=f"(1,{shape[2]},{shape[3]},{channels})",
            name=f"Im2Col_{name}",
        ),
        helper.make_node("Reshape", [columns, group_shape], [grouped]),
        helper.make_node("ReduceSum", [grouped, axes], [summed], keepdims=0),
    ]
    readers = model.find_consumers(pool.output[0]) or []
    outputs = {t.name for t in model.graph.output}
    at = list(model.graph.node).index(pool)
    model.graph.node.remove(pool)
    if (
        len(readers) == 1
        and readers[0].op_type == "MultiThreshold"
        and pool.output[0] not in outputs
    ):
        _thresholds_on_sums(model, readers[0], summed, window, [1, out_h, out_w, channels])
    else:
        back = _tensor(model, f"{name}_sum_nchw", [1, channels, out_h, out_w], total)
        nodes.append(helper.make_node("Transpose", [summed], [back], perm=[0, 3, 1, 2]))
        nodes.append(_rescale(model, back, pool.output[0], 1.0 / window))
    for offset, node in enumerate(nodes):
        model.graph.node.insert(at + offset, node)


def _thresholds_on_sums(
    model: ModelWrapper, reader: NodeProto, summed: str, window: int, shape: list[int]
) -> None:
    """Make ``reader`` (thresholds of the mean) read the channels-last ``summed`` instead:
    thresholds times the window, rounded up, and its layout changed back after it."""
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
    model.graph.node.insert(
        at + 1, helper.make_node("Transpose", [counted], [result], perm=[0, 3, 1, 2])
    )


def _rescale(model: ModelWrapper, tensor: str, result: str, factor: float) -> NodeProto:
    value = add_initializer(model, "avgpool_mean", np.array(factor, dtype=np.float32))
    return helper.make_node("Mul", [tensor, value], [result])


def _tensor(model: ModelWrapper, base: str, shape: list[int], dtype: DataType) -> str:
    name = unique_tensor_name(model, base)
    model.graph.value_info.append(helper.make_tensor_value_info(name, 1, shape))
    model.set_tensor_datatype(name, dtype)
    return name
