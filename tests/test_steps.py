"""brainsmith's build steps as FINN sees them: ``fn(model, cfg)`` with a real
``DataflowBuildConfig``, in FINN's own builder, and steered by a blueprint's selection
passed through the config."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from brainsmith.frameworks.finn.env import prepare_finn, run_finn_builder
from brainsmith.planning.context import BuildContext, context_of, running
from brainsmith.planning.plan import BuildPlan, PlannedKernel, load_plan

REPO = Path(__file__).resolve().parents[1]
MLP = REPO / "examples" / "models" / "mlp_4bit.onnx"
VERSAL_PART = "xcvc1902-vsva2197-2MP-e-S"
STEPS = (
    "cleanup",
    "qonnx_to_finn",
    "streamline",
    "hardware_inference",
    "specialize",
    "folding",
    "estimates",
    "codegen",
)
HW = "finn.custom_op.fpgadataflow"

# FINN's passes warn about guessed data layouts and rounded datatypes when called directly
pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore::UserWarning")]


def finn_config(tmp_path: Path, **options):
    prepare_finn()
    from finn.builder.build_dataflow_config import DataflowBuildConfig, DataflowOutputType

    return DataflowBuildConfig(
        output_dir=str(tmp_path / "finn"),
        fpga_part=VERSAL_PART,
        synth_clk_period_ns=5.0,
        target_fps=100000,
        generate_outputs=[DataflowOutputType.ESTIMATE_REPORTS],
        **options,
    )


def step_functions(names=STEPS) -> list:
    from brainsmith.plugins import steps

    return [getattr(steps, name) for name in names]


def load_mlp():
    from qonnx.core.modelwrapper import ModelWrapper

    return ModelWrapper(str(MLP))


def test_every_standard_step_is_a_registered_model_cfg_function():
    for name, fn in zip(STEPS, step_functions(), strict=True):
        assert fn.__name__ == name and fn.__module__ == "brainsmith.steps.dataflow"
        assert list(inspect.signature(fn).parameters) == ["model", "cfg"]
        assert fn.__doc__


def test_steps_run_with_a_plain_finn_config_and_default_to_finns_kernels(tmp_path):
    cfg = finn_config(tmp_path)
    model = load_mlp()
    for fn in step_functions():
        model = fn(model, cfg)
    ops = [node.op_type for node in model.graph.node]
    assert ops and all(node.domain in (f"{HW}.hls", f"{HW}.rtl") for node in model.graph.node)
    assert any(op.startswith("MVAU_") for op in ops)
    assert context_of(cfg).dataflow_parent is not None  # a default context was attached
    report = Path(cfg.output_dir) / "report"
    assert (report / "estimate_layer_resources.json").is_file()
    assert (report / "estimate_network_performance.json").is_file()


def test_kernel_selection_reaches_hardware_inference_through_the_running_context(tmp_path):
    cfg = finn_config(tmp_path)
    only_mvau = PlannedKernel("finn:MVAU", "MVAU", ["finn:InferQuantizedMatrixVectorActivation"])
    model = load_mlp()
    with running(BuildContext(BuildPlan(kernels=[only_mvau]))) as context:
        for fn in step_functions(STEPS[:4]):
            model = fn(model, cfg)
    assert {node.op_type for node in model.graph.node} == {"MVAU"}
    assert not hasattr(cfg, "brainsmith")  # passed beside FINN's config, not stored on it
    parent_ops = [n.op_type for n in context.dataflow_parent.graph.node]
    assert parent_ops[0] == "MultiThreshold"  # no Thresholding kernel: stays outside
    assert "StreamingDataflowPartition" in parent_ops


def test_specialize_uses_only_the_allowed_backend_types(tmp_path):
    cfg = finn_config(tmp_path)
    plan = load_plan(str(REPO / "blueprints" / "mlp.yaml"))
    hls_thresholds = [
        PlannedKernel(k.name, k.op_type, k.infer_transforms, ["finn:Thresholding_hls"], ["hls"])
        if k.op_type == "Thresholding"
        else k
        for k in plan.kernels
    ]
    model = load_mlp()
    with running(BuildContext(BuildPlan(kernels=hls_thresholds))):
        for fn in step_functions(STEPS[:5]):
            model = fn(model, cfg)
    kinds = {node.op_type for node in model.graph.node}
    assert kinds == {"Thresholding_hls", "MVAU_rtl"}


def test_brainsmith_steps_run_inside_finns_own_builder(tmp_path):
    cfg = finn_config(
        tmp_path,
        steps=[
            *step_functions(STEPS[:5]),
            "step_target_fps_parallelization",
            "step_minimize_bit_width",
            *step_functions(["estimates"]),
        ],
    )
    assert run_finn_builder(str(MLP), cfg) == 0
    saved = Path(cfg.output_dir) / "intermediate_models"
    for name in (*STEPS[:5], "step_minimize_bit_width", "estimates"):
        assert (saved / f"{name}.onnx").is_file(), name
    assert (Path(cfg.output_dir) / "report" / "estimate_layer_cycles.json").is_file()
