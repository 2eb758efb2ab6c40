"""The clock a board build asks for when none is given: what each ECP5 speed grade reaches.

The shipped 4-bit MLP built ``--prefer rtl`` once, then placed and routed out of context
(``brainsmith place-route --part LFE5U-85F-<grade>BG381C``) at 200 MHz for each speed grade,
fresh processes with a private cache. The grades' Fmax scale the slowest Fmax measured on a
board at speed grade 6 (the networks of ``benchmarks.bitstream`` and the slowest board build
``brainsmith.hardware.place_route.default_clocks`` records) to the others; a default is that
scaled Fmax less ``default_clocks.MARGIN``, rounded down to 5 MHz (``DefaultClock.mhz``;
``default_clocks`` keeps the table).

    .venv/bin/python -m benchmarks.board_clock

Writes benchmarks/results/board_clock.json and its section of benchmarks/RESULTS.md.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

from benchmarks.place_route import BUILD_PART, REPO, place_route
from brainsmith.hardware.place_route.default_clocks import MARGIN

RESULT = Path(__file__).resolve().parent / "results" / "board_clock.json"
HEADING = "## The clock a board build asks for (ECP5 speed grades)"
GRADES = (6, 7, 8)
BITSTREAM = Path(__file__).resolve().parent / "results" / "bitstream.json"


def slowest_on_board() -> tuple[str, float]:
    """(network, Fmax in MHz) of the slowest build placed on a board at speed grade 6: of the
    networks benchmarks.bitstream placed on the ULX3S-85F and the one default_clocks records."""
    from brainsmith.hardware.place_route.default_clocks import DEFAULTS

    networks = json.loads(BITSTREAM.read_text())["networks"]
    recorded = DEFAULTS["ECP5"][6]
    return min([(name, float(row["fmax_mhz"])) for name, row in networks.items()]
               + [(recorded.measured, recorded.fmax_mhz)], key=lambda row: row[1])  # fmt: skip


def measure() -> dict:
    import brainsmith
    from benchmarks.machine import machine_info
    from brainsmith.hardware.place_route.default_clocks import DefaultClock

    network, slowest = slowest_on_board()
    reached: dict[int, float] = {}
    with tempfile.TemporaryDirectory(prefix="brainsmith-board-clock-") as tmp:
        folder = Path(tmp) / "mlp"
        brainsmith.build(
            str(REPO / "examples" / "models" / "mlp_4bit.onnx"),
            str(REPO / "blueprints" / "mlp.yaml"),
            str(folder),
            options={"fpga_part": BUILD_PART},
            prefer="rtl",
            verify="none",
        )
        load_before = list(os.getloadavg())
        for grade in GRADES:
            cache = Path(tmp) / f"cache-{grade}"
            cache.mkdir(mode=0o700)
            _, _, placed = place_route(folder, cache, f"LFE5U-85F-{grade}BG381C")
            reached[grade] = min(placed["fmax_mhz"].values())
        load_after = list(os.getloadavg())
    defaults = {
        grade: DefaultClock(slowest, network, reached[grade] / reached[6]).mhz for grade in GRADES
    }
    return {
        "benchmark": "board_clock",
        "model": "examples/models/mlp_4bit.onnx",
        "blueprint": "blueprints/mlp.yaml",
        "constraint_mhz": 200.0,
        "mlp_fmax_mhz": reached,
        "slowest_on_board": {"network": network, "fmax_mhz": slowest},
        "margin": MARGIN,
        "default_mhz": defaults,
        "machine": machine_info(),
        "load_average_before": load_before,
        "load_average_after": load_after,
    }


def section(data: dict) -> list[str]:
    """RESULTS.md's section."""
    slowest = data["slowest_on_board"]
    rows = [
        f"| {grade} | {data['mlp_fmax_mhz'][grade]:.1f} MHz | {data['default_mhz'][grade]} MHz |"
        for grade in data["mlp_fmax_mhz"]
    ]
    return [
        "",
        HEADING,
        "",
        f"`{data['model']}` with `{data['blueprint']}` built `--prefer rtl`, placed and routed "
        "out of context for `LFE5U-85F-<grade>BG381C` at 200 MHz (`python -m "
        f"benchmarks.board_clock`; load average {data['load_average_before'][0]:.1f} before, "
        f"{data['load_average_after'][0]:.1f} after). A build for a board that names no clock "
        f"asks for the default: the slowest build on a board ({slowest['network']}, "
        f"{slowest['fmax_mhz']:.1f} MHz on the ULX3S-85F, speed grade 6) scaled by the MLP's "
        f"Fmax from grade to grade, less {data['margin']:.0%}, rounded down to 5 MHz:",
        "",
        "| speed grade | MLP's Fmax (out of context) | default clock |",
        "|---:|---:|---:|",
        *rows,
    ]


def main() -> int:
    from benchmarks.first_hour import publish

    data = measure()
    return publish(data, section(data), RESULT, HEADING)


if __name__ == "__main__":
    sys.exit(main())
