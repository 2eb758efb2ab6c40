"""What the graph says of each layer: kernel, backend, folding, data types and their bit
widths, memory style, the streams it reads and its generated code."""

from __future__ import annotations

import os

from brainsmith.frameworks.finn.estimation.coverage import inherited_estimates

TYPE_CHECKING = False
if TYPE_CHECKING:
    import onnx
    from qonnx.core.modelwrapper import ModelWrapper
    from qonnx.custom_op.base import CustomOp

    from brainsmith.report_schema.estimates import (
        BitsKey,
        DatatypeKey,
        LayerAttribute,
        LayerFacts,
        Read,
    )

BACKEND_SUFFIXES = {"_hls": "hls", "_rtl": "rtl"}
LAYER_ATTRIBUTES: tuple[LayerAttribute, ...] = (
    "PE", "SIMD", "mem_mode", "ram_style", "resType", "depth",
)  # fmt: skip
DATATYPE_BITS: tuple[tuple[DatatypeKey, BitsKey], ...] = (
    ("input_datatype", "input_bits"),
    ("weight_datatype", "weight_bits"),
    ("output_datatype", "output_bits"),
)
WEIGHTED = ("MVAU", "VVAU")  # Thresholding's "weightDataType" is its thresholds' type
FRAMEWORKS = ("finn", "qonnx")  # a layer's class from elsewhere is a plugin's


def bits(datatype: str | None) -> int | None:
    """The bit width of a QONNX data type name."""
    if not datatype:
        return None
    from qonnx.core.datatype import DataType

    try:
        return int(DataType[datatype].bitwidth())
    except (KeyError, ValueError):
        return None


def split_backend(op_type: str) -> tuple[str, str]:
    """``op_type`` as kernel and backend: ``("MVAU", "rtl")``, ``("Transpose", "")``."""
    for suffix, backend in BACKEND_SUFFIXES.items():
        if op_type.endswith(suffix):
            return op_type[: -len(suffix)], backend
    return op_type, ""


def layer_attributes(model: ModelWrapper, output_dir: str = "") -> dict[str, LayerFacts]:
    """Per node: kernel, backend, folding, data types and bit widths, memory style, code."""
    return {node.name: _facts(model, node, output_dir) for node in model.graph.node}


def _facts(model: ModelWrapper, node: onnx.NodeProto, output_dir: str) -> LayerFacts:
    op_type, backend = split_backend(node.op_type)
    entry: LayerFacts = {"op_type": op_type, "backend": backend}
    entry["input_datatype"] = _datatype(model, node.input[0]) if node.input else None
    entry["output_datatype"] = _datatype(model, node.output[0]) if node.output else None
    op, types = _op(node)
    _copy_attributes(entry, op, types)
    _add_bits(entry)
    if op is not None and type(op).__module__.split(".")[0] not in FRAMEWORKS:
        entry["not_estimated"] = list(inherited_estimates(op))  # a plugin's layer
    entry["reads"] = _reads(model, node, op)
    code = _code(op, types, output_dir)
    if code:
        entry["code"] = code
    return entry


def _add_bits(entry: LayerFacts) -> None:
    """The bit width of each data type ``entry`` names."""
    for datatype, width in DATATYPE_BITS:
        if entry.get(datatype):
            entry[width] = bits(entry[datatype])


def _op(node: onnx.NodeProto) -> tuple[CustomOp | None, dict[str, object]]:
    """The node's op class and its attributes' types; none for a node without a class."""
    from qonnx.custom_op.registry import getCustomOp

    try:
        op = getCustomOp(node)
        types: dict[str, object] = op.get_nodeattr_types()
    except Exception:  # attributes are decoration; a node may lack an op class
        return None, {}
    return op, types


def _copy_attributes(entry: LayerFacts, op: CustomOp | None, types: dict[str, object]) -> None:
    """Copy the folding and memory attributes ``op`` has (``types``) into ``entry``."""
    if op is None:
        return
    for attr in LAYER_ATTRIBUTES:
        if attr in types:
            value = op.get_nodeattr(attr)
            entry[attr] = int(value) if attr in ("PE", "SIMD") else value
    if "weightDataType" in types and entry["op_type"] in WEIGHTED:
        entry["weight_datatype"] = op.get_nodeattr("weightDataType")


def _code(op: CustomOp | None, types: dict[str, object], output_dir: str) -> str:
    """Where the layer's generated code is, relative to ``output_dir``; "" without it."""
    if op is None or "code_gen_dir_ipgen" not in types or not output_dir:
        return ""
    code = op.get_nodeattr("code_gen_dir_ipgen")
    return os.path.relpath(code, output_dir) if code and os.path.isdir(code) else ""


def _reads(model: ModelWrapper, node: onnx.NodeProto, op: CustomOp | None) -> list[Read]:
    """The streams a layer reads: from which layer (None: the accelerator's input), how wide."""
    reads: list[Read] = []
    for index, tensor in enumerate(node.input):
        if not tensor or model.get_initializer(tensor) is not None:
            continue
        producer = model.find_producer(tensor)
        reads.append({"from": producer.name if producer else None, "bits": _width(op, index)})
    return reads


def _width(op: CustomOp | None, index: int) -> int | None:
    """The width of ``op``'s input stream ``index``; None where it has none."""
    try:
        return int(op.get_instream_width(index)) if op is not None else None
    except Exception:  # a layer without stream widths (or not for this input)
        return None


def _datatype(model: ModelWrapper, tensor: str) -> str | None:
    try:
        name: str = model.get_tensor_datatype(tensor).name
        return name
    except Exception:  # a tensor without shape or annotation
        return None
