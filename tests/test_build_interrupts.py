"""SIGINT and SIGTERM sent to a real ``brainsmith build`` process at different points: the
build leaves report.json with ``status: interrupted`` and the step it reached, or no
folder at all when nothing was produced — and never ``status: ok`` with a signal's exit
code."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.conftest import run_python
from tests.support.models import MLP, REPO

BLUEPRINT = REPO / "blueprints" / "mlp.yaml"
STEPS = ["cleanup", "qonnx_to_finn", "streamline", "hardware_inference", "specialize",
         "folding", "estimates", "codegen", "step_hw_ipgen"]  # fmt: skip

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("build")]


class Build:
    """A ``brainsmith build`` process whose stderr lines are read as they come. FIFOs keep
    FINN's depths (``--no-size-fifos``): sizing them simulates the whole design, seconds of
    work no signal here needs, and fifo_depths still runs as a step."""

    def __init__(self, out: Path, blueprint: Path = BLUEPRINT, env: dict | None = None) -> None:
        self.out = out
        self.process = subprocess.Popen(
            [sys.executable, "-m", "brainsmith.cli", "build", str(MLP), str(blueprint),
             "-o", str(out), "--verify", "each", "--no-size-fifos"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=REPO,
            env={**os.environ, "COLUMNS": "200", **(env or {})},
        )  # fmt: skip
        self.lines: queue.Queue[str] = queue.Queue()
        self.stderr: list[str] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        for line in self.process.stderr:
            self.stderr.append(line)
            self.lines.put(line)

    def wait_for_line(self, text: str, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if text in self.lines.get(timeout=0.5):
                    return
            except queue.Empty:
                assert self.process.poll() is None, "".join(self.stderr)
        raise AssertionError(f"no line with {text!r}: {''.join(self.stderr)}")

    def wait_for_report(self, status: str, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        path = self.out / "report.json"
        while time.monotonic() < deadline:
            try:
                if json.loads(path.read_text())["status"] == status:
                    return
            except (OSError, ValueError, KeyError):
                pass
            time.sleep(0.001)
        raise AssertionError(f"report.json never said {status}: {''.join(self.stderr)}")

    def wait_for_file(self, path: Path, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while not path.exists():
            assert self.process.poll() is None, "".join(self.stderr)
            assert time.monotonic() < deadline, f"no {path}: {''.join(self.stderr)}"
            time.sleep(0.01)

    def send(self, signum: int) -> subprocess.CompletedProcess:
        self.process.send_signal(signum)
        self.process.wait(timeout=120)
        stdout = self.process.stdout.read()  # the summary: a few lines, never a full pipe
        self.reader.join(timeout=60)  # stderr read to its end
        self.process.stdout.close()
        self.process.stderr.close()
        return subprocess.CompletedProcess(
            [], self.process.returncode, stdout, "".join(self.stderr)
        )


def waiting_plugin_build(tmp_path: Path, name: str, body: str, steps: str) -> Build:
    """A build whose blueprint runs ``steps`` with the plugin module ``name``: ``body``
    (``{waiting}`` the path it touches before it waits) from a plugin folder; returned once
    the plugin waits."""
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    waiting = tmp_path / "waiting"
    (plugins / f"{name}.py").write_text(
        "import pathlib, time\nfrom brainsmith.plugin.core import step\n\n"
        + body.replace("{waiting}", repr(str(waiting)))
    )
    blueprint = tmp_path / f"{name}.yaml"
    blueprint.write_text(f"name: {name}\nextends: {BLUEPRINT}\nsteps: [{steps}]\n")
    build = Build(tmp_path / "out", blueprint, env={"BRAINSMITH_PLUGIN_DIRS": str(plugins)})
    build.wait_for_file(waiting)
    return build


def assert_consistent(result: subprocess.CompletedProcess, out: Path) -> dict | None:
    """Exit code and report.json agree: 0 with ok, 128+n with interrupted (or no folder)."""
    assert "Traceback" not in result.stderr, result.stderr
    if result.returncode == 0:
        report = json.loads((out / "report.json").read_text())
        assert report["status"] == "ok"
        return report
    assert result.returncode in (128 + signal.SIGINT, 128 + signal.SIGTERM), result.stderr
    report = json.loads((out / "report.json").read_text()) if out.exists() else None
    assert report is None or report["status"] == "interrupted", report["status"]
    assert "error: build interrupted" in result.stderr
    return report


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_signal_while_finn_loads_leaves_no_folder(tmp_path, signum):
    build = Build(tmp_path / "out")
    build.wait_for_line("loading FINN and the model")
    # into FINN's import, which starts at once and takes seconds (6 s on an idle 2-core
    # machine): a signal at any point before the first step finishes leaves no folder
    time.sleep(0.2)
    result = build.send(signum)
    assert not (tmp_path / "out").exists()
    assert result.returncode == 128 + signum, result.stderr
    assert "before any step finished; nothing was kept" in result.stderr
    assert_consistent(result, tmp_path / "out")


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_signal_during_the_steps_reports_the_step_reached(tmp_path, signum):
    build = Build(tmp_path / "out")
    build.wait_for_line("qonnx_to_finn: ok")
    result = build.send(signum)
    report = assert_consistent(result, tmp_path / "out")
    assert result.returncode == 128 + signum
    assert report["error"]["reason"] == f"interrupted by {signal.Signals(signum).name}"
    reached = report["error"]["step"]
    assert reached in STEPS[2:] or reached == "writing the results"
    statuses = {s["name"]: s["status"] for s in report["steps"]}
    assert statuses["cleanup"] == statuses["qonnx_to_finn"] == "ok"
    if reached in STEPS:
        assert statuses[reached] == "interrupted"
    shown = reached.removeprefix("step_")  # FINN's steps are shown without their prefix
    assert f"build interrupted in step '{shown}'" in result.stderr


def test_signal_after_the_last_step_never_leaves_ok_with_a_signal_exit(tmp_path):
    build = Build(tmp_path / "out")
    build.wait_for_line("] hw_ipgen: ok")  # then final models and reports are written
    assert_consistent(build.send(signal.SIGINT), tmp_path / "out")


def test_signal_once_report_says_ok_changes_nothing(tmp_path):
    build = Build(tmp_path / "out")
    build.wait_for_line("] hw_ipgen: ok")  # the last step run; report.json says ok next
    build.wait_for_report("ok")
    result = build.send(signal.SIGINT)
    report = assert_consistent(result, tmp_path / "out")
    assert result.returncode == 0 and report["status"] == "ok"
    assert (tmp_path / "out" / "report.html").read_text().rstrip().endswith("</html>")


HELD_BY_ANOTHER_THREAD = """
import os, signal, threading, time
from brainsmith import interrupts

stop = threading.Event()
threading.Thread(target=stop.wait, daemon=True).start()  # started unmasked, as FINN's are
with interrupts.handled():
    with interrupts.blocked() as take:
        os.kill(os.getpid(), signal.SIGINT)  # the main thread masks it: the other thread takes it
        time.sleep(0.2)  # the Python handler runs in the main thread meanwhile
        print("held:", [int(s) for s in take()])
stop.set()
"""


def test_a_signal_another_thread_takes_is_held_back_too():
    result = run_python(HELD_BY_ANOTHER_THREAD, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"held: [{int(signal.SIGINT)}]"


def test_an_interrupt_a_library_swallows_still_stops_the_build(tmp_path):
    """Some libraries catch everything (``except:``); the build stops at the next step."""
    build = waiting_plugin_build(
        tmp_path,
        "swallow",
        "@step(name='swallowing_wait')\n"
        "def swallowing_wait(model, cfg):\n"
        "    try:\n"
        "        pathlib.Path({waiting}).touch()\n"  # the step is inside its try
        "        time.sleep(30)\n"
        "    except BaseException:\n"
        "        pass\n"
        "    return model\n",
        "cleanup, swallowing_wait, qonnx_to_finn, streamline",
    )
    result = build.send(signal.SIGINT)
    report = assert_consistent(result, tmp_path / "out")
    assert result.returncode == 130 and report["error"]["step"] == "swallowing_wait"
    assert [s["status"] for s in report["steps"]] == ["ok", "interrupted", "pending", "pending"]


def test_an_ignored_sigint_stays_ignored_during_a_build():
    """A build started with SIGINT ignored (a background job) is not made interruptible."""
    code = (
        "import os, signal\n"
        "from brainsmith import interrupts\n"
        "signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
        "with interrupts.handled():\n"
        "    os.kill(os.getpid(), signal.SIGINT)\n"
        "    assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN\n"
        "    os.kill(os.getpid(), signal.SIGTERM)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 1 and "BuildInterrupted: SIGTERM" in result.stderr


def test_an_interrupt_a_library_turns_into_an_import_error_still_leaves_no_folder(tmp_path):
    """A C extension's module init turns the signal into ``ImportError`` while FINN and the
    plugins load: the build still reports the interruption, and keeps nothing."""
    build = waiting_plugin_build(
        tmp_path,
        "slow_init",
        "try:  # as a C extension's init does\n"
        "    pathlib.Path({waiting}).touch()\n"
        "    time.sleep(30)\n"
        "except BaseException:\n"
        "    raise ImportError('initialization failed') from None\n\n"
        "@step(name='slow_init_step')\n"
        "def slow_init_step(model, cfg):\n"
        "    return model\n",
        "cleanup, slow_init_step, qonnx_to_finn",
    )
    result = build.send(signal.SIGTERM)
    assert not (tmp_path / "out").exists(), result.stderr
    assert result.returncode == 128 + signal.SIGTERM, result.stderr
    assert "before any step finished; nothing was kept" in result.stderr


def test_a_step_failing_because_of_the_signal_is_interrupted_not_failed(tmp_path):
    build = waiting_plugin_build(
        tmp_path,
        "converting",
        "@step(name='converting_wait')\n"
        "def converting_wait(model, cfg):\n"
        "    try:\n"
        "        pathlib.Path({waiting}).touch()\n"
        "        time.sleep(30)\n"
        "    except BaseException:\n"
        "        raise RuntimeError('worker pool broken') from None\n"
        "    return model\n",
        "cleanup, converting_wait, qonnx_to_finn",
    )
    report = assert_consistent(build.send(signal.SIGINT), tmp_path / "out")
    assert report["error"]["reason"] == "interrupted by SIGINT"
    assert report["error"]["step"] == "converting_wait"


def test_a_step_that_crashes_the_process_leaves_its_header_and_the_crash_in_build_log(tmp_path):
    """A segfault ends the process before the build can report it: build.log names the step
    it was in and ends with Python's traceback of the crash (what explore records when a
    worker dies)."""
    from brainsmith.builder.state import last_words

    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "crash.py").write_text(
        "import ctypes\n\nfrom brainsmith.plugin.core import step\n\n\n"
        "@step(name='crash_here')\n"
        "def crash_here(model, cfg):\n"
        "    ctypes.string_at(0)  # reads address 0\n"
    )
    blueprint = tmp_path / "crash.yaml"
    blueprint.write_text(
        f"name: crash\nextends: {BLUEPRINT}\nsteps: [cleanup, crash_here, qonnx_to_finn]\n"
    )
    build = Build(tmp_path / "out", blueprint, env={"BRAINSMITH_PLUGIN_DIRS": str(plugins)})
    code = build.process.wait(timeout=300)
    build.reader.join(timeout=60)
    build.process.stdout.close()
    build.process.stderr.close()
    assert code == -signal.SIGSEGV, "".join(build.stderr)
    log = tmp_path / "out" / "build.log"
    assert last_words(str(log)) == ("crash_here", "Segmentation fault")
    text = log.read_text()
    assert "===== step 2: crash_here =====" in text
    assert f'File "{plugins / "crash.py"}", line 8 in crash_here' in text
