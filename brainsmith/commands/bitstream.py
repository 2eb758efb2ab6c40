"""``brainsmith bitstream BUILD_DIR --board BOARD``: a whole all-RTL build made into a board's
bitstream behind the host link (``brainsmith.place_route.bitstream``), at the build's own
clock or the one asked for. The result goes to BUILD_DIR/bitstream/report.json (written whole
or not at all); the tools' run folder and the bitstream (``<board>.bit``) to
BUILD_DIR/bitstream/run/.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

from brainsmith.commands.place_route import placeable_build
from brainsmith.commands.rtl_verification import FolderError
from brainsmith.files import write_text

RESULT = os.path.join("bitstream", "report.json")
WORKDIR = os.path.join("bitstream", "run")


def bitstream_build_folder(
    folder: str,
    board_name: str,
    mhz: float | None = None,
    *,
    note: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Make ``folder``'s stitched accelerator into a bitstream for ``board_name`` at ``mhz``
    (the build's clock when None); returns what it wrote to ``folder``/bitstream/report.json.
    FolderError (``reason``, ``hint``) for an unknown board, a clock the PLL cannot make, a
    folder that fails the gate or has no stitched accelerator, a missing tool, or a failed
    run (its log named)."""
    from brainsmith.board.boards import BoardError, board
    from brainsmith.board.pll import PllError
    from brainsmith.board.top import TopError, frame_words
    from brainsmith.place_route.bitstream import BitstreamError, bitstream
    from brainsmith.place_route.ecp5 import NotUsable, PlaceRouteError, find_nextpnr
    from brainsmith.place_route.sources import stitched_design
    from brainsmith.synthesis import NotSynthesisable, YosysMissing, find_yosys

    try:
        target = board(board_name)
    except BoardError as exc:
        raise FolderError(str(exc), exc.hint or "--board ulx3s-85f") from None
    report, model, clock_ns = placeable_build(folder, "make a bitstream of")
    try:
        design = stitched_design(folder, str(report.get("output_dir") or ""))
        in_words, out_words = frame_words(model)
        if note is not None:
            note("starting Yosys and nextpnr (the first runs after installing take minutes)")
        yosys, nextpnr = find_yosys(), find_nextpnr()
        if note is not None:
            note(f"synthesising, placing and routing and packing for {target.name}")
        result = bitstream(
            design, target, mhz or 1000.0 / clock_ns, os.path.join(folder, WORKDIR), yosys,
            nextpnr, in_words=in_words, out_words=out_words, name=target.name,
        )  # fmt: skip
    except (PllError, TopError) as exc:
        raise FolderError(str(exc), exc.hint) from exc
    except (YosysMissing, NotUsable) as exc:
        raise FolderError(str(exc), exc.hint) from exc
    except (BitstreamError, PlaceRouteError) as exc:
        raise FolderError(str(exc), exc.hint, exit_code=1) from exc
    except NotSynthesisable as exc:  # MissingSources: the stitched design cannot be read
        raise FolderError(str(exc), "build the model again with --prefer rtl") from exc
    data = {"in_words": in_words, "out_words": out_words, **result.as_dict()}
    os.makedirs(os.path.dirname(os.path.join(folder, RESULT)), exist_ok=True)
    write_text(os.path.join(folder, RESULT), json.dumps(data, indent=2) + "\n")
    return data
