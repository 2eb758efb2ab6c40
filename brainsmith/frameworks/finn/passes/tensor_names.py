"""QONNX's readable tensor names in one pass.

``GiveReadableTensorNames`` renames each tensor with ``ModelWrapper.rename_tensor``, which
scans every node, input, output, value_info, initializer and annotation: time grows with
tensors x nodes, and FINN's streamlining runs it after many of its rewrites. On a 4-layer ViT
it took 33 s of the 131 s of streamlining. ``readable_names`` gives the same names (node
``N``'s outputs ``N_out0``, ``N_out1``, its initializer inputs ``N_param0``, ...; the graph's
inputs ``global_in``, ``global_in_1``, ...; outputs ``global_out``, ...; a tensor left
unnamed by those ``tensor_<i>``) after the same clean-up (unused tensors dropped, shared
parameters made unique) and writes them in one sweep. Where QONNX would rename only
the first of two uses of a name in one node (``Mul(x, x)``) both are renamed here.
``install()`` (idempotent) makes it QONNX's.
"""

from __future__ import annotations

from itertools import chain

from qonnx.transformation.general import GiveReadableTensorNames

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, MutableSequence

    from onnx import GraphProto, NodeProto, ValueInfoProto
    from qonnx.core.modelwrapper import ModelWrapper
    from qonnx.transformation.base import Transformation

MARK = "_brainsmith_one_pass"


def readable_names(model: ModelWrapper) -> dict[str, str]:
    """Each tensor name of ``model``'s graph -> the name QONNX's renaming gives it."""
    graph = model.graph
    names: dict[str, str] = {}
    every = [*graph.value_info, *graph.input, *graph.output]  # QONNX's first pass, in order
    for index, tensor in enumerate(every):
        names.setdefault(tensor.name, f"tensor_{index}")
    names.update(_node_names(graph))
    names.update(_port_names(graph.input, "global_in"))
    names.update(_port_names(graph.output, "global_out"))
    return names


def _node_names(graph: GraphProto) -> dict[str, str]:
    """Each node's outputs and parameters named after the node, in the graph's order."""
    initializers = {t.name for t in graph.initializer}
    names: dict[str, str] = {}
    for node in graph.node:
        names.update(_outputs_named(node))
        params = [name for name in node.input if name in initializers]
        names.update({name: f"{node.name}_param{index}" for index, name in enumerate(params)})
    return names


def _outputs_named(node: NodeProto) -> dict[str, str]:
    """``node``'s outputs (but unnamed ones) named after it: ``N_out0``, ``N_out1``..."""
    return {name: f"{node.name}_out{index}" for index, name in enumerate(node.output) if name}


def _port_names(tensors: Iterable[ValueInfoProto], prefix: str) -> dict[str, str]:
    """The graph's inputs or outputs: ``prefix``, then ``prefix_1``, ``prefix_2``..."""
    return {
        tensor.name: prefix if index == 0 else f"{prefix}_{index}"
        for index, tensor in enumerate(tensors)
    }


def rename_all(model: ModelWrapper, names: dict[str, str]) -> None:
    """Apply ``names`` to every use of each tensor name in ``model``'s graph."""
    graph = model.graph
    for tensor in chain(graph.input, graph.output, graph.value_info, graph.initializer):
        tensor.name = names.get(tensor.name, tensor.name)
    for annotation in graph.quantization_annotation:
        annotation.tensor_name = names.get(annotation.tensor_name, annotation.tensor_name)
    for node in graph.node:
        _rename_ports(node.input, names)
        _rename_ports(node.output, names)


def _rename_ports(ports: MutableSequence[str], names: dict[str, str]) -> None:
    """Apply ``names`` to a node's inputs or outputs."""
    for index, name in enumerate(ports):
        if name in names:
            ports[index] = names[name]


def _apply(self: Transformation, model: ModelWrapper) -> tuple[ModelWrapper, bool]:
    model = model.cleanup()  # as QONNX's, whose first pass is a transform with clean-up
    if any(not node.name for node in model.graph.node):
        raise AssertionError("Found empty node name")  # as QONNX's
    rename_all(model, readable_names(model))
    return model, False


def install() -> None:
    """Make QONNX's ``GiveReadableTensorNames`` the one-pass renaming (idempotent)."""

    if getattr(GiveReadableTensorNames.apply, MARK, False):
        return
    setattr(_apply, MARK, True)
    GiveReadableTensorNames.qonnx_apply = GiveReadableTensorNames.apply  # kept for comparison
    GiveReadableTensorNames.apply = _apply
