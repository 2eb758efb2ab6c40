"""The shared discovery index under attack: servers that dribble, lie or babble, forged or
emptied indexes in a real redis-server, numbers no clock can hold, passwords in errors, and
cold discoveries racing in threads and processes."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from brainsmith.plugin.discovery.index import index_name
from brainsmith.plugin.discovery.shared_index import PREFIX
from brainsmith.plugin.settings import memo
from tests.conftest import run_python
from tests.support.processes import free_port, invoke
from tests.test_shared_index import REPORT

pytestmark = pytest.mark.skipif(
    not os.path.exists("/usr/bin/redis-server"), reason="redis-server is installed by make test"
)

HEALTH = REPORT.replace('"broken": health["broken_plugins"],', '"broken": health["broken_plugins"], "status": health["status"],')  # fmt: skip


class HostileServer:
    """A TCP server on 127.0.0.1 that misbehaves as ``kind`` says, in a thread of the test."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.settimeout(0.1)
        self.stop = threading.Event()
        self.connections = 0
        self.threads: list[threading.Thread] = []
        self.url = f"redis://127.0.0.1:{self.listener.getsockname()[1]}/0"

    def start(self) -> HostileServer:
        thread = threading.Thread(target=self._accept, daemon=True)
        thread.start()
        self.threads.append(thread)
        return self

    def close(self) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(timeout=5)
        self.listener.close()

    def _accept(self) -> None:
        while not self.stop.is_set():
            try:
                connection, _ = self.listener.accept()
            except OSError:
                continue
            self.connections += 1
            thread = threading.Thread(target=self._serve, args=(connection,), daemon=True)
            thread.start()
            self.threads.append(thread)

    def _serve(self, connection: socket.socket) -> None:
        connection.settimeout(0.3)
        try:
            if self.kind == "dribble":  # a reply line that never ends, one byte every 0.3 s
                connection.sendall(b"$")
                while not self.stop.wait(0.3):
                    connection.sendall(b"9")
            while not self.stop.is_set():
                try:
                    if not connection.recv(65536):
                        return
                except TimeoutError:
                    continue
                if self.kind == "ok":  # not Redis: +OK to everything, HELLO included
                    connection.sendall(b"+OK\r\n")
                elif self.kind == "garbage":
                    connection.sendall(b"\x00\xffHTTP/1.1 400 Bad Request\r\n\r\n")
                    return
        except OSError:
            return
        finally:
            connection.close()


@pytest.fixture
def hostile(request):
    server = HostileServer(request.param).start()
    try:
        yield server
    finally:
        server.close()


def brainsmith_cli(*args: str, env: dict, timeout: float = 120) -> subprocess.CompletedProcess:
    """The ``brainsmith`` command as a child process (killed if it outlives ``timeout``): the
    module's one, against a server that misbehaves."""
    return subprocess.run(
        [sys.executable, "-m", "brainsmith.cli", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        timeout=timeout,
    )


def node(tmp_path: Path, name: str, url: str, key: Path | None = None) -> dict:
    """One machine of the cluster (its own cache folder) asking the hub for its health."""
    cache = tmp_path / name
    cache.mkdir(mode=0o700, exist_ok=True)
    env = {"BRAINSMITH_CACHE_DIR": str(cache), "BRAINSMITH_CACHE_URL": url}
    if key is not None:
        env["BRAINSMITH_CACHE_KEY_FILE"] = str(key)
    result = run_python(HEALTH, env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    return {**json.loads(result.stdout.strip().splitlines()[-1]), "stderr": result.stderr}


def key_file(tmp_path: Path, name: str = "cluster.key", mode: int = 0o600) -> Path:
    path = tmp_path / name
    path.write_bytes(os.urandom(32).hex().encode())
    path.chmod(mode)
    return path


def stored(url: str) -> bytes:
    import redis

    return redis.Redis.from_url(url).get(PREFIX + index_name())


def store(url: str, value: bytes | str) -> None:
    import redis

    redis.Redis.from_url(url).set(PREFIX + index_name(), value)


def shared_json(url: str) -> list:
    """The ``[stamp, payload]`` the shared index holds."""
    return json.loads(stored(url))


def as_json(record: list) -> bytes:
    return json.dumps(record).encode()


def shared_problems(result: dict) -> list[str]:
    return [f"{p['plugin']}: {p['reason']}" for p in result["broken"] if "shared" in p["plugin"]]


# -- the network: every wait has a deadline ------------------------------------------------------


@pytest.mark.parametrize("hostile", ["dribble", "ok", "garbage"], indirect=True)
def test_a_misbehaving_server_costs_one_bounded_warning_in_process(hostile):
    from brainsmith.plugin.discovery import shared_index

    started = time.monotonic()
    got = shared_index.read(hostile.url, index_name(), ["stamp"], None)
    took = time.monotonic() - started
    assert got is None
    # the deadline is shared_index.TIMEOUT (1 s); without one the dribbler is waited on forever
    assert took < 30, f"{took:.1f} s waiting on {hostile.kind}"
    tried = hostile.connections  # (counted before the server says a word)
    assert tried >= 1
    assert shared_index.write(hostile.url, index_name(), ["stamp"], {}, None) is False
    assert hostile.connections == tried  # not tried again in this process


@pytest.mark.cold_cache
@pytest.mark.parametrize("hostile", ["dribble", "ok", "garbage"], indirect=True)
def test_plugins_list_against_a_misbehaving_server_warns_once_and_exits_0(tmp_path, hostile):
    started = time.monotonic()
    result = brainsmith_cli("plugins", "list", env={"BRAINSMITH_CACHE_URL": hostile.url})
    took = time.monotonic() - started
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Traceback" not in result.stderr
    assert result.stderr.count("shared discovery index at") == 1, result.stderr
    assert "Streamline" in result.stdout
    assert took < 60


# -- what Redis holds: authenticated, checked, never lingering ------------------------------------


def test_an_index_with_every_record_emptied_is_refused_and_named(tmp_path, redis_url):
    first = node(tmp_path, "node-1", redis_url)
    stamp, payload = shared_json(redis_url)
    for state in payload["sources"].values():
        state["specs"] = []
    store(redis_url, as_json([stamp, payload]))
    second = node(tmp_path, "node-2", redis_url)
    assert second["plugins"] == first["plugins"] and not second["shared"]
    culprits = shared_problems(second)
    assert len(culprits) == 1 and f"shared index at {redis_url}" in culprits[0], second["broken"]
    assert "no plugins" in culprits[0] and "ignored" in culprits[0]
    assert second["status"] == "degraded"
    again = node(tmp_path, "node-3", redis_url)
    assert again["shared"] and again["plugins"] == first["plugins"]


def test_a_signed_index_is_used_and_a_tampered_one_is_refused_and_named(tmp_path, redis_url):
    key = key_file(tmp_path)
    first = node(tmp_path, "node-1", redis_url, key)
    stamp, payload = shared_json(redis_url)
    assert len(payload["signature"]) == 64  # HMAC-SHA256, in hex
    second = node(tmp_path, "node-2", redis_url, key)
    assert second["shared"] and second["plugins"] == first["plugins"]
    assert shared_problems(second) == []
    # one backend record removed, the rest untouched, the old signature kept
    specs = payload["sources"]["brainsmith"]["specs"]
    specs.remove(next(s for s in specs if s[0] == "backend"))
    store(redis_url, as_json([stamp, payload]))
    third = node(tmp_path, "node-3", redis_url, key)
    assert third["plugins"] == first["plugins"] and not third["shared"]
    assert shared_problems(third) == [
        f"shared index at {redis_url}: signature does not match; ignored"
    ]


def test_unsigned_data_is_refused_when_a_key_is_configured(tmp_path, redis_url):
    key = key_file(tmp_path)
    first = node(tmp_path, "node-1", redis_url)  # publishes without a key
    second = node(tmp_path, "node-2", redis_url, key)
    assert second["plugins"] == first["plugins"] and not second["shared"]
    culprits = shared_problems(second)
    assert len(culprits) == 1 and "not signed" in culprits[0] and redis_url in culprits[0]


def test_a_key_file_others_can_read_is_refused_naming_the_file(tmp_path, redis_url):
    key = key_file(tmp_path, mode=0o644)
    first = node(tmp_path, "node-1", redis_url, key)
    assert len(first["plugins"]) > 300
    assert f"{key}" in first["stderr"] and "chmod 600" in first["stderr"]
    culprits = shared_problems(first)
    assert len(culprits) == 1 and str(key) in culprits[0]
    assert stored(redis_url) is None  # nothing published with a key others may know


def test_an_unsigned_index_kept_locally_does_not_outlive_its_redis_data(tmp_path, redis_url):
    first = node(tmp_path, "node-1", redis_url)
    good = stored(redis_url)
    stamp, payload = shared_json(redis_url)
    specs = payload["sources"]["brainsmith"]["specs"]
    removed = [s for s in specs if s[0] == "backend"][:3]
    for spec in removed:
        specs.remove(spec)
    store(redis_url, as_json([stamp, payload]))  # plausible, so trusted without a key
    second = node(tmp_path, "node-2", redis_url)
    assert second["shared"] and len(second["plugins"]) == len(first["plugins"]) - 3
    store(redis_url, good)  # Redis fixed: the local copy of the old data is not served
    fixed = node(tmp_path, "node-2", redis_url)
    assert fixed["plugins"] == first["plugins"]
    store(redis_url, as_json([stamp, payload]))
    node(tmp_path, "node-4", redis_url)
    down = f"redis://127.0.0.1:{free_port()}/0"  # Redis turned off
    again = node(tmp_path, "node-4", down)
    assert again["plugins"] == first["plugins"]


# -- numbers no clock can hold ---------------------------------------------------------------------

HUGE = {"10**4000": 10**4000, "inf": float("inf"), "nan": float("nan"), "-10**30": -(10**30)}


@pytest.mark.parametrize("field", ["checked", "stamp"])
@pytest.mark.parametrize("value", HUGE.values(), ids=HUGE.keys())
def test_a_number_out_of_range_in_the_local_index_is_rescanned_not_fatal(field, value):
    from brainsmith.plugin.discovery.index import INDEX_FORMAT, _brainsmith_version, _scanner_stamp

    name = index_name()
    directory = os.environ["BRAINSMITH_CACHE_DIR"]
    stamp = [INDEX_FORMAT, _brainsmith_version(), name, _scanner_stamp()]
    index = memo.read(name, stamp, directory)
    assert isinstance(index, dict)
    for state in index["sources"].values():
        if field == "checked":
            state["checked"] = value
        elif state.get("stamp"):
            state["stamp"][0][1] = value  # a file's mtime
    assert memo.write(name, stamp, index, directory)
    result = invoke("plugins", "list", logs_on_stderr=True)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Traceback" not in result.stderr and "Streamline" in result.stdout
    assert "out of range" in result.stderr and "rescanning" in result.stderr


@pytest.mark.parametrize("value", ["1" + "0" * 4000, "1e999", "NaN", "-Infinity"])
def test_a_huge_checked_time_in_redis_is_refused_not_fatal(tmp_path, redis_url, value):
    first = node(tmp_path, "node-1", redis_url)
    stamp, payload = shared_json(redis_url)
    text = json.dumps([stamp, payload])
    checked = payload["sources"]["brainsmith"]["checked"]
    store(redis_url, text.replace(json.dumps(checked), value))
    cache = tmp_path / "node-2"
    cache.mkdir(mode=0o700)
    env = {"BRAINSMITH_CACHE_DIR": str(cache), "BRAINSMITH_CACHE_URL": redis_url}
    result = brainsmith_cli("plugins", "list", env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Traceback" not in result.stderr and "Streamline" in result.stdout
    assert "out of range" in result.stderr or "not JSON" in result.stderr
    assert len(first["plugins"]) > 300


# -- configuration errors never print the password --------------------------------------------------


@pytest.mark.parametrize(
    "url", ["redis://:hunter2@host:notaport/0", "http://user:hunter2@host/0", "redis://:hunter2@/x"]
)
def test_a_bad_cache_backend_url_is_reported_without_its_password(tmp_path, url):
    result = brainsmith_cli("plugins", "list", env={"BRAINSMITH_CACHE_URL": url})
    assert result.returncode != 0
    assert "BRAINSMITH_CACHE_URL" in result.stderr and "invalid value" in result.stderr
    assert "hunter2" not in result.stderr and "***" in result.stderr
    config = tmp_path / "config.yaml"
    config.write_text(f"plugin_system:\n  cache_backend: '{url}'\n")
    result = brainsmith_cli("plugins", "list", env={"BRAINSMITH_CONFIG": str(config)})
    assert result.returncode != 0 and f"{config}: plugin_system.cache_backend" in result.stderr
    assert "hunter2" not in result.stderr and "***" in result.stderr


def test_a_password_and_database_in_the_url_are_used_and_never_printed(tmp_path):
    port = free_port()
    command = ["/usr/bin/redis-server", "--bind", "127.0.0.1", "--port", str(port), "--save", ""]
    command += ["--appendonly", "no", "--dir", str(tmp_path), "--requirepass", "s3cret-pw"]
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 20
        while True:  # listening (a password-protected server answers no unauthenticated PING)
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert server.poll() is None and time.monotonic() < deadline, "no redis-server"
                time.sleep(0.05)
        url = f"redis://:s3cret-pw@127.0.0.1:{port}/3"
        first = node(tmp_path, "node-1", url)
        second = node(tmp_path, "node-2", url)
        assert second["shared"] and second["plugins"] == first["plugins"]
        wrong = node(tmp_path, "node-3", f"redis://:wrong-pw@127.0.0.1:{port}/3")
        assert not wrong["shared"] and "wrong-pw" not in wrong["stderr"]
        assert f"redis://:***@127.0.0.1:{port}/3 unusable" in wrong["stderr"]
    finally:
        server.terminate()
        server.wait(timeout=20)


# -- entry points: cold discoveries racing in threads and processes ---------------------------------

RACE_PACKAGE = """
from qonnx.transformation.base import Transformation
from brainsmith.plugin import transform


@transform(name="RacedEntry")
class RacedEntry(Transformation):
    def apply(self, model):
        return model, False
"""

RACER = """
import importlib.util, json, os, sys, threading, tempfile
sys.setswitchinterval(1e-5)
from brainsmith.plugin import log
from brainsmith.plugin.settings.config import load_config
from brainsmith.plugin.discovery.index import discover

config = load_config()
config.frameworks = ("user",)  # entry points only: the source under test
failures, found = [], []
lock = threading.Lock()
barrier = threading.Barrier(THREADS + 1)
done = threading.Event()


def cold(index):
    barrier.wait(timeout=60)
    for turn in range(ROUNDS):
        config_copy = load_config()
        config_copy.frameworks = ("user",)
        config_copy.cache_dir = tempfile.mkdtemp(prefix=f"cold-{index}-{turn}-", dir=CACHES)
        state = discover(config_copy).states["entry_points"]
        with lock:
            found.append(sorted(s[1] for s in state["specs"]))
            failures.extend(p[2] for p in state["problems"])


def probe():  # plugin code probing optional dependencies while discovery runs
    barrier.wait(timeout=60)
    while not done.is_set():
        importlib.util.find_spec("no_such_optional_dependency")


threads = [threading.Thread(target=cold, args=(i,), daemon=True) for i in range(THREADS)]
prober = threading.Thread(target=probe, daemon=True)
for thread in [*threads, prober]:
    thread.start()
for thread in threads:
    thread.join(timeout=120)
done.set()
prober.join(timeout=10)
print(json.dumps({"hung": sum(t.is_alive() for t in threads), "failures": failures, "found": found}))
sys.stdout.flush()
os._exit(0)
"""


@pytest.mark.cold_cache
def test_cold_entry_point_discoveries_racing_in_threads_and_processes_all_succeed(tmp_path):
    site = tmp_path / "site"
    (site / "raced_pkg").mkdir(parents=True)
    (site / "raced_pkg" / "__init__.py").write_text(textwrap.dedent(RACE_PACKAGE))
    info = site / "raced_pkg-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: raced-pkg\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[brainsmith.plugins]\nraced = raced_pkg\n")
    # folders of a long PYTHONPATH that do not exist: importlib caches "no finder" for each
    missing = [str(tmp_path / f"missing-{i}") for i in range(64)]
    path = os.pathsep.join([*missing, str(site), os.environ.get("PYTHONPATH", "")])
    env = {**os.environ, "PYTHONPATH": path}
    caches = tmp_path / "caches"
    caches.mkdir()
    code = f"THREADS = 8\nROUNDS = 12\nCACHES = {str(caches)!r}\n" + textwrap.dedent(RACER)
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for _ in range(4)
    ]
    results, errors = [], []
    try:
        for proc in procs:
            out, err = proc.communicate(timeout=240)
            assert proc.returncode == 0, err[-3000:]
            results.append(json.loads(out.strip().splitlines()[-1]))
            errors.append(err)
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=10)
    assert [r["hung"] for r in results] == [0] * len(procs)
    assert not any("plugin source entry_points failed" in e for e in errors), errors
    assert [f for r in results for f in r["failures"]] == []
    assert {json.dumps(f) for r in results for f in r["found"]} == {json.dumps(["RacedEntry"])}
