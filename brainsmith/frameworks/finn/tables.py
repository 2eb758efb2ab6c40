"""What brainsmith needs to know about FINN that FINN's plugin specs do not say.

- ``INFER_TRANSFORMS``: the transforms that convert ONNX nodes into each FINN kernel, in
  the order FINN's own ``step_convert_to_hw`` applies them (order matters: MVAU absorbs a
  following MultiThreshold before Thresholding would claim it).
- ``TOOL_STEPS``: FINN build steps that need Vivado / Vitis HLS / XSI; ``missing_tool``
  says, for a given model, why one cannot run here (IP generation of RTL-only designs
  needs no tool).
- ``STEP_OUTPUTS``: the output products a FINN step must find in ``generate_outputs``
  to do its work, so a blueprint that lists the step gets them.
- ``is_custom_op_class`` to tell a layer class without importing QONNX (the domains whose
  ``custom_op`` tables hold FINN's hardware layers are in ``facts``).
"""

from __future__ import annotations

from brainsmith.frameworks.finn.env import vivado_available
from brainsmith.plugin.names import short_name

TYPE_CHECKING = False
if TYPE_CHECKING:
    from qonnx.core.modelwrapper import ModelWrapper


def is_custom_op_class(obj: object) -> bool:
    """Whether ``obj`` is a QONNX ``CustomOp`` class (told by name: QONNX is not imported)."""
    return isinstance(obj, type) and any(
        c.__name__ == "CustomOp" and c.__module__ == "qonnx.custom_op.base" for c in obj.__mro__
    )


INFER_TRANSFORMS: dict[str, tuple[str, ...]] = {
    "MVAU": ("InferBinaryMatrixVectorActivation", "InferQuantizedMatrixVectorActivation"),
    "VVAU": ("InferVectorVectorActivation",),
    "LabelSelect": ("InferLabelSelectLayer",),
    "Requant": ("InferRequantLayer",),
    "Thresholding": ("InferThresholdingLayer",),
    "FMPadding": ("InferFMPadding",),
    "Pool": ("InferPool", "InferPoolFromReduce"),
    "ConvolutionInputGenerator": ("InferConvInpGen",),
    "Pad1D": ("InferPad1DLayer",),
    "StreamingConcat": ("InferConcatLayer",),
    "StreamingSplit": ("InferSplitLayer",),
    **{
        f"Elementwise{op}": ("InferElementwiseBinaryOperation",)
        for op in (
            "Add",
            "Sub",
            "Mul",
            "Div",
            "And",
            "Or",
            "Xor",
            "Equal",
            "Less",
            "LessOrEqual",
            "Greater",
            "GreaterOrEqual",
            "Max",
            "AbsDiff",
            "BitShift",
            "BitwiseAnd",
            "BitwiseOr",
            "BitwiseXor",
        )
    },
    "HWWhere": ("InferWhereLayer",),
    "UpsampleNearestNeighbour": ("InferUpsample",),
    "GlobalAccPool": ("InferGlobalAccPoolLayer",),
    "SelectToken": ("InferSelectTokenLayer",),
    "Crop": ("InferCrop",),
    "Lookup": ("InferLookupLayer",),
    "HWSoftmax": ("InferHWSoftmax",),
    "PWPolyF": ("InferPWPolyFLayer",),
    "LayerNorm": ("InferLayerNorm",),
    "DuplicateStreams": ("InferDuplicateStreamsLayer",),
    "Reshape": ("InferReshape",),
    "Squeeze": ("InferSqueeze",),
    "Unsqueeze": ("InferUnsqueeze",),
    "Shuffle": ("InferShuffle",),
}

# Kernels FINN's own step_convert_to_hw never infers: kernels: auto leaves them out too
# (a blueprint can still list them).
AUTO_SKIPPED = frozenset({"Squeeze", "Unsqueeze"})

# FINN's order, with InferReLUAsElementwiseMax right after the elementwise operations.
INFER_ORDER: tuple[str, ...] = (
    "InferBinaryMatrixVectorActivation",
    "InferQuantizedMatrixVectorActivation",
    "InferVectorVectorActivation",
    "InferLabelSelectLayer",
    "InferRequantLayer",
    "InferThresholdingLayer",
    "InferFMPadding",
    "InferPool",
    "InferPoolFromReduce",
    "InferConvInpGen",
    "InferPad1DLayer",
    "InferConcatLayer",
    "InferSplitLayer",
    "InferElementwiseBinaryOperation",
    "InferWhereLayer",
    "InferReLUAsElementwiseMax",
    "InferUpsample",
    "InferGlobalAccPoolLayer",
    "InferSelectTokenLayer",
    "InferCrop",
    "InferLookupLayer",
    "InferHWSoftmax",
    "InferPWPolyFLayer",
    "InferLayerNorm",
    "InferDuplicateStreamsLayer",
    "InferReshape",
    "InferSqueeze",
    "InferUnsqueeze",
    "InferShuffle",
)

TOOL_STEPS: dict[str, str] = {
    "step_hw_ipgen": "Vitis HLS",
    "step_set_fifo_depths": "Vivado (XSI simulation)",
    "step_generate_hardware": "Vitis HLS / Vivado",
    "step_create_stitched_ip": "Vivado",
    "step_measure_rtlsim_performance": "Vivado (XSI simulation)",
    "step_out_of_context_synthesis": "Vivado",
    "step_prepare_synthesis": "Vivado",
    "step_synthesize_bitfile": "Vivado",
    "step_make_driver": "Vivado (a synthesised design)",
    "step_deployment_package": "Vivado (a bitfile)",
    "step_vivado_power_estimation": "Vivado",
}


# The output products (DataflowOutputType values) FINN's steps check before doing anything.
STEP_OUTPUTS: dict[str, tuple[str, ...]] = {
    "step_generate_estimate_reports": ("estimate_reports",),
    "step_create_stitched_ip": ("stitched_ip",),
    "step_measure_rtlsim_performance": ("stitched_ip", "rtlsim_performance"),
    "step_out_of_context_synthesis": ("stitched_ip", "out_of_context_synth"),
    "step_synthesize_bitfile": ("stitched_ip", "bitfile"),
    "step_make_driver": ("pynq_driver",),
    "step_deployment_package": ("bitfile", "pynq_driver", "deployment_package"),
}


def infer_order(transform: str) -> int:
    """Position of a (short or ``finn:``-qualified) transform name in FINN's order."""
    name = short_name(transform)
    return INFER_ORDER.index(name) if name in INFER_ORDER else len(INFER_ORDER)


def already_done(step: str, model: ModelWrapper) -> str:
    """Why FINN's build step ``step`` need not run on ``model``; "" when it should."""
    if step == "step_set_fifo_depths" and any(
        n.op_type.startswith("StreamingFIFO") for n in model.graph.node
    ):
        return "the FIFOs are sized already (by simulation in the fifo_depths step)"
    return ""


def missing_tool(step: str, model: ModelWrapper) -> str:
    """Why FINN's build step ``step`` cannot run on ``model`` here; "" when it can."""
    if step not in TOOL_STEPS or vivado_available():
        return ""
    if step == "step_hw_ipgen":
        hls = [n.name for n in model.graph.node if n.domain.endswith(".hls")]
        if not hls:
            return ""
        layers = ", ".join(hls[:3]) + (", ..." if len(hls) > 3 else "")
        return f"needs Vitis HLS for {len(hls)} HLS layer(s) ({layers}); set XILINX_VIVADO"
    return f"needs {TOOL_STEPS[step]}; not found (set XILINX_VIVADO to run it)"
