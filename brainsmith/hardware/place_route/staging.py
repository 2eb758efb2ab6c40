"""A design staged for Yosys and nextpnr: the run folder the tools see as their only folder
(``/design``), holding every source, the parameter files, the AMD primitives' models, the
Yosys script and the files beside the design (constraints).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping, Sequence

from brainsmith.hardware.place_route.stitched_sources import StitchedDesign
from brainsmith.hardware.synthesis.layer_sources import (
    DATA,
    MOUNT,
    PRIMITIVES,
    plain_file_name,
    plain_top,
    primitive_library,
)

NETLIST = f"{MOUNT}/design.json"  # the netlist Yosys writes and nextpnr reads
LATTICE_CELLS = "/share/ecp5/cells_bb.v"  # Yosys' ECP5 blackboxes, with their parameters


def yosys_script(
    design: StitchedDesign,
    synthesis: Sequence[str],
    lattice_cells: Sequence[str] = (),
    library: str = LATTICE_CELLS,
) -> str:
    """Read every source (the AMD primitives named as blackboxes, and ``lattice_cells``, a
    family's primitives the sources instantiate, as blackboxes: from Yosys' own models in
    ``library``, or, with none, from a declaration among the sources), map the top
    (``synthesis``'s commands), write the cell counts."""
    files = " ".join(f"{MOUNT}/src/{plain_file_name(name)}" for name, _ in design.sources)
    blackboxes = "".join(f"--blackboxed-module {name} " for name in design.primitives)
    read = f"-v {MOUNT}/{PRIMITIVES} {blackboxes}" if design.primitives else ""
    if lattice_cells:
        read += (f"-v {library} " if library else "") + "".join(
            f"--blackboxed-module {plain_top(name)} " for name in lattice_cells
        )
    return "\n".join(
        [
            f"read_slang -j 1 --ignore-assertions --top {plain_top(design.top)} {read}" + files,
            *synthesis,
            f"tee -q -o {MOUNT}/stat.json stat -json",
            "",
        ]
    )


def stage(
    design: StitchedDesign, folder: str, script: str, files: Mapping[str, str] | None = None
) -> None:
    """``folder`` (replaced) holding what Yosys reads, its ``script`` and ``files`` (name ->
    text) beside them."""
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(os.path.join(folder, "src"))
    for name, text in design.sources:
        with open(os.path.join(folder, "src", plain_file_name(name)), "w") as handle:
            handle.write(text)
    for name, content in design.data:
        tag, base = name.split("/")
        os.makedirs(os.path.join(folder, DATA, plain_file_name(tag)), exist_ok=True)
        with open(os.path.join(folder, DATA, tag, plain_file_name(base)), "wb") as handle:
            handle.write(content)
    with open(os.path.join(folder, PRIMITIVES), "w") as handle:
        handle.write(primitive_library(design.primitives))
    with open(os.path.join(folder, "run.ys"), "w") as handle:
        handle.write(script)
    for name, text in (files or {}).items():
        with open(os.path.join(folder, name), "w") as handle:
            handle.write(text)


__all__ = ["LATTICE_CELLS", "NETLIST", "stage", "yosys_script"]
