"""``build:`` options of a blueprint, validated into a typed, immutable BuildOptions."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from brainsmith.plugin.blueprint.checks import Checker

VERIFY_MODES = ("each", "final", "rtlsim", "none")  # rtlsim: final + Verilator per RTL layer
MAX_VERIFY_SAMPLES = 100_000
VERIFY_ATOL = 1e-3  # FINN's own verification tolerances (DataflowBuildConfig defaults)
VERIFY_RTOL = 1e-5
BUILD_KEYS = {
    "fpga_part": "the FPGA part, e.g. xcvc1902-vsva2197-2MP-e-S (or board, not both)",
    "board": "a board name such as Pynq-Z1 or U250 (or fpga_part, not both)",
    "clock_ns": "the target clock period in nanoseconds, a number > 0",
    "target_fps": "a whole number of frames per second > 0",
    "verify": "one of " + ", ".join(VERIFY_MODES),
    "verify_samples": f"a whole number of random inputs, 1 to {MAX_VERIFY_SAMPLES}",
    "verify_atol": f"the absolute tolerance of verification, a number >= 0 (default {VERIFY_ATOL})",
    "verify_rtol": f"the relative tolerance of verification, a number >= 0 (default {VERIFY_RTOL})",
    "folding_config": "the path of a FINN folding configuration file (relative to the blueprint)",
    "specialize_config": "the path of a FINN specialize-layers file (relative to the blueprint)",
    "output_dir": "a folder path (relative to the blueprint)",
}


@dataclass(frozen=True)
class BuildOptions:
    """What a build needs beyond the model. Paths are absolute; exactly one of
    ``fpga_part`` and ``board`` is set."""

    fpga_part: str | None = None
    board: str | None = None
    clock_ns: float = 10.0
    target_fps: int | None = None
    verify: str = "final"  # each | final | rtlsim | none (see VERIFY_MODES)
    verify_samples: int = 16
    verify_atol: float = VERIFY_ATOL  # |actual - expected| <= atol + rtol * |expected|
    verify_rtol: float = VERIFY_RTOL
    folding_config: str | None = None
    specialize_config: str | None = None
    output_dir: str | None = None

    def to_dict(self) -> dict:
        """The options that are set, as plain YAML/JSON data."""
        return {key: value for key, value in asdict(self).items() if value is not None}


def check_build(check: Checker, section: object, complete: bool) -> BuildOptions | None:
    """Validate the ``build:`` mapping; None when any option is invalid."""
    path = ("build",)
    given = check.mapping(path, section, BUILD_KEYS)
    before = len(check.diag.problems)
    values: dict = {}
    for key in ("fpga_part", "board"):
        if key in given:
            values[key] = check.text((*path, key), given[key], BUILD_KEYS[key])
    if "clock_ns" in given:
        values["clock_ns"] = check.number(
            (*path, "clock_ns"), given["clock_ns"], BUILD_KEYS["clock_ns"]
        )
    if "target_fps" in given:
        values["target_fps"] = check.whole(
            (*path, "target_fps"), given["target_fps"], BUILD_KEYS["target_fps"]
        )
    if "verify" in given:
        values["verify"] = check.choice((*path, "verify"), given["verify"], VERIFY_MODES)
    if "verify_samples" in given:
        values["verify_samples"] = check.whole(
            (*path, "verify_samples"),
            given["verify_samples"],
            BUILD_KEYS["verify_samples"],
            MAX_VERIFY_SAMPLES,
        )
    for key in ("verify_atol", "verify_rtol"):
        if key in given:
            values[key] = check.tolerance((*path, key), given[key], BUILD_KEYS[key])
    for key in ("folding_config", "specialize_config", "output_dir"):
        if key in given:
            values[key] = check.file_path(
                (*path, key), given[key], BUILD_KEYS[key], must_exist=key != "output_dir"
            )
    if complete and isinstance(section, dict):
        _check_target(check, given)
    if len(check.diag.problems) != before:
        return None
    return BuildOptions(**values)


def _check_target(check: Checker, given: dict) -> None:
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
