"""FINN's thresholds made to round half to even, as the QONNX quantizers they replace do.

QONNX's ``Quant`` (rounding mode ``ROUND``) rounds x/scale + zero point half to even; the
``MultiThreshold`` FINN's conversion puts in its place counts the thresholds with
``x >= t``, which rounds half up. A threshold lies on the boundary k + 0.5 between the
integers k and k + 1; where k is even, half to even rounds the boundary itself down to k,
so that threshold is raised to the next float32 above it: ``x >= t`` then fails exactly at
the boundary and holds everywhere above it. Exact wherever x/scale is computed exactly (a
power-of-two scale, as Brevitas's FINN-style quantizers have); elsewhere a value within float
noise of a boundary remains a tie the verification counts.
"""

from __future__ import annotations

import numpy as np

TYPE_CHECKING = False
if TYPE_CHECKING:
    from onnx import NodeProto
    from qonnx.core.modelwrapper import ModelWrapper

HALF_EVEN_MODES = ("ROUND", "HALF_EVEN")
# a threshold whose x/scale + zero point lies this close (relative) to k + 0.5 is on it
ON_BOUNDARY = 1e-6


def half_even_quantizers(model: ModelWrapper) -> dict[str, tuple[np.ndarray, float]]:
    """Output name -> (scale, zero point) of each activation ``Quant`` rounding half to even
    with a positive scale and a scalar zero point."""
    found: dict[str, tuple[np.ndarray, float]] = {}
    for node in model.graph.node:
        quantizer = _half_even(model, node) if node.op_type == "Quant" else None
        if quantizer is not None:
            found[node.output[0]] = quantizer
    return found


def _half_even(model: ModelWrapper, quant: NodeProto) -> tuple[np.ndarray, float] | None:
    """An activation ``Quant``'s (scale, zero point) when it rounds half to even with a
    positive scale and a scalar zero point; else None."""
    if model.get_initializer(quant.input[0]) is not None:
        return None  # a weight quantizer
    scale, zero = model.get_initializer(quant.input[1]), model.get_initializer(quant.input[2])
    if not _rounds_half_even(quant) or scale is None or zero is None:
        return None
    if np.size(zero) != 1 or np.any(scale <= 0):
        return None
    return np.asarray(scale, dtype=np.float64), float(np.asarray(zero))


def _rounds_half_even(quant: NodeProto) -> bool:
    """Whether ``quant``'s rounding mode (QONNX's default: ``ROUND``) is half to even."""
    mode = next((a.s.decode() for a in quant.attribute if a.name == "rounding_mode"), "ROUND")
    return mode.upper() in HALF_EVEN_MODES


def round_thresholds_half_even(
    model: ModelWrapper, quantizers: dict[str, tuple[np.ndarray, float]]
) -> int:
    """Raise each threshold of a ``MultiThreshold`` that replaced one of ``quantizers`` and
    lies on a boundary above an even integer to the next float32; the thresholds raised."""
    raised = 0
    for node in model.graph.node:
        if node.op_type != "MultiThreshold":
            continue
        quantizer = _replaced(model, node.output[0], quantizers)
        thresholds = model.get_initializer(node.input[1])
        if quantizer is None or thresholds is None:
            continue
        even = _above_even(thresholds, *quantizer)
        if not even.any():
            continue
        values = thresholds.astype(np.float32)
        values[even] = np.nextafter(values[even], np.float32(np.inf))
        model.set_initializer(node.input[1], values)
        raised += int(even.sum())
    return raised


def _above_even(thresholds: np.ndarray, scale: np.ndarray, zero: float) -> np.ndarray:
    """Which of ``thresholds`` (channels x thresholds, with a scale per channel or one for
    all) lie on a boundary above an even integer; none for thresholds of any other shape."""
    per_channel = scale.reshape(-1)
    if thresholds.ndim != 2 or per_channel.size not in (1, thresholds.shape[0]):
        return np.zeros(thresholds.shape, dtype=bool)
    steps = thresholds.astype(np.float64) / per_channel.reshape(-1, 1) + zero
    lower = np.floor(steps)
    on = np.abs(steps - (lower + 0.5)) <= ON_BOUNDARY * np.maximum(1.0, np.abs(steps))
    even: np.ndarray = on & (np.mod(lower, 2) == 0)
    return even


def _replaced(
    model: ModelWrapper, tensor: str, quantizers: dict[str, tuple[np.ndarray, float]]
) -> tuple[np.ndarray, float] | None:
    """The quantizer whose output ``tensor`` becomes through FINN's constant Add/Mul chain."""
    while tensor not in quantizers:
        step = _constant_step(model, tensor)
        if step is None:
            return None
        tensor = step.output[0]
    return quantizers[tensor]


def _constant_step(model: ModelWrapper, tensor: str) -> NodeProto | None:
    """The one node reading ``tensor`` when it adds a constant to it or multiplies it by one
    (``tensor`` first); else None."""
    consumers = model.find_consumers(tensor) or []
    if len(consumers) != 1 or consumers[0].op_type not in ("Add", "Mul"):
        return None
    step: NodeProto = consumers[0]
    if step.input[0] != tensor or model.get_initializer(step.input[1]) is None:
        return None
    return step
