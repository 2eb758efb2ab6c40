"""The host driver of a board that holds a build's accelerator behind the host link.

``Board(build, port)`` opens the board's serial port (pyserial, imported here only),
IDENTIFYs the board (its design hash must be the build's, its words those of the build's
streams) and ``run(x)`` runs inputs in the user's shape: the host nodes before the
accelerator in Python, each frame packed into stream words as the simulation packs it,
INFER frames sent two outstanding, the replies unpacked and the host nodes after it run;
``last`` keeps what the run measured. ``bench(x, n)`` runs one frame n times back to back on
the chip and reads the frames per second off the design's own cycle counter, its checksum of
every output word compared with Python's execution of the frame. Every read has a time limit:
a board that does not answer is an error naming the port and the frame, never a hang.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from brainsmith.files import DamagedFile, read_json
from brainsmith.hardware.board.link import (
    INFER,
    RESULT,
    Identity,
    Link,
    LinkError,
    OtherVersion,
    crc32_of_words,
    frame_bytes,
    sustained_fps,
)
from brainsmith.hardware.board.streams import DriverError, Host, Streams, run_graph, streams
from brainsmith.intake.inputs import ResultError, sample_shape, samples

DEFAULT_BAUD = 3_000_000  # the ULX3S's USB UART; a build's bitstream/report.json says its own
EXCHANGE_READS = 4  # a reply must come whole within this many read timeouts
SIMULATED_HZ = 20_000.0  # cycles a second a simulated board is given at least, for a limit
BAUD_RANGE = (1_200, 12_000_000)  # serial ports' lowest common rate; an FT2232H's highest
CLOCK_MHZ_RANGE = (1.0, 1_000.0)  # what an FPGA design's clock can be
FIGURE_RANGES = {"baud": BAUD_RANGE, "clock_mhz": CLOCK_MHZ_RANGE}
INSTALL_HINT = "pip install 'brainsmith[lattice]' (pyserial; make setup installs it)"
FLASH_HINT = (
    "flash writes the build's bitstream to the board (brainsmith bitstream BUILD --board "
    "BOARD makes it)"
)
QUIET_HINT = (
    "check that the board is powered, holds a bitstream of this build (brainsmith flash "
    "BUILD) and that the port and --baud are its UART's"
)


@dataclass
class RunFigures:
    """What one ``Board.run`` measured."""

    frames: int
    seconds: float  # wall clock from the first INFER sent to the last reply read
    cycles: list[int]  # the accelerator's own count per frame (first input to last output)
    bytes_per_frame: int  # an INFER and its reply, on the wire
    in_bytes: int  # the INFER frame's bytes
    clock_mhz: float
    clock: str = ""  # where the clock comes from
    simulated: bool = False
    port: str = ""
    baud: int = 0
    interval_cycles: float = 0.0  # the build's pipelined interval (Streams.interval_cycles)
    interval_source: str = ""

    @property
    def fps(self) -> float:
        return self.frames / self.seconds if self.seconds > 0 else 0.0

    @property
    def cycles_per_frame(self) -> float:
        return float(np.median(self.cycles)) if self.cycles else 0.0

    @property
    def latency_us(self) -> float:
        """One frame's time through the accelerator (its own count, first input beat to
        last output beat) at the clock, in microseconds."""
        cycles = self.cycles_per_frame
        return cycles / self.clock_mhz if cycles and self.clock_mhz else 0.0

    @property
    def throughput_fps(self) -> float:
        """Frames per second when frames stream back to back: the clock over the build's
        pipelined interval (0 without one)."""
        cycles = self.interval_cycles
        return self.clock_mhz * 1e6 / cycles if cycles else 0.0

    def link_fps(self, baud: int) -> float:
        """Frames per second the link carries end to end at ``baud`` (10 bits a byte, 8N1)
        with two requests outstanding, as ``run`` sends them (``link.sustained_fps``)."""
        return sustained_fps(baud, self.in_bytes, self.bytes_per_frame - self.in_bytes)


@dataclass(frozen=True)
class BenchFigures:
    """What one ``Board.bench`` measured on the chip: ``frames`` frames of one input run back
    to back in ``cycles`` cycles of the design's own counter (the first frame's first input
    word to the last frame's last output word), and the CRC-32 of every output word against
    the one Python's execution of the frame gives."""

    frames: int
    cycles: int
    crc32: int
    expected_crc32: int
    clock_mhz: float
    clock: str = ""

    @property
    def fps(self) -> float:
        """Frames per second at the clock, by the design's own count."""
        return self.frames * self.clock_mhz * 1e6 / self.cycles if self.cycles else 0.0

    @property
    def cycles_per_frame(self) -> float:
        return self.cycles / self.frames if self.frames else 0.0


@dataclass
class Board:
    """A board on ``port`` running the accelerator of the build in ``build`` (a folder, a
    ``BuildResult`` or its ``Streams``); ``timeout`` bounds each read in seconds (default:
    from the baud)."""

    build: Any
    port: str
    baud: int | None = None
    timeout: float | None = None
    simulated: bool = False
    streams: Streams = field(init=False)
    identity: Identity = field(init=False)
    last: RunFigures | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        if not os.path.exists(self.port):
            raise DriverError(
                f"{self.port}: no such serial port",
                "plug the board in and give its UART: --port /dev/ttyUSB0 (ls /dev/ttyUSB*)",
            )
        if isinstance(self.build, Streams):
            self.streams = self.build
        else:
            self.streams = streams(str(getattr(self.build, "output_dir", self.build)))
        folder = self.streams.folder
        if self.baud is not None and not within(self.baud, BAUD_RANGE):
            raise DriverError(f"baud {self.baud!r} is not a rate from {_span(BAUD_RANGE)}",
                              "give the board's UART rate (the bitstream's: leave it out)")  # fmt: skip
        self.baud = self.baud or int(bitstream_figure(folder, "baud") or DEFAULT_BAUD)
        pll = bitstream_figure(folder, "clock_mhz")  # the clock the design runs at
        self.clock_mhz = pll or self.streams.clock_mhz
        self.clock = "the bitstream's PLL" if pll else "the build's clock"
        if self.timeout is None:  # two frames on the wire and through the accelerator
            wire = 2 * self.streams.bytes_per_frame * 10 / self.baud
            hz = self.clock_mhz * 1e6 or 1e6
            self.timeout = 1.0 + 4 * (wire + 2 * self.streams.latency_cycles() / hz)
        self.serial = open_port(self.port, self.baud, self.timeout)
        self.link = Link(self.serial, deadline=EXCHANGE_READS * self.timeout)
        try:
            self.identity = self.identify()
        except BaseException:
            self.close()
            raise

    def identify(self) -> Identity:
        """The board's IDENTIFY reply; DriverError unless it holds this build's design."""
        try:
            found = self.link.identify()
        except OtherVersion as exc:
            raise DriverError(f"{self.port}: {exc}", "make the bitstream again (brainsmith "
                              "bitstream BUILD --board BOARD) and load it: brainsmith flash "
                              "BUILD") from None  # fmt: skip
        except LinkError as exc:
            raise DriverError(f"{self.port}: IDENTIFY: {exc}", QUIET_HINT, 1) from None
        wanted = self.streams
        if found.design_hash != wanted.design_hash:
            raise DriverError(
                f"{self.port}: the board holds another design (hash {found.design_hash[:16]}), "
                f"this build is {wanted.design_hash[:16]}: brainsmith flash {wanted.folder}",
                FLASH_HINT,
            )
        have = (found.in_bits, found.out_bits, found.in_words, found.out_words)
        need = (wanted.in_bits, wanted.out_bits, wanted.in_words, wanted.out_words)
        if have != need:
            raise DriverError(
                f"{self.port}: the board's link carries {_words(*have)}; this build's "
                f"accelerator needs {_words(*need)}",
                FLASH_HINT,
            )
        return found

    def run(self, x: np.ndarray) -> np.ndarray:
        """The design's outputs for ``x`` (one input, or several on axis 0), in the shape
        ``BuildResult.run`` returns; ``last`` holds what the run measured."""
        host = Host(self.streams)
        try:
            given, single = samples(host.runnable, np.asarray(x))
        except ResultError as exc:
            raise DriverError(exc.reason, exc.hint) from None
        inputs = host.before([sample[0] for sample in given])
        requests = [self.streams.pack(frame) for frame in inputs]
        began = time.perf_counter()
        results = self.infer(requests)
        seconds = time.perf_counter() - began
        outputs = host.after([self.streams.unpack(words) for words, _ in results])
        streams = self.streams
        name = host.runnable.graph.output[0].name
        shape = sample_shape(host.runnable, name)
        got = np.stack([np.asarray(o).reshape(shape) for o in outputs])

        self.last = RunFigures(
            frames=len(requests),
            seconds=seconds,
            cycles=[cycles for _, cycles in results],
            bytes_per_frame=self.streams.bytes_per_frame,
            in_bytes=frame_bytes(
                streams.in_bits, streams.out_bits, streams.in_words, streams.out_words
            )[0],
            clock_mhz=self.clock_mhz,
            clock=self.clock,
            simulated=self.simulated,
            port=self.port,
            baud=self.baud or 0,
            interval_cycles=self.streams.interval_cycles,
            interval_source=self.streams.interval_source,
        )
        return got[0] if single else got

    def bench(self, x: np.ndarray, frames: int) -> BenchFigures:
        """Run the first input of ``x`` ``frames`` times back to back on the chip (BENCH):
        the frames per second by the design's own cycle counter; DriverError (exit 1) when
        its checksum of every output word or the last frame's outputs differ from Python's
        execution of the frame."""
        from brainsmith.frameworks.finn.execution import runnable_copy

        host = Host(self.streams)
        try:
            given, _ = samples(host.runnable, np.asarray(x))
        except ResultError as exc:
            raise DriverError(exc.reason, exc.hint) from None
        frame = host.before([given[0][0]])[0]
        wanted = self.streams.pack_output(run_graph(runnable_copy(self.streams.model), [frame])[0])
        limit = self._bench_limit(frames)
        before = self.serial.timeout, self.link.deadline
        self.serial.timeout, self.link.deadline = limit, EXCHANGE_READS * limit
        try:
            benched = self.link.bench(self.streams.pack(frame), frames)
        except (LinkError, OSError) as exc:
            raise DriverError(f"{self.port}: BENCH of {frames:,} frames: {exc}", QUIET_HINT,
                              1) from None  # fmt: skip
        finally:
            self.serial.timeout, self.link.deadline = before
        expected = crc32_of_words(wanted, self.streams.out_bits, frames)
        figures = BenchFigures(frames, benched.cycles, benched.crc32, expected, self.clock_mhz,
                               self.clock)  # fmt: skip
        if benched.crc32 != expected or benched.outputs != wanted:
            which = ("checksum differs" if benched.crc32 != expected
                     else "last frame's outputs differ")  # fmt: skip
            raise DriverError(
                f"{self.port}: BENCH of {frames:,} frames: the {which} from Python's "
                f"execution of the frame (CRC-32 0x{benched.crc32:08x}, expected "
                f"0x{expected:08x})",
                "run without --bench to see which outputs differ (--expected)",
                exit_code=1,
            )
        return figures

    def _bench_limit(self, frames: int) -> float:
        """Seconds to wait for a BENCH reply of ``frames`` frames: four times their cycles
        (the pipelined interval each, else FINN's latency estimate) at the clock, or at
        ``SIMULATED_HZ`` on a simulated board, beyond the usual read's limit."""
        each = self.streams.interval_cycles or self.streams.latency_cycles()
        hz = SIMULATED_HZ if self.simulated else (self.clock_mhz or 1.0) * 1e6
        return float(self.timeout or 1.0) + 4 * frames * max(each, 1.0) / hz

    def infer(self, frames: list[list[int]]) -> list[tuple[list[int], int]]:
        """(output words, cycles) of each frame's words, two requests outstanding."""
        results: list[tuple[list[int], int]] = []
        waiting: list[tuple[int, int]] = []  # (frame, SEQ)
        for index, words in enumerate(frames):
            if len(waiting) == 2:
                results.append(self._reply(*waiting.pop(0)))
            try:
                waiting.append((index, self.link.send(INFER, self.identity.request(words))))
            except (LinkError, OSError) as exc:
                raise DriverError(f"{self.port}: frame {index}: {exc}", QUIET_HINT, 1) from None
        for index, seq in waiting:
            results.append(self._reply(index, seq))
        return results

    def _reply(self, index: int, seq: int) -> tuple[list[int], int]:
        try:
            return self.identity.result(self.link.reply(RESULT, seq))
        except LinkError as exc:
            raise DriverError(f"{self.port}: frame {index}: {exc}", QUIET_HINT, 1) from None

    def close(self) -> None:
        serial = getattr(self, "serial", None)
        if serial is not None:
            serial.close()

    def __enter__(self) -> Board:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def _words(in_bits: int, out_bits: int, in_words: int, out_words: int) -> str:
    return f"{in_words} words of {in_bits} bits in and {out_words} of {out_bits} out a frame"


def open_port(port: str, baud: int, timeout: float) -> Any:
    """``port`` opened with pyserial, 8N1 at ``baud``, reads and writes limited to
    ``timeout`` seconds, anything waiting in it dropped."""
    try:
        import serial
    except ImportError:
        raise DriverError("pyserial is not installed", INSTALL_HINT) from None
    try:
        opened = serial.Serial(port, baud, timeout=timeout, write_timeout=timeout)
        opened.reset_input_buffer()
    except (serial.SerialException, OSError, ValueError) as exc:
        raise DriverError(
            f"{port} cannot be opened: {exc}",
            "give the board's UART (ls /dev/ttyUSB*); on Linux join the dialout group",
        ) from None
    return opened


def bitstream_figure(folder: str, key: str) -> float | None:
    """``key`` (``baud``, ``clock_mhz``) of the build's bitstream, if it has one: from
    ``bitstream/report.json`` (``brainsmith bitstream``'s, the newer when both exist), else
    from report.json's ``bitstream`` section (``build --bitstream``)."""
    for name, section in (
        (os.path.join("bitstream", "report.json"), None),
        ("report.json", "bitstream"),
    ):
        try:
            data = read_json(os.path.join(folder, name))
        except (OSError, DamagedFile):
            continue
        found = data.get(section) if section else data
        if not isinstance(found, dict) or found.get(key) is None:
            continue
        value, span = found[key], FIGURE_RANGES[key]
        if not within(value, span):
            where = name + (f" ({section} section)" if section else "")
            raise DriverError(
                f"{os.path.join(folder, where)}: {key} {value!r} is not a number from "
                f"{_span(span)}; the file was changed or damaged",
                "make the bitstream again: brainsmith bitstream BUILD",
            )
        return float(value)
    return None


def within(value: object, span: tuple[float, float]) -> bool:
    """Whether ``value`` is a finite number (not a bool) from ``span[0]`` to ``span[1]``."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return span[0] <= value <= span[1]  # NaN is in no span; an int of any size compares exactly


def _span(span: tuple[float, float]) -> str:
    return f"{span[0]:,g} to {span[1]:,g}"


__all__ = [
    "BAUD_RANGE",
    "BenchFigures",
    "Board",
    "DriverError",
    "RunFigures",
    "bitstream_figure",
    "open_port",
]
