"""Open-source place and route of a whole all-RTL accelerator for Lattice parts (Yosys and
nextpnr, no vendor tool): the achieved Fmax against the build's clock and the resources the
part has. ``families`` is the table of target families (``ecp5``: out of context; ``nexus``:
behind the host link on the part's pins), ``parts`` reads Lattice part names, ``sources``
gathers the stitched design with the synthesis fixes, ``flow`` runs the tools and caches;
``bitstream`` makes an ECP5 board's bitstream with the host link in front (``brainsmith.hardware.board``).
"""

from brainsmith.hardware.place_route.bitstream import BitstreamError, BitstreamResult, bitstream
from brainsmith.hardware.place_route.flow import (
    Family,
    PlaceRouteError,
    PlaceRouteResult,
    place_route,
)
from brainsmith.hardware.place_route.parts import (
    Ecp5Part,
    NexusPart,
    UnknownPart,
    ecp5_part,
    nexus_part,
)

__all__ = [
    "BitstreamError",
    "BitstreamResult",
    "Ecp5Part",
    "Family",
    "NexusPart",
    "PlaceRouteError",
    "PlaceRouteResult",
    "UnknownPart",
    "bitstream",
    "ecp5_part",
    "nexus_part",
    "place_route",
]
