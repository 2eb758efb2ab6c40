"""Small graph-editing operations shared by brainsmith's transforms (no plugins here)."""

from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np
from onnx import NodeProto
from qonnx.core.modelwrapper import ModelWrapper
from qonnx.util.basic import get_by_name

# A rewrite of one node in place: whether it changed the graph
NodeRewrite = Callable[[ModelWrapper, NodeProto], bool]

ONNX_DOMAINS = ("", "ai.onnx")


def unique_tensor_name(model: ModelWrapper, base: str) -> str:
    """A tensor name derived from ``base`` that the graph does not use yet (deterministic)."""
    taken = set(model.get_all_tensor_names())
    if base not in taken:
        return base
    index = 1
    while f"{base}_{index}" in taken:
        index += 1
    return f"{base}_{index}"


def add_initializer(model: ModelWrapper, base: str, value: np.ndarray) -> str:
    """Store ``value`` as a new initializer named after ``base``; return its name."""
    name = unique_tensor_name(model, base)
    model.set_initializer(name, value)
    return name


def drop_initializer_if_unused(model: ModelWrapper, name: str) -> None:
    """Delete initializer ``name`` once no node reads it (keeps the model free of dead weights)."""
    if model.get_initializer(name) is not None and not model.find_consumers(name):
        model.del_initializer(name)


def graph_io_names(model: ModelWrapper) -> set[str]:
    """Names of the graph's inputs and outputs, which a rewrite must never rename away."""
    return {t.name for t in model.graph.input} | graph_output_names(model)


def graph_output_names(model: ModelWrapper) -> set[str]:
    """Names of the graph's outputs."""
    return {t.name for t in model.graph.output}


def sole_reader(model: ModelWrapper, tensor: str) -> NodeProto | None:
    """The one node reading ``tensor``, when it has exactly one and is no graph output."""
    readers: list[NodeProto] = model.find_consumers(tensor) or []
    if len(readers) != 1 or tensor in graph_output_names(model):
        return None
    return readers[0]


def perm_of(transpose: NodeProto) -> list[int]:
    """A ``Transpose``'s permutation."""
    return list(get_by_name(transpose.attribute, "perm").ints)


def string_attribute(node: NodeProto, name: str) -> str | None:
    """The string attribute ``name`` of ``node``, or None when it has none."""
    found = get_by_name(node.attribute, name)
    return None if found is None else str(found.s.decode())


def rename_inputs(nodes: Iterable[NodeProto], old: str, new: str) -> None:
    """Make every input of ``nodes`` named ``old`` read ``new`` instead."""
    for node in nodes:
        for index, name in enumerate(node.input):
            if name == old:
                node.input[index] = new


def rename_outputs(nodes: Iterable[NodeProto], old: str, new: str) -> None:
    """Make every output of ``nodes`` named ``old`` write ``new`` instead."""
    for node in nodes:
        for index, name in enumerate(node.output):
            if name == old:
                node.output[index] = new


def rewrite_each(
    model: ModelWrapper, op_type: str, rewrite: NodeRewrite, *, onnx_only: bool = False
) -> bool:
    """``rewrite`` applied to every node of ``op_type`` (of the standard ONNX domain alone
    with ``onnx_only``) the graph holds when it starts; whether any changed the graph."""
    changed = False
    for node in list(model.graph.node):
        if node.op_type == op_type and (not onnx_only or node.domain in ONNX_DOMAINS):
            changed |= rewrite(model, node)
    return changed


def rewrite_first(model: ModelWrapper, op_type: str, rewrite: NodeRewrite) -> bool:
    """``rewrite`` tried on the nodes of ``op_type`` in graph order until one changes the
    graph; whether one did."""
    return any(rewrite(model, node) for node in model.graph.node if node.op_type == op_type)


def bypass_node(model: ModelWrapper, node: NodeProto) -> bool:
    """Remove a single-input pass-through ``node`` by wiring its input to its readers.

    Returns False (and leaves the graph alone) when both ends are graph inputs/outputs.
    """
    source, result = node.input[0], node.output[0]
    io_names = graph_io_names(model)
    if result not in io_names:
        rename_inputs(model.find_consumers(result), result, source)
    elif source not in io_names and model.get_initializer(source) is None:
        # the result is a graph output: let the producer write it directly instead
        others = [other for other in model.graph.node if other is not node]
        rename_inputs(others, source, result)
        rename_outputs(others, source, result)
    else:
        return False
    model.graph.node.remove(node)
    return True
