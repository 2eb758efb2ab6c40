"""What several commands share: their common options, the build folder they work on under
its lock, how they print an error, and how they exit (click only at import: the command
line starts fast)."""

from __future__ import annotations

import math
import os
import sys
from typing import Any

import click

from brainsmith.cli.output import console, echo, print_json

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import NoReturn, Protocol, TypeVar

    from rich.console import Console
    from rich.table import Table

    from brainsmith.files import Json
    from brainsmith.folder_lock import FolderLock

    Command = TypeVar("Command", bound=Callable[..., object])

    class Decorator(Protocol):
        """An option added to a command."""

        def __call__(self, command: Command, /) -> Command: ...


build_dir_argument = click.argument("build_dir", type=click.Path(file_okay=False))
"""``BUILD_DIR``: the folder of a finished build that a command works on."""

EXPECTED_HELP = (
    "Expected outputs for --input: an .npy, or for a model with several outputs an .npz "
    "of one array per output (in the model's order, or keyed by output name)."
)


def json_option(text: str) -> Decorator:
    """``--json`` (``as_json``): print the result as JSON instead of in words."""
    return click.option("--json", "as_json", is_flag=True, help=text)


def output_option(text: str) -> Decorator:
    """``-o/--output`` (``output_dir``): the folder a build or exploration writes."""
    return click.option("-o", "--output", "output_dir", type=click.Path(file_okay=False), help=text)


def vector_options(input_text: str) -> Decorator:
    """``--input`` and ``--expected`` (``input_npy``, ``expected_npy``): the vectors a
    build's verification checks."""
    given = click.option("--input", "input_npy", type=click.Path(dir_okay=False), help=input_text)
    expected = click.option(
        "--expected", "expected_npy", type=click.Path(dir_okay=False), help=EXPECTED_HELP
    )

    def both(command: Command) -> Command:
        return given(expected(command))

    return both


def override_flag(name: str, text: str) -> Decorator:
    """A flag that, given, sets a blueprint option; absent (None), the blueprint's stands."""
    return click.option(name, is_flag=True, default=None, help=text)


def quiet_option() -> Decorator:
    """``-q/--quiet``: no progress display."""
    return click.option(
        "--quiet", "-q", is_flag=True, help="No progress display; only the summary."
    )


def exit_now(code: int) -> NoReturn:
    """End the command with ``code``, skipping the slow interpreter teardown after FINN."""
    from brainsmith.frameworks.finn.env import fast_exit

    fast_exit(code)
    sys.exit(code)


def error_exit(reason: str, hint: str, code: int) -> NoReturn:
    """``error: REASON`` (and ``  try: HINT``) on stderr, then exit with ``code``."""
    echo(f"error: {reason}", err=True)
    if hint:
        echo(f"  try: {hint}", err=True)
    exit_now(code)


def status_note(as_json: bool = False) -> Callable[[str], None] | None:
    """What a command says on stderr while it works (``TEXT ...``); None under ``--json``.
    The console is bound now: FINN's output is redirected later."""
    if as_json:
        return None
    from brainsmith.terminal import console

    status = console(file=sys.stderr, highlight=False)
    return lambda text: status.print(text + " ...", markup=False)


def on_build_folder(build_dir: str, doing: str, stopped: str, work: Callable[[], Json]) -> Json:
    """``work()`` on ``build_dir`` under its folder lock (the lock build and explore take),
    SIGINT/SIGTERM turned into an interrupt; a FolderError or an interrupt is printed and
    exits (its code, or 128 + the signal), naming ``doing`` and what ``stopped``."""
    from brainsmith import interrupts
    from brainsmith.folder_lock import FolderLock
    from brainsmith.intake.build_folder import FolderError

    lock = FolderLock(build_dir, doing)
    try:
        with interrupts.handled():
            if os.path.isdir(build_dir):
                _take(lock)
            return work()
    except FolderError as exc:
        lock.release()  # before the exit, which skips the interpreter's teardown after FINN
        error_exit(exc.reason, exc.hint, exc.exit_code)
    except interrupts.BuildInterrupted as exc:
        lock.release()
        echo(f"error: {doing} interrupted ({exc.name}); {stopped}", err=True)
        exit_now(128 + exc.signum)
    finally:
        lock.release()


def _take(lock: FolderLock) -> None:
    """``lock`` held; FolderError (exit 2) naming its holder when another has it."""
    from brainsmith.folder_lock import FolderBusy
    from brainsmith.intake.build_folder import FolderError

    try:
        lock.acquire()
    except FolderBusy as exc:
        hint = "wait for it to finish (or stop it), then synthesise again"
        raise FolderError(exc.reason, hint) from None
    except OSError as exc:
        raise FolderError(f"cannot lock {lock.folder} ({exc.strerror or exc})", "") from exc


def print_layers(table: Table, notes: list[str]) -> Console:
    """A table of layers, 132 columns wide off a terminal (a log file or pipe: room for
    whole layer names), then its notes; returns the console for what follows."""
    out = console()
    if not out.is_terminal:
        out.width = 132
    out.print(table)
    for note in notes:
        out.print(note, markup=False, soft_wrap=True)
    return out


def time_cell(seconds: float | None, cached: bool | None) -> str:
    """A table's time cell: ``-`` (did not run), ``cached``, or ``12.3 s``."""
    if seconds is None:
        return "-"
    return "cached" if cached else f"{seconds:.1f} s"


def finish_timed(data: Json, as_json: bool, print_result: Callable[[Json], None]) -> NoReturn:
    """A place-and-route result shown (JSON, or ``print_result``), then exit 0 when its clock
    is met, 3 when missed."""
    if as_json:
        print_json(data)
    else:
        print_result(data)
    exit_now(0 if data["met"] else 3)


class FiniteRange(click.FloatRange):
    """click's FloatRange refusing NaN too (no comparison with NaN fails, so it passed)."""

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> float:
        number = float(super().convert(value, param, ctx))
        if math.isnan(number):
            self.fail(f"{value} is not a number in the range {self._describe_range()}.", param, ctx)
        return number
