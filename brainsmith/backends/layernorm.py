"""HLS and RTL backends of the ``LayerNorm`` kernel (FINN's LayerNorm_hls and LayerNorm_rtl)."""

from __future__ import annotations

from finn.custom_op.fpgadataflow.hls.layernorm_hls import LayerNorm_hls
from finn.custom_op.fpgadataflow.rtl.layernorm_rtl import LayerNorm_rtl

from brainsmith.kernels.layernorm import LayerNorm
from brainsmith.plugin import backend


@backend(kernel="LayerNorm", backend_type="hls")
class LayerNormHLS(LayerNorm, LayerNorm_hls):  # type: ignore[misc]
    """HLS implementation of LayerNorm (FINN LayerNorm_hls)."""


@backend(kernel="LayerNorm", backend_type="rtl")
class LayerNormRTL(LayerNorm, LayerNorm_rtl):  # type: ignore[misc]
    """RTL implementation of LayerNorm (FINN LayerNorm_rtl; float32 datapath)."""
