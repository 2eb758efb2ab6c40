"""``brainsmith run BUILD_DIR --port PORT`` (or ``--simulate``): a build's design run on a
board through the host link (``brainsmith.hardware.board.driver``), its outputs compared with
``--expected`` (exact for integer outputs, within verification's float tolerance else) or
written to ``--output``, with what the run measured; ``--bench N`` then runs the first input N
times back to back on the chip, measured by the design's own counter.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass

import numpy as np

from brainsmith.hardware.board.driver import BenchFigures, Board, RunFigures
from brainsmith.hardware.board.simulated import SimulatedBoard
from brainsmith.hardware.board.streams import DriverError, Host

GENERATED_FRAMES = 8  # inputs drawn from the input's data type when none are given


@dataclass
class RunOutcome:
    """A finished run: its figures, the outputs and how they compare."""

    figures: RunFigures
    outputs: np.ndarray
    design_hash: str
    clks_per_bit: int
    compared: str  # "" without --expected, else what they were compared with
    written: str = ""  # where --output wrote the outputs
    bench: BenchFigures | None = None  # what --bench measured on the chip


def run_build_folder(
    folder: str,
    *,
    port: str | None = None,
    simulate: bool = False,
    input_npy: str | None = None,
    expected_npy: str | None = None,
    output_npy: str | None = None,
    baud: int | None = None,
    bench: int | None = None,
    note: Callable[[str], None] | None = None,
) -> RunOutcome:
    """Run ``folder``'s design on the board at ``port`` or a simulated one, then, with
    ``bench``, its first input that many times on the chip; DriverError (``exit_code`` 2:
    cannot start, 1: the link failed or the outputs differ)."""
    x = load_array(input_npy, "--input", finite=True) if input_npy else None
    expected = load_array(expected_npy, "--expected") if expected_npy else None
    target = output_path(output_npy) if output_npy else None
    say = note or (lambda message: None)
    with ExitStack() as stack:
        board = _board(stack, folder, port, simulate, baud, say)
        x = _generated(board) if x is None else x
        outputs, figures = _ran(board, x, say)
        benched = None
        if bench:
            say(f"running the first input {bench:,} times back to back on {board.port} (BENCH)")
            benched = board.bench(x, bench)
    if target:  # before comparing: outputs that differ are the ones to look at
        save_array(target, outputs)
    compared = _compared(board, outputs, expected, expected_npy)
    return RunOutcome(figures, outputs, board.identity.design_hash,
                      board.identity.clks_per_bit, compared, target or "", benched)  # fmt: skip


def _ran(board: Board, x: np.ndarray, say: Callable[[str], None]) -> tuple[np.ndarray, RunFigures]:
    """(the outputs, what the run measured) of ``board`` run on ``x``."""
    say(f"running {len(x) if x.ndim > 1 else 1} frames on {board.port}")
    outputs = board.run(x)
    assert board.last is not None
    return outputs, board.last


def _compared(
    board: Board, outputs: np.ndarray, expected: np.ndarray | None, expected_npy: str | None
) -> str:
    """``outputs`` compared with ``expected`` (DriverError when they differ): what they
    were compared with ("" without --expected)."""
    if expected is None or expected_npy is None:
        return ""
    exact, name = _output(board)
    compare(outputs, expected, exact, expected_npy, name)
    return f"equal to {expected_npy}" + (" (exact)" if exact else "")


def _board(
    stack: ExitStack,
    folder: str,
    port: str | None,
    simulate: bool,
    baud: int | None,
    note: Callable[[str], None],
) -> Board:
    """The board at ``port``, or a simulated one (compiled first), open within ``stack``."""
    if simulate:
        note("compiling the simulated board (Verilator; cached by content)")
        port = stack.enter_context(SimulatedBoard(folder))
    if port is None:
        raise DriverError("no board: give --port PORT or --simulate", "--port /dev/ttyUSB0")
    timeout = 30.0 if simulate else None  # a simulated byte takes ~80 cycles of Verilator
    return stack.enter_context(Board(folder, port, baud, timeout, simulated=simulate))


def load_array(path: str, option: str, finite: bool = False) -> np.ndarray:
    """The NumPy array in ``path``, read by the bounded reader (no pickles, a size its header
    states and the file holds), of real numbers, all ``finite`` if asked; DriverError naming
    ``option``."""
    from brainsmith.files import DamagedFile, read_npy

    try:
        array = read_npy(path)
    except (OSError, DamagedFile) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise DriverError(
            f"{option} {path} cannot be read: {reason}", "give a NumPy .npy"
        ) from None
    if array.dtype.kind not in "biuf":
        raise DriverError(f"{option} {path} holds {array.dtype}, not numbers", "")
    if finite and array.dtype.kind == "f" and not np.isfinite(array).all():
        bad = int((~np.isfinite(array)).sum())
        raise DriverError(f"{option} {path} holds {bad} values that are not finite (inf or NaN)",
                          "give inputs of the network's input range")  # fmt: skip
    return np.asarray(array)


def output_path(path: str) -> str:
    """Where ``--output PATH`` writes (``.npy`` added as NumPy adds it), checked before the
    run so that its outputs are not lost after it: DriverError when its folder is missing or
    it names a folder."""
    target = path if path.endswith(".npy") else path + ".npy"
    folder = os.path.dirname(os.path.abspath(target))
    if not os.path.isdir(folder):
        raise DriverError(f"--output {path}: the folder {folder} does not exist",
                          f"create it (mkdir -p {folder}) or write elsewhere")  # fmt: skip
    if os.path.isdir(target):
        raise DriverError(f"--output {path}: {target} is a folder", "name a file: --output y.npy")
    return target


def save_array(target: str, array: np.ndarray) -> None:
    """``array`` written to ``target`` whole or not at all (a file beside it, then renamed)."""
    from brainsmith.files import write_atomically

    def write(temporary: str) -> None:
        with open(temporary, "wb") as handle:  # (a name: np.save would add .npy)
            np.save(handle, array)

    write_atomically(target, write)


def _generated(board: Board) -> np.ndarray:
    """GENERATED_FRAMES inputs drawn from the design input's data type (seed 0)."""
    from brainsmith.verification.verifier import generate_inputs

    runnable = Host(board.streams).runnable
    return np.stack([s[0] for s in generate_inputs(runnable, GENERATED_FRAMES)])


def _output(board: Board) -> tuple[bool, str]:
    """(whether the design's output is of an integer data type, its name)."""
    runnable = Host(board.streams).runnable
    name = runnable.graph.output[0].name
    return bool(runnable.get_tensor_datatype(name).is_integer()), name


def compare(
    got: np.ndarray, expected: np.ndarray, exact: bool, path: str, name: str = "output"
) -> None:
    """DriverError (exit 1) naming the first frame and output element that differ: exactly
    for an integer output, else beyond verification's float tolerance (``FLOAT_RTOL`` of
    the largest expected value, plus ``VERIFY_RTOL`` of each)."""
    if expected.size != got.size:
        raise DriverError(
            f"--expected {path} has {expected.size} values, the run gave {got.size} "
            f"(outputs of shape {got.shape})",
            "give one expected output per input",
        )
    frames = got.reshape(len(got) if got.ndim > 1 else 1, -1).astype(np.float64)
    wanted = expected.reshape(frames.shape).astype(np.float64)
    _refuse_non_finite(wanted, path)
    tolerance, beyond = _beyond(frames, wanted, exact)
    if not beyond.any():
        return
    frame, index = (int(i) for i in np.argwhere(beyond)[0])
    rule = "exactly" if exact else f"within {tolerance:.3g}"
    raise DriverError(
        f"frame {frame}, output {name}[{index}]: got {frames[frame, index]:g}, expected "
        f"{wanted[frame, index]:g} ({int(beyond.sum())} of {beyond.size} elements differ "
        f"{rule}; {int(beyond.any(axis=1).sum())} of {len(frames)} frames)",
        f"compare with brainsmith.BuildResult.load(BUILD).run(x); is {os.path.basename(path)} "
        "the expected output of this --input?",
        exit_code=1,
    )


def _refuse_non_finite(wanted: np.ndarray, path: str) -> None:
    """DriverError (exit 2) when an expected value is infinite or NaN: an accelerator's
    outputs are finite, and the tolerance must not be taken from such a value."""
    bad = ~np.isfinite(wanted)
    if bad.any():
        frame, index = (int(i) for i in np.argwhere(bad)[0])
        raise DriverError(
            f"--expected {path} holds {int(bad.sum())} values that are not finite (the first: "
            f"frame {frame}, element {index}, {wanted[frame, index]}); nothing was compared",
            "give the torch model's (or BuildResult.run's) outputs for this --input",
        )


def _beyond(frames: np.ndarray, wanted: np.ndarray, exact: bool) -> tuple[float, np.ndarray]:
    """(the absolute tolerance, where ``frames`` differ from ``wanted`` beyond it): none for
    an ``exact`` comparison, else ``FLOAT_RTOL`` of the largest wanted value plus
    ``VERIFY_RTOL`` of each; a NaN got never matches."""
    from brainsmith.blueprint.options import VERIFY_RTOL
    from brainsmith.verification.verifier import FLOAT_RTOL

    tolerance = 0.0 if exact else FLOAT_RTOL * float(np.abs(wanted).max(initial=0.0))
    relative = 0.0 if exact else VERIFY_RTOL
    beyond = np.abs(frames - wanted) > tolerance + relative * np.abs(wanted)
    beyond |= np.isnan(frames)  # (what is wanted is finite)
    return tolerance, beyond


__all__ = ["RunOutcome", "compare", "load_array", "output_path", "run_build_folder"]
