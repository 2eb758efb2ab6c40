"""What the two shapes of ``brainsmith export`` share: its error, what it wrote, the vectors
it replays and the writer that records each file's SHA-256."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from brainsmith.errors import HintedError

if TYPE_CHECKING:
    import numpy as np

IDLE_LIMIT = 1_000_000  # cycles without an output word before sim.sh gives up


class ExportError(HintedError):
    """The build cannot be exported to that folder: ``reason``, ``hint`` what to do."""

    def __str__(self) -> str:
        return f"{self.reason}\n  try: {self.hint}" if self.hint else self.reason


@dataclass(frozen=True)
class Exported:
    """What ``export_build`` wrote; for a board build, ``board``, its ``bitstream`` (the
    file's name in the folder) and the command that ``flash``es it; ``vivado`` whether it
    holds the Vivado packaging script (an AMD part's)."""

    folder: str
    top: str
    sources: int
    parameter_files: int
    frames: int
    changes: list[str]
    board: str = ""
    bitstream: str = ""
    flash: str = ""
    vivado: bool = False


@dataclass
class Vectors:
    """The export's frames: the design's inputs (``samples``), the accelerator's inputs the
    host's nodes make of them and their stream words (``inputs``), the accelerator's outputs
    the build's Python execution gives and their words (``expected``), and the design's
    outputs (the host's nodes after the accelerator run on them)."""

    samples: list[np.ndarray]
    accelerated: list[np.ndarray]
    inputs: list[list[int]]
    outputs: list[np.ndarray]
    expected: list[list[int]]
    results: list[np.ndarray]


class Writer:
    """Files written under one folder, each with its SHA-256 recorded."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.digests: dict[str, str] = {}

    def bytes(self, name: str, content: bytes, mode: int = 0o644) -> None:
        path = os.path.join(self.root, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as handle:
            handle.write(content)
        os.chmod(path, mode)
        self.digests[name] = hashlib.sha256(content).hexdigest()

    def text(self, name: str, text: str, mode: int = 0o644) -> None:
        self.bytes(name, text.encode(), mode)


def filled(text: str, values: dict[str, str]) -> str:
    for key, value in values.items():
        text = text.replace(key, value)
    return text


__all__ = ["IDLE_LIMIT", "ExportError", "Exported", "Vectors", "Writer", "filled"]
