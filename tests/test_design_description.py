"""The one description of a build's stitched accelerator, ``design.json``: written by the
build, read back through the gate as a ``Design``, and what Yosys and nextpnr, the simulated
board, the gate-level check, ``run`` and ``export`` read instead of report.json's keys and
the file list. A forged description is refused naming each key."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from brainsmith.clock import Clock
from brainsmith.hardware.design import FILE, BadDesign, Design, DesignFile, Stream

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("rtlsim")]

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def built(farm) -> Path:
    from tests.support.farm import all_rtl_mlp

    return all_rtl_mlp(farm)


def test_a_build_describes_its_accelerator_once_and_the_gate_reads_it_back(built):
    """design.json names every file of FIFO sizing's list, relative to the build folder or
    FINN's library, each layer's memory files, the streams the final model's ends give, the
    build's clock and part; the gate reads it back to the same value."""
    from brainsmith.hardware.board.top import accelerator_ports, frame_words
    from brainsmith.hardware.listing import FILES, listed_sources
    from brainsmith.intake.gate import open_build_folder

    opened = open_build_folder(built)
    design = opened.design
    assert design is not None and opened.model is not None
    assert design == Design.of_json(json.loads((built / FILE).read_text()))
    listed = listed_sources(str(built), str(built))
    assert len(design.sources) == len(listed) == len((built / FILES).read_text().split())
    for file, source in zip(design.sources, listed, strict=True):
        assert (
            Path(source.path).resolve().as_posix().endswith(file.path.removeprefix("finn-rtllib"))
        )
        assert file.in_build == source.in_build and not file.path.startswith("/")
    memories = [f for f in design.files if f.kind == "memoryInitFile"]
    assert memories and all((built / f.path).is_file() for f in memories)
    ports = accelerator_ports(opened.model)
    assert (design.input.bits, design.output.bits, design.probes) == (
        ports.in_bits, ports.out_bits, ports.probes,
    )  # fmt: skip
    assert (design.input.words, design.output.words) == frame_words(opened.model)
    report = json.loads((built / "report.json").read_text())
    assert design.clock.ns == pytest.approx(report["clock_ns"])
    assert design.part == report["fpga_part"] and design.top == "accelerator"
    assert set(design.instances.values()) <= {n.name for n in opened.model.graph.node}


def test_a_moved_build_reads_its_own_files_through_its_description(built, tmp_path):
    """The description names files relative to the build: a copy of the folder gives Yosys
    the copy's files (a changed weight file in the copy changes the design's digest)."""
    from brainsmith.hardware.place_route.stitched_sources import stitched_design
    from brainsmith.intake.gate import open_build_folder

    copy = Path(shutil.copytree(built, tmp_path / "moved", symlinks=True))
    design = open_build_folder(copy).design
    assert design is not None
    first = stitched_design(str(copy), design)
    assert first.digest() == stitched_design(str(built), design).digest()
    memory = next(f for f in design.files if f.kind == "memoryInitFile")
    (copy / memory.path).write_text((copy / memory.path).read_text() + "0\n")
    assert stitched_design(str(copy), design).digest() != first.digest()
    assert any(name.endswith(Path(memory.path).name) for name, _ in first.data)


def test_a_forged_description_is_refused_naming_each_key(built, tmp_path):
    """design.json is untrusted: each value of the wrong type or range (a top that is not a
    Verilog name, a clock of -5 ns, a stream of 0 bits, a probe that is Verilog code, a
    source of the interval that is not brainsmith's word, an absolute path, a type that is
    not the file's, an instance that is not one) is named, and the gate refuses the folder."""
    from brainsmith.intake.gate import UntrustedFolder, open_build_folder

    copy = Path(shutil.copytree(built, tmp_path / "forged", symlinks=True))
    described = json.loads((copy / FILE).read_text())
    described.update(
        top="accelerator; initial $finish",
        clock_ns=-5,
        input={"bits": 0, "words": 4},
        probes=['maxcount_0); $system("id"'],
        interval={"cycles": 80, "source": "\x1b[31m"},
        instances={"n1": "../../x"},
    )
    described["files"] += [
        {"path": "/etc/passwd.sv", "type": "systemVerilogSource"},
        {"path": "finn/x.dat", "type": "systemVerilogSource"},
    ]
    with pytest.raises(BadDesign) as bad:
        Design.of_json(described)
    problems = "\n".join(bad.value.problems)
    for key in ("top", "clock_ns", "input", "probes", "interval", "instances"):
        assert f"{FILE}: {key} " in problems, key
    assert problems.count(f"{FILE}: files[") == 2
    (copy / FILE).write_text(json.dumps(described))
    with pytest.raises(UntrustedFolder) as refused:
        open_build_folder(copy)
    assert f"{FILE}: clock_ns -5 is not a clock period in ns" in refused.value.reason
    with pytest.raises(BadDesign, match="format 0 is not 1: build again"):
        Design.of_json({**described, "format": 0})


def test_a_description_the_final_model_does_not_bear_out_is_refused(built, tmp_path):
    """design.json passes the gate on its own, so a forged width or word count of the right
    type would reach the board top and the driver: ``place-route`` and ``run`` hold it
    against final.onnx and refuse it naming both figures, before any tool runs."""
    from brainsmith.commands.place_route import place_route_build_folder
    from brainsmith.hardware.board.streams import DriverError, streams
    from brainsmith.intake.build_folder import FolderError

    copy = Path(shutil.copytree(built, tmp_path / "widened", symlinks=True))
    described = json.loads((copy / FILE).read_text())
    bits = described["input"]["bits"]
    described["input"]["bits"] = bits * 2
    (copy / FILE).write_text(json.dumps(described))
    said = f"design.json says input bits {bits * 2}, final.onnx {bits}"
    with pytest.raises(DriverError, match=said):
        streams(str(copy))
    with pytest.raises(FolderError, match=said):
        place_route_build_folder(str(copy), "LFE5U-85F-6BG381C")
    assert not (copy / "place_route").exists()


def test_a_build_without_a_description_is_refused_by_place_route_and_run(built, tmp_path):
    """A build folder whose accelerator is not described (an HLS layer, no FIFO sizing, a
    build made before design.json, as this copy with it deleted) is refused by
    ``place-route`` and ``run`` naming design.json and why, not read from its file list."""
    from brainsmith.commands.place_route import place_route_build_folder
    from brainsmith.hardware.board.streams import DriverError, streams
    from brainsmith.intake.build_folder import FolderError

    copy = Path(shutil.copytree(built, tmp_path / "undescribed", symlinks=True))
    (copy / FILE).unlink()
    before = r"no whole accelerator in RTL \(design.json\): it was built before brainsmith"
    with pytest.raises(FolderError, match=before):
        place_route_build_folder(str(copy), "LFE5U-85F-6BG381C")
    with pytest.raises(DriverError, match=before):
        streams(str(copy))
    assert not (copy / "place_route").exists()


def test_a_design_round_trips_through_its_json():
    design = Design(
        "accelerator", "LFE5U-85F-6BG381C", Clock(12.5), Stream(8, 98), Stream(8, 1),
        ("maxcount_StreamingFIFO_rtl_0",), (361.0, "Verilator"),
        (DesignFile("finn/stitched_rtl/accelerator.sv", "systemVerilogSource"),
         DesignFile("finn-rtllib/mvu/mvu.sv", "systemVerilogSource"),
         DesignFile("finn/build/code/memblock.dat", "memoryInitFile")),
        {"n0": "MVAU_rtl_0"},
    )  # fmt: skip
    assert Design.of_json(json.loads(json.dumps(design.as_json()))) == design
    assert [f.in_build for f in design.files] == [True, False, True]
    assert design.memories("finn/build/code") == (design.files[2],)
