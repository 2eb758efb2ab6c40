"""A depthwise convolution on a Lattice part: FINN keeps its RTL vector-vector layer
(``VVAU_rtl``) for Versal parts, so brainsmith makes it for a Lattice build
(``frameworks/finn/vector_layers.py``) and the part reads brainsmith's core in place of
FINN's DSP58 one (``rtl/vvu_lattice.sv``; compared cycle by cycle in
``test_lattice_rtl.py``). ``check`` and the build agree; a fresh Brevitas export nobody tuned
for is simulated whole in Verilator against torch, and made into a bitstream whose netlist
equals its RTL at gate level."""

from __future__ import annotations

from pathlib import Path

import onnx
import pytest

import brainsmith
from brainsmith.commands.check_model import check
from tests.conftest import once, run_python

REPO = Path(__file__).resolve().parents[1]
ZOO = REPO / "examples" / "models" / "zoo"
# a depthwise-separable net of sizes and widths the zoo does not ship: 3-bit weights,
# 5-bit activations, a stride-2 depthwise layer, 6x6 images
FRESH = ("mobilenet_block(channels=(6, 10), strides=(2,), weight_bits=3, act_bits=5, "
         "stem_weight_bits=4, image=6, classes=4)")  # fmt: skip

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("synthesis")]


def test_check_puts_depthwise_layers_in_rtl_for_a_lattice_board():
    result = check(ZOO / "mobilenet_block.onnx", options={"board": "ulx3s-85f"})
    vectors = [n for n in result.nodes if n.op_type == "VVAU"]
    assert len(vectors) == 2 and not result.blocking, [(n.name, n.reason) for n in result.nodes]
    for node in vectors:
        assert (node.placement, node.backend, node.reason) == (
            "hardware",
            "VVAU_rtl",
            "prefer: rtl",
        )
    # an AMD part other than Versal keeps FINN's rule: HLS, and why
    amd = check(ZOO / "mobilenet_block.onnx", options={"fpga_part": "xczu7ev-ffvc1156-2-e"},
                prefer="rtl")  # fmt: skip
    assert {n.backend for n in amd.nodes if n.op_type == "VVAU"} == {"VVAU_hls"}


@pytest.fixture(scope="module")
def fresh(tmp_path_factory) -> Path:
    """The fresh depthwise-separable export (seed 7), with torch's vectors."""

    def make() -> Path:
        folder = tmp_path_factory.mktemp("depthwise")
        result = run_python(
            "from pathlib import Path\n"
            "import examples.zoo as zoo\n"
            f"zoo.export_network('dw', Path({str(folder)!r}), seed=7, make=lambda: zoo.{FRESH})\n",
            cwd=REPO,
            timeout=900,
        )
        assert result.returncode == 0, result.stderr[-3000:]
        return folder / "dw.onnx"

    return once("depthwise-fresh", make)


def _built(model: Path, out: Path, **options: object) -> brainsmith.BuildResult:
    return brainsmith.build(
        str(model), None, str(out), verify="rtlsim",
        input_npy=str(model.with_name("dw_input.npy")),
        expected_npy=str(model.with_name("dw_expected.npy")),
        options={"board": "ulx3s-85f", **options},
    )  # fmt: skip


def test_a_depthwise_network_for_a_lattice_board_matches_torch_in_verilator(fresh, tmp_path):
    built = _built(fresh, tmp_path / "out")
    final = onnx.load(str(Path(built.output_dir) / "final.onnx"))
    kinds = [n.op_type for n in final.graph.node]
    assert kinds.count("VVAU_rtl") == 1 and not [k for k in kinds if k.endswith("_hls")], kinds
    rtlsim = built.report["rtlsim"]
    assert rtlsim and rtlsim["ok"] and rtlsim["stitched"], rtlsim
    checks = [s["verification"] for s in built.report["steps"] if s.get("verification")]
    assert checks[-1]["ok"] and checks[-1]["user"]["max_error"] < 1e-4, checks[-1]
    family = built.report["family_resources"]
    assert not family.get("incomplete"), family  # the depthwise layer is costed too
    vector = next(v for k, v in family["layers"].items() if k.startswith("VVAU_rtl"))
    assert vector and vector["LUT4"] > 0, family["layers"]


@pytest.mark.wide  # a place and route of the depthwise net: about 2 min
def test_a_depthwise_network_becomes_a_bitstream_equal_to_its_rtl_at_gate_level(fresh, tmp_path):
    built = _built(fresh, tmp_path / "out", bitstream=True)
    section = built.report["bitstream"]
    assert section["met"] and section["status"] == "timing met", section
    check_ = section["netlist_check"]
    assert check_["ran"] and check_["passed"], check_


def test_check_predicts_the_backends_of_layers_the_build_narrows_first():
    """The build narrows each layer's widths before FINN specialises (``hardware_inference``'s
    ``minimize_bit_width``), and FINN's rule for an RTL matrix layer reads them: QuartzNet's
    pointwise layers after a residual add read INT10, which check saw as INT32, and
    predicted the HLS layer (blocking a Lattice board) where the build makes the RTL one."""
    result = check(ZOO / "quartznet.onnx", options={"board": "ulx3s-85f"})
    matrices = [n for n in result.nodes if n.op_type == "MVAU"]
    assert matrices and not result.blocking, [(n.name, n.reason) for n in result.blocking]
    assert {n.backend for n in matrices} == {"MVAU_rtl"}
