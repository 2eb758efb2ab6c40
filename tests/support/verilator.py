"""A SystemVerilog test bench compiled and run with the Verilator brainsmith finds, with the
flags brainsmith.hardware.rtlsim.compile uses: for tests that compare RTL modules cycle by cycle."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path


def run_bench(folder: Path, sources: list[str], top: str = "bench") -> str:
    """The output of ``top`` compiled from ``sources`` (files in ``folder``) and run; the
    compile's errors when it fails. The executable is kept in the run's Verilator cache
    (``BRAINSMITH_RTLSIM_CACHE``/bench), keyed by Verilator's version, the flags and every
    source's name and text, so a bench compiled before is run again without compiling."""
    from brainsmith.hardware.rtlsim.verilator import find_toolchain

    toolchain = find_toolchain()
    flags = ["--binary", "--timing", "-j", "2", "-Wno-fatal", "-Wno-lint", "-Wno-style",
             "-CFLAGS", "-std=c++20 -fcoroutines", "--top-module", top,
             "-MAKEFLAGS", "CFG_CXXFLAGS_PCH_I=-include"]  # fmt: skip  # as rtlsim.compile makes
    key = hashlib.sha256(json.dumps([toolchain.version, toolchain.compiler, flags]).encode())
    for source in sources:
        key.update(source.encode() + b"\0" + (folder / source).read_bytes() + b"\0")
    kept = (
        Path(os.environ.get("BRAINSMITH_RTLSIM_CACHE") or folder) / "bench" / key.hexdigest()[:32]
    )
    if not (kept / top).is_file():
        compiled = subprocess.run(
            [toolchain.verilator, *flags, "-o", top, *sources],
            capture_output=True, text=True, timeout=900, cwd=folder, env=toolchain.env,
        )  # fmt: skip
        assert compiled.returncode == 0, compiled.stderr[-3000:]
        kept.mkdir(parents=True, exist_ok=True)
        staged = kept / f".{top}.{os.getpid()}"
        shutil.copy2(folder / "obj_dir" / top, staged)
        os.replace(staged, kept / top)  # whole or not at all, for another worker reading it
    ran = subprocess.run([kept / top], capture_output=True, text=True, timeout=300, cwd=folder)
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
