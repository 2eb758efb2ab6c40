"""A routed design packed into a bitstream by its family's packer, and read back.

nextpnr also writes the routed design the packer reads (``Packing.routed``: nextpnr-nexus'
FASM, nextpnr-ice40's ASC); the packer (``prjoxide pack``, ``icepack``, from the family's
yowasp package) writes the bitstream under a temporary name; its reader (``prjoxide
unpack``, ``iceunpack``) reads it back, and the device the read-back names must be the
part's, before the bitstream is renamed into place: a stopped or failed run leaves no
bitstream, or only a whole one. ``place_route`` caches it beside its result
(``<cache>/place_route/<key>.bit``).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

from brainsmith.hardware.place_route.errors import PlaceRouteError
from brainsmith.hardware.plan import Stages, remove, yowasp_tool
from brainsmith.hardware.synthesis.layer_sources import MOUNT
from brainsmith.hardware.synthesis.yosys import crashed, first_error, run_mounted

PARTIAL = "packed.bit.partial"
UNPACKED = "unpacked.txt"
MAX_BITSTREAM_BYTES = 64 * 2**20  # a packed bitstream read back or from the cache


@dataclass(frozen=True)
class Packing:
    """How a family packs: nextpnr writes ``routed`` with ``argument``; ``tool`` of the
    family's yowasp package packs it (``tool pack ROUTED BIT``) and reads the bitstream back
    (``tool unpack BIT TEXT``), or ``packer`` and ``reader`` do (``icepack ROUTED BIT``,
    ``iceunpack BIT TEXT``); a bitstream starts with ``header``; ``device`` reads the device
    a read-back text names ("" when none), which ``part_device`` names of a part (by
    default: a part's name starts with its device's, ``LIFCL-40-...``)."""

    routed: str  # "design.fasm"
    argument: str  # "--fasm"
    tool: str  # "prjoxide"
    header: bytes
    device: Callable[[str], str]
    # the packer's and the reader's words before their two files: (yowasp tool, arguments...)
    packer: tuple[str, ...] = ()  # none: (tool, "pack")
    reader: tuple[str, ...] = ()  # none: (tool, "unpack")
    part_device: Callable[[str], str] | None = None

    def _read_as(self, device: str, part: str) -> bool:
        """Whether a read-back naming ``device`` is one of ``part``."""
        if self.part_device is not None:
            return bool(device) and device == self.part_device(part)
        return bool(device) and part.upper().startswith(f"{device.upper()}-")

    def command(
        self, package: str, words: tuple[str, ...], files: tuple[str, str], part: str
    ) -> list[str]:
        """The command running ``words`` (a tool of the yowasp ``package`` and its arguments)
        on ``files`` (source, output: names in the run folder) for ``part``."""
        name, *arguments = words
        tool = yowasp_tool(package.replace("-", "_"), name)
        return [*tool, *arguments, *(f"{MOUNT}/{file}" for file in files)]

    def read_device(self, workdir: str) -> str:
        """The device the read-back in ``workdir`` names ("" when none)."""
        with open(os.path.join(workdir, UNPACKED), errors="replace") as handle:
            return self.device(handle.read(4096))

    def reads_as_bitstream(self, content: bytes) -> bool:
        """Whether ``content`` starts as the family's bitstreams do, within the size one has."""
        return content.startswith(self.header) and len(content) <= MAX_BITSTREAM_BYTES

    def nextpnr_arguments(self) -> list[str]:
        return [self.argument, f"{MOUNT}/{self.routed}"]

    def pack(
        self,
        package: str,
        stages: Stages,
        workdir: str,
        part: str,
        timeout: float,
        tools: dict[str, str] | None = None,
    ) -> bytes:
        """The bitstream of ``workdir``'s routed design, packed and read back as one for
        ``part`` (left in ``workdir`` under a temporary name); PlaceRouteError with the
        packer's first error (its log kept) or when the read-back is not ``part``'s. A reader
        whose WebAssembly build crashes on a bitstream its packer wrote whole (gmunpack does
        on some) leaves it unread: ``tools["read_back"]`` says so, and its header is checked."""
        runs = (
            ("pack", self.packer or (self.tool, "pack"), self.routed, PARTIAL),
            ("unpack", self.reader or (self.tool, "unpack"), PARTIAL, UNPACKED),
        )
        for verb, words, source, output in runs:
            named = " ".join(word for word in words if not word.startswith("-"))
            command = self.command(package, words, (source, output), part)
            log_name = f"{named.replace(' ', '-')}.log"
            code, log = stages.run(verb, run_mounted, command, workdir, log_name, timeout)
            if verb == "unpack" and tools is not None and code not in (0, None) and crashed(log):
                tools["read_back"] = (
                    f"{named} crashed reading the bitstream back (a fault of the tool): its "
                    "header checked, its device not"
                )
                break
            if code != 0 or not os.path.isfile(os.path.join(workdir, output)):
                reason = f"took longer than {timeout:.0f} s" if code is None else _error(log)
                remove(os.path.join(workdir, PARTIAL))  # what a failed packer began
                raise PlaceRouteError(f"{named}: {reason}", f"see {log}")
        with open(os.path.join(workdir, PARTIAL), "rb") as handle:
            content = handle.read(MAX_BITSTREAM_BYTES + 1)
        if not self.reads_as_bitstream(content):
            raise PlaceRouteError(
                f"{self.tool} wrote no bitstream it reads", "report this as a bug"
            )
        if tools is not None and "read_back" in tools:
            return content
        device = self.read_device(workdir)
        if not self._read_as(device, part):
            reader = (self.reader or (self.tool,))[0]
            raise PlaceRouteError(
                f"{reader} reads the bitstream as {device or 'no device'}, not {part}",
                "report this as a bug",
            )
        return content


def _error(log: str) -> str:
    """A packer's failure as its log says it: a Rust panic's place and message (prjoxide
    panics on FASM it cannot place), else the first error line."""
    with open(log, errors="replace") as handle:
        lines = [line.strip() for line in handle if line.strip()]
    for at, line in enumerate(lines):
        if " panicked at " in line:
            return " ".join(lines[at : at + 2])
    return first_error(log)


__all__ = ["MAX_BITSTREAM_BYTES", "Packing"]
