"""``brainsmith.files.read_once``: within it a command reads each file of a build's design
once, and uses those bytes even if the file changes meanwhile; outside its folders, and
after it, files are read afresh."""

from __future__ import annotations

import os

import pytest

from brainsmith.files import DamagedFile, read_once, read_regular


def test_a_file_read_within_the_scope_gives_the_bytes_first_read(tmp_path):
    design = tmp_path / "finn"
    design.mkdir()
    source, other = design / "layer.v", tmp_path / "report.json"
    source.write_bytes(b"module layer; endmodule\n")
    other.write_bytes(b"{}")
    with read_once(str(design)):
        first = read_regular(str(source), 1024)
        source.write_bytes(b"module swapped; endmodule\n")  # changed after it was checked
        os.replace(other, tmp_path / "gone.json")
        (tmp_path / "report.json").write_bytes(b'{"a": 1}')
        assert read_regular(str(design / ".." / "finn" / "layer.v"), 1024) == first
        assert read_regular(str(other), 1024) == b'{"a": 1}'  # outside the folder: afresh
    assert read_regular(str(source), 1024) == b"module swapped; endmodule\n"  # after: afresh


def test_a_limit_still_holds_for_bytes_read_before(tmp_path):
    (tmp_path / "big.dat").write_bytes(b"0" * 100)
    with read_once(str(tmp_path)):
        assert len(read_regular(str(tmp_path / "big.dat"), 1000)) == 100
        with pytest.raises(DamagedFile, match="larger than 10 bytes"):
            read_regular(str(tmp_path / "big.dat"), 10)


def test_a_fifo_is_refused_within_the_scope_too(tmp_path):
    os.mkfifo(tmp_path / "pipe.v")
    with read_once(str(tmp_path)), pytest.raises(DamagedFile, match="not a regular file"):
        read_regular(str(tmp_path / "pipe.v"), 1000)
