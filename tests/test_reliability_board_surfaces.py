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
