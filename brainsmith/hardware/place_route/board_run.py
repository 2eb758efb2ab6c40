"""A build folder's stitched accelerator made into a board's bitstream: what ``brainsmith
bitstream BUILD_DIR`` and ``brainsmith build --bitstream`` share; for a Lattice part whose
family packs one without a board (Nexus), the part's own (``part_bitstream_of_build``). The tools run in
a private folder published as ``BUILD_DIR/bitstream/run`` when they end; the bitstream lands
beside it, as ``BUILD_DIR/bitstream/<board>.bit``, written through the build folder opened once
(``brainsmith.opened_folder``)."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from brainsmith.errors import BrainsmithError
from brainsmith.files import DiskFull
from brainsmith.opened_folder import FolderChanged, staged

TYPE_CHECKING = False
if TYPE_CHECKING:
    from brainsmith.hardware.board.boards import Board
    from brainsmith.hardware.design import Design
    from brainsmith.hardware.place_route.parts import Part
    from brainsmith.hardware.place_route.report import PlaceRouteResult
    from brainsmith.hardware.place_route.toolchain import Family

HLS_SHOWN = 5
WORKDIR = "bitstream/run"


class BoardRunError(BrainsmithError):
    """No bitstream: ``reason``, ``hint``; ``failed`` when a tool failed (not the inputs)."""

    def __init__(self, reason: str, hint: str = "", failed: bool = False) -> None:
        super().__init__(reason)
        self.hint = hint
        self.failed = failed


def hls_layers(model: Any) -> list[str]:
    """The names of ``model``'s HLS layers (a Lattice part has no HLS flow)."""
    return [node.name for node in model.graph.node if node.domain.endswith(".hls")]


def refuse_hls(model: Any) -> None:
    """BoardRunError when ``model`` has HLS layers: a Lattice part has no HLS flow."""
    hls = hls_layers(model)
    if hls:
        shown = ", ".join(hls[:HLS_SHOWN]) + (" ..." if len(hls) > HLS_SHOWN else "")
        raise BoardRunError(
            f"the design has HLS layers ({shown}): only an all-RTL design becomes a bitstream "
            "for a Lattice part",
            "build the model again with --prefer rtl; where RTL was asked already, these "
            "layers have no RTL backend: leave their kernels to the host (--exclude KERNEL) or "
            "use a blueprint of RTL kernels (blueprints/mlp.yaml)",
        )


def bitstream_of_build(
    folder: str,
    design: Design,
    model: Any,
    target: Board,
    mhz: float,
    note: Callable[[str], None] | None = None,
    synthesised: Callable[[str, int], None] | None = None,
) -> dict[str, Any]:
    """``folder``'s stitched accelerator (``design``, ``model`` its final model) as
    ``target``'s bitstream at the PLL clock nearest ``mhz``: the
    BitstreamResult's dict with the link's words per frame (``synthesised``: as
    ``bitstream``'s). BoardRunError for an HLS layer,
    a clock the PLL cannot make, a missing tool, a failed run (its first error, its log) or
    a folder below ``folder`` changed into a link meanwhile."""
    from brainsmith.hardware.board.clocking import PllError
    from brainsmith.hardware.board.top import TopError
    from brainsmith.hardware.place_route.bitstream import bitstream, family_of
    from brainsmith.hardware.place_route.errors import NotUsable, PlaceRouteError
    from brainsmith.hardware.place_route.stitched_sources import stitched_design
    from brainsmith.hardware.synthesis import NotSynthesisable, YosysMissing, find_yosys

    refuse_hls(model)
    say = note or (lambda _: None)
    try:
        stitched = stitched_design(folder, design)
        in_words, out_words = design.input.words, design.output.words
        say("starting Yosys and nextpnr (the first runs after installing take minutes)")
        family = family_of(target)
        yosys, nextpnr = find_yosys(), family.find_nextpnr()
        say(f"synthesising, placing and routing for {target.name}")
        with staged(folder, WORKDIR) as stage:
            result = bitstream(
                stitched, target, mhz, stage.workdir, yosys, nextpnr,
                in_words=in_words, out_words=out_words, name=target.name,
                synthesised=synthesised, family=family,
            )  # fmt: skip
            stage.keep = result.cached  # no tool ran: the run's logs stay beside the netlist
            name = os.path.basename(result.bitstream)
            result.bitstream = stage.take(result.bitstream, os.path.join("bitstream", name))
            result.netlist = stage.shown(result.netlist)
    except (PllError, TopError, YosysMissing, NotUsable, FolderChanged, DiskFull) as exc:
        raise BoardRunError(str(exc), exc.hint) from exc
    except PlaceRouteError as exc:  # BitstreamError: a tool failed
        raise BoardRunError(str(exc), exc.hint, failed=True) from exc
    except NotSynthesisable as exc:  # MissingSources: the stitched design cannot be read
        raise BoardRunError(str(exc), "build the model again with --prefer rtl") from exc
    data = {"in_words": in_words, "out_words": out_words, **result.as_dict()}
    return {**data, "link_fps": round(_link_fps(design, data["baud"]), 1)}


def _link_fps(design: Design, baud: int) -> float:
    """Frames a second the host link at ``baud`` carries end to end, two requests
    outstanding (``link.sustained_fps``)."""
    from brainsmith.hardware.board.link import frame_bytes, sustained_fps

    streams = (design.input.bits, design.output.bits, design.input.words, design.output.words)
    return sustained_fps(baud, *frame_bytes(*streams))


# place_route's stages as a board's bitstream names them (``bitstream.seconds``)
STAGES = {"nextpnr": "place_route", "nextpnr_rerouted": "place_route_again"}


def part_bitstream_of_build(
    folder: str,
    design: Design,
    model: Any,
    family: Family,
    part: Part,
    mhz: float,
    note: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """``folder``'s stitched accelerator (``design``, ``model`` its final model) as a
    bitstream of the Lattice ``part`` alone at ``mhz``, for a ``family`` that packs one (Nexus): behind the
    host link on pins of brainsmith's choosing (``placed`` names them), as ``brainsmith
    place-route`` makes it, into ``BUILD_DIR/bitstream/<part>.bit`` and its run folder
    ``bitstream/run``. The dict a board's bitstream gives (no board, no PLL: the clock is the
    one asked; no netlist). BoardRunError as ``bitstream_of_build``'s."""
    from brainsmith.hardware.board.top import TopError
    from brainsmith.hardware.place_route.errors import NotUsable, PlaceRouteError
    from brainsmith.hardware.place_route.flow import place_route
    from brainsmith.hardware.place_route.stitched_sources import stitched_design
    from brainsmith.hardware.synthesis import NotSynthesisable, YosysMissing, find_yosys

    refuse_hls(model)
    say = note or (lambda _: None)
    try:
        stitched = stitched_design(folder, design)
        in_words, out_words = design.input.words, design.output.words
        say("starting Yosys and nextpnr (the first runs after installing take minutes)")
        yosys, nextpnr = find_yosys(), family.find_nextpnr()
        say(f"synthesising ({family.synth}), placing, routing and packing for {part.name}")
        with staged(folder, WORKDIR) as stage:
            packed = os.path.join(stage.workdir, f"{part.name}.bit")
            result = place_route(
                stitched, part, mhz, stage.workdir, yosys, nextpnr,
                family=family, frame=(in_words, out_words), bitstream=packed,
            )  # fmt: skip
            stage.keep = result.cached  # no tool ran: the run's logs stay
            if not result.bitstream:
                raise PlaceRouteError(f"{family.router} packed no bitstream", f"see {WORKDIR}")
            result.bitstream = stage.take(packed, os.path.join("bitstream", f"{part.name}.bit"))
    except (TopError, YosysMissing, NotUsable, FolderChanged, DiskFull) as exc:
        raise BoardRunError(str(exc), exc.hint) from exc
    except PlaceRouteError as exc:  # a tool failed
        raise BoardRunError(str(exc), exc.hint, failed=True) from exc
    except NotSynthesisable as exc:  # MissingSources: the stitched design cannot be read
        raise BoardRunError(str(exc), "build the model again with --prefer rtl") from exc
    section = _part_section(result, family, part, mhz, (in_words, out_words))
    return {**section, "link_fps": round(_link_fps(design, section["baud"]), 1)}


def _part_section(
    result: PlaceRouteResult, family: Family, part: Part, mhz: float, words: tuple[int, int]
) -> dict[str, Any]:
    """The dict a board's bitstream gives, for ``result`` packed for ``part`` alone (no board,
    no PLL: the clock is the one asked; no netlist), its link framing ``words`` a frame."""
    from brainsmith.hardware.board.top import baud_rate, clocks_per_bit

    in_words, out_words = words
    data = result.as_dict()
    baud = baud_rate(mhz, family.link_baud) if family.link_baud else 0
    return {
        "in_words": in_words, "out_words": out_words,
        "bitstream": result.bitstream, "sha256": result.sha256,
        "board": "", "part": part.name, "asked_mhz": mhz, "clock_mhz": mhz,
        "baud": baud, "clocks_per_bit": clocks_per_bit(mhz, baud) if baud else 0,
        "fmax_mhz": data["fmax_mhz"], "resources": data["resources"],
        "seconds": {STAGES.get(k, "synth" if k == family.synth else k): v
                    for k, v in data["seconds"].items()},
        "tools": data["tools"], "cells": data["cells"], "fixes": data["fixes"],
        "netlist": "", "critical_path": data["critical_path"], "cached": data["cached"],
        "met": data["met"], "status": "timing met" if data["met"] else "timing not met",
        "placed": data["placed"],
    }  # fmt: skip
