"""FINN's build steps as brainsmith's steps run them, each importing only what it uses.

``finn.builder.build_dataflow_steps`` imports what every one of FINN's steps might need
(fitted QoR models with scikit-learn and pandas, the ONNX passes frontend, multi-FPGA
partitioning, simulation builders): about 1.5 s of a small build spent on modules the
build never calls. These are the same transforms, in the same order, as FINN's
``step_qonnx_to_finn``, ``step_tidy_up``, ``step_streamline``, ``_minimize_bit_width``,
``step_apply_folding_config``, ``step_transpose_decomposition``,
``step_generate_estimate_reports``, ``step_hw_codegen`` and ``step_hw_ipgen`` (``LEAN_STEPS``
runs it in FINN's place: importing FINN's builder for it cost an all-RTL build 1.6 s).
FINN's verification hooks inside them are left out: brainsmith verifies every step itself
(``verification/verifier.py``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from brainsmith.frameworks.finn.resolvers import fpga_part, hls_clock_ns
from brainsmith.plugins import transforms as tfm

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from finn.builder.build_dataflow_config import DataflowBuildConfig
    from onnx import NodeProto
    from qonnx.core.modelwrapper import ModelWrapper
    from qonnx.transformation.base import Transformation

QONNX_QUANTIZERS = ("BipolarQuant", "BinaryQuant", "Quant", "Trunc")
FOLDING_RECORD = (  # the attributes FINN writes back after applying a folding config
    "PE", "SIMD", "EmbFold", "SeqFold", "parallel_window", "ram_style", "ram_style_thresholds",
    "ram_style_mask", "depth", "impl_style", "resType", "mac_resource", "mem_mode",
    "runtime_writeable_weights", "depth_trigger_uram", "depth_trigger_bram",
)  # fmt: skip


def qonnx_to_finn(model: ModelWrapper, cfg: DataflowBuildConfig) -> ModelWrapper:
    """QONNX clean-up and conversion to FINN-ONNX, if the model has QONNX quantizers; the
    thresholds in place of half-to-even quantizers round half to even too."""
    if not any(model.get_nodes_by_op_type(op) for op in QONNX_QUANTIZERS):
        return model
    from finn.transformation.qonnx.convert_qonnx_to_finn import ConvertQONNXtoFINN
    from finn.transformation.qonnx.quant_act_to_multithreshold import (
        default_filter_function_generator,
    )
    from qonnx.util.cleanup import cleanup_model

    from brainsmith.frameworks.finn.passes.rounding import (
        half_even_quantizers,
        round_thresholds_half_even,
    )

    bits = cfg.max_multithreshold_bit_width
    model = cleanup_model(model)
    quantizers = half_even_quantizers(model)
    model = model.transform(
        ConvertQONNXtoFINN(filter_function=default_filter_function_generator(bits))
    )
    round_thresholds_half_even(model, quantizers)
    return model


def tidy_up(model: ModelWrapper) -> ModelWrapper:
    """Shapes, constant folding, unique node and readable tensor names, data types."""
    from finn.transformation.qonnx.give_unique_node_names_recursive import (
        GiveUniqueNodeNamesRecursive,
    )
    from qonnx.transformation.fold_constants import FoldConstants
    from qonnx.transformation.general import GiveReadableTensorNames, RemoveStaticGraphInputs
    from qonnx.transformation.infer_datatypes import InferDataTypes
    from qonnx.transformation.infer_shapes import InferShapes

    for transform in (InferShapes(), FoldConstants(), GiveUniqueNodeNamesRecursive(),
                      GiveReadableTensorNames(), InferDataTypes(), RemoveStaticGraphInputs()):  # fmt: skip
        model = model.transform(transform)
    return model


def streamline(model: ModelWrapper) -> ModelWrapper:
    """Move scales and shifts into thresholds, lowering convolutions to matrix products; a
    Tanh, Sigmoid, Exp or Softplus read by a quantizer becomes part of its thresholds;
    bipolar activations become 0/1 ones (XNOR-popcount products where both operands are
    bipolar, ``2x - 1`` moved into the next layer elsewhere); a scale before an average
    pool or a mean moves past it to the next thresholds; a quantizer after a linear layer
    on transposed tokens thresholds the layer's features."""
    import finn.transformation.streamline.absorb as absorb
    from finn.transformation.streamline import Streamline
    from finn.transformation.streamline.reorder import MakeMaxPoolNHWC
    from qonnx.transformation.bipolar_to_xnor import ConvertBipolarMatMulToXnorPopcount
    from qonnx.transformation.general import RemoveUnusedTensors
    from qonnx.transformation.infer_data_layouts import InferDataLayouts
    from qonnx.transformation.lower_convs_to_matmul import LowerConvsToMatMul

    model = model.transform(tfm.ThresholdsOnLinearFeatures())
    model = model.transform(tfm.AbsorbMonotonicIntoThresholds())
    model = model.transform(absorb.AbsorbScalarBiasIntoMultiThreshold())
    model = model.transform(Streamline())
    if model.get_nodes_by_op_type("Conv"):
        for transform in (LowerConvsToMatMul(), MakeMaxPoolNHWC(),
                          absorb.AbsorbTransposeIntoMultiThreshold(), MakeMaxPoolNHWC(),
                          absorb.AbsorbConsecutiveTransposes()):  # fmt: skip
            model = model.transform(transform)
    for transform in (ConvertBipolarMatMulToXnorPopcount(), tfm.BipolarThresholdsToBinary(),
                      tfm.AbsorbMonotonicIntoThresholds(), tfm.MoveScalesPastMeans(), Streamline(),
                      absorb.AbsorbScalarMulAddIntoTopK(), InferDataLayouts(),
                      RemoveUnusedTensors()):  # fmt: skip
        model = model.transform(transform)
    return model


def unfinished_streamlining(model: ModelWrapper) -> str:
    """What ``streamline`` would still change before hardware conversion ("" if nothing):
    convolutions not lowered to matrix products, bipolar matrix products not yet XNOR-popcount
    or other bipolar activations not yet 0/1 (their thresholds keep a scale and bias FINN's
    conversion refuses)."""
    from qonnx.core.datatype import DataType

    bipolar = DataType["BIPOLAR"]
    found = []
    if model.get_nodes_by_op_type("Conv"):
        found.append("convolutions not lowered to matrix products")
    if any(
        all(model.get_tensor_datatype(name) == bipolar for name in node.input)
        for node in model.get_nodes_by_op_type("MatMul")
    ):
        found.append("bipolar matrix products not converted to XNOR-popcount")
    elif any(
        model.get_tensor_datatype(node.output[0]) == bipolar
        for node in model.get_nodes_by_op_type("MultiThreshold")
    ):
        found.append("bipolar activations not made 0/1")
    return "; ".join(found)


def clamp_thresholds_to_inputs(model: ModelWrapper) -> ModelWrapper:
    """Raise each Thresholding layer's thresholds below its input's smallest value to that
    value (and lower those above its largest to one step past it): ``x >= t`` holds for every
    ``x`` of the input either way, so no output changes. A signed quantizer after an average
    pool has thresholds below 0 on the pool's unsigned sum, which FINN's layer refuses.

    Raises ``StepError`` naming the node where the thresholds stay below 0 on an input FINN's
    layer takes as unsigned (its input's data type cannot bound them)."""
    import numpy as np
    from qonnx.custom_op.registry import getCustomOp

    from brainsmith.errors import StepError

    for node in model.graph.node:
        if not node.op_type.startswith("Thresholding"):
            continue
        thresholds = model.get_initializer(node.input[1])
        if thresholds is None:
            continue
        dtype = model.get_tensor_datatype(node.input[0])
        if dtype.is_integer() or dtype.is_fixed_point():
            step = dtype.scale_factor() if dtype.is_fixed_point() else 1
            clamped = np.clip(thresholds, dtype.min(), dtype.max() + step).astype(np.float32)
            if not np.array_equal(clamped, thresholds):
                model.set_initializer(node.input[1], clamped)
                thresholds = clamped
        declared = getCustomOp(node).get_input_datatype(0)
        if not declared.signed() and (thresholds < 0).any():
            raise StepError(
                f"node {node.name} ({node.op_type}) has thresholds down to "
                f"{float(thresholds.min()):g} on an input FINN's layer takes as unsigned "
                f"({declared.name}) but whose data type ({dtype.name}) does not bound them: "
                "FINN's Thresholding layer needs thresholds of 0 or more on an unsigned input",
                "quantize the tensor this node reads with an integer quantizer (a Quant node "
                "with signed=0 bounds it at 0), or make the quantizer after it unsigned",
                model,
            )
    return model


def minimize_bit_width(model: ModelWrapper, cfg: DataflowBuildConfig) -> ModelWrapper:
    """Tighten weight and accumulator widths (if ``cfg.minimize_bit_width``), then round and
    clip the thresholds to them."""
    from finn.transformation.fpgadataflow.minimize_accumulator_width import (
        MinimizeAccumulatorWidth,
    )
    from finn.transformation.fpgadataflow.minimize_weight_bit_width import MinimizeWeightBitWidth
    from finn.transformation.streamline.round_thresholds import RoundAndClipThresholds
    from qonnx.transformation.infer_datatypes import InferDataTypes

    def apply(*transforms: Transformation) -> None:
        nonlocal model
        for transform in transforms:
            model = model.transform(transform, apply_to_subgraphs=True)

    model = clamp_thresholds_to_inputs(model)
    if cfg.minimize_bit_width:
        apply(MinimizeWeightBitWidth(), MinimizeAccumulatorWidth(), InferDataTypes())
    apply(RoundAndClipThresholds(), InferDataTypes())
    if cfg.minimize_bit_width:  # threshold data types after rounding and clipping
        apply(MinimizeWeightBitWidth(), InferDataTypes())
    return model


def apply_folding_config(model: ModelWrapper, cfg: DataflowBuildConfig) -> ModelWrapper:
    """Apply ``cfg.folding_config_file`` (if any) and write what was applied to the report
    folder (``applied_folding_config.json``)."""
    from finn.transformation.qonnx.give_unique_node_names_recursive import (
        GiveUniqueNodeNamesRecursive,
    )

    model = model.transform(GiveUniqueNodeNamesRecursive())
    if cfg.folding_config_file is None:
        return model
    from finn.transformation.general import ApplyConfig
    from finn.util.config import extract_model_config_to_json

    model = model.transform(ApplyConfig(cfg.folding_config_file), apply_to_subgraphs=True)
    record = cfg.get_report_directory() / "applied_folding_config.json"
    extract_model_config_to_json(model, record, list(FOLDING_RECORD))
    return model


def transpose_decomposition(
    model: ModelWrapper,
    cfg: DataflowBuildConfig,
    styles: Callable[[ModelWrapper], object] | None = None,
) -> ModelWrapper:
    """Decompose Shuffle layers (in the graph or a loop body) into Inner/OuterShuffle
    layers and specialise them (after ``styles`` has set the new layers' backend types)."""
    if not any(m.get_nodes_by_op_type("Shuffle") for m in (model, *_loop_bodies(model))):
        return model
    from finn.transformation.fpgadataflow.specialize_layers import SpecializeLayers
    from finn.transformation.fpgadataflow.transpose_decomposition import (
        InferInnerOuterShuffles,
        ShuffleDecomposition,
    )
    from finn.transformation.qonnx.give_unique_node_names_recursive import (
        GiveUniqueNodeNamesRecursive,
    )
    from qonnx.custom_op.registry import getCustomOp
    from qonnx.transformation.infer_datatypes import InferDataTypes
    from qonnx.transformation.infer_shapes import InferShapes

    for transform in (ShuffleDecomposition(), InferInnerOuterShuffles()):
        model = model.transform(transform, apply_to_subgraphs=True)
    if styles is not None:
        styles(model)
    for transform in (SpecializeLayers(fpga_part(cfg)), InferShapes(), InferDataTypes()):
        model = model.transform(transform, apply_to_subgraphs=True)
    model = model.transform(GiveUniqueNodeNamesRecursive())
    for node in model.get_nodes_by_op_type("FINNLoop"):
        loop = getCustomOp(node)
        body = loop.get_nodeattr("body").transform(GiveUniqueNodeNamesRecursive(prefix=node.name))
        loop.set_nodeattr("body", body.graph)
    return model


def estimate_reports(model: ModelWrapper, cfg: DataflowBuildConfig) -> ModelWrapper:
    """FINN's analytical estimates (operations and parameters, cycles, resources with their
    alternatives, network performance) as JSON in the report folder; the empirical ones
    too when fitted QoR models are configured (FINN_QOR_MODEL_DIR)."""
    from finn.util.fpgadataflow import is_mlo

    folder = cfg.get_report_directory()
    _layer_reports(model, cfg, folder, "")
    for node in model.get_nodes_by_op_type("FINNLoop"):
        _layer_reports(_body(node), cfg, folder, f"_{node.name}")
    if is_mlo(model):  # FINN cannot estimate a network's performance with loops
        return model
    from finn.analysis.fpgadataflow.dataflow_performance import dataflow_performance
    from finn.transformation.fpgadataflow.annotate_cycles import AnnotateCycles

    model = model.transform(AnnotateCycles(), apply_to_subgraphs=bool(cfg.multi_dnn_config_path))
    performance = dict(model.analysis(dataflow_performance))
    performance["estimated_throughput_fps"] = (
        1e9 / cfg.synth_clk_period_ns / performance["max_cycles"]
    )
    performance["estimated_latency_ns"] = (
        performance["critical_path_cycles"] * cfg.synth_clk_period_ns
    )
    _write(folder / "estimate_network_performance.json", performance)
    return model


def hw_codegen(model: ModelWrapper, cfg: DataflowBuildConfig) -> ModelWrapper:
    """Generate each layer's HLS code and fill its RTL templates (FIFO transaction logs
    first, with ``cfg.debug_fifo``)."""
    from finn.transformation.fpgadataflow.prepare_ip import PrepareIP
    from finn.transformation.qonnx.give_unique_node_names_recursive import (
        GiveUniqueNodeNamesRecursive,
    )

    model = model.transform(GiveUniqueNodeNamesRecursive())
    if cfg.debug_fifo:
        from qonnx.custom_op.registry import getCustomOp

        logs = (Path(cfg.output_dir) / "debug" / "fifo_logs").resolve()
        logs.mkdir(parents=True, exist_ok=True)
        for node in model.get_nodes_by_op_type("StreamingFIFO_rtl"):
            fifo = getCustomOp(node)
            if fifo.get_nodeattr("debug_log_path") == "":
                fifo.set_nodeattr("debug_log_path", str(logs / f"{node.name}.log"))
    prepare = PrepareIP(fpga_part(cfg), hls_clock_ns(cfg))
    return model.transform(prepare, apply_to_subgraphs=True, use_preorder_traversal=False)


def hw_ipgen(model: ModelWrapper, cfg: DataflowBuildConfig) -> ModelWrapper:
    """Vitis HLS synthesis of each HLS layer's code (nothing to do for RTL layers), the
    generated Verilog's relative paths made absolute, and FINN's report of the HLS layers'
    synthesised resources."""
    from finn.analysis.fpgadataflow.hls_synth_res_estimation import hls_synth_res_estimation
    from finn.analysis.fpgadataflow.op_and_param_counts import aggregate_dict_keys
    from finn.transformation.fpgadataflow.hlssynth_ip import HLSSynthIP
    from finn.transformation.fpgadataflow.replace_verilog_relpaths import ReplaceVerilogRelPaths

    model = model.transform(HLSSynthIP(fpga_part(cfg)))
    model = model.transform(ReplaceVerilogRelPaths())
    resources = model.analysis(hls_synth_res_estimation)
    resources["total"] = aggregate_dict_keys(resources)
    folder = Path(cfg.output_dir) / "report"
    folder.mkdir(parents=True, exist_ok=True)
    _write(folder / "estimate_layer_resources_hls.json", resources)
    return model


# FINN's build steps (by FINN's name) that run as the functions above in FINN's place.
LEAN_STEPS: dict[str, Callable[[ModelWrapper, DataflowBuildConfig], ModelWrapper]] = {
    "step_hw_ipgen": hw_ipgen,
}


def _layer_reports(
    model: ModelWrapper, cfg: DataflowBuildConfig, folder: Path, suffix: str
) -> None:
    from functools import partial

    from finn.analysis.fpgadataflow.exp_cycles_per_layer import exp_cycles_per_layer
    from finn.analysis.fpgadataflow.op_and_param_counts import (
        aggregate_dict_keys,
        op_and_param_counts,
    )
    from finn.analysis.fpgadataflow.res_estimation import res_estimation, res_estimation_complete

    part = fpga_part(cfg)
    _write(folder / f"op_and_param_counts{suffix}.json", model.analysis(op_and_param_counts))
    _write(folder / f"estimate_layer_cycles{suffix}.json", model.analysis(exp_cycles_per_layer))
    resources = model.analysis(partial(res_estimation, fpgapart=part))
    resources["total"] = aggregate_dict_keys(resources)
    _write(folder / f"estimate_layer_resources{suffix}.json", resources)
    alternatives = model.analysis(partial(res_estimation_complete, fpgapart=part))
    _write(folder / f"estimate_layer_config_alternatives{suffix}.json", alternatives)
    if os.environ.get("FINN_QOR_MODEL_DIR"):  # FINN's fitted models: scikit-learn, pandas
        from finn.builder.build_dataflow_steps import generate_empirical_estimate_reports

        generate_empirical_estimate_reports(model, cfg, folder, suffix)


def _loop_bodies(model: ModelWrapper) -> list[ModelWrapper]:
    return [_body(node) for node in model.get_nodes_by_op_type("FINNLoop")]


def _body(node: NodeProto) -> ModelWrapper:
    from qonnx.custom_op.registry import getCustomOp

    body: ModelWrapper = getCustomOp(node).get_nodeattr("body")
    return body


def _write(path: Path, value: object) -> None:
    with path.open("w") as file:
        json.dump(value, file, indent=2)
