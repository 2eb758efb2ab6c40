"""Every JSON file the tools read from a folder goes through one bounded loader
(``brainsmith.files.read_json``): a damaged, deeply nested, oversized or special file is an
error naming the file, never a ``RecursionError`` or a hang, and nothing is written."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest

from brainsmith.files import DamagedFile, read_json

NESTED = "[" * 200_000  # deeper than Python's JSON reader can go


def test_a_deeply_nested_file_is_damaged_not_a_recursion_error(tmp_path):
    path = tmp_path / "report.json"
    path.write_text(NESTED)
    with pytest.raises(DamagedFile, match=f"{path} is nested too deeply to be read"):
        read_json(str(path))


@pytest.mark.parametrize(
    ("text", "words"),
    [("{'a': 1", "is not JSON"), ("[1, 2]", "holds a JSON list, not an object"),
     ("7", "holds a JSON int, not an object"), (b"\xff\xfe{", "is not JSON")],
)  # fmt: skip
def test_a_file_that_is_not_a_json_object_is_damaged(tmp_path, text, words):
    path = tmp_path / "x.json"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    with pytest.raises(DamagedFile, match=words):
        read_json(str(path))


def test_an_oversized_file_is_refused_by_its_size(tmp_path):
    path = tmp_path / "big.json"
    path.write_text(json.dumps({"a": "x" * 2000}))
    with pytest.raises(DamagedFile, match="is larger than 1,000 bytes"):
        read_json(str(path), limit=1000)


def test_a_fifo_is_refused_without_blocking(tmp_path):
    path = tmp_path / "report.json"
    os.mkfifo(path)
    found: list[BaseException] = []

    def read() -> None:
        try:
            read_json(str(path))
        except BaseException as exc:  # the test looks at it below
            found.append(exc)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(10)
    assert not reader.is_alive(), "read_json blocked on a FIFO"
    assert isinstance(found[0], DamagedFile) and "is not a regular file" in str(found[0])


def test_a_nested_checkpoint_is_no_usable_checkpoint(tmp_path):
    from brainsmith.builder.checkpoint import FILE, Checkpoint

    (tmp_path / FILE).write_text(NESTED)
    with pytest.raises(ValueError, match=f"no usable checkpoint in {tmp_path}: .*nested too"):
        Checkpoint.load(str(tmp_path))


def test_a_nested_exploration_record_is_run_again_not_a_crash(tmp_path):
    from brainsmith.dse.tasks import NODE_FILE, load_result

    (tmp_path / NODE_FILE).write_text(NESTED)
    assert load_result(str(tmp_path), "key") is None  # as any damaged record: run it again


def test_a_nested_scheduler_file_names_the_file(tmp_path):
    from brainsmith.dse.executor import ExecutorError, _address

    path = Path(tmp_path / "scheduler.json")
    path.write_text(NESTED)
    with pytest.raises(ExecutorError, match=f"scheduler file {path} names no scheduler address"):
        _address(str(path))
