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
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile

_prepared = False
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
    uid = os.getuid() if hasattr(os, "getuid") else "user"
    path = os.path.join(tempfile.gettempdir(), f"brainsmith-finn-{uid}")
    os.makedirs(path, mode=0o700, exist_ok=True)
    return path


def prepare_finn() -> None:
    """Make FINN importable and usable as a library here (idempotent, cheap after once)."""
    global _prepared
    if _prepared:
        return
    _prepared = True
    if not os.environ.get("FINN_BUILD_DIR"):
        os.environ["FINN_BUILD_DIR"] = private_build_dir()
    else:
        os.makedirs(os.environ["FINN_BUILD_DIR"], exist_ok=True)
    os.environ.setdefault(
        "TORCHINDUCTOR_CACHE_DIR", os.path.join(os.environ["FINN_BUILD_DIR"], "torchinductor")
    )
    if os.environ.get("XILINX_VIVADO"):
        return
    try:
        import finn.xsi as xsi
    except ImportError:
        return  # FINN is not installed; the caller reports that
    for name in XSI_NAMES:
        if name not in vars(xsi):
            setattr(xsi, name, _needs_vivado(name))


def _needs_vivado(name: str):
    def unavailable(*args: object, **kwargs: object):
        raise RuntimeError(
            f"finn.xsi.{name}: RTL simulation needs Vivado's XSI; set XILINX_VIVADO "
            "(source Vivado's settings64.sh) to use it"
        )

    unavailable.__name__ = name
    return unavailable


def vivado_available() -> bool:
    return bool(os.environ.get("XILINX_VIVADO"))


@contextlib.contextmanager
def preserve_process_io():
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
