"""HLS and RTL backends of the ``softmax`` kernel (FINN's HWSoftmax_hls and HWSoftmax_rtl)."""

from __future__ import annotations

from finn.custom_op.fpgadataflow.hls.hwsoftmax_hls import HWSoftmax_hls
from finn.custom_op.fpgadataflow.rtl.hwsoftmax_rtl import HWSoftmax_rtl

from brainsmith.kernels.softmax import Softmax
from brainsmith.plugin import backend


@backend(kernel="softmax", backend_type="hls")
class SoftmaxHLS(Softmax, HWSoftmax_hls):  # type: ignore[misc]
    """HLS implementation of softmax (FINN HWSoftmax_hls)."""


@backend(kernel="softmax", backend_type="rtl")
class SoftmaxRTL(Softmax, HWSoftmax_rtl):  # type: ignore[misc]
    """RTL implementation of softmax (FINN HWSoftmax_rtl; float32 datapath)."""
