"""A finished build's bitstream, as a command opens it: ``BUILD_DIR/bitstream/<board>.bit``,
described by ``BUILD_DIR/bitstream/report.json`` (``brainsmith bitstream``'s) or else by
report.json's ``bitstream`` section (``brainsmith build --bitstream``), once the folder passed
the gate and the file is the one the report's SHA-256 names. ``brainsmith flash`` loads it and
``brainsmith export`` copies it.
"""

from __future__ import annotations

import hashlib
import os
import stat

from brainsmith.files import DamagedFile, read_json
from brainsmith.hardware.board.boards import BOARDS
from brainsmith.intake.build_folder import FolderError
from brainsmith.intake.gate import UntrustedFolder, open_build_folder

TYPE_CHECKING = False
if TYPE_CHECKING:
    from brainsmith.files import Json
    from brainsmith.intake.gate import BuildFolder

RESULT = os.path.join("bitstream", "report.json")
MAX_BITSTREAM_BYTES = 64 * 2**20  # the largest Lattice board part's is about 2.5 MB


def build_bitstream(folder: str) -> tuple[str, str, bytes]:
    """(board, absolute path of the .bit, its bytes, whose SHA-256 the report names) of
    ``folder``'s bitstream; FolderError (exit 2) when the folder fails the gate, has none, or
    its .bit is not the one made."""
    root = os.path.abspath(folder)
    data, path, built_for = _bitstream_record(folder, root)
    board, digest = data.get("board"), data.get("sha256")
    if board == "" and isinstance(data.get("part"), str):  # a Nexus part's, no board
        raise FolderError(
            f"the bitstream {data.get('bitstream')} is for the part {data['part']} alone, on "
            f"pins of brainsmith's choosing ({str(data.get('placed', '')).split(';')[0]}), not "
            "for a board "
            "brainsmith knows, whose loader and pins it would use",
            f"load it with your board's own tool, e.g. openFPGALoader -c CABLE "
            f"{os.path.join(folder, str(data.get('bitstream')))}",
        )
    if not isinstance(board, str) or board not in BOARDS:  # also keeps the path's name plain
        remake = f"make it again: brainsmith bitstream {folder} --board {built_for}"
        raise FolderError(f"{path} names no board brainsmith knows ({board!r})", remake)
    remake = f"make it again: brainsmith bitstream {folder} --board {board}"
    if not isinstance(digest, str) or len(digest) != 64:
        raise FolderError(f"{path} names no SHA-256 of the bitstream", remake)
    bit = os.path.join(root, "bitstream", f"{board}.bit")
    checked = _bitstream_bytes(bit, root, remake)
    found = hashlib.sha256(checked).hexdigest()
    if found != digest.lower():
        raise FolderError(
            f"{bit} changed after it was made: its SHA-256 is {found}, {os.path.relpath(path, root)} says {digest}",
            remake,
        )
    return board, bit, checked


def bitstream_record(folder: str) -> Json:
    """What records ``folder``'s bitstream: ``brainsmith bitstream``'s report, else
    report.json's ``bitstream`` section; FolderError (exit 2) as ``build_bitstream``."""
    return _bitstream_record(folder, os.path.abspath(folder))[0]


def _opened(folder: str, root: str) -> BuildFolder:
    """``root`` through the gate (its report only); FolderError saying what it refused."""
    try:
        return open_build_folder(root, models=False)
    except FileNotFoundError:
        raise FolderError(
            f"{folder} is not a brainsmith build folder (no report.json)",
            "give the output folder of brainsmith build (its -o OUTDIR)",
        ) from None
    except (UntrustedFolder, DamagedFile) as exc:
        hint = getattr(exc, "hint", "") or "build it again"
        raise FolderError(getattr(exc, "reason", str(exc)), hint) from None


def _bitstream_record(folder: str, root: str) -> tuple[Json, str, str]:
    """(what records ``folder``'s bitstream, the file it is in, the board the build names):
    ``brainsmith bitstream``'s report, made after the build, else report.json's
    ``bitstream`` (``build --bitstream``)."""
    opened = _opened(folder, root)
    path = os.path.join(root, RESULT)
    built_for = opened.report.get("board") or "BOARD"
    section: object = opened.report.get("bitstream")
    if os.path.lexists(path):
        try:
            return read_json(path), path, built_for
        except (DamagedFile, OSError) as exc:
            remake = f"make it again: brainsmith bitstream {folder} --board {built_for}"
            raise FolderError(f"the bitstream's report cannot be read: {exc}", remake) from None
    if isinstance(section, dict):
        return section, os.path.join(root, "report.json"), built_for
    raise FolderError(
        f"the build in {folder} has no bitstream (no {RESULT}, no bitstream in its report.json)",
        f"brainsmith bitstream {folder} --board {built_for}, or build with --board "
        f"{built_for} --bitstream",
    )


def _bitstream_bytes(bit: str, root: str, remake: str) -> bytes:
    """The bytes of ``bit``: a regular file inside ``root`` itself, not a link, of at most
    ``MAX_BITSTREAM_BYTES``."""
    try:
        status = os.lstat(bit)
    except OSError:
        raise FolderError(f"{bit} is missing", remake) from None
    real, home = os.path.realpath(bit), os.path.realpath(root)
    if not stat.S_ISREG(status.st_mode) or os.path.commonpath([real, home]) != home:
        raise FolderError(f"{bit} is not a regular file in the build folder", remake)
    with os.fdopen(os.open(bit, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK), "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise FolderError(f"{bit} is not a regular file in the build folder", remake)
        data = handle.read(MAX_BITSTREAM_BYTES + 1)
    if len(data) > MAX_BITSTREAM_BYTES:
        raise FolderError(f"{bit} is over {MAX_BITSTREAM_BYTES:,} bytes, not a bitstream", remake)
    return data


__all__ = ["MAX_BITSTREAM_BYTES", "RESULT", "bitstream_record", "build_bitstream"]
