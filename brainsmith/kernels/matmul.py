"""The ``matmul`` kernel: quantized MatMul as FINN's matrix-vector-activation unit (MVAU)."""

from __future__ import annotations

from finn.custom_op.fpgadataflow.matrixvectoractivation import MVAU

from brainsmith.plugin import kernel


@kernel(
    name="matmul",
    op_type="MVAU",
    domain="finn.custom_op.fpgadataflow",
    infer_transform="finn:InferQuantizedMatrixVectorActivation",
)
class MatMul(MVAU):  # type: ignore[misc]
    """Quantized MatMul (integer inputs and weights) as FINN's MVAU.

    FINN's ``InferQuantizedMatrixVectorActivation`` turns a MatMul whose input and weight
    tensors carry integer datatypes into an ``MVAU`` node (absorbing a following
    MultiThreshold); ``SpecializeLayers`` then picks MatMulHLS or MatMulRTL.
    """
