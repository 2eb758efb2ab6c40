#!/usr/bin/env python3
"""Runs the exported accelerator on its board, over the board's UART (brainsmith's host link).

Needs Python 3.8 or later with numpy and pyserial (``pip install numpy pyserial``), nothing
of brainsmith. It reads ``driver.json`` beside it (the design's hash, its streams' words and
data types, and the nodes that stay on the host before and after the accelerator) and,
without ``--input``, ``vectors/`` (the export's inputs and the outputs the build's Python
execution gives for them)::

    python3 driver.py --port /dev/ttyUSB0                  # the export's vectors: PASS or FAIL
    python3 driver.py --port /dev/ttyUSB0 --input x.npy --output y.npy
    python3 driver.py --port /dev/ttyUSB0 --identify       # what the board holds
    python3 driver.py --port /dev/ttyUSB0 --bench 100000   # frames/s counted on the chip

Each input is run as ``brainsmith run`` runs it: the host's nodes before the accelerator (in
numpy), the frame packed into stream words (element 0 in the lowest bits, each word padded
to the stream's width, ``ceil(width / 8)`` bytes little-endian), one INFER request a frame
with two outstanding, the output words unpacked and the host's nodes after it.

The link's frames, both ways: ``SYNC 0xB5 | TYPE | SEQ | LEN (2 B LE) | PAYLOAD | CRC (2 B
LE)``, the CRC-16/CCITT-FALSE of TYPE, SEQ, LEN and PAYLOAD; a reply echoes its request's SEQ.
IDENTIFY (0x01) is answered (0x81) with "BSMH", the protocol version, the words' widths,
words per frame in and out, clocks per UART bit and the design's SHA-256; INFER (0x02, one
frame of input words) with the output words and the accelerator's own cycle count (0x82);
BENCH (0x03, N in 4 B LE, then one frame) runs the frame N times back to back and answers
(0x83) with the last frame's output words, the cycles the N frames took (8 B LE) and the
CRC-32 (zlib's) of every output word (4 B LE); anything wrong with 0xEE and a code.

Exit codes: 0 ran (and, without --input or with --expected, the outputs are the expected
ones); 1 the outputs differ, or the board stopped answering; 2 the board, the port or the
inputs cannot be used.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
import zlib
from typing import Any

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
SYNC = 0xB5
IDENTIFY, INFER, BENCH = 0x01, 0x02, 0x03
IDENTITY, RESULT, BENCHED, ERROR = 0x81, 0x82, 0x83, 0xEE
HEADER = 5  # SYNC, TYPE, SEQ, LEN
VERSION = 2
MAGIC = b"BSMH"
ERRORS = {1: "bad CRC", 2: "wrong length", 3: "unknown type", 4: "byte timeout", 5: "busy",
          6: "a BENCH of no frames"}  # fmt: skip
NAMES = {IDENTIFY: "IDENTIFY", INFER: "INFER", BENCH: "BENCH", IDENTITY: "IDENTIFY reply",
         RESULT: "INFER reply", BENCHED: "BENCH reply", ERROR: "error"}  # fmt: skip
EXCHANGE_READS = 4  # a reply must come whole within this many read timeouts
QUIET = (
    "check that the board is powered, holds this export's bitstream (see README.md) and that "
    "the port and --baud are its UART's"
)


class DriverError(Exception):
    """The run cannot go on: ``reason``; ``code`` the exit code (2: cannot start, 1: failed)."""

    def __init__(self, reason: str, code: int = 2) -> None:
        super().__init__(reason)
        self.reason, self.code = reason, code


def crc16(data: bytes) -> int:
    """CRC-16/CCITT-FALSE (poly 0x1021, init 0xFFFF, no reflection, no xorout)."""
    crc = 0xFFFF
    for byte in data:
        crc ^= byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021 if crc & 0x8000 else crc << 1) & 0xFFFF
    return crc


def encode(kind: int, seq: int, payload: bytes = b"") -> bytes:
    """One frame: SYNC, ``kind``, ``seq``, LEN, ``payload`` and the CRC."""
    body = bytes((kind & 0xFF, seq & 0xFF)) + len(payload).to_bytes(2, "little") + payload
    return bytes((SYNC,)) + body + crc16(body).to_bytes(2, "little")


def word_bytes(bits: int) -> int:
    return (bits + 7) // 8


class Link:
    """Requests to and replies from the board over ``port`` (any object with ``write(bytes)``
    and ``read(n)`` returning fewer bytes when its timeout passes: a ``serial.Serial``); each
    reply must come whole within ``deadline`` seconds."""

    def __init__(self, port: Any, deadline: float) -> None:
        self.port, self.deadline = port, deadline
        self.buffer = bytearray()
        self.seq = 0

    def send(self, kind: int, payload: bytes = b"") -> int:
        self.seq = (self.seq + 1) & 0xFF
        self.port.write(encode(kind, self.seq, payload))
        return self.seq

    def reply(self, kind: int, seq: int) -> bytes:
        """The payload of the next frame, which must be the ``kind`` reply to ``seq``."""
        got, got_seq, payload = self._frame()
        if got == ERROR and payload:
            code = payload[0]
            raise DriverError(
                f"expected the {NAMES[kind]} to request {seq}, got error {code} "
                f"({ERRORS.get(code, 'unknown')}) to request {got_seq}",
                1,
            )
        if (got, got_seq) != (kind, seq):
            raise DriverError(
                f"expected the {NAMES[kind]} to request {seq}, got "
                f"{NAMES.get(got, hex(got))} to request {got_seq}",
                1,
            )
        return payload

    def _frame(self) -> tuple[int, int, bytes]:
        end = time.monotonic() + self.deadline
        read = 0
        while True:
            start = self.buffer.find(bytes((SYNC,)))
            del self.buffer[: len(self.buffer) if start < 0 else start]  # bytes before a SYNC
            needed = HEADER
            if len(self.buffer) >= HEADER:
                needed = HEADER + int.from_bytes(self.buffer[3:5], "little") + 2
                if len(self.buffer) >= needed:
                    frame = bytes(self.buffer[:needed])
                    del self.buffer[:needed]
                    got, wanted = int.from_bytes(frame[-2:], "little"), crc16(frame[1:-2])
                    if got != wanted:
                        raise DriverError(
                            f"a frame with a bad CRC: expected 0x{wanted:04X}, got 0x{got:04X}", 1
                        )
                    return frame[1], frame[2], frame[HEADER:-2]
            data = self.port.read(needed - len(self.buffer))
            if not data:
                raise DriverError(f"timed out waiting for a reply ({read} bytes came)", 1)
            read += len(data)
            self.buffer += data
            if time.monotonic() > end:
                raise DriverError(
                    f"no whole reply within {self.deadline:g} s ({read} bytes came): the port "
                    "babbles or trickles",
                    1,
                )


class Identity:
    """What IDENTIFY returns: the link's words and the design's hash."""

    def __init__(self, payload: bytes) -> None:
        if len(payload) != 53 or payload[:4] != MAGIC:
            raise DriverError(f"expected a 53-byte IDENTIFY reply starting {MAGIC!r}, got "
                              f"{payload.hex(' ')}", 1)  # fmt: skip
        self.version = payload[4]
        self.in_bits, self.out_bits, self.in_words, self.out_words, self.clks_per_bit = (
            int.from_bytes(payload[a:b], "little")
            for a, b in ((5, 7), (7, 9), (9, 13), (13, 17), (17, 21))
        )
        self.design_hash = payload[21:].hex()


class DataType:
    """A stream element's data type as driver.json names it: ``kind`` "int" (two's
    complement when ``signed``), "bipolar" (-1/+1 as 0/1), "float" (IEEE, 16 or 32 bits) or
    "fixed" (a signed integer times ``scale``), ``bits`` wide."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.name = str(spec["name"])
        self.kind = str(spec["kind"])
        self.bits = int(spec["bits"])
        self.signed = bool(spec.get("signed", False))
        self.scale = float(spec.get("scale", 1.0))
        self.low, self.high = float(spec.get("min", 0.0)), float(spec.get("max", 0.0))
        if self.kind not in ("int", "bipolar", "float", "fixed") or (
            self.kind == "float" and self.bits not in (16, 32)
        ):
            raise DriverError(f"the stream's data type {self.name} is not one this driver packs")

    def encode(self, values: np.ndarray) -> list[int]:
        """Each of ``values`` as its ``bits``-bit pattern; DriverError for a value the type
        does not hold."""
        values = np.asarray(values, dtype=np.float32).reshape(-1)
        mask = (1 << self.bits) - 1
        if self.kind == "float":
            view = np.float16 if self.bits == 16 else np.float32
            unsigned = np.uint16 if self.bits == 16 else np.uint32
            return [int(v) for v in values.astype(view).view(unsigned)]
        if self.kind == "bipolar":
            if not np.isin(values, (-1.0, 1.0)).all():
                raise DriverError(f"a stream of {self.name} carries values other than -1 and +1")
            return [int(v) for v in ((values + 1) / 2).astype(np.int64)]
        scaled = values.astype(np.float64) / (self.scale if self.kind == "fixed" else 1.0)
        low, high = (self.low, self.high) if self.kind == "int" else (
            -(2.0 ** (self.bits - 1)), 2.0 ** (self.bits - 1) - 1)  # fmt: skip
        if values.size and (
            not np.array_equal(scaled, np.round(scaled))
            or scaled.min() < low
            or scaled.max() > high
        ):
            raise DriverError(f"a stream of {self.name} carries values that are not {self.name}")
        return [int(v) & mask for v in scaled.astype(np.int64)]

    def decode(self, patterns: list[int]) -> np.ndarray:
        """The values of the ``bits``-bit ``patterns``."""
        raw = np.asarray(patterns, dtype=np.int64)
        if self.kind == "float":
            unsigned = np.uint16 if self.bits == 16 else np.uint32
            view = np.float16 if self.bits == 16 else np.float32
            return raw.astype(unsigned).view(view).astype(np.float32)
        if self.kind == "bipolar":
            return (2 * raw - 1).astype(np.float32)
        if self.signed or self.kind == "fixed":
            raw = np.where(raw >= 1 << (self.bits - 1), raw - (1 << self.bits), raw)
        if self.kind == "fixed":
            return (raw.astype(np.float64) * self.scale).astype(np.float32)
        return raw.astype(np.float32)


class Stream:
    """One of the accelerator's streams: its words' width, words a frame, the folded shape
    (its last axis the elements of one word) and the elements' data type."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.bits, self.words = int(spec["bits"]), int(spec["words"])
        self.folded = tuple(int(d) for d in spec["folded_shape"])
        self.shape = tuple(int(d) for d in spec["shape"])
        self.dtype = DataType(spec["dtype"])

    def pack(self, frame: np.ndarray) -> list[int]:
        """One frame's values as ``words`` stream words."""
        elements = self.folded[-1]
        patterns = self.dtype.encode(np.asarray(frame, dtype=np.float32).reshape(self.folded))
        words = []
        for start in range(0, len(patterns), elements):
            word = 0
            for index, pattern in enumerate(patterns[start : start + elements]):
                word |= pattern << (index * self.dtype.bits)
            words.append(word)
        return words

    def unpack(self, words: list[int]) -> np.ndarray:
        """One frame's values from its ``words`` (bits past the elements ignored)."""
        elements, width = self.folded[-1], self.dtype.bits
        mask = (1 << width) - 1
        patterns = [(word >> (i * width)) & mask for word in words for i in range(elements)]
        return self.dtype.decode(patterns).reshape(self.folded).reshape(self.shape)


def _tensor(spec: dict[str, Any]) -> np.ndarray:
    return np.asarray(spec["values"], dtype=spec["dtype"]).reshape(spec["shape"])


def _axes(node: dict[str, Any], tensors: dict[str, np.ndarray]) -> list[int] | None:
    if "axes" in node["attrs"]:
        return [int(a) for a in node["attrs"]["axes"]]
    if len(node["inputs"]) > 1 and node["inputs"][1]:
        return [int(a) for a in tensors[node["inputs"][1]].reshape(-1)]
    return None


def _reshape(x: np.ndarray, shape: np.ndarray, allowzero: int) -> np.ndarray:
    dims = [int(d) for d in shape.reshape(-1)]
    if not allowzero:
        dims = [x.shape[i] if d == 0 else d for i, d in enumerate(dims)]
    return x.reshape(dims)


def _unsqueeze(x: np.ndarray, axes: list[int]) -> np.ndarray:
    rank = x.ndim + len(axes)
    for axis in sorted(a % rank for a in axes):
        x = np.expand_dims(x, axis)
    return x


def _squeeze(x: np.ndarray, axes: list[int] | None) -> np.ndarray:
    if axes is None:
        return np.squeeze(x)
    return np.squeeze(x, axis=tuple(a % x.ndim for a in axes))


def _binary(op: Any) -> Any:
    def run(node: dict[str, Any], t: dict[str, np.ndarray]) -> np.ndarray:
        a, b = (np.asarray(t[name], dtype=np.float32) for name in node["inputs"][:2])
        return np.asarray(op(a, b), dtype=np.float32)

    return run


OPS: dict[str, Any] = {
    "Transpose": lambda n, t: np.transpose(t[n["inputs"][0]], n["attrs"].get("perm")),
    "Reshape": lambda n, t: _reshape(t[n["inputs"][0]], t[n["inputs"][1]],
                                     int(n["attrs"].get("allowzero", 0))),
    "Flatten": lambda n, t: t[n["inputs"][0]].reshape(
        math.prod(t[n["inputs"][0]].shape[: int(n["attrs"].get("axis", 1))]), -1),
    "Identity": lambda n, t: t[n["inputs"][0]].copy(),
    "Squeeze": lambda n, t: _squeeze(t[n["inputs"][0]], _axes(n, t)),
    "Unsqueeze": lambda n, t: _unsqueeze(t[n["inputs"][0]], _axes(n, t) or []),
    "Mul": _binary(np.multiply),
    "Add": _binary(np.add),
    "Sub": _binary(np.subtract),
    "Div": _binary(np.divide),
}  # fmt: skip


class Host:
    """The nodes that stay on the host before and after the accelerator (driver.json's
    ``host``), run in numpy one input at a time."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.spec = spec
        self.constants = {name: _tensor(t) for name, t in spec["initializers"].items()}

    def _run(
        self, nodes: list[dict[str, Any]], given: str, x: np.ndarray, wanted: str
    ) -> np.ndarray:
        tensors = {**self.constants, given: np.asarray(x, dtype=np.float32)}
        for node in nodes:
            tensors[node["outputs"][0]] = OPS[node["op"]](node, tensors)
        return np.asarray(tensors[wanted], dtype=np.float32)

    def before(self, x: np.ndarray) -> np.ndarray:
        """The accelerator's input for the design's input ``x`` (its graph shape)."""
        spec = self.spec
        shaped = np.asarray(x, dtype=np.float32).reshape(spec["input"]["shape"])
        return self._run(spec["before"], spec["input"]["name"], shaped, spec["accelerator_input"])

    def after(self, y: np.ndarray) -> np.ndarray:
        """The design's output for the accelerator's output ``y``."""
        spec = self.spec
        name = spec["accelerator_output"]
        return self._run(spec["after"], name, y.reshape(spec["accelerator_output_shape"]),
                         spec["output"]["name"])  # fmt: skip


def per_input(shape: Any) -> tuple[int, ...]:
    """A graph tensor's shape without its batch axis of 1."""
    dims = tuple(int(d) for d in shape)
    return dims[1:] if len(dims) > 1 and dims[0] == 1 else dims


def _same(given: tuple[int, ...], wanted: tuple[int, ...]) -> bool:
    return [d for d in given if d != 1] == [d for d in wanted if d != 1]


def batch(x: np.ndarray, shape: tuple[int, ...], what: str) -> tuple[np.ndarray, bool]:
    """``x`` as a batch of inputs of ``shape``, and whether it was one without a batch axis."""
    if x.dtype.kind not in "biuf" or x.size == 0:
        raise DriverError(f"{what} holds {x.size} {x.dtype} value(s), not numbers")
    if x.ndim and _same(tuple(x.shape[1:]), shape):
        return x.reshape(-1, *shape).astype(np.float32), False
    if _same(tuple(x.shape), shape):
        return x.reshape(1, *shape).astype(np.float32), True
    raise DriverError(f"{what} has shape {x.shape}; give ({', '.join(map(str, shape))}) for one "
                      f"input or (N, {', '.join(map(str, shape))}) for N")  # fmt: skip


class Board:
    """The board on ``port`` holding the design of ``design`` (driver.json)."""

    def __init__(self, design: dict[str, Any], port: str, baud: int, timeout: float | None) -> None:
        self.design, self.port_name = design, port
        self.inputs, self.outputs = Stream(design["in"]), Stream(design["out"])
        self.request_bytes = HEADER + self.inputs.words * word_bytes(self.inputs.bits) + 2
        reply_bytes = HEADER + self.outputs.words * word_bytes(self.outputs.bits) + 4 + 2
        self.bytes_per_frame = self.request_bytes + reply_bytes
        if timeout is None:  # two frames on the wire and through the accelerator
            wire = 2 * self.bytes_per_frame * 10 / baud
            timeout = 1.0 + 4 * (wire + 2 * design["latency_cycles"] / (design["clock_mhz"] * 1e6))
        try:
            import serial
        except ImportError:
            raise DriverError("pyserial is not installed: pip install pyserial") from None
        if not os.path.exists(port):
            raise DriverError(f"{port}: no such serial port; plug the board in and give its "
                              "UART (ls /dev/ttyUSB*)")  # fmt: skip
        try:
            self.serial = serial.Serial(port, baud, timeout=timeout, write_timeout=timeout)
            self.serial.reset_input_buffer()
        except (serial.SerialException, OSError, ValueError) as exc:
            raise DriverError(f"{port} cannot be opened: {exc} (on Linux: join the dialout "
                              "group)") from None  # fmt: skip
        self.link = Link(self.serial, EXCHANGE_READS * timeout)

    def identify(self) -> Identity:
        try:
            return Identity(self.link.reply(IDENTITY, self.link.send(IDENTIFY)))
        except (DriverError, OSError) as exc:
            raise DriverError(f"{self.port_name}: IDENTIFY: {exc}; {QUIET}", 1) from None

    def check(self, found: Identity) -> None:
        """DriverError unless the board holds this export's design."""
        design = self.design
        if found.version != VERSION:
            raise DriverError(f"{self.port_name}: the board's link speaks version "
                              f"{found.version}, this driver {VERSION}")  # fmt: skip
        if found.design_hash != design["design_hash"]:
            raise DriverError(
                f"{self.port_name}: the board holds another design (hash "
                f"{found.design_hash[:16]}), this export is {design['design_hash'][:16]}: "
                f"load its bitstream first ({design['flash']})"
            )
        have = (found.in_bits, found.out_bits, found.in_words, found.out_words)
        need = (self.inputs.bits, self.outputs.bits, self.inputs.words, self.outputs.words)
        if have != need:
            raise DriverError(f"{self.port_name}: the board's link carries {have} (bits in, "
                              f"bits out, words in, words out), this design {need}")  # fmt: skip

    def infer(self, frames: list[list[int]]) -> list[tuple[list[int], int]]:
        """(output words, cycles) of each frame's words, two requests outstanding."""
        results: list[tuple[list[int], int]] = []
        waiting: list[tuple[int, int]] = []
        for index, words in enumerate(frames):
            if len(waiting) == 2:
                results.append(self._result(*waiting.pop(0)))
            payload = b"".join(w.to_bytes(word_bytes(self.inputs.bits), "little") for w in words)
            try:
                waiting.append((index, self.link.send(INFER, payload)))
            except OSError as exc:
                raise DriverError(f"{self.port_name}: frame {index}: {exc}", 1) from None
        for index, seq in waiting:
            results.append(self._result(index, seq))
        return results

    def _result(self, index: int, seq: int) -> tuple[list[int], int]:
        try:
            payload = self.link.reply(RESULT, seq)
        except (DriverError, OSError) as exc:
            raise DriverError(f"{self.port_name}: frame {index}: {exc}; {QUIET}", 1) from None
        size = word_bytes(self.outputs.bits)
        if len(payload) != self.outputs.words * size + 4:
            raise DriverError(f"{self.port_name}: frame {index}: a {len(payload)}-byte reply", 1)
        words = [int.from_bytes(payload[i : i + size], "little") & ((1 << self.outputs.bits) - 1)
                 for i in range(0, len(payload) - 4, size)]  # fmt: skip
        return words, int.from_bytes(payload[-4:], "little")

    def bench(self, words: list[int], frames: int) -> tuple[list[int], int, int]:
        """(the last frame's output words, cycles, CRC-32) of ``words`` run ``frames`` times
        back to back on the chip."""
        payload = frames.to_bytes(4, "little") + b"".join(
            w.to_bytes(word_bytes(self.inputs.bits), "little") for w in words
        )
        each = self.design["latency_cycles"] / (self.design["clock_mhz"] * 1e6)
        limit = float(self.serial.timeout) + 4 * frames * each  # the frames run, then the reply
        before = self.serial.timeout, self.link.deadline
        self.serial.timeout, self.link.deadline = limit, EXCHANGE_READS * limit
        try:
            reply = self.link.reply(BENCHED, self.link.send(BENCH, payload))
        except (DriverError, OSError) as exc:
            raise DriverError(f"{self.port_name}: BENCH of {frames:,} frames: {exc}; {QUIET}",
                              1) from None  # fmt: skip
        finally:
            self.serial.timeout, self.link.deadline = before
        size = word_bytes(self.outputs.bits)
        data = self.outputs.words * size
        if len(reply) != data + 12:
            raise DriverError(f"{self.port_name}: BENCH: a {len(reply)}-byte reply", 1)
        words_out = [int.from_bytes(reply[i : i + size], "little") & ((1 << self.outputs.bits) - 1)
                     for i in range(0, data, size)]  # fmt: skip
        cycles = int.from_bytes(reply[data : data + 8], "little")
        return words_out, cycles, int.from_bytes(reply[data + 8 : data + 12], "little")

    def close(self) -> None:
        self.serial.close()


def differences(got: np.ndarray, expected: np.ndarray, exact: bool) -> str:
    """Where ``got`` first differs from ``expected`` ("" when equal: exactly, or within
    brainsmith's float tolerance, 1e-4 of the largest expected value plus 1e-5 of each)."""
    if got.shape != expected.shape:
        return f"outputs of shape {got.shape}, expected {expected.shape}"
    if exact:
        wrong = got != expected
    else:
        scale = float(np.abs(expected).max()) if expected.size else 0.0
        wrong = np.abs(got - expected) > 1e-4 * scale + 1e-5 * np.abs(expected)
    if not wrong.any():
        return ""
    first = np.unravel_index(int(np.argmax(wrong.reshape(-1))), wrong.shape)
    return (f"input {first[0]}, output element {tuple(int(i) for i in first[1:])}: got "
            f"{got[first]:g}, expected {expected[first]:g}")  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", required=True, help="the board's serial port (/dev/ttyUSB0)")
    parser.add_argument("--input", help="inputs (.npy): one, or N on axis 0; without it the "
                        "export's vectors, checked against their expected outputs")  # fmt: skip
    parser.add_argument("--output", help="write the outputs here (.npy)")
    parser.add_argument("--expected", help="compare the outputs with these (.npy)")
    parser.add_argument("--accelerator", action="store_true", help="--input and the outputs "
                        "are the accelerator's own (the host's nodes are not run)")  # fmt: skip
    parser.add_argument("--baud", type=int, help="the UART's rate (default: the bitstream's)")
    parser.add_argument("--timeout", type=float, help="seconds each read may take (default: "
                        "from the baud and the accelerator's cycles)")  # fmt: skip
    parser.add_argument("--identify", action="store_true", help="only say what the board holds")
    parser.add_argument("--bench", type=int, metavar="N", help="then run the first input N times "
                        "back to back on the chip: frames/s by the design's own cycle counter")  # fmt: skip
    args = parser.parse_args(argv)
    if args.bench is not None and not 1 <= args.bench < 2**32:
        parser.error("--bench N: N from 1 to 4294967295")
    try:
        return run(args)
    except DriverError as exc:
        print(f"error: {exc.reason}", file=sys.stderr)
        return exc.code


def run(args: argparse.Namespace) -> int:
    with open(os.path.join(HERE, "driver.json")) as handle:
        design = json.load(handle)
    host_spec = design["host"]
    raw = args.accelerator or not host_spec["runs"]
    if not args.accelerator and not host_spec["runs"] and args.input:
        raise DriverError(f"{host_spec['why']}: give --input at the accelerator's boundary "
                          "with --accelerator (the vectors are)")  # fmt: skip
    x, expected = _inputs(args)
    board = Board(design, args.port, args.baud or int(design["baud"]), args.timeout)
    try:
        found = board.identify()
        board.check(found)
        print(f"board on {args.port}: design {found.design_hash[:16]}, this export's "
              f"({found.in_words} words of {found.in_bits} bits in, {found.out_words} of "
              f"{found.out_bits} out a frame)")  # fmt: skip
        if args.identify:
            return 0
        host = Host(host_spec)
        shape = per_input(board.inputs.shape if raw else host_spec["input"]["shape"])
        inputs, single = batch(x, shape, args.input or "the export's vectors")
        frames = [sample if raw else host.before(sample) for sample in inputs]
        began = time.perf_counter()
        results = board.infer([board.inputs.pack(frame) for frame in frames])
        seconds = time.perf_counter() - began
        benched = board.bench(board.inputs.pack(frames[0]), args.bench) if args.bench else None
    finally:
        board.close()
    values = [board.outputs.unpack(words) for words, _ in results]
    outputs = np.stack([v if raw else host.after(v) for v in values])
    out_shape = per_input(board.outputs.shape if raw else host_spec["output"]["shape"])
    outputs = outputs.reshape(len(values), *out_shape)
    cycles = sorted(c for _, c in results)
    middle = cycles[len(cycles) // 2]
    mhz = float(design["clock_mhz"])
    print(f"{len(frames)} frames in {seconds:.3f} s: {len(frames) / max(seconds, 1e-9):.1f} "
          "frames/s over the link")  # fmt: skip
    print(f"accelerator: {middle:,} cycles a frame (its own count, first input to last output), "
          f"{middle / mhz:.2f} us at {mhz:g} MHz")  # fmt: skip
    if args.output:
        np.save(args.output, outputs[0] if single else outputs)
    if benched is not None and not _benched(board, benched, results[0][0], args.bench, mhz):
        return 1
    if expected is None:
        return 0
    exact = (board.outputs.dtype.kind != "float") if raw else bool(host_spec["exact"])
    found_difference = differences(outputs, expected.reshape(outputs.shape), exact)
    if found_difference:
        print(f"FAIL: {found_difference}")
        return 1
    print(f"PASS: {len(frames)} frames, every output equal to the expected one")
    return 0


def crc32_repeated(data: bytes, times: int) -> int:
    """zlib.crc32 of ``data`` repeated ``times`` times, in steps logarithmic in ``times``
    (zlib's crc32_combine: a CRC carried through zero bytes by squared GF(2) operators)."""

    def times_vector(matrix: list[int], vector: int) -> int:
        total, row = 0, 0
        while vector:
            total ^= matrix[row] if vector & 1 else 0
            vector, row = vector >> 1, row + 1
        return total

    def squared(matrix: list[int]) -> list[int]:
        return [times_vector(matrix, matrix[n]) for n in range(32)]

    def combine(first: int, second: int, length: int) -> int:
        odd = squared(squared([0xEDB88320] + [1 << n for n in range(31)]))  # four zero bits
        while length:
            even = squared(odd)
            first = times_vector(even, first) if length & 1 else first
            length >>= 1
            if not length:
                break
            odd = squared(even)
            first = times_vector(odd, first) if length & 1 else first
            length >>= 1
        return first ^ second

    crc, block, size = 0, zlib.crc32(data), len(data)
    while times:
        crc = combine(crc, block, size) if times & 1 else crc
        times >>= 1
        if times:
            block, size = combine(block, block, size), 2 * size
    return crc


def _benched(board: Board, benched: tuple[list[int], int, int], first: list[int], frames: int,
             mhz: float) -> bool:  # fmt: skip
    """Say what BENCH measured; whether its outputs and checksum are the first frame's."""
    words, cycles, crc = benched
    data = b"".join(w.to_bytes(word_bytes(board.outputs.bits), "little") for w in first)
    wanted = crc32_repeated(data, frames)
    if crc != wanted or words != first:
        print(f"FAIL: BENCH of {frames:,} frames: checksum 0x{crc:08x}, expected 0x{wanted:08x} "
              "(the first frame's outputs each time)")  # fmt: skip
        return False
    fps = frames * mhz * 1e6 / cycles if cycles else 0.0
    print(f"on the chip: {frames:,} frames back to back in {cycles:,} cycles (its own counter): "
          f"{fps:,.0f} frames/s at {mhz:g} MHz; checksum 0x{crc:08x}, the first frame's "
          "outputs each time")  # fmt: skip
    return True


def _inputs(args: argparse.Namespace) -> tuple[np.ndarray, np.ndarray | None]:
    """The inputs to run and the outputs expected of them (None: none given)."""
    if args.input:
        x = _load(args.input)
        return x, _load(args.expected) if args.expected else None
    vectors = os.path.join(HERE, "vectors")
    return _load(os.path.join(vectors, "input.npy")), _load(os.path.join(vectors, "output.npy"))


def _load(path: str) -> np.ndarray:
    try:
        return np.asarray(np.load(path, allow_pickle=False))
    except (OSError, ValueError) as exc:
        raise DriverError(f"{path} cannot be read as a .npy array: {exc}") from None


if __name__ == "__main__":
    sys.exit(main())
