"""What Yosys reads to synthesise a whole stitched accelerator for a Lattice part: the files
``finn/stitched_rtl/files.f`` lists, each fixed as ``brainsmith synth`` fixes it
(``brainsmith.hardware.synthesis.layer_sources.yosys_ready``) plus the fixes a Lattice part needs
(``LATTICE_FIXES``), and each layer's parameter files.

Every listed file must be a regular file inside the build folder or inside FINN's installed
``finn-rtllib`` (a folder from elsewhere cannot make Yosys read any other file). A module
each layer of a kind copies into its own code folder (brainsmith's ``bs_pool.sv``) is read
once: Yosys refuses a second definition. Layers name
their parameter files alike (each matrix layer's ``memblock.dat``), so each code folder's
files go to their own folder, ``data/d<N>/``, and that folder's sources name them there. AMD primitives that
FINN's RTL names in branches a build does not take (``mvu.sv``'s ``LUT6_2`` and ``DSP48E2``
beside its behavioural code, which the layer's wrapper selects) are declared as blackboxes,
as ``brainsmith synth`` declares them: one that is instantiated stays an unknown cell, which
nextpnr refuses by name.

- FINN's matrix units (``mvu_vvu_axi.sv``, ``mvu_vvu_8sx9_dsp58.sv``) and float
  units (``binopf.sv``, ``accuf.sv``, ``rsqrtf.sv``) use their behavioural datapath unless an
  instance chooses otherwise (``FORCE_BEHAVIORAL`` defaults to 1): their DSP48, DSP58,
  DSPFP32 and LUT6_2 paths name AMD primitives.
- ``mvu.sv``: FINN's matrix core, whose 27x18 products Yosys splits over two 18x18 multipliers
  added in the same cycle, is read as brainsmith's pipelined one (``rtl/mvu_lattice.sv``).
- ``mvu_vvu_8sx9_dsp58.sv``: FINN's DSP58 vector core, which a depthwise layer made for a
  Lattice part uses (``frameworks/finn/vector_layers.py``), is read as brainsmith's
  (``rtl/vvu_lattice.sv``): a registered product per weight, in 18x18 multipliers.
- ``thresholding.sv``: threshold memories of up to 256 words go to LUTs where FINN leaves the
  choice to the tool, and deeper ones, in block RAM, are read through one more register (a
  block RAM's clock-to-data delay before the compare was the next slowest path).
- ``fifo.sv``: FINN's FIFO keeps a FIFO deeper than 2,028 words in UltraRAM (its ``auto``
  rule) and keeps one in UltraRAM when its style says ``ultra``; a Lattice part has no
  UltraRAM, so both become block RAM, the memory a Lattice part has for them.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field

from brainsmith.hardware.board.top import AcceleratorPorts
from brainsmith.hardware.design import Design, DesignFile
from brainsmith.hardware.listing import design_path
from brainsmith.hardware.synthesis.ecp5 import (
    LATTICE_FIXES,
    behavioural_by_default,
    block_ram_for_ultra,
    lattice_ready,
)
from brainsmith.hardware.synthesis.layer_sources import (
    DATA,
    MAX_FILE_BYTES,
    MOUNT,
    plain_file_name,
    primitive_library,
    primitives_used,
    read_layer_file,
    yosys_ready,
)


@dataclass
class StitchedDesign:
    """The whole accelerator as Yosys reads it."""

    top: str
    sources: list[tuple[str, str]]  # (file name, fixed text) in compile order
    data: list[tuple[str, bytes]]  # (path under data/, content)
    primitives: list[str]  # AMD primitives named (in branches not taken), read as blackboxes
    fixes: list[str] = field(default_factory=list)
    # its ports, from the build's final model (``top.accelerator_ports``): what a board top
    # or a part's top behind the host link connects; None where nothing puts it behind one
    ports: AcceleratorPorts | None = None
    # the layer each instance of the accelerator is (``n3`` -> ``MVAU_rtl_0``), as the build
    # wrote it (``listing.layer_instances``): a critical path's ends are named by it
    instances: dict[str, str] = field(default_factory=dict)

    def digest(self) -> str:
        """SHA-256 of every name, text and parameter file Yosys reads."""
        digest = hashlib.sha256()
        parts = [self.top.encode()]
        for name, text in self.sources:
            parts += [name.encode(), text.encode()]
        for name, content in self.data:
            parts += [name.encode(), content]
        parts.append(primitive_library(self.primitives).encode())
        for part in parts:
            digest.update(len(part).to_bytes(8, "little") + part)
        return digest.hexdigest()


def stitched_design(folder: str, design: Design, linked: bool = True) -> StitchedDesign:
    """The stitched accelerator ``design`` describes (the build in ``folder``, through the
    gate), fixed for Yosys and a Lattice part, with its ports where it goes behind the host
    link (``linked``); MissingSources naming what cannot be used."""
    sources: list[tuple[str, str]] = []
    data: list[tuple[str, bytes]] = []
    fixes: list[str] = []
    seen: set[str] = set()
    included: set[tuple[str, str]] = set()  # (file name, text): each module once
    code_dirs: dict[str, str] = {}  # code folder in the build -> its data folder
    for file in design.sources:
        source = design_path(folder, file)
        path, code_dir = source.path, source.code_dir
        text = read_layer_file(path, code_dir, "RTL file").decode("utf-8", errors="replace")
        name = os.path.basename(path)
        text = yosys_ready(path, text, code_dir, fixes)
        text = lattice_ready(os.path.basename(path), text, fixes)
        if source.in_build:
            if code_dir not in code_dirs:
                code_dirs[code_dir] = tag = f"d{len(code_dirs)}"
                data += parameter_files(folder, design, file, tag)
            text = text.replace(f'"{MOUNT}/{DATA}/', f'"{MOUNT}/{DATA}/{code_dirs[code_dir]}/')
        if (name, text) in included:  # a layer's copy of a module another layer brought
            continue
        included.add((name, text))
        while name in seen:
            name = f"_{name}"
        seen.add(plain_file_name(name))
        sources.append((name, text))
    used = primitives_used(text for _, text in sources)
    ports = AcceleratorPorts(design.input.bits, design.output.bits, design.probes)
    return StitchedDesign(
        design.top, sources, data, used, sorted(set(fixes)), ports if linked else None,
        dict(design.instances),
    )  # fmt: skip


def parameter_files(
    folder: str, design: Design, source: DesignFile, tag: str
) -> list[tuple[str, bytes]]:
    """(``tag/name``, bytes) of each memory file (weights, thresholds) ``design`` names in
    the code folder of its ``source``, read as layer files are; MissingSources naming one
    that cannot be."""
    found = []
    for memory in design.memories(source.path.rpartition("/")[0]):
        path = design_path(folder, memory).path
        content = read_layer_file(path, os.path.dirname(path), "parameter file")
        found.append((f"{tag}/{plain_file_name(os.path.basename(path))}", content))
    return found


__all__ = [
    "LATTICE_FIXES",
    "MAX_FILE_BYTES",
    "StitchedDesign",
    "behavioural_by_default",
    "block_ram_for_ultra",
    "parameter_files",
    "stitched_design",
]
