"""A SystemVerilog test bench compiled and run with the Verilator brainsmith finds, with the
flags brainsmith.hardware.rtlsim.compile uses: for tests that compare RTL modules cycle by cycle."""

from __future__ import annotations

import subprocess
from pathlib import Path


def run_bench(folder: Path, sources: list[str], top: str = "bench") -> str:
    """The output of ``top`` compiled from ``sources`` (files in ``folder``) and run; the
    compile's errors when it fails."""
    from brainsmith.hardware.rtlsim.verilator import find_toolchain

    toolchain = find_toolchain()
    compiled = subprocess.run(
        [toolchain.verilator, "--binary", "--timing", "-j", "2", "-Wno-fatal", "-Wno-lint",
         "-Wno-style", "-CFLAGS", "-std=c++20 -fcoroutines", "--top-module", top,
         "-MAKEFLAGS", "CFG_CXXFLAGS_PCH_I=-include",  # as brainsmith.hardware.rtlsim.compile makes
         "-o", top, *sources],
        capture_output=True, text=True, timeout=900, cwd=folder, env=toolchain.env,
    )  # fmt: skip
    assert compiled.returncode == 0, compiled.stderr[-3000:]
    ran = subprocess.run([folder / "obj_dir" / top], capture_output=True, text=True,
                         timeout=300)  # fmt: skip
    return ran.stdout


def clocked_bench(instances: str, cycles: int, report: str = "") -> str:
    """A ``bench`` module: a clock, ``rst`` held 20 cycles, ``instances`` run for ``cycles``
    more, then ``report`` (statements) and ``$finish``."""
    return f"""
module bench;
	logic clk = 0, rst = 1;
{instances}
	always #5 clk = ~clk;
	initial begin
		repeat (20) @(posedge clk);
		rst <= 0;
		repeat ({cycles}) @(posedge clk);
{report}
		$finish;
	end
endmodule
"""
