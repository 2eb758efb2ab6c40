"""The design document's "FINN integration" usage, literally: brainsmith steps and transforms in a
FINN ``BUILD_STEPS`` list, called as ``fn(model, cfg)`` with FINN's own ``DataflowBuildConfig``
in a plain loop and inside FINN's builder, on FINN's TFC as bnn_pynq exports it (a Reshape at
the input) and on a fresh export of the same kind with other sizes and bit widths."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from brainsmith.frameworks.finn.env import prepare_finn, run_finn_builder
from tests.conftest import once, run_python

REPO = Path(__file__).resolve().parents[1]
ZOO = REPO / "examples" / "models" / "zoo"
HW = "finn.custom_op.fpgadataflow"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.filterwarnings("ignore::UserWarning"),
    pytest.mark.xdist_group("design-document"),
]


def build_steps() -> list:
    """The document's list, word for word."""
    from brainsmith.plugins import steps
    from brainsmith.plugins import transforms as tfm

    return [
        steps.cleanup,
        lambda m, cfg: m.transform(tfm.ExpandNorms()),
        steps.qonnx_to_finn,
        lambda m, cfg: m.transform(tfm.finn.Streamline()),
        steps.hardware_inference,
    ]


def optimize_topology(model, cfg):
    """The document's custom step function, word for word."""
    from brainsmith.plugins import transforms as tfm

    model = model.transform(tfm.ExpandNorms())
    model = model.transform(tfm.ConvertDivToMul())
    model = model.transform(tfm.MergeOpChains())
    return model


def finn_config(folder: Path, steps=None):
    prepare_finn()
    from finn.builder.build_dataflow_config import DataflowBuildConfig, DataflowOutputType

    return DataflowBuildConfig(
        output_dir=str(folder),
        fpga_part="xcvc1902-vsva2197-2MP-e-S",
        synth_clk_period_ns=5.0,
        generate_outputs=[DataflowOutputType.ESTIMATE_REPORTS],
        steps=steps,
    )


@pytest.fixture(scope="module")
def networks(tmp_path_factory) -> dict[str, Path]:
    """The shipped bnn_pynq TFC and a fresh 2-bit one with other sizes (exported here)."""

    def make() -> dict[str, Path]:
        folder = tmp_path_factory.mktemp("tfc")
        call = "tfc(2, 2, in_bits=2, hidden=(24, 40), image=10, bnn_pynq_input=True)"
        result = run_python(
            "from pathlib import Path\nimport examples.zoo as zoo\n"
            f"zoo.export_network('tfc_w2a2_bnn_pynq', Path({str(folder)!r}), seed=11, "
            f"make=lambda: zoo.{call})\n",
            cwd=REPO,
            timeout=600,
        )
        assert result.returncode == 0, result.stderr[-3000:]
        return {
            "tfc_w1a1_bnn_pynq": ZOO / "tfc_w1a1_bnn_pynq.onnx",
            "tfc_w2a2_bnn_pynq": folder / "tfc_w2a2_bnn_pynq.onnx",
        }

    return once("design-document-tfc", make)


def vectors(model: Path) -> tuple[np.ndarray, np.ndarray]:
    stem = model.with_suffix("")
    return np.load(f"{stem}_input.npy"), np.load(f"{stem}_expected.npy")


def run_parent(parent, inputs: np.ndarray) -> np.ndarray:
    """The graph around the accelerator, run with QONNX's executor (the partition included)."""
    from qonnx.core.onnx_exec import execute_onnx

    name, out = parent.graph.input[0].name, parent.graph.output[0].name
    return np.concatenate([execute_onnx(parent, {name: x[None]})[out] for x in inputs])


@pytest.mark.parametrize("name", ["tfc_w1a1_bnn_pynq", "tfc_w2a2_bnn_pynq"])
def test_document_build_steps_run_as_a_plain_loop_and_match_torch(networks, name, tmp_path):
    from qonnx.core.modelwrapper import ModelWrapper

    from brainsmith.planning.context import context_of

    model, cfg = ModelWrapper(str(networks[name])), finn_config(tmp_path / "finn")
    assert model.graph.node[0].op_type == "Reshape"  # as bnn_pynq's forward exports
    for fn in [*build_steps()[:1], optimize_topology, *build_steps()[1:]]:
        model = fn(model, cfg)
    ops = [node.op_type for node in model.graph.node]
    assert all(node.domain == HW for node in model.graph.node), ops
    assert "Reshape" in ops and "MVAU" in ops
    inputs, expected = vectors(networks[name])
    np.testing.assert_array_equal(run_parent(context_of(cfg).dataflow_parent, inputs), expected)


@pytest.mark.parametrize("name", ["tfc_w1a1_bnn_pynq", "tfc_w2a2_bnn_pynq"])
def test_document_build_steps_run_inside_finns_own_builder(networks, name, tmp_path):
    from brainsmith.plugins import steps

    rest = [steps.specialize, steps.folding, steps.estimates]
    cfg = finn_config(tmp_path / "finn", steps=[*build_steps(), *rest])
    assert run_finn_builder(str(networks[name]), cfg) == 0
    log = (tmp_path / "finn" / "build_dataflow.log").read_text()
    assert "Traceback" not in log, log[-3000:]
    saved = tmp_path / "finn" / "intermediate_models" / "estimates.onnx"
    from qonnx.core.modelwrapper import ModelWrapper

    built = ModelWrapper(str(saved))
    assert {node.domain for node in built.graph.node} <= {f"{HW}.hls", f"{HW}.rtl"}
    assert any(node.op_type.startswith("Reshape_") for node in built.graph.node)
    assert (tmp_path / "finn" / "report" / "estimate_layer_resources.json").is_file()


def test_the_document_steps_need_no_brainsmith_build(tmp_path):
    """A fresh process that imports only what the document's example imports (no brainsmith
    build, no blueprint): the Reshape layer FINN leaves unregistered is found."""
    program = (
        "import warnings; warnings.filterwarnings('ignore')\n"
        "from qonnx.core.modelwrapper import ModelWrapper\n"
        "from tests.test_design_document import build_steps, finn_config\n"
        "from pathlib import Path\n"
        f"model = ModelWrapper({str(ZOO / 'tfc_w1a1_bnn_pynq.onnx')!r})\n"
        f"cfg = finn_config(Path({str(tmp_path / 'finn')!r}))\n"
        "for fn in build_steps():\n    model = fn(model, cfg)\n"
        "print(sorted({n.op_type for n in model.graph.node}))\n"
    )
    result = run_python(program, cwd=REPO, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "'Reshape'" in result.stdout
