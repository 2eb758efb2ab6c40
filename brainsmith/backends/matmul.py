"""HLS and RTL backends of the ``matmul`` kernel (FINN's MVAU_hls and MVAU_rtl)."""

from __future__ import annotations

from finn.custom_op.fpgadataflow.hls.matrixvectoractivation_hls import MVAU_hls
from finn.custom_op.fpgadataflow.rtl.matrixvectoractivation_rtl import MVAU_rtl

from brainsmith.kernels.matmul import MatMul
from brainsmith.plugin import backend


@backend(
    name="MatMulHLS",
    kernel="matmul",
    backend_type="hls",
    description="HLS implementation of matmul (FINN MVAU_hls; thresholds can be fused)",
)
class MatMulHLS(MatMul, MVAU_hls):  # type: ignore[misc]
    """HLS implementation of the matmul kernel (FINN's MVAU_hls), which can fuse thresholds."""


@backend(
    name="MatMulRTL",
    kernel="matmul",
    backend_type="rtl",
    description="RTL implementation of matmul (FINN MVAU_rtl; DSP-packed, no fused thresholds)",
)
class MatMulRTL(MatMul, MVAU_rtl):  # type: ignore[misc]
    """RTL implementation of the matmul kernel (FINN's MVAU_rtl), packing products into DSPs."""
