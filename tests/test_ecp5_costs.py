"""A Lattice ECP5 part's capacities read from nextpnr, once."""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("synthesis")]
PART = "LFE5U-85F-6BG381C"


def test_the_lfe5u_85f_capacities_are_read_from_nextpnr_once():
    from brainsmith.place_route.capacities import part_capacities
    from brainsmith.place_route.flow import cache_root
    from brainsmith.place_route.parts import ecp5_part

    found = part_capacities(ecp5_part(PART))
    # the ECP5-85F's LUTs, flip-flops, 18x18 multipliers and 18 Kbit block RAMs (FPGA-DS-02012)
    assert found.available == {"LUT4": 83_640, "FF": 83_640, "MULT18": 156, "EBR": 208}
    assert found.part == PART and found.source.startswith("nextpnr-ecp5 "), found
    entries = {e: e.stat().st_mtime_ns for e in Path(cache_root()).glob("capacities-*.json")}
    assert entries, "no capacities cached"
    assert part_capacities(ecp5_part(PART)) == found  # from the cache: nothing written again
    assert {e: e.stat().st_mtime_ns for e in entries} == entries
