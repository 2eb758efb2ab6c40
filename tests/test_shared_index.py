"""The discovery index shared through a real redis-server on loopback: a second machine's
cold start reuses the first one's scan; Redis down, slow or forged never fails a command."""

from __future__ import annotations

import json
import os
import shutil
import socket
import threading
import time

import pytest

from brainsmith.plugin.discovery.index import index_name
from brainsmith.plugin.discovery.shared_index import PREFIX
from tests.conftest import run_python
from tests.support.processes import free_port

pytestmark = pytest.mark.skipif(
    shutil.which("redis-server") is None, reason="redis-server is installed by make test"
)

REPORT = """
import json
from brainsmith.plugin.manager import get_plugin_manager
manager = get_plugin_manager()
specs = manager.registry().specs()
stats = manager.get_performance_stats()
health = manager.health_check()
print(json.dumps({
    "plugins": sorted(s.qualified_name for s in specs),
    "cache": stats["index_cache"],
    "shared": stats["index_from_shared_cache"],
    "broken": health["broken_plugins"],
}))
"""


def node(tmp_path, name: str, url: str) -> dict:
    """One machine of the cluster: its own empty cache folder, the shared index at ``url``."""
    cache = tmp_path / name
    cache.mkdir(mode=0o700, exist_ok=True)
    result = run_python(
        REPORT, env={"BRAINSMITH_CACHE_DIR": str(cache), "BRAINSMITH_CACHE_URL": url}
    )
    assert result.returncode == 0, result.stderr
    return {**json.loads(result.stdout.strip().splitlines()[-1]), "stderr": result.stderr}


def test_a_second_machine_reuses_the_first_ones_scan(tmp_path, redis_url):
    first = node(tmp_path, "node-1", redis_url)
    assert first["cache"] == "miss" and not first["shared"]
    second = node(tmp_path, "node-2", redis_url)
    assert second["shared"] and second["cache"] == "hit"
    assert second["plugins"] == first["plugins"] and len(second["plugins"]) > 300
    again = node(tmp_path, "node-2", redis_url)  # now from its own file index
    assert again["cache"] == "hit" and not again["shared"]


def test_redis_down_warns_and_the_command_works(tmp_path):
    down = f"redis://127.0.0.1:{free_port()}/0"  # nothing listens there
    result = node(tmp_path, "node-1", down)
    assert result["cache"] == "miss" and len(result["plugins"]) > 300
    assert "shared discovery index at" in result["stderr"] and "ConnectionError" in result["stderr"]


def test_redis_that_never_answers_costs_a_timeout_not_a_hang(tmp_path):
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)  # accepts connections, never replies
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        silent.settimeout(0.2)
        while not stop.is_set():
            try:
                accepted.append(silent.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        started = time.monotonic()
        result = node(tmp_path, "node-1", f"redis://127.0.0.1:{silent.getsockname()[1]}/0")
        took = time.monotonic() - started
    finally:
        stop.set()
        thread.join(timeout=5)
        for connection in accepted:
            connection.close()
        silent.close()
    assert len(result["plugins"]) > 300 and "Timeout" in result["stderr"]
    assert took < 60  # one timeout, then Redis is not tried again in this process


def test_a_forged_shared_record_is_refused_like_a_forged_file_record(tmp_path, redis_url):
    import redis

    node(tmp_path, "node-1", redis_url)
    client = redis.Redis.from_url(redis_url)
    key = PREFIX + index_name()
    stamp, payload = json.loads(client.get(key))
    forged = ["step", "forged", "brainsmith", "os:system", {}, ""]
    payload["sources"]["brainsmith"]["specs"].append(forged)
    client.set(key, json.dumps([stamp, payload]))
    second = node(tmp_path, "node-2", redis_url)
    assert second["shared"] and "brainsmith:forged" not in second["plugins"]
    reasons = [p["reason"] for p in second["broken"] if "forged" in p["plugin"]]
    assert len(reasons) == 1 and "outside this source; ignored" in reasons[0]


@pytest.mark.parametrize("stored", [b"\x00not json", b'{"a": 1}', b"[" * 100000])
def test_garbage_in_redis_is_ignored_with_a_warning(tmp_path, redis_url, stored):
    import redis

    redis.Redis.from_url(redis_url).set(PREFIX + index_name(), stored)
    result = node(tmp_path, "node-1", redis_url)
    assert result["cache"] == "miss" and not result["shared"] and len(result["plugins"]) > 300
    assert "shared index" in result["stderr"]


def test_a_cache_backend_that_is_no_redis_url_names_the_key(tmp_path):
    config = tmp_path / "config.yaml"
    config.write_text("plugin_system:\n  cache_backend: http://example.org/index\n")
    result = run_python(REPORT, env={"BRAINSMITH_CONFIG": str(config)})
    assert result.returncode != 0
    assert f"{config}: plugin_system.cache_backend: invalid value" in result.stderr
    assert os.fspath(config) in result.stderr


def test_an_oversized_shared_index_is_not_downloaded_whole(tmp_path, redis_url):
    import redis

    from brainsmith.plugin.settings.memo import MAX_BYTES

    redis.Redis.from_url(redis_url).set(PREFIX + index_name(), b"[" + b" " * (MAX_BYTES + 1))
    # its size is asked first: nothing is downloaded, well within the 1 s deadline
    result = node(tmp_path, "node-1", redis_url)
    assert result["cache"] == "miss" and not result["shared"] and len(result["plugins"]) > 300
    assert "bytes; ignored" in result["stderr"]
