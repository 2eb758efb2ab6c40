"""Open-source place and route of a whole all-RTL accelerator for Lattice parts (Yosys and
nextpnr, no vendor tool): the achieved Fmax against the build's clock and the resources the
part has. ``families`` is the table of target families (``ecp5``: out of context; ``nexus``:
behind the host link on the part's pins), ``parts`` reads Lattice part names, ``sources``
gathers the stitched design with the synthesis fixes, ``flow`` runs the tools and caches;
``bitstream`` makes an ECP5 board's bitstream with the host link in front (``brainsmith.hardware.board``).

Its modules are imported by name (``brainsmith.hardware.place_route.flow``...): the package
imports none of them, so reading a part name (``parts``) does not load the tool chain.
"""
