"""AbsorbMonotonicIntoThresholds: a floating-point function read by thresholds becomes part of
them."""

from __future__ import annotations

import numpy as np
from qonnx.core.modelwrapper import ModelWrapper
from qonnx.transformation.base import Transformation

from brainsmith.plugin import transform

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    Inverse = Callable[[np.ndarray], np.ndarray]


def _logit(t: np.ndarray) -> np.ndarray:
    return np.asarray(np.log(t) - np.log1p(-t))


def _softplus_inverse(t: np.ndarray) -> np.ndarray:
    return np.asarray(np.log(np.expm1(t)))


# Strictly increasing functions of one value: (the open range of their values, the inverse)
INVERSES: dict[str, tuple[float, float, Inverse]] = {
    "Tanh": (-1.0, 1.0, np.arctanh),
    "Sigmoid": (0.0, 1.0, _logit),
    "Exp": (0.0, np.inf, np.log),
    "Softplus": (0.0, np.inf, _softplus_inverse),
}


@transform(stage="streamline")
class AbsorbMonotonicIntoThresholds(Transformation):  # type: ignore[misc]
    """``f -> MultiThreshold`` with ``f`` strictly increasing (``INVERSES``: Tanh, Sigmoid,
    Exp, Softplus) -> ``MultiThreshold`` with thresholds ``f^-1(T)`` on ``f``'s input.

    A quantizer after a floating-point function counts the thresholds ``f(x)`` reaches;
    since ``f`` is strictly increasing, ``f(x) >= t`` exactly when ``x >= f^-1(t)`` for a
    ``t`` within ``f``'s range (a threshold below it is always reached: -inf; one above,
    never: +inf). The function thereby becomes part of the threshold layer over integers
    (a lookup of its quantized values), and streamlining then absorbs the scales and biases
    before it into the thresholds as for a ReLU. A function read by anything else, or by
    several nodes, is left alone.
    """

    def apply(self, model: ModelWrapper) -> tuple[ModelWrapper, bool]:
        outputs = {t.name for t in model.graph.output}
        for node in [n for n in model.graph.node if n.op_type in INVERSES]:
            readers = model.find_consumers(node.output[0]) or []
            if node.output[0] in outputs or len(readers) != 1:
                continue
            thresholds = readers[0]
            values = model.get_initializer(thresholds.input[1])
            if thresholds.op_type != "MultiThreshold" or values is None:
                continue
            low, high, inverse = INVERSES[node.op_type]
            model.set_initializer(thresholds.input[1], _before(values, low, high, inverse))
            thresholds.input[0] = node.input[0]
            model.graph.node.remove(node)
            return model, True
        return model, False


def _before(values: np.ndarray, low: float, high: float, inverse: Inverse) -> np.ndarray:
    """The thresholds on ``f``'s input that ``values`` on its output are: ``inverse`` within
    ``f``'s open range (``low``, ``high``), -inf at or below it, +inf at or above it."""
    wide = values.astype(np.float64)
    inside = (wide > low) & (wide < high)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        mapped = inverse(np.where(inside, wide, (low + high) / 2 if np.isfinite(high) else 1.0))
    found = np.where(inside, mapped, np.where(wide <= low, -np.inf, np.inf))
    return found.astype(np.float32)


__all__ = ["INVERSES", "AbsorbMonotonicIntoThresholds"]
