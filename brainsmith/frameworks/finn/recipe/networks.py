"""FINN's recipe for networks with convolutions and residual connections, limited to a
blueprint's kernels.

FINN's own ``step_streamline`` and ``step_convert_to_hw`` build CNV-like networks; its ResNet
examples add a fork-aware streamlining loop. brainsmith's ``streamline`` and
``hardware_inference`` steps run the same transforms in the same order, with three
differences that let more networks build:

- residual connections: scales are moved past forks and joins until nothing changes (FINN's
  ResNet-50 recipe), so the convolutions on both branches see integer inputs;
- global average pooling becomes ``GlobalAccPool`` first, and the scalar ``1/N`` it leaves is
  streamlined into the next layer instead of becoming a floating-point multiplier;
- only the blueprint's kernels are inferred: ``InferElementwiseBinaryOperation`` converts just
  the operations of the selected ``Elementwise*`` kernels and never the final dequantisation.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from brainsmith.errors import StepError
from brainsmith.plugin.names import short_name
from brainsmith.plugins import transforms as tfm

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Protocol

    import onnx
    from finn.builder.build_dataflow_config import DataflowBuildConfig
    from qonnx.core.modelwrapper import ModelWrapper
    from qonnx.transformation.base import Transformation

    from brainsmith.blueprint.options import BuildOptions

    class BuildPlan(Protocol):
        """What the recipe reads of a build plan (``planning.plan.BuildPlan``)."""

        @property
        def options(self) -> BuildOptions | None: ...

        @property
        def build(self) -> BuildOptions: ...
        def elementwise_ops(self) -> set[str] | None: ...

    NodeFilter = Callable[[ModelWrapper, onnx.NodeProto], bool]  # which nodes a transform takes

# Run after the layout fix-ups (they convert what the fix-ups leave, as in FINN).
LAYOUT_TRANSFORMS = ("InferReshape", "InferSqueeze", "InferUnsqueeze", "InferShuffle")
# Leave a scalar Mul behind that streamlining has to move into the next layer.
SCALE_LEAVING_TRANSFORMS = ("InferGlobalAccPoolLayer",)
RESIDUAL_ROUNDS = 4  # FINN's ResNet-50 recipe iterates four times


def has_branches(model: ModelWrapper) -> bool:
    """True when a computed tensor feeds several nodes (a fork, as in a residual block)."""
    initializers = {t.name for t in model.graph.initializer}
    seen: set[str] = set()
    for node in model.graph.node:
        for name in node.input:
            if name in initializers or not name:
                continue
            if name in seen:
                return True
            seen.add(name)
    return False


def average_pool_widths(model: ModelWrapper) -> dict[str, tuple[int, int]]:
    """Output tensor of each AveragePool -> Trunc pair -> (Trunc input bits, window size)."""
    widths = {}
    for pool in model.get_nodes_by_op_type("AveragePool"):
        trunc = _truncation_of(model, pool)
        if trunc is None:
            continue
        bits = model.get_initializer(trunc.input[3])
        kernel = node_ints(pool, "kernel_shape")
        if bits is not None and bits.size == 1 and kernel:
            widths[trunc.output[0]] = (int(bits.item()), int(np.prod(kernel)))
    return widths


def _truncation_of(model: ModelWrapper, pool: onnx.NodeProto) -> onnx.NodeProto | None:
    """The ``Trunc`` (with its output bit width) reading ``pool``'s output; None without."""
    trunc: onnx.NodeProto | None = model.find_consumer(pool.output[0])
    if trunc is None or trunc.op_type != "Trunc" or len(trunc.input) < 4:
        return None
    return trunc


def fix_average_pools(model: ModelWrapper, widths: dict[str, tuple[int, int]]) -> ModelWrapper:
    """Give each QuantAvgPool2d the input width that reproduces Brevitas's truncation.

    FINN derives it as floor(log2(2^trunc_bits / window)), which is one bit short when the
    window is not a power of two (3x3 pooling of 3-bit inputs: 2 bits, so the sum is
    shifted by 2 instead of 3 and the outputs are up to 2x off). The right width is the
    one whose largest window sum needs exactly the Trunc's input bits.
    """
    from qonnx.custom_op.registry import getCustomOp

    for node in model.get_nodes_by_op_type("QuantAvgPool2d"):
        scale = model.find_consumer(node.output[0])
        key = scale.output[0] if scale is not None and scale.op_type == "Mul" else ""
        if key not in widths:
            continue
        bits = _input_bits(*widths[key])
        if bits is not None:
            getCustomOp(node).set_nodeattr("ibits", bits)
    return model


def _input_bits(trunc_bits: int, window: int) -> int | None:
    """The widest input whose largest sum over ``window`` values needs exactly ``trunc_bits``
    bits; None if none does."""
    fitting = [b for b in range(1, 33) if ((2**b - 1) * window).bit_length() == trunc_bits]
    return fitting[-1] if fitting else None


def has_1d_windows(model: ModelWrapper) -> bool:
    """True when a convolution or pooling slides over one spatial axis (N, C, L tensors)."""
    windows = ("Conv", "MaxPool", "AveragePool")
    return any(
        n.op_type in windows and len(node_ints(n, "kernel_shape")) == 1 for n in model.graph.node
    )


def lift_1d(model: ModelWrapper) -> ModelWrapper:
    """Make a 1D network 2D ([N, C, L] -> [N, C, L, 1], QONNX's Change3DTo4DTensors), as
    FINN's sliding-window layers are 2D; verification compares in each model's own shape."""
    from qonnx.transformation.change_3d_tensors_to_4d import (
        Change3DTo4DTensors,
        _find_invalid_nodes,
    )

    if not has_1d_windows(model):
        return model
    disguised = _disguise_average_pools(model)
    lifted = model.transform(Change3DTo4DTensors())
    for graph in (model, lifted):
        _undisguise_average_pools(graph, disguised)
    complete_window_attributes(lifted.graph)
    if has_1d_windows(lifted):
        unsupported = ", ".join(sorted(set(_find_invalid_nodes(model))))
        raise StepError(
            f"this 1D network cannot be made 2D for FINN's sliding-window layers: QONNX's "
            f"Change3DTo4DTensors does not handle {unsupported}",
            "remove or replace those operations in the network, or export it as a 2D network "
            "(Conv2d with a kernel of height 1)",
            model,
        )
    return lifted


def _disguise_average_pools(model: ModelWrapper) -> dict[str, str]:
    """Give each 1D ``AveragePool``/``GlobalAveragePool`` the op type ``MaxPool`` (a global
    one a whole-length window); returns node name -> original op type.

    QONNX's Change3DTo4DTensors refuses a graph with either, although it makes a MaxPool 2D
    by extending the window attributes the two share (a global pool has none), and ONNX
    infers the same shapes for both. The disguise is undone right after the lifting.
    """
    disguised = {}
    for node in model.graph.node:
        if node.op_type not in ("AveragePool", "GlobalAveragePool") or not node.name:
            continue
        shape = model.get_tensor_shape(node.input[0])
        if shape is None or len(shape) != 3:
            continue
        disguised[node.name] = node.op_type
        _as_max_pool(node, shape[2])
    return disguised


def _as_max_pool(pool: onnx.NodeProto, length: int) -> None:
    """Give the 1D average ``pool`` over ``length`` values the op type ``MaxPool`` and the
    window attributes a MaxPool has (a global pool's window: the whole length)."""
    from onnx import helper

    if pool.op_type == "GlobalAveragePool":
        pool.attribute.append(helper.make_attribute("kernel_shape", [length]))
    present = {a.name for a in pool.attribute}  # ONNX's defaults, which QONNX reads
    for name, value in (("pads", [0, 0]), ("strides", [1])):
        if name not in present:
            pool.attribute.append(helper.make_attribute(name, value))
    pool.op_type = "MaxPool"


def _undisguise_average_pools(model: ModelWrapper, disguised: dict[str, str]) -> None:
    """Give the nodes ``_disguise_average_pools`` renamed their own op types back."""
    for node in model.graph.node:
        original = disguised.get(node.name)
        if original is None:
            continue
        node.op_type = original
        if original == "GlobalAveragePool":  # it has no window attributes
            for attribute in list(node.attribute):
                node.attribute.remove(attribute)


def refuse_padded_bipolar(model: ModelWrapper) -> None:
    """Fail, naming the layer, when a zero-padded convolution reads bipolar (+-1)
    activations: FINN's XNOR/popcount layers encode -1 as bit 0, so they cannot represent
    the 0 of the padding, and the border would compute wrongly."""
    from qonnx.custom_op.registry import getCustomOp

    for conv in model.get_nodes_by_op_type("Conv"):
        pads = node_ints(conv, "pads")
        source = _activation_of(model, conv)
        if not any(pads) or source is None or source.op_type != "MultiThreshold":
            continue
        if getCustomOp(source).get_nodeattr("out_dtype") == "BIPOLAR":
            raise StepError(
                f"convolution {conv.name} pads 1-bit (bipolar) activations with zeros, which "
                "FINN's XNOR/popcount layers cannot represent (their 0 bit means -1, so the "
                "border would compute wrongly)",
                "export that convolution without padding (as FINN's CNV does), or quantize "
                "its input activations to 2 bits or more",
                model,
            )


def _activation_of(model: ModelWrapper, conv: onnx.NodeProto) -> onnx.NodeProto | None:
    """The node whose output ``conv`` reads, through pools and layout changes."""
    source: onnx.NodeProto | None = model.find_producer(conv.input[0])
    while source is not None and source.op_type in ("MaxPool", "Transpose", "Reshape"):
        source = model.find_producer(source.input[0])
    return source


def node_ints(node: onnx.NodeProto, name: str, default: list[int] | None = None) -> list[int]:
    """The ints of ``node``'s attribute ``name`` (``default``, else [], when it has none)."""
    found = [list(a.ints) for a in node.attribute if a.name == name]
    return found[0] if found else list(default or [])


def node_int(node: onnx.NodeProto, name: str, default: int) -> int:
    """The int of ``node``'s attribute ``name`` (``default`` when it has none)."""
    found = [a.i for a in node.attribute if a.name == name]
    return found[0] if found else default


def has_depthwise_convs(model: ModelWrapper) -> bool:
    """True when a Conv has one group per input channel (a depthwise convolution)."""
    for node in model.get_nodes_by_op_type("Conv"):
        groups = next((a.i for a in node.attribute if a.name == "group"), 1)
        shape = model.get_tensor_shape(node.input[0])
        if groups > 1 and shape is not None and groups == shape[1]:
            return True
    return False


def streamline_depthwise(model: ModelWrapper) -> ModelWrapper:
    """Move the channelwise scales in front of depthwise convolutions past them, into the
    next thresholds (FINN's MobileNet recipe), so every depthwise convolution sees
    integers; before FINN's streamlining lowers the convolutions."""
    from finn.transformation.streamline import Streamline
    from finn.transformation.streamline.absorb import AbsorbMulIntoMultiThreshold
    from finn.transformation.streamline.reorder import MoveMulPastDWConv
    from qonnx.transformation.infer_datatypes import InferDataTypes

    if not has_depthwise_convs(model):
        return model
    model = model.transform(Streamline())
    for transform in (MoveMulPastDWConv(), AbsorbMulIntoMultiThreshold(), InferDataTypes()):
        model = model.transform(transform)
    return model


def streamline_residuals(model: ModelWrapper) -> ModelWrapper:
    """Move scales and biases past forks and joins until the graph stops changing."""
    from finn.transformation.streamline import Streamline
    from finn.transformation.streamline.absorb import (
        AbsorbConsecutiveTransposes,
        AbsorbTransposeIntoMultiThreshold,
    )
    from finn.transformation.streamline.reorder import (
        MoveLinearPastEltwiseAdd,
        MoveLinearPastFork,
        MoveScalarLinearPastInvariants,
        MoveScalesPastIm2Col,
        MoveTransposePastFork,
    )
    from finn.transformation.streamline.round_thresholds import RoundAndClipThresholds

    if not has_branches(model):
        return model
    moves = (
        RoundAndClipThresholds,
        MoveLinearPastFork,
        MoveLinearPastEltwiseAdd,
        MoveScalarLinearPastInvariants,
        MoveTransposePastFork,
        tfm.MoveTransposePastProducedJoinAdd,
        tfm.MoveAddIntoTransposedLayout,
        tfm.MoveTransposesBeforeThresholds,
        MoveScalesPastIm2Col,
        AbsorbTransposeIntoMultiThreshold,
        AbsorbConsecutiveTransposes,
    )
    for _ in range(RESIDUAL_ROUNDS):
        before = model.graph.SerializeToString()
        for transform in moves:
            model = model.transform(transform())
        if model.graph.SerializeToString() == before:
            break  # FINN's streamlining already ran on this graph
        model = _tidy(model.transform(Streamline()))
    return model


MOVED_LAYOUTS = ("Concat", "Resize", "Upsample", "DepthToSpace")  # what streamline_joins moves


def streamline_joins(model: ModelWrapper) -> ModelWrapper:
    """Bring each ``Concat``, nearest-neighbour ``Resize`` and ``DepthToSpace`` to integers
    channels-last, as FINN's ``StreamingConcat`` and ``UpsampleNearestNeighbour`` and
    brainsmith's ``StreamingDepthToSpace`` take them: branch scales moved past the join (one
    per channel), identical transposes past the join or the resize, thresholds before the
    DepthToSpace, and the scales on to the thresholds, until the graph stops changing."""
    from finn.transformation.streamline import Streamline
    from finn.transformation.streamline.absorb import (
        AbsorbConsecutiveTransposes,
        AbsorbTransposeIntoMultiThreshold,
        AbsorbTransposeIntoResize,
    )
    from finn.transformation.streamline.reorder import MoveScalesPastIm2Col
    from qonnx.transformation.infer_data_layouts import InferDataLayouts

    if not any(n.op_type in MOVED_LAYOUTS for n in model.graph.node):
        return model
    moves: tuple[type[Transformation], ...] = (
        tfm.MoveChannelwiseBeforeDepthToSpace,
        tfm.MoveScalesPastConcat,
        tfm.MoveTransposesPastConcat,
        tfm.MoveScalePastTranspose,
        tfm.MoveScalesPastMaxPoolNHWC,  # a skip's scale, moved past its fork, on to the layer
        MoveScalesPastIm2Col,
        AbsorbTransposeIntoResize,
        AbsorbConsecutiveTransposes,
    )
    if any(n.op_type == "DepthToSpace" for n in model.graph.node):
        moves += (  # the transpose on to the DepthToSpace, then DCR order if it helps
            AbsorbTransposeIntoMultiThreshold,
            tfm.DepthToSpaceInWeightOrder,
        )
    for _ in range(len(model.graph.node)):
        before = model.graph.SerializeToString()
        for move in moves:
            model = model.transform(move())
        if model.graph.SerializeToString() == before:
            break
        model = _tidy(model.transform(Streamline()))
    return model.transform(InferDataLayouts())


def channels_last(model: ModelWrapper) -> ModelWrapper:
    """Move channels-last transposes before the thresholds that feed them, cancelling
    transpose pairs, until nothing moves (each move changes a threshold to NHWC, so this
    ends): the layout change then happens on the host or not at all, not in shuffle layers."""
    from finn.transformation.streamline.absorb import AbsorbConsecutiveTransposes

    move = tfm.MoveTransposesBeforeThresholds
    for _ in range(len(model.graph.node)):
        model, moved = move().apply(model)
        if not moved:
            break
        model = _tidy(model.transform(AbsorbConsecutiveTransposes()))
    return model


def convert_to_hw(
    model: ModelWrapper,
    names: list[str],
    make: Callable[[str], Transformation],
    rewrites: Sequence[str] = (),
) -> ModelWrapper:
    """Apply the kernels' ``rewrites``, then the infer transforms ``names`` (FINN's order)
    and FINN's layout fix-ups.

    ``make(name)`` returns the transform instance for a name (with the blueprint's filters).
    Rewrites and the transforms that leave a scale behind are followed by streamlining when
    they changed the graph, so the scales they move reach the thresholds.
    """
    from brainsmith.frameworks.finn.passes.flatten import RemoveFlattenForks

    first, middle, last = _in_phases(names, rewrites)
    model = _streamlined_after(model, [make(name) for name in first])
    for name in middle:
        model = model.transform(make(name))
        if short_name(name) == "InferConvInpGen":
            model = model.transform(RemoveFlattenForks())
    model = fix_layouts(model)
    for name in last:
        model = model.transform(make(name))
    pad_streamed_operand_vectors(model)
    return _tidy(model)


def _in_phases(names: list[str], rewrites: Sequence[str]) -> tuple[list[str], list[str], list[str]]:
    """The ``rewrites`` and infer transforms ``names`` in the phases ``convert_to_hw`` runs:
    (those leaving scales to streamline, the others, those after the layout fix-ups)."""
    first = [*rewrites, *(n for n in names if short_name(n) in SCALE_LEAVING_TRANSFORMS)]
    last = [n for n in names if short_name(n) in LAYOUT_TRANSFORMS]
    middle = [n for n in names if n not in first and n not in last]
    return first, middle, last


def _streamlined_after(model: ModelWrapper, transforms: list[Transformation]) -> ModelWrapper:
    """``transforms`` applied, then the scales they leave streamlined into the next layers
    if they changed the graph."""
    from finn.transformation.streamline import Streamline
    from finn.transformation.streamline.reorder import MoveScalarLinearPastInvariants

    if not transforms:
        return model
    before = model.graph.SerializeToString()
    for transform in transforms:
        model = model.transform(transform)
    if model.graph.SerializeToString() != before:
        model = model.transform(MoveScalarLinearPastInvariants()).transform(Streamline())
    return model


def pad_streamed_operand_vectors(model: ModelWrapper) -> list[str]:
    """Give each matrix layer of two streams (an attention product, ``mem_mode: dynamic``)
    at least three ``numInputVectors`` (batch, heads, rows); returns the layers changed.

    FINN folds the second operand as ``numInputVectors[:2] + [MW, MH/PE, PE]``, which
    assumes (batch, heads, rows). A product of 3D tensors (heads, rows, columns) gets
    (heads, rows), so the operand's folded shape counted it once per row: InsertFIFO then
    refuses the design and a stream of it has the wrong length. Leading ones change nothing
    else (FINN reshapes the input to this shape and the cycles are the product).
    """
    from qonnx.custom_op.registry import getCustomOp

    changed = []
    for node in model.graph.node:
        if not node.op_type.startswith("MVAU") or len(node.input) < 2:
            continue
        layer = getCustomOp(node)
        vectors = list(layer.get_nodeattr("numInputVectors"))
        if layer.get_nodeattr("mem_mode") == "dynamic" and len(vectors) < 3:
            layer.set_nodeattr("numInputVectors", [1] * (3 - len(vectors)) + vectors)
            changed.append(node.name)
    return changed


def fix_layouts(model: ModelWrapper) -> ModelWrapper:
    """FINN's clean-up after conversion: cancel transpose pairs, absorb the transpose and
    flatten between the last convolution and the fully connected layers reading it."""
    from finn.transformation.streamline.absorb import AbsorbConsecutiveTransposes
    from qonnx.transformation.infer_data_layouts import InferDataLayouts
    from qonnx.transformation.infer_shapes import InferShapes

    model = model.transform(AbsorbConsecutiveTransposes())
    from brainsmith.frameworks.finn.passes.flatten import RemoveFlattenForks

    model = model.transform(RemoveFlattenForks())
    model = _tidy(model).transform(InferDataLayouts()).transform(InferShapes())
    return model


def transform_args(name: str, cfg: DataflowBuildConfig, plan: BuildPlan) -> dict[str, object]:
    """Constructor arguments FINN's own flow passes to an infer transform, plus the
    blueprint's filters (and a Lattice board's: integer adds only)."""
    short = short_name(name)
    if short == "InferRequantLayer":
        return {"bitwidth_threshold": cfg.requant_bitwidth_threshold}
    if short == "InferElementwiseBinaryOperation":
        wanted = elementwise_filter(plan.elementwise_ops())
        if plan.options is not None and plan.options.lattice:
            wanted = _integer_adds_only(wanted)
        return {"_filter": wanted}
    if short == "InferShuffle":
        return {"_filter": shuffle_filter(cfg.infer_shuffle_skip_first)}
    return {}


def shuffle_filter(skip_first: bool) -> NodeFilter:
    """A node filter for ``InferShuffle``: never a transpose whose result only the host reads
    after the accelerator (the output's layout change, a free copy on the host but two
    frame buffers in hardware), and with ``skip_first`` (FINN's default) not the graph's
    first node (the input's layout change) either."""

    from finn.transformation.fpgadataflow.convert_to_hw.shuffle import skip_first_node_transpose

    def wanted(model: ModelWrapper, node: onnx.NodeProto) -> bool:
        if feeds_only_the_output(model, node):
            return False
        return not skip_first or skip_first_node_transpose(model, node)

    return wanted


SCALES = ("Mul", "Add", "Sub", "Div")  # by a constant: the output's dequantisation
OUTPUT_SIDE = (*SCALES, "Reshape", "Transpose", "Flatten", "Squeeze")


def feeds_only_the_output(model: ModelWrapper, node: onnx.NodeProto) -> bool:
    """Whether ``node``'s result reaches a graph output through layout changes and constant
    scales or offsets alone (what stays on the host after the accelerator)."""
    outputs = {o.name for o in model.graph.output}
    tensor = node.output[0]
    while tensor not in outputs:
        reader = _output_side_reader(model, tensor)
        if reader is None:
            return False
        tensor = reader.output[0]
    return True


def _output_side_reader(model: ModelWrapper, tensor: str) -> onnx.NodeProto | None:
    """The one node reading ``tensor`` when it is a layout change or a scale or offset by
    constants; else None."""
    readers = model.find_consumers(tensor) or []
    if len(readers) != 1 or readers[0].op_type not in OUTPUT_SIDE:
        return None
    reader: onnx.NodeProto = readers[0]
    if reader.op_type in SCALES and not _constant_operands(model, reader):
        return None
    return reader


def elementwise_filter(op_types: set[str] | None) -> NodeFilter:
    """A node filter for ``InferElementwiseBinaryOperation``: the selected operations only,
    never the output's dequantisation (floating-point scales and offsets by constants that
    only the graph's outputs read: a classifier's scale and bias), which stays on the host
    as in FINN's flows. ``None`` keeps FINN's default (every operation)."""
    if op_types is None:
        return lambda *_: True
    from finn.transformation.fpgadataflow.convert_to_hw.elementwise_binary_operation import (
        InferElementwiseBinaryOperation,
    )

    def wanted(model: ModelWrapper, node: onnx.NodeProto) -> bool:
        return (
            node.op_type in op_types
            and InferElementwiseBinaryOperation.reject_output_dequant(model, node)
            and not output_dequantisation(model, node)
        )

    return wanted


def output_dequantisation(model: ModelWrapper, node: onnx.NodeProto) -> bool:
    """Whether ``node`` is part of the output's dequantisation: constant scales and offsets
    that turn integers (a classifier's accumulators) into the floating-point outputs, read
    by such operations and layout changes alone. Arithmetic on floats (a LayerNorm's affine
    part at an encoder's end) is not."""
    from qonnx.core.datatype import DataType

    float_result = model.get_tensor_datatype(node.output[0]) == DataType["FLOAT32"]
    if node.op_type not in SCALES or not float_result or not feeds_only_the_output(model, node):
        return False
    source = node
    while source is not None and source.op_type in SCALES and _constant_operands(model, source):
        tensor = source.input[0]
        source = model.find_producer(tensor)
    integer: bool = model.get_tensor_datatype(tensor).is_integer()
    return integer


def _constant_operands(model: ModelWrapper, node: onnx.NodeProto) -> bool:
    return all(model.get_initializer(name) is not None for name in node.input[1:])


def _integer_adds_only(wanted: NodeFilter) -> NodeFilter:
    """``wanted`` narrowed to what a Lattice part can have of FINN's elementwise layers: the
    sum of two integer streams (brainsmith's RTL ``IntAdd``). FINN's other elementwise RTL
    takes floats on a Versal part only; those operations stay on the host."""

    def integer_add(model: ModelWrapper, node: onnx.NodeProto) -> bool:
        if node.op_type != "Add" or not wanted(model, node):
            return False
        streams = [name for name in node.input if model.get_initializer(name) is None]
        types = [model.get_tensor_datatype(name) for name in node.input]
        return len(streams) == 2 and all(t is not None and t.is_integer() for t in types)

    return integer_add


def _tidy(model: ModelWrapper) -> ModelWrapper:
    from qonnx.transformation.general import GiveUniqueNodeNames
    from qonnx.transformation.infer_datatypes import InferDataTypes

    return model.transform(GiveUniqueNodeNames()).transform(InferDataTypes())


def complete_window_attributes(graph: onnx.GraphProto) -> list[str]:
    """Give convolutions and pools ``dilations``/``strides``/``pads`` for every kernel axis,
    as ONNX requires; returns the names of the nodes completed.

    QONNX's Change3DTo4DTensors makes 1D layers 2D but extends only ``kernel_shape``;
    onnxruntime then refuses the model ("dilations has incorrect size") although FINN
    reads it. The added axis gets dilation 1, stride 1 and no padding.
    """
    completed = []
    for node in graph.node:
        attrs = {a.name: a for a in node.attribute}
        kernel = attrs.get("kernel_shape")
        if node.op_type not in WINDOW_OPS or kernel is None:
            continue
        before = node.SerializeToString()
        _complete_window(node, attrs, len(kernel.ints))
        if node.SerializeToString() != before:
            completed.append(node.name or node.op_type)
    return completed


def _complete_window(
    node: onnx.NodeProto, attrs: dict[str, onnx.AttributeProto], rank: int
) -> None:
    """Extend ``node``'s ``dilations``/``strides`` (by 1) and ``pads`` (by 0) to ``rank``
    kernel axes."""
    from onnx import helper

    for name in ("dilations", "strides"):
        if name in attrs and len(attrs[name].ints) < rank:
            attrs[name].ints.extend([1] * (rank - len(attrs[name].ints)))
    pads = attrs.get("pads")
    if pads is not None and 0 < len(pads.ints) < 2 * rank:
        half = len(pads.ints) // 2
        begins, ends = list(pads.ints[:half]), list(pads.ints[half:])
        missing = [0] * (rank - half)
        node.attribute.remove(pads)
        node.attribute.append(helper.make_attribute("pads", begins + missing + ends + missing))


WINDOW_OPS = ("Conv", "MaxPool", "AveragePool", "MaxPoolNHWC")
