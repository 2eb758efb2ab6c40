"""A build folder that changes under a command: a folder below it swapped for a link after
the gate checked it, while the tools run. Nothing outside the folder is written or removed
(brainsmith.opened_folder: the folder opened once, the tools in a private folder published
through it)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from brainsmith.opened_folder import FolderChanged, OpenedFolder, staged


def victim(root: Path) -> dict[str, bytes]:
    """A folder outside the build with files a link planted in the build points at."""
    (root / "run").mkdir(parents=True)
    files = {"keep.txt": b"precious\n", "run/keep.txt": b"also precious\n"}
    for name, content in files.items():
        (root / name).write_bytes(content)
    return files


def untouched(root: Path, files: dict[str, bytes]) -> bool:
    found = {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}
    return found == files


def test_a_folder_swapped_for_a_link_is_refused_and_its_target_untouched(tmp_path):
    files = victim(tmp_path / "elsewhere")
    build = tmp_path / "build"
    build.mkdir()
    with OpenedFolder(str(build)) as opened:
        (build / "bitstream").symlink_to(tmp_path / "elsewhere")
        with pytest.raises(FolderChanged, match="bitstream is not a folder now"):
            opened.write("bitstream/report.json", b"{}")
        with pytest.raises(FolderChanged):
            opened.remove("bitstream/run")
    assert untouched(tmp_path / "elsewhere", files)


def test_a_link_in_place_of_the_published_folder_is_replaced_not_followed(tmp_path):
    files = victim(tmp_path / "elsewhere")
    build = tmp_path / "build"
    (build / "bitstream").mkdir(parents=True)
    (build / "bitstream" / "run").symlink_to(tmp_path / "elsewhere")
    with staged(str(build), "bitstream/run") as stage:
        Path(stage.workdir, "nextpnr.log").write_text("placed\n")
        Path(stage.workdir, "src").mkdir()
        Path(stage.workdir, "src", "top.sv").write_text("module top; endmodule\n")
        assert os.stat(stage.workdir).st_mode & 0o077 == 0  # the tools' folder is private
        with open(os.path.join(stage.workdir, "a.bit"), "wb") as handle:
            handle.write(b"bits")
        shown = stage.take(os.path.join(stage.workdir, "a.bit"), "bitstream/a.bit")
    assert shown == str(build / "bitstream" / "a.bit") and Path(shown).read_bytes() == b"bits"
    run = build / "bitstream" / "run"
    assert not run.is_symlink() and (run / "src" / "top.sv").is_file()
    assert sorted(p.name for p in run.iterdir()) == ["nextpnr.log", "src"]
    assert untouched(tmp_path / "elsewhere", files)
    assert not Path(stage.workdir).exists()


def test_a_cached_result_adds_its_files_and_keeps_the_run_s_logs(tmp_path):
    """No tool ran (a cached result): the netlist it writes out joins the run folder, whose
    logs of the run that made the result stay; a link there is still replaced."""
    run = tmp_path / "build" / "bitstream" / "run"
    run.mkdir(parents=True)
    (run / "nextpnr.log").write_text("placed\n")
    (run / "board.v").write_text("old\n")
    with staged(str(tmp_path / "build"), "bitstream/run") as stage:
        stage.keep = True
        Path(stage.workdir, "board.v").write_text("module board_top; endmodule\n")
    assert (run / "nextpnr.log").read_text() == "placed\n"
    assert (run / "board.v").read_text() == "module board_top; endmodule\n"
    files = victim(tmp_path / "elsewhere")
    shutil.rmtree(run)
    run.symlink_to(tmp_path / "elsewhere")
    with staged(str(tmp_path / "build"), "bitstream/run") as stage:
        stage.keep = True
        Path(stage.workdir, "board.v").write_text("new\n")
    assert not run.is_symlink() and (run / "board.v").read_text() == "new\n"
    assert untouched(tmp_path / "elsewhere", files)


def test_an_error_in_the_tools_names_the_published_log_and_keeps_it(tmp_path):
    from brainsmith.hardware.place_route.errors import PlaceRouteError

    build = tmp_path / "build"
    build.mkdir()
    with pytest.raises(PlaceRouteError) as caught, staged(str(build), "place_route/run") as stage:
        log = os.path.join(stage.workdir, "nextpnr.log")
        Path(log).write_text("ERROR: no route\n")
        raise PlaceRouteError("nextpnr-ecp5: no route", f"see {log}")
    published = build / "place_route" / "run" / "nextpnr.log"
    assert caught.value.hint == f"see {published}" and published.read_text() == "ERROR: no route\n"


def test_paths_that_leave_the_folder_are_not_paths_below_it(tmp_path):
    with OpenedFolder(str(tmp_path)) as opened:
        for relative in ("../x", "/etc/x", "", "a/../../x"):
            with pytest.raises(ValueError, match="not a path below a folder"):
                opened.write(relative, b"")


def bitstream_with_a_swap(build: Path, below: str, tmp_path: Path, monkeypatch):
    """``brainsmith bitstream`` on ``build`` while its folder ``below`` is swapped for a link
    to a victim folder: what another writer of the build folder does after the gate checked
    it, as Yosys and nextpnr start. (the command's result, the victim's files)."""
    import importlib

    from tests.support.processes import invoke

    files = victim(tmp_path / "elsewhere")
    flow = importlib.import_module("brainsmith.hardware.place_route.bitstream")
    real = flow.bitstream

    def swapped_then_run(*arguments, **keywords):
        os.rename(build / below, tmp_path / "aside")
        (build / below).symlink_to(tmp_path / "elsewhere")
        return real(*arguments, **keywords)

    monkeypatch.setattr(flow, "bitstream", swapped_then_run)
    return invoke("bitstream", str(build), "--board", "ulx3s-85f"), files


@pytest.fixture
def board_build(farm, tmp_path) -> Path:
    """A copy of the run's MLP built for the ULX3S-85F, with its bitstream folder."""
    from tests.support.farm import lattice_mlp

    return Path(shutil.copytree(lattice_mlp(farm), tmp_path / "mlp", symlinks=True))


@pytest.mark.slow
@pytest.mark.xdist_group("synthesis")
def test_bitstream_s_folder_swapped_for_a_link_meanwhile_touches_nothing_outside(
    board_build, tmp_path, monkeypatch
):
    done, files = bitstream_with_a_swap(board_build, "bitstream", tmp_path, monkeypatch)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "bitstream is not a folder now" in done.stderr and "Traceback" not in done.stderr
    assert untouched(tmp_path / "elsewhere", files)


@pytest.mark.slow
@pytest.mark.xdist_group("synthesis")
def test_bitstream_s_run_folder_swapped_for_a_link_meanwhile_touches_nothing_outside(
    board_build, tmp_path, monkeypatch
):
    done, files = bitstream_with_a_swap(board_build, "bitstream/run", tmp_path, monkeypatch)
    data = json.loads((board_build / "bitstream" / "report.json").read_text())
    assert done.returncode == (0 if data["met"] else 3), done.stdout + done.stderr
    assert untouched(tmp_path / "elsewhere", files)
    assert not (board_build / "bitstream" / "run").is_symlink()
    assert (board_build / "bitstream" / "ulx3s-85f.bit").is_file()
    netlist = Path(data["netlist"])  # named where it was published, and there
    assert netlist.parent == board_build / "bitstream" / "run" and netlist.is_file()


@pytest.mark.slow
@pytest.mark.xdist_group("synthesis")
@pytest.mark.parametrize("filled", ["tools", "build"])
def test_a_full_disk_exits_2_naming_the_disk_not_a_tool_s_error(board_build, tmp_path, filled):
    """A disk of 64 KiB under the tools' private folder (TMPDIR: the cached bitstream or the
    staged sources cannot be written, Yosys would fail on its output), or under the build's
    bitstream folder (the bitstream and the run folder cannot be published)."""
    import sys

    from tests.test_build_outdir import in_mount_namespace

    small = tmp_path / "small" if filled == "tools" else board_build / "bitstream"
    small.mkdir(exist_ok=True)
    command = " ".join(
        f"'{part}'"
        for part in [sys.executable, "-m", "brainsmith", "bitstream", board_build, "--board",
                     "ulx3s-85f"]
    )  # fmt: skip
    before = sorted(p.name for p in (board_build / "bitstream").iterdir())
    script = f"mount -t tmpfs -o size=64k,mode=0700 none '{small}' || exit 99; "
    if filled == "tools":
        script += f"TMPDIR='{small}' "
    listing = f"echo LEFT; ls -A '{board_build}/bitstream'"  # what the full disk holds after
    result = in_mount_namespace(script + f"{command}; code=$?; {listing}; exit $code")
    assert result.returncode == 2, result.stdout + result.stderr
    left = result.stdout.split("LEFT\n", 1)[1].split()
    assert not [name for name in left if "partial" in name], left  # nothing cut off
    assert f"the disk holding {small} is full (No space left on device)" in result.stderr
    assert "Traceback" not in result.stderr
    if filled == "tools":
        assert "set TMPDIR" in result.stderr
        assert sorted(p.name for p in (board_build / "bitstream").iterdir()) == before
