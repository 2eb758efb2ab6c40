"""Every workaround brainsmith needs to use FINN in-process, on machines with or without
Xilinx tools, in one place. Each is applied once, before the first FINN module is imported.

What FINN does, and why the workaround is safe:

1. ``FINN_BUILD_DIR`` must name an existing folder (generated code goes there). When unset,
   we create a private per-user folder in the temp dir and export it; FINN's own runner
   does the same with its build dir. A user's own setting is never changed.
2. FINN keeps global settings that its CLI initialises; library users get
   ``FINNUserError`` without them. ``get_settings()`` rebuilds them from
   ``FINN_BUILD_DIR`` (1.), which is FINN's own mechanism for worker processes.
3. ``finn.builder.build_dataflow_steps`` does ``from finn.xsi import SimEngine`` at import;
   without Vivado that lookup raises ``OSError`` and the whole module (all build steps)
   fails to import. When ``XILINX_VIVADO`` is unset we bind those XSI names to stand-ins
   that raise a clear error *when called*. RTL simulation cannot run without Vivado
   anyway, so only the failure's timing changes; with Vivado present nothing is touched.
4. Brevitas/torch export writes ``torchinductor_$USER`` into the shared temp dir unless
   ``TORCHINDUCTOR_CACHE_DIR`` is set; we point it into the private build folder.

FINN's builder (``build_dataflow_cfg``) also replaces ``sys.stdout``/``sys.stderr`` and the
root logging configuration; brainsmith never calls it — it runs the step functions itself
(``brainsmith.build``) — and ``preserve_process_io`` restores both around any FINN call
that might.

Used by ``brainsmith.build``:

5. FINN's steps talk: ``print`` calls, the ``finn_logger`` and ``build_dataflow`` loggers,
   rich consoles bound to ``sys.stdout`` and Python warnings (which a test run may turn
   into errors). ``contain_finn_output(stream)`` sends all of it to ``stream`` (the
   build's ``build.log``) for the duration of one call and restores everything after.
6. Generated code goes to ``make_build_dir()`` below FINN's global build dir.
   ``generated_code_dir(path)`` points FINN's settings (and ``FINN_BUILD_DIR``) at a
   build's own folder for the duration, so a build's code lands in its output folder
   instead of the shared temp dir.
7. ``build_dataflow_cfg`` ends with ``get_vivado_root()``, which raises without Vivado
   (it only records the tool version in a report). ``run_finn_builder`` calls FINN's own
   runner with that lookup answering ``""`` when Vivado is absent, and afterwards restores
   what the runner changes for the whole process: ``sys.stdout``/``sys.stderr``, the root
   logger, FINN's console and the capture of warnings into logging.
8. FINN's Python models of some hardware layers do not compute in the layout the generated
   hardware uses; ``brainsmith.frameworks.finn.execution`` corrects them for verification.
9. Tearing the interpreter down after FINN (some 4,000 modules with torch, scipy and
   sklearn) takes 1-2 s. ``fast_exit(code)`` lets a finished command flush its output and
   leave with ``os._exit`` — only when the process's own stdout/stderr are in use, so a
   host that runs the command in-process (tests, click's CliRunner) is never ended.
10. FINN packs each value of a weight or threshold memory, and of each word an RTL
    simulation reads, into hex one ``bitstring`` object at a time (7 s for a 30,000-row
    memory); ``brainsmith.frameworks.finn.packing`` packs the same strings in NumPy, and
    ``brainsmith.frameworks.finn.datatypes`` checks one threshold at a time against its
    integer type in plain Python, as FINN asks it to.
"""

from __future__ import annotations

import contextlib
import io
import os
import stat
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from typing import NoReturn, TextIO

from brainsmith.errors import BrainsmithError
from brainsmith.frameworks.finn import cycles, datatypes, packing

_prepared = False
_prepare_lock = threading.RLock()
_preparing: int | None = None  # the thread preparing FINN now
XSI_NAMES = (
    "SimEngine",
    "locate_glbl",
    "compile_sim_obj",
    "get_simkernel_so",
    "load_sim_obj",
    "reset_rtlsim",
    "close_rtlsim",
    "rtlsim_multi_io",
)


def private_build_dir() -> str:
    """A per-user folder in the temp dir; a same-named folder we do not own is not used."""
    uid = os.getuid() if hasattr(os, "getuid") else "user"
    path = os.path.join(tempfile.gettempdir(), f"brainsmith-finn-{uid}")
    os.makedirs(path, mode=0o700, exist_ok=True)
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode) or (hasattr(os, "getuid") and st.st_uid != os.getuid()):
        return tempfile.mkdtemp(prefix="brainsmith-finn-")
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return tempfile.mkdtemp(prefix="brainsmith-finn-")
    return path


def prepare_finn() -> None:
    """Make FINN importable and usable as a library here (idempotent, cheap after once)."""
    global _prepared, _preparing
    if _prepared:
        return
    with _prepare_lock:  # a second thread waits until the first has finished preparing
        if _prepared:  # the thread before us may have set it
            return  # type: ignore[unreachable]
        if _preparing == threading.get_ident():
            raise BrainsmithError(shadowed_finn())
        _preparing = threading.get_ident()
        try:
            _prepare()
        finally:
            _preparing = None
        _prepared = True


def shadowed_finn() -> str:
    """Why importing FINN came back to preparing it: another module named ``finn``."""
    found = getattr(sys.modules.get("finn"), "__file__", None) or "another module"
    return (
        f"importing FINN ran {found}, not the finn-plus package: a file or folder named "
        "'finn' on sys.path (the script's folder or the current one) hides FINN; rename it"
    )


def _prepare() -> None:
    if not os.environ.get("FINN_BUILD_DIR"):
        os.environ["FINN_BUILD_DIR"] = private_build_dir()
    else:
        os.makedirs(os.environ["FINN_BUILD_DIR"], exist_ok=True)
    os.environ.setdefault(
        "TORCHINDUCTOR_CACHE_DIR", os.path.join(os.environ["FINN_BUILD_DIR"], "torchinductor")
    )
    try:
        from brainsmith.frameworks.finn.passes import linear_passes, tensor_names

        tensor_names.install()
        linear_passes.install()
        datatypes.install()
    except ImportError:
        pass  # QONNX is not installed; the caller reports that

    cycles.install()
    packing.install()
    if os.environ.get("XILINX_VIVADO"):
        return
    try:
        import finn.xsi as xsi
    except ImportError:
        return  # FINN is not installed; the caller reports that
    for name in XSI_NAMES:
        if name not in vars(xsi):
            setattr(xsi, name, _needs_vivado(name))


def _needs_vivado(name: str) -> Callable[..., NoReturn]:
    def unavailable(*args: object, **kwargs: object) -> NoReturn:
        raise RuntimeError(
            f"finn.xsi.{name}: RTL simulation needs Vivado's XSI; set XILINX_VIVADO "
            "(source Vivado's settings64.sh) to use it"
        )

    unavailable.__name__ = name
    return unavailable


def vivado_available() -> bool:
    return bool(os.environ.get("XILINX_VIVADO"))


@contextlib.contextmanager
def preserve_process_io() -> Iterator[None]:
    """Restore ``sys.stdout``/``sys.stderr`` and the root logger after a FINN call."""
    import logging

    root = logging.getLogger()
    saved = (sys.stdout, sys.stderr, list(root.handlers), root.level)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved[0], saved[1]
        root.handlers[:] = saved[2]
        root.setLevel(saved[3])


@contextlib.contextmanager
def contain_finn_output(stream: TextIO | io.TextIOBase) -> Iterator[None]:
    """Send FINN's prints, log records and warnings to ``stream`` while the block runs."""
    import logging
    import warnings

    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    with preserve_process_io(), warnings.catch_warnings():
        root = logging.getLogger()
        root.handlers[:] = [handler]
        root.setLevel(logging.INFO)
        warnings.simplefilter("default")
        warnings.showwarning = _warning_writer(stream)
        sys.stdout = sys.stderr = stream
        try:
            yield
        finally:
            stream.flush()


def _warning_writer(stream: TextIO | io.TextIOBase) -> Callable[..., None]:
    def show(
        message: Warning | str,
        category: type[Warning],
        filename: str,
        lineno: int,
        file: TextIO | None = None,
        line: str | None = None,
    ) -> None:
        stream.write(f"WARNING {category.__name__}: {message} ({filename}:{lineno})\n")

    return show


@contextlib.contextmanager
def generated_code_dir(path: str) -> Iterator[None]:
    """Let FINN create its ``code_gen_*``/partition folders inside ``path`` for the block."""
    prepare_finn()
    from finn.util.settings import get_settings

    os.makedirs(path, exist_ok=True)
    settings = get_settings()
    saved = (settings.finn_build_dir, os.environ.get("FINN_BUILD_DIR"))
    settings.finn_build_dir = os.path.abspath(path)
    os.environ["FINN_BUILD_DIR"] = os.path.abspath(path)
    try:
        yield
    finally:
        settings.finn_build_dir = saved[0]
        if saved[1] is None:
            os.environ.pop("FINN_BUILD_DIR", None)
        else:
            os.environ["FINN_BUILD_DIR"] = saved[1]


def run_finn_builder(model_path: str, cfg: object) -> int:
    """FINN's own ``build_dataflow_cfg`` (its step runner), usable without Vivado (see 7.)."""
    prepare_finn()
    import logging

    import finn.builder.build_dataflow as builder
    import finn.util.logging as finn_logging

    original, console = builder.get_vivado_root, finn_logging.get_console()
    if not vivado_available():
        builder.get_vivado_root = lambda: ""
    try:
        with preserve_process_io():
            code: int = builder.build_dataflow_cfg(model_path, cfg)
            return code
    finally:
        builder.get_vivado_root = original
        finn_logging.set_console(console)
        logging.captureWarnings(False)  # the builder routes warnings into its log file


def fast_exit(code: int = 0) -> None:
    """Apply 9.: flush and ``os._exit(code)`` after FINN, else return to the caller."""
    import logging

    own_streams = sys.stdout is sys.__stdout__ and sys.stderr is sys.__stderr__
    if not own_streams or "finn" not in sys.modules:
        return
    metrics = sys.modules.get("brainsmith.metrics")
    if metrics is not None:
        metrics.flush()  # buffered OpenTelemetry spans
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(code)
