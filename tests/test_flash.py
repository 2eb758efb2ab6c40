"""brainsmith flash: a build's bitstream loaded with openFPGALoader. openFPGALoader is not
needed: --dry-run prints its command, and the refusals come before it runs."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from brainsmith.hardware.board.boards import BOARDS, LOADER_BOARDS
from tests.support.processes import Ran, invoke


def flash(*args: str, env: dict[str, str] | None = None) -> Ran:
    """``brainsmith flash ARGS`` in this process (``env``: variables to set for it)."""
    return invoke("flash", *args, env=env)


def flash_process(*args: str) -> subprocess.CompletedProcess[str]:
    """``brainsmith flash ARGS`` as a process of its own, as a user's shell starts it."""
    return subprocess.run([sys.executable, "-m", "brainsmith", "flash", *args],
                          capture_output=True, text=True, timeout=120)  # fmt: skip


def bitstream_folder(folder: Path, board: str = "ulx3s-85f", *, section: bool = False) -> Path:
    """A build folder with a bitstream: described by bitstream/report.json (brainsmith
    bitstream's), or with ``section`` by report.json's bitstream (brainsmith build's)."""
    (folder / "bitstream").mkdir(parents=True)
    bit = folder / "bitstream" / f"{board}.bit"
    bit.write_bytes(b"\xff\x00 a bitstream " * 64)
    made = {"bitstream": str(bit), "sha256": hashlib.sha256(bit.read_bytes()).hexdigest(),
            "board": board}  # fmt: skip
    report = {"status": "ok", "board": board, **({"bitstream": made} if section else {})}
    (folder / "report.json").write_text(json.dumps(report))
    if not section:
        (folder / "bitstream" / "report.json").write_text(json.dumps(made))
    return folder


@pytest.mark.parametrize("section", [False, True])
def test_a_dry_run_prints_the_openfpgaloader_command_without_it(tmp_path, section):
    build = bitstream_folder(tmp_path / "b", section=section)
    bit = build.resolve() / "bitstream" / "ulx3s-85f.bit"
    done = flash(str(build), "--dry-run")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"openFPGALoader -b ulx3s {bit}"
    done = flash(str(build), "--flash", "--cable", "ft231X", "--dry-run")
    assert done.stdout.strip() == f"openFPGALoader -b ulx3s -c ft231X -f {bit}"


def test_a_path_with_spaces_is_quoted_on_its_one_line(tmp_path):
    build = bitstream_folder(tmp_path / "my build")
    done = flash(str(build), "--dry-run")
    bit = build.resolve() / "bitstream" / "ulx3s-85f.bit"
    assert done.stdout.strip() == f"openFPGALoader -b ulx3s '{bit}'"


def test_a_changed_bitstream_is_refused_naming_both_hashes(tmp_path):
    build = bitstream_folder(tmp_path / "b")
    made = json.loads((build / "bitstream" / "report.json").read_text())["sha256"]
    bit = build / "bitstream" / "ulx3s-85f.bit"
    bit.write_bytes(bit.read_bytes() + b"\x00")
    done = flash(str(build), "--dry-run")
    assert done.returncode == 2 and not done.stdout
    assert made in done.stderr and hashlib.sha256(bit.read_bytes()).hexdigest() in done.stderr
    assert "brainsmith bitstream" in done.stderr and "Traceback" not in done.stderr


def test_a_bitstream_linked_from_outside_the_folder_is_refused(tmp_path):
    build = bitstream_folder(tmp_path / "b")
    bit = build / "bitstream" / "ulx3s-85f.bit"
    outside = tmp_path / "elsewhere.bit"
    bit.rename(outside)
    bit.symlink_to(outside)
    done = flash(str(build), "--dry-run")
    assert done.returncode == 2 and "a link out of the folder" in done.stderr


def test_without_a_bitstream_it_says_how_to_make_one(tmp_path):
    build = tmp_path / "b"
    build.mkdir()
    (build / "report.json").write_text(json.dumps({"status": "ok", "board": "ulx3s-85f"}))
    done = flash(str(build), "--dry-run")
    assert done.returncode == 2 and str(build) in done.stderr
    assert f"brainsmith bitstream {build} --board ulx3s-85f" in done.stderr
    assert "--bitstream" in done.stderr
    done = flash(str(tmp_path / "missing"))
    assert done.returncode == 2 and "not a brainsmith build folder" in done.stderr


def test_without_openfpgaloader_it_names_how_to_install_it(tmp_path):
    build = bitstream_folder(tmp_path / "b")
    empty = tmp_path / "bin"
    empty.mkdir()
    done = flash(str(build), env={"PATH": str(empty)})
    assert done.returncode == 2, done.stderr
    assert "openFPGALoader is not installed" in done.stderr
    assert "apt-get install openfpgaloader" in done.stderr and "Traceback" not in done.stderr


def test_a_board_openfpgaloader_does_not_name_is_refused_saying_to_load_it_by_hand(tmp_path):
    build = bitstream_folder(tmp_path / "b", "versa-ecp5")
    done = flash(str(build), "--dry-run")
    assert done.returncode == 2 and "versa-ecp5" in done.stderr
    assert "openFPGALoader --cable" in done.stderr
    assert flash(str(build), "--dry-run", "--cable", "-x").returncode == 2


def test_every_loader_board_is_a_brainsmith_board_named_in_openfpgaloaders_list():
    """openFPGALoader's src/board.hpp: JTAG_BITBANG_BOARD("ulx3s", ...) over the ULX3S's
    FT231X, JTAG_BOARD("ecp5_evn", ...) over the evaluation board's FT2232; no Versa entry."""
    assert set(LOADER_BOARDS) <= set(BOARDS)
    assert {LOADER_BOARDS[name] for name in BOARDS if name.startswith("ulx3s")} == {"ulx3s"}
    assert LOADER_BOARDS["ecp5-5g-evn"] == "ecp5_evn"


@pytest.mark.skipif(shutil.which("openFPGALoader") is None, reason="openFPGALoader not installed")
def test_openfpgaloader_failing_without_a_board_exits_1_with_its_last_lines(tmp_path):
    build = bitstream_folder(tmp_path / "b")
    done = flash_process(str(build), "--cable", "ft2232")  # no board on the cable here
    assert done.returncode == 1 and "openFPGALoader failed (exit" in done.stderr


@pytest.mark.slow
@pytest.mark.xdist_group("synthesis")
def test_the_mlps_ulx3s_build_is_loaded_with_openfpgaloaders_ulx3s(hub, farm, tmp_path):
    """The run's MLP built for the ULX3S-85F with --bitstream (tests/test_bitstream_build.py):
    its report.json names the bitstream the command loads."""
    from tests.support.farm import lattice_mlp

    build = Path(shutil.copytree(lattice_mlp(farm), tmp_path / "mlp", symlinks=True))
    shutil.rmtree(build / "bitstream" / "run", ignore_errors=True)  # not needed to load
    done = flash(str(build), "--flash", "--dry-run")
    assert done.returncode == 0, done.stderr
    bit = build.resolve() / "bitstream" / "ulx3s-85f.bit"
    assert done.stdout.strip() == f"openFPGALoader -b ulx3s -f {bit}"
