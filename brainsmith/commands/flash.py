"""``brainsmith flash BUILD_DIR``: a build's bitstream (``BUILD_DIR/bitstream/<board>.bit``,
described by ``BUILD_DIR/bitstream/report.json`` from ``brainsmith bitstream``, else by the
``bitstream`` section of report.json from ``brainsmith build --bitstream``) loaded onto its board with openFPGALoader
(``brainsmith.hardware.board.flash``), once the folder passed the gate and the file is the one the
report's SHA-256 names (``brainsmith.intake.bitstream``). openFPGALoader loads a private copy
of exactly the bytes that were hashed: a file swapped in the build folder meanwhile is not
loaded.
"""

from __future__ import annotations

import hashlib
import os
import shlex

from brainsmith.hardware.board.flash import FlashError, load, loader_command
from brainsmith.intake.bitstream import build_bitstream
from brainsmith.intake.build_folder import FolderError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from brainsmith.files import Json


def flash_build_folder(
    folder: str, *, to_flash: bool = False, cable: str | None = None, dry_run: bool = False
) -> Json:
    """Load ``folder``'s bitstream onto its board (SRAM, or flash with ``to_flash``); with
    ``dry_run`` only the command. Returns the command, the bitstream, its board and SHA-256,
    ``to_flash`` and what openFPGALoader printed (empty in a dry run). FolderError (``exit_code`` 2: no usable bitstream, no
    openFPGALoader; 1: openFPGALoader failed)."""
    board, bit, checked = build_bitstream(folder)
    digest = hashlib.sha256(checked).hexdigest()
    try:
        command = loader_command(board, bit, to_flash=to_flash, cable=cable)
        printed = "" if dry_run else _load_copy(command, checked)
    except FlashError as exc:
        raise FolderError(exc.reason, exc.hint, exc.exit_code) from None
    return {"command": command, "bitstream": bit, "board": board, "sha256": digest,
            "to_flash": to_flash, "printed": printed}  # fmt: skip


def _load_copy(command: list[str], checked: bytes) -> str:
    """``command`` run on a private copy of the ``checked`` bytes (its last word, the .bit,
    replaced); what it printed."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="brainsmith-flash-") as private:  # 0700
        copy = os.path.join(private, os.path.basename(command[-1]))
        with open(copy, "xb") as handle:
            handle.write(checked)
        try:
            return load([*command[:-1], copy])
        except FlashError as exc:  # say the build's file, not the copy that is gone
            shown = shlex.quote(command[-1])
            raise FlashError(exc.reason.replace(shlex.quote(copy), shown), exc.hint,
                             exc.exit_code) from None  # fmt: skip


__all__ = ["build_bitstream", "flash_build_folder"]
