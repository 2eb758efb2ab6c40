"""Plugin package templates: ``brainsmith new kernel NAME`` writes a hardware-layer package.

A template file's ``@OP_TYPE@``, ``@MODULE@`` and ``@DIST@`` become the layer's names; the
package is written to a temporary folder beside the destination and moved into place whole,
so a failure leaves nothing half-written and an existing folder is never touched.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from brainsmith.errors import BrainsmithError

TEMPLATES = Path(__file__).parent
OP_TYPE = re.compile(r"^[A-Z][A-Za-z0-9]{1,63}$")


class ScaffoldError(BrainsmithError, ValueError):
    """A package cannot be written: a bad name or an occupied destination."""

    def __init__(self, reason: str, hint: str) -> None:
        super().__init__(reason)
        self.hint = hint


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
    """The names of a new layer's package; raises ScaffoldError naming what is wrong."""
    if not OP_TYPE.match(op_type):
        raise ScaffoldError(
            f"kernel name {op_type!r} is not a CamelCase op type",
            "use letters and digits, starting with a capital letter, e.g. AcmeClip",
        )
    module = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", op_type).lower()
    dist = dist or module.replace("_", "-")
    if not re.match(r"^[A-Za-z0-9][A-Za-z0-9._-]*$", dist):
        raise ScaffoldError(
            f"distribution name {dist!r} is not a valid package name",
            "use letters, digits, '-', '_' and '.', e.g. acme-clip",
        )
    return Names(op_type, module, dist)


def kernel_files(names: Names) -> dict[str, str]:
    """``{path in the package: text}`` of a hardware-layer package."""
    root = TEMPLATES / "kernel"
    renamed = {
        "package": names.module,
        "core.sv": f"{names.module}.sv",
        "wrapper.v": f"{names.module}_wrapper.v",
        "test_layer.py": f"test_{names.module}.py",
    }
    files = {}
    for path in sorted(root.rglob("*.tmpl")):
        parts = [renamed.get(part, part) for part in path.relative_to(root).with_suffix("").parts]
        files["/".join(parts)] = names.fill(path.read_text())
    return files


def new_kernel(op_type: str, destination: Path | None = None, dist: str | None = None) -> Path:
    """Write the package of a new hardware layer ``op_type`` to ``destination`` (default:
    ``./<dist>``), which must not exist or be an empty folder; returns it."""
    names = names_for(op_type, dist)
    destination = Path(destination or names.dist).absolute()
    if destination.exists() and (not destination.is_dir() or any(destination.iterdir())):
        raise ScaffoldError(
            f"{destination} already exists and is not an empty folder",
            "choose another folder with -o, or remove this one",
        )
    destination.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{names.dist}-", dir=destination.parent))
    try:
        for relpath, text in kernel_files(names).items():
            path = staging / relpath
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        os.chmod(staging, 0o755)  # mkdtemp's folder is private; a package folder is not
        if destination.exists():
            destination.rmdir()  # empty: checked above
        staging.rename(destination)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return destination
