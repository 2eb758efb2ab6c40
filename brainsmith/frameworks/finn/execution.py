"""Python execution of FINN hardware layers in the layout the generated hardware uses, and
of a model at any point of the build (``executable``: a copy whose ``*_hls`` layers run as
their generic kernel and ``*_rtl`` layers in their Python fallback, inside its parent after
the dataflow partition).

Verification runs hardware layers through FINN's Python models. Some of them compute in a
layout the hardware does not use, so a correct design would fail verification (a false
alarm) or a wrong one could pass. ``fix_python_execution()`` (idempotent) corrects them; the
generated hardware and every other case keep FINN's own code.

1. An MVAU with built-in thresholds treats a 3-D (batch, sequence, channels) result as
   channels-first, so a transformer's projection fails ("Threshold shape incorrect") or,
   when the sequence length equals the channel count, thresholds the wrong axis. Here it is
   channels-last, as the hardware computes it.
2. A depthwise sliding-window generator streams each window channel-fold by channel-fold
   (``SIMD`` channels at a time: fold, kernel position, channel within the fold). FINN's
   ``ConvolutionInputGenerator_rtl`` model interleaves its output that way, and its
   generic ``ConvolutionInputGenerator`` model here does the same, so both agree with the
   hardware before and after specialisation.
3. ``Pool`` (max/average pooling after such a generator) reads that interleaved stream with
   ``PE`` channels per word in hardware; FINN's model assumes the plain (kernel position,
   channel) order, which is only the same when ``PE`` equals the channel count. Here it
   reads the interleaved order, so a Pool whose ``PE`` matches the generator's ``SIMD``
   verifies exactly and a mismatched pair is caught.
4. FINN's RTL softmax and LayerNorm approximate the functions its Python models compute
   exactly: within ``float_units.rtl_arithmetic()`` (the execution RTL simulation is
   compared with) ``HWSoftmax_rtl`` and ``LayerNorm_rtl`` run the RTL's own arithmetic, so
   Verilator matches Python bit for bit; elsewhere they compute the exact functions.
5. QONNX's executor checks every integer-typed tensor after every node
   (``sanitize_quant_values``) with Python's built-in ``max`` over the array, element by
   element: 70 % of a full-size CNV's execution time. Here the same check runs in NumPy,
   with the same rounding, warnings and errors.

What the host can run is decided here once (``host_cannot_run``): ``brainsmith check`` marks
a node left on the host that it cannot run as blocking, and the build refuses such a node in
the verification reference and in the graph around the accelerator, with the same reason.
"""

from __future__ import annotations

import copy
import functools
import os

from brainsmith.frameworks.finn.env import prepare_finn
from brainsmith.frameworks.finn.facts import HLS_DOMAIN, HW_DOMAIN, RTL_DOMAIN

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping

    import numpy as np
    import onnx
    from finn.custom_op.fpgadataflow.hwcustomop import HWCustomOp
    from qonnx.core.datatype import BaseDataType
    from qonnx.core.modelwrapper import ModelWrapper

    Context = dict[str, np.ndarray]  # an execution context: tensor name -> value
    ExecuteNode = Callable[[HWCustomOp, Context, onnx.GraphProto], None]
    Patch = Callable[[ExecuteNode], ExecuteNode]  # a layer's execute_node -> the fixed one


FIX_MARK = "_brainsmith_fix"


def fix_python_execution() -> None:
    """Apply 1.-5. (idempotent)."""
    prepare_finn()
    from finn.custom_op.fpgadataflow.convolutioninputgenerator import ConvolutionInputGenerator
    from finn.custom_op.fpgadataflow.matrixvectoractivation import MVAU
    from finn.custom_op.fpgadataflow.pool import Pool
    from finn.custom_op.fpgadataflow.rtl.hwsoftmax_rtl import HWSoftmax_rtl
    from finn.custom_op.fpgadataflow.rtl.layernorm_rtl import LayerNorm_rtl

    _patch(MVAU, _mvau_channels_last)
    _patch(ConvolutionInputGenerator, _generic_swg_interleaved)
    _patch(Pool, _pool_reads_interleaved)
    _patch(HWSoftmax_rtl, _as_its_rtl(_softmax))
    _patch(LayerNorm_rtl, _as_its_rtl(_layer_norm))
    _fast_sanitize()


def _fast_sanitize() -> None:
    import qonnx.core.onnx_exec as executor

    if getattr(executor.sanitize_quant_values, FIX_MARK, False):
        return
    setattr(sanitize_quant_values, FIX_MARK, True)
    executor.sanitize_quant_values = sanitize_quant_values


def sanitize_quant_values(
    model: ModelWrapper,
    node_tensors: Iterable[str],
    execution_context: dict[str, np.ndarray],
    check_values: bool = False,
) -> dict[str, np.ndarray]:
    """QONNX's ``sanitize_quant_values`` with the largest rounding error taken in NumPy."""
    for name in node_tensors:
        dtype = model.get_tensor_datatype(name)
        if dtype.is_integer():
            sanitize_value(name, dtype, execution_context, check_values)
    return execution_context


def sanitize_value(
    name: str,
    dtype: BaseDataType,
    execution_context: dict[str, np.ndarray],
    check_values: bool = False,
) -> None:
    """QONNX's check of one tensor of integer ``dtype``: values off it are rounded (with its
    warning); a rounding error above its threshold is an error."""
    import warnings

    import numpy as np
    from qonnx.util.basic import get_execution_error_thresh

    current = execution_context[name]
    updated = current
    if not np.all(dtype.allowed(current)):
        updated = np.round(current)
        warnings.warn(
            f"The values of tensor {name} can't be represented with the set datatype "
            f"annotation ({dtype.name}), they will be rounded to match the datatype "
            "annotation.",
            stacklevel=3,
        )
    error = float(np.max(np.abs(current - updated))) if np.size(current) else 0.0
    if not error <= get_execution_error_thresh():  # a NaN is an error too
        raise Exception(
            f"Rounding error is too high to match set QONNX datatype ({dtype}) for input {name}"
        )
    if check_values and not np.all(dtype.allowed(updated)):
        raise Exception(
            f"Values can't be represented with set finn datatype ({dtype}) for input {name}"
        )
    execution_context[name] = updated


def _patch(cls: type[HWCustomOp], make: Patch) -> None:
    if getattr(cls.execute_node, FIX_MARK, False):
        return
    patched = make(cls.execute_node)
    setattr(patched, FIX_MARK, True)
    cls.execute_node = patched


def interleave(values: np.ndarray, channels: int, simd: int) -> np.ndarray:
    """(..., kernel positions x channels) -> the hardware's (..., fold, position, simd)."""
    lead, width = values.shape[:-1], values.shape[-1]
    positions = width // channels
    folded = values.reshape(*lead, positions, channels // simd, simd).swapaxes(-3, -2)
    return folded.reshape(*lead, width)


def deinterleave(values: np.ndarray, channels: int, pe: int) -> np.ndarray:
    """The inverse of ``interleave``."""
    lead, width = values.shape[:-1], values.shape[-1]
    positions = width // channels
    plain = values.reshape(*lead, channels // pe, positions, pe).swapaxes(-3, -2)
    return plain.reshape(*lead, width)


def _mvau_channels_last(original: ExecuteNode) -> ExecuteNode:
    def execute_node(self: HWCustomOp, context: Context, graph: onnx.GraphProto) -> None:
        shape = self.get_normal_input_shape()
        plain = (
            len(shape) == 3
            and self.get_nodeattr("noActivation") == 0
            and not self.get_nodeattr("binaryXnorMode")
            and "BIPOLAR"
            not in (
                self.get_nodeattr("inputDataType"),
                self.get_nodeattr("weightDataType"),
                self.get_nodeattr("outputDataType"),
            )
        )
        if not plain:
            original(self, context, graph)
            return
        import numpy as np
        from qonnx.custom_op.general.multithreshold import multithreshold

        node = self.onnx_node
        result = np.matmul(context[node.input[0]].reshape(shape), context[node.input[1]])
        result = multithreshold(
            result, context[node.input[2]], 1, self.get_nodeattr("ActVal"), channels_last=True
        )
        context[node.output[0]] = result.reshape(context[node.output[0]].shape)

    return execute_node


def _generic_swg_interleaved(original: ExecuteNode) -> ExecuteNode:
    def execute_node(self: HWCustomOp, context: Context, graph: onnx.GraphProto) -> None:
        original(self, context, graph)
        generic = self.onnx_node.op_type == "ConvolutionInputGenerator"  # not the _rtl subclass
        channels, simd = self.get_nodeattr("IFMChannels"), self.get_nodeattr("SIMD")
        if generic and self.get_nodeattr("depthwise") and simd < channels:
            name = self.onnx_node.output[0]
            context[name] = interleave(context[name], channels, simd)

    return execute_node


def _pool_reads_interleaved(original: ExecuteNode) -> ExecuteNode:
    def execute_node(self: HWCustomOp, context: Context, graph: onnx.GraphProto) -> None:
        channels, pe = self.get_nodeattr("Channels"), self.get_nodeattr("PE")
        if pe >= channels:
            original(self, context, graph)
            return
        name = self.onnx_node.input[0]
        stream = context[name]
        context[name] = deinterleave(stream, channels, pe)
        try:
            original(self, context, graph)
        finally:
            context[name] = stream  # other readers of the tensor see the stream unchanged

    return execute_node


def _as_its_rtl(compute: Callable[[HWCustomOp, np.ndarray], np.ndarray]) -> Patch:
    """An RTL float layer's ``execute_node`` that, within ``float_units.rtl_arithmetic()``,
    gives ``compute(layer, input)``, what its RTL computes."""

    def make(original: ExecuteNode) -> ExecuteNode:
        def execute_node(self: HWCustomOp, context: Context, graph: onnx.GraphProto) -> None:
            from brainsmith.frameworks.finn import float_units

            if self.get_nodeattr("exec_mode") == "rtlsim" or not float_units.in_rtl_arithmetic():
                original(self, context, graph)
                return
            node = self.onnx_node
            values = compute(self, context[node.input[0]])
            context[node.output[0]] = values.reshape(context[node.output[0]].shape)

        return execute_node

    return make


def _softmax(layer: HWCustomOp, values: np.ndarray) -> np.ndarray:
    from brainsmith.frameworks.finn.float_units import softmax

    return softmax(values, layer.get_input_datatype().is_integer())


def _layer_norm(layer: HWCustomOp, values: np.ndarray) -> np.ndarray:
    from brainsmith.frameworks.finn.float_units import layer_norm

    return layer_norm(values, layer.get_nodeattr("SIMD"))


# -- running a model in Python at any point of the build ---------------------------------


def graph_inputs(model: ModelWrapper) -> list[onnx.ValueInfoProto]:
    initializers = {t.name for t in model.graph.initializer}
    return [i for i in model.graph.input if i.name not in initializers]


def executable(
    model: ModelWrapper, parent: ModelWrapper | None = None, workdir: str = ""
) -> ModelWrapper:
    """A copy of ``model`` that runs in Python; wrapped in ``parent`` after the partition."""
    return in_parent(runnable_copy(model), parent, workdir)


def runnable_copy(model: ModelWrapper) -> ModelWrapper:
    """A copy of ``model`` with ``*_hls`` layers as their generic kernel and ``*_rtl``
    layers in their Python fallback."""
    from qonnx.core.modelwrapper import ModelWrapper
    from qonnx.custom_op.registry import getCustomOp

    runnable = ModelWrapper(copy.deepcopy(model.model))
    for node in runnable.graph.node:
        if node.domain == HLS_DOMAIN and node.op_type.endswith("_hls"):
            node.domain, node.op_type = HW_DOMAIN, node.op_type[: -len("_hls")]
        elif node.domain == RTL_DOMAIN:
            getCustomOp(node).set_nodeattr("exec_mode", "cppsim")
    return runnable


def in_parent(runnable: ModelWrapper, parent: ModelWrapper | None, workdir: str) -> ModelWrapper:
    """``runnable`` (a partition) inside ``parent``, saved to ``workdir`` for it to point at;
    ``runnable`` itself when there is no parent or it is the whole graph already."""
    from qonnx.core.modelwrapper import ModelWrapper
    from qonnx.custom_op.registry import getCustomOp

    if parent is None or runnable.get_nodes_by_op_type("StreamingDataflowPartition"):
        return runnable
    path = os.path.join(workdir, "verify_partition.onnx")
    runnable.save(path)
    wrapper = ModelWrapper(copy.deepcopy(parent.model))
    for node in wrapper.get_nodes_by_op_type("StreamingDataflowPartition"):
        getCustomOp(node).set_nodeattr("model", path)
    return wrapper


# -- what the host can run ----------------------------------------------------------------

# Every node left on the host (before or after the accelerator, or the host tail) and every
# node of the verification reference runs in QONNX's executor: a node of a QONNX/FINN
# custom-op domain by its class, any other in onnxruntime as a one-node model.
HOST_EXECUTOR = "QONNX's executor (onnxruntime for standard operators)"
HOST_ADVICE = (
    "replace it with standard ONNX or QONNX operators, or take it out of the model and compute "
    "it in your own code around the built design (or add a kernel plugin that makes it a "
    "hardware layer)"
)


def host_cannot_run(node: onnx.NodeProto, opsets: Mapping[str, int]) -> str:
    """Why the host's executor cannot run ``node`` ("" when it can); ``opsets``: the model's
    opset version per domain."""
    from qonnx.custom_op.registry import is_custom_op

    if is_custom_op(node.domain, node.op_type):
        return ""
    domain = "" if node.domain == "ai.onnx" else node.domain
    where = f"domain '{node.domain}'" if domain else "the standard ONNX domain"
    since = _onnxruntime_operators().get((domain, node.op_type))
    if since is None:
        custom = ", and QONNX and FINN have no such custom op" if domain else ""
        return f"onnxruntime has no operator {node.op_type} in {where}{custom}"
    opset = opsets.get(domain, opsets.get("ai.onnx") if not domain else None)
    if opset is not None and since > opset:
        return (
            f"onnxruntime has {node.op_type} only from opset {since} on, and the model imports "
            f"opset {opset} of {where}"
        )
    return ""


def host_problems(model: ModelWrapper) -> list[str]:
    """``NAME (OP): why`` for each node of ``model`` the host cannot run."""
    opsets = {o.domain: o.version for o in model.model.opset_import}
    found = []
    for node in model.graph.node:
        why = host_cannot_run(node, opsets)
        if why:
            found.append(f"{node.name or '(unnamed)'} ({node.op_type}): {why}")
    return found


@functools.cache
def _onnxruntime_operators() -> dict[tuple[str, str], int]:
    """(domain, op type) -> the first opset onnxruntime has it in ("" for standard ONNX)."""
    import onnxruntime

    try:
        schemas = onnxruntime.capi.onnxruntime_pybind11_state.get_all_operator_schema()
    except AttributeError:  # an onnxruntime built without its schemas
        from onnx.defs import get_all_schemas_with_history

        schemas = get_all_schemas_with_history()
    first: dict[tuple[str, str], int] = {}
    for schema in schemas:
        key = ("" if schema.domain == "ai.onnx" else schema.domain, schema.name)
        first[key] = min(first.get(key, schema.since_version), schema.since_version)
    return first
