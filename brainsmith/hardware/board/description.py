"""The build's one description of its stitched accelerator (``brainsmith.hardware.design``),
made from its final model and the file list FIFO sizing wrote (``finn/stitched_rtl/files.f``),
and written beside report.json as ``design.json``."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from typing import Any

from brainsmith.clock import Clock
from brainsmith.files import write_text
from brainsmith.hardware.board.top import TopError, accelerator_ports, frame_words
from brainsmith.hardware.design import (
    FILE,
    INTERVAL_SOURCES,
    LIBRARY,
    Design,
    DesignFile,
    Stream,
    kind_of,
)
from brainsmith.hardware.listing import FILES, finn_rtllib, layer_instances, listed_sources
from brainsmith.hardware.synthesis.layer_sources import MissingSources

TOP = "accelerator"
UNDESCRIBED = "design: the stitched accelerator is not described"  # the build's note


def describe(
    folder: str,
    model: Any,
    *,
    part: str,
    clock: Clock,
    interval: tuple[float, str] | None = None,
) -> Design:
    """The stitched accelerator of the build in ``folder`` (``model`` its final model, a
    qonnx ``ModelWrapper``; ``files.f`` naming this folder) at ``clock`` for ``part``;
    MissingSources when its file list cannot be read or names a file outside the build and
    FINN's library, TopError when it has no one stream in and one out, BadDesign for a
    description the gate would refuse (a file name that is not a plain path)."""
    ports = accelerator_ports(model)
    build, library = os.path.realpath(folder), finn_rtllib()
    files: list[DesignFile] = []
    code_dirs: list[str] = []
    for listed in listed_sources(folder, os.path.abspath(folder)):
        real = os.path.realpath(listed.path)
        if listed.in_build:
            path = os.path.relpath(real, build).replace(os.sep, "/")
            if os.path.dirname(path) not in code_dirs:
                code_dirs.append(os.path.dirname(path))
        else:
            path = LIBRARY + os.path.relpath(real, library).replace(os.sep, "/")
        files.append(DesignFile(path, _kind(path)))
    for code_dir in code_dirs:
        files += _memories(build, code_dir)
    in_words, out_words = frame_words(model)
    design = Design(
        top=TOP,
        part=part,
        clock=clock,
        input=Stream(ports.in_bits, in_words),
        output=Stream(ports.out_bits, out_words),
        probes=ports.probes,
        interval=interval,
        files=tuple(files),
        instances=layer_instances(folder),
    )
    return Design.of_json(design.as_json())  # BadDesign where the gate would refuse it


def interval_of(performance: object) -> tuple[float, str] | None:
    """The pipelined interval (cycles a frame when streaming) and its source a build's
    report gives in ``performance``: the Verilator count, else FINN's estimate of its
    slowest layer; None where it gives neither."""
    found = performance if isinstance(performance, dict) else {}
    for key, source in (("cycles_per_frame", found.get("cycles_source")),
                        ("max_cycles", "estimate")):  # fmt: skip
        cycles = found.get(key)
        if isinstance(cycles, int | float) and math.isfinite(cycles) and cycles > 0:
            return float(cycles), source if source in INTERVAL_SOURCES else "estimate"
    return None


def write_design(folder: str, design: Design) -> None:
    """``design`` as ``folder``/design.json, whole or not at all."""
    write_text(os.path.join(folder, FILE), json.dumps(design.as_json(), indent=1) + "\n")


def disagreement(design: Design, model: Any) -> str:
    """How ``design`` (design.json, through the gate) disagrees with the build's final
    ``model`` on the accelerator's streams and probes, or "" where it agrees: a folder's
    description is trusted only as far as its final model bears it out."""
    try:
        ports, words = accelerator_ports(model), frame_words(model)
    except TopError as exc:
        return str(exc)
    said = (design.input.bits, design.output.bits, design.probes,
            design.input.words, design.output.words)  # fmt: skip
    found = (ports.in_bits, ports.out_bits, ports.probes, *words)
    names = ("input bits", "output bits", "probes", "input words", "output words")
    for name, told, real in zip(names, said, found, strict=True):
        if told != real:
            return f"{FILE} says {name} {told!r}, final.onnx {real!r}"
    return ""


def why_undescribed(folder: str, report: Mapping[str, Any]) -> str:
    """Why the build in ``folder`` (``report`` its report.json, through the gate) has no
    design.json: its HLS layers, the build's note where it could not describe its stitched
    accelerator, a build made before brainsmith described them, or no FIFO sizing."""
    layers = report.get("layers") or []
    hls = [str(x.get("name")) for x in layers if isinstance(x, dict) and x.get("backend") == "hls"]
    if hls:
        return f"it has HLS layers ({', '.join(hls[:3])}{', ...' if len(hls) > 3 else ''})"
    if not os.path.isfile(os.path.join(folder, FILES)):
        return "its FIFOs were not sized by simulation (build.size_fifos), which stitches it"
    notes = report.get("notes") or []
    said = next((str(n) for n in notes if str(n).startswith(UNDESCRIBED)), "")
    return said.removeprefix("design: ") or (
        "it was built before brainsmith described its stitched accelerator in design.json"
    )


def _kind(path: str) -> str:
    try:
        return kind_of(path)
    except ValueError as exc:
        raise MissingSources(f"finn/stitched_rtl/files.f lists {exc}") from None


def _memories(build: str, code_dir: str) -> list[DesignFile]:
    """The memory files (``.dat``: weights, thresholds) in a layer's code folder."""
    folder = os.path.join(build, code_dir)
    return [
        DesignFile(f"{code_dir}/{name}", "memoryInitFile")
        for name in sorted(os.listdir(folder))
        if name.endswith(".dat") and os.path.isfile(os.path.join(folder, name))
    ]


__all__ = [
    "TOP",
    "UNDESCRIBED",
    "describe",
    "disagreement",
    "interval_of",
    "why_undescribed",
    "write_design",
]
