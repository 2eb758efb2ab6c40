"""FINN's warnings in a build's build.log: each distinct one with how often it came, and the
SetFolding warnings that the final cycle estimates supersede."""

from __future__ import annotations

import importlib.util
import os
import re

LOG_LINE = re.compile(r"^(WARNING|ERROR|CRITICAL) ([\w.]+): (.*)$")
MAX_WARNINGS = 100
QUOTED_PATH = re.compile(r"'/[^']*'")
WARNED_AT = re.compile(r"\(([^()]+):\d+\)$")  # a Python warning's "(file:line)"

TYPE_CHECKING = False
if TYPE_CHECKING:
    from brainsmith.report_schema import FinnWarning

# FINN's warnings from SetFolding, logged while it searches, before later steps (a folding
# config, a second pass) settle the folding: numbers of a folding that is not the final one,
# and the verdict on the target, which the final cycle estimates confirm or refute.
FOLDING_NUMBERS = re.compile(
    r"Estimated: \d+ \(cyc/frame\), Target: \d+ \(cyc/frame\)"
    r"|did not meet the target cycles|is bottleneck with \d+ cycles"
)
FOLDING_VERDICT = re.compile(
    r"did not reach the target throughput"
    r"|SIMD parallelization for at least one node was limited by mvau_wwidth_max"
)


def superseded(message: str, target_missed: bool) -> bool:
    """Whether the final cycle estimates supersede FINN's warning ``message``: SetFolding's
    per-node numbers always, its verdict on the target when every layer meets it."""
    return bool(FOLDING_NUMBERS.search(message)) or (
        not target_missed and bool(FOLDING_VERDICT.search(message))
    )


def finn_warnings(log_path: str) -> list[FinnWarning]:
    """Distinct warnings and errors logged to build.log, with how often each came (those that
    differ only in a quoted file path as one, ``same_warning``), but for the ResourceWarnings
    raised in FINN's and QONNX's code (files they leave open); a message that begins on the
    lines after its ``WARNING source:`` line is taken from there, one that goes on in indented
    lines (FINN's) is taken whole."""
    try:
        with open(log_path, encoding="utf-8", errors="replace") as handle:
            lines = [line.rstrip("\n") for line in handle]
    except OSError:
        return []
    found: dict[tuple[str, str], FinnWarning] = {}
    quiet = framework_folders()
    for index in range(len(lines)):
        logged = _logged(lines, index, quiet)
        if logged is not None:
            _count(found, *logged)
    return list(found.values())[:MAX_WARNINGS]


def _logged(lines: list[str], index: int, quiet: tuple[str, ...]) -> tuple[str, str, str] | None:
    """The level, source and whole message logged at line ``index``; None for another line,
    an empty message, or a ResourceWarning from ``quiet`` (FINN's and QONNX's folders)."""
    match = LOG_LINE.match(lines[index])
    if match is None:
        return None
    level, source, message = match.groups()
    if source == "ResourceWarning" and _warned_in(message, quiet):
        return None  # Python's note of a file FINN or QONNX left open: build.log keeps it
    if not message.strip():
        message = " ".join(_continuation(lines, index + 1))
    else:  # a message of several lines (FINN's): its indented lines after the first
        message = " ".join([message, *_continuation(lines, index + 1, indented=True)])
    message = " ".join(message.split())
    return (level, source, message) if message else None


def _count(
    found: dict[tuple[str, str], FinnWarning], level: str, source: str, message: str
) -> None:
    """Count ``message`` in ``found``, as one with the warnings it differs from only in a path."""
    key = (source, same_warning(message))
    entry = found.setdefault(
        key, {"level": level, "source": source, "message": message, "count": 0}
    )
    if entry["message"] != message:  # the same warning about another file
        entry["message"] = key[1]
    entry["count"] += 1


def framework_folders() -> tuple[str, ...]:
    """The folders of the installed FINN and QONNX packages, each ending in a separator."""
    found: list[str] = []
    for name in ("finn", "qonnx"):
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            continue
        if spec is not None:
            found += spec.submodule_search_locations or []
    return tuple(os.path.join(os.path.realpath(folder), "") for folder in found)


def _warned_in(message: str, folders: tuple[str, ...]) -> bool:
    """Whether the Python warning ``message`` (ending "(file:line)") came from ``folders``."""
    site = WARNED_AT.search(message)
    if site is None or not folders:
        return False
    return os.path.realpath(site[1]).startswith(folders)


def same_warning(message: str) -> str:
    """``message`` with its quoted absolute paths as '…': what a warning logged from one
    place once per file (a plugin's ``ResourceWarning: unclosed file``, say) says every
    time."""
    return QUOTED_PATH.sub("'…'", message)


def _continuation(lines: list[str], start: int, most: int = 5, indented: bool = False) -> list[str]:
    """The lines of a message logged after its level line: up to the next log line or blank
    (``indented``: or the first line not indented)."""
    taken: list[str] = []
    for line in lines[start : start + most]:
        if not line.strip() or LOG_LINE.match(line) or (indented and not line[:1].isspace()):
            break
        taken.append(line.strip())
    return taken
