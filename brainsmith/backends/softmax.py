"""HLS and RTL backends of the ``softmax`` kernel (FINN's HWSoftmax_hls and HWSoftmax_rtl)."""

from __future__ import annotations

from finn.custom_op.fpgadataflow.hls.hwsoftmax_hls import HWSoftmax_hls
from finn.custom_op.fpgadataflow.rtl.hwsoftmax_rtl import HWSoftmax_rtl

from brainsmith.kernels.softmax import Softmax
from brainsmith.plugin import backend


@backend(
    name="SoftmaxHLS",
    kernel="softmax",
    backend_type="hls",
    description="HLS implementation of softmax (FINN HWSoftmax_hls)",
)
class SoftmaxHLS(Softmax, HWSoftmax_hls):  # type: ignore[misc]
    """HLS implementation of the softmax kernel (FINN's HWSoftmax_hls)."""


@backend(
    name="SoftmaxRTL",
    kernel="softmax",
    backend_type="rtl",
    description="RTL implementation of softmax (FINN HWSoftmax_rtl; float32 datapath)",
)
class SoftmaxRTL(Softmax, HWSoftmax_rtl):  # type: ignore[misc]
    """RTL implementation of the softmax kernel (FINN's HWSoftmax_rtl), a float32 datapath."""
