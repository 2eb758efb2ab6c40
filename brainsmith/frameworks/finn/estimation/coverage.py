"""What FINN has no estimate for: per kind of layer (``NOT_ESTIMATED``, read from FINN's
code), in a plugin's layer (the estimation methods it leaves to FINN's base class), and per
resource the layers a total leaves out."""

from __future__ import annotations

from brainsmith.frameworks.finn.facts import ESTIMATION_METHODS, RESOURCES

TYPE_CHECKING = False
if TYPE_CHECKING:
    from qonnx.custom_op.base import CustomOp

    from brainsmith.report_schema.estimates import Layer, LayerFacts

# What FINN does not estimate, per op type as it stands in the graph (kernel_backend), read
# from its classes in finn/custom_op/fpgadataflow/ (finn-plus 1.6): a class that does not
# override HWCustomOp.lut_estimation / bram_estimation / uram_estimation / dsp_estimation
# (hwcustomop.py: "must be implemented by every node") gets the base class's placeholder 0;
# MVAU_rtl.lut_estimation (rtl/matrixvectoractivation_rtl.py) and VVAU_rtl.lut_estimation
# (rtl/vectorvectoractivation_rtl.py) return a fixed 0 whatever the folding, though these
# units have LUT logic. A 0 that a model computes is an estimate (MVAU_hls DSP with resType
# lut; Pad1D BRAM and PWPolyF URAM, which those classes state as none).
_NO_MODEL = (
    "CheckSum_hls", "Crop_hls", "Crop_rtl", "DuplicateStreams_hls", "FINNLoop",
    "FMPadding_Pixel_hls", "FMPadding_rtl", "GlobalAccPool_hls", "HWSoftmax_hls",
    "HWSoftmax_rtl", "IODMA_hls", "InnerShuffle_rtl", "LabelSelect_hls", "LayerNorm_hls",
    "LayerNorm_rtl", "MergeMultiHeads_hls", "NodeContainer", "OuterShuffle_hls", "Pool_hls",
    "RemoveDataPath_rtl", "ReplicateStream_hls", "Requant_hls", "Requant_rtl", "Reshape_rtl",
    "ScaledDotProductAttention_hls", "SelectToken_rtl", "SplitMultiHeads_hls", "Squeeze_hls",
    "StreamingConcat_hls", "StreamingSplit_hls", "TLastMarker_hls", "Unsqueeze_hls",
    "UpsampleNearestNeighbour_hls",
)  # fmt: skip
_NO_DSP_MODEL = (
    "ConvolutionInputGenerator_rtl", "HWWhere_rtl", "Lookup_hls", "StreamingFIFO_hls",
    "StreamingFIFO_rtl", "Thresholding_hls", "Thresholding_rtl",
    *(f"Elementwise{op}_hls" for op in (
        "AbsDiff", "Add", "And", "BitShift", "BitwiseAnd", "BitwiseOr", "BitwiseXor", "Div",
        "Equal", "Greater", "GreaterOrEqual", "Less", "LessOrEqual", "Max", "Mul", "Or", "Sub",
        "Xor",
    )),
    "ElementwiseAdd_rtl", "ElementwiseMul_rtl", "ElementwiseSub_rtl",
)  # fmt: skip
NOT_ESTIMATED: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(_NO_MODEL, RESOURCES),
    **dict.fromkeys(_NO_DSP_MODEL, ("DSP",)),
    "StreamingDataWidthConverter_hls": ("BRAM_18K", "URAM", "DSP"),
    "StreamingDataWidthConverter_rtl": ("BRAM_18K", "URAM", "DSP"),
    "Pad1D_rtl": ("URAM", "DSP"),
    "MVAU_rtl": ("LUT",),
    "VVAU_rtl": ("LUT",),
}


def kind(layer: Layer | LayerFacts) -> str:
    """A layer's op type as it stands in the graph: its kernel and backend, ``MVAU_rtl``."""
    return "_".join(part for part in (layer.get("op_type", ""), layer.get("backend")) if part)


def not_estimated(layer: Layer | LayerFacts) -> tuple[str, ...]:
    """The resources FINN has no estimate for in ``layer`` (see ``NOT_ESTIMATED``)."""
    listed = (*NOT_ESTIMATED.get(kind(layer), ()), *layer.get("not_estimated", ()))
    return tuple(dict.fromkeys(listed))


def inherited_estimates(op: CustomOp) -> tuple[str, ...]:
    """The resources whose estimation ``op`` leaves to FINN's ``HWCustomOp`` (which answers 0
    for every layer): a plugin's layer that does not estimate them."""
    from finn.custom_op.fpgadataflow.hwcustomop import HWCustomOp

    return tuple(
        key
        for key, method in ESTIMATION_METHODS.items()
        if getattr(type(op), method, None) is getattr(HWCustomOp, method)
    )


def incomplete(layers: list[Layer]) -> dict[str, list[str]]:
    """Per resource whose total leaves layers out: the names of those layers."""
    found = {
        key: [layer["name"] for layer in layers if key in layer.get("not_estimated", ())]
        for key in RESOURCES
    }
    return {key: names for key, names in found.items() if names}
