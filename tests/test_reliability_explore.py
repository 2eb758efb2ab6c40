"""brainsmith explore under pressure: Ctrl-C and SIGTERM while a variant hangs, a time limit
per variant, a variant that crashes its worker, schedulers that are not Dask, design spaces
too large to explore and two explorations into one folder. Real processes, real signals and
real sockets throughout: the CLI runs as a child process where that process is the subject (a
signal, a time limit, a folder it holds), else in the test's process; a plugin step hangs or
segfaults for real, Dask clusters and hostile TCP servers listen on 127.0.0.1."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from brainsmith.blueprint import load_blueprint
from brainsmith.dse.executor import CONNECT_TIMEOUT
from brainsmith.dse.variants import SpaceError, expand
from tests.support.cluster import dask_cluster
from tests.support.processes import brainsmith as cli
from tests.support.processes import invoke

REPO = Path(__file__).resolve().parents[1]
MLP = str(REPO / "examples" / "models" / "mlp_4bit.onnx")
HANG_SECONDS = 600
# v00 (target_fps 100000) builds in seconds; v01 (1000000) hangs in hang_here. With
# HANG_MODE=stubborn the step swallows every interrupt, as a library with `except:` would.
# hang_here comes first, so the variants share no segment: on two workers, Dask runs them
# side by side (a shared parent could place both on one worker, v00 queued behind v01).
HANGING_STEP = """\
import os
import time

from brainsmith.plugin.core import step


@step(name="hang_here")
def hang_here(model, cfg):
    if cfg.target_fps != 1000000:
        return model
    with open(os.environ["HANG_MARKER"], "a") as handle:
        handle.write(f"{os.getpid()}\\n")
    end = time.monotonic() + HANG_SECONDS
    while time.monotonic() < end:
        try:
            time.sleep(0.5)
        except BaseException:
            if os.environ.get("HANG_MODE") != "stubborn":
                raise
    return model
""".replace("HANG_SECONDS", str(HANG_SECONDS))
SPACE = f"""\
name: hang
extends: {REPO / "blueprints" / "mlp.yaml"}
steps: [hang_here, cleanup, qonnx_to_finn]
design_space:
  build: {{target_fps: [100000, 1000000]}}
"""
# v01 (target_fps 1000000) segfaults in crash_here, its second step, as a broken native
# extension would; v00 builds. cleanup comes first, so the variants share it: a segment, then
# each variant's own tail (v00's may wait on the worker v01 kills, and be lost with it).
CRASHING_STEP = """\
import ctypes
import os

from brainsmith.plugin.core import step


@step(name="crash_here")
def crash_here(model, cfg):
    if cfg.target_fps != 1000000:
        return model
    with open(os.environ["CRASH_MARKER"], "a") as handle:
        handle.write(f"{os.getpid()}\\n")
    ctypes.string_at(0)  # reads address 0: SIGSEGV
    return model
"""
CRASH_SPACE = SPACE.replace("name: hang", "name: crash").replace(
    "[hang_here, cleanup, qonnx_to_finn]", "[cleanup, crash_here, qonnx_to_finn]"
)
# Bounds on waits, generous for a loaded machine: the behaviour they tell apart is a hang.
# From the signal to the exit: GRACE (8 s) and a Dask teardown of up to 30 s (client and
# cluster closes) are by design; a variant that is not stopped hangs for 600 s.
STOP_SECONDS = 120
# --variant-timeout of the time limit test: well above what v00's segment takes on a loaded
# machine (a second or two; FINN's import too, should it land in the segment), well below
# HANG_SECONDS.
VARIANT_TIMEOUT = 30
# From the start of the command to its refusal of a bad scheduler: the probe's own deadline
# (CONNECT_TIMEOUT, plus a 2 s backstop), and time for a loaded machine to start the command.
NETWORK_SECONDS = CONNECT_TIMEOUT + 2 + 30
SHORT_CONNECT = 2.0  # --scheduler-timeout where the default's bound is not what a test checks
SHORT_NETWORK_SECONDS = SHORT_CONNECT + 2 + 30

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("explore")]


class Hanging:
    """A design space whose second variant hangs, and how to run it with the CLI."""

    def __init__(self, root: Path, stubborn: bool) -> None:
        plugins = root / "plugins"
        plugins.mkdir()
        (plugins / "hang.py").write_text(HANGING_STEP)
        self.blueprint = root / "hang.yaml"
        self.blueprint.write_text(SPACE)
        self.marker = root / "hanging.pids"
        self.env = {
            **os.environ,
            "BRAINSMITH_PLUGIN_DIRS": str(plugins),
            "HANG_MARKER": str(self.marker),
            "HANG_MODE": "stubborn" if stubborn else "plain",
        }
        self.processes: list[subprocess.Popen] = []

    def start(self, out: Path, *options: str) -> subprocess.Popen:
        process = cli(
            "explore", MLP, str(self.blueprint), "-o", str(out), "--quiet", *options,
            env=self.env, start_new_session=True,
        )  # fmt: skip
        self.processes.append(process)
        return process

    def wait_until_hanging(self, process: subprocess.Popen, out: Path, finished: int) -> None:
        """Until v01 hangs, explore.json exists and records ``finished`` finished variants."""
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:
            assert process.poll() is None, process.communicate()
            finished_ids = done(out)
            if self.marker.is_file() and finished_ids is not None and len(finished_ids) >= finished:
                return
            time.sleep(0.2)
        raise AssertionError("the hanging variant did not start within 240 s")

    def stop_all(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.communicate(timeout=30)


def done(out: Path) -> list[str] | None:
    """The ids of the variants explore.json records as finished; None before it is written."""
    try:
        data = json.loads((out / "explore.json").read_text())
    except (OSError, ValueError):
        return None
    return [v["id"] for v in data["variants"] if v["status"] in ("ok", "failed")]


def record(out: Path) -> dict:
    return json.loads((out / "explore.json").read_text())


def wait_for_exit(process: subprocess.Popen, seconds: float) -> tuple[str, str, float]:
    """(stdout, stderr, seconds it took); fails the test if the process outlives ``seconds``."""
    began = time.monotonic()
    try:
        stdout, stderr = process.communicate(timeout=seconds)
    except subprocess.TimeoutExpired:
        process.kill()  # (its own process group, if any, is the fixture's to end)
        process.communicate(timeout=30)
        raise AssertionError(f"brainsmith did not exit within {seconds} s") from None
    return stdout, stderr, time.monotonic() - began


def family(process: subprocess.Popen) -> list[psutil.Process]:
    return psutil.Process(process.pid).children(recursive=True)


def gone(processes: list[psutil.Process], seconds: float = 60) -> bool:
    _, alive = psutil.wait_procs(processes, timeout=seconds)
    return not alive


@pytest.fixture
def stubborn(tmp_path) -> Iterator[Hanging]:
    hanging = Hanging(tmp_path, stubborn=True)
    try:
        yield hanging
    finally:
        hanging.stop_all()


@pytest.fixture
def plain(tmp_path) -> Iterator[Hanging]:
    hanging = Hanging(tmp_path, stubborn=False)
    try:
        yield hanging
    finally:
        hanging.stop_all()


# -- Ctrl-C, SIGTERM ---------------------------------------------------------------------


def test_ctrl_c_twice_stops_an_in_process_variant_that_ignores_it(stubborn, tmp_path):
    out = tmp_path / "out"
    process = stubborn.start(out, "--workers", "0")
    stubborn.wait_until_hanging(process, out, finished=1)
    os.killpg(process.pid, signal.SIGINT)  # Ctrl-C in a terminal: the whole process group
    time.sleep(0.5)
    os.killpg(process.pid, signal.SIGINT)
    _, stderr, _ = wait_for_exit(process, STOP_SECONDS)
    assert process.returncode == 130, stderr
    assert "interrupted" in stderr and "--resume" in stderr and "Traceback" not in stderr
    data = record(out)
    assert data["status"] == "interrupted"
    assert {v["id"]: v["status"] for v in data["variants"]} == {"v00": "ok", "v01": "cancelled"}


def test_one_ctrl_c_stops_an_in_process_variant_that_ignores_it_after_a_grace(stubborn, tmp_path):
    out = tmp_path / "out"
    process = stubborn.start(out, "--workers", "0")
    stubborn.wait_until_hanging(process, out, finished=1)
    process.send_signal(signal.SIGINT)
    _, stderr, _ = wait_for_exit(process, STOP_SECONDS)
    assert process.returncode == 130, stderr
    assert "v01 did not stop" in stderr
    assert record(out)["status"] == "interrupted"


def test_sigterm_records_the_exploration_as_interrupted_and_stops_the_workers(plain, tmp_path):
    out = tmp_path / "out"
    process = plain.start(out, "--workers", "2")
    plain.wait_until_hanging(process, out, finished=0)  # (Dask may queue v00 behind v01)
    assert record(out)["status"] == "running"
    children = family(process)
    process.send_signal(signal.SIGTERM)
    _, stderr, _ = wait_for_exit(process, STOP_SECONDS)
    assert process.returncode == 143, stderr
    assert "interrupted by SIGTERM" in stderr and "Traceback" not in stderr
    data = record(out)
    assert data["status"] == "interrupted"
    statuses = {v["id"]: v["status"] for v in data["variants"]}
    assert statuses["v01"] == "cancelled" and statuses["v00"] in ("ok", "cancelled")
    assert children and gone(children)


def test_sigterm_stops_an_in_process_variant_that_ignores_it(stubborn, tmp_path):
    out = tmp_path / "out"
    process = stubborn.start(out, "--workers", "0")
    stubborn.wait_until_hanging(process, out, finished=1)
    process.send_signal(signal.SIGTERM)
    _, stderr, _ = wait_for_exit(process, STOP_SECONDS)
    assert process.returncode == 143, stderr
    assert record(out)["status"] == "interrupted"


# -- the time limit per variant --------------------------------------------------------------


def test_a_variant_over_the_time_limit_is_recorded_and_the_others_finish(stubborn, tmp_path):
    out = tmp_path / "out"
    began = time.monotonic()
    process = stubborn.start(out, "--workers", "2", "--variant-timeout", str(VARIANT_TIMEOUT))
    stdout, stderr, _ = wait_for_exit(process, HANG_SECONDS - 60)
    assert process.returncode == 0, stderr
    assert "1 of 2 variants built, 1 failed" in stdout
    data = record(out)
    assert data["status"] == "complete" and data["variant_timeout"] == VARIANT_TIMEOUT
    variants = {v["id"]: v for v in data["variants"]}
    assert variants["v00"]["status"] == "ok"
    timed_out = variants["v01"]
    assert timed_out["status"] == "failed" and timed_out["error"]["timed_out"] is True
    assert f"did not finish within {VARIANT_TIMEOUT} s" in timed_out["error"]["reason"]
    assert "--variant-timeout" in timed_out["error"]["hint"]
    assert stubborn.marker.is_file()
    hung = int(stubborn.marker.read_text().split()[0])
    assert not psutil.pid_exists(hung) or psutil.Process(hung).status() == "zombie"
    assert time.monotonic() - began < HANG_SECONDS  # stopped, not waited for to its end


def test_a_variant_time_limit_needs_worker_processes(plain, tmp_path):
    ran = invoke("explore", MLP, plain.blueprint, "-o", tmp_path / "out", "--quiet",
                 "--workers", "0", "--variant-timeout", "4", env=plain.env)  # fmt: skip
    assert ran.returncode == 2, ran.stderr
    assert "--variant-timeout" in ran.stderr and "--workers 1" in ran.stderr
    assert not (tmp_path / "out").exists()


# -- a variant that crashes its worker -------------------------------------------------------


class Crashing:
    """A design space whose second variant segfaults its worker in step crash_here."""

    def __init__(self, root: Path) -> None:
        plugins = root / "plugins"
        plugins.mkdir()
        (plugins / "crash.py").write_text(CRASHING_STEP)
        self.blueprint = root / "crash.yaml"
        self.blueprint.write_text(CRASH_SPACE)
        self.marker = root / "crashed.pids"  # one line per run of the crashing step
        self.env = {
            **os.environ,
            "BRAINSMITH_PLUGIN_DIRS": str(plugins),
            "CRASH_MARKER": str(self.marker),
        }

    def explore(self, out: Path, *options: str) -> tuple[str, float]:
        """Run the exploration to its end, in this process (the variant crashes a worker
        process); (its stdout, seconds it took)."""
        began = time.monotonic()
        ran = invoke("explore", MLP, self.blueprint, "-o", out, "--quiet", *options, env=self.env)
        assert ran.returncode == 0, ran.stderr
        return ran.stdout, time.monotonic() - began

    def runs(self) -> int:
        return len(self.marker.read_text().split()) if self.marker.is_file() else 0

    def check_recorded(self, out: Path, stdout: str) -> None:
        """v00 built; v01 failed in crash_here, its worker's death by SIGSEGV the reason."""
        assert "1 of 2 variants built, 1 failed" in stdout
        data = record(out)
        assert data["status"] == "complete"
        variants = {v["id"]: v for v in data["variants"]}
        assert variants["v00"]["status"] == "ok"
        crashed = variants["v01"]
        assert crashed["status"] == "failed" and not crashed["failed_in"]
        error = crashed["error"]
        assert error["step"] == "crash_here", error
        assert "the worker running it died: SIGSEGV" in error["reason"], error
        assert "build.log" in error["hint"] and "--resume" in error["hint"], error
        log = (out / crashed["folder"] / "build.log").read_text()
        assert "===== step 2: crash_here =====" in log and "Segmentation fault" in log
        assert not (out / crashed["folder"] / "explore-node.json").exists()  # --resume retries


def test_a_variant_that_crashes_its_worker_runs_once_more_at_most_and_fails_in_its_step(
    tmp_path,
):
    crashing = Crashing(tmp_path)
    stdout, seconds = crashing.explore(tmp_path / "out", "--workers", "2")
    print(f"explored with a crashing variant in {seconds:.1f} s")
    # the local scheduler tries it once more (Dask's default: 3 times), brainsmith never
    assert crashing.runs() == 2
    crashing.check_recorded(tmp_path / "out", stdout)


def test_on_a_users_scheduler_a_crashing_variant_runs_as_often_as_its_config_says(tmp_path):
    crashing = Crashing(tmp_path)
    # the user's scheduler does not retry a task whose worker died (Dask's default: 3 times)
    env = {**crashing.env, "DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES": "0"}
    with dask_cluster(tmp_path, workers=2, env=env) as (address, _):
        stdout, seconds = crashing.explore(tmp_path / "out", "--scheduler", address)
    print(f"explored with a crashing variant in {seconds:.1f} s")
    assert crashing.runs() == 1  # 1 + its allowed-failures: brainsmith adds no run
    crashing.check_recorded(tmp_path / "out", stdout)


# -- schedulers that are not Dask ------------------------------------------------------------


def _serve(behaviour: str) -> Iterator[str]:
    """A TCP server on 127.0.0.1 that is not a Dask scheduler; yields its tcp:// address."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    held: list[socket.socket] = []
    stop = threading.Event()
    if behaviour == "never-answers":
        server.listen(0)  # an accept queue of one, filled here: further SYNs are dropped
        for _ in range(3):
            filler = socket.socket()
            filler.setblocking(False)
            filler.connect_ex(server.getsockname())
            held.append(filler)
    else:
        server.listen(8)
        server.settimeout(0.2)

        def accept() -> None:
            while not stop.is_set():
                try:
                    conn, _ = server.accept()
                except TimeoutError:
                    continue
                except OSError:
                    return
                held.append(conn)
                if behaviour == "garbage":
                    conn.sendall(b"HTTP/1.1 400 Bad Request\r\n\r\n" + os.urandom(4096))

        threading.Thread(target=accept, daemon=True).start()
    host, port = server.getsockname()
    try:
        yield f"tcp://{host}:{port}"
    finally:
        stop.set()
        for conn in held:
            conn.close()
        server.close()


def _redis() -> Iterator[str]:
    """A real redis-server on a free loopback port: a service, but not Dask."""
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    server = subprocess.Popen(
        ["/usr/bin/redis-server", "--bind", "127.0.0.1", "--port", str(port), "--save", "",
         "--appendonly", "no"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 10
        while True:
            with socket.socket() as client:
                if client.connect_ex(("127.0.0.1", port)) == 0:
                    break
            assert time.monotonic() < deadline and server.poll() is None, "redis did not start"
            time.sleep(0.05)
        yield f"tcp://127.0.0.1:{port}"
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(timeout=10)


@pytest.fixture(params=["silent", "garbage", "never-answers", "redis"])
def hostile(request) -> Iterator[str]:
    yield from (_redis() if request.param == "redis" else _serve(request.param))


def test_a_scheduler_that_is_not_dask_is_refused_within_seconds(hostile, tmp_path, request):
    """Within the default 10 s for a silent server; the others with --scheduler-timeout 2."""
    space = tmp_path / "space.yaml"
    space.write_text(SPACE.replace("steps: [hang_here, cleanup, qonnx_to_finn]\n", ""))
    out = tmp_path / "out"
    default = request.node.callspec.params["hostile"] == "silent"
    limit = NETWORK_SECONDS if default else SHORT_NETWORK_SECONDS
    began = time.monotonic()
    shorter = [] if default else ["--scheduler-timeout", str(SHORT_CONNECT)]
    ran = invoke("explore", MLP, space, "-o", out, "--scheduler", hostile, *shorter)
    seconds, stderr = time.monotonic() - began, ran.stderr
    assert ran.returncode == 2, stderr
    assert f"the Dask scheduler at {hostile}" in stderr and "Traceback" not in stderr
    assert "dask scheduler" in stderr  # what to check: the address it printed
    assert seconds < limit, f"refused after {seconds:.0f} s"
    assert set(os.listdir(out)) <= {".brainsmith-build", ".brainsmith-reserve"}  # nothing ran
    assert not Path(f"{out}.lock").exists()


def test_a_scheduler_file_naming_a_silent_server_is_refused_within_seconds(tmp_path):
    for address in _serve("silent"):
        info = tmp_path / "scheduler.json"
        info.write_text(json.dumps({"address": address}))
        space = tmp_path / "space.yaml"
        space.write_text(SPACE.replace("steps: [hang_here, cleanup, qonnx_to_finn]\n", ""))
        began = time.monotonic()
        ran = invoke(
            "explore", MLP, space, "-o", tmp_path / "o", "--scheduler", info,
            "--scheduler-timeout", str(SHORT_CONNECT),
        )  # fmt: skip
        stderr = ran.stderr
        assert ran.returncode == 2, stderr
        assert address in stderr and str(info) in stderr
        assert f"no answer within {SHORT_CONNECT:g} s" in stderr
        assert time.monotonic() - began < SHORT_NETWORK_SECONDS


def test_a_scheduler_timeout_without_a_scheduler_is_refused_before_anything_runs(tmp_path):
    from brainsmith.dse import ExploreError, explore

    with pytest.raises(ExploreError) as caught:
        explore(
            MLP,
            str(REPO / "blueprints" / "mlp_explore.yaml"),
            str(tmp_path / "o"),
            scheduler_timeout=5,
        )
    assert "--scheduler-timeout is for an existing cluster" in caught.value.reason
    with pytest.raises(ExploreError) as caught:
        explore(MLP, str(REPO / "blueprints" / "mlp_explore.yaml"), str(tmp_path / "o"),
                scheduler="tcp://127.0.0.1:9", scheduler_timeout=float("nan"))  # fmt: skip
    assert "not a number of seconds from 0 to 3600" in caught.value.reason
    assert not (tmp_path / "o").exists()


# -- the variant cap -------------------------------------------------------------------------


def _huge_random_space(folder: Path, max_variants: int) -> Path:
    values = ", ".join(str(1000 + 10 * i) for i in range(1000))
    path = folder / "huge.yaml"
    path.write_text(
        f"extends: {REPO / 'blueprints' / 'mlp.yaml'}\n"
        f"design_space:\n  build:\n    target_fps: [{values}]\n    clock_ns: [{values}]\n"
        f"search: {{strategy: random, max_variants: {max_variants}}}\n"
    )
    return path


@pytest.mark.parametrize("command", ["validate", "show", "explore"])
def test_a_random_search_over_the_variant_cap_is_refused_at_once(command, tmp_path):
    path = _huge_random_space(tmp_path, 900_000)
    if command == "explore":
        args = ["explore", MLP, str(path), "-o", str(tmp_path / "out"), "--workers", "0"]
    else:
        args = ["blueprint", command, str(path)]
    began = time.monotonic()
    ran = invoke(*args)
    output = ran.stdout + ran.stderr
    assert ran.returncode == (2 if command == "explore" else 1), output
    assert "search.max_variants" in output and "900,000" in output and "10,000" in output
    assert f"{path}:" in output
    assert time.monotonic() - began < 30
    assert not (tmp_path / "out").exists()


def test_the_variant_cap_itself_is_allowed(tmp_path):
    blueprint = load_blueprint(_huge_random_space(tmp_path, 10_000))
    assert blueprint.design_space.count == 10_000


def test_a_space_over_the_cap_made_in_code_is_refused_before_it_is_expanded(tmp_path, monkeypatch):
    from dataclasses import replace

    from brainsmith.blueprint.space import DesignSpace, Search

    blueprint = load_blueprint(_huge_random_space(tmp_path, 10))
    space = replace(blueprint.design_space, search=Search("random", 900_000))
    huge = replace(blueprint, design_space=space)
    made: list[str] = []  # what expanding would do: pick the variants, make a blueprint of each
    monkeypatch.setattr(DesignSpace, "indices", lambda self: made.append("indices") or [0])
    monkeypatch.setattr(DesignSpace, "apply", lambda self, *args: made.append("apply"))
    with pytest.raises(SpaceError) as caught:
        expand(huge)
    assert made == []
    assert "900,000 variants" in str(caught.value) and "10,000" in str(caught.value)


# -- one exploration per folder --------------------------------------------------------------


@pytest.mark.parametrize("option", ["--force", "--resume"])
def test_a_second_exploration_into_a_busy_folder_is_refused_and_touches_nothing(
    option, plain, tmp_path
):
    out = tmp_path / "out"
    first = plain.start(out, "--workers", "0")
    plain.wait_until_hanging(first, out, finished=1)
    before = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if "out" in p.parts)
    content = (out / "explore.json").read_text()
    began = time.monotonic()
    # the second in this process (its pid is not the first's)
    second = invoke("explore", MLP, plain.blueprint, "-o", out, "--quiet", "--workers", "0",
                    option, env=plain.env)  # fmt: skip
    stderr = second.stderr
    assert second.returncode == 2, stderr
    assert f"output folder {out} is in use by another build or exploration" in stderr
    assert f"(exploration, pid {first.pid} on " in stderr
    assert time.monotonic() - began < 30
    after = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if "out" in p.parts)
    assert after == before and (out / "explore.json").read_text() == content
    assert not list(tmp_path.rglob("*.old-*"))
    assert first.poll() is None  # the first goes on
    first.send_signal(signal.SIGINT)
    _, stderr, _ = wait_for_exit(first, STOP_SECONDS)
    assert first.returncode == 130, stderr
    assert not Path(f"{out}.lock").exists()  # released: the folder is free again
