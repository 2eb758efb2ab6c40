"""``build:`` options of a blueprint, validated into a typed, immutable BuildOptions."""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from typing import Any, cast

from brainsmith.blueprint.checks import Checker, label
from brainsmith.blueprint.choices import (
    DEFAULT_FPS,
    FOLDING_SEARCHES,
    LATTICE_BOARDS,
    LINKED_BOARDS,
    VERIFY_MODES,
    board_examples,
    board_families,
    lattice_board,
)
from brainsmith.blueprint.errors import Diagnostics
from brainsmith.clock import PERIOD_NS, Clock
from brainsmith.hardware.place_route.parts import (
    UnknownPart,
    built_in_families,
    built_in_part,
    built_in_part_name,
    part_examples,
)
from brainsmith.plugin.adapters import adapter_classes

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from brainsmith.blueprint.document import Document, Path
    from brainsmith.files import Json

    OptionCheck = Callable[[Checker, Path, object, str], object]  # None: reported invalid


MAX_VERIFY_SAMPLES = 100_000
MAX_REFOLD_ROUNDS = 5
VERIFY_RTOL = 1e-5
FINN_CLOCK_NS = 5.0  # the clock period a build runs at when nothing chose one: FINN's 200 MHz
PROJECT_MARKERS = (".git", ".hg", ".brainsmith", "pyproject.toml")
BUILD_KEYS = {
    "fpga_part": "the FPGA part: an AMD part such as xcvc1902-vsva2197-2MP-e-S, or "
    f"{part_examples()} (every layer RTL) (or board, not both)",
    "board": "a board name: FINN's, such as Pynq-Z1 or U250, or one brainsmith makes "
    f"bitstreams for, such as {board_examples()} (or fpga_part, not both)",
    "clock_ns": "the target clock period in nanoseconds, from 0.1 (10 GHz) to 1,000,000",
    "target_fps": "a whole number of frames per second, from 1 to 10**12",
    "target_latency_ns": "the most time one frame may take through the accelerator, in "
    "nanoseconds (FINN's estimate: the sum of layer cycles on the slowest path), from 0.1 "
    "to 10**12",
    "verify": "one of " + ", ".join(VERIFY_MODES),
    "verify_samples": f"a whole number of random inputs, 1 to {MAX_VERIFY_SAMPLES}",
    "verify_atol": "an absolute tolerance of verification, a number >= 0 (default: none; "
    "quantized outputs are compared in quantizer steps, float outputs relative to their range, "
    "differences a rounding tie explains counted as ties)",
    "verify_rtol": f"the relative tolerance of verification, a number >= 0 (default {VERIFY_RTOL})",
    "folding": "a mapping of search (brainsmith or finn), mvau_wwidth_max, max_utilisation",
    "folding_config": "the path of a FINN folding configuration file (relative to the blueprint)",
    "specialize_config": "the path of a FINN specialize-layers file (relative to the blueprint)",
    "output_dir": "a folder inside the blueprint's project, relative to the blueprint",
    "synth": "true to synthesise every RTL layer with Yosys after the last step (7-series, "
    "UltraScale or UltraScale+ parts), or false",
    "bitstream": "true to make a bitstream after the last step for the board (build.board; "
    "Yosys and its family's nextpnr) or the Lattice Nexus part (build.fpga_part; Yosys, "
    "nextpnr-nexus and prjoxide, on pins of brainsmith's choosing), or false",
    "refold_rounds": f"how many times a bitstream that misses its clock is built again, folded "
    f"for the clock nextpnr reached: a whole number, 0 (never) to {MAX_REFOLD_ROUNDS} "
    f"(default 2)",
    "size_fifos": "true (default) to size the FIFOs of an all-RTL design by simulating it in "
    "Verilator (the fifo_depths step), or false to keep FINN's depths",
    "allow_over_part": "true to build a design estimated to need more of a resource than the "
    "part has (a warning in the report), or false (default: the estimates step fails)",
}


FOLDING_KEYS = {
    "search": "brainsmith (the cheapest folding that meets target_fps on the part) or finn "
    "(FINN's SetFolding)",
    "mvau_wwidth_max": "FINN's SetFolding limit on weight bits per PE, a whole number (default 36)",
    "max_utilisation": "the largest fraction of any resource of the part the folding may "
    "use, a number > 0 and <= 1 (default 0.9)",
}


@dataclass(frozen=True)
class FoldingOptions:
    """How ``target_fps`` becomes a folding (``build.folding``)."""

    search: str = "brainsmith"
    mvau_wwidth_max: int = 36
    max_utilisation: float = 0.9


@dataclass(frozen=True)
class BuildOptions:
    """What a build needs beyond the model. Paths are absolute; exactly one of
    ``fpga_part`` and ``board`` is set."""

    fpga_part: str | None = None
    board: str | None = None
    clock_ns: float | None = None  # None: the target's own (``period_ns``, builder.lattice)
    target_fps: int | None = None
    target_latency_ns: float | None = None  # folding also meets this estimated latency
    verify: str = "final"  # each | final | rtlsim | none (see VERIFY_MODES)
    verify_samples: int = 16
    verify_atol: float | None = None  # |actual - expected| <= atol + rtol * |expected|;
    # None: in quantizer steps, float outputs relative to their range (verification.verifier)
    verify_rtol: float = VERIFY_RTOL
    folding: FoldingOptions = FoldingOptions()
    folding_config: str | None = None
    specialize_config: str | None = None
    output_dir: str | None = None
    synth: bool = False  # every RTL layer synthesised with Yosys after the last step
    bitstream: bool = False  # the Lattice board's bitstream made after the last step
    refold_rounds: int = 2  # builds again at the clock nextpnr reached, when it missed
    size_fifos: bool = True  # the fifo_depths step sizes an all-RTL design's FIFOs
    allow_over_part: bool = False  # a design estimated over the part builds, with a warning

    @property
    def fold_fps(self) -> int | None:
        """The throughput the folding aims at: ``target_fps``; ``DEFAULT_FPS`` when the
        build names no target (fps or latency) and no folding config."""
        if self.target_fps or self.target_latency_ns or self.folding_config:
            return self.target_fps
        return DEFAULT_FPS

    @property
    def period_ns(self) -> float:
        """The clock period the build runs at: ``clock_ns``, else FINN's 5 ns (a Lattice
        board's build sets its family's before it starts)."""
        return FINN_CLOCK_NS if self.clock_ns is None else self.clock_ns

    @property
    def lattice(self) -> str | None:
        """What a build for brainsmith's own families is for, by name: its board
        (``ulx3s-85f``) or its part (``LIFCL-40-9BG400C``, ``CCGM1A1``); None for any other
        build."""
        return lattice_board(self.board) or built_in_part_name(self.fpga_part)

    @property
    def clock(self) -> Clock:
        """The clock the build runs at (of period ``period_ns``)."""
        return Clock.from_ns(self.period_ns)

    def to_dict(self) -> Json:
        """The options that are set, as plain YAML/JSON data (``folding`` when not the
        default)."""
        data = {key: value for key, value in asdict(self).items() if value is not None}
        for key in self._unwritten():
            del data[key]
        return data

    def _unwritten(self) -> list[str]:
        """The options at their default, which the written blueprint leaves out."""
        left_out = {
            "folding": self.folding == FoldingOptions(),
            "synth": not self.synth,
            "bitstream": not self.bitstream,
            "refold_rounds": not self.bitstream or self.refold_rounds == BuildOptions.refold_rounds,
            "size_fifos": self.size_fifos,
            "allow_over_part": not self.allow_over_part,
        }
        return [key for key, unwritten in left_out.items() if unwritten]


def check_build(check: Checker, section: object, complete: bool) -> BuildOptions | None:
    """Validate the ``build:`` mapping; None when any option is invalid."""
    path = ("build",)
    given = check.mapping(path, section, BUILD_KEYS)
    before = len(check.diag.problems)
    values = {key: check_option(check, (*path, key), key, value) for key, value in given.items()}
    _check_part_and_board(check, values)
    if complete and isinstance(section, dict):
        _check_target(check, given)
    if len(check.diag.problems) != before:
        return None
    return BuildOptions(**values)  # type: ignore[arg-type]  # each value checked by check_option


class GivenChecker(Checker):
    """Checks build options given by name outside a blueprint (the command line, the API)
    with a blueprint's checks: each problem a line of text; a relative path is taken from
    the working directory."""

    def __init__(self) -> None:
        super().__init__(cast("Document", None), Diagnostics(), {})

    def fail(
        self, path: Path, what: str, expected: str = "", hint: str = "", key: bool = False
    ) -> None:
        self.diag.error(("", 0, 0), what, expected, hint)

    def folder_of(self, path: Path) -> str:
        return os.getcwd()


# The build options a caller may give beside a blueprint (output_dir has its own argument)
GIVEN_KEYS = tuple(key for key in BUILD_KEYS if key != "output_dir")


def check_given(given: Mapping[str, object]) -> tuple[Json, dict[str, list[str]]]:
    """Build options given by name, checked as a blueprint's are: (the values as checked,
    per option the problems). An unknown name is a problem of that name."""
    values: Json = {}
    problems: dict[str, list[str]] = {}
    for key, value in given.items():
        if key not in GIVEN_KEYS:
            problems[key] = [
                f"unknown build option {key!r}; expected one of {', '.join(GIVEN_KEYS)}"
            ]
            continue
        check = GivenChecker()
        checked = check_option(check, ("build", key), key, value)
        if check.diag.problems:
            problems[key] = [p.message for p in check.diag.problems]
        else:
            values[key] = checked
    for key, problem, expected, hint in target_problems(values):
        check = GivenChecker()
        check.fail(("build", key), problem, expected, hint)
        problems[key] = [p.message for p in check.diag.problems]
    return values, problems


def project_root(folder: str) -> str:
    """The project a blueprint in ``folder`` belongs to: the nearest folder up with one of
    PROJECT_MARKERS, else ``folder`` itself."""
    folder = os.path.realpath(folder)
    here = folder
    while True:
        if any(os.path.lexists(os.path.join(here, m)) for m in PROJECT_MARKERS):
            return here
        parent = os.path.dirname(here)
        if parent == here:
            return folder
        here = parent


def output_dir_problem(folder: str, blueprint: str) -> str:
    """Why a blueprint may not name ``folder`` as its output folder ("" when it may): it
    must resolve (symbolic links followed) inside the blueprint's project, and must not
    hold the blueprint itself."""
    where = os.path.dirname(os.path.realpath(blueprint))
    root, real = project_root(where), os.path.realpath(folder)
    if os.path.commonpath([root, real]) != root:
        return f"resolves to {real}, outside the blueprint's project {root}"
    if os.path.commonpath([real, where]) == real:
        return f"resolves to {real}, which holds the blueprint itself"
    return ""


def _output_dir(check: Checker, at: Path, value: object, expected: str) -> str | None:
    if isinstance(value, str) and ("$" in value or value.startswith("~")):
        check.fail(at, f"build.output_dir '{value}' uses $ or ~, which are not expanded", expected)
        return None
    full = check.file_path(at, value, expected, must_exist=False)
    if full is None:
        return None
    problem = output_dir_problem(full, check.doc.source_of(at).path)
    if problem:
        check.fail(
            at,
            f"build.output_dir '{value}' {problem}",
            expected,
            "; to build elsewhere, give the folder on the command line (brainsmith build "
            "MODEL BLUEPRINT -o FOLDER)",
        )
        return None
    return full


def _check_part_and_board(check: Checker, values: Json) -> None:
    """``fpga_part`` and ``board`` against what each framework adapter builds for."""
    for key, problem, expected, hint in target_problems(values):
        check.fail(("build", key), problem, expected, hint)
        values[key] = None


def target_problems(values: Mapping[str, Any]) -> list[tuple[str, str, str, str]]:
    """(option, problem, expected, hint) for ``fpga_part`` and ``board`` in ``values``, as
    each framework adapter judges them; one problem per option. A Lattice board
    (``LATTICE_BOARDS``) or a part of a family brainsmith places is brainsmith's own: no
    adapter judges it; an unknown board is told of the Lattice boards too (those with a USB
    UART when ``bitstream`` is set), an unknown part of brainsmith's families' parts."""
    part, board = values.get("fpga_part"), values.get("board")
    if lattice_board(board):
        board = None
    found: dict[str, tuple[str, str, str, str]] = {}
    if isinstance(part, str) and part.strip():
        try:
            if built_in_part(part) is not None:
                part = None
        except UnknownPart as exc:
            found["fpga_part"] = ("fpga_part", f"build.fpga_part {part!r}: {exc}",
                                  part_examples(), "")  # fmt: skip
            part = None
    if not (part or board):
        return list(found.values())
    boards = LINKED_BOARDS if values.get("bitstream") else LATTICE_BOARDS
    with_uart = " with a USB UART (build.bitstream needs one)" if values.get("bitstream") else ""
    for adapter in adapter_classes():
        for key, problem, expected, hint in adapter.target_problems(part, board):
            if key == "board":
                expected += f"; or an {board_families(boards)} board{with_uart}: "
                expected += ", ".join(boards)
            if key == "fpga_part":
                problem += f", nor an {built_in_families()} part"
                instead = ", or a board instead"
                expected = expected.replace(instead, "") + f"; {part_examples()}{instead}"
            if values.get(key) is not None:
                found.setdefault(key, (key, problem, expected, hint))
    return list(found.values())


def check_option(check: Checker, path: Path, key: str, value: object) -> object:
    """One build option's value, validated (None when invalid: the problem is reported)."""
    return BUILD_CHECKS[key](check, path, value, BUILD_KEYS[key])


def _existing_file(check: Checker, at: Path, value: object, expected: str) -> str | None:
    return check.file_path(at, value, expected, must_exist=True)


def _folding(check: Checker, path: Path, value: object, expected: str) -> FoldingOptions | None:
    given = check.mapping(path, value, FOLDING_KEYS)
    before = len(check.diag.problems)
    values: Json = {
        key: FOLDING_CHECKS[key](check, (*path, key), item, FOLDING_KEYS[key])
        for key, item in given.items()
    }
    if len(check.diag.problems) != before or not isinstance(value, dict):
        return None
    return FoldingOptions(**values)


MAX_FPS = 10**12  # beyond any design: a larger target only overflows the folding's sums
LATENCY_NS = (0.1, 1e12)  # a frame's latency a build can target, in ns


def _within(
    check: Checker, at: Path, value: object, expected: str, bounds: tuple[float, float]
) -> float | None:
    number = check.number(at, value, expected)
    if number is not None and not bounds[0] <= number <= bounds[1]:
        check.fail(at, f"{label(at)} is {number:g}", expected)
        return None
    return number


def _share(check: Checker, at: Path, value: object, expected: str) -> float | None:
    share = check.number(at, value, expected)
    if share is not None and share > 1:
        check.fail(at, f"{label(at)} is {share:g}", expected)
    return share


# What each key of BUILD_KEYS and FOLDING_KEYS accepts: a Checker method (or a function of
# the same form) that reports an invalid value where it was written and returns None.
BUILD_CHECKS: dict[str, OptionCheck] = {
    "fpga_part": Checker.text,
    "board": Checker.text,
    "clock_ns": lambda check, at, value, expected: _within(check, at, value, expected, PERIOD_NS),
    "target_fps": lambda check, at, value, expected: check.whole(at, value, expected, MAX_FPS),
    "target_latency_ns": lambda check, at, value, expected: _within(
        check, at, value, expected, LATENCY_NS
    ),
    "verify": lambda check, at, value, _: check.choice(at, value, VERIFY_MODES),
    "verify_samples": lambda check, at, value, expected: check.whole(
        at, value, expected, MAX_VERIFY_SAMPLES
    ),
    "verify_atol": Checker.tolerance,
    "verify_rtol": Checker.tolerance,
    "folding": _folding,
    "folding_config": _existing_file,
    "specialize_config": _existing_file,
    "output_dir": _output_dir,
    "synth": Checker.flag,
    "bitstream": Checker.flag,
    "refold_rounds": lambda check, at, value, expected: check.whole(
        at, value, expected, MAX_REFOLD_ROUNDS, minimum=0
    ),
    "size_fifos": Checker.flag,
    "allow_over_part": Checker.flag,
}
FOLDING_CHECKS: dict[str, OptionCheck] = {
    "search": lambda check, at, value, _: check.choice(at, value, FOLDING_SEARCHES),
    "mvau_wwidth_max": lambda check, at, value, expected: check.whole(at, value, expected, 8191),
    "max_utilisation": _share,
}


def _check_target(check: Checker, given: Json) -> None:
    if "fpga_part" in given and "board" in given:
        doc = check.doc
        part, board = ("build", "fpga_part"), ("build", "board")
        here = min((board, part), key=lambda p: doc.sources.index(doc.source_of(p)))
        first = {part: board, board: part}[here]
        other = doc.locate(first, key=True)
        check.fail(
            here,
            f"build sets both fpga_part and board ({first[-1]} is set at {other[0]}:{other[1]})",
            "exactly one of them; set the inherited one to null to drop it",
            key=True,
        )
    elif "fpga_part" not in given and "board" not in given:
        check.fail(
            ("build",),
            "build sets neither fpga_part nor board",
            "exactly one of them, e.g. fpga_part: xcvc1902-vsva2197-2MP-e-S",
            key=True,
        )
