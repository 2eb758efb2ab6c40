"""Open-source place and route of a whole all-RTL accelerator for Lattice parts (Yosys and
nextpnr, no vendor tool): the achieved Fmax against the build's clock and the resources the
part has. ``toolchain`` is what every target family shares (Yosys + nextpnr), ``ecp5`` (out
of context), ``nexus``, ``ice40``, ``gowin`` and ``gatemate`` (behind the host link, ``linked``; packed by ``packing``)
its families and ``families`` their table; ``parts`` reads Lattice part names, ``stitched_sources`` gathers
the stitched design with the synthesis fixes, ``staging`` writes the run folder, ``flow``
runs the tools once per plan (``brainsmith.hardware.plan``) and caches, ``report``
reads what they report; ``bitstream`` makes an ECP5 board's bitstream with the host link in
front (``brainsmith.hardware.board``).

Its modules are imported by name (``brainsmith.hardware.place_route.flow``...): the package
imports none of them, so reading a part name (``parts``) does not load the tool chain.
"""
