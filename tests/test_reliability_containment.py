"""Plugin code that tries to end the process (``sys.exit()``, ``KeyboardInterrupt``,
``GeneratorExit``, a failed ``assert`` in a package) is contained like any other failure: the
culprit is named in health and in the error, every command still answers, and a real Ctrl-C
from the user still stops the command."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from brainsmith.plugin.errors import PluginLoadError
from brainsmith.plugin.lifecycle import load_plugin, reload_plugin
from brainsmith.plugin.manager import get_plugin_manager
from brainsmith.plugins import transforms
from tests.conftest import REPO, once
from tests.support.packages import PluginVenv, build_wheel, write_project
from tests.support.processes import invoke

# the module fixture is made once: every test of the module on one worker
pytestmark = pytest.mark.xdist_group("reliability-containment")

GOOD_PACKAGE = '''
from qonnx.transformation.base import Transformation
from brainsmith.plugin.core import transform


@transform(name="AcmeFold")
class AcmeFold(Transformation):
    """Folds the acme way."""

    def apply(self, model):
        return model, False
'''

ENDINGS = {  # id -> module-level code of a package or plugin file that ends the process
    "sys-exit-0": ("import sys\nsys.exit(0)\n", "called sys.exit(0)"),
    "keyboard-interrupt": ("raise KeyboardInterrupt\n", "raised KeyboardInterrupt"),
    "generator-exit": ("raise GeneratorExit\n", "raised GeneratorExit"),
    "failed-assert": ("assert False, 'acme needs a licence'\n", "AssertionError: acme needs a"),
}


@pytest.fixture(scope="module")
def exiting_wheels(tmp_path_factory) -> dict[str, Path]:
    def make() -> dict[str, Path]:
        root = tmp_path_factory.mktemp("exiting-projects")
        dist = root / "dist"
        good = write_project(root, "acme-good", "acme_good", GOOD_PACKAGE)
        wheels = {"good": build_wheel(good, dist)}
        for case, (code, _) in ENDINGS.items():
            module = "acme_" + case.replace("-", "_")
            wheels[case] = build_wheel(write_project(root, f"acme-{case}", module, code), dist)
        return wheels

    return once("exiting wheels", make)  # (xdist may tear a module fixture down between tests)


@pytest.fixture(scope="module")
def exiting_venv(tmp_path_factory, exiting_wheels) -> PluginVenv:
    """A real virtualenv holding the good package and every case's package, installed by
    one pip command: each must be named on its own while the others are there too."""

    def make() -> PluginVenv:
        venv = PluginVenv(tmp_path_factory.mktemp("exiting-venv") / "venv")
        venv.install(*exiting_wheels.values())
        return venv

    return once("exiting venv", make)


def brainsmith(venv: PluginVenv, tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    """The ``brainsmith`` command run in ``venv``, with a cache of this test's own."""
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700, exist_ok=True)
    return subprocess.run(
        [str(venv.python), "-m", "brainsmith.cli", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "BRAINSMITH_CACHE_DIR": str(cache), "COLUMNS": "250"},
        cwd=tmp_path,
        timeout=600,
    )


def test_package_ending_the_process_at_import_is_named_and_commands_still_answer(
    exiting_venv, tmp_path
):
    """Every way of ending the process (``ENDINGS``), each package named with its own reason."""
    for attempt in ("cold", "warm"):  # the index is written: the second run reuses it
        health = brainsmith(exiting_venv, tmp_path, "plugins", "health", "--json")
        assert health.returncode == 1, (attempt, health.stdout, health.stderr)
        broken = json.loads(health.stdout)["broken_plugins"]
        for case, (_, reason) in ENDINGS.items():
            mine = [p for p in broken if p["plugin"].startswith(f"acme-{case} ")]
            assert len(mine) == 1 and reason in mine[0]["reason"], (attempt, case, broken)
    listed = brainsmith(exiting_venv, tmp_path, "plugins", "list", "--framework", "acme-good")
    assert listed.returncode == 0 and "AcmeFold" in listed.stdout, listed.stderr
    every = brainsmith(exiting_venv, tmp_path, "plugins", "list", "--all")
    assert every.returncode == 0, every.stderr
    for case in ENDINGS:
        assert f"acme-{case} (entry point" in every.stdout, (case, every.stdout)
    validated = brainsmith(
        exiting_venv, tmp_path, "blueprint", "validate", str(REPO / "blueprints" / "mlp.yaml")
    )
    assert validated.returncode == 0 and "mlp.yaml" in validated.stdout, validated.stderr


def test_build_runs_with_a_package_that_exits_at_import_installed(exiting_venv, tmp_path):
    out = tmp_path / "out"
    result = brainsmith(
        exiting_venv,
        tmp_path,
        "build",
        str(REPO / "examples" / "models" / "mlp_4bit.onnx"),
        str(REPO / "blueprints" / "mlp.yaml"),
        "-o",
        str(out),
        "--verify",
        "none",
        "--no-size-fifos",  # (sizing simulates the design: no plugin matter)
        "--quiet",
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "built" in result.stdout and (out / "report.json").is_file()


PLUGIN_FILE = """
from qonnx.transformation.base import Transformation
from brainsmith.plugin.core import transform


@transform(name="Quitter")
class Quitter(Transformation):
    def apply(self, model):
        return model, False

{ending}
"""


def test_plugin_file_calling_sys_exit_fails_to_load_naming_itself(plugin_folder, tmp_path):
    plugin_folder("quitter.py", PLUGIN_FILE.format(ending="import sys\nsys.exit(3)"))
    # in this process: a SystemExit escaping the load would end the command with code 3
    result = invoke("plugins", "info", "Quitter", "--load", env={"COLUMNS": "250"})
    assert result.returncode == 1, (result.returncode, result.stdout, result.stderr)
    assert "user:Quitter" in result.stdout + result.stderr
    assert "called sys.exit(3)" in result.stdout + result.stderr
    with pytest.raises(PluginLoadError) as error:
        transforms["Quitter"]
    assert "transform user:Quitter" in str(error.value)
    assert f"called sys.exit(3) at {plugin_folder.folder / 'quitter.py'}:" in str(error.value)
    health = get_plugin_manager().health_check()
    assert health["status"] == "degraded"
    assert [p["plugin"] for p in health["broken_plugins"]] == ["transform user:Quitter"]


@pytest.fixture
def default_sigint():
    """Python's own SIGINT handler, as in a command run from a terminal (a test runner's
    worker may have another, and then any KeyboardInterrupt counts as the user's)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


@pytest.mark.parametrize(
    "ending",
    ["import sys; sys.exit(1)", "raise KeyboardInterrupt", "raise GeneratorExit"],
    ids=["sys-exit", "keyboard-interrupt", "generator-exit"],
)
def test_reload_whose_new_version_ends_the_process_keeps_the_old_version(
    tmp_path, ending, default_sigint
):
    path = tmp_path / "quitter.py"
    path.write_text(textwrap.dedent(PLUGIN_FILE.format(ending="")))
    load_plugin(path)
    old = transforms.quitter.Quitter
    path.write_text(textwrap.dedent(PLUGIN_FILE.format(ending=ending)))
    with pytest.raises(PluginLoadError) as error:
        reload_plugin("quitter")
    assert "the previous version of 'quitter' stays loaded" in str(error.value)
    assert transforms.quitter.Quitter is old is transforms.Quitter
    problems = get_plugin_manager().health_check()["broken_plugins"]
    assert any(p["plugin"] == "plugin quitter" for p in problems)


SLOW_PLUGIN = """
import pathlib, time
pathlib.Path({marker!r}).write_text("importing")
time.sleep(600)
from qonnx.transformation.base import Transformation
from brainsmith.plugin.core import transform


@transform(name="Slow")
class Slow(Transformation):
    def apply(self, model):
        return model, False
"""


def test_real_ctrl_c_during_a_plugin_import_still_stops_the_command(plugin_folder, tmp_path):
    marker = tmp_path / "marker"
    plugin_folder("slow.py", SLOW_PLUGIN.format(marker=str(marker)))
    process = subprocess.Popen(
        [sys.executable, "-m", "brainsmith.cli", "plugins", "info", "Slow", "--load"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while not marker.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert marker.exists(), "the plugin never started importing"
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=120)  # the import it interrupts lasts 600 s
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode not in (0, None) and "Aborted" in stderr


QUITTING_STEP = """
import sys
from brainsmith.plugin import step


@step(name="quit_step")
def quit_step(model, cfg):
    sys.exit(0)
"""


def test_build_step_calling_sys_exit_fails_the_build_naming_it(plugin_folder, tmp_path):
    plugin_folder("quitting.py", QUITTING_STEP)
    blueprint = tmp_path / "quitting.yaml"
    blueprint.write_text(
        f"name: quitting\nextends: {REPO / 'blueprints' / 'base.yaml'}\n"
        "steps: [cleanup, quit_step]\n"
    )
    out = tmp_path / "out"
    # in this process: a SystemExit escaping the build would end the command with code 0
    model = REPO / "examples" / "models" / "mlp_4bit.onnx"
    result = invoke("build", model, blueprint, "-o", out, "--quiet", env={"COLUMNS": "250"})
    assert result.returncode == 1, (result.stdout[-2000:], result.stderr[-2000:])
    assert "quit_step" in result.stderr and "called sys.exit(0)" in result.stderr
    report = json.loads((out / "report.json").read_text())
    assert [s["status"] for s in report["steps"]] == ["ok", "failed"]


def test_command_line_names_a_sys_exit_made_outside_its_own_code(tmp_path):
    from brainsmith.cli import _foreign_exit

    elsewhere = tmp_path / "elsewhere.py"
    elsewhere.write_text("import sys\n\ndef leave():\n    sys.exit(0)\n")
    sys.path.insert(0, str(tmp_path))
    try:
        from elsewhere import leave

        with pytest.raises(SystemExit) as foreign:
            leave()
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("elsewhere", None)
    assert _foreign_exit(foreign.value) == f"{elsewhere}:4"
    from brainsmith.cli.output import fail

    with pytest.raises(SystemExit) as own:
        fail("a message of the command line's own")
    assert _foreign_exit(own.value) is None
