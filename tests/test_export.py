"""``brainsmith export BUILD DEST``: an all-RTL build's accelerator as a folder that simulates
on its own (``./sim.sh``) after the build is gone, with FINN's text for synthesis tools."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.support.farm import REPO, all_rtl_conv, lattice_mlp
from tests.support.processes import Ran, invoke

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("rtlsim")]
MODELS = REPO / "examples" / "models"


def export(build: Path, dest: Path, *options: str) -> Ran:
    """``brainsmith export BUILD DEST OPTIONS`` in this process."""
    return invoke("export", str(build), str(dest), *options)


def export_process(build: Path, dest: Path, *options: str) -> subprocess.CompletedProcess:
    """``brainsmith export BUILD DEST OPTIONS`` as a process of its own, as a user's shell
    starts it."""
    command = [sys.executable, "-m", "brainsmith", "export", str(build), str(dest), *options]
    return subprocess.run(command, capture_output=True, text=True, timeout=600)


def sim(folder: Path) -> subprocess.CompletedProcess:
    """``./sim.sh`` as a user runs it, with the Verilator brainsmith uses."""
    from brainsmith.hardware.rtlsim.verilator import find_toolchain

    toolchain = find_toolchain()
    env = {**toolchain.env, "VERILATOR": toolchain.verilator}
    return subprocess.run(["./sim.sh"], cwd=folder, env=env, capture_output=True, text=True,
                          timeout=900)  # fmt: skip


@pytest.fixture(scope="module")
def handed_off(hub, farm, tmp_path_factory):
    """The conv net exported, as a process of its own, from a private copy of its build with
    the net's own inputs into ``my exports/out$(HOME)``, then moved to another folder under
    the same awkward name and the build deleted. Verilator (checking the sources) and make
    (building the simulator) each read ``$(HOME)`` in a path as the environment's, and make
    refuses to build in a folder whose path has a space: the export names its files so that
    neither sees the folder's name, and sim.sh builds the simulator in a temporary folder."""
    import shlex

    root = tmp_path_factory.mktemp("export")
    build = root / "build"
    shutil.copytree(all_rtl_conv(farm), build, symlinks=True)
    dest = root / "my exports" / "out$(HOME)"
    done = export_process(build, dest, "--input", str(MODELS / "conv_pad_input.npy"))
    assert done.returncode == 0, done.stderr
    assert "exported brainsmith_accelerator to" in done.stdout, done.stdout
    assert f"simulate: {shlex.quote(str(dest / 'sim.sh'))} " in done.stdout, done.stdout
    shutil.rmtree(build)
    moved = Path(shutil.copytree(dest, root / "elsewhere" / "my exports" / "out$(HOME)"))
    shutil.rmtree(root / "my exports")
    return moved


def test_the_exported_conv_net_simulates_on_its_own_after_the_build_is_gone(handed_off):
    frames = len(np.load(MODELS / "conv_pad_input.npy"))
    done = sim(handed_off)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith(f"PASS: {frames} frames,"), done.stdout


def test_the_export_names_only_its_own_files_and_a_clean_top(handed_off):
    manifest = json.loads((handed_off / "manifest.json").read_text())
    import hashlib

    for name, digest in manifest["files"].items():
        assert hashlib.sha256((handed_off / name).read_bytes()).hexdigest() == digest, name
    for listing in ("rtl/files.f", "sim/files.f"):
        listed = (handed_off / listing).read_text().split()
        assert listed and all(not os.path.isabs(p) and (handed_off / p).is_file() for p in listed)
    texts = [p.read_text(errors="replace") for p in (handed_off / "rtl").iterdir()]
    assert not any("site-packages" in t or "/tmp/" in t or "pytest-of" in t for t in texts)
    assert not (handed_off / "rtl" / "fifo_gauge.sv").exists()  # the FIFO sizing's gauge
    top = (handed_off / "rtl" / "brainsmith_accelerator.sv").read_text()
    header = top.split("module brainsmith_accelerator (", 1)[1].split(");", 1)[0]
    ports = [line.split()[-1].rstrip(",") for line in header.strip().splitlines()]
    assert ports == ["ap_clk", "ap_rst_n", "in0_V_TDATA", "in0_V_TVALID", "in0_V_TREADY",
                     "out0_V_TDATA", "out0_V_TVALID", "out0_V_TREADY"]  # fmt: skip
    assert manifest["streams"]["in0_V"]["bits"] == int(top.split("logic [")[1].split(":")[0]) + 1
    assert list((handed_off / "data").rglob("*.dat"))  # weights and thresholds
    changed = {p.name for p in (handed_off / "sim" / "rtl").iterdir()}
    assert changed == {c.split(":")[0] for c in manifest["simulation_changes"]} and changed
    tcl = (handed_off / "vivado" / "package_ip.tcl").read_text()
    assert "untested" in tcl and "ipx::package_project" in tcl and manifest["part"] in tcl


def test_a_changed_weight_in_the_export_is_caught_naming_the_first_word(handed_off, tmp_path):
    copy = Path(shutil.copytree(handed_off, tmp_path / "conv"))
    weights = sorted(copy.glob("data/*/memblock.dat"))[0]
    lines = weights.read_text().splitlines()
    first = lines[0]
    lines[0] = first[:-1] + ("0" if first[-1] != "0" else "1")  # one weight bit pattern changed
    weights.write_text("\n".join(lines) + "\n")
    done = sim(copy)
    assert done.returncode == 1 and done.stdout.startswith("FAIL: output word "), done.stdout
    assert "expected" in done.stdout


def test_an_existing_destination_or_a_folder_that_is_no_build_is_refused(farm, tmp_path):
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "mine.txt").write_text("keep me")
    done = export(all_rtl_conv(farm), taken)
    assert done.returncode == 2 and f"{taken} exists" in done.stderr
    assert [p.name for p in taken.iterdir()] == ["mine.txt"]
    done = export(tmp_path / "nothing", tmp_path / "dest")
    assert done.returncode == 2 and "not a brainsmith build folder" in done.stderr
    assert not (tmp_path / "dest").exists()


def test_two_exports_to_one_new_destination_one_is_made_the_other_refused(farm, tmp_path):
    """Both start at once: the destination is claimed before anything is written, so the
    second is refused cleanly and the first's folder is whole (no OSError, no folder of one
    replaced by the other's)."""
    from concurrent.futures import ThreadPoolExecutor

    from brainsmith.export.folder import ExportError, export_build

    build, dest = str(all_rtl_conv(farm)), str(tmp_path / "dest")

    def attempt(_: int) -> str:
        try:
            export_build(build, dest)
        except ExportError as exc:
            return str(exc)
        return "made"

    with ThreadPoolExecutor(2) as pool:
        outcomes = list(pool.map(attempt, range(2)))
    assert outcomes.count("made") == 1, outcomes
    (refused,) = [outcome for outcome in outcomes if outcome != "made"]
    assert f"{dest} exists" in refused, outcomes
    assert (tmp_path / "dest" / "sim.sh").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dest"]  # no stage left behind


def test_inputs_of_the_wrong_shape_leave_no_folder_behind(farm, tmp_path):
    bad = tmp_path / "bad.npy"
    np.save(bad, np.zeros((2, 3), np.float32))
    done = export(all_rtl_conv(farm), tmp_path / "dest", "--input", str(bad))
    assert done.returncode == 2 and "error:" in done.stderr, done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.npy"]


def modules(texts) -> list[str]:
    import re

    return [name for text in texts for name in re.findall(r"^\s*module\s+(\w+)", text, re.M)]


def test_a_module_each_pool_layer_copies_is_read_once(farm, handed_off):
    """The conv net's two pooling layers each copy brainsmith's ``bs_pool.sv`` into their
    code folder: Yosys (the bitstream) and the export read it once, as a synthesis tool
    refuses a second definition of a module."""
    from brainsmith.hardware.place_route.stitched_sources import stitched_design
    from brainsmith.intake.gate import open_build_folder

    build = all_rtl_conv(farm)
    design = open_build_folder(build).design
    assert design is not None
    for found in (
        modules(text for _, text in stitched_design(str(build), design).sources),
        modules(p.read_text() for p in (handed_off / "rtl").iterdir() if p.suffix in {".v", ".sv"}),
    ):
        assert "bs_pool" in found and len(found) == len(set(found)), sorted(found)


def test_the_build_names_its_whole_design_and_how_to_export_it(farm, capsys):
    """report.json, report.html and the summary say where the whole accelerator is and that
    brainsmith export takes it off the machine."""
    from brainsmith.cli.build import print_summary

    build = all_rtl_conv(farm)
    report = json.loads((build / "report.json").read_text())
    assert report["stitched_rtl"] == "finn/stitched_rtl/files.f"
    assert (build / report["stitched_rtl"]).is_file()
    page = (build / "report.html").read_text()
    assert "href='finn/stitched_rtl/'" in page and "brainsmith export" in page
    print_summary(report)
    (line,) = [x for x in capsys.readouterr().out.splitlines() if x.startswith("  design")]
    assert f"brainsmith export {build} DEST" in line


@pytest.mark.parametrize(
    ("options", "said"),
    [({}, "it has HLS layers (MVAU_hls_0"),
     ({"prefer": "rtl", "options": {"size_fifos": False}}, "were not sized by simulation")],
    ids=["hls-layers", "fifos-not-sized"],
)  # fmt: skip
def test_a_build_without_a_whole_rtl_design_is_refused_saying_why(farm, tmp_path, options, said):
    build = farm.build(REPO / "examples" / "models" / "mlp_4bit.onnx", None, verify="none",
                       **options)  # fmt: skip
    done = export(Path(build.output_dir), tmp_path / "dest")
    assert done.returncode == 2 and "has no whole accelerator in RTL" in done.stderr
    assert said in done.stderr and "--prefer rtl" in done.stderr, done.stderr
    assert not (tmp_path / "dest").exists()


def test_a_forged_build_cannot_make_the_export_run_a_command(farm, tmp_path):
    """A layer's RTL given a ``$system`` call, or report.json a part that would be Tcl, is
    refused with the task or the field named; no folder is written and nothing runs."""
    marker = tmp_path / "ran"
    build = Path(shutil.copytree(all_rtl_conv(farm), tmp_path / "build", symlinks=True))
    layer = next(build.glob("finn/build/code_gen_ipgen_Thresholding_rtl_0_*/Thresholding_rtl_0.v"))
    text = layer.read_text()
    layer.write_text(text.replace("endmodule", f'initial $system("id > {marker}");\nendmodule', 1))
    done = export(build, tmp_path / "dest")
    assert done.returncode == 2 and "$system" in done.stderr, done.stderr
    assert not (tmp_path / "dest").exists() and not marker.exists()
    layer.write_text(text)
    described = json.loads((build / "design.json").read_text())
    described["part"] = 'xc7"; exec touch ' + str(marker) + '; "'
    (build / "design.json").write_text(json.dumps(described))
    done = export(build, tmp_path / "dest")
    assert done.returncode == 2 and "design.json: part " in done.stderr, done.stderr
    assert "is not a part name" in done.stderr
    assert not (tmp_path / "dest").exists()


def test_a_source_verilator_refuses_in_an_export_prints_its_errors(handed_off, tmp_path):
    """When Verilator fails, its errors are printed, not only logged (in a copy under the
    export's awkward name)."""
    copy = Path(shutil.copytree(handed_off, tmp_path / "my exports" / "out$(HOME)"))
    top = copy / "rtl" / "brainsmith_accelerator.sv"
    top.write_text(top.read_text().replace("endmodule", "endmodule oops", 1))
    ran = sim(copy)
    assert ran.returncode == 2, ran.stdout + ran.stderr
    assert "%Error: rtl/brainsmith_accelerator.sv:" in ran.stderr, ran.stderr
    assert "syntax error" in ran.stderr, ran.stderr


@pytest.fixture(scope="module")
def board_handed_off(farm, tmp_path_factory):
    """The MLP's ULX3S-85F build (with its bitstream) exported, as a process of its own, from
    a private copy of the build into ``board exports/mlp``, then moved to another folder and
    the build deleted."""
    root = tmp_path_factory.mktemp("board-export")
    build = root / "build"
    shutil.copytree(lattice_mlp(farm), build, symlinks=True)
    dest = root / "board exports" / "mlp"
    done = export_process(build, dest)
    assert done.returncode == 0, done.stderr
    (root / "said.txt").write_text(done.stdout)
    shutil.rmtree(build)
    moved = Path(shutil.copytree(dest, root / "elsewhere" / "board exports" / "mlp"))
    shutil.rmtree(root / "board exports")
    return moved


def test_a_board_builds_export_holds_its_bitstream_and_simulates_on_its_own(farm, board_handed_off):
    """An export of a board build is board-shaped: the bitstream the build's report names, the
    board's pins, no Vivado script (the part is a Lattice one), a README saying how to flash,
    run and simulate, and ./sim.sh, the board top behind the UART in Verilator, answering the
    host link's frames as the build's Python execution does, with the build gone."""
    said = (board_handed_off.parents[2] / "said.txt").read_text()
    assert "exported ulx3s-85f's bitstream and board_top to" in said, said
    assert "openFPGALoader -b ulx3s ulx3s-85f.bit" in said, said
    section = json.loads((lattice_mlp(farm) / "report.json").read_text())["bitstream"]
    bit = board_handed_off / "ulx3s-85f.bit"
    assert hashlib.sha256(bit.read_bytes()).hexdigest() == section["sha256"]
    pins = (board_handed_off / "ulx3s-85f.lpf").read_text()
    assert 'LOCATE COMP "uart_rx"' in pins and 'FREQUENCY PORT "clk_osc" 25 MHZ;' in pins
    assert not (board_handed_off / "vivado").exists()
    readme = (board_handed_off / "README.md").read_text()
    assert "openFPGALoader -b ulx3s ulx3s-85f.bit" in readme and "./sim.sh" in readme
    assert "python3 driver.py --port /dev/ttyUSB0" in readme
    done = sim(board_handed_off)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("PASS: 8 frames through the host link,"), done.stdout


def test_a_board_export_holds_the_rtl_its_bitstream_was_made_from(farm, board_handed_off):
    """rtl/ is what Yosys read for the bitstream, in its order: the accelerator's sources as a
    Lattice part reads them (brainsmith's matrix core, not FINN's mvu.sv), the host link and
    the board top, whose design hash (the one IDENTIFY reports) is the digest of exactly the
    exported accelerator; byte for byte the sources the bitstream's run staged, but for the
    parameter files' folder."""
    from brainsmith.hardware.listing import finn_rtllib
    from brainsmith.hardware.place_route.stitched_sources import StitchedDesign
    from brainsmith.hardware.synthesis.layer_sources import primitives_used

    rtl = board_handed_off / "rtl"
    names = (rtl / "files.f").read_text().split()
    assert names[-5:] == ["rtl/crc16.sv", "rtl/host_link.sv", "rtl/uart_rx.sv", "rtl/uart_tx.sv",
                          "rtl/board_top.sv"]  # fmt: skip
    texts = {name: (board_handed_off / name).read_text() for name in names}
    finn_core = (Path(finn_rtllib()) / "mvu" / "mvu.sv").read_text()
    assert texts["rtl/mvu.sv"] != finn_core and "module mvu" in texts["rtl/mvu.sv"]
    accelerator = [(name.removeprefix("rtl/"), text.replace('"data/', '"/design/data/'))
                   for name, text in texts.items() if name not in names[-5:]]  # fmt: skip
    data = sorted((str(p.relative_to(board_handed_off / "data")), p.read_bytes())
                  for p in (board_handed_off / "data").rglob("*.dat"))  # fmt: skip
    digest = StitchedDesign("accelerator", accelerator, data,
                            primitives_used(t for _, t in accelerator)).digest()  # fmt: skip
    manifest = json.loads((board_handed_off / "manifest.json").read_text())
    assert manifest["design_hash"] == digest
    assert f"DESIGN_HASH(256'h{digest})" in texts["rtl/board_top.sv"]
    built = lattice_mlp(farm)
    staged = built / "bitstream" / "run" / "src"
    if not json.loads((built / "report.json").read_text())["bitstream"]["cached"]:
        # a run the bitstream cache did not serve: its folder holds what Yosys read
        for name, text in texts.items():
            assert (staged / Path(name).name).read_text() == text.replace(
                '"data/', '"/design/data/'
            ), name


def test_the_exported_driver_runs_the_board_with_python_numpy_and_pyserial_alone(
    farm, board_handed_off
):
    """driver.py, with brainsmith, qonnx, FINN and onnx unimportable, identifies a board
    holding the build's design (the simulated board, behind a pseudo-terminal as a board's
    UART), runs the export's vectors through it, the host's nodes after the accelerator in
    numpy, and finds the outputs the build's Python execution gives."""
    from brainsmith.hardware.board.simulated import SimulatedBoard

    alone = (
        "import runpy, sys\n"
        "for name in ('brainsmith', 'qonnx', 'finn', 'onnx', 'onnxruntime'):\n"
        "    sys.modules[name] = None\n"
        "sys.argv = ['driver.py', *sys.argv[1:]]\n"
        "runpy.run_path('driver.py', run_name='__main__')\n"
    )
    out = board_handed_off.parent / "y.npy"
    with SimulatedBoard(str(lattice_mlp(farm))) as port:
        command = [sys.executable, "-I", "-c", alone, "--port", port, "--timeout", "30"]
        done = subprocess.run(command, cwd=board_handed_off, capture_output=True, text=True,
                              timeout=600)  # fmt: skip
        given = [*command, "--input", "vectors/input.npy", "--output", str(out), "--bench", "200"]
        ran = subprocess.run(given, cwd=board_handed_off, capture_output=True, text=True,
                             timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "this export's (64 words of 32 bits in" in done.stdout, done.stdout
    assert done.stdout.rstrip().endswith("PASS: 8 frames, every output equal to the expected one")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert re.search(r"on the chip: 200 frames back to back in [\d,]+ cycles \(its own counter\)"
                     r": [\d,]+ frames/s at [\d.]+ MHz; checksum 0x[0-9a-f]{8}, the first "
                     r"frame's outputs each time", ran.stdout), ran.stdout  # fmt: skip
    expected = np.load(board_handed_off / "vectors" / "output.npy")
    assert np.load(out).shape == expected.shape == (8, 10)
    np.testing.assert_allclose(np.load(out), expected, rtol=1e-6)


def test_a_board_build_whose_bitstream_changed_is_not_exported(farm, tmp_path):
    build = Path(shutil.copytree(lattice_mlp(farm), tmp_path / "build", symlinks=True))
    bit = build / "bitstream" / "ulx3s-85f.bit"
    content = bytearray(bit.read_bytes())
    content[-1] ^= 1
    bit.write_bytes(bytes(content))
    done = export(build, tmp_path / "dest")
    assert done.returncode == 2 and "changed after it was made" in done.stderr, done.stderr
    assert not (tmp_path / "dest").exists()
