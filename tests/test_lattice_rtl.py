"""The RTL a Lattice part reads in place of FINN's (``brainsmith.synthesis.ecp5``): brainsmith's
pipelined matrix core answers as FINN's ``mvu`` cycle by cycle, for several shapes and widths,
and the fixes apply to FINN's installed files, naming themselves, and leave other text alone."""

from __future__ import annotations

import re
import subprocess
from importlib.resources import files as package_files
from pathlib import Path

import pytest

from brainsmith.synthesis.ecp5 import LUT_RAM_DEPTH, SOFT_PRODUCT_BITS, lattice_ready

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("synthesis")]

# (PE, SIMD, weight bits, activation bits, accumulator bits, signed activations, narrow weights)
SHAPES = [
    (2, 4, 4, 4, 24, 0, 0),  # the MLP's
    (3, 5, 2, 2, 24, 0, 0),  # a TFC-w2a2's 2-bit lanes, SIMD not a power of two
    (1, 1, 8, 8, 24, 1, 0),  # one lane, 8-bit signed
    (4, 3, 3, 6, 24, 1, 1),  # narrow weights
    (2, 16, 4, 3, 20, 0, 0),  # a deeper tree, a narrower accumulator
    (2, 8, 4, 2, 24, 0, 0),  # 2-bit unsigned activations: shifted weights added
]
CYCLES = 4000

PAIR = """
module pair #(int unsigned PE, SIMD, W, A, ACCU, bit SIGNED_A, NARROW, SEED)(
	input logic clk, rst, output int unsigned differences, output int unsigned outputs);
	logic last, zero;
	logic [PE-1:0][SIMD-1:0][W-1:0] w;
	logic [SIMD-1:0][A-1:0] a;
	logic vld_f, vld_b;
	logic signed [PE-1:0][ACCU-1:0] p_f, p_b;
	int unsigned run = 0;
	mvu_finn #(.VERSION(2), .PE(PE), .SIMD(SIMD), .WEIGHT_WIDTH(W), .ACTIVATION_WIDTH(A),
		.ACCU_WIDTH(ACCU), .SIGNED_ACTIVATIONS(SIGNED_A), .NARROW_WEIGHTS(NARROW),
		.FORCE_BEHAVIORAL(1)) finn_core (
		.clk, .rst, .en(1'b1), .last, .zero, .w, .a, .vld(vld_f), .p(p_f));
	mvu #(.VERSION(2), .PE(PE), .SIMD(SIMD), .WEIGHT_WIDTH(W), .ACTIVATION_WIDTH(A),
		.ACCU_WIDTH(ACCU), .SIGNED_ACTIVATIONS(SIGNED_A), .NARROW_WEIGHTS(NARROW)) core (
		.clk, .rst, .en(1'b1), .last, .zero, .w, .a, .vld(vld_b), .p(p_b));
	initial begin differences = 0; outputs = 0; void'($urandom(SEED)); end
	always_ff @(posedge clk) begin
		for (int i = 0; i < PE; i++) for (int s = 0; s < SIMD; s++) begin
			automatic logic [W-1:0] x = $urandom();
			if (NARROW && x == {1'b1, {(W-1){1'b0}}}) x = 0;
			w[i][s] <= x;
		end
		for (int s = 0; s < SIMD; s++) a[s] <= $urandom();
		zero <= ($urandom() % 7) == 0;
		last <= ($urandom() % 4) == 0 || run == 12;
		run <= last ? 0 : run + 1;
		if (!rst) begin
			if (vld_f !== vld_b || (vld_f && p_f !== p_b)) begin
				differences <= differences + 1;
				if (differences < 3) $display("difference: vld %b/%b p %h/%h", vld_f, vld_b, p_f, p_b);
			end
			if (vld_f) outputs <= outputs + 1;
		end
	end
endmodule
"""


def bench(shapes: list[tuple[int, ...]]) -> str:
    """Each shape's pair of cores on the same random stream for CYCLES cycles."""
    pairs = "\n".join(
        f"\tpair #(.PE({pe}), .SIMD({simd}), .W({w}), .A({a}), .ACCU({accu}), "
        f".SIGNED_A({signed}), .NARROW({narrow}), .SEED({i + 1})) p{i} "
        f"(.clk, .rst, .differences(d[{i}]), .outputs(o[{i}]));"
        for i, (pe, simd, w, a, accu, signed, narrow) in enumerate(shapes)
    )
    return f"""{PAIR}
module bench;
	logic clk = 0, rst = 1;
	int unsigned d[{len(shapes)}], o[{len(shapes)}];
{pairs}
	always #5 clk = ~clk;
	initial begin
		repeat (20) @(posedge clk);
		rst <= 0;
		repeat ({CYCLES}) @(posedge clk);
		for (int i = 0; i < {len(shapes)}; i++) $display("pair %0d: outputs %0d differences %0d", i, o[i], d[i]);
		$finish;
	end
endmodule
"""


def finn_file(*parts: str) -> Path:
    from brainsmith.frameworks.finn.env import prepare_finn
    from brainsmith.rtlsim.sources import finn_rtllib

    prepare_finn()
    return Path(finn_rtllib(), *parts)


def test_brainsmiths_matrix_core_answers_as_finns_cycle_by_cycle(tmp_path):
    from brainsmith.rtlsim.sources import verilator_ready
    from brainsmith.rtlsim.verilator import find_toolchain

    finn_core = finn_file("mvu", "mvu.sv").read_text()
    renamed = re.sub(r"^module mvu #\(", "module mvu_finn #(", finn_core, flags=re.M)
    (tmp_path / "mvu_finn.sv").write_text(verilator_ready("mvu.sv", renamed).replace(
        "endmodule : mvu\n", "endmodule : mvu_finn\n"))  # fmt: skip
    for name in ("mvu_pkg.sv", "add_multi.sv"):
        (tmp_path / name).write_text(verilator_ready(name, finn_file("mvu", name).read_text()))
    fixes: list[str] = []
    (tmp_path / "mvu.sv").write_text(lattice_ready("mvu.sv", finn_core, fixes))
    assert fixes == ["mvu.sv: pipelined_core"]
    (tmp_path / "bench.sv").write_text(bench(SHAPES))
    toolchain = find_toolchain()
    compiled = subprocess.run(
        [toolchain.verilator, "--binary", "--timing", "-j", "2", "-Wno-fatal", "-Wno-lint",
         "-Wno-style", "-CFLAGS", "-std=c++20 -fcoroutines", "--top-module", "bench",
         "-MAKEFLAGS", "CFG_CXXFLAGS_PCH_I=-include",  # as brainsmith.rtlsim.compile makes
         "-o", "bench", "mvu_pkg.sv", "add_multi.sv", "mvu_finn.sv", "mvu.sv", "bench.sv"],
        capture_output=True, text=True, timeout=900, cwd=tmp_path, env=toolchain.env,
    )  # fmt: skip
    assert compiled.returncode == 0, compiled.stderr[-3000:]
    ran = subprocess.run([tmp_path / "obj_dir" / "bench"], capture_output=True, text=True,
                         timeout=300)  # fmt: skip
    found = {int(i): (int(o), int(d)) for i, o, d in
             re.findall(r"pair (\d+): outputs (\d+) differences (\d+)", ran.stdout)}  # fmt: skip
    assert sorted(found) == list(range(len(SHAPES))), ran.stdout[-3000:]
    for index, (outputs, differences) in found.items():
        assert outputs > CYCLES // 8, (SHAPES[index], outputs)  # vectors came out
        assert differences == 0, (SHAPES[index], ran.stdout[-3000:])


def test_the_lattice_fixes_apply_to_finns_files_and_leave_other_text_alone():
    core = finn_file("mvu", "mvu.sv").read_text()
    thresholds = finn_file("thresholding", "hdl", "thresholding.sv").read_text()
    fixes: list[str] = []
    ours = lattice_ready("mvu.sv", core, fixes)
    shipped = package_files("brainsmith.synthesis").joinpath("rtl", "mvu_lattice.sv")
    assert ours == shipped.read_text() and "genDSP" not in ours
    # the core keeps out of multipliers the products the synthesis script keeps out of them
    assert f"SOFT_BITS = {SOFT_PRODUCT_BITS};" in ours
    fixed = lattice_ready("thresholding.sv", thresholds, fixes)
    assert f"DEPTH <= {LUT_RAM_DEPTH}?" in fixed and fixed.count("\n") == thresholds.count("\n")
    assert fixes == ["mvu.sv: pipelined_core", "thresholding.sv: threshold_memories_in_lut_ram"]
    changed = core.replace("input\tlogic  zero,", "input\tlogic  clear,")  # another core
    untouched: list[str] = []
    assert lattice_ready("mvu.sv", changed, untouched) == changed and untouched == []
