"""Verification: run a model at any point of the build on the same inputs as the cleaned
QONNX model and compare the outputs.

Inputs are generated deterministically (seeded) from each input's QONNX datatype — or,
for a float input feeding a ``Quant`` node, from that quantizer's range plus one step
either side, so clipping is exercised. After the dataflow partition the model is run as
its parent graph with the ``StreamingDataflowPartition`` pointing at it; ``*_hls`` layers
run as their generic kernel in Python and ``*_rtl`` layers in their Python fallback
(``exec_mode="cppsim"``), as no C++ or RTL simulator is needed that way. Samples run one
at a time because exported models have batch size 1. Tensors are compared (and inputs fed)
in each model's own shape when only the rank differs (a 1D network made 2D).
"""

from __future__ import annotations

import copy
import os
from dataclasses import dataclass

import numpy as np

from brainsmith.plugin.blueprint.options import VERIFY_ATOL, VERIFY_RTOL

HW_DOMAIN = "finn.custom_op.fpgadataflow"

Sample = tuple  # one array per graph input


@dataclass
class Check:
    """The outcome of one comparison."""

    label: str
    samples: int
    max_error: float
    ok: bool

    def as_dict(self) -> dict:
        return {"samples": self.samples, "max_error": self.max_error, "ok": self.ok}


def generate_inputs(model, count: int, seed: int = 0) -> list[Sample]:
    """``count`` samples for ``model``'s inputs, drawn from their QONNX datatype ranges."""
    rng = np.random.default_rng(seed)
    specs = [(i.name, _shape(model, i.name)) for i in graph_inputs(model)]
    samples = []
    for _ in range(count):
        samples.append(tuple(_draw(model, name, shape, rng) for name, shape in specs))
    return samples


def graph_inputs(model) -> list:
    initializers = {t.name for t in model.graph.initializer}
    return [i for i in model.graph.input if i.name not in initializers]


def _shape(model, name: str) -> tuple[int, ...]:
    return tuple(int(d) if d else 1 for d in model.get_tensor_shape(name))


def _draw(model, name: str, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    dtype = model.get_tensor_datatype(name)
    if dtype.name == "BIPOLAR":
        return rng.choice([-1.0, 1.0], size=shape).astype(np.float32)
    if dtype.is_integer():
        return rng.integers(int(dtype.min()), int(dtype.max()) + 1, size=shape).astype(np.float32)
    if dtype.is_fixed_point():
        scale = dtype.scale_factor()
        steps = rng.integers(round(dtype.min() / scale), round(dtype.max() / scale) + 1, size=shape)
        return (steps * scale).astype(np.float32)
    low, high = _quant_range(model, name)
    return rng.uniform(low, high, size=shape).astype(np.float32)


def _quant_range(model, name: str) -> tuple[float, float]:
    """The range a ``Quant`` consumer of a float input represents, one step wider each side."""
    for node in model.find_consumers(name) or ():
        if node.op_type != "Quant" or node.input[0] != name:
            continue
        scale, zero, bits = (model.get_initializer(t) for t in node.input[1:4])
        if scale is None or zero is None or bits is None or np.size(scale) != 1:
            break
        attrs = {a.name: a.i for a in node.attribute}
        bits = int(np.asarray(bits).item())
        if attrs.get("signed", 1):
            low, high = -(2 ** (bits - 1)) + attrs.get("narrow", 0), 2 ** (bits - 1) - 1
        else:
            low, high = 0, 2**bits - 1 - attrs.get("narrow", 0)
        s, z = float(np.asarray(scale).item()), float(np.asarray(zero).item())
        return (low - 1 - z) * s, (high + 1 - z) * s
    return -1.0, 1.0


def executable(model, parent=None, workdir: str = ""):
    """A copy of ``model`` that runs in Python; wrapped in ``parent`` after the partition."""
    from qonnx.core.modelwrapper import ModelWrapper
    from qonnx.custom_op.registry import getCustomOp

    runnable = ModelWrapper(copy.deepcopy(model.model))
    for node in runnable.graph.node:
        if node.domain == f"{HW_DOMAIN}.hls" and node.op_type.endswith("_hls"):
            node.domain, node.op_type = HW_DOMAIN, node.op_type[: -len("_hls")]
        elif node.domain == f"{HW_DOMAIN}.rtl":
            getCustomOp(node).set_nodeattr("exec_mode", "cppsim")
    if parent is None or runnable.get_nodes_by_op_type("StreamingDataflowPartition"):
        return runnable
    path = os.path.join(workdir, "verify_partition.onnx")
    runnable.save(path)
    wrapper = ModelWrapper(copy.deepcopy(parent.model))
    for node in wrapper.get_nodes_by_op_type("StreamingDataflowPartition"):
        getCustomOp(node).set_nodeattr("model", path)
    return wrapper


def run(model, samples: list[Sample]) -> list[list[np.ndarray]]:
    """Outputs (in graph order) of ``model`` for each sample."""
    from finn.core.onnx_exec import execute_onnx

    names = [i.name for i in graph_inputs(model)]
    shapes = [_shape(model, name) for name in names]
    outputs = [o.name for o in model.graph.output]
    results = []
    for sample in samples:
        # A step may change a tensor's rank (a 1D convolution made 2D): same data, new shape.
        arrays = [
            a.reshape(shape) if a.size == int(np.prod(shape)) else a
            for a, shape in zip(sample, shapes, strict=True)
        ]
        context = execute_onnx(model, dict(zip(names, arrays, strict=True)))
        results.append([np.asarray(context[o]) for o in outputs])
    return results


def compare(
    label: str,
    actual: list[list[np.ndarray]],
    expected: list[list[np.ndarray]],
    atol: float = VERIFY_ATOL,
    rtol: float = VERIFY_RTOL,
) -> Check:
    """Max absolute difference, and whether every output is within ``atol + rtol * |want|``."""
    worst, ok = 0.0, True
    for got_outputs, want_outputs in zip(actual, expected, strict=True):
        for got, want in zip(got_outputs, want_outputs, strict=True):
            if got.size != want.size:
                return Check(label, len(actual), float("inf"), False)
            got, want = got.reshape(want.shape).astype(np.float64), want.astype(np.float64)
            diff = np.nan_to_num(np.abs(got - want), nan=np.inf)  # a NaN is no match
            worst = max(worst, float(np.max(diff)) if got.size else 0.0)
            ok = ok and bool(np.allclose(got, want, atol=atol, rtol=rtol))
    return Check(label, len(actual), worst, ok)


class Verifier:
    """Compares any stage of the build with the cleaned QONNX reference."""

    def __init__(
        self,
        reference,
        samples: int,
        seed: int = 0,
        user=None,
        atol: float = VERIFY_ATOL,
        rtol: float = VERIFY_RTOL,
    ) -> None:
        from brainsmith.frameworks.finn.execution import fix_python_execution

        fix_python_execution()
        self.samples = generate_inputs(reference, samples, seed)
        self.expected = run(reference, self.samples)
        self.user = user  # (samples, expected outputs) from brainsmith.builder.intake, or None
        self.atol, self.rtol = atol, rtol

    def check(self, model, parent=None, workdir: str = "") -> list[Check]:
        runnable = executable(model, parent, workdir)
        tolerance = {"atol": self.atol, "rtol": self.rtol}
        checks = [compare("generated", run(runnable, self.samples), self.expected, **tolerance)]
        if self.user is not None:
            user_samples, user_expected = self.user
            checks.append(compare("user", run(runnable, user_samples), user_expected, **tolerance))
        return checks
