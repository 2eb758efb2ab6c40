"""SplitPackedProjections: one matrix product per slice of a packed projection."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from onnx import NodeProto, helper
from qonnx.core.modelwrapper import ModelWrapper
from qonnx.transformation.base import Transformation
from qonnx.transformation.infer_datatypes import InferDataTypes
from qonnx.transformation.infer_shapes import InferShapes

from brainsmith.plugin import transform
from brainsmith.transforms.graph_rewrite import (
    add_initializer,
    drop_initializer_if_unused,
    graph_output_names,
    rewrite_each,
    unique_tensor_name,
)

# Elementwise operations with a constant operand that may follow the product before the
# slices (the dequantization scales and bias FINN's conversion leaves there)
ELEMENTWISE = ("Mul", "Div", "Add", "Sub")


@transform(stage="topology_opt")
class SplitPackedProjections(Transformation):  # type: ignore[misc]
    """A matrix product only sliced (packed q/k/v) -> one product per slice.

    Replace ``MatMul(x, W)`` (then elementwise ops with constants), read only by
    ``Slice`` nodes along its last axis, by one ``MatMul(x, W[:, a:b])`` per slice.

    Brevitas's ``QuantMultiheadAttention`` packs the query, key and value projections into
    one by default (``packed_in_proj=True``) and slices the result; no FINN kernel takes a
    ``Slice``, so everything after it stayed on the host. Slicing the weight's columns
    computes the same values (each output column depends on its own weight column only);
    a constant whose last axis spans the packed width is sliced with it, a scalar one kept.
    """

    def apply(self, model: ModelWrapper) -> tuple[ModelWrapper, bool]:
        if rewrite_each(model, "MatMul", _split):  # the new tensors' shapes and types
            model = model.transform(InferShapes()).transform(InferDataTypes())
        return model, False


@dataclass(frozen=True)
class Columns:
    """A ``Slice`` node taking the columns ``start:end`` of the packed product."""

    node: NodeProto
    start: int
    end: int


@dataclass(frozen=True)
class PackedProjection:
    """``product`` (then the elementwise ``chain``), read by the ``slices`` alone."""

    product: NodeProto
    chain: list[NodeProto]
    slices: list[Columns]


def _packed_projection(model: ModelWrapper, product: NodeProto) -> PackedProjection | None:
    weight = model.get_initializer(product.input[1])
    if weight is None or weight.ndim != 2:
        return None
    width = weight.shape[1]
    chain, tensor = _elementwise_chain(model, product, width)
    readers = model.find_consumers(tensor) or []
    found = [_columns(model, reader, width) for reader in readers]
    slices = [s for s in found if s is not None]
    if not slices or len(slices) != len(found) or tensor in graph_output_names(model):
        return None
    return PackedProjection(product, chain, slices)


def _split(model: ModelWrapper, product: NodeProto) -> bool:
    packed = _packed_projection(model, product)
    if packed is None:
        return False
    for piece in packed.slices:
        position = list(model.graph.node).index(piece.node)
        for offset, new in enumerate(_one_slice(model, packed, piece)):
            model.graph.node.insert(position + offset, new)
        model.graph.node.remove(piece.node)
    for old in (*reversed(packed.chain), product):
        model.graph.node.remove(old)
        for name in old.input:
            drop_initializer_if_unused(model, name)
    return True


def _one_slice(model: ModelWrapper, packed: PackedProjection, piece: Columns) -> list[NodeProto]:
    """The product of ``piece``'s columns and the chain on them, writing ``piece``'s output."""
    product, chain, start, end = packed.product, packed.chain, piece.start, piece.end
    weight = product.input[1]
    name = f"{product.name}_{start}_{end}"
    columns = add_initializer(
        model, f"{weight}_{start}_{end}", model.get_initializer(weight)[:, start:end]
    )
    model.set_tensor_datatype(columns, model.get_tensor_datatype(weight))
    tensors = [unique_tensor_name(model, f"{name}_out{i}") for i in range(len(chain))]
    tensors.append(piece.node.output[0])
    nodes = [helper.make_node("MatMul", [product.input[0], columns], [tensors[0]], name=name)]
    for index, step in enumerate(chain):
        constant = _constant_slice(model, step, start, end)
        operands = [tensors[index], constant]
        if not _data_first(model, step):
            operands.reverse()
        nodes.append(
            helper.make_node(
                step.op_type, operands, [tensors[index + 1]], name=f"{step.name}_{start}_{end}"
            )
        )
    return nodes


def _elementwise_chain(
    model: ModelWrapper, product: NodeProto, width: int
) -> tuple[list[NodeProto], str]:
    """The elementwise nodes with a constant operand that follow ``product`` one after the
    other (each the only reader of the one before), and the tensor the last one writes."""
    chain: list[NodeProto] = []
    tensor = product.output[0]
    while True:
        readers = model.find_consumers(tensor) or []
        if len(readers) != 1 or readers[0].op_type not in ELEMENTWISE:
            return chain, tensor
        step = readers[0]
        constant = _constant_of(model, step)
        if constant is None or not _sliceable(constant, width):
            return chain, tensor
        chain.append(step)
        tensor = step.output[0]


def _constant_of(model: ModelWrapper, node: NodeProto) -> np.ndarray | None:
    if len(node.input) != 2:
        return None
    values = [model.get_initializer(name) for name in node.input]
    constants = [v for v in values if v is not None]
    return constants[0] if len(constants) == 1 else None


def _data_first(model: ModelWrapper, node: NodeProto) -> bool:
    return model.get_initializer(node.input[1]) is not None


def _sliceable(constant: np.ndarray, width: int) -> bool:
    """A scalar (kept as it is) or a constant whose last axis is the packed width alone."""
    return constant.size == 1 or (constant.shape[-1] == width and constant.size == width)


def _constant_slice(model: ModelWrapper, node: NodeProto, start: int, end: int) -> str:
    name: str = node.input[1] if _data_first(model, node) else node.input[0]
    constant = model.get_initializer(name)
    if constant.size == 1:
        return name
    return add_initializer(model, f"{name}_{start}_{end}", constant[..., start:end])


def _columns(model: ModelWrapper, node: NodeProto, width: int) -> Columns | None:
    """The columns a ``Slice`` takes, contiguous along the last axis; else None."""
    parameters = _slice_parameters(model, node)
    if parameters is None:
        return None
    starts, ends, axes, steps = parameters
    rank = len(model.get_tensor_shape(node.input[0]) or ())
    if steps != 1 or axes not in (-1, rank - 1):
        return None
    start, end = _clamped(starts, width), _clamped(ends, width)
    return Columns(node, start, end) if start < end else None


def _slice_parameters(model: ModelWrapper, node: NodeProto) -> list[int] | None:
    """Starts, ends, axes and steps (1 when absent) of a ``Slice`` whose each is one
    constant; else None."""
    if node.op_type != "Slice" or len(node.input) < 4:
        return None
    values = [model.get_initializer(name) for name in node.input[1:]]
    if any(v is None or v.size != 1 for v in values):
        return None
    parameters = [int(v.reshape(-1)[0]) for v in values[:4]]
    return parameters if len(parameters) == 4 else [*parameters, 1]


def _clamped(index: int, width: int) -> int:
    """A slice bound (negative from the end) as a column within ``[0, width]``."""
    return max(0, min(width, index + width if index < 0 else index))
