"""Open-source place and route of a whole all-RTL accelerator for Lattice ECP5 (Yosys
``synth_ecp5`` and ``nextpnr-ecp5``, out of context): the achieved Fmax against the build's
clock and the resources the part has. ``parts`` reads a Lattice part name, ``sources``
gathers the stitched design with the synthesis fixes, ``ecp5`` runs the tools and caches;
``bitstream`` makes a board's bitstream with the host link in front (``brainsmith.board``).
"""

from brainsmith.place_route.bitstream import BitstreamError, BitstreamResult, bitstream
from brainsmith.place_route.ecp5 import PlaceRouteError, PlaceRouteResult, place_route
from brainsmith.place_route.parts import Ecp5Part, UnknownPart, ecp5_part

__all__ = [
    "BitstreamError",
    "BitstreamResult",
    "Ecp5Part",
    "PlaceRouteError",
    "PlaceRouteResult",
    "UnknownPart",
    "bitstream",
    "ecp5_part",
    "place_route",
]
