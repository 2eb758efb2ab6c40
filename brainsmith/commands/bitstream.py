"""``brainsmith bitstream BUILD_DIR --board BOARD``: a whole all-RTL build made into a board's
bitstream behind the host link (``brainsmith.hardware.place_route.bitstream``), at the build's own
clock or the one asked for (``brainsmith.hardware.place_route.board_run``, which ``build.bitstream``
uses too). The result goes to BUILD_DIR/bitstream/report.json (written whole or not at all),
the bitstream to BUILD_DIR/bitstream/<board>.bit, the tools' run folder to
BUILD_DIR/bitstream/run/.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable

from brainsmith.commands.place_route import placeable_build
from brainsmith.commands.rtl_verification import FolderError
from brainsmith.files import write_text
from brainsmith.hardware.board.boards import BoardError, board
from brainsmith.hardware.place_route.board_run import BoardRunError, bitstream_of_build

TYPE_CHECKING = False
if TYPE_CHECKING:
    from brainsmith.files import Json

RESULT = os.path.join("bitstream", "report.json")
WORKDIR = os.path.join("bitstream", "run")


def bitstream_build_folder(
    folder: str,
    board_name: str,
    mhz: float | None = None,
    *,
    note: Callable[[str], None] | None = None,
) -> Json:
    """Make ``folder``'s stitched accelerator into a bitstream for ``board_name`` at ``mhz``
    (the build's clock when None); returns what it wrote to ``folder``/bitstream/report.json.
    FolderError (``reason``, ``hint``) for an unknown board, a clock the PLL cannot make, a
    folder that fails the gate or has no stitched accelerator, a missing tool, or a failed
    run (its log named)."""
    try:
        target = board(board_name)
    except BoardError as exc:
        raise FolderError(str(exc), exc.hint or "--board ulx3s-85f") from None
    report, model, clock_ns = placeable_build(folder, "make a bitstream of")
    try:
        data = bitstream_of_build(
            folder, str(report.get("output_dir") or ""), model, target,
            mhz or 1000.0 / clock_ns, os.path.join(folder, WORKDIR), note,
        )  # fmt: skip
    except BoardRunError as exc:
        raise FolderError(str(exc), exc.hint, exit_code=1 if exc.failed else 2) from exc
    os.makedirs(os.path.dirname(os.path.join(folder, RESULT)), exist_ok=True)
    write_text(os.path.join(folder, RESULT), json.dumps(data, indent=2) + "\n")
    return data
