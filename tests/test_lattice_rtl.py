"""The RTL a Lattice part reads in place of FINN's (``brainsmith.hardware.synthesis.ecp5``): brainsmith's
pipelined matrix core answers as FINN's ``mvu`` cycle by cycle, for several shapes and widths,
and the fixes apply to FINN's installed files, naming themselves, and leave other text alone."""

from __future__ import annotations

import random
import re
from importlib.resources import files as package_files
from pathlib import Path

import numpy as np
import pytest

from brainsmith.hardware.synthesis.ecp5 import LUT_RAM_DEPTH, SOFT_PRODUCT_BITS, lattice_ready
from tests.support.verilator import clocked_bench, run_bench

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
    declared = f"\tint unsigned d[{len(shapes)}], o[{len(shapes)}];\n{pairs}"
    report = (f"\t\tfor (int i = 0; i < {len(shapes)}; i++) "
              '$display("pair %0d: outputs %0d differences %0d", i, o[i], d[i]);')  # fmt: skip
    return PAIR + clocked_bench(declared, CYCLES, report)


def finn_file(*parts: str) -> Path:
    from brainsmith.frameworks.finn.env import prepare_finn
    from brainsmith.hardware.rtlsim.layer_design import finn_rtllib

    prepare_finn()
    return Path(finn_rtllib(), *parts)


def compare_in_verilator(folder: Path, sources: list[str], pair: str, shapes: list) -> None:
    """Compile and run ``sources`` in ``folder``, and require each of ``shapes``' pairs (the
    lines ``<pair> <i>: outputs <n> differences <d>``) to have given outputs, with no
    difference between FINN's module and the one a Lattice part reads."""
    output = run_bench(folder, sources)
    found = {int(i): (int(o), int(d)) for i, o, d in re.findall(
        rf"{pair} (\d+): outputs (\d+) differences (\d+)", output)}  # fmt: skip
    assert sorted(found) == list(range(len(shapes))), output[-3000:]
    for index, (outputs, differences) in found.items():
        assert outputs > CYCLES // 8, (shapes[index], outputs)  # vectors came out
        assert differences == 0, (shapes[index], output[-3000:])


def test_brainsmiths_matrix_core_answers_as_finns_cycle_by_cycle(tmp_path):
    from brainsmith.hardware.rtlsim.layer_design import verilator_ready

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
    compare_in_verilator(
        tmp_path,
        ["mvu_pkg.sv", "add_multi.sv", "mvu_finn.sv", "mvu.sv", "bench.sv"],
        "pair",
        SHAPES,
    )


def test_the_lattice_fixes_apply_to_finns_files_and_leave_other_text_alone():
    core = finn_file("mvu", "mvu.sv").read_text()
    thresholds = finn_file("thresholding", "hdl", "thresholding.sv").read_text()
    fixes: list[str] = []
    ours = lattice_ready("mvu.sv", core, fixes)
    shipped = package_files("brainsmith.hardware.synthesis").joinpath("rtl", "mvu_lattice.sv")
    assert ours == shipped.read_text() and "genDSP" not in ours
    # the core keeps out of multipliers the products the synthesis script keeps out of them
    assert f"SOFT_BITS = {SOFT_PRODUCT_BITS};" in ours
    fixed = lattice_ready("thresholding.sv", thresholds, fixes)
    assert f"DEPTH <= {LUT_RAM_DEPTH}?" in fixed and "ThreshRead <= Threshs[addr];" in fixed
    assert fixes == ["mvu.sv: pipelined_core", "thresholding.sv: threshold_memories_in_lut_ram",
                     "thresholding.sv: block_ram_reads_registered"]  # fmt: skip
    changed = core.replace("input\tlogic  zero,", "input\tlogic  clear,")  # another core
    untouched: list[str] = []
    assert lattice_ready("mvu.sv", changed, untouched) == changed and untouched == []
    # the sliding window's other styles (the fixed one: the comparison below) as they are
    for style in ("swg_template_default_dynamic.sv", "swg_template_parallel.sv"):
        text = finn_file("swg", style).read_text()
        assert lattice_ready("L_impl.sv", text, untouched) == text and untouched == []


# (N thresholds, C channels, PE, K input bits): memories of up to 256 words in LUTs, deeper
# ones in block RAM read through a register (the jet tagger's are up to 2,048 words)
THRESHOLD_SHAPES = [(63, 16, 1, 12), (63, 64, 2, 15), (15, 32, 1, 9)]

THRESHOLD_PAIR = """
module tpair #(int unsigned N, C, PE, K, SEED, parameter PATH = "")(
	input logic clk, rst, output int unsigned differences, output int unsigned outputs);
	localparam int unsigned O = $clog2(N+1);
	logic irdy_f, irdy_b, ivld_f, ivld_b, ordy_f, ordy_b, ovld_f, ovld_b;
	logic [PE-1:0][K-1:0] idat_f, idat_b;
	logic [PE-1:0][O-1:0] odat_f, odat_b;
	int unsigned in_f = 0, in_b = 0, out_f = 0, out_b = 0;
	logic [PE-1:0][O-1:0] seen_f[8192], seen_b[8192];
	thresholding_finn #(.K(K), .N(N), .C(C), .PE(PE), .SIGNED(0), .THRESHOLDS_PATH(PATH),
		.USE_CONFIG(0), .DEEP_PIPELINE(1)) finn_core (
		.clk, .rst, .cfg_en(1'b0), .cfg_we(1'b0), .cfg_a('0), .cfg_d('0), .cfg_rack(), .cfg_q(),
		.irdy(irdy_f), .ivld(ivld_f), .iset('0), .idat(idat_f),
		.ordy(ordy_f), .ovld(ovld_f), .odat(odat_f));
	thresholding #(.K(K), .N(N), .C(C), .PE(PE), .SIGNED(0), .THRESHOLDS_PATH(PATH),
		.USE_CONFIG(0), .DEEP_PIPELINE(1)) core (
		.clk, .rst, .cfg_en(1'b0), .cfg_we(1'b0), .cfg_a('0), .cfg_d('0), .cfg_rack(), .cfg_q(),
		.irdy(irdy_b), .ivld(ivld_b), .iset('0), .idat(idat_b),
		.ordy(ordy_b), .ovld(ovld_b), .odat(odat_b));
	function automatic logic [PE-1:0][K-1:0] word(int unsigned i);
		logic [PE-1:0][K-1:0] w;
		for (int pe = 0; pe < PE; pe++) w[pe] = K'((i * 2654435761 + pe * 40503) >> 7);
		return w;
	endfunction
	assign idat_f = word(in_f);
	assign idat_b = word(in_b);
	initial begin differences = 0; outputs = 0; void'($urandom(SEED)); end
	always_ff @(posedge clk) begin
		ivld_f <= $urandom() % 3 != 0;
		ivld_b <= $urandom() % 3 != 0;
		ordy_f <= $urandom() % 4 != 0;
		ordy_b <= $urandom() % 2 != 0;
		if (!rst) begin
			if (ivld_f && irdy_f) in_f <= in_f + 1;
			if (ivld_b && irdy_b) in_b <= in_b + 1;
			if (ovld_f && ordy_f) begin seen_f[out_f % 8192] <= odat_f; out_f <= out_f + 1; end
			if (ovld_b && ordy_b) begin seen_b[out_b % 8192] <= odat_b; out_b <= out_b + 1; end
		end
	end
	final begin
		automatic int unsigned n = out_f < out_b ? out_f : out_b;
		for (int unsigned i = 0; i < n && i < 8192; i++) if (seen_f[i] !== seen_b[i]) differences++;
		outputs = n;
		$display("tpair %0d: outputs %0d differences %0d", SEED, outputs, differences);
	end
endmodule
"""


def threshold_bench(folder: Path) -> str:
    """Each threshold shape's pair, its memories of random words in ``folder``."""
    pairs = []
    for i, (n, c, pe, k) in enumerate(THRESHOLD_SHAPES):
        draw = random.Random(i)
        stages = (n + 1).bit_length() - 1
        for lane in range(pe):
            for stage in range(stages):
                words = [f"{draw.randrange(2**k):x}" for _ in range(c // pe * 2**stage)]
                (folder / f"t{i}_threshs_{lane}_{stage}.dat").write_text("\n".join(words) + "\n")
        pairs.append(
            f"\ttpair #(.N({n}), .C({c}), .PE({pe}), .K({k}), .SEED({i}), "
            f'.PATH("{folder}/t{i}_")) p{i} (.clk, .rst, .differences(), .outputs());'
        )
    body = "\n".join(pairs)
    return THRESHOLD_PAIR + clocked_bench(body, CYCLES)


def test_threshold_memories_read_through_a_register_answer_as_finns(tmp_path):
    """FINN's threshold layer and the one a Lattice part reads (shallow memories in LUTs,
    deep ones in block RAM read through one more register) give the same outputs in the same
    order, each under its own random input and output stalls."""
    from brainsmith.hardware.rtlsim.layer_design import verilator_ready
    from brainsmith.hardware.synthesis.layer_sources import yosys_ready

    path = finn_file("thresholding", "hdl", "thresholding.sv")
    original = path.read_text()
    fixes: list[str] = []  # as a Lattice build reads it: brainsmith synth's fixes first
    fixed = lattice_ready(
        "thresholding.sv", yosys_ready(str(path), original, str(path.parent), fixes), fixes
    )
    assert {"thresholding.sv: threshold_memories_in_lut_ram",
            "thresholding.sv: block_ram_reads_registered"} <= set(fixes), fixes  # fmt: skip
    renamed = re.sub(r"^module thresholding\b", "module thresholding_finn", original, flags=re.M)
    renamed = renamed.replace("endmodule : thresholding\n", "endmodule : thresholding_finn\n")
    (tmp_path / "finn.sv").write_text(verilator_ready("thresholding.sv", renamed))
    (tmp_path / "fixed.sv").write_text(verilator_ready("thresholding.sv", fixed))
    (tmp_path / "bench.sv").write_text(threshold_bench(tmp_path))
    compare_in_verilator(tmp_path, ["finn.sv", "fixed.sv", "bench.sv"], "tpair", THRESHOLD_SHAPES)


# sliding windows FINN generates in its default style: (channels, SIMD, kernel, input size,
# stride, dilation, depthwise) -- the CNV's 3x3 windows with SIMD below the channels, a
# stride that skips input rows, a depthwise window, a 1-D one, a dilated one, a 2x2 stride 2
WINDOW_SHAPES = [
    (4, 2, (3, 3), (6, 6), (1, 1), (1, 1), 0),
    (2, 1, (3, 3), (9, 9), (2, 2), (1, 1), 0),
    (4, 2, (3, 3), (8, 8), (1, 1), (1, 1), 1),
    (4, 4, (1, 3), (1, 12), (1, 1), (1, 1), 0),
    (2, 2, (3, 3), (9, 9), (1, 1), (2, 2), 0),
    (4, 4, (2, 2), (8, 8), (2, 2), (1, 1), 0),
]
WINDOW_BITS = 4
WINDOW_CYCLES = 12000

WINDOW_PAIR = """
module wpair_{i} #(int unsigned SEED)(input logic clk, rst);
	localparam int unsigned WIDTH = {bits} * {simd};
	logic ivld = 0, ordy = 0, irdy_f, irdy_b, ovld_f, ovld_b;
	logic [WIDTH-1:0] idat_f, idat_b, odat_f, odat_b;
	int unsigned in_f = 0, in_b = 0, outputs = 0, differences = 0, busy = 4, free = 4;
	W{i}_finn_impl #(.BIT_WIDTH({bits}), .SIMD({simd}), .MMV_IN(1), .MMV_OUT(1)) finn (
		.ap_clk(clk), .ap_rst_n(!rst), .in0_V_V_TVALID(ivld), .in0_V_V_TREADY(irdy_f),
		.in0_V_V_TDATA(idat_f), .out_V_V_TVALID(ovld_f), .out_V_V_TREADY(ordy),
		.out_V_V_TDATA(odat_f));
	W{i}_impl #(.BIT_WIDTH({bits}), .SIMD({simd}), .MMV_IN(1), .MMV_OUT(1)) fixed (
		.ap_clk(clk), .ap_rst_n(!rst), .in0_V_V_TVALID(ivld), .in0_V_V_TREADY(irdy_b),
		.in0_V_V_TDATA(idat_b), .out_V_V_TVALID(ovld_b), .out_V_V_TREADY(ordy),
		.out_V_V_TDATA(odat_b));
	assign idat_f = WIDTH'((in_f * 2654435761) >> 9);
	assign idat_b = WIDTH'((in_b * 2654435761) >> 9);
	initial void'($urandom(SEED));
	always_ff @(posedge clk) begin
		// stalls in phases: every 500 cycles each side is free, stalled often, or seldom
		if ($urandom() % 500 == 0) begin busy = $urandom() % 5; free = $urandom() % 5; end
		ivld <= busy == 0 || $urandom() % busy != 0;
		ordy <= free == 0 || $urandom() % free != 0;
		if (!rst) begin
			if (ivld && irdy_f) in_f <= in_f + 1;
			if (ivld && irdy_b) in_b <= in_b + 1;
			if (irdy_f !== irdy_b || ovld_f !== ovld_b || (ovld_f && odat_f !== odat_b)) begin
				differences <= differences + 1;
				if (differences < 3) $display("wpair {i}: ready %b/%b valid %b/%b data %h/%h",
					irdy_f, irdy_b, ovld_f, ovld_b, odat_f, odat_b);
			end
			if (ovld_f && ordy) outputs <= outputs + 1;
		end
	end
	final $display("wpair {i}: outputs %0d differences %0d frames %0d", outputs, differences,
		outputs / {per_frame});
endmodule
"""


def window_layers(folder: Path) -> list[tuple[str, int]]:
    """Each of WINDOW_SHAPES generated by FINN into ``folder`` (``W<i>_impl.sv``), with its
    output words per frame."""
    from qonnx.custom_op.registry import getCustomOp

    from benchmarks.synth_fit import window

    layers = []
    for i, (channels, simd, kernel, size, stride, dilation, depthwise) in enumerate(WINDOW_SHAPES):
        model = window(channels, simd, kernel, size, stride, dilation, depthwise, WINDOW_BITS)
        model.graph.node[0].name = f"W{i}"
        layer = getCustomOp(model.graph.node[0])
        assert layer.select_impl_style() == "default"
        layer.set_nodeattr("code_gen_dir_ipgen", str(folder))
        layer.generate_hdl(model, "xczu7ev-ffvc1156-2-e", 5)
        words = int(np.prod(layer.get_folded_output_shape()[:-1]))
        layers.append((f"W{i}_impl.sv", words))
    return layers


def test_sliding_windows_compared_by_sign_answer_as_finns_cycle_by_cycle(tmp_path):
    """FINN's sliding window and the one a Lattice part reads (its counters' differences in
    registers, its read address wrapped by sign) take and give the same words in the same
    cycles, in six shapes, under phases of random input and output stalls."""
    from brainsmith.hardware.rtlsim.layer_design import verilator_ready
    from brainsmith.hardware.synthesis.layer_sources import yosys_ready

    finn_file("swg")  # FINN ready, its generator's templates found
    pairs = []
    for i, (name, per_frame) in enumerate(window_layers(tmp_path)):
        path = tmp_path / name
        original = path.read_text()
        fixes: list[str] = []  # as a Lattice build reads it: brainsmith synth's fixes first
        fixed = lattice_ready(name, yosys_ready(str(path), original, str(tmp_path), fixes), fixes)
        assert fixes[-1:] == [f"{name}: sign_compared_window"], fixes
        finn = original.replace(f"W{i}_impl", f"W{i}_finn_impl")
        (tmp_path / f"W{i}_finn.sv").write_text(verilator_ready(name, finn))
        path.write_text(verilator_ready(name, fixed))
        simd = WINDOW_SHAPES[i][1]
        pairs.append(WINDOW_PAIR.format(i=i, bits=WINDOW_BITS, simd=simd, per_frame=per_frame))
    instances = "\n".join(f"\twpair_{i} #(.SEED({i + 1})) p{i} (.clk, .rst);"
                          for i in range(len(pairs)))  # fmt: skip
    (tmp_path / "bench.sv").write_text("".join(pairs) + clocked_bench(instances, WINDOW_CYCLES))
    swg = finn_file("swg")
    for name in ("swg_pkg.sv", "swg_common.sv"):
        (tmp_path / name).write_text(verilator_ready(name, (swg / name).read_text()))
    sources = ["swg_pkg.sv", "swg_common.sv"]
    sources += [f"W{i}_finn.sv" for i in range(len(pairs))]
    sources += [f"W{i}_impl.sv" for i in range(len(pairs))] + ["bench.sv"]
    output = run_bench(tmp_path, sources)
    found = re.findall(r"wpair (\d+): outputs (\d+) differences (\d+) frames (\d+)", output)
    assert len(found) == len(WINDOW_SHAPES), output[-3000:]
    for index, outputs, differences, frames in found:
        assert int(frames) >= 2, (WINDOW_SHAPES[int(index)], outputs)  # frames came out
        assert int(differences) == 0, (WINDOW_SHAPES[int(index)], output[-3000:])


# (PE, SIMD, weight bits, activation bits, accumulator bits, signed activations, segment
# length): depthwise layers' vector cores
VECTOR_SHAPES = [
    (4, 9, 4, 4, 16, 0, 3),  # a 3x3 window at once, 4 channels
    (2, 3, 8, 8, 24, 1, 1),  # 8-bit signed, a window row at a time
    (3, 1, 4, 2, 12, 0, 0),  # one lane each, 2-bit unsigned activations: shifted weights
    (2, 9, 4, 4, 16, 0, 1),  # segments of one: a latency of 5, two tree levels registered
    (1, 6, 8, 8, 20, 1, 2),
    (4, 2, 3, 5, 14, 1, 1),
]

VECTOR_PAIR = """
module vpair #(int unsigned PE, SIMD, W, A, ACCU, bit SIGNED_A, int unsigned SEGMENT, SEED)(
	input logic clk, rst, output int unsigned differences, output int unsigned outputs);
	localparam int unsigned DEPTH = 3 + (SEGMENT == 0? 0 : ((SIMD+2)/3 - 1)/SEGMENT);
	logic last, zero;
	logic [PE*SIMD-1:0][W-1:0] w;
	logic [PE*SIMD-1:0][A-1:0] a;
	logic vld_f, vld_b;
	logic signed [PE-1:0][ACCU-1:0] p_f, p_b;
	logic [1:DEPTH] lasts = '0;
	int unsigned run = 0;
	mvu_vvu_finn #(.IS_MVU(0), .PE(PE), .SIMD(SIMD), .WEIGHT_WIDTH(W), .ACTIVATION_WIDTH(A),
		.ACCU_WIDTH(ACCU), .SIGNED_ACTIVATIONS(SIGNED_A), .SEGMENTLEN(SEGMENT),
		.FORCE_BEHAVIORAL(1)) finn_core (
		.clk, .rst, .en(1'b1), .last, .zero, .w, .a, .vld(vld_f), .p(p_f));
	mvu_vvu_8sx9_dsp58 #(.IS_MVU(0), .PE(PE), .SIMD(SIMD), .WEIGHT_WIDTH(W),
		.ACTIVATION_WIDTH(A), .ACCU_WIDTH(ACCU), .SIGNED_ACTIVATIONS(SIGNED_A),
		.SEGMENTLEN(SEGMENT)) core (
		.clk, .rst, .en(1'b1), .last, .zero, .w, .a, .vld(vld_b), .p(p_b));
	initial begin differences = 0; outputs = 0; void'($urandom(SEED)); end
	always_ff @(posedge clk) begin
		for (int i = 0; i < PE*SIMD; i++) begin
			w[i] <= $urandom();
			a[i] <= $urandom();
		end
		zero <= ($urandom() % 7) == 0;
		last <= ($urandom() % 4) == 0 || run == 12;
		run <= last ? 0 : run + 1;
		lasts <= rst ? '0 : { last, lasts[1:DEPTH-1] };
		if (!rst) begin
			// FINN's wrapper counts DEPTH cycles from a last to its sum: so must the core
			if (vld_f !== vld_b || vld_b !== lasts[DEPTH] || (vld_f && p_f !== p_b)) begin
				differences <= differences + 1;
				if (differences < 3) $display("difference: vld %b/%b/%b p %h/%h", vld_f, vld_b, lasts[DEPTH], p_f, p_b);
			end
			if (vld_f) outputs <= outputs + 1;
		end
	end
endmodule
"""


def test_brainsmiths_vector_core_answers_as_finns_cycle_by_cycle(tmp_path):
    """A depthwise layer's core on a Lattice part (``rtl/vvu_lattice.sv``, read in place of
    FINN's DSP58 one) gives FINN's behavioural core's sums on the same cycles, with the
    latency FINN's wrapper sizes its output queue for."""
    from brainsmith.hardware.rtlsim.layer_design import verilator_ready

    name = "mvu_vvu_8sx9_dsp58.sv"
    finn_core = finn_file("mvu", name).read_text()
    renamed = re.sub(r"^module mvu_vvu_8sx9_dsp58 #\(", "module mvu_vvu_finn #(", finn_core,
                     flags=re.M).replace("endmodule : mvu_vvu_8sx9_dsp58", "endmodule : mvu_vvu_finn")  # fmt: skip
    (tmp_path / "mvu_vvu_finn.sv").write_text(verilator_ready(name, renamed))
    for other in ("mvu_pkg.sv", "add_multi.sv"):
        (tmp_path / other).write_text(verilator_ready(other, finn_file("mvu", other).read_text()))
    fixes: list[str] = []
    (tmp_path / name).write_text(lattice_ready(name, finn_core, fixes))
    assert fixes == [f"{name}: pipelined_vector_core"]
    pairs = "\n".join(
        f"\tvpair #(.PE({pe}), .SIMD({simd}), .W({w}), .A({a}), .ACCU({accu}), "
        f".SIGNED_A({signed}), .SEGMENT({segment}), .SEED({i + 1})) p{i} "
        f"(.clk, .rst, .differences(d[{i}]), .outputs(o[{i}]));"
        for i, (pe, simd, w, a, accu, signed, segment) in enumerate(VECTOR_SHAPES)
    )
    count = len(VECTOR_SHAPES)
    report = (f"\t\tfor (int i = 0; i < {count}; i++) "
              '$display("vpair %0d: outputs %0d differences %0d", i, o[i], d[i]);')  # fmt: skip
    body = f"\tint unsigned d[{count}], o[{count}];\n{pairs}"
    (tmp_path / "bench.sv").write_text(VECTOR_PAIR + clocked_bench(body, CYCLES, report))
    compare_in_verilator(
        tmp_path, ["mvu_pkg.sv", "add_multi.sv", "mvu_vvu_finn.sv", name, "bench.sv"], "vpair",
        VECTOR_SHAPES,
    )  # fmt: skip
