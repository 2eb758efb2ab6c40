"""A bitstream loaded onto a board with openFPGALoader: into the FPGA's SRAM (lost at power
off) or written to its configuration flash. The board's name is openFPGALoader's
(``brainsmith.hardware.board.boards.LOADER_BOARDS``)."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess

from brainsmith.errors import BrainsmithError
from brainsmith.hardware.board.boards import BOARDS, LOADER_BOARDS
from brainsmith.hardware.processes import TooMuchOutput, run_bounded

LOADER = "openFPGALoader"
INSTALL_HINT = (
    "install openFPGALoader: apt-get install openfpgaloader (Debian, Ubuntu), or a release "
    "from https://github.com/trabucayre/openFPGALoader/releases, put on the PATH"
)
TIMEOUT_S = 600.0  # writing an 85F's flash takes minutes over the ULX3S's FT231X
OUTPUT_LIMIT = 8 * 2**20  # its progress bars redraw one line
SHOWN_LINES = 12
CABLE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}")
# a family's bitstream format as openFPGALoader names it (``--file-type``; none: read from
# the file's ``.bit``): Apycula's text bitstream, icepack's binary one
FILE_TYPES = {"Gowin": "fs", "iCE40": "bin"}
# families whose boards openFPGALoader loads through their configuration flash only (it
# writes an iCE40's SPI flash directly, the FPGA held in reset)
FLASH_ONLY = ("iCE40",)


class FlashError(BrainsmithError):
    """A bitstream that cannot be loaded: ``reason``, ``hint``, ``exit_code`` (2: it cannot
    start, 1: openFPGALoader failed)."""

    def __init__(self, reason: str, hint: str = "", exit_code: int = 2) -> None:
        super().__init__(reason)
        self.reason, self.hint, self.exit_code = reason, hint, exit_code


def loaders() -> str:
    """Each board openFPGALoader loads, with its name there, for a help text: "ulx3s-85f
    (ulx3s), ..., icebreaker (ice40_generic: --flash only)"."""
    return ", ".join(
        f"{board} ({name}" + (": --flash only)" if BOARDS[board][0] in FLASH_ONLY else ")")
        for board, name in LOADER_BOARDS.items()
    )


def loader_board(board: str) -> str:
    """openFPGALoader's name for brainsmith's ``board``; FlashError for one it has none for."""
    if board in LOADER_BOARDS:
        return LOADER_BOARDS[board]
    known = ", ".join(LOADER_BOARDS)
    if board in BOARDS:
        raise FlashError(
            f"openFPGALoader's board list has no {board}, so brainsmith does not load it "
            f"(it loads {known})",
            "run openFPGALoader by hand: openFPGALoader --cable CABLE BUILD_DIR/bitstream/"
            f"{board}.bit (openFPGALoader --list-cables names them; -f writes the flash)",
        )
    raise FlashError(f"{board!r} is not a board brainsmith loads ({known})", "build for ulx3s-85f")


def loader_command(
    board: str, bit: str, *, to_flash: bool = False, cable: str | None = None, program: str = LOADER
) -> list[str]:
    """openFPGALoader's command loading ``bit`` onto ``board`` (brainsmith's name), into its
    SRAM or (``to_flash``) its configuration flash, through ``cable`` or the board's own."""
    command = [program, "-b", loader_board(board)]
    family = BOARDS[board][0]
    if family in FLASH_ONLY and not to_flash:
        raise FlashError(
            f"openFPGALoader loads an {family} board such as {board} through its configuration "
            "flash only (it writes the SPI flash the FPGA boots from)",
            "write it to the flash: brainsmith flash BUILD_DIR --flash",
        )
    if family in FILE_TYPES:
        command += ["--file-type", FILE_TYPES[family]]
    if cable is not None:
        if not CABLE.fullmatch(cable):
            raise FlashError(
                f"--cable {cable!r} is not a cable name",
                "openFPGALoader --list-cables names them (ft2232, ft231X, digilent...)",
            )
        command += ["-c", cable]
    if to_flash:
        command.append("-f")
    return [*command, bit]


def shown(command: list[str]) -> str:
    """``command`` as one shell line."""
    return shlex.join(command)


def load(command: list[str], timeout: float = TIMEOUT_S) -> str:
    """Run ``command`` (from ``loader_command``, its program found on the PATH); what it
    printed. FlashError: no openFPGALoader (exit 2), it failed or ran past ``timeout`` (exit 1,
    its last lines shown). An interrupt stops it (``run_bounded`` kills it on the way out)."""
    program = shutil.which(command[0])
    if program is None:
        raise FlashError(f"{command[0]} is not installed (not on the PATH)", INSTALL_HINT)
    try:
        done = run_bounded([program, *command[1:]], cwd=".", timeout=timeout, limit=OUTPUT_LIMIT)
    except subprocess.TimeoutExpired:
        raise FlashError(
            f"{command[0]} ran longer than {timeout:.0f} s and was stopped: {shown(command)}",
            "check the board's USB cable and power, then run it again",
            exit_code=1,
        ) from None
    except TooMuchOutput as exc:
        raise FlashError(f"{command[0]} {exc}: {shown(command)}", exit_code=1) from None
    except OSError as exc:
        raise FlashError(f"{command[0]} cannot be run: {exc}", INSTALL_HINT) from None
    printed = done.stdout + done.stderr
    if done.returncode != 0:
        raise FlashError(
            f"{command[0]} failed (exit {done.returncode}): {shown(command)}\n{tail(printed)}",
            "check that the board is plugged in and powered (openFPGALoader --detect -b "
            f"{command[2]}); on Linux its USB device needs a udev rule (openFPGALoader's "
            "99-openfpgaloader.rules)",
            exit_code=1,
        )
    return printed


def tail(printed: str, lines: int = SHOWN_LINES) -> str:
    """The last ``lines`` lines ``printed`` (a progress bar's redraws split at ``\\r``)."""
    kept = [line.strip() for line in re.split(r"[\r\n]+", printed) if line.strip()]
    return "\n".join(f"  {line}" for line in kept[-lines:])


__all__ = ["INSTALL_HINT", "LOADER", "FlashError", "load", "loader_board", "loader_command"]
