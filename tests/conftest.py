"""Shared fixtures: every test gets its own cache directory, config and a fresh hub."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from collections import Counter
from pathlib import Path

import pytest

from brainsmith.testing import isolate_environment
from tests.support.farm import BuildFarm, changed, run_folder
from tests.support.ports import lying_port  # noqa: F401 (a fixture)
from tests.support.tool_cache import kept_root, prune

REPO = Path(__file__).resolve().parents[1]
PYTHON = sys.executable

# pytest keeps each test module with its asserts rewritten in __pycache__ unless bytecode is
# not to be written: with PYTHONDONTWRITEBYTECODE set (CI machines), every worker of every run
# rewrote all of them again (seconds of CPU per process). Only while collecting: the tests'
# own plugin folders get no __pycache__ of their own.
_WRITES_BYTECODE = sys.dont_write_bytecode
sys.dont_write_bytecode = False


def pytest_collection_finish(session: pytest.Session) -> None:
    sys.dont_write_bytecode = _WRITES_BYTECODE


# Modules whose tests install packages with pip, start many processes or servers (a killed
# cache writer per case, redis-server) or import all of FINN: marked slow, so
# `make test-fast` (-m "not slow") leaves them to `make test`.
HEAVY_MODULES = {
    "test_adapters",
    "test_builtin_kernels",
    "test_cache",
    "test_docs_authoring",
    "test_entry_points",
    "test_index_freshness",
    "test_one_registry",
    "test_pytest_plugin",
    "test_reliability_containment",
    "test_reliability_cache",
    "test_reliability_races",
    "test_reliability_shared",
    "test_shared_index",
}


def pytest_sessionstart(session: pytest.Session) -> None:
    """The checkout's bytecode, written once by the controller before the run. Where
    PYTHONDONTWRITEBYTECODE is set (CI machines, this one), a fresh clone has none, and each of
    the many brainsmith processes the suite starts would compile the package again (about
    0.25 s of CPU each)."""
    if hasattr(session.config, "workerinput"):
        return
    import compileall

    for folder in ("brainsmith", "tests", "benchmarks", "examples", "scripts"):
        compileall.compile_dir(str(REPO / folder), quiet=1)
    kept = kept_root()
    for removed in prune(kept) if kept else []:
        print(f"tool cache: removed {removed} (the least recently made)")


def _count_spawns(event: str, args: tuple) -> None:
    if event in SPAWN_EVENTS:
        _SPAWNED[0] += 1
        _STARTED.append(_program(event, args))


def _program(event: str, args: tuple) -> str:
    """What a spawn started, in a word or two: the program's name, and a Python's module or
    "-c" (a fork: "fork")."""
    if event in ("os.fork", "os.forkpty"):
        return "fork"
    given = args[0] if event == "os.system" else args[1]
    argv = given.split() if isinstance(given, (str, bytes)) else [str(a) for a in given or ()]
    argv = [a.decode() if isinstance(a, bytes) else a for a in argv] or [str(args[0])]
    name = os.path.basename(argv[0])
    if name.startswith("python") and len(argv) > 1:
        return f"{name} {argv[2] if argv[1] == '-m' and len(argv) > 2 else argv[1][:2]}"
    return name


SPAWN_EVENTS = {"subprocess.Popen", "os.posix_spawn", "os.fork", "os.forkpty", "os.system"}
_SPAWNED = [0]  # processes this test process started (an audit hook counts them)
_STARTED: list[str] = []  # what they were (``_program``)


def pytest_configure(config: pytest.Config) -> None:
    sys.addaudithook(_count_spawns)


def _cpu_seconds() -> float:
    import resource

    mine, children = (resource.getrusage(who) for who in
                      (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))  # fmt: skip
    return mine.ru_utime + mine.ru_stime + children.ru_utime + children.ru_stime


_BEGAN = pytest.StashKey[tuple[float, int]]()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    item.stash[_BEGAN] = (_cpu_seconds(), _SPAWNED[0])
    _STARTED.clear()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    """Each test's CPU seconds (its process and the children it waited for) and the
    processes it started, as JUnit properties of its last report (``benchmarks.suite_profile``
    reads them)."""
    if call.when == "teardown" and _BEGAN in item.stash:
        cpu, spawned = item.stash[_BEGAN]
        item.user_properties.append(("cpu_s", round(_cpu_seconds() - cpu, 2)))
        item.user_properties.append(("processes", _SPAWNED[0] - spawned))
        if _STARTED:
            counted = Counter(_STARTED)
            started = ", ".join(f"{name} x{n}" for name, n in sorted(counted.items()))
            item.user_properties.append(("started", started))
    yield


def moved_tests() -> dict[str, str]:
    """``tests/budget.yaml``'s ``moved``: test (module::name, a case's id optional) -> the tier
    it runs in (wide or big) and why, kept out of make test's budget."""
    import yaml

    budget = yaml.safe_load((REPO / "tests" / "budget.yaml").read_text())
    return dict(budget.get("moved") or {})


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    moved = moved_tests()
    for item in items:
        if item.module is not None and item.module.__name__.rpartition(".")[2] in HEAVY_MODULES:
            item.add_marker(pytest.mark.slow)
        name = f"{item.module.__name__.rpartition('.')[2]}::{item.name}" if item.module else ""
        tier = moved.get(name) or moved.get(name.partition("[")[0])
        if tier:
            item.add_marker(getattr(pytest.mark, tier.split(":", 1)[0].strip()))


@pytest.fixture(scope="session")
def warm_index(tmp_path_factory) -> Path:
    """A discovery index built once per session, copied into each test's own cache dir."""
    template = tmp_path_factory.mktemp("warm-index")
    os.chmod(template, 0o700)
    config = template.parent / "warm-index-config.yaml"
    config.write_text("plugin_system: {}\n")
    result = subprocess.run(
        [
            PYTHON,
            "-c",
            "from brainsmith.plugin.manager import get_plugin_manager as g; g().registry()",
        ],
        env={**os.environ, "BRAINSMITH_CACHE_DIR": str(template), "BRAINSMITH_CONFIG": str(config)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    return template


def _shared_root(tmp_path_factory) -> Path:
    root = run_folder(tmp_path_factory.getbasetemp(), os.environ.get("PYTEST_XDIST_WORKER"))
    return root / "shared"


def _private(folder: Path) -> Path:
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    return folder


@pytest.fixture(scope="session")
def run_shared(tmp_path_factory) -> Path:
    """The folder every worker of this test run shares (this user's alone)."""
    return _private(_shared_root(tmp_path_factory))


@pytest.fixture(scope="session")
def tool_caches(run_shared) -> Path:
    """The tool caches every worker shares, kept between runs (``tests.support.tool_cache``)."""
    return kept_root() or run_shared


@pytest.fixture(scope="session")
def simulators(tool_caches) -> Path:
    """Verilator executables compiled once for every worker and later runs, cached by content
    (``brainsmith.hardware.rtlsim.compile`` locks each key, so two workers compile it once)."""
    return _private(tool_caches / "rtlsim")


@pytest.fixture(scope="session")
def syntheses(tool_caches) -> Path:
    """Yosys results shared by every worker and later runs, cached by content."""
    return _private(tool_caches / "synthesis")


@pytest.fixture(scope="session")
def farm(run_shared) -> BuildFarm:
    """Builds made once per test run and shared read-only (``tests.support.farm``)."""
    return BuildFarm(run_shared)


@pytest.fixture(scope="session", autouse=True)
def private_environment(tmp_path_factory, simulators, syntheses):
    """Before any fixture builds: a cache and config of the session's own (never the user's
    ``~/.cache/brainsmith``), with the run's shared tool caches."""
    cache = _private(tmp_path_factory.mktemp("session-cache"))
    with pytest.MonkeyPatch.context() as patch:
        isolate_environment(patch, cache, cache / "config.yaml")
        _share_tool_caches(patch, simulators, syntheses)
        yield


def _share_tool_caches(patch: pytest.MonkeyPatch, simulators: Path, syntheses: Path) -> None:
    patch.setenv("BRAINSMITH_RTLSIM_CACHE", str(simulators))
    patch.setenv("BRAINSMITH_SYNTHESIS_CACHE", str(syntheses))
    # bitstreams too: the MLP is placed once (tests/test_bitstream*.py)
    patch.setenv("BRAINSMITH_BITSTREAM_CACHE", str(_private(simulators.parent / "bitstream")))
    # and an ECP5 part's capacities, read from nextpnr once (tests/test_ecp5_costs.py)
    patch.setenv("BRAINSMITH_PLACE_ROUTE_CACHE", str(_private(simulators.parent / "place_route")))


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Fail the run when a test changed a shared build (in the controller, after every
    worker has finished)."""
    if hasattr(session.config, "workerinput"):
        return
    root = session.config._tmp_path_factory.getbasetemp() / "shared"  # type: ignore[attr-defined]
    touched = changed(root) if root.is_dir() else []
    if touched:
        print(f"\na test changed {len(touched)} file(s) of the run's shared builds "
              "(take BuildFarm.copy before changing a build):", *touched[:20], sep="\n")  # fmt: skip
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture(autouse=True)
def isolated_hub(request, tmp_path_factory, monkeypatch, warm_index, simulators, syntheses):
    """A private cache dir (seeded with the session's index and sharing its compiled
    simulators unless the test is marked ``cold_cache``), no project config from the repo,
    and a reset plugin system."""
    cache = tmp_path_factory.mktemp("cache")
    os.chmod(cache, 0o700)
    cold = request.node.get_closest_marker("cold_cache") is not None
    if not cold:
        for entry in warm_index.iterdir():
            shutil.copy2(entry, cache / entry.name)
    isolate_environment(monkeypatch, cache, tmp_path_factory.mktemp("config") / "config.yaml")
    if not cold:
        _share_tool_caches(monkeypatch, simulators, syntheses)
    from brainsmith.plugin.manager import reset_plugin_system

    reset_plugin_system()
    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    yield
    reset_plugin_system()
    for signum, handler in handlers.items():  # a test's handler never outlives it
        if handler is not None and signal.getsignal(signum) is not handler:
            signal.signal(signum, handler)


def run_python(
    code: str, env: dict | None = None, cwd: str | Path | None = None, timeout: float = 300
) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh interpreter with the test's environment (plus ``env``)."""
    full_env = {**os.environ, **(env or {})}
    return subprocess.run(
        [PYTHON, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env=full_env,
        cwd=cwd,
        timeout=timeout,
    )


@pytest.fixture
def plugin_folder(tmp_path, monkeypatch):
    """A user plugin folder registered through BRAINSMITH_PLUGIN_DIRS; returns a writer."""
    folder = tmp_path / "my_plugins"
    folder.mkdir()
    monkeypatch.setenv("BRAINSMITH_PLUGIN_DIRS", str(folder))

    def write(name: str, source: str) -> Path:
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(source))
        return path

    write.folder = folder
    return write


_MADE: dict[str, object] = {}


def once(key: str, make):
    """``make()``, made once per test process. pytest-xdist runs a test before the next one
    has arrived with no next test, which tears module fixtures down between two tests of one
    group; an expensive build (kept in the session's temporary folders) is not redone then."""
    if key not in _MADE:
        _MADE[key] = make()
    return _MADE[key]


@pytest.fixture(scope="module")
def hub(tmp_path_factory, simulators, syntheses):
    """A private plugin cache and config shared by one module's tests (a module-scoped
    ``isolated_hub`` for modules whose builds share a warm hub and the session's compiled
    simulators); yields the cache folder."""
    from brainsmith.plugin.manager import reset_plugin_system

    root = tmp_path_factory.mktemp("hub")
    os.chmod(root, 0o700)
    with pytest.MonkeyPatch.context() as patch:
        isolate_environment(patch, root, root / "config.yaml")
        _share_tool_caches(patch, simulators, syntheses)
        reset_plugin_system()
        yield root
    reset_plugin_system()


@pytest.fixture
def redis_url(tmp_path):
    """A private redis-server on 127.0.0.1 (no persistence), stopped after the test."""
    from tests.support.processes import free_port

    port = free_port()
    server = subprocess.Popen(
        [
            "redis-server",
            "--bind",
            "127.0.0.1",
            "--port",
            str(port),
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(tmp_path),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        import redis

        client = redis.Redis(host="127.0.0.1", port=port, socket_timeout=1)
        deadline = time.monotonic() + 20
        while True:
            try:
                client.ping()
                break
            except (redis.ConnectionError, redis.TimeoutError):  # (not serving yet, or slow)
                assert server.poll() is None and time.monotonic() < deadline, "no redis-server"
                time.sleep(0.05)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        server.terminate()
        server.wait(timeout=20)
