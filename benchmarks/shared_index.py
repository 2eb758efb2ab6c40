"""Cold start of a second machine with and without the discovery index shared through Redis.

Starts a redis-server on loopback, lets "machine 1" (an empty cache folder) discover and
publish, then times fresh processes of "machine 2", each with an empty cache folder of its
own: listing all plugins without a shared index (a cold scan) and with it. Bytecode on, as
installed packages have it (``PYTHONDONTWRITEBYTECODE`` is unset, one warm-up run).

    .venv/bin/python -m benchmarks.shared_index [--runs 7]

Writes benchmarks/results/shared_index.json (benchmarks.run puts it in RESULTS.md).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
LIST_ALL = (
    "from brainsmith.plugins import transforms, kernels, backends, steps\n"
    "n = sum(len(c.list_plugins()) for c in (transforms, kernels, backends, steps))\n"
)


def start_redis(folder: str) -> tuple[subprocess.Popen, str]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = ["redis-server", "--bind", "127.0.0.1", "--port", str(port), "--save", ""]
    server = subprocess.Popen(
        [*command, "--appendonly", "no", "--dir", folder],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        with socket.socket() as client:
            if client.connect_ex(("127.0.0.1", port)) == 0:
                return server, f"redis://127.0.0.1:{port}/0"
        time.sleep(0.05)
    server.kill()
    raise SystemExit("redis-server did not start")


def cold_start(env: dict, url: str | None, root: str) -> float:
    """Seconds of one fresh list-all process with an empty cache folder of its own."""
    cache = tempfile.mkdtemp(dir=root)
    os.chmod(cache, 0o700)
    env = {**env, "BRAINSMITH_CACHE_DIR": cache}
    if url:
        env["BRAINSMITH_CACHE_URL"] = url
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", LIST_ALL], env=env, check=True)
    return time.perf_counter() - started


def main() -> int:
    from benchmarks.machine import machine_info

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    if shutil.which("redis-server") is None:
        print("redis-server is not installed (make redis)", file=sys.stderr)
        return 1
    root = tempfile.mkdtemp(prefix="bsm-shared-")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    config = Path(root, "config.yaml")
    config.write_text("plugin_system: {}\n")
    env["BRAINSMITH_CONFIG"] = str(config)
    server, url = start_redis(root)
    try:
        cold_start(env, url, root)  # machine 1 scans and publishes (and warms bytecode)
        without, shared = [], []
        for _ in range(args.runs):
            without.append(cold_start(env, None, root))
            shared.append(cold_start(env, url, root))
    finally:
        server.terminate()
        server.wait(timeout=20)
        shutil.rmtree(root, ignore_errors=True)
    result = {
        "benchmark": "shared_index",
        "runs": args.runs,
        "second_machine_cold_s": statistics.median(without),
        "second_machine_shared_s": statistics.median(shared),
        "machine": machine_info(),
        "load_average": list(os.getloadavg()),
    }
    out = HERE / "results" / "shared_index.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
