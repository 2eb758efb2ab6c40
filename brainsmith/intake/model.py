"""The build's front door: the model and the user's vectors, checked before FINN loads
(some 5 s) and before anything is written, so bad input fails at once and leaves nothing.

- the model parses as ONNX and has a graph, of at most ``MAX_NODES`` nodes, none with an
  attribute over ``MAX_ATTRIBUTE_BYTES``; every node's domain is standard ONNX, QONNX,
  FINN or a registered kernel's (QONNX imports a node's domain as a Python module, so an
  unknown one is refused before anything could import it); no loop (a node reading its own
  output, or a longer one: FINN's passes would spin on it) and no tensor both produced by a
  node and given as an initializer or input;
- a model without quantizers whose layers FINN implements only quantized is refused with
  advice to quantize it;
- a dynamic batch axis is fixed to 1 (FINN builds batch-1 hardware), with a note; any
  other dynamic axis is refused;
- ``--input``/``--expected``: NumPy .npy arrays of numbers, without NaN or infinity, one
  sample per input of the model's shape (a leading sample axis is fine), as many
  expected outputs as inputs, within the input's QONNX data type.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field

from brainsmith.errors import BrainsmithError
from brainsmith.files import DamagedFile, read_npy, read_npz
from brainsmith.frameworks.finn.facts import LAYER_DOMAINS, is_hardware
from brainsmith.planning.errors import BuildError, option
from brainsmith.planning.wiring import cycle, describe, given_and_produced
from brainsmith.plugin import get_registry

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator, Set

    import numpy as np
    import onnx
    from onnx.external_data_helper import ExternalDataInfo
    from qonnx.core.datatype import BaseDataType
    from qonnx.core.modelwrapper import ModelWrapper

    from brainsmith.verification.verifier import Vectors

ONNX_DOMAINS = ("", "ai.onnx", "ai.onnx.ml")
KNOWN_DOMAINS = (
    *ONNX_DOMAINS,
    "onnx.brevitas",  # QONNX's alias of its own general ops, used by Brevitas exports
    "qonnx.custom_op.general",
    "qonnx.custom_op.channels_last",
    "finn.custom_op.general",
    *LAYER_DOMAINS,
)
QUANTIZERS = ("Quant", "BipolarQuant", "Trunc", "IntQuant", "MultiThreshold")
QUANTIZED_ONLY = ("MatMul", "Gemm", "Conv", "ConvTranspose")  # FINN has no float kernel for these
# A model is serialised between steps, and protobuf cannot serialise one over 2 GiB: a larger
# model file, or external data adding up to more, cannot build and is refused before it is read.
MAX_MODEL_BYTES = 2**31 - 1
# FINN's graph transformations take time quadratic in the node count (a 200-node chain takes
# half a minute to streamline, 1,000 nodes over five minutes): beyond this a build would not
# finish, so a larger model is refused before any work (``BRAINSMITH_MAX_NODES`` raises it).
MAX_NODES = 4096
# FINN's and QONNX's passes copy every node and print it as text (QONNX's shape inference
# matches nodes by their text), hundreds of times a build: a node attribute of megabytes
# makes each pass take seconds (2,000,000 ints: check took six minutes). Real
# attributes hold a few numbers or a name; one larger than this is refused before any work
# (``BRAINSMITH_MAX_ATTRIBUTE_BYTES`` raises it). A Constant's value is not counted: the
# first step turns it into an initializer.
MAX_ATTRIBUTE_BYTES = 64 * 1024


class InputError(BrainsmithError, ValueError):
    """A model or vector file the build cannot use; ``what`` names it ("model", ``--input``...)."""

    def __init__(self, what: str, reason: str, hint: str) -> None:
        super().__init__(reason)
        self.what = what
        self.reason = reason
        self.hint = hint


@dataclass
class CheckedModel:
    """A model that passed the front door: the ONNX proto (batch axis fixed) and notes."""

    proto: onnx.ModelProto
    path: str  # "" for a model given as a ModelWrapper
    notes: list[str] = field(default_factory=list)


def check_inputs(
    model: str | os.PathLike[str] | ModelWrapper, input_npy: str | None, expected_npy: str | None
) -> tuple[CheckedModel, Vectors | None]:
    """The front door: model and vectors checked before FINN loads and anything is written."""
    if (input_npy is None) != (expected_npy is None):
        raise BuildError.setup(
            f"{option('input')} and {option('expected')} must be given together",
            "pass both files, or neither",
        )
    try:
        checked = check_model(model, kernel_domains())
        vectors = (
            load_vectors(checked, input_npy, expected_npy) if input_npy and expected_npy else None
        )
    except InputError as exc:
        raise BuildError.setup(exc.reason, exc.hint) from exc
    return checked, vectors


def check_model(
    model: str | os.PathLike[str] | ModelWrapper, domains: Set[str] = frozenset()
) -> CheckedModel:
    """Load and check ``model`` (a path or ModelWrapper); ``domains`` are extra allowed node
    domains (those of registered kernels)."""
    path, proto = _loaded(model)
    name = os.path.basename(path) or "the model"
    check_node_count(proto, name)
    check_attribute_sizes(proto, name)
    _check_graph(proto, name)
    _check_domains(proto, name, set(KNOWN_DOMAINS) | set(domains))
    _check_wiring(proto, name)
    _check_quantized(proto, name)
    checked = CheckedModel(proto, path)
    _fix_batch_axis(checked, name)
    _complete_windows(checked)
    return checked


def _loaded(model: str | os.PathLike[str] | ModelWrapper) -> tuple[str, onnx.ModelProto]:
    """(path, a proto of its own) of ``model``: a file loaded, a ModelWrapper's copied."""
    if isinstance(model, str | os.PathLike):
        path = os.fspath(model)
        return path, load_model_bounded(path)
    import copy

    return "", copy.deepcopy(model.model)


def _check_graph(proto: onnx.ModelProto, name: str) -> None:
    """Refuse a model without nodes, inputs or outputs."""
    graph = proto.graph
    inputs = graph_inputs(proto)
    if not graph.node or not inputs or not graph.output:
        raise InputError(
            "model",
            f"{name} is not an ONNX model with a graph: it has {len(graph.node)} nodes, "
            f"{len(inputs)} inputs and {len(graph.output)} outputs",
            "give the .onnx file exported from your network (e.g. with "
            "brevitas.export.export_qonnx)",
        )


def _complete_windows(checked: CheckedModel) -> None:
    """Complete the window attributes of a 1D layer made 2D, with a note naming the layers."""
    from brainsmith.frameworks.finn.recipe.networks import complete_window_attributes

    repaired = complete_window_attributes(checked.proto.graph)
    if repaired:
        checked.notes.append(
            f"{', '.join(repaired)}: dilations/strides/pads had fewer entries than the kernel "
            "has axes (a 1D layer made 2D); completed with the neutral values"
        )


def kernel_domains() -> set[str]:
    """The node domains registered kernels declare (their QONNX custom-op modules)."""
    return {
        str(spec.metadata["domain"])
        for spec in get_registry().specs("kernel")
        if spec.metadata.get("domain")
    }


def load_model_bounded(path: str) -> onnx.ModelProto:
    """Load ``path`` with intake's bounds (size, external data only inside its folder); InputError else."""
    import onnx
    from onnx.external_data_helper import load_external_data_for_model

    if not os.path.isfile(path):
        raise InputError("model", f"model file {path} does not exist", "check the path")
    size = os.path.getsize(path)
    if size == 0:
        raise InputError("model", f"model file {path} is empty (0 bytes)", "export it again")
    if size > MAX_MODEL_BYTES:
        raise InputError(
            "model",
            f"model file {path} is {size:,} bytes, over the {MAX_MODEL_BYTES:,} bytes an ONNX "
            "model can have",
            "export the network's weights quantized (brevitas.export.export_qonnx)",
        )
    try:
        proto = onnx.load(path, load_external_data=False)
        _check_external_data(proto, path)
        load_external_data_for_model(proto, os.path.dirname(path))
        return proto
    except InputError:
        raise
    except Exception as exc:  # protobuf's DecodeError, external-data errors, ...
        raise InputError(
            "model",
            f"{path} is not an ONNX model: {type(exc).__name__}: {exc}",
            "give a QONNX/ONNX model file (.onnx), e.g. one exported with "
            "brevitas.export.export_qonnx",
        ) from exc


def _check_external_data(proto: onnx.ModelProto, path: str) -> None:
    """Refuse external data adding up to more than a model can hold, before reading any."""
    from onnx import TensorProto
    from onnx.external_data_helper import ExternalDataInfo, _get_all_tensors

    total, folder = 0, os.path.dirname(path)
    for tensor in _get_all_tensors(proto):
        if tensor.data_location != TensorProto.EXTERNAL:
            continue
        info = ExternalDataInfo(tensor)
        total += _external_bytes(info, folder)
        if total > MAX_MODEL_BYTES:
            raise InputError(
                "model",
                f"{path}: its external data ({info.location!r} for tensor {tensor.name!r} "
                f"and before) add up to {total:,} bytes, over the {MAX_MODEL_BYTES:,} bytes "
                "an ONNX model can hold; nothing was read",
                "check the external data files next to the model (a wrong 'length' or a file "
                "that is not the weights), or export the model again",
            )


def _external_bytes(info: ExternalDataInfo, folder: str) -> int:
    """The bytes onnx would read for ``info``: its length, else the rest of its file (in
    ``folder``) from the offset."""
    length: int | None = info.length  # None when the model gives no length
    if length is not None:
        return int(length)
    file = os.path.join(folder, info.location)
    stored = os.path.getsize(file) if os.path.isfile(file) else 0
    return max(0, stored - (info.offset or 0))


def check_node_count(proto: onnx.ModelProto, name: str) -> None:
    """Refuse a graph (subgraphs counted) with more nodes than the configured limit."""
    limit = _max_nodes()
    count = sum(1 for _ in all_nodes(proto.graph))
    if count > limit:
        raise InputError(
            "model",
            f"{name} has {count:,} nodes, over the limit of {limit:,}: FINN's graph "
            "transformations take time quadratic in the node count, so the build would not "
            "finish",
            "build the network in parts, or raise the limit with BRAINSMITH_MAX_NODES if the "
            "model is what you mean to build",
        )


def _max_nodes() -> int:
    return _limit("BRAINSMITH_MAX_NODES", MAX_NODES, "a node count")


def _limit(variable: str, default: int, what: str) -> int:
    """The positive whole number environment ``variable`` sets, else ``default``."""
    text = os.environ.get(variable, "")
    if not text:
        return default
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise InputError(
            variable,
            f"{variable}={text!r} is not a positive whole number",
            f"set it to {what} (the default is {default:,}) or unset it",
        )
    return value


def check_attribute_sizes(proto: onnx.ModelProto, name: str) -> None:
    """Refuse a node attribute over the limit (subgraphs' nodes are checked one by one)."""
    from onnx import AttributeProto

    limit = _limit("BRAINSMITH_MAX_ATTRIBUTE_BYTES", MAX_ATTRIBUTE_BYTES, "a size in bytes")
    subgraphs = (AttributeProto.GRAPH, AttributeProto.GRAPHS)
    for node in all_nodes(proto.graph):
        if node.op_type == "Constant" and node.domain in ONNX_DOMAINS:
            continue
        for attribute in node.attribute:
            if attribute.type in subgraphs:
                continue
            if attribute.ByteSize() > limit:
                raise _attribute_too_large(name, node, attribute, limit)


def _attribute_too_large(
    name: str, node: onnx.NodeProto, attribute: onnx.AttributeProto, limit: int
) -> InputError:
    return InputError(
        "model",
        f"{name}: node {node.name or '(unnamed)'} ({node.op_type}) has attribute "
        f"'{attribute.name}' of {attribute.ByteSize():,} bytes ({_holds(attribute)}), over the "
        f"limit of {limit:,} bytes for one attribute: FINN's and QONNX's passes copy and "
        "print every node, hundreds of times a build, so it would take minutes to "
        "hours",
        "keep large data in an initializer (a tensor input of the node) or remove "
        "the attribute; raise the limit with BRAINSMITH_MAX_ATTRIBUTE_BYTES if the "
        "model is what you mean to build",
    )


def _holds(attribute: onnx.AttributeProto) -> str:
    """What ``attribute`` holds, in a few words ("2,000,000 ints")."""
    from onnx import AttributeProto

    counts = {
        AttributeProto.INTS: (attribute.ints, "ints"),
        AttributeProto.FLOATS: (attribute.floats, "floats"),
        AttributeProto.STRINGS: (attribute.strings, "strings"),
        AttributeProto.TENSORS: (attribute.tensors, "tensors"),
        AttributeProto.SPARSE_TENSORS: (attribute.sparse_tensors, "sparse tensors"),
        AttributeProto.TYPE_PROTOS: (attribute.type_protos, "types"),
    }
    if attribute.type in counts:
        values, kind = counts[attribute.type]
        return f"{len(values):,} {kind}"
    if attribute.type == AttributeProto.STRING:
        return f"a string of {len(attribute.s):,} bytes"
    return f"a {AttributeProto.AttributeType.Name(attribute.type).lower().replace('_', ' ')}"


def graph_inputs(proto: onnx.ModelProto) -> list[onnx.ValueInfoProto]:
    """The graph inputs that are not initializers."""
    initializers = {t.name for t in proto.graph.initializer}
    return [i for i in proto.graph.input if i.name not in initializers]


def all_nodes(graph: onnx.GraphProto) -> Iterator[onnx.NodeProto]:
    """Every node of ``graph`` and of its subgraphs (If/Loop/Scan bodies)."""
    for node in graph.node:
        yield node
        for attribute in node.attribute:
            for sub in (*([attribute.g] if attribute.HasField("g") else []), *attribute.graphs):
                yield from all_nodes(sub)


def _check_domains(proto: onnx.ModelProto, name: str, allowed: Set[str]) -> None:
    unknown: dict[str, onnx.NodeProto] = {}
    for node in all_nodes(proto.graph):
        if node.domain not in allowed:
            unknown.setdefault(node.domain, node)
    if unknown:
        domain, node = next(iter(unknown.items()))
        raise InputError(
            "model",
            f"{name}: node {node.name or '(unnamed)'} ({node.op_type}) has domain '{domain}', "
            "which is neither standard ONNX, QONNX, FINN nor a registered kernel's; QONNX "
            "would import a Python module of that name to run it, so the model is refused",
            "export the model with standard, QONNX or FINN operators, or register a kernel "
            "plugin for that domain (brainsmith plugins list --type kernel)",
        )


def _integer_annotated(proto: onnx.ModelProto) -> bool:
    """Whether a tensor of ``proto`` is annotated with a FINN data type other than a float."""
    return any(
        p.key == "finn_datatype" and not p.value.startswith("FLOAT")
        for a in proto.graph.quantization_annotation
        for p in a.quant_parameter_tensor_names
    )


def _check_quantized(proto: onnx.ModelProto, name: str) -> None:
    ops = {n.op_type for n in all_nodes(proto.graph)}
    needs = sorted(ops & set(QUANTIZED_ONLY))
    if ops & set(QUANTIZERS) or _integer_annotated(proto) or not needs:
        return
    if any(is_hardware(n) for n in proto.graph.node):
        return
    qdq = ops & {"QuantizeLinear", "DequantizeLinear"}
    raise InputError(
        "model",
        f"{name} is not quantized: it has no {', '.join(QUANTIZERS)} node and no integer "
        f"data types, but FINN builds {', '.join(needs)} only with integer (quantized) "
        "weights and activations",
        "quantize the network: train it with Brevitas quantized layers and export it with "
        "brevitas.export.export_qonnx, or add QONNX Quant nodes"
        + (" (QuantizeLinear/DequantizeLinear: qonnx's QCDQToQuant converts them)" if qdq else ""),
    )


def _check_wiring(proto: onnx.ModelProto, name: str) -> None:
    """Refuse a loop (FINN's passes would never finish on it) and a tensor both produced by a
    node and given as an initializer or input."""

    loop = cycle(proto.graph)
    if loop is not None:
        raise InputError(
            "model",
            f"{name}: {describe(loop)}; a graph with a loop (a cycle) cannot be built: "
            "FINN's passes would never finish",
            "export the model again without the loop (a recurrent network must be unrolled), "
            "or rewire the node to read another tensor",
        )
    doubled = given_and_produced(proto.graph)
    if doubled:
        more = f" and {len(doubled) - 1} more" if len(doubled) > 1 else ""
        raise InputError(
            "model",
            f"{name}: {doubled[0]}{more}; a tensor has one source",
            "export the model again, or rename the node's output",
        )


def _fix_batch_axis(checked: CheckedModel, name: str) -> None:
    """Set a dynamic first axis of the inputs and outputs to 1; refuse other dynamic axes."""
    graph = checked.proto.graph
    outputs = {o.name for o in graph.output}
    fixed = False
    for tensor in (*graph_inputs(checked.proto), *graph.output):
        fixed |= _fix_tensor_batch_axis(checked, tensor, name, outputs)
    if fixed:  # intermediate shapes are inferred again from the fixed inputs
        keep = [v for v in graph.value_info if not _dynamic(v)]
        del graph.value_info[:]
        graph.value_info.extend(keep)


def _fix_tensor_batch_axis(
    checked: CheckedModel, tensor: onnx.ValueInfoProto, name: str, outputs: set[str]
) -> bool:
    """Fix ``tensor``'s dynamic first axis to 1 (noted for an input), refuse another dynamic
    axis; whether an axis was fixed."""
    fixed = False
    for axis, dim in _dynamic_axes(tensor):
        label = dim.dim_param or "?"
        if axis != 0:
            raise _dynamic_axis_error(name, tensor.name, axis, label)
        dim.Clear()
        dim.dim_value = 1
        fixed = True
        if tensor in checked.proto.graph.input or tensor.name not in outputs:
            checked.notes.append(
                f"input {tensor.name} had a dynamic batch axis ('{label}'); it was fixed to "
                "1, as FINN builds hardware that takes one sample at a time"
            )
    return fixed


def _dynamic_axes(
    tensor: onnx.ValueInfoProto,
) -> Iterator[tuple[int, onnx.TensorShapeProto.Dimension]]:
    """(axis, dimension) of each axis of ``tensor`` without a fixed size (none without a
    shape)."""
    if not tensor.type.HasField("tensor_type") or not tensor.type.tensor_type.HasField("shape"):
        return
    for axis, dim in enumerate(tensor.type.tensor_type.shape.dim):
        if not (dim.HasField("dim_value") and dim.dim_value > 0):
            yield axis, dim


def _dynamic_axis_error(name: str, tensor: str, axis: int, label: str) -> InputError:
    return InputError(
        "model",
        f"{name}: tensor {tensor} has a dynamic axis {axis} ('{label}'); FINN "
        "builds hardware for fixed shapes",
        "export the model with fixed shapes (torch.onnx.export without "
        "dynamic_axes, or set the shape with qonnx's set_tensor_shape)",
    )


def _dynamic(value_info: onnx.ValueInfoProto) -> bool:
    shape = value_info.type.tensor_type.shape
    return any(not (d.HasField("dim_value") and d.dim_value > 0) for d in shape.dim)


def _shape(tensor: onnx.ValueInfoProto) -> tuple[int, ...] | None:
    if not tensor.type.tensor_type.HasField("shape"):
        return None
    dims = tensor.type.tensor_type.shape.dim
    if not all(d.HasField("dim_value") and d.dim_value > 0 for d in dims):
        return None
    return tuple(d.dim_value for d in dims)


def load_vectors(checked: CheckedModel, input_path: str, expected_path: str) -> Vectors:
    """(samples, expected outputs) from ``--input``/``--expected``, checked against the model:
    one array for a model with one output, else an ``.npz`` keyed by output name."""
    proto = checked.proto
    inputs, outputs = graph_inputs(proto), list(proto.graph.output)
    if len(inputs) != 1:
        raise InputError(
            "input",
            f"{option('input')} takes one array, but the model has {len(inputs)} inputs "
            f"({', '.join(i.name for i in inputs)})",
            "verify this model without your own vectors",
        )
    x = _array("input", input_path)
    samples = _split("input", input_path, x, _shape(inputs[0]), inputs[0].name)
    _check_range(proto, inputs[0].name, samples, input_path)
    arrays = _expected_arrays(expected_path, [o.name for o in outputs])
    per_output = [
        _expected(expected_path, arrays[o.name], _shape(o), o.name, len(samples), input_path)
        for o in outputs
    ]
    return [(s,) for s in samples], [list(e) for e in zip(*per_output, strict=True)]


def _expected_arrays(path: str, names: list[str]) -> dict[str, np.ndarray]:
    """Each output's expected array: ``path``'s one array (one output), or its ``.npz``
    archive's array of that output's name."""
    how = (
        "save one array per output in the model's order, numpy.savez(path, "
        f"{', '.join(f'y{i}' for i in range(len(names)))}), or keyed by output name, "
        f"numpy.savez(path, **{{{', '.join(f'{n!r}: ...' for n in names)}}})"
    )
    if not _is_archive(path):
        return _one_expected_array(path, names, how)
    return _archived_expected_arrays(path, names, how)


def _one_expected_array(path: str, names: list[str], how: str) -> dict[str, np.ndarray]:
    """``path``'s one array as the only output's; refused for a model with more outputs."""
    if len(names) != 1:
        raise InputError(
            "expected",
            f"{option('expected')} {path} is one array, but the model has {len(names)} outputs "
            f"({', '.join(names)})",
            how,
        )
    return {names[0]: _array("expected", path)}


def _archived_expected_arrays(path: str, names: list[str], how: str) -> dict[str, np.ndarray]:
    """The ``.npz`` archive's arrays by output name: saved in the outputs' order unnamed, or
    named after them, each output once and nothing else."""
    arrays = _archive("expected", path)
    positional = [f"arr_{i}" for i in range(len(names))]  # numpy.savez's unnamed arrays
    if sorted(arrays) == sorted(positional):
        return {name: arrays[key] for name, key in zip(names, positional, strict=True)}
    _check_archive_names(path, arrays, names, how)
    return arrays


def _check_archive_names(
    path: str, arrays: dict[str, np.ndarray], names: list[str], how: str
) -> None:
    """Refuse an archive whose arrays are not named after the outputs, each once."""
    missing = [n for n in names if n not in arrays]
    unknown = sorted(set(arrays) - set(names))
    if missing or unknown:
        raise InputError(
            "expected",
            f"{option('expected')} {path} holds the arrays {', '.join(sorted(arrays)) or 'none'}, "
            f"but the model's outputs are {', '.join(names)}"
            + _listed("missing", missing)
            + _listed("not outputs", unknown),
            how,
        )


def _listed(what: str, names: list[str]) -> str:
    """``names`` in brackets after ``what`` ("" without names)."""
    return f" ({what}: {', '.join(names)})" if names else ""


def _expected(
    path: str, y: np.ndarray, shape: tuple[int, ...] | None, name: str, count: int, inputs: str
) -> list[np.ndarray]:
    """Output ``name``'s expected values from ``y``, one per sample of ``inputs``."""
    if shape is None:  # shape unknown before shape inference: split evenly
        if y.size % count:
            raise InputError(
                "expected",
                f"{option('expected')} {path} has {y.size} values for {name}, which do not "
                f"split into {count} outputs (one per sample in {option('input')} {inputs})",
                "give one expected output per input sample",
            )
        expected = list(y.reshape(count, -1))
    elif y.size == count * math.prod(shape) and y.shape[1:] != shape[1:]:
        # FINN's own test data: labels (N,) for a TopK output (1, 1), and the like.
        expected = [e.astype("float32") for e in y.reshape(count, *shape)]
    else:
        expected = _split("expected", path, y, shape, name)
    if len(expected) != count:
        raise InputError(
            "expected",
            f"{option('expected')} {path} holds {len(expected)} output(s) of shape "
            f"{shape} for {name}, but {option('input')} {inputs} holds {count} sample(s)",
            "give one expected output per input sample, in the same order",
        )
    return expected


def _is_archive(path: str) -> bool:
    if not os.path.isfile(path):
        return False  # _array names the problem (a FIFO is never opened)
    try:
        with open(path, "rb") as handle:
            return handle.read(2) == b"PK"
    except OSError:
        return False  # _array names the problem


def _archive(what: str, path: str) -> dict[str, np.ndarray]:
    """The arrays of the ``.npz`` archive ``path``, each checked as ``_array`` checks one;
    bounded from the archive's headers before anything is unpacked (``files.read_npz``)."""
    try:
        arrays = read_npz(path)
    except (DamagedFile, OSError) as exc:
        raise InputError(
            what,
            f"{option(what)} {exc}",
            "save it with numpy.savez(path, output_name=array, ...)",
        ) from None
    for name, data in arrays.items():
        _check_values(what, f"{path} ({name})", data)
    return arrays


def _array(what: str, path: str) -> np.ndarray:
    flag = option(what)
    save = "save a numeric array with numpy.save(path, array)"
    if not os.path.isfile(path):
        there = "is not a regular file" if os.path.exists(path) else "does not exist"
        raise InputError(what, f"{flag} file {path} {there}", "check the path")
    with open(path, "rb") as handle:
        magic = handle.read(6)
    if magic.startswith(b"PK"):
        raise InputError(what, f"{flag} {path} is an .npz archive, not one array", save)
    if magic != b"\x93NUMPY":
        raise InputError(what, f"{flag} {path} is not a NumPy .npy file", save)
    try:  # bounded from its header, never unpickled
        data = read_npy(path)
    except (DamagedFile, OSError) as exc:
        raise InputError(what, f"{flag} {exc}", save) from None
    _check_values(what, path, data)
    return data


def _check_values(what: str, path: str, data: np.ndarray) -> None:
    """Real, finite numbers, at least one."""
    import numpy as np

    flag = option(what)
    if data.dtype.kind not in "biuf":
        raise InputError(
            what,
            f"{flag} {path} holds {data.dtype} values, not real numbers",
            "save integer or floating-point values",
        )
    if data.size == 0:
        raise InputError(what, f"{flag} {path} is empty (shape {data.shape})", "save samples")
    if data.dtype.kind == "f" and not np.isfinite(data).all():
        bad = int((~np.isfinite(data)).sum())
        raise InputError(
            what,
            f"{flag} {path} holds {bad} NaN or infinite value(s)",
            "give finite numbers (a NaN compares unequal to everything)",
        )


def _split(
    what: str, path: str, data: np.ndarray, shape: tuple[int, ...] | None, tensor: str
) -> list[np.ndarray]:
    """``data`` as samples of ``shape``: the shape itself, or a leading sample axis."""
    import numpy as np

    if shape is None:
        raise InputError(
            what,
            f"the model's tensor {tensor} has no fixed shape to check {option(what)} against",
            "export the model with fixed shapes",
        )
    per_sample = _sample_shapes(shape)
    if data.shape in per_sample:
        return [data.reshape(shape).astype(np.float32)]
    if data.ndim >= 1 and data.shape[1:] in per_sample:
        return [s.reshape(shape).astype(np.float32) for s in data]
    accepted = " or ".join(f"(N, {', '.join(map(str, s))})" for s in per_sample)
    raise InputError(
        what,
        f"{option(what)} {path} has shape {data.shape}, but the model's {tensor} has shape {shape}",
        f"give an array of shape {shape} or {accepted} for N samples",
    )


def _sample_shapes(shape: tuple[int, ...]) -> list[tuple[int, ...]]:
    """The shapes one sample may have: ``shape``, and without a first axis of 1."""
    return [shape] + ([shape[1:]] if shape and shape[0] == 1 else [])


def _annotated_type(proto: onnx.ModelProto, tensor: str) -> str | None:
    """The FINN data type ``tensor`` is annotated with, None without one."""
    return next(
        (
            p.value
            for a in proto.graph.quantization_annotation
            if a.tensor_name == tensor
            for p in a.quant_parameter_tensor_names
            if p.key == "finn_datatype"
        ),
        None,
    )


def _check_range(proto: onnx.ModelProto, tensor: str, samples: list[np.ndarray], path: str) -> None:
    """Values of an integer-typed input must be integers of that type's range."""
    import numpy as np

    name = _annotated_type(proto, tensor)
    dtype = None if name is None else _integer_type(name)
    if name is None or dtype is None:
        return
    values = np.stack(samples)
    if not _fits(values, dtype, name == "BIPOLAR"):
        raise InputError(
            "input",
            f"{option('input')} {path} holds values outside the model input's data type "
            f"{name} (from {values.min():g} to {values.max():g})",
            f"give whole numbers from {dtype.min():g} to {dtype.max():g}",
        )


def _integer_type(name: str) -> BaseDataType | None:
    """QONNX's integer data type ``name``, None for another or an unknown one."""
    from qonnx.core.datatype import DataType

    try:
        dtype = DataType[name]
    except KeyError:
        return None
    return dtype if dtype.is_integer() else None


def _fits(values: np.ndarray, dtype: BaseDataType, bipolar: bool) -> bool:
    """Whether ``values`` are whole numbers of ``dtype``'s range (each -1 or 1 if ``bipolar``)."""
    import numpy as np

    whole = bool(np.all(values == np.round(values)))
    if bipolar:
        return whole and bool(np.all(np.abs(values) == 1))
    return whole and bool(dtype.min() <= values.min() and values.max() <= dtype.max())
