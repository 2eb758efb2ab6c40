"""``brainsmith new``: start a plugin package from a template."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import click

from brainsmith.cli.output import echo


@click.group()
def new() -> None:
    """Start a plugin package from a template."""


@new.command("kernel")
@click.argument("name")
@click.option(
    "-o",
    "--output",
    type=click.Path(file_okay=False, path_type=Path),
    help="Folder to create (default: ./<distribution>); must not exist or be empty.",
)
@click.option("--dist", help="pip distribution name (default: from NAME, AcmeClip -> acme-clip).")
@click.option(
    "--inputs",
    type=click.Choice(["1", "2"]),
    default="1",
    show_default=True,
    help="Input streams of the layer: 1 (an integer Clip) or 2 (the Min of two integer "
    "streams, ports in0_V and in1_V).",
)
def kernel(name: str, output: Path | None, dist: str | None, inputs: str) -> None:
    """Write a hardware-layer package for the op type NAME (CamelCase, e.g. AcmeClip).

    \b
    NAME gives the Python package (AcmeClip -> acme_clip) and the SystemVerilog module: a name
    that is a keyword of either, or whose package or distribution exists already (Finn, Os,
    ...; installing the package would hide or replace it), is refused.

    \b
    The package has the kernel (shapes, streams, folding, estimates, Python execution), its
    infer transform (ONNX Clip of integers -> NAME, to adapt), an RTL backend with
    SystemVerilog and FINN's stream ports, entry points, and tests that run the layer in
    Python and in Verilator over random shapes, data types and foldings.

    \b
    With --inputs 2 the layer takes two input streams (in0_V, in1_V): its infer transform
    makes NAME of an ONNX Min of two computed integer tensors of one shape.

    \b
    Example:
      brainsmith new kernel AcmeClip
      brainsmith new kernel AcmeMin --inputs 2
      cd acme-clip && python -m pip install -e '.[test]' && python -m pytest tests
      (python: the interpreter brainsmith runs on; the printed commands name it)
    """
    from brainsmith.scaffold import ScaffoldError, names_for, new_kernel

    try:
        folder = new_kernel(name, output, dist, int(inputs))
    except (ScaffoldError, OSError) as exc:
        echo(f"error: {exc}", err=True)
        if getattr(exc, "hint", ""):
            echo(f"  try: {exc.hint}", err=True)  # type: ignore[union-attr]
        raise SystemExit(2) from None
    names = names_for(name, dist)
    echo(f"wrote {names.dist} ({names.op_type}) to {folder}")
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        echo(f"  {path.relative_to(folder)}")
    python = shlex.quote(sys.executable)  # brainsmith's environment: another pip installs elsewhere
    echo(
        "next:\n"
        f"  cd {shlex.quote(str(folder))}\n"
        f"  {python} -m pip install -e '.[test]'   # into brainsmith's environment\n"
        f"  {python} -m pytest tests               # the layer in Python and in Verilator\n"
        "  then edit compute() in kernel.py and the .sv together, and infer.py's pattern"
    )
