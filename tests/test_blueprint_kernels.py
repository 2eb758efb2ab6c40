"""Kernel choices a build could not honour are refused by ``blueprint validate`` (with the
real QONNX/FINN registry): a kernel without any backend, and two kernels building the same
layers with different allowed backends."""

from __future__ import annotations

import pytest

from brainsmith.plugin.blueprint import BlueprintError, load_blueprint
from tests.test_blueprint_support import write

HEADER = "steps: [cleanup]\nbuild: {fpga_part: xcvc1902-vsva2197-2MP-e-S}\n"


def problems(path) -> list[str]:
    with pytest.raises(BlueprintError) as err:
        load_blueprint(path)
    return [str(problem) for problem in err.value.problems]


def test_kernel_without_any_backend_is_refused_at_its_line(tmp_path):
    path = write(
        tmp_path,
        "bp.yaml",
        HEADER + "hw_compiler:\n  kernels:\n    - matmul\n    - finn:StreamingDataflowPartition\n",
    )
    [problem] = problems(path)
    assert problem.startswith(f"{path}:6:7: error: kernel finn:StreamingDataflowPartition has no")
    assert "brainsmith plugins list --type backend" in problem


def test_same_layers_with_contradictory_backends_are_refused(tmp_path):
    path = write(
        tmp_path,
        "bp.yaml",
        HEADER
        + "hw_compiler:\n  kernels:\n"
        + "    - {kernel: matmul, backends: [rtl]}\n"
        + "    - {kernel: finn:MVAU, backends: [hls]}\n",
    )
    [problem] = problems(path)
    assert problem.startswith(
        f"{path}:6:16: error: kernels brainsmith:matmul (line 5) and finn:MVAU"
    )
    assert "both build MVAU layers" in problem and "MatMulRTL vs MVAU_hls" in problem


def test_shuffle_is_accepted_because_the_build_decomposes_it(tmp_path):
    path = write(tmp_path, "bp.yaml", HEADER + "hw_compiler:\n  kernels: [finn:Shuffle]\n")
    blueprint = load_blueprint(path)
    assert [choice.kernel.qualified_name for choice in blueprint.kernels] == ["finn:Shuffle"]
