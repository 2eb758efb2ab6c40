"""Hardening round 6: the board surfaces (docs/reliability.md). Each test was written to
fail before its fix."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from brainsmith.folder_lock import FolderBusy, FolderLock
from brainsmith.hardware.board.streams import DriverError

# -- row: the folder lock ---------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["symlink", "hardlink", "folder", "fifo"])
def test_a_planted_lock_file_is_refused_and_what_it_points_at_is_untouched(tmp_path, kind):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    folder = tmp_path / "build"
    folder.mkdir()
    lock = tmp_path / "build.lock"
    if kind == "symlink":
        lock.symlink_to(victim)
    elif kind == "hardlink":
        os.link(victim, lock)
    elif kind == "folder":
        lock.mkdir()
    else:
        os.mkfifo(lock)
    with pytest.raises(FolderBusy) as refused:
        FolderLock(str(folder), "build").acquire()
    assert "build.lock" in refused.value.reason
    assert "remove it" in refused.value.hint
    assert victim.read_text() == "precious\n"


def test_a_link_to_a_missing_file_is_refused_and_creates_nothing(tmp_path):
    target = tmp_path / "elsewhere" / "made.txt"
    target.parent.mkdir()
    folder = tmp_path / "build"
    folder.mkdir()
    (tmp_path / "build.lock").symlink_to(target)
    with pytest.raises(FolderBusy):
        FolderLock(str(folder), "build").acquire()
    assert not target.exists()


def test_the_lock_still_works_and_is_removed_on_release(tmp_path):
    folder = tmp_path / "build"
    lock = FolderLock(str(folder), "build")
    lock.acquire()
    try:
        assert Path(lock.path).read_text().startswith(f"build, pid {os.getpid()}")
        with pytest.raises(FolderBusy):
            FolderLock(str(folder), "build").acquire()
    finally:
        lock.release()
    assert not Path(lock.path).exists()


# -- row: a board that lies, a number that is not finite ---------------------------------------


@pytest.mark.parametrize("planted", [np.inf, -np.inf, np.nan])
@pytest.mark.parametrize("exact", [False, True])
def test_an_expected_output_that_is_not_finite_is_refused_not_a_pass(planted, exact):
    from brainsmith.commands.run import compare

    expected = np.linspace(-1.0, 1.0, 20).reshape(2, 10)
    expected[1, 3] = planted
    zeros = np.zeros_like(expected)  # a board answering nothing but zeros
    with pytest.raises(DriverError) as refused:
        compare(zeros, expected, exact, "y.npy")
    assert refused.value.exit_code == 2
    assert "y.npy" in refused.value.reason and "not finite" in refused.value.reason
    assert "frame 1" in refused.value.reason


@pytest.mark.parametrize("answer", [np.inf, -np.inf, np.nan])
def test_a_board_answering_a_value_that_is_not_finite_differs(answer):
    from brainsmith.commands.run import compare

    expected = np.linspace(-1.0, 1.0, 20).reshape(2, 10)
    got = expected.copy()
    got[0, 5] = answer
    with pytest.raises(DriverError) as differs:
        compare(got, expected, False, "y.npy")
    assert differs.value.exit_code == 1
    assert "1 of 20 elements differ" in differs.value.reason


def test_huge_finite_values_keep_the_tolerance_finite_and_still_catch_zeros():
    from brainsmith.commands.run import compare

    expected = np.full((1, 4), 1e308)
    with pytest.raises(DriverError) as differs:
        compare(np.zeros_like(expected), expected, False, "y.npy")
    assert "4 of 4 elements differ" in differs.value.reason


# -- row: numbers at the point they enter (report file, option) --------------------------------


@pytest.mark.parametrize(
    ("key", "text"),
    [("baud", "0.5"), ("baud", "Infinity"), ("baud", "1e300"), ("baud", "1"), ("baud", "NaN"),
     ("baud", '"fast"'), ("clock_mhz", "1e-300"), ("clock_mhz", "-Infinity"),
     ("clock_mhz", "true")],
)  # fmt: skip
def test_a_figure_of_bitstream_report_json_out_of_its_range_is_refused_by_name(tmp_path, key, text):
    from brainsmith.hardware.board.driver import bitstream_figure

    (tmp_path / "bitstream").mkdir()
    (tmp_path / "bitstream" / "report.json").write_text(f'{{"{key}": {text}}}')
    with pytest.raises(DriverError) as refused:
        bitstream_figure(str(tmp_path), key)
    assert f"{key} " in refused.value.reason and "report.json" in refused.value.reason
    assert "brainsmith bitstream" in refused.value.hint


def test_figures_in_range_are_read_and_a_missing_one_is_none(tmp_path):
    from brainsmith.hardware.board.driver import bitstream_figure

    (tmp_path / "bitstream").mkdir()
    (tmp_path / "bitstream" / "report.json").write_text('{"baud": 3000000, "clock_mhz": 85.0}')
    assert bitstream_figure(str(tmp_path), "baud") == 3_000_000
    assert bitstream_figure(str(tmp_path), "clock_mhz") == 85.0
    (tmp_path / "bitstream" / "report.json").write_text("{}")
    assert bitstream_figure(str(tmp_path), "baud") is None


@pytest.mark.parametrize("baud", [str(2**32), str(10**30), "1199", "0"])
def test_run_refuses_a_baud_out_of_range_before_touching_anything(tmp_path, baud):
    from tests.support.processes import invoke

    ran = invoke("run", str(tmp_path), "--simulate", "--baud", baud)
    assert ran.returncode == 2
    assert "--baud" in ran.stderr and "12000000" in ran.stderr


def test_the_command_line_s_baud_range_is_the_driver_s():
    import click

    from brainsmith.cli.run import run
    from brainsmith.hardware.board.driver import BAUD_RANGE

    (option,) = [p for p in run.params if p.name == "baud"]
    assert isinstance(option.type, click.IntRange)
    assert (option.type.min, option.type.max) == BAUD_RANGE


# -- row: input and output files of run and export ---------------------------------------------


def test_an_npy_header_claiming_hundreds_of_gib_is_refused_from_its_header(tmp_path):
    from brainsmith.commands.run import load_array

    forged = tmp_path / "x.npy"
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (200000000000,), }"
    header += " " * (118 - len(header)) + "\n"
    forged.write_bytes(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode())
    with pytest.raises(DriverError) as refused:
        load_array(str(forged), "--input")
    assert "--input" in refused.value.reason and str(forged) in refused.value.reason


@pytest.mark.parametrize("value", [np.nan, np.inf])
def test_inputs_that_are_not_finite_are_refused_by_name(tmp_path, value):
    from brainsmith.commands.run import load_array

    path = tmp_path / "x.npy"
    np.save(path, np.array([[0.5, value]], np.float32))
    with pytest.raises(DriverError) as refused:
        load_array(str(path), "--input", finite=True)
    assert "not finite" in refused.value.reason


def test_run_output_into_a_missing_folder_is_refused_before_the_run(tmp_path):
    from tests.support.processes import invoke

    missing = tmp_path / "no" / "such" / "y.npy"
    ran = invoke("run", str(tmp_path / "build"), "--simulate", "--output", str(missing))
    assert ran.returncode == 2
    assert f"the folder {missing.parent} does not exist" in ran.stderr
    assert "mkdir -p" in ran.stderr


def test_run_output_names_the_file_numpy_writes_and_refuses_a_folder(tmp_path):
    from brainsmith.commands.run import output_path, save_array

    assert output_path(str(tmp_path / "outs")) == str(tmp_path / "outs.npy")
    assert output_path(str(tmp_path / "y.npy")) == str(tmp_path / "y.npy")
    (tmp_path / "taken.npy").mkdir()
    with pytest.raises(DriverError, match="is a folder"):
        output_path(str(tmp_path / "taken.npy"))
    save_array(str(tmp_path / "y.npy"), np.arange(3))
    assert np.load(tmp_path / "y.npy").tolist() == [0, 1, 2]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["taken.npy", "y.npy"]


# -- row: a build folder nested 1,500 folders deep ---------------------------------------------


def deep_build(root: Path, levels: int) -> Path:
    """A build folder (a report.json) with ``levels`` folders nested below it."""
    root.mkdir()
    (root / "report.json").write_text("{}")
    descriptor = os.open(root, os.O_RDONLY)
    try:  # each level made relative to the last: the path itself grows past PATH_MAX
        for _ in range(levels):
            os.mkdir("d", dir_fd=descriptor)
            inner = os.open("d", os.O_RDONLY, dir_fd=descriptor)
            os.close(descriptor)
            descriptor = inner
    finally:
        os.close(descriptor)
    return root


def test_a_folder_nested_1500_deep_is_refused_by_the_gate_not_a_recursion_error(tmp_path):
    from brainsmith.intake.gate import MAX_DEPTH, UntrustedFolder, open_build_folder

    folder = deep_build(tmp_path / "build", 1500)
    with pytest.raises(UntrustedFolder) as refused:
        open_build_folder(folder)
    assert f"folders nested more than {MAX_DEPTH} deep" in str(refused.value)


def test_the_commands_on_a_deep_folder_exit_2_without_a_traceback(tmp_path):
    from tests.support.processes import invoke

    folder = deep_build(tmp_path / "build", 1500)
    for command in (
        ["run", str(folder), "--simulate"],
        ["export", str(folder), str(tmp_path / "x")],
    ):
        ran = invoke(*command)
        assert ran.returncode == 2, (command, ran.stdout, ran.stderr)
        assert "nested more than" in ran.stderr, ran.stderr
