"""Small graph-editing operations shared by brainsmith's transforms (no plugins here)."""

from __future__ import annotations

import numpy as np
from onnx import NodeProto
from qonnx.core.modelwrapper import ModelWrapper


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
    return {t.name for t in model.graph.input} | {t.name for t in model.graph.output}


def bypass_node(model: ModelWrapper, node: NodeProto) -> bool:
    """Remove a single-input pass-through ``node`` by wiring its input to its readers.

    Returns False (and leaves the graph alone) when both ends are graph inputs/outputs.
    """
    source, result = node.input[0], node.output[0]
    io_names = graph_io_names(model)
    if result not in io_names:
        for consumer in model.find_consumers(result):
            for index, name in enumerate(consumer.input):
                if name == result:
                    consumer.input[index] = source
    elif source not in io_names and model.get_initializer(source) is None:
        # the result is a graph output: let the producer write it directly instead
        for other in model.graph.node:
            if other is node:
                continue
            for index, name in enumerate(other.input):
                if name == source:
                    other.input[index] = result
            for index, name in enumerate(other.output):
                if name == source:
                    other.output[index] = result
    else:
        return False
    model.graph.node.remove(node)
    return True
