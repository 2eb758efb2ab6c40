"""A node no kernel takes in the middle of a conv net (``Sin``, which no backend has) does not
end the build: it and what follows run on the host, the build says so, and how much of the
network's work (its multiply-accumulates) that leaves to the host."""

from __future__ import annotations

import json
from pathlib import Path

import onnx
import pytest
from onnx import helper

from tests.support.processes import invoke

REPO = Path(__file__).resolve().parents[1]
CONV_PAD = REPO / "examples" / "models" / "conv_pad.onnx"  # a Brevitas export
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("build")]


def with_sin_before_the_second_conv(folder: Path) -> Path:
    """conv_pad with ``Sin`` between its first max pool and its second convolution."""
    model = onnx.load(CONV_PAD)
    nodes = list(model.graph.node)
    pool = next(n for n in nodes if n.op_type == "MaxPool")
    conv = next(n for n in nodes[nodes.index(pool) :] if n.op_type == "Conv")
    conv.input[0] = "sin_out"
    model.graph.node.insert(nodes.index(pool) + 1, helper.make_node("Sin", [pool.output[0]],
                                                                     ["sin_out"], name="Sin_0"))  # fmt: skip
    path = folder / "conv_sin.onnx"
    onnx.save(model, path)
    return path


def test_a_node_no_kernel_takes_runs_on_the_host_and_its_share_of_the_work_is_said(hub, tmp_path):
    model = with_sin_before_the_second_conv(tmp_path)
    out = tmp_path / "out"
    code, stdout, stderr = invoke("build", str(model), "--verify", "each", "-o", str(out),
                                  cwd=tmp_path)  # fmt: skip
    assert code == 0, stderr
    report = json.loads((out / "report.json").read_text())
    assert all(s["verification"]["ok"] for s in report["steps"] if "verification" in s)
    cpu = report["cpu_nodes"]
    assert {"Sin", "MatMul"} <= set(cpu["op_types"]), cpu["op_types"]  # it and what follows
    said = "Sin_0 (Sin): a floating-point Sin between layers, which no integer layer computes"
    assert any(said in n and "leave Sin_0 on the host" in n for n in report["notes"])
    # the host's multiply-accumulates: the second convolution (8x8 outputs of 8 channels, each
    # 8 x 3 x 3 products, lowered to a MatMul) and the classifier (10 outputs of 128 products)
    counts = json.loads((out / "finn" / "report" / "op_and_param_counts.json").read_text())
    in_hardware = sum(v for k, v in counts["total"].items() if k.startswith("op_mac"))
    assert cpu["host_macs"] == 8 * 8 * 8 * 8 * 9 + 10 * 128, cpu["host_macs"]
    assert cpu["host_share"] == round(cpu["host_macs"] / (cpu["host_macs"] + in_hardware), 4)
    share = f"they do {cpu['host_share']:.0%} of the network's multiply-accumulates"
    warning = next(line for line in stdout.splitlines() if "stay on the CPU" in line)
    assert share in warning, warning


@pytest.mark.parametrize(
    ("written", "counted"),
    [('{"total": {"op_mac_4bx4b": 10, "op_mac_x": "lots", "param_w": 3}}', 10.0),
     ('{"total": [1]}', 0.0), ("not json", 0.0), ("[]", 0.0)],
)  # fmt: skip
def test_a_damaged_count_file_counts_what_is_a_number_and_never_fails(tmp_path, written, counted):
    from brainsmith.frameworks.finn.estimation.finn_reports import accelerator_macs

    (tmp_path / "op_and_param_counts.json").write_text(written)
    assert accelerator_macs(str(tmp_path)) == counted
