"""``build.synth``: after the last step, every RTL layer of the design synthesised with Yosys
out of context (``brainsmith.hardware.synthesis``, cached by content, two layers at once); the counts
go to report.json's ``synthesis`` and beside each layer's estimates.

A part Yosys has no family for (Versal), a missing Yosys or a synthesis cache others can
write stops the build before its first step, saying what to do; a layer Yosys rejects is reported with its reason and log, and the
build still succeeds (its design is what it is; only that layer is not measured). Yosys is
started after the steps, as the synthesis begins (its first start after installing compiles
its WebAssembly), and that time is the synthesis's, not the loading's.
"""

from __future__ import annotations

import os
import time

from brainsmith.frameworks.finn.env import contain_finn_output
from brainsmith.hardware.synthesis import NotSynthesisable, YosysMissing, family_of, find_yosys
from brainsmith.hardware.synthesis.families import ULTRASCALE_PLUS_PART
from brainsmith.hardware.synthesis.run import CacheError, cache_root, synthesise_design
from brainsmith.hardware.synthesis.yosys import require_installed
from brainsmith.planning.errors import BuildError
from brainsmith.report.measured import synthesis_section

TYPE_CHECKING = False
if TYPE_CHECKING:
    from qonnx.core.modelwrapper import ModelWrapper

    from brainsmith.builder.state import BuildRun
    from brainsmith.hardware.synthesis.yosys import Yosys

WORKDIR = "synthesis"  # each layer's Yosys run, under the output folder


def require_synthesis(part: str | None) -> Yosys:
    """Yosys started, ready for ``part`` (``check_synthesis``); a setup BuildError saying
    what to do otherwise."""
    check_synthesis(part)
    try:
        return find_yosys()
    except YosysMissing as exc:
        raise BuildError.setup(f"build.synth: {exc}", exc.hint) from exc


def check_synthesis(part: str | None) -> None:
    """A setup BuildError saying what to do unless Yosys maps ``part``, its cache is a private
    folder and Yosys is installed (not started: the first start compiles its WebAssembly)."""
    if not part:
        raise BuildError.setup(
            "build.synth needs an FPGA part (the blueprint's fpga_part or board)",
            f"give one, e.g. --part {ULTRASCALE_PLUS_PART}",
        )
    try:
        family_of(part)
    except NotSynthesisable as exc:
        raise BuildError.setup(
            f"build.synth: {exc}",
            f"build for a part Yosys maps, e.g. --part {ULTRASCALE_PLUS_PART}",
        ) from None
    try:
        cache_root()
    except CacheError as exc:
        raise BuildError.setup(f"build.synth: {exc}", exc.hint) from None
    try:
        require_installed()
    except YosysMissing as exc:
        raise BuildError.setup(f"build.synth: {exc}", exc.hint) from exc


def measure(run: BuildRun, model: ModelWrapper, part: str) -> None:
    """Synthesise ``model``'s layers for ``part`` into ``run.synthesis``."""
    began = time.perf_counter()
    run.progress.note("starting Yosys (the first run after installing takes about a minute)")
    yosys = require_synthesis(part)
    starting = time.perf_counter() - began
    workdir = run.path(WORKDIR)
    os.makedirs(workdir, exist_ok=True)
    run.progress.note(f"synthesising the RTL layers with {yosys.version} ...")
    with contain_finn_output(run.build_log):
        try:
            result = synthesise_design(model, part, workdir, yosys, jobs=2)
        except CacheError as exc:
            raise BuildError.setup(
                str(exc), "set BRAINSMITH_CACHE_DIR to a folder of your own"
            ) from exc
    result.seconds += starting  # Yosys' start-up is the synthesis's time
    run.synthesis = synthesis_section(result, run.output_dir)
    done = sum(1 for x in result.layers if x.status == "synthesised")
    run.progress.note(
        f"synthesis: {done} of {len(result.layers)} layers in {result.seconds:.1f} s "
        f"({starting:.1f} s of it starting Yosys)"
    )
