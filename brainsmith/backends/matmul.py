"""HLS and RTL backends of the ``matmul`` kernel (FINN's MVAU_hls and MVAU_rtl)."""

from __future__ import annotations

from finn.custom_op.fpgadataflow.hls.matrixvectoractivation_hls import MVAU_hls
from finn.custom_op.fpgadataflow.rtl.matrixvectoractivation_rtl import MVAU_rtl

from brainsmith.kernels.matmul import MatMul
from brainsmith.plugin import backend


@backend(kernel="matmul", backend_type="hls")
class MatMulHLS(MatMul, MVAU_hls):  # type: ignore[misc]
    """HLS implementation of matmul (FINN MVAU_hls; thresholds can be fused)."""


@backend(kernel="matmul", backend_type="rtl")
class MatMulRTL(MatMul, MVAU_rtl):  # type: ignore[misc]
    """RTL implementation of matmul (FINN MVAU_rtl; DSP-packed, no fused thresholds)."""
