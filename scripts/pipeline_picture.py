"""docs/architecture.md's picture of the build pipeline, drawn from the code: the default
blueprint's plan as ``brainsmith build MODEL`` shapes it, each step with its framework and
module, the phase transforms where they run, and the builder modules around the step loop.

    python -m scripts.pipeline_picture [--check]    (rewrites the block between the markers;
                                                     --check: exit 1 if it differs)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "architecture.md"
BEGIN = "<!-- pipeline: drawn by python -m scripts.pipeline_picture -->"
END = "<!-- /pipeline -->"
AROUND_BEFORE = [
    ("shape the plan", "planning/shaping.py", "blueprint + --part, --target-fps, --prefer, --verify"),
    ("check the inputs", "intake/model.py", "model and vectors, before FINN loads or a file is written"),
    ("the step loop", "builder/flow.py", "after each step: wiring checked, model saved, checked (verify: each)"),
]  # fmt: skip
AROUND_AFTER = [
    ("verify", "verification/", "the final design against the model (verify: final, rtlsim)"),
    ("synthesis", "builder/measure.py", "build.synth: each RTL layer through Yosys (hardware/synthesis/)"),
    ("bitstream", "builder/bitstream.py", "build.bitstream: Yosys, nextpnr, the packer (hardware/place_route/); "
     "the netlist checked at gate level (hardware/board/)"),
    ("report", "builder/reporting.py", "report.json, report.html (report/), the summary"),
    ("fold again", "builder/refold.py", "a clock not met: the build again for the clock reached (build.refold_rounds)"),
]  # fmt: skip


def picture() -> str:
    """The pipeline of the default blueprint, as text."""
    from brainsmith.frameworks.finn.tables import TOOL_STEPS
    from brainsmith.planning.shaping import shape_plan
    from brainsmith.plugin.names import short_name

    plan = shape_plan(None)
    phases = {"streamline": plan.pre_hw, "folding": plan.post_hw}
    lines = [f"{'brainsmith build MODEL [BLUEPRINT]':<36} builder/runner.py"]
    lines += [f"  {what:<34} {where:<21} {note}" for what, where, note in AROUND_BEFORE]
    for number, name in enumerate(plan.steps, 1):
        spec = plan.spec("step", name)
        if spec.framework == "finn":
            tool = TOOL_STEPS.get(spec.name)
            where = "FINN's builder"
            note = f"needs {tool}" if tool else ""
        else:
            where = str(Path(spec.source).resolve().relative_to(REPO / "brainsmith"))
            transforms = [short_name(t.name) for t in phases.get(spec.name, ())]
            note = f"with {', '.join(transforms)}" if transforms else ""
        lines.append(f"   {number:>2} {short_name(spec.name):<30} {where:<21} {note}".rstrip())
    lines += [f"  {what:<34} {where:<21} {note}" for what, where, note in AROUND_AFTER]
    return "\n".join(line.rstrip() for line in lines)


def block() -> str:
    return f"{BEGIN}\n\n```\n{picture()}\n```\n\n{END}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the doc's picture differs")
    args = parser.parse_args(argv)
    text = DOC.read_text()
    start, end = text.index(BEGIN), text.index(END) + len(END)
    new = text[:start] + block() + text[end:]
    if args.check:
        return 0 if new == text else 1
    DOC.write_text(new)
    return 0


if __name__ == "__main__":
    sys.exit(main())
