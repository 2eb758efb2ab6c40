"""The record of the HDL a build generated: ``finn/hdl_manifest.json`` in the build folder.

A build writes it with final.onnx (``record``), after every step that generates or rewrites
HDL (``codegen``; FINN's ``step_hw_ipgen`` makes its paths absolute): the SHA-256 of every
HDL file in the final layers' code folders, by path relative to FINN's output folder
(``finn/``), and where that folder was (``root``). ``brainsmith verify-rtl`` compiles a file of the build folder only when it is
recorded with the same hash (``check``); finn-rtllib files come from the installed FINN.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass

from brainsmith.errors import BrainsmithError
from brainsmith.files import MAX_SOURCE_BYTES, read_json, read_regular, write_text
from brainsmith.hardware.rtlsim.layer_design import finn_rtllib

TYPE_CHECKING = False
if TYPE_CHECKING:
    from qonnx.core.modelwrapper import ModelWrapper

NAME = "hdl_manifest.json"
FORMAT = 1
HDL_SUFFIXES = (".v", ".sv", ".vh", ".svh", ".vhd", ".vhdl")
MAX_BYTES = 16 * 1024 * 1024


class ManifestError(BrainsmithError, ValueError):
    """The record cannot be read; the message says why."""


@dataclass(frozen=True)
class Manifest:
    """The recorded hashes: ``files`` maps a path relative to ``root`` to its SHA-256."""

    root: str
    files: dict[str, str]


def record(model: ModelWrapper, finn_dir: str) -> str:
    """Write the manifest of ``model``'s generated HDL into ``finn_dir``; returns its path."""
    root = os.path.realpath(finn_dir)
    files: dict[str, str] = {}
    for folder in _code_folders(model):
        real = os.path.realpath(folder)
        if not inside(real, root):
            continue  # generated elsewhere: not this build's to vouch for
        for path in _hdl_files(real):
            files[os.path.relpath(path, root).replace(os.sep, "/")] = sha256(path)
    path = os.path.join(finn_dir, NAME)
    text = json.dumps({"format": FORMAT, "root": root, "files": files}, indent=1, sort_keys=True)
    write_text(path, text + "\n")
    return path


def load(finn_dir: str) -> Manifest | None:
    """The manifest in ``finn_dir``; None when there is none; ManifestError when damaged."""
    path = os.path.join(finn_dir, NAME)
    if not os.path.lexists(path):
        return None
    try:
        if os.path.islink(path):
            raise ManifestError("it is not a regular file")
        data = read_json(path, MAX_BYTES)
    except (OSError, ValueError) as exc:
        raise ManifestError(str(exc)) from exc
    if data.get("format") != FORMAT:
        raise ManifestError(f"it is not format {FORMAT}")
    files, root = data.get("files"), data.get("root")
    if not isinstance(root, str) or not isinstance(files, dict):
        raise ManifestError("it has no root or files")
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in files.items()):
        raise ManifestError("its files are not path: hash pairs")
    return Manifest(root, files)


def check(path: str, folder: str, manifest: Manifest | None) -> str:
    """Why the HDL file ``path`` is not what the build in ``folder`` generated ("" if it is):
    a file of the installed finn-rtllib passes; one of the build folder must be recorded
    with its hash; anything else is refused."""
    real = os.path.realpath(path)
    if inside(real, os.path.realpath(finn_rtllib())):
        return ""
    if not inside(real, os.path.realpath(folder)):
        return f"{real} is outside the build folder {folder} and FINN's finn-rtllib"
    if manifest is None:
        return f"{path} is not among the files the build generated"
    key = os.path.relpath(real, os.path.realpath(os.path.join(folder, "finn")))
    digest = manifest.files.get(key.replace(os.sep, "/"))
    if digest is None:
        return f"{path} is not among the files the build generated"
    if digest != sha256(real):
        return f"{path} differs from what the build generated"
    return ""


def sha256(path: str) -> str:
    """The SHA-256 of the file ``path`` (a regular file of at most ``MAX_SOURCE_BYTES``)."""
    return hashlib.sha256(read_regular(path, MAX_SOURCE_BYTES)).hexdigest()


def inside(path: str, folder: str) -> bool:
    """Whether ``path`` is ``folder`` or below it (both real, absolute paths)."""
    return os.path.commonpath([path, folder]) == folder


def _code_folders(model: ModelWrapper) -> list[str]:
    folders = []
    for node in model.graph.node:
        for attribute in node.attribute:
            if attribute.name == "code_gen_dir_ipgen" and attribute.s:
                folders.append(attribute.s.decode(errors="replace"))
    return [f for f in folders if os.path.isdir(f)]


def _hdl_files(folder: str) -> list[str]:
    found = []
    for parent, _, names in os.walk(folder):
        for name in names:
            path = os.path.join(parent, name)
            if name.endswith(HDL_SUFFIXES) and os.path.isfile(path) and not os.path.islink(path):
                found.append(path)
    return sorted(found)
