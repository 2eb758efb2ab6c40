"""The persisted discovery index: reuse, invalidation, and safe persistence."""

from __future__ import annotations

import json
import os
import stat
import time
from pathlib import Path

import pytest

from brainsmith.plugin.settings import memo
from tests.conftest import run_python

pytestmark = pytest.mark.cold_cache  # these tests start from an empty cache directory

STATS = """
import json
from brainsmith.plugin.manager import get_plugin_manager
manager = get_plugin_manager()
registry = manager.registry()
stats = manager.get_performance_stats()
print(json.dumps({"cache": stats["index_cache"], "parsed": stats["files_parsed"],
                  "sources": sorted(stats["source_timings_ms"]),
                  "user": sorted(s.name for s in registry.specs(framework="user")),
                  "count": stats["plugin_count"]}))
"""

PLUGIN = """
from qonnx.transformation.base import Transformation
from brainsmith.plugin.core import transform

@transform(name="{name}", description="{description}")
class {name}(Transformation):
    def apply(self, model):
        return model, False
"""


def discover(env: dict | None = None) -> dict:
    result = run_python(STATS, env=env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_new_process_within_ttl_reuses_index_without_scanning(plugin_folder):
    plugin_folder("a.py", PLUGIN.format(name="A", description="a"))
    cold = discover()
    warm = discover()
    assert cold["cache"] == "miss" and cold["parsed"] > 0
    assert warm == {**cold, "cache": "hit", "parsed": 0, "sources": []}


def test_new_plugin_file_invalidates_cache(plugin_folder):
    plugin_folder("a.py", PLUGIN.format(name="A", description="a"))
    discover()
    plugin_folder("b.py", PLUGIN.format(name="B", description="b"))
    after = discover()
    assert after["user"] == ["A", "B"]
    assert after["parsed"] == 1  # only the new file is read


def test_edited_plugin_file_invalidates_cache(plugin_folder):
    path = plugin_folder("a.py", PLUGIN.format(name="A", description="a"))
    discover()
    path.write_text(PLUGIN.format(name="Renamed", description="edited"))
    assert discover()["user"] == ["Renamed"]


def test_deleted_plugin_file_invalidates_cache(plugin_folder):
    plugin_folder("a.py", PLUGIN.format(name="A", description="a"))
    gone = plugin_folder("b.py", PLUGIN.format(name="B", description="b"))
    assert discover()["user"] == ["A", "B"]
    gone.unlink()
    assert discover()["user"] == ["A"]


def test_after_ttl_the_index_is_revalidated_and_only_changes_rescanned(plugin_folder):
    plugin_folder("a.py", PLUGIN.format(name="A", description="a"))
    discover({"BRAINSMITH_PLUGIN_CACHE_TTL": "0"})
    time.sleep(0.01)
    revalidated = discover({"BRAINSMITH_PLUGIN_CACHE_TTL": "0"})
    assert revalidated["cache"] == "revalidated"
    assert revalidated["parsed"] == 0  # every source re-stat'ed, nothing re-read


def test_index_directory_is_private_and_files_are_complete(tmp_path, monkeypatch):
    cache = tmp_path / "fresh" / "cache"
    monkeypatch.setenv("BRAINSMITH_CACHE_DIR", str(cache))
    discover()
    assert stat.S_IMODE(os.stat(cache).st_mode) == 0o700
    names = os.listdir(cache)
    assert names and all(n.endswith(".bsm") for n in names), names  # no temp files left


def index_files() -> list[str]:
    directory = os.environ["BRAINSMITH_CACHE_DIR"]
    return [
        os.path.join(directory, n)
        for n in os.listdir(directory)
        if n.startswith("index-") and not n.endswith("-files.bsm")
    ]


@pytest.mark.parametrize(
    ("damage", "warning"),
    [
        (lambda raw: raw[: len(raw) // 2], "corrupt or truncated"),
        (lambda raw: os.urandom(len(raw)), "unknown format"),
        (lambda raw: b"BSMEMO9\n" + raw[8:], "unknown format"),
        (lambda raw: raw[:8] + b"\x00garbage", "corrupt or truncated"),
    ],
    ids=["truncated", "random-bytes", "foreign-version", "garbage-payload"],
)
def test_damaged_index_is_discarded_with_a_warning_and_rebuilt(damage, warning):
    first = discover()
    for path in index_files():
        raw = Path(path).read_bytes()
        Path(path).write_bytes(damage(raw))
    result = run_python(STATS)
    assert result.returncode == 0, result.stderr
    assert warning in result.stderr
    rebuilt = json.loads(result.stdout)
    assert rebuilt["count"] == first["count"] and rebuilt["cache"] == "miss"
    assert discover()["cache"] == "hit"


def test_index_from_another_brainsmith_version_is_ignored():
    discover()
    for path in index_files():
        record = memo.decode(Path(path).read_bytes(), path)
        stamp, payload = record
        stamp[1] = "0.0.0-other"
        import marshal

        with open(path, "wb") as handle:
            handle.write(memo.MAGIC + marshal.dumps([stamp, payload]))
    assert discover()["cache"] == "miss"


def test_index_pointing_outside_its_source_is_not_trusted():
    discover()
    for path in index_files():
        stamp, payload = memo.decode(Path(path).read_bytes(), path)
        payload["sources"]["qonnx"]["specs"].append(
            ["transform", "Evil", "qonnx", "os:system", {}, ""]
        )
        memo.write(os.path.basename(path)[:-4], stamp, payload)
    result = run_python("""
        from brainsmith.plugin.manager import get_plugin_manager
        health = get_plugin_manager().health_check()
        print("Evil" in get_plugin_manager().registry().specs("transform"),
              any("os:system" in p["reason"] for p in health["broken_plugins"]))
    """)
    assert result.stdout.split() == ["False", "True"], result.stderr


def test_read_only_cache_directory_degrades_to_no_persistence(tmp_path, monkeypatch):
    if os.geteuid() == 0:
        # root ignores permission bits; use a path below a regular file instead
        blocked = tmp_path / "file"
        blocked.write_text("")
        monkeypatch.setenv("BRAINSMITH_CACHE_DIR", str(blocked / "cache"))
    else:
        ro = tmp_path / "ro"
        ro.mkdir(mode=0o500)
        monkeypatch.setenv("BRAINSMITH_CACHE_DIR", str(ro / "cache"))
    result = run_python(STATS)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["cache"] == "disabled"
    assert "cannot be created" in result.stderr


def test_world_writable_cache_directory_is_refused(tmp_path, monkeypatch):
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)
    monkeypatch.setenv("BRAINSMITH_CACHE_DIR", str(shared))
    result = run_python(STATS)
    assert result.returncode == 0, result.stderr
    assert "writable by other users" in result.stderr
    assert os.listdir(shared) == []


def test_cache_directory_of_another_user_is_refused(tmp_path, monkeypatch):
    if os.geteuid() != 0:
        pytest.skip("changing a folder's owner needs root")
    other = tmp_path / "other"
    other.mkdir(mode=0o700)
    os.chown(other, 12345, 12345)
    monkeypatch.setenv("BRAINSMITH_CACHE_DIR", str(other))
    result = run_python(STATS)
    assert result.returncode == 0, result.stderr
    assert "belongs to another user" in result.stderr
    assert os.listdir(other) == []


def test_failed_write_leaves_nothing_half_written(tmp_path):
    directory = tmp_path / "c"
    directory.mkdir(mode=0o700)
    huge = {"blob": "x" * 10}
    assert memo.write("ok", [1], huge, str(directory))
    # A payload marshal cannot encode fails before anything reaches the folder.
    assert not memo.write("bad", [1], {"x": object()}, str(directory))
    assert sorted(os.listdir(directory)) == ["ok.bsm"]


def test_disk_full_during_write_leaves_nothing_behind(tmp_path):
    import subprocess

    if os.geteuid() != 0 or subprocess.run(["which", "mount"], capture_output=True).returncode:
        pytest.skip("mounting a small tmpfs needs root")
    mount = tmp_path / "tiny"
    mount.mkdir()
    if subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=16k,mode=0700", "tmpfs", str(mount)],
        capture_output=True,
    ).returncode:
        pytest.skip("tmpfs mount not permitted here")
    try:
        assert not memo.write("big", [1], {"blob": "x" * 200_000}, str(mount))
        assert os.listdir(mount) == []
    finally:
        subprocess.run(["umount", str(mount)], check=True)


def test_eight_processes_discovering_from_a_cold_cache_agree(tmp_path):
    import subprocess
    import sys

    code = (
        "from brainsmith.plugin.manager import get_plugin_manager; "
        "print(sorted(s.qualified_name for s in get_plugin_manager().registry().specs()))"
    )
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=os.environ,
        )
        for _ in range(8)
    ]
    outputs = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), [err for _, err in outputs]
    assert len({out for out, _ in outputs}) == 1
    assert discover()["cache"] == "hit"


def test_switching_plugin_folders_within_the_ttl_uses_the_new_folder(tmp_path):
    first, second = tmp_path / "first", tmp_path / "second"
    for folder, name in ((first, "One"), (second, "Two")):
        folder.mkdir()
        (folder / f"{name.lower()}.py").write_text(PLUGIN.format(name=name, description=name))
    assert discover({"BRAINSMITH_PLUGIN_DIRS": str(first)})["user"] == ["One"]
    assert discover({"BRAINSMITH_PLUGIN_DIRS": str(second)})["user"] == ["Two"]
    assert discover({"BRAINSMITH_PLUGIN_DIRS": str(first)})["cache"] == "hit"
