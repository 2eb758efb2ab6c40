"""Property tests of two parsers of untrusted input on the way to a board:

- the host link's frame reader (``link.read_frame``), reading real bytes from the near end of
  a socket pair whose far end a thread writes: whatever arrives, it returns a frame whose SYNC,
  LEN and CRC are those it was sent as, or raises ``LinkError``, within its deadline, and
  reads no byte beyond the frame;
- the ``bitstream`` record a build folder holds (``bitstream/report.json``, or report.json's
  ``bitstream`` section) as ``run`` (``driver.bitstream_figure``) and ``flash``
  (``commands.flash.build_bitstream``) read it back: any JSON document gives the figures or
  the bitstream, or the command's own error naming the file and the key.

Each test runs ``BRAINSMITH_FUZZ_EXAMPLES`` cases (200 by default; ``make fuzz`` runs 10,000).
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from brainsmith.commands.flash import build_bitstream
from brainsmith.errors import BrainsmithError
from brainsmith.hardware.board.boards import BOARDS
from brainsmith.hardware.board.driver import FIGURE_RANGES, bitstream_figure
from brainsmith.hardware.board.link import (
    HEADER,
    SYNC,
    Decoder,
    Frame,
    LinkError,
    encode,
    read_frame,
)
from brainsmith.hardware.board.streams import DriverError
from brainsmith.intake.build_folder import FolderError
from tests.support.fuzz import fuzz_settings

FUZZ = fuzz_settings(200)
pytestmark = pytest.mark.fuzz

SAFETY = 30.0  # a read that waits this long is a hang: it fails the test as socket.timeout

# -- the port ----------------------------------------------------------------------------------


@contextmanager
def port(data: bytes, *, forever: bool = False) -> Iterator[Any]:
    """A loopback port: the near end of a socket pair (``read``/``write`` as pyserial's), its far
    end sent ``data`` by a thread (over and over with ``forever``, until the near end closes)
    and then closed, so a read past the end gets ``b""`` at once, as a read that timed out."""
    near, far = socket.socketpair()
    near.settimeout(SAFETY)

    def send() -> None:
        try:
            far.sendall(data)
            while forever:
                far.sendall(data)
        except OSError:  # the near end closed
            pass
        finally:
            far.close()

    sender = threading.Thread(target=send, daemon=True)
    sender.start()
    transport = near.makefile("rwb", buffering=0)
    try:
        yield transport
    finally:
        transport.close()
        near.close()
        sender.join(timeout=SAFETY)
        assert not sender.is_alive()


def rest(transport: Any) -> bytes:
    """What is still to be read from ``transport``."""
    left = bytearray()
    while chunk := transport.read(65536):
        left += chunk
    return bytes(left)


def read(data: bytes, deadline: float | None) -> tuple[Frame | LinkError, bytes, float]:
    """(``read_frame``'s frame or ``LinkError``, the bytes it left unread, its seconds) for
    ``data`` arriving on a port."""
    with port(data) as transport:
        began = time.monotonic()
        try:
            outcome: Frame | LinkError = read_frame(transport, Decoder(), deadline)
        except LinkError as exc:
            outcome = exc
        seconds = time.monotonic() - began
        return outcome, rest(transport), seconds


def assert_well_formed(frame: Frame, consumed: bytes) -> None:
    """``consumed`` (what the reader took) is bytes before any SYNC, then ``frame`` exactly as
    ``encode`` writes it: its LEN the payload's, its CRC that of its body."""
    wire = encode(frame.kind, frame.seq, frame.payload)
    assert consumed.endswith(wire), (consumed.hex(" "), wire.hex(" "))
    assert SYNC not in consumed[: -len(wire)]
    assert int.from_bytes(wire[3:5], "little") == len(frame.payload)


# -- what ports send -----------------------------------------------------------------------------

BYTE = st.one_of(st.integers(0, 255), st.just(SYNC), st.sampled_from([0x00, 0xFF, 0x81, 0xEE]))
KINDS = st.sampled_from([0x01, 0x02, 0x81, 0x82, 0xEE]) | st.integers(0, 255)
FRAMES = st.builds(encode, KINDS, st.integers(0, 255), st.binary(max_size=64))


@st.composite
def damaged(draw: st.DrawFn) -> bytes:
    """A frame with one byte changed (SYNC, TYPE, SEQ, LEN, payload or CRC), cut short, or with
    another LEN (often more than follows)."""
    frame = bytearray(draw(FRAMES))
    how = draw(st.sampled_from(["byte", "cut", "len"]))
    if how == "byte":
        at = draw(st.integers(0, len(frame) - 1))
        frame[at] = draw(st.integers(0, 255))
    elif how == "cut":
        del frame[draw(st.integers(0, len(frame) - 1)) :]
    else:
        frame[3:5] = draw(st.integers(0, 0xFFFF)).to_bytes(2, "little")
    return bytes(frame)


PIECES = st.one_of(
    st.binary(max_size=32), st.lists(BYTE, max_size=16).map(bytes), FRAMES, damaged()
)
STREAMS = st.one_of(st.binary(max_size=512), st.lists(PIECES, max_size=6).map(b"".join))
NO_SYNC = st.binary(max_size=256).map(lambda data: data.replace(bytes((SYNC,)), b""))


# -- the frame reader ----------------------------------------------------------------------------


@FUZZ
@given(data=STREAMS, deadline=st.sampled_from([None, 0.0, 10.0]))
@example(data=b"", deadline=None)
@example(data=bytes((SYNC, 0x82, 1, 0xFF, 0xFF)), deadline=None)  # LEN 65,535, nothing follows
@example(data=bytes((SYNC,)) * 5 + b"\x00\x00", deadline=None)  # LEN 0x00B5: swallows the rest
def test_any_bytes_from_a_port_give_a_well_formed_frame_or_a_link_error(
    data: bytes, deadline: float | None
) -> None:
    outcome, unread, seconds = read(data, deadline)
    consumed = data[: len(data) - len(unread)]
    assert data.endswith(unread)
    if isinstance(outcome, Frame):
        assert_well_formed(outcome, consumed)
    else:
        said = str(outcome)
        assert said and "\n" not in said
        assert any(
            words in said for words in ("timed out waiting", "bad CRC", "no whole frame within")
        ), said
    assert seconds < SAFETY


@FUZZ
@given(pattern=STREAMS.filter(bool))
@example(pattern=b"\x00\x11")  # babbles, never a SYNC
@example(pattern=bytes((SYNC, 0x82, 1, 0xFF, 0xFF)))  # frames claiming 65,535 bytes
def test_a_port_that_never_stops_gives_a_frame_or_a_link_error_by_the_deadline(
    pattern: bytes,
) -> None:
    deadline = 0.01
    with port(pattern, forever=True) as transport:
        began = time.monotonic()
        try:
            frame = read_frame(transport, Decoder(), deadline)
        except LinkError as exc:
            assert "bad CRC" in str(exc) or f"no whole frame within {deadline:g} s" in str(exc)
        else:
            wire = encode(frame.kind, frame.seq, frame.payload)
            assert wire in pattern * (len(wire) // len(pattern) + 2)  # in the endless stream
        assert time.monotonic() - began < deadline + 5.0  # one read past it, on a loaded machine


@FUZZ
@given(garbage=NO_SYNC, first=FRAMES, second=FRAMES, after=st.binary(max_size=32))
def test_frames_after_bytes_without_a_sync_are_found_in_order_and_nothing_after_is_read(
    garbage: bytes, first: bytes, second: bytes, after: bytes
) -> None:
    """The reader skips whatever comes before a SYNC byte: the frames behind such bytes are
    found, one per call on one decoder (as ``Link`` reads its replies), and the bytes after
    the second stay in the port."""
    with port(garbage + first + second + after) as transport:
        decoder = Decoder()
        got = read_frame(transport, decoder)
        assert encode(got.kind, got.seq, got.payload) == first
        assert decoder.skipped == len(garbage)
        got = read_frame(transport, decoder)
        assert encode(got.kind, got.seq, got.payload) == second
        assert rest(transport) == after


@FUZZ
@given(frame=FRAMES, data=st.data(), second=FRAMES)
def test_a_frame_with_a_bad_crc_is_dropped_whole_and_the_next_is_found(
    frame: bytes, data: st.DataObject, second: bytes
) -> None:
    """A frame whose TYPE, SEQ, payload or CRC changed on the wire (its LEN intact) raises
    ``LinkError`` naming the bad CRC; the reader drops it whole, as long as its LEN says, and
    the next frame is read whole. (A changed SYNC or LEN is the first test's: a SYNC in the
    noise starts a frame whose LEN is believed; no property holds of what follows it.)"""
    changed = bytearray(frame)
    at = data.draw(st.sampled_from([1, 2, *range(HEADER, len(frame))]), label="at")
    changed[at] ^= data.draw(st.integers(1, 255), label="flip")  # CRC-16 sees any one byte
    with port(bytes(changed) + second) as transport:
        decoder = Decoder()
        with pytest.raises(LinkError, match="bad CRC"):
            read_frame(transport, decoder)
        got = read_frame(transport, decoder)
        assert encode(got.kind, got.seq, got.payload) == second
        assert rest(transport) == b""


@FUZZ
@given(
    kind=st.integers(-(2**16), 2**16),
    seq=st.integers(-(2**16), 2**16),
    payload=st.binary(max_size=2048),
)
@example(kind=0x82, seq=255, payload=bytes(0xFFFF))  # the longest LEN says
@example(kind=0x82, seq=1, payload=bytes(0x10000))  # one byte more: refused by encode
@example(kind=SYNC, seq=SYNC, payload=bytes((SYNC,)) * 300)  # SYNC bytes everywhere
def test_any_payload_round_trips_through_encode_and_the_port(
    kind: int, seq: int, payload: bytes
) -> None:
    try:
        wire = encode(kind, seq, payload)
    except LinkError as exc:
        assert len(payload) > 0xFFFF and "does not fit LEN" in str(exc)
        return
    assert len(wire) == HEADER + len(payload) + 2
    outcome, unread, _ = read(wire, None)
    assert outcome == Frame(kind & 0xFF, seq & 0xFF, payload) and unread == b""


# -- the bitstream's record ----------------------------------------------------------------------

BOARD = "ulx3s-85f"
BIT = b"\xff\x00 a bitstream " * 64
DIGEST = hashlib.sha256(BIT).hexdigest()
KEYS = ["baud", "clock_mhz", "board", "sha256", "bitstream", "fmax_mhz", ""]
ODD_NUMBERS = [10**400, -(10**400), 2**63, 2**64 + 1, 10**4000, 1e308, -1e308, 5e-324, -0.0,
               0, 1, 1199, 1200, 12_000_000, 12_000_001, 0.999, 1.0, 1000.0, 1000.5, 3_000_000,
               85.0, float("nan"), float("inf"), float("-inf")]  # fmt: skip
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(),
    st.sampled_from(ODD_NUMBERS),
    st.text(max_size=8),
    st.sampled_from([BOARD, DIGEST, DIGEST.upper(), "85", "3000000", "NaN", *BOARDS]),
)
JSON = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=12,
)
SECTIONS = st.fixed_dictionaries(
    {},
    optional={
        "baud": st.integers(1000, 13_000_000) | JSON,
        "clock_mhz": st.floats(0.5, 1001.0) | JSON,
        "board": st.sampled_from([BOARD, *BOARDS]) | JSON,
        "sha256": st.sampled_from([DIGEST, DIGEST.upper(), DIGEST[:63]]) | JSON,
        "bitstream": JSON,
    },
)
DOCUMENTS = st.one_of(JSON, SECTIONS)
ODD_TEXTS = st.sampled_from(
    ['{"baud": 1e400}', '{"clock_mhz": -1e400}', '{"baud": ' + "9" * 5000 + "}",
     '{"baud": 3000000, "baud": "x"}', '{"baud": 3e6', "[]", "null", "", "\ufeff{}",
     '{"clock_mhz": 85} trailing', '{"baud": 0x10}', "{" * 100_000]
)  # fmt: skip


@st.composite
def mutated(draw: st.DrawFn) -> str:
    """A document's JSON text with a piece of it replaced by other text."""
    text = json.dumps(draw(DOCUMENTS))
    start = draw(st.integers(0, len(text)))
    end = draw(st.integers(start, min(len(text), start + 8)))
    piece = draw(st.text(alphabet='{}[]":,.-+eE019 \\nNaIfinity', max_size=6))
    return text[:start] + piece + text[end:]


TEXTS = ODD_TEXTS | mutated()
PLACES = st.sampled_from(["file", "section"])


@contextmanager
def build_folder(text: str, place: str, clock_ns: object = None) -> Iterator[Path]:
    """A build folder whose bitstream is described by ``text``: as bitstream/report.json
    (``file``), or as report.json's ``bitstream`` section (``section``); its .bit is
    ``BOARD``'s, hashed to ``DIGEST``; report.json's ``clock_ns`` is ``clock_ns``."""
    with tempfile.TemporaryDirectory() as made:
        folder = Path(made)
        (folder / "bitstream").mkdir()
        (folder / "bitstream" / f"{BOARD}.bit").write_bytes(BIT)
        report = json.dumps({"status": "ok", "board": BOARD, "clock_ns": clock_ns})[:-1]
        if place == "file":
            (folder / "bitstream" / "report.json").write_text(text, encoding="utf-8")
            (folder / "report.json").write_text(report + "}", encoding="utf-8")
        else:
            (folder / "report.json").write_text(report + ', "bitstream": ' + text + "}")
        yield folder


def expected_figure(document: object, key: str) -> float | type[DriverError] | None:
    """What ``bitstream_figure`` must give for ``key`` of ``document`` (the one record in the
    folder): None when it has none, the number when it is one in range, else DriverError."""
    if not isinstance(document, dict) or document.get(key) is None:
        return None
    value, (low, high) = document[key], FIGURE_RANGES[key]
    if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= high:
        return DriverError  # NaN fails both comparisons, infinities the range
    return float(value)


@FUZZ
@given(document=DOCUMENTS, place=PLACES)
@example(document={"baud": 10**400}, place="file")  # was OverflowError from math.isfinite
@example(document={"clock_mhz": -(10**400)}, place="section")
@example(document={"baud": float("nan"), "clock_mhz": float("inf")}, place="file")
def test_any_bitstream_record_gives_run_its_figures_or_a_driver_error_naming_file_and_key(
    document: object, place: str
) -> None:
    with build_folder(json.dumps(document), place) as folder:
        for key in FIGURE_RANGES:
            wanted = expected_figure(document, key)
            try:
                got = bitstream_figure(str(folder), key)
            except DriverError as exc:
                assert wanted is DriverError, (key, document, exc.reason)
                assert f": {key} " in exc.reason and "report.json" in exc.reason
                assert ("bitstream section" in exc.reason) == (place == "section")
                assert "brainsmith bitstream" in exc.hint
            else:
                assert got == wanted, (key, document)


@FUZZ
@given(text=TEXTS, place=PLACES)
def test_bitstream_report_text_json_cannot_write_gives_run_its_figures_or_a_driver_error(
    text: str, place: str
) -> None:
    """Text ``json.dumps`` never writes: numbers past a float's range or of 5,000 digits, a
    repeated key, broken or deeply nested JSON, a byte-order mark, documents with a piece of
    their text replaced."""
    with build_folder(text, place) as folder:
        for key in FIGURE_RANGES:
            try:
                got = bitstream_figure(str(folder), key)
            except DriverError as exc:
                assert f": {key} " in exc.reason and "report.json" in exc.reason
            else:
                assert got is None or FIGURE_RANGES[key][0] <= got <= FIGURE_RANGES[key][1]


@FUZZ
@given(document=DOCUMENTS, place=PLACES, clock_ns=st.none() | st.floats(0.1, 1e6) | SCALARS)
@example(document={"board": BOARD, "sha256": DIGEST}, place="file", clock_ns=10.0)
@example(document={"board": BOARD, "sha256": DIGEST.upper()}, place="section", clock_ns=None)
@example(document={"board": ["ulx3s-85f"], "sha256": DIGEST}, place="file", clock_ns=None)
@example(document={"board": BOARD, "sha256": 10**400}, place="section", clock_ns=None)
@example(document={"board": BOARD, "sha256": DIGEST}, place="file", clock_ns=10**400)  # was
# OverflowError from math.isfinite in the gate's check of report.json
def test_any_bitstream_record_gives_flash_its_bitstream_or_a_folder_error_naming_the_file(
    document: object, place: str, clock_ns: object
) -> None:
    """``flash`` reads the record after the gate has read report.json (its ``clock_ns`` drawn
    too): the bitstream, when the record names the board and the .bit's SHA-256, else
    FolderError naming report.json or the .bit."""
    with build_folder(json.dumps(document), place, clock_ns) as folder:
        record = os.path.abspath(folder / "bitstream" / "report.json")
        clock_ok = clock_ns is None or (
            not isinstance(clock_ns, bool)
            and isinstance(clock_ns, int | float)
            and 0.1 <= clock_ns <= 1e6
        )
        valid = (
            clock_ok
            and isinstance(document, dict)
            and document.get("board") == BOARD
            and isinstance(document.get("sha256"), str)
            and document["sha256"].lower() == DIGEST
        )
        try:
            board, bit, checked = build_bitstream(str(folder))
        except FolderError as exc:
            assert not valid, exc.reason
            assert isinstance(exc, BrainsmithError) and exc.exit_code == 2
            if not clock_ok:  # the gate's refusal, before the record is read
                assert "report.json: clock_ns" in exc.reason and exc.hint
                return
            assert "\n" not in exc.reason and "brainsmith bitstream" in exc.hint
            assert (
                "report.json" in exc.reason or ".bit " in exc.reason or "no bitstream" in exc.reason
            ), exc.reason
            if place == "file" and isinstance(document, dict):
                assert record in exc.reason or ".bit " in exc.reason
        else:
            assert valid and board == BOARD and checked == BIT
            assert bit == os.path.join(os.path.abspath(folder), "bitstream", f"{BOARD}.bit")
