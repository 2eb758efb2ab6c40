"""Which ``synth_xilinx -family`` a part is synthesised for, or why it cannot be.

Yosys' Xilinx flow knows 7-series (``xc7``), UltraScale (``xcu``) and UltraScale+
(``xcup``) among the families FINN builds for; it has no Versal family (no DSP58, no Versal
block RAM or clocking), so a Versal part is refused with the nearest family Yosys does map.
"""

from __future__ import annotations

import re

from brainsmith.frameworks.finn.parts import device_of

# A part of the nearest supported family, for the hint to rebuild with.
ULTRASCALE_PLUS_PART = "xczu7ev-ffvc1156-2-e"

# (device pattern, family, what it is), first match wins; prefixes xc/xq/xa (commercial,
# defense, automotive) alike.
FAMILIES: tuple[tuple[str, str, str], ...] = (
    (r"x[cqa]7", "xc7", "7-series"),
    (r"x[cqa](?:ku|vu)\d+p", "xcup", "Kintex/Virtex UltraScale+"),
    (r"x[cqa](?:ku|vu)\d+", "xcu", "Kintex/Virtex UltraScale"),
    (r"x[cqa]zu\d", "xcup", "Zynq UltraScale+ MPSoC/RFSoC"),
    (r"x[cqa]k\d\d", "xcup", "Kria (Zynq UltraScale+)"),
    (r"x[cqa]u\d", "xcup", "Alveo (UltraScale+)"),
    (r"x[cqa](?:au|su)\d+p", "xcup", "Artix/Spartan UltraScale+"),
    (r"x[cqa]v(?:[cmpeh]\d|\d\d)", "", "Versal"),
)


class NotSynthesisable(Exception):
    """What cannot be synthesised here; the message says why and what to do instead."""


def family_of(part: str) -> str:
    """``synth_xilinx``'s family for ``part`` (``xc7``, ``xcu`` or ``xcup``); raises
    NotSynthesisable for a Versal part (naming the nearest family) or an unknown one."""
    device = device_of(part) or part.strip().lower()
    for pattern, family, kind in FAMILIES:
        if re.match(pattern, device):
            if family:
                return family
            raise NotSynthesisable(
                f"{part} is a {kind} part: Yosys' synth_xilinx has no Versal family (no "
                "DSP58, Versal block RAM or URAM models); the nearest family it maps is "
                "UltraScale+ (xcup): build for an UltraScale+ part to synthesise, e.g. "
                f"--part {ULTRASCALE_PLUS_PART}"
            )
    raise NotSynthesisable(
        f"{part} is not a part of a family Yosys' synth_xilinx maps (7-series xc7*, "
        f"UltraScale xcku/xcvu, UltraScale+ xczu/xck26/xcu250/xcvu*p...), e.g. --part "
        f"{ULTRASCALE_PLUS_PART}"
    )
