"""Plugin package templates: ``brainsmith new kernel NAME`` writes a hardware-layer package.

``kernel/`` holds the package of a one-input layer; ``kernel_two_inputs/`` only the files of a
two-input layer that differ from it. A template file's ``@OP_TYPE@``, ``@MODULE@`` and
``@DIST@`` become the layer's names, ``@SUMMARY@`` what the layer does; the package is written to a temporary folder beside the destination and moved into place whole,
so a failure leaves nothing half-written and an existing folder is never touched.
"""

from __future__ import annotations

import functools
import importlib.metadata
import importlib.util
import keyword
import os
import re
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from brainsmith.errors import HintedError

TEMPLATES = Path(__file__).parent
OP_TYPE = re.compile(r"[A-Z][A-Za-z0-9]{1,63}")  # (fullmatch: no trailing newline)
INPUTS = (1, 2)  # input streams a template layer can have
OVERLAYS = {1: None, 2: TEMPLATES / "kernel_two_inputs"}  # files that replace kernel/'s
SUMMARIES = {
    1: "an ONNX `Clip` of integer data with constant bounds becomes a streaming RTL layer "
    "that clips `PE` channels per clock cycle",
    2: "an ONNX `Min` of two computed integer tensors of one shape becomes a streaming RTL "
    "layer with two input streams that takes the smaller of `PE` channel pairs per clock cycle",
}


class ScaffoldError(HintedError, ValueError):
    """A package cannot be written: a bad name or an occupied destination."""


@dataclass(frozen=True)
class Names:
    op_type: str  # AcmeClip: the kernel's ONNX op type and class name
    module: str  # acme_clip: the Python package
    dist: str  # acme-clip: the pip distribution

    def fill(self, text: str) -> str:
        for token, value in (("@OP_TYPE@", self.op_type), ("@MODULE@", self.module),
                             ("@DIST@", self.dist)):  # fmt: skip
            text = text.replace(token, value)
        return text


def names_for(op_type: str, dist: str | None = None) -> Names:
    """The names of a new layer's package; raises ScaffoldError naming what is wrong: not an
    op type, a keyword of Python or SystemVerilog, or a module or distribution that exists
    already (installing the package would hide or replace it)."""
    if not OP_TYPE.fullmatch(op_type):
        raise ScaffoldError(
            f"kernel name {op_type!r} is not a CamelCase op type",
            "use letters and digits, starting with a capital letter, e.g. AcmeClip",
        )
    module = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", op_type).lower()
    other = f"choose a more specific name, e.g. Acme{op_type}"
    clash = _clash(op_type, module)
    if clash:
        raise ScaffoldError(f"kernel name {op_type!r} {clash}", other)
    return Names(op_type, module, _free_dist(dist or module.replace("_", "-"), other))


def _clash(op_type: str, module: str) -> str:
    """What the layer's names would collide with ("" where nothing)."""
    if keyword.iskeyword(op_type):
        return "is a Python keyword"
    if keyword.iskeyword(module) or keyword.issoftkeyword(module):
        return f"gives the Python package {module!r}, a Python keyword"
    if module in systemverilog_keywords():
        return f"gives the SystemVerilog module {module!r}, a SystemVerilog keyword"
    found = _existing_module(module)
    if found:
        return (
            f"gives the Python package {module!r}, which exists already ({found}): "
            "installing the new package would hide it"
        )
    return ""


def _free_dist(dist: str, other: str) -> str:
    """``dist``, once it is a valid distribution name that is not installed already."""
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", dist):
        raise ScaffoldError(
            f"distribution name {dist!r} is not a valid package name",
            "use letters, digits, '-', '_' and '.', e.g. acme-clip",
        )
    try:
        installed = importlib.metadata.distribution(dist)
    except importlib.metadata.PackageNotFoundError:
        return dist
    raise ScaffoldError(
        f"distribution {dist!r} is installed already ({installed.metadata['Name']} "
        f"{installed.version}): installing the new package would replace it",
        f"{other}, or name the distribution with --dist",
    )


@functools.cache
def systemverilog_keywords() -> frozenset[str]:
    """IEEE 1800-2017's reserved words: the package's SystemVerilog module is named like it."""
    text = (TEMPLATES / "systemverilog_keywords.txt").read_text()
    return frozenset(line for line in text.split("\n") if line and not line.startswith("#"))


def _existing_module(module: str) -> str:
    """Where ``module`` is found already ("" where nowhere): the standard library, or the
    file Python would import it from."""
    if module in sys.stdlib_module_names or module in sys.builtin_module_names:
        return "a module of Python's standard library"
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):  # a broken finder or an odd entry on sys.path
        return ""
    if spec is None:
        return ""
    return (
        f"importable from {spec.origin or next(iter(spec.submodule_search_locations or []), '?')}"
    )


def check_inputs(inputs: int) -> None:
    """Raise ScaffoldError unless a template layer can have ``inputs`` input streams."""
    if inputs not in INPUTS:
        raise ScaffoldError(
            f"a template layer has 1 or 2 input streams, not {inputs}",
            "use --inputs 1 or --inputs 2",
        )


def templates(inputs: int = 1) -> dict[str, Path]:
    """``{template path under kernel/: file}``: kernel/'s, replaced by the overlay's."""
    check_inputs(inputs)
    folders = [TEMPLATES / "kernel", OVERLAYS[inputs]]
    return {
        path.relative_to(folder).as_posix(): path
        for folder in folders
        if folder is not None
        for path in sorted(folder.rglob("*.tmpl"))
    }


def kernel_files(names: Names, inputs: int = 1) -> dict[str, str]:
    """``{path in the package: text}`` of a hardware-layer package with ``inputs`` streams."""
    renamed = {
        "package": names.module,
        "core.sv": f"{names.module}.sv",
        "wrapper.v": f"{names.module}_wrapper.v",
        "test_layer.py": f"test_{names.module}.py",
    }
    files = {}
    for relpath, path in sorted(templates(inputs).items()):
        parts = [renamed.get(part, part) for part in Path(relpath).with_suffix("").parts]
        text = names.fill(path.read_text()).replace("@SUMMARY@", SUMMARIES[inputs])
        files["/".join(parts)] = text
    return files


def new_kernel(
    op_type: str, destination: Path | None = None, dist: str | None = None, inputs: int = 1
) -> Path:
    """Write the package of a new hardware layer ``op_type`` with ``inputs`` input streams
    to ``destination`` (default: ``./<dist>``), which must not exist or be an empty folder;
    returns it."""
    names = names_for(op_type, dist)
    check_inputs(inputs)
    destination = Path(destination or names.dist).absolute()
    if destination.exists() and (not destination.is_dir() or any(destination.iterdir())):
        raise ScaffoldError(
            f"{destination} already exists and is not an empty folder",
            "choose another folder with -o, or remove this one",
        )
    _write_whole(kernel_files(names, inputs), destination)
    return destination


def _write_whole(files: dict[str, str], destination: Path) -> None:
    """Write ``files`` to a temporary folder beside ``destination`` (absent or an empty
    folder), then move it into place whole: a failure leaves nothing half-written."""
    destination.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{destination.name}-", dir=destination.parent))
    try:
        for relpath, text in files.items():
            path = staging / relpath
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        os.chmod(staging, 0o755)  # mkdtemp's folder is private; a package folder is not
        if destination.exists():
            destination.rmdir()  # empty: checked by the caller
        staging.rename(destination)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
