"""The ``softmax`` kernel: Softmax over the last axis as FINN's HWSoftmax."""

from __future__ import annotations

from finn.custom_op.fpgadataflow.hwsoftmax import HWSoftmax

from brainsmith.plugin import kernel


@kernel(
    name="softmax",
    op_type="HWSoftmax",
    domain="finn.custom_op.fpgadataflow",
    infer_transform="finn:InferHWSoftmax",
)
class Softmax(HWSoftmax):  # type: ignore[misc]
    """Softmax over the last axis as FINN's HWSoftmax (float32 output).

    FINN's ``InferHWSoftmax`` converts every ONNX Softmax whose input shape is known; the
    input datatype (e.g. INT8 from a preceding threshold, or FLOAT32) must represent 0.
    """
