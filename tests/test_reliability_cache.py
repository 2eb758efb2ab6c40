"""Cache faults the hub survives beyond those in tests/test_cache.py: a plugin module deleted
after discovery, index records of the wrong shape, records and scan data that disagree with the
plugin's source, damaged side files (scan data, config memo) and a write cut short by the
file-size limit. In each case the hub keeps working, the bad data is not trusted and no partial
file is left behind."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from brainsmith.plugin.discovery.folders import package_name
from brainsmith.plugin.discovery.index import index_name
from brainsmith.plugin.errors import PluginLoadError
from brainsmith.plugin.manager import get_plugin_manager, reset_plugin_system
from brainsmith.plugin.settings import memo
from brainsmith.plugin.settings.config import load_config, memo_folder
from brainsmith.plugins import transforms
from tests.conftest import REPO, run_python
from tests.support.processes import invoke

PLUGIN = """
from qonnx.transformation.base import Transformation
from brainsmith.plugin.core import transform


@transform(name="{name}")
class {name}(Transformation):
    def apply(self, model):
        return model, False
"""

SUMMARY = """
import json
from brainsmith.plugin.manager import get_plugin_manager
manager = get_plugin_manager()
registry = manager.registry()
health = manager.health_check()
print(json.dumps({
    "cache": manager.get_performance_stats()["index_cache"],
    "count": len(registry.specs()),
    "user": sorted(s.name for s in registry.specs(framework="user")),
    "broken": health["broken_plugins"],
    "loads": transforms_load(),
}))
"""
LOADS = """
def transforms_load():
    from brainsmith.plugins import transforms
    return [transforms.FoldConstants.__name__]
"""


def summary(env: dict | None = None) -> tuple[dict, str]:
    """A fresh process's view of the hub: (summary, its stderr)."""
    result = run_python(LOADS + SUMMARY, env=env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1]), result.stderr


def cache_files() -> list[Path]:
    return sorted(Path(os.environ["BRAINSMITH_CACHE_DIR"]).iterdir())


def main_index(suffix: str = "") -> Path:
    """The index file of the current configuration (``suffix="-files"``: its scan data)."""
    return Path(memo.path_for(index_name() + suffix))


def assert_complete_files_only() -> None:
    """No temp files, and every memo file decodes."""
    for path in cache_files():
        assert path.suffix == ".bsm", f"left behind: {path.name}"
        assert memo.decode(path.read_bytes(), str(path)) is not None, f"damaged: {path.name}"


# -- a plugin module deleted after discovery ---------------------------------------------------


def test_plugin_module_deleted_after_discovery_fails_clearly_on_use(plugin_folder):
    plugin_folder("kept_mod.py", PLUGIN.format(name="Kept"))
    gone = plugin_folder("gone_mod.py", PLUGIN.format(name="Gone"))
    get_plugin_manager().registry()
    gone.unlink()
    with pytest.raises(PluginLoadError) as err:
        transforms.Gone  # noqa: B018
    message = str(err.value)
    module = f"{package_name(str(plugin_folder.folder))}.gone_mod"
    assert "transform user:Gone" in message and f"its module {module}" in message
    assert "gone_mod.py) is not installed or was deleted or renamed since discovery" in message
    assert transforms.Kept.__name__ == "Kept"


def test_plugin_module_deleted_after_discovery_is_dropped_by_the_next_discovery(plugin_folder):
    plugin_folder("kept_mod2.py", PLUGIN.format(name="Kept"))
    gone = plugin_folder("gone_mod2.py", PLUGIN.format(name="Gone"))
    get_plugin_manager().registry()
    assert b"gone_mod2" in main_index().read_bytes()
    gone.unlink()
    with pytest.raises(PluginLoadError):
        transforms.Gone  # noqa: B018
    reset_plugin_system()
    registry = get_plugin_manager().registry()
    assert [s.name for s in registry.specs(framework="user")] == ["Kept"]
    assert get_plugin_manager().health_check()["status"] == "healthy"
    assert b"gone_mod2" not in main_index().read_bytes()


# -- index records of the wrong shape ----------------------------------------------------------


def forge_index(change) -> None:
    """Rewrite the index in place, keeping its (valid) stamp: only the payload is wrong.

    Its sources count as checked just now, so they are read within the TTL however long the
    session (whose warm index this is) has been running."""
    path = main_index()
    stamp, payload = memo.decode(path.read_bytes(), str(path))
    for state in payload["sources"].values():
        state["checked"] = time.time()
    change(payload)
    assert memo.write(path.name[: -len(".bsm")], stamp, payload)


def _sources_not_a_mapping(payload: dict) -> None:
    payload["sources"] = ["qonnx", "finn"]


def _checked_not_a_number(payload: dict) -> None:
    payload["sources"]["qonnx"]["checked"] = "yesterday"


def _specs_not_a_list(payload: dict) -> None:
    payload["sources"]["qonnx"]["specs"] = {"FoldConstants": "qonnx.x:FoldConstants"}


@pytest.mark.parametrize(
    "change",
    [_sources_not_a_mapping, _checked_not_a_number, _specs_not_a_list],
    ids=["sources-not-a-mapping", "checked-not-a-number", "specs-not-a-list"],
)
def test_index_of_the_wrong_shape_is_discarded_and_rebuilt(change):
    before, _ = summary()
    forge_index(change)
    after, _ = summary()
    assert after["cache"] == "miss" and after["count"] == before["count"]
    assert after["loads"] == ["FoldConstants"] and after["broken"] == []
    assert summary()[0]["cache"] == "hit"


@pytest.mark.parametrize(
    "record",
    [
        ["transform", "Short"],
        ["transform", "MetaText", "qonnx", "qonnx.core:MetaText", "not a mapping", ""],
        ["plugin", "NoType", "qonnx", "qonnx.core:NoType", {}, ""],
    ],
    ids=["too-short", "metadata-not-a-mapping", "unknown-type"],
)
def test_malformed_index_record_is_reported_and_the_rest_used(record):
    before, _ = summary()
    forge_index(lambda payload: payload["sources"]["qonnx"]["specs"].append(record))
    after, _ = summary()
    assert after["cache"] == "hit" and after["count"] == before["count"]
    assert after["loads"] == ["FoldConstants"]
    [problem] = after["broken"]
    assert problem["reason"].startswith("malformed index record (")
    assert problem["reason"].endswith("); ignored") and record[1] in problem["plugin"]


WRONGLY_TYPED = {  # id -> metadata entry of one record
    "brainsmith-version-a-number": {"brainsmith_version": 5},
    "description-a-list": {"description": ["a"]},
    "requires-a-number": {"requires": 5},
    "priority-out-of-range": {"priority": 1000},
    "line-a-text": {"line": "seven"},
    "unknown-key": {"entry": "os:system"},
}
USE_ALL = """
from brainsmith.plugins import transforms
from brainsmith.plugin.lifecycle.availability import is_available
from brainsmith.plugin.manager import get_plugin_manager
for spec in get_plugin_manager().registry().specs():
    is_available(spec)
print(len(transforms.list_plugins(available_only=True)))
"""


@pytest.mark.parametrize("case", list(WRONGLY_TYPED))
def test_index_record_with_wrongly_typed_metadata_is_dropped_and_named(case):
    before, _ = summary()
    victim = {}

    def damage(payload: dict) -> None:
        record = next(r for r in payload["sources"]["qonnx"]["specs"] if r[1] != "FoldConstants")
        record[4].update(WRONGLY_TYPED[case])
        victim["name"] = record[1]

    forge_index(damage)
    after, _ = summary()
    assert after["count"] == before["count"] - 1 and after["loads"] == ["FoldConstants"]
    [problem] = after["broken"]
    assert problem["plugin"] == f"transform qonnx:{victim['name']}"
    key = next(iter(WRONGLY_TYPED[case]))
    assert "malformed index record" in problem["reason"] and f"'{key}'" in problem["reason"]
    for args, code in [
        (["plugins", "list", "--all"], 0),
        (["plugins", "info", "FoldConstants"], 0),
        (["plugins", "health"], 1),
    ]:
        result = brainsmith(*args, env={"COLUMNS": "250"})
        assert result.returncode == code, (args, result.stdout[-1500:], result.stderr[-1500:])
        assert "Traceback" not in result.stderr
    assert f"qonnx:{victim['name']}" in brainsmith("plugins", "health").stdout
    used = run_python(USE_ALL)
    assert used.returncode == 0 and int(used.stdout) > 100, used.stderr[-1500:]


# -- records and scan data that disagree with the plugin's source -------------------------------

KERNEL = """
from brainsmith.plugin.core import kernel


@kernel(name="Swish", op_type="Swish", infer_transform="user:InferSwish")
class Swish:
    pass
"""
# id -> (index source, plugin type, record name, forged metadata, qualified name looked up)
DISAGREEING = {
    "brainsmith-transform-stage": (
        "brainsmith",
        "transform",
        "ConvertDivToMul",
        {"stage": "cleanup"},
        "brainsmith:ConvertDivToMul",
    ),
    "user-kernel-infer-transform": (
        "user",
        "kernel",
        "Swish",
        {"infer_transform": "qonnx:ConvertDivToMul"},
        "user:Swish",
    ),
    "brainsmith-transform-renamed": (
        "brainsmith",
        "transform",
        "ConvertDivToMul",
        {"name": "ConvertDivToMulRenamed"},
        "brainsmith:ConvertDivToMulRenamed",
    ),
}
# The same, with the plugin's module imported (by anything) before the plugin is looked up
DISAGREEING["brainsmith-transform-renamed-module-imported-first"] = DISAGREEING[
    "brainsmith-transform-renamed"
]
LOAD_ONE = """
import importlib
import json
from brainsmith.plugin.errors import PluginLoadError
from brainsmith.plugin.manager import get_plugin_manager

manager = get_plugin_manager()
registry = manager.registry()
spec = registry.find(TYPE, NAME)
if IMPORT_FIRST:
    importlib.import_module(spec.module)
before = dict(spec.metadata)
try:
    registry.load(spec)
    outcome = "served"
except PluginLoadError as exc:
    outcome = str(exc)
print(json.dumps({
    "before": before,
    "after": spec.metadata,
    "outcome": outcome,
    "broken": manager.health_check()["broken_plugins"],
}))
"""


def load_one(plugin_type: str, name: str, import_first: bool) -> dict:
    code = LOAD_ONE.replace("TYPE", repr(plugin_type)).replace("NAME", repr(name))
    code = code.replace("IMPORT_FIRST", repr(import_first))
    result = run_python(code)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def indexed(plugin_type: str, target: str) -> list[list]:
    """The records of the index file naming ``target``."""
    path = main_index()
    _, payload = memo.decode(path.read_bytes(), str(path))
    return [
        record
        for state in payload["sources"].values()
        for record in state.get("specs", [])
        if record[0] == plugin_type and record[3] == target
    ]


@pytest.mark.parametrize("case", list(DISAGREEING))
def test_cached_record_that_disagrees_with_the_plugins_decorator_is_refused_and_rebuilt(
    plugin_folder, case
):
    """A record whose metadata (a transform's stage, a kernel's infer_transform) or name is
    not what the plugin's decorator registers is refused when the plugin is first loaded: the
    plugin is named ("the discovery cache disagrees with the plugin's source"), served with
    its decorator's metadata (or, under another name, not at all, also when its module was
    imported before) and the index is rebuilt."""
    source, plugin_type, name, forged, served = DISAGREEING[case]
    plugin_folder("swish.py", KERNEL)
    before, _ = summary()
    real = {}

    def forge(payload: dict) -> None:
        state = next(v for k, v in payload["sources"].items() if k.split(":")[0] == source)
        record = next(r for r in state["specs"] if r[0] == plugin_type and r[1] == name)
        real.update(target=record[3], metadata=dict(record[4]))
        if "name" in forged:
            record[1] = forged["name"]
        else:
            record[4].update(forged)

    forge_index(forge)
    loaded = load_one(plugin_type, served, case.endswith("imported-first"))
    key = next(iter(forged))
    disagreements = [p for p in loaded["broken"] if served in p["plugin"]]
    assert len(disagreements) == 1, loaded["broken"]
    assert "the discovery cache disagrees with the plugin's source" in disagreements[0]["reason"]
    assert key in disagreements[0]["reason"]
    if key == "name":
        assert loaded["outcome"].startswith(f"refusing to serve {plugin_type} {served}")
    else:
        assert loaded["before"][key] == forged[key]  # the forged record was read
        assert loaded["outcome"] == "served"
        assert loaded["after"][key] == real["metadata"][key]
    after, _ = summary()  # a fresh process: the index was rebuilt from the sources
    assert after["count"] == before["count"] and after["broken"] == []
    [record] = indexed(plugin_type, real["target"])
    assert record[1] == name and record[4] == real["metadata"]


def test_scan_data_of_other_content_than_the_files_is_not_used():
    """The scan data stored for convert_div_to_mul.py replaced by another file's (its stamp
    kept): at the next rescan the file's content does not match it, so it is read again, and
    ConvertDivToMul is still brainsmith's (not QONNX's, which it fell back to)."""
    summary()
    path = main_index("-files")
    stamp, payload = memo.decode(path.read_bytes(), str(path))
    [files] = [f for root, f in payload["brainsmith"].items() if root.endswith("transforms")]
    files["convert_div_to_mul.py"][4:] = files["expand_norms.py"][4:]
    assert memo.write(path.name[: -len(".bsm")], stamp, payload)
    result = run_python(
        """
        import json
        from brainsmith.plugin.manager import get_plugin_manager
        manager = get_plugin_manager()
        spec = manager.registry().find("transform", "ConvertDivToMul")
        print(json.dumps([spec.qualified_name, manager.health_check()["broken_plugins"]]))
        """,
        env={"BRAINSMITH_PLUGIN_CACHE_TTL": "0"},  # rescanned, reusing what still matches
    )
    assert result.returncode == 0, result.stderr[-3000:]
    served, broken = json.loads(result.stdout.strip().splitlines()[-1])
    assert served == "brainsmith:ConvertDivToMul" and broken == []
    source = REPO / "brainsmith" / "transforms" / "convert_div_to_mul.py"
    digest = hashlib.sha256(source.read_bytes()).hexdigest()
    _, payload = memo.decode(path.read_bytes(), str(path))
    [files] = [f for root, f in payload["brainsmith"].items() if root.endswith("transforms")]
    assert digest in files["convert_div_to_mul.py"]  # kept by the content it was read from


# -- damaged side files ------------------------------------------------------------------------


def test_damaged_scan_data_file_only_costs_a_rescan(plugin_folder):
    plugin_folder("first_mod.py", PLUGIN.format(name="First"))
    summary()
    files = main_index("-files")
    files.write_bytes(os.urandom(files.stat().st_size))
    plugin_folder("second_mod.py", PLUGIN.format(name="Second"))
    after, stderr = summary()
    assert after["user"] == ["First", "Second"] and after["broken"] == []
    assert "unknown format; discarding it" in stderr
    assert_complete_files_only()


@pytest.mark.parametrize(
    "damage",
    [
        lambda raw: raw[: len(raw) // 2],
        lambda raw: os.urandom(len(raw)),
        lambda raw: memo.MAGIC + b"\xff" * 16,
    ],
    ids=["truncated", "random-bytes", "garbage-after-header"],
)
def test_damaged_config_memo_is_discarded_and_the_file_reread(
    tmp_path, monkeypatch, caplog, damage
):
    config = tmp_path / "config.yaml"
    config.write_text("plugin_system:\n  cache_ttl: 42\n")
    monkeypatch.setenv("BRAINSMITH_CONFIG", str(config))
    assert load_config().cache_ttl == 42
    stored = Path(memo.path_for("config", memo_folder(str(config))))
    stored.write_bytes(damage(stored.read_bytes()))
    with caplog.at_level(logging.WARNING, logger="brainsmith.plugin"):
        assert load_config().cache_ttl == 42
    assert "discarding it" in caplog.text
    assert_complete_files_only()


def test_config_memo_holding_the_wrong_type_is_ignored(tmp_path, monkeypatch):
    config = tmp_path / "config.yaml"
    config.write_text("plugin_system:\n  cache_ttl: 42\n")
    monkeypatch.setenv("BRAINSMITH_CONFIG", str(config))
    load_config()
    stored = Path(memo.path_for("config", memo_folder(str(config))))
    stamp, _ = memo.decode(stored.read_bytes(), str(stored))
    memo.write("config", stamp, ["cache_ttl", 1], memo_folder(str(config)))
    assert load_config().cache_ttl == 42


PLUGIN_DIRS = """
import json
from brainsmith.plugin.manager import get_plugin_manager
manager = get_plugin_manager()
print(json.dumps({
    "plugin_dirs": list(manager.config.plugin_dirs),
    "user": sorted(s.name for s in manager.registry().specs(framework="user")),
}))
"""


def test_forged_config_memo_in_the_cache_directory_adds_no_plugin_folders(tmp_path, monkeypatch):
    project = tmp_path / "project"
    (project / ".brainsmith").mkdir(parents=True)
    config = project / ".brainsmith" / "config.yaml"
    config.write_text("plugin_system:\n  cache_ttl: 42\n")
    monkeypatch.setenv("BRAINSMITH_CONFIG", str(config))
    evil = tmp_path / "evil"
    evil.mkdir()
    (evil / "evil_mod.py").write_text(PLUGIN.format(name="Evil"))
    st = config.stat()
    for stamp in (  # what a memo keyed by path, mtime and size (and more) looks like
        [str(config), st.st_mtime_ns, st.st_size],
        [str(config), st.st_mtime_ns, st.st_size, st.st_ino, st.st_ctime_ns],
    ):
        memo.write("config", stamp, {"cache_ttl": 42, "plugin_dirs": [str(evil)]})
        result = run_python(PLUGIN_DIRS)
        assert result.returncode == 0, result.stderr
        assert json.loads(result.stdout) == {"plugin_dirs": [], "user": []}


def test_config_memo_is_kept_beside_config_yaml_and_honours_its_cache_dir(tmp_path, monkeypatch):
    project = tmp_path / "project"
    (project / ".brainsmith").mkdir(parents=True)
    config = project / ".brainsmith" / "config.yaml"
    config.write_text("plugin_system:\n  cache_dir: my-cache\n")  # relative to the project
    default = tmp_path / "xdg"
    monkeypatch.delenv("BRAINSMITH_CACHE_DIR")
    monkeypatch.delenv("BRAINSMITH_CONFIG")
    monkeypatch.setenv("XDG_CACHE_HOME", str(default))
    for _ in range(2):  # cold, then warm from the memo
        result = run_python(LOADS + SUMMARY, cwd=project)
        assert result.returncode == 0, result.stderr
        assert "warning" not in result.stderr.lower()
    assert not default.exists()
    assert sorted(p.name for p in (project / ".brainsmith" / "__pycache__").iterdir()) == [
        "config.bsm"
    ]
    names = sorted(p.name for p in (project / "my-cache").iterdir())
    assert names and all(n.startswith("index-") for n in names)


# -- a write cut short ---------------------------------------------------------------------------

LIMITED = """
import resource, signal
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
resource.setrlimit(resource.RLIMIT_FSIZE, (32 * 1024, 32 * 1024))
"""


@pytest.mark.cold_cache
def test_write_cut_short_by_the_file_size_limit_leaves_no_partial_file():
    result = run_python(LIMITED + LOADS + SUMMARY)
    assert result.returncode == 0, result.stderr
    limited = json.loads(result.stdout.strip().splitlines()[-1])
    assert "could not write cache file" in result.stderr and "File too large" in result.stderr
    assert limited["cache"] == "disabled" and limited["loads"] == ["FoldConstants"]
    assert_complete_files_only()
    assert not [p for p in cache_files() if p.name.startswith("index-")]
    unlimited, _ = summary()
    assert unlimited["cache"] == "miss" and unlimited["count"] == limited["count"]
    assert_complete_files_only()


# -- cache files that are not regular files, or far too large ---------------------------------

BOUNDED = """
import resource
resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))  # a runaway read fails, not the host


def peak_mb():
    with open("/proc/self/status") as status:
        line = next(line for line in status if line.startswith("VmHWM:"))
    return int(line.split()[1]) / 1024
"""


def replace_index(make) -> Path:
    """Replace the light index of the current configuration by ``make(path)``."""
    index = main_index()
    index.unlink()
    make(index)
    return index


NOT_REGULAR = {
    "symlink-to-dev-zero": lambda index: index.symlink_to("/dev/zero"),
    "fifo": lambda index: os.mkfifo(index),
    "symlink-to-a-fifo": lambda index: (
        os.mkfifo(index.with_name("pipe")),
        index.symlink_to(index.with_name("pipe")),
    ),
}


@pytest.mark.parametrize("kind", list(NOT_REGULAR))
def test_index_that_is_not_a_regular_file_is_refused_without_reading_it(kind):
    index = replace_index(NOT_REGULAR[kind])
    try:
        result = run_python(BOUNDED + LOADS + SUMMARY, timeout=120)
    except subprocess.TimeoutExpired:
        pytest.fail("discovery hung on the cache file")
    assert result.returncode == 0, result.stderr[-2000:]
    seen = json.loads(result.stdout.strip().splitlines()[-1])
    assert seen["loads"] == ["FoldConstants"] and seen["cache"] == "miss"
    assert "symbolic link; ignoring it" in result.stderr or "not a regular file" in result.stderr
    assert index.is_file() and not index.is_symlink()  # replaced by a fresh index


def test_huge_sparse_index_is_refused_in_bounded_memory():
    def sparse(index: Path) -> None:
        with open(index, "wb") as handle:
            handle.write(memo.MAGIC)
            handle.truncate(1536 << 20)  # 1.5 GiB, almost all of it a hole

    replace_index(sparse)
    result = run_python(
        BOUNDED + LOADS + SUMMARY.replace('"loads"', '"peak_mb": peak_mb(), "loads"')
    )
    assert result.returncode == 0, result.stderr[-2000:]
    seen = json.loads(result.stdout.strip().splitlines()[-1])
    assert "is larger than 64 MiB; ignoring it" in result.stderr
    assert seen["loads"] == ["FoldConstants"] and seen["peak_mb"] < 400


# -- cache clear and temp files -----------------------------------------------------------------


def brainsmith(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """``brainsmith ARGS`` as a process of its own: the module's one ``cache clear`` there."""
    return subprocess.run(
        [sys.executable, "-m", "brainsmith.cli", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=300,
    )


def user_files(folder: Path) -> dict[str, bytes]:
    """Files a user keeps beside (or in) the cache, some named like brainsmith's."""
    files = {
        "thesis.tmp": b"chapter 1",
        "model.bsm": b"my own binary model format",
        "notes.bsm.123.tmp": b"not a cache file either",
        "empty.txt": b"",
    }
    for name, data in files.items():
        (folder / name).write_bytes(data)
    return files


@pytest.mark.parametrize("owner", ["writable-by-everyone", "another-user"])
def test_cache_clear_leaves_a_folder_that_is_not_its_own_alone(tmp_path, owner):
    folder = tmp_path / "shared"
    folder.mkdir()
    files = user_files(folder)
    assert memo.write("index-0badc0de", [1], {"x": 1}, str(tmp_path / "own"))  # a real one
    (tmp_path / "own" / "index-0badc0de.bsm").rename(folder / "index-0badc0de.bsm")
    if owner == "writable-by-everyone":
        os.chmod(folder, 0o777)
    elif os.geteuid() == 0:
        os.chown(folder, 12345, 12345)
    else:
        pytest.skip("changing a folder's owner needs root")
    before = sorted(os.listdir(folder))
    result = invoke("cache", "clear", env={"BRAINSMITH_CACHE_DIR": str(folder)})
    assert result.returncode == 1
    assert "refusing to use it" in result.stderr and "nothing was removed" in result.stderr
    assert sorted(os.listdir(folder)) == before
    assert all((folder / name).read_bytes() == data for name, data in files.items())


def test_cache_clear_removes_only_the_files_brainsmith_wrote(tmp_path, monkeypatch):
    folder = tmp_path / "cache"
    folder.mkdir(mode=0o700)
    monkeypatch.setenv("BRAINSMITH_CACHE_DIR", str(folder))
    assert run_python(LOADS + SUMMARY).returncode == 0  # a real index and config memo
    ours = sorted(p.name for p in folder.iterdir())
    assert ours and all(name.endswith(".bsm") for name in ours)
    files = user_files(folder)
    elsewhere = tmp_path / "elsewhere.bsm"
    elsewhere.write_bytes(memo.MAGIC + b"a user's file that happens to start like ours")
    (folder / "linked.bsm").symlink_to(elsewhere)
    parsed_config = Path(memo_folder(os.environ["BRAINSMITH_CONFIG"])) / "config.bsm"
    assert parsed_config.is_file()
    result = brainsmith("cache", "clear")
    assert result.returncode == 0, result.stderr
    assert f"removed {len(ours) + 1} cache file(s)" in result.stdout
    assert not parsed_config.exists()
    assert sorted(p.name for p in folder.iterdir()) == sorted([*files, "linked.bsm"])
    assert all((folder / name).read_bytes() == data for name, data in files.items())
    assert elsewhere.read_bytes().startswith(memo.MAGIC)


KILLED_AT_THE_RENAME = """
import os, signal
replace = os.replace
os.replace = lambda src, dst, **at: (
    os.kill(os.getpid(), signal.SIGKILL) if "index-" in dst else replace(src, dst, **at)
)
from brainsmith.plugin.manager import get_plugin_manager
get_plugin_manager().registry()
"""


@pytest.mark.cold_cache
def test_temp_file_of_a_writer_killed_at_the_rename_is_removed_by_the_next_write(tmp_path):
    folder = Path(os.environ["BRAINSMITH_CACHE_DIR"])
    killed = run_python(KILLED_AT_THE_RENAME)
    assert killed.returncode == -signal.SIGKILL
    orphans = [p.name for p in folder.iterdir() if p.name.endswith(".tmp")]
    assert orphans, "the killed writer left no temp file"
    (folder / "thesis.tmp").write_text("chapter 1")
    seen, _ = summary()
    assert seen["cache"] == "miss"
    assert sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp")) == ["thesis.tmp"]
