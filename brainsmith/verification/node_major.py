"""A flat model run node by node over many samples, as QONNX's ``execute_onnx`` runs it one
sample at a time: the same node executions and integer checks, with what does not change
between runs found once per model instead of once per node and sample.

- each standard node's onnxruntime session is made once (a single-node model of its
  tensors' value infos, looked up by name);
- the integer tensors QONNX's executor checks after every node (``sanitize_quant_values``)
  are read from the model's annotations once, where QONNX looks each tensor up by scanning
  them: on BERT-tiny that lookup was 37 % of a verification.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import cached_property

import numpy as np
from onnx import helper
from qonnx.core import execute_custom_node
from qonnx.core.datatype import DataType
from qonnx.custom_op.registry import is_custom_op
from qonnx.util.basic import (
    get_preferred_qonnx_opset,
    get_sanitize_quant_tensors,
    qonnx_make_model,
)

from brainsmith.frameworks.finn.execution import sanitize_value

TYPE_CHECKING = False
if TYPE_CHECKING:
    import onnx
    from qonnx.core.datatype import BaseDataType
    from qonnx.core.modelwrapper import ModelWrapper

    Context = dict[str, np.ndarray]
    Runner = Callable[[Context], None]


class NodeMajor:
    """``model`` readied to run node by node: its nodes' runners, the datatype of each
    tensor annotated with an integer one (checked after every node, as QONNX's executor
    does, unless QONNX's sanitising is switched off), and where each tensor is used last."""

    def __init__(self, model: ModelWrapper) -> None:
        self.model = model
        self.nodes = list(model.graph.node)
        graph = model.graph
        infos = {v.name: v for v in (*graph.input, *graph.output, *graph.value_info)}
        self.runners = [node_runner(model, node, infos) for node in self.nodes]
        self.integers = integer_datatypes(model) if get_sanitize_quant_tensors() != 0 else {}
        self.outputs = [o.name for o in model.graph.output]
        self.dead = _last_uses(self.nodes, self.outputs)  # tensors used last by each node

    @cached_property
    def empty(self) -> Context:
        """The graph's tensors as QONNX's executor starts a run (zeros, initializers as they
        are), made once: a node puts new arrays into a context, never writes into these."""
        empty: Context = self.model.make_empty_exec_context()
        return empty

    def run(self, feeds: list[Context], drop: bool = False) -> list[Context]:
        """Every node on every sample's context (the graph's other tensors zero to begin
        with, as QONNX's executor has them); ``drop``: each tensor but the outputs dropped
        after its last use (the samples' live tensors in memory at once, not all of them)."""
        if not self.model.check_all_tensor_shapes_specified():
            raise RuntimeError("found unspecified tensor shapes, try infer_shapes")
        contexts = [{**self.empty, **feed} for feed in feeds]
        for node, execute, dead in zip(self.nodes, self.runners, self.dead, strict=True):
            for context in contexts:
                self._execute(node, execute, context)
                _drop(context, dead if drop else [])
        return contexts

    def _execute(self, node: onnx.NodeProto, execute: Runner, context: Context) -> None:
        """``node`` run on ``context``, its integer inputs and outputs checked."""
        check_integers(self.integers, node.input, context)
        execute(context)
        check_integers(self.integers, node.output, context)


def _drop(context: Context, dead: list[str]) -> None:
    """The ``dead`` tensors removed from ``context`` (those it has)."""
    for name in dead:
        context.pop(name, None)


def _last_uses(nodes: list[onnx.NodeProto], outputs: list[str]) -> list[list[str]]:
    """Per node, the tensors (graph outputs aside) no later node reads."""
    last = {name: index for index, node in enumerate(nodes) for name in node.input}
    dead: list[list[str]] = [[] for _ in nodes]
    for name, index in last.items():
        if name not in outputs:
            dead[index].append(name)
    return dead


def integer_datatypes(model: ModelWrapper) -> dict[str, BaseDataType]:
    """Tensor name -> its QONNX datatype, for the tensors annotated with an integer one
    (``ModelWrapper.get_tensor_datatype``'s answer for each: the first annotation)."""
    found: dict[str, BaseDataType] = {}
    seen: set[str] = set()  # QONNX reads a tensor's first annotation only
    for annotation in model.graph.quantization_annotation:
        if annotation.tensor_name in seen:
            continue
        seen.add(annotation.tensor_name)
        datatype = _integer_datatype(annotation)
        if datatype is not None:
            found[annotation.tensor_name] = datatype
    return found


def _integer_datatype(annotation: onnx.TensorAnnotation) -> BaseDataType | None:
    """The integer QONNX datatype ``annotation`` gives (None: none, or not an integer one)."""
    name = _datatype_name(annotation)
    datatype = None if name is None else DataType[name]
    return datatype if datatype is not None and datatype.is_integer() else None


def _datatype_name(annotation: onnx.TensorAnnotation) -> str | None:
    """The first ``finn_datatype`` an annotation gives, if any."""
    for pair in annotation.quant_parameter_tensor_names:
        if pair.key == "finn_datatype":
            return str(pair.value)
    return None


def check_integers(
    integers: dict[str, BaseDataType], names: Iterable[str], context: Context
) -> None:
    """QONNX's ``sanitize_quant_values`` on ``names`` with their datatypes given: values off
    their integer datatype are rounded (with QONNX's warning), a rounding error above QONNX's
    threshold is an error."""
    for name in names:
        datatype = integers.get(name)
        if datatype is not None:
            sanitize_value(name, datatype, context)


def node_runner(
    model: ModelWrapper, node: onnx.NodeProto, infos: dict[str, onnx.ValueInfoProto]
) -> Runner:
    """``run(context)`` executing ``node`` as QONNX's ``execute_node`` does: a custom op by
    its class, a standard one in onnxruntime as a single-node model (made here, once);
    ``infos``: the model's value infos by tensor name."""
    graph = model.graph
    opsets = {o.domain: o.version for o in model.model.opset_import}
    opset = opsets.get(node.domain, get_preferred_qonnx_opset())
    if is_custom_op(node.domain, node.op_type):
        return lambda context: execute_custom_node.execute_custom_node(
            node, context, graph, onnx_opset_version=opset
        )
    return _onnxruntime_runner(node, infos, opset)


def _onnxruntime_runner(
    node: onnx.NodeProto, infos: dict[str, onnx.ValueInfoProto], opset: int
) -> Runner:
    """A standard ``node`` run in onnxruntime as a single-node model of ``opset``."""
    import onnxruntime  # heavy, and only for the standard nodes of a flat model

    inputs = [infos[name] for name in dict.fromkeys(node.input) if name in infos]
    outputs = [infos[name] for name in dict.fromkeys(node.output) if name in infos]
    single = qonnx_make_model(helper.make_graph([node], "single-node-exec", inputs, outputs))
    single.opset_import[0].version = opset
    options = onnxruntime.SessionOptions()
    options.enable_cpu_mem_arena = False  # kept per node, an arena would hold its largest output
    session = onnxruntime.InferenceSession(single.SerializeToString(), options)
    order = [v.name for v in outputs]

    def run(context: Context) -> None:
        results = session.run(None, {name: context[name] for name in node.input})
        context.update(zip(order, results, strict=True))

    return run
