"""The host side of ``brainsmith_host_link`` (``rtl/host_link.sv``): frames over a UART.

Both directions send ``SYNC 0xB5 | TYPE | SEQ | LEN (2 B LE) | PAYLOAD | CRC (2 B LE)``, the
CRC-16/CCITT-FALSE of TYPE, SEQ, LEN and PAYLOAD; a reply echoes its request's SEQ. The
transport is any object with ``write(bytes)`` and ``read(n) -> bytes`` that returns fewer than
``n`` bytes when it times out (a ``serial.Serial`` with a ``timeout``, for one): nothing here
imports pyserial.

BENCH runs one frame N times back to back on the chip and answers with the last frame's
outputs, the cycles the N frames took by the link's own counter and a CRC-32 (``zlib.crc32``)
of every output word, so frames per second are measured by the design itself
(``Link.bench``).

The link keeps one request while it answers another, so ``Link.infer_many`` keeps two
outstanding; the transport's read timeout must cover a request going out and its reply
coming back. A frame with no byte for ``TIMEOUT_BYTES`` byte times is dropped with error 4, so
a host that lost bytes of a frame reads that error before it sends the next one.
"""

from __future__ import annotations

import time
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from importlib.resources import files as package_files
from typing import TYPE_CHECKING, Protocol

from brainsmith.errors import BrainsmithError

SYNC = 0xB5
IDENTIFY, INFER, BENCH = 0x01, 0x02, 0x03
IDENTITY, RESULT, BENCHED, ERROR = 0x81, 0x82, 0x83, 0xEE
VERSION = 2
MAX_BENCH_FRAMES = 2**32 - 1  # BENCH's N: 4 bytes
MAGIC = b"BSMH"
TIMEOUT_BYTES = 1024  # host_link.sv's TIMEOUT_BYTES
ERRORS = {1: "bad CRC", 2: "wrong length", 3: "unknown type", 4: "byte timeout", 5: "busy",
          6: "a BENCH of no frames"}  # fmt: skip
NAMES = {IDENTIFY: "IDENTIFY", INFER: "INFER", BENCH: "BENCH", IDENTITY: "IDENTIFY reply",
         RESULT: "INFER reply", BENCHED: "BENCH reply", ERROR: "error"}  # fmt: skip
HEADER = 5  # SYNC, TYPE, SEQ, LEN
# the link's RTL in brainsmith/hardware/board/rtl/, in the order every tool reads it
RTL = ("crc16.sv", "host_link.sv", "uart_rx.sv", "uart_tx.sv")

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable


class LinkError(BrainsmithError, RuntimeError):
    """The link answered with an error, something other than was expected, or nothing."""


class OtherVersion(LinkError):
    """The board's link speaks another protocol version than this host side: its bitstream
    was made by another brainsmith."""


def rtl_files() -> list[Traversable]:
    """The link's RTL files, in ``RTL``'s order, for Yosys, Verilator and ``export``
    alike; FileNotFoundError naming the first one not installed."""
    folder = package_files("brainsmith.hardware.board").joinpath("rtl")
    found = [folder.joinpath(name) for name in RTL]
    missing = next((entry for entry in found if not entry.is_file()), None)
    if missing is not None:
        raise FileNotFoundError(f"brainsmith's host link RTL ({missing}) is not installed")
    return found


class Transport(Protocol):
    def write(self, data: bytes, /) -> object: ...

    def read(self, size: int, /) -> bytes: ...


def crc16(data: bytes, crc: int = 0xFFFF) -> int:
    """CRC-16/CCITT-FALSE (poly 0x1021, init 0xFFFF, no reflection, no xorout)."""
    for byte in data:
        crc ^= byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021 if crc & 0x8000 else crc << 1) & 0xFFFF
    return crc


def encode(kind: int, seq: int, payload: bytes = b"") -> bytes:
    """One frame: SYNC, ``kind``, ``seq``, LEN, ``payload`` and the CRC."""
    if len(payload) > 0xFFFF:
        raise LinkError(f"a payload of {len(payload)} bytes does not fit LEN's 16 bits")
    body = bytes((kind & 0xFF, seq & 0xFF)) + len(payload).to_bytes(2, "little") + payload
    return bytes((SYNC,)) + body + crc16(body).to_bytes(2, "little")


@dataclass(frozen=True)
class Frame:
    kind: int
    seq: int
    payload: bytes


class Decoder:
    """Frames from a byte stream: bytes before a SYNC are skipped; a frame whose CRC does not
    match is dropped, as long as its LEN says, and raises ``LinkError``."""

    def __init__(self) -> None:
        self.buffer = bytearray()
        self.skipped = 0

    def needed(self) -> int:
        """Bytes still missing from the frame under way (at least 1)."""
        start = self.buffer.find(SYNC)
        if start < 0:
            return HEADER
        have = len(self.buffer) - start
        if have < HEADER:
            return HEADER - have
        length = int.from_bytes(self.buffer[start + 3 : start + 5], "little")
        return max(1, HEADER + length + 2 - have)

    def feed(self, data: bytes) -> list[Frame]:
        self.buffer += data
        frames = []
        while (start := self.buffer.find(SYNC)) >= 0 or self.buffer:
            if start < 0:
                start = len(self.buffer)
            self.skipped += start
            del self.buffer[:start]
            if len(self.buffer) < HEADER:
                break
            end = HEADER + int.from_bytes(self.buffer[3:5], "little") + 2
            if len(self.buffer) < end:
                break
            frame, self.buffer = bytes(self.buffer[:end]), self.buffer[end:]
            got, wanted = int.from_bytes(frame[-2:], "little"), crc16(frame[1:-2])
            if got != wanted:
                raise LinkError(
                    f"a frame with a bad CRC: expected 0x{wanted:04X}, got 0x{got:04X} "
                    f"({frame.hex(' ')})"
                )
            frames.append(Frame(frame[1], frame[2], frame[HEADER:-2]))
        return frames


def read_frame(
    transport: Transport, decoder: Decoder | None = None, deadline: float | None = None
) -> Frame:
    """The next frame from ``transport``, reading no byte beyond it; ``LinkError`` when the
    transport times out first (naming what did come back), no whole frame came within
    ``deadline`` seconds (a port that babbles or trickles: each read alone may succeed), or
    the CRC does not match."""
    decoder = decoder or Decoder()
    got = bytearray()
    end = None if deadline is None else time.monotonic() + deadline
    while True:
        data = transport.read(decoder.needed())
        if not data:
            raise LinkError(f"timed out waiting for a frame; got {len(got)} bytes: {_shown(got)}")
        got += data
        frames = decoder.feed(data)
        if frames:
            return frames[0]
        if end is not None and time.monotonic() > end:
            raise LinkError(
                f"no whole frame within {deadline:g} s: {len(got):,} bytes came, {decoder.skipped:,}"
                f" of them before a SYNC byte; the port babbles or trickles ({_shown(got)})"
            )


def _shown(got: bytes | bytearray, limit: int = 64) -> str:
    """The first ``limit`` bytes of ``got`` in hex (``...`` when there are more)."""
    return bytes(got[:limit]).hex(" ") + (" ..." if len(got) > limit else "")


def expect(frame: Frame, kind: int, seq: int) -> bytes:
    """The payload of ``frame``, a ``kind`` reply to request ``seq``; else ``LinkError``."""
    if frame.kind == ERROR and frame.payload:
        code = frame.payload[0]
        raise LinkError(
            f"expected the {NAMES.get(kind, hex(kind))} to request {seq}, got error {code} "
            f"({ERRORS.get(code, 'unknown')}) to request {frame.seq}"
        )
    if (frame.kind, frame.seq) != (kind, seq):
        raise LinkError(
            f"expected the {NAMES.get(kind, hex(kind))} to request {seq}, got "
            f"{NAMES.get(frame.kind, hex(frame.kind))} to request {frame.seq}"
        )
    return frame.payload


def word_bytes(bits: int) -> int:
    return (bits + 7) // 8


def frame_bytes(in_bits: int, out_bits: int, in_words: int, out_words: int) -> tuple[int, int]:
    """(an INFER request's bytes, its reply's) on the wire, header and CRC included."""
    request = HEADER + in_words * word_bytes(in_bits) + 2
    return request, HEADER + out_words * word_bytes(out_bits) + 4 + 2


def sustained_fps(baud: int, request: int, reply: int) -> float:
    """Frames a second a UART at ``baud`` (10 bits a byte) carries end to end with two
    requests outstanding: full duplex, so the longer of request and reply bounds it."""
    return baud / (10 * max(request, reply)) if baud else 0.0


def words_to_bytes(words: Sequence[int], bits: int) -> bytes:
    """``words`` of ``bits`` each, ``word_bytes(bits)`` bytes apiece, little-endian."""
    size = word_bytes(bits)
    for word in words:
        if not 0 <= word < 1 << bits:
            raise LinkError(f"word {word} does not fit {bits} bits")
    return b"".join(word.to_bytes(size, "little") for word in words)


def bytes_to_words(data: bytes, bits: int) -> list[int]:
    """The words ``words_to_bytes`` made ``data`` of (bits beyond ``bits`` are dropped)."""
    size = word_bytes(bits)
    if len(data) % size:
        raise LinkError(f"{len(data)} bytes are not a whole number of {size}-byte words")
    mask = (1 << bits) - 1
    return [int.from_bytes(data[i : i + size], "little") & mask for i in range(0, len(data), size)]


@dataclass(frozen=True)
class Identity:
    """What IDENTIFY returns: the accelerator's streams and the link's clocking."""

    version: int
    in_bits: int
    out_bits: int
    in_words: int
    out_words: int
    clks_per_bit: int
    design_hash: str  # hex digest

    @classmethod
    def parse(cls, payload: bytes) -> Identity:
        if len(payload) != 53 or payload[:4] != MAGIC:
            raise LinkError(
                f"expected a 53-byte IDENTIFY reply starting {MAGIC!r}, got {payload.hex(' ')}"
            )
        in_bits, out_bits, in_words, out_words, clks_per_bit = (
            int.from_bytes(payload[a:b], "little")
            for a, b in ((5, 7), (7, 9), (9, 13), (13, 17), (17, 21))
        )
        return cls(payload[4], in_bits, out_bits, in_words, out_words, clks_per_bit,
                   payload[21:].hex())  # fmt: skip

    def request(self, words: Sequence[int]) -> bytes:
        """An INFER payload of one frame, ``words`` of ``in_bits``."""
        if len(words) != self.in_words:
            raise LinkError(f"expected {self.in_words} input words, got {len(words)}")
        return words_to_bytes(words, self.in_bits)

    def result(self, payload: bytes) -> tuple[list[int], int]:
        """(output words, cycles) of an INFER reply's payload."""
        size = self.out_words * word_bytes(self.out_bits) + 4
        if len(payload) != size:
            raise LinkError(f"expected a {size}-byte INFER reply, got {len(payload)} bytes")
        return bytes_to_words(payload[:-4], self.out_bits), int.from_bytes(payload[-4:], "little")


@dataclass(frozen=True)
class Benched:
    """What a BENCH reply says: the last frame's output words, the cycles from the first
    frame's first input word to the last frame's last output word (the link's counter), the
    CRC-32 of every output word of the ``frames`` frames asked."""

    outputs: list[int]
    cycles: int
    crc32: int
    frames: int

    @classmethod
    def parse(cls, identity: Identity, payload: bytes, frames: int) -> Benched:
        data = identity.out_words * word_bytes(identity.out_bits)
        if len(payload) != data + 12:
            raise LinkError(f"expected a {data + 12}-byte BENCH reply, got {len(payload)} bytes")
        tail = payload[data:]
        return cls(bytes_to_words(payload[:data], identity.out_bits),
                   int.from_bytes(tail[:8], "little"), int.from_bytes(tail[8:], "little"),
                   frames)  # fmt: skip


def crc32_of_words(words: Sequence[int], bits: int, times: int = 1) -> int:
    """The CRC-32 BENCH folds over ``words`` (each ``word_bytes(bits)`` bytes, LE) repeated
    ``times`` times: ``zlib.crc32`` of their bytes, in steps logarithmic in ``times``."""
    data = words_to_bytes(words, bits)
    crc, block, size = 0, zlib.crc32(data), len(data)
    while times:
        if times & 1:
            crc = crc32_combine(crc, block, size)
        times >>= 1
        if times:
            block, size = crc32_combine(block, block, size), 2 * size
    return crc


def crc32_combine(first: int, second: int, second_bytes: int) -> int:
    """The CRC-32 of two byte strings one after the other, from each one's CRC-32 and the
    second's length (zlib's ``crc32_combine``: the first CRC carried through
    ``second_bytes`` zero bytes by squared GF(2) operators, then the second's added)."""
    odd = [0xEDB88320] + [1 << n for n in range(31)]  # one zero bit
    even = _squared(odd)  # two
    odd = _squared(even)  # four
    while second_bytes:
        even = _squared(odd)  # the next power of two zero bytes: one, two, four...
        if second_bytes & 1:
            first = _times(even, first)
        second_bytes >>= 1
        if not second_bytes:
            break
        odd = _squared(even)
        if second_bytes & 1:
            first = _times(odd, first)
        second_bytes >>= 1
    return first ^ second


def _times(matrix: list[int], vector: int) -> int:
    total, row = 0, 0
    while vector:
        if vector & 1:
            total ^= matrix[row]
        vector, row = vector >> 1, row + 1
    return total


def _squared(matrix: list[int]) -> list[int]:
    return [_times(matrix, matrix[n]) for n in range(32)]


class Link:
    """Requests over ``transport``, numbered by SEQ; ``identify`` first, then ``infer``. Each
    reply must come whole within ``deadline`` seconds (None: as long as bytes keep coming)."""

    def __init__(self, transport: Transport, deadline: float | None = None) -> None:
        self.transport = transport
        self.deadline = deadline
        self.decoder = Decoder()
        self.seq = 0
        self.identity: Identity | None = None

    def send(self, kind: int, payload: bytes = b"") -> int:
        self.seq = (self.seq + 1) & 0xFF
        self.transport.write(encode(kind, self.seq, payload))
        return self.seq

    def reply(self, kind: int, seq: int) -> bytes:
        return expect(read_frame(self.transport, self.decoder, self.deadline), kind, seq)

    def identify(self) -> Identity:
        self.identity = Identity.parse(self.reply(IDENTITY, self.send(IDENTIFY)))
        if self.identity.version != VERSION:
            raise OtherVersion(
                f"the board's link speaks protocol version {self.identity.version}, this "
                f"brainsmith version {VERSION}: its bitstream was made by another brainsmith"
            )
        return self.identity

    def infer(self, words: Sequence[int]) -> tuple[list[int], int]:
        """(output words, cycles) of one frame."""
        return self.infer_many([words])[0]

    def infer_many(self, frames: Iterable[Sequence[int]]) -> list[tuple[list[int], int]]:
        """(output words, cycles) of each frame, two requests outstanding at a time."""
        identity = self.identity or self.identify()
        results: list[tuple[list[int], int]] = []
        waiting: list[int] = []
        for words in frames:
            if len(waiting) == 2:
                results.append(identity.result(self.reply(RESULT, waiting.pop(0))))
            waiting.append(self.send(INFER, identity.request(words)))
        for seq in waiting:
            results.append(identity.result(self.reply(RESULT, seq)))
        return results

    def bench_request(self, words: Sequence[int], frames: int) -> int:
        """Send a BENCH of ``words`` (one frame) run ``frames`` times; its SEQ."""
        identity = self.identity or self.identify()
        if not 1 <= frames <= MAX_BENCH_FRAMES:
            raise LinkError(f"a BENCH runs 1 to {MAX_BENCH_FRAMES:,} frames, not {frames:,}")
        return self.send(BENCH, frames.to_bytes(4, "little") + identity.request(words))

    def bench(self, words: Sequence[int], frames: int) -> Benched:
        """``words`` (one frame) run ``frames`` times back to back on the chip."""
        seq = self.bench_request(words, frames)
        assert self.identity is not None
        return Benched.parse(self.identity, self.reply(BENCHED, seq), frames)
