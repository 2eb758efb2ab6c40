"""``brainsmith export BUILD DEST``: an all-RTL build's accelerator as a folder that simulates
on its own (``./sim.sh``) after the build is gone, with FINN's text for synthesis tools."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.support.farm import REPO, all_rtl_conv
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
    assert manifest["streams"]["in0_V"]["bits"] == int(top.split("input [")[1].split(":")[0]) + 1
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

    build = all_rtl_conv(farm)
    built_in = json.loads((build / "report.json").read_text())["output_dir"]
    for found in (
        modules(text for _, text in stitched_design(str(build), built_in).sources),
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
    report = json.loads((build / "report.json").read_text())
    report["fpga_part"] = 'xc7"; exec touch ' + str(marker) + '; "'
    (build / "report.json").write_text(json.dumps(report))
    done = export(build, tmp_path / "dest")
    assert done.returncode == 2 and "is not a part name" in done.stderr, done.stderr
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
