"""The ``LayerNorm`` kernel: LayerNormalization over the channel axis as FINN's LayerNorm."""

from __future__ import annotations

from finn.custom_op.fpgadataflow.layernorm import LayerNorm as FINNLayerNorm

from brainsmith.plugin import kernel


@kernel(
    op_type="LayerNorm", domain="finn.custom_op.fpgadataflow", infer_transform="finn:InferLayerNorm"
)
class LayerNorm(FINNLayerNorm):  # type: ignore[misc]
    """LayerNormalization without affine (run ExpandNorms first) as FINN's LayerNorm.

    FINN's ``InferLayerNorm`` only converts an opset-17 LayerNormalization whose scale is
    all ones and which has an explicit zero bias; ExpandNorms produces exactly that and
    moves a real scale and bias into Mul and Add nodes. Output is float32.
    """
