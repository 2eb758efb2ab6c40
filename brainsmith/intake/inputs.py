"""A design's inputs as ``BuildResult.run`` takes them: one input, or several on axis 0, in
the shape of the graph's input (up to axes of size 1), within an integer input's data type;
and ``ResultError``, what a build result that cannot be loaded or run raises."""

from __future__ import annotations

from brainsmith.errors import HintedError
from brainsmith.frameworks.finn.execution import graph_inputs

TYPE_CHECKING = False
if TYPE_CHECKING:
    import numpy as np
    from qonnx.core.modelwrapper import ModelWrapper

    from brainsmith.verification.verifier import Sample


class ResultError(HintedError):
    """A build result that cannot be loaded or run: ``reason``, and ``hint`` what to do."""

    def __str__(self) -> str:
        return f"{self.reason}\n  try: {self.hint}" if self.hint else self.reason


def samples(model: ModelWrapper, x: np.ndarray) -> tuple[list[Sample], bool]:
    """``x`` as samples of ``model``'s input, and whether it was one without a batch axis."""
    import numpy as np

    name = graph_inputs(model)[0].name
    shape = tuple(int(d) if d else 1 for d in model.get_tensor_shape(name))
    per_input = sample_shape(model, name)
    if x.dtype.kind not in "biuf" or x.size == 0:
        raise ResultError(
            f"run(x): x holds {x.size} {x.dtype} value(s); the design's input {name} takes "
            "real numbers",
            f"give a numeric array of shape {per_input} or (N, {_dims(per_input)})",
        )
    batch, single = _batch(x, per_input, name, shape)
    values = batch.astype(np.float32)
    _check_range(model, name, values)
    return [(v.reshape(shape),) for v in values], single


def _batch(
    x: np.ndarray, per_input: tuple[int, ...], name: str, shape: tuple[int, ...]
) -> tuple[np.ndarray, bool]:
    """``x`` as a batch of inputs ``name`` (of ``per_input`` each; the model's ``shape``), and
    whether it was one input without a batch axis."""
    if x.ndim and _same(x.shape[1:], per_input):
        return x.reshape(-1, *per_input), False
    if _same(x.shape, per_input):
        return x.reshape(1, *per_input), True
    raise ResultError(
        f"run(x): x has shape {x.shape}, but the design's input {name} has shape {shape}",
        f"give an array of shape (N, {_dims(per_input)}) for N inputs, or {per_input} for one",
    )


def sample_shape(model: ModelWrapper, name: str) -> tuple[int, ...]:
    """One input's (or output's) shape without the model's batch axis of 1."""
    shape = tuple(int(d) if d else 1 for d in model.get_tensor_shape(name))
    return shape[1:] if len(shape) > 1 and shape[0] == 1 else shape


def _same(given: tuple[int, ...], wanted: tuple[int, ...]) -> bool:
    """Equal up to axes of size 1 (a step may add one: a 1D network made 2D)."""
    return [d for d in given if d != 1] == [d for d in wanted if d != 1]


def _dims(shape: tuple[int, ...]) -> str:
    return ", ".join(map(str, shape))


def _check_range(model: ModelWrapper, name: str, values: np.ndarray) -> None:
    """Values for an integer-typed input must be whole numbers in its range."""
    import numpy as np

    dtype = model.get_tensor_datatype(name)
    if not dtype.is_integer():
        return
    if dtype.name == "BIPOLAR":
        inside = bool(np.all(np.abs(values) == 1))
    else:
        whole = bool(np.all(values == np.round(values)))
        inside = whole and dtype.min() <= values.min() and values.max() <= dtype.max()
    if not inside:
        raise ResultError(
            f"run(x): x holds values from {values.min():g} to {values.max():g}, outside the "
            f"design input {name}'s data type {dtype.name}",
            f"give whole numbers from {dtype.min():g} to {dtype.max():g}",
        )


__all__ = ["ResultError", "sample_shape", "samples"]
