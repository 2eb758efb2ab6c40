"""Open-source place and route of a whole all-RTL accelerator for Lattice ECP5 (Yosys
``synth_ecp5`` and ``nextpnr-ecp5``, out of context): the achieved Fmax against the build's
clock and the resources the part has. ``parts`` reads a Lattice part name, ``sources``
gathers the stitched design with the synthesis fixes, ``ecp5`` runs the tools and caches.
"""

from brainsmith.place_route.ecp5 import PlaceRouteError, PlaceRouteResult, place_route
from brainsmith.place_route.parts import Ecp5Part, UnknownPart, ecp5_part

__all__ = [
    "Ecp5Part",
    "PlaceRouteError",
    "PlaceRouteResult",
    "UnknownPart",
    "ecp5_part",
    "place_route",
]
