"""The gate every build folder passes before brainsmith reads it. A folder travels (a
colleague's, a CI artefact, a download), so its files are untrusted input: strings in
report.json, final.onnx and final_parent.onnx become folder names, paths, tool scripts,
module imports and programs to run unless they are checked first.

``open_build_folder`` checks, before any FINN code runs and before anything is written:

- its files: each a regular file or a folder (a link only to a place inside the folder, no
  FIFO, device or socket), at most ``MAX_FILE_BYTES`` each, at most ``MAX_ENTRIES`` in all,
  at most ``MAX_DEPTH`` folders down;
- report.json: a bounded JSON object (``files.read_json``) whose fields that reach paths,
  tools and pages have their types, numbers finite;
- design.json, where the build stitched a whole accelerator in RTL: its one description
  (``brainsmith.hardware.design``), each value of its type and range, each path relative and
  plain, in the folder or FINN's RTL library;
- final.onnx and final_parent.onnx (intake's loader: bounded, external data inside): every
  node named by a plain identifier, once (a layer's name becomes a folder name), every
  name-like attribute (``gen_top_module``) one too; every domain standard ONNX, QONNX, FINN
  or a registered kernel's (QONNX imports a node's domain as a Python module); every path
  attribute absolute and inside the folder (one into the folder the build was made in is
  taken from this one); no program, simulator library or log file named (FINN would run,
  load or write it); hardware layers only in final.onnx, the graph around it holding the
  partition and the host's nodes.

Every problem found goes into one ``UntrustedFolder`` error (exit 2); a refused folder is
left as it was.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from typing import cast

from brainsmith.errors import BrainsmithError
from brainsmith.files import DamagedFile, read_json
from brainsmith.frameworks.finn.facts import is_hardware
from brainsmith.hardware.design import FILE as DESIGN
from brainsmith.hardware.design import BadDesign, Design
from brainsmith.intake.model import (
    KNOWN_DOMAINS,
    InputError,
    all_nodes,
    check_attribute_sizes,
    check_node_count,
    kernel_domains,
    load_model_bounded,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    import onnx
    from qonnx.core.modelwrapper import ModelWrapper

    from brainsmith.files import Json
    from brainsmith.report_schema import BuildReport

MAX_ENTRIES = 200_000  # files and folders; a build of the largest network has a few thousand
MAX_FILE_BYTES = 2**31 - 1  # what an ONNX model can hold; weight files are far smaller
MAX_DEPTH = 64  # folders below the build folder; a build's own go about ten deep
MAX_PROBLEMS_SHOWN = 12
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,199}")
REBUILD = "build the model again (brainsmith build MODEL BLUEPRINT -o FOLDER) and use that folder"

# node attributes that name a folder or file of the build (FINN's code folders, a
# partition's model): absolute, and inside the folder once moved into it
PATH_ATTRIBUTES = (
    "code_gen_dir_ipgen",
    "ipgen_path",
    "ip_path",
    "code_gen_dir_cppsim",
    "iteration_context_path",
    "model",
)
# node attributes that make FINN run a program, load a library or write a file
RUN_ATTRIBUTES = ("executable_path", "rtlsim_so", "rtlsim_trace", "debug_log_path")
# node attributes that become module or instance names in generated code and tool scripts
NAME_ATTRIBUTES = ("gen_top_module", "instance_name")
STATUSES = ("ok", "failed", "interrupted", "running")
TEXT_FIELDS = ("name", "output_dir", "fpga_part", "board", "model", "blueprint_path")


class UntrustedFolder(BrainsmithError):
    """A build folder refused by the gate: ``reason`` lists every problem, ``hint`` what
    to do; ``problems`` holds them one by one."""

    def __init__(self, folder: str, problems: list[str]) -> None:
        shown = problems[:MAX_PROBLEMS_SHOWN]
        more = len(problems) - len(shown)
        count = "1 problem" if len(problems) == 1 else f"{len(problems)} problems"
        lines = [f"build folder {folder} cannot be used ({count}):"]
        lines += [f"  {problem}" for problem in shown]
        if more:
            lines.append(f"  ... and {more} more")
        self.reason = "\n".join(lines)
        self.hint = REBUILD
        self.folder, self.problems = folder, problems
        super().__init__(self.reason)


@dataclass
class BuildFolder:
    """A folder that passed the gate: its report, final model (code paths pointing into the
    folder), the graph around it and its accelerator's description (each None when the
    build has none)."""

    path: str
    report: BuildReport
    model: ModelWrapper | None
    parent: ModelWrapper | None
    design: Design | None = None


def open_build_folder(folder: str | os.PathLike[str], models: bool = True) -> BuildFolder:
    """``folder``'s report and (with ``models``, for a build that finished) its final models,
    once every check above holds; UntrustedFolder listing each problem otherwise. A missing or damaged report.json
    is the caller's to explain (``FileNotFoundError``, ``DamagedFile``)."""
    path = os.path.abspath(folder)
    root = os.path.realpath(path)
    bad = dict(file_problems(root))
    problems = list(bad.values())
    report = _read_report(path, "report.json" in bad)
    problems += report_problems(report)
    protos: dict[str, onnx.ModelProto] = {}
    design = None
    if models and report.get("status") == "ok":
        protos = _checked_models(path, bad, str(report.get("output_dir") or ""), problems)
        design = _design(path, bad, problems)
    if problems:
        raise UntrustedFolder(path, problems)
    from qonnx.core.modelwrapper import ModelWrapper

    final, parent = protos.get("final.onnx"), protos.get("final_parent.onnx")
    return BuildFolder(
        path,
        cast("BuildReport", report),
        None if final is None else ModelWrapper(final),
        None if parent is None else ModelWrapper(parent),
        design,
    )


def _read_report(path: str, refused: bool) -> Json:
    """``path``'s report.json (an empty one if its file was ``refused``)."""
    report_path = os.path.join(path, "report.json")
    if not os.path.lexists(report_path):
        raise FileNotFoundError(report_path)
    return {} if refused else read_json(report_path)


def _design(path: str, bad: dict[str, str], problems: list[str]) -> Design | None:
    """``path``'s design.json as a ``Design`` (None where the build wrote none); what is
    wrong with it is added to ``problems``."""
    if DESIGN in bad or not os.path.lexists(os.path.join(path, DESIGN)):
        return None
    try:
        return Design.of_json(read_json(os.path.join(path, DESIGN)))
    except BadDesign as exc:
        problems += exc.problems
    except (DamagedFile, OSError) as exc:
        problems.append(f"{DESIGN}: {exc}")
    return None


def _checked_models(
    path: str, bad: dict[str, str], built_in: str, problems: list[str]
) -> dict[str, onnx.ModelProto]:
    """The final models of ``path`` (built in ``built_in``), each checked; what is wrong with
    them is added to ``problems``."""
    protos = _final_models(path, bad, problems)
    for name, proto in protos.items():
        problems += model_problems(proto, name, path, built_in, _domains())
    return protos


def _final_models(
    path: str, bad: dict[str, str], problems: list[str]
) -> dict[str, onnx.ModelProto]:
    """final.onnx and final_parent.onnx of ``path`` that load (those ``bad`` names skipped);
    why one does not is added to ``problems``."""
    protos: dict[str, onnx.ModelProto] = {}
    for name in ("final.onnx", "final_parent.onnx"):
        if name in bad or not os.path.isfile(os.path.join(path, name)):
            continue
        proto, found = _load(os.path.join(path, name), name)
        problems += found
        if proto is not None:
            protos[name] = proto
    return protos


# -- the files ------------------------------------------------------------------------------
def file_problems(root: str) -> Iterator[tuple[str, str]]:
    """(path relative to ``root``, problem) for each entry that is not a regular file or
    folder, a link out of it, too large, beyond ``MAX_ENTRIES`` or ``MAX_DEPTH`` folders
    down. Links are not followed; the walk keeps its own list of folders (no recursion)."""
    count, pending = 0, [(root, 1)]
    while pending:
        folder, depth = pending.pop()
        try:
            with os.scandir(folder) as listing:
                entries = [(entry.path, entry.is_dir(follow_symlinks=False)) for entry in listing]
        except OSError:
            continue  # gone meanwhile, or unreadable: nothing in it is read
        for path, is_folder in entries:
            count += 1
            if count > MAX_ENTRIES:
                yield "", f"the folder holds more than {MAX_ENTRIES:,} files and folders"
                return
            shown = os.path.relpath(path, root)
            problem = _entry_problem(path, root)
            if not problem and is_folder and depth >= MAX_DEPTH:
                problem = f"folders nested more than {MAX_DEPTH} deep"
            if problem:
                yield shown, f"{shown}: {problem}"
            elif is_folder:
                pending.append((path, depth + 1))


def _entry_problem(path: str, root: str) -> str:
    """What is wrong with the entry ``path`` of ``root`` ("" when nothing, or it is gone)."""
    try:
        status = os.lstat(path)
    except OSError:
        return ""  # gone meanwhile: nothing to read
    if stat.S_ISLNK(status.st_mode):
        return _link_problem(path, root)
    if not _plain(status.st_mode):
        return "not a regular file (a FIFO, device or socket)"
    if stat.S_ISREG(status.st_mode) and status.st_size > MAX_FILE_BYTES:
        return f"{status.st_size:,} bytes, over the limit of {MAX_FILE_BYTES:,}"
    return ""


def _link_problem(path: str, root: str) -> str:
    target = os.path.realpath(path)
    if not inside(target, root):
        return f"a link out of the folder (to {target})"
    if os.path.exists(target) and not _plain(os.stat(target).st_mode):
        return "a link to a FIFO, device or socket"
    return ""


def _plain(mode: int) -> bool:
    return stat.S_ISREG(mode) or stat.S_ISDIR(mode)


def inside(path: str, folder: str) -> bool:
    """Whether ``path`` is ``folder`` or below it (both absolute)."""
    return os.path.commonpath([path, folder]) == folder


# -- report.json ----------------------------------------------------------------------------
# performance's labels of where a figure at the clock nextpnr reached comes from (--bitstream)
PERFORMANCE_TEXTS = ("fps_source", "latency_source", "clock_source", "cycles_source", "clock_note",
                     "counted_source", "link_source")  # fmt: skip


def report_problems(report: Json) -> list[str]:
    """What in report.json has the wrong type: the status, texts that reach paths and tools,
    the clock and the performance figures (numbers, finite, or null)."""
    if not report:
        return []
    return [
        *_status_problems(report.get("status")),
        *_text_problems(report),
        *_clock_problems(report.get("clock_ns")),
        *_performance_problems(report.get("performance")),
    ]


def _status_problems(status: object) -> list[str]:
    if status in STATUSES:
        return []
    return [f"report.json: status {_shown(status)} is not one of {', '.join(STATUSES)}"]


def _text_problems(report: Json) -> list[str]:
    return [
        f"report.json: {key} {_shown(value)} is not a line of text"
        for key in TEXT_FIELDS
        if not _optional_text(value := report.get(key))
    ]


def _clock_problems(clock: object) -> list[str]:
    from brainsmith.clock import Clock

    period = Clock.read_ns(clock)
    if clock is None or (period is not None and period.in_range()):
        return []
    return [f"report.json: clock_ns {_shown(clock)} is not a clock period in ns"]


def _performance_problems(performance: object) -> list[str]:
    if performance is None:
        return []
    if not isinstance(performance, dict):
        return ["report.json: performance is not an object"]
    return [
        f"report.json: performance.{key} {_shown(value)} {problem}"
        for key, value in performance.items()
        if (problem := _figure_problem(key, value))
    ]


def _figure_problem(key: str, value: object) -> str:
    """Why performance's ``key`` cannot hold ``value`` ("" when it can): a label of where a
    figure comes from is a line of text, the slowest layer a name, every other a number."""
    if value is None:
        return ""
    kind, fits = FIGURE_KINDS.get(key, ("a number", _number))
    return "" if fits(value) else f"is not {kind}"


def _optional_text(value: object) -> bool:
    return value is None or (isinstance(value, str) and _printable(value))


def _number(value: object) -> bool:
    """Whether ``value`` is a number (not a bool) a float holds finite."""
    import math
    import sys

    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    if isinstance(value, int):  # math.isfinite would raise OverflowError past a float's range
        return abs(value) <= sys.float_info.max
    return math.isfinite(value)


def _printable(text: str) -> bool:
    return len(text) <= 4096 and text.isprintable()


def _identifier(value: object) -> bool:
    return isinstance(value, str) and IDENTIFIER.fullmatch(value) is not None


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 160 else text[:157] + "..."


# performance's figures that are not numbers: what each is, and the check of its value
FIGURE_KINDS: dict[str, tuple[str, Callable[[object], bool]]] = {
    **{key: ("a line of text", _optional_text) for key in PERFORMANCE_TEXTS},
    "max_cycles_layer": ("a layer name", _identifier),
}


# -- final.onnx and final_parent.onnx -------------------------------------------------------
def _load(path: str, name: str) -> tuple[onnx.ModelProto | None, list[str]]:
    try:
        return load_model_bounded(path), []
    except InputError as exc:
        return None, [f"{name}: {exc.reason}"]


def model_problems(
    proto: onnx.ModelProto, name: str, folder: str, built_in: str, domains: set[str]
) -> list[str]:
    """What in ``proto`` (the file ``name`` of ``folder``) would become a path, an import, a
    tool command or a program; code paths into ``built_in`` (the folder the build was made
    in) are pointed into ``folder`` in ``proto`` itself."""
    try:
        check_node_count(proto, name)
        check_attribute_sizes(proto, name)
    except InputError as exc:
        return [exc.reason]
    allowed = set(KNOWN_DOMAINS) | domains
    root = os.path.realpath(folder)
    problems: list[str] = []
    seen: set[str] = set()
    for node in _all_nodes(proto.graph):
        where = f"{name}: node {_shown(node.name)} ({_shown(node.op_type)[1:-1]})"
        problems += [f"{where}: {p}" for p in _node_problems(node, name, seen, allowed)]
        problems += [f"{where}: {p}" for p in _attribute_problems(node, folder, root, built_in)]
    return problems


def _node_problems(node: onnx.NodeProto, name: str, seen: set[str], allowed: set[str]) -> list[str]:
    """What is wrong with ``node`` of the file ``name`` itself: its name (``seen`` before it
    is added to), its domain (one of ``allowed``), a hardware layer outside the accelerator."""
    problems = []
    if not _identifier(node.name):
        problems.append("its name is not a plain identifier (letters, digits, _)")
    elif node.name in seen:
        problems.append("another node has the same name")
    seen.add(node.name)
    if node.domain not in allowed:
        problems.append(
            f"domain {_shown(node.domain)} is neither standard ONNX, QONNX, FINN nor a "
            "registered kernel's (it would be imported as a Python module)"
        )
    if name == "final_parent.onnx" and _hardware(node):
        problems.append("a hardware layer outside the accelerator (final.onnx holds them)")
    return problems


def _attribute_problems(node: onnx.NodeProto, folder: str, root: str, built_in: str) -> list[str]:
    problems = []
    for attribute in node.attribute:
        if attribute.name not in PATH_ATTRIBUTES + RUN_ATTRIBUTES + NAME_ATTRIBUTES:
            continue
        problem = _attribute_problem(attribute, folder, root, built_in) if attribute.s else ""
        if problem:
            problems.append(f"attribute {attribute.name} {problem}")
    return problems


def _attribute_problem(
    attribute: onnx.AttributeProto, folder: str, root: str, built_in: str
) -> str:
    """Why ``attribute`` (one that names a file, a program or a module) cannot stay as it
    is ("" when it can; a path into the build's folder is pointed into ``folder``)."""
    try:
        value = attribute.s.decode()
    except UnicodeDecodeError:
        return "is not text"
    if attribute.name in RUN_ATTRIBUTES:
        return (
            f"names {_shown(value)}, a file FINN would run, load or write; a build leaves it empty"
        )
    if attribute.name in NAME_ATTRIBUTES:
        return "" if _identifier(value) else f"{_shown(value)} is not a plain identifier"
    moved, problem = own_path(value, folder, root, built_in)
    if not problem:
        attribute.s = moved.encode()
    return problem


def own_path(path: str, folder: str, root: str, built_in: str) -> tuple[str, str]:
    """``path`` inside ``folder`` (one into ``built_in``, the folder the build was made in,
    or elsewhere taken from this folder's finn/build), or why it cannot be."""
    if "\0" in path or not path.isprintable():
        return "", f"{_shown(path)} is not a path"
    if not os.path.isabs(path):
        return "", f"{_shown(path)} is a relative path; a build writes absolute ones"
    if not inside(os.path.realpath(path), root):
        path = _moved_in(path, folder, built_in)
    if not inside(os.path.realpath(path), root):
        return "", f"{_shown(path)} leads out of the folder"
    return path, ""


def _moved_in(path: str, folder: str, built_in: str) -> str:
    """``path`` (outside ``folder``) in ``folder``: at its place in the folder the build was
    made in, ``built_in``, or else in finn/build."""
    if built_in and os.path.isabs(built_in) and inside(os.path.normpath(path), built_in):
        return os.path.join(folder, os.path.relpath(os.path.normpath(path), built_in))
    return os.path.join(folder, "finn", "build", os.path.basename(os.path.normpath(path)))


def _hardware(node: onnx.NodeProto) -> bool:
    """One of FINN's hardware layers (a partition of them is not one)."""
    return is_hardware(node) and node.op_type != "StreamingDataflowPartition"


def _all_nodes(graph: onnx.GraphProto) -> Iterator[onnx.NodeProto]:
    yield from all_nodes(graph)


def _domains() -> set[str]:
    """The node domains registered kernels declare."""
    return kernel_domains()
