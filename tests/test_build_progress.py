"""``brainsmith build``'s progress: on a terminal a running step's line shows its elapsed
seconds, updating; to a pipe (CI logs) one plain line per event, no control sequences."""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import sys
import time

import pytest

from tests.support.models import MLP, REPO
from tests.support.processes import invoke

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("check")]

WAITING_STEP = """\
import os
import time

from brainsmith.plugin.core import step


@step(name="wait_here")
def wait_here(model, cfg):
    deadline = time.monotonic() + 120
    while not os.path.exists(os.environ["GO"]) and time.monotonic() < deadline:
        time.sleep(0.05)
    return model
"""
ESCAPE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07|\r")
RUNNING = re.compile(r"wait_here\s+(\d+) s\b")  # a whole number: still running


def waiting_build(tmp_path) -> tuple[list[str], dict[str, str]]:
    """The build's arguments and the variables it is given beside the test's environment."""
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "waiting.py").write_text(WAITING_STEP)
    blueprint = tmp_path / "wait.yaml"
    blueprint.write_text(
        f"extends: {REPO / 'blueprints' / 'mlp.yaml'}\nsteps: [cleanup, wait_here]\n"
    )
    env = {"BRAINSMITH_PLUGIN_DIRS": str(plugins), "GO": str(tmp_path / "go"), "COLUMNS": "160"}
    return ["build", str(MLP), str(blueprint), "--verify", "none", "-o", str(tmp_path / "out")], env


def test_a_running_step_shows_its_elapsed_seconds_on_a_terminal(hub, tmp_path):
    args, env = waiting_build(tmp_path)
    primary, secondary = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "brainsmith.cli", *args],
        stdin=subprocess.DEVNULL, stdout=secondary, stderr=secondary, env={**os.environ, **env},
    )  # fmt: skip
    os.close(secondary)
    written, shown = bytearray(), ""
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline:
            if select.select([primary], [], [], 1)[0]:
                try:
                    chunk = os.read(primary, 65536)
                except OSError:  # the child closed its end
                    break
                if not chunk:
                    break
                written += chunk
                shown = ESCAPE.sub("", written.decode(errors="replace"))
                if RUNNING.search(shown) and not os.path.exists(env["GO"]):
                    open(env["GO"], "w").close()  # seen while running: let the step end
            elif process.poll() is not None:
                break
        code = process.wait(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        os.close(primary)
    assert code == 0, shown
    assert RUNNING.search(shown), shown
    assert "\x1b[" in written.decode(errors="replace")  # a live display, on a terminal


def test_progress_to_a_pipe_is_plain_lines(hub, tmp_path):
    """Not a terminal: the command in this process, its output captured."""
    args, env = waiting_build(tmp_path)
    open(env["GO"], "w").close()
    result = invoke(*args, env=env)
    assert result.returncode == 0, result.stderr
    assert "\x1b" not in result.stderr + result.stdout and "\r" not in result.stderr
    assert "[2/2] wait_here: ok" in result.stderr, result.stderr
