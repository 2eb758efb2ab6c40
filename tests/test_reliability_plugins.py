"""Broken plugins are isolated: the hub keeps serving the others and health names the culprit.

Scan-time failures (syntax error, invalid or non-literal metadata) are proven in
tests/test_module_scanning.py and broken pip packages in tests/test_entry_points.py; here are the
failures that only show when a plugin's module is imported, plus name clashes, import cycles and
hanging imports. See docs/reliability.md for the full table.
"""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

import pytest

from brainsmith.plugin.errors import ConfigError, PluginLoadError
from brainsmith.plugin.manager import get_plugin_manager
from brainsmith.plugin.settings.config import load_config
from brainsmith.plugins import steps, transforms
from tests.conftest import run_python
from tests.support.processes import invoke

REPO = Path(__file__).resolve().parents[1]
MLP = str(REPO / "examples" / "models" / "mlp_4bit.onnx")
MLP_BLUEPRINT = REPO / "blueprints" / "mlp.yaml"

GOOD = """
from qonnx.transformation.base import Transformation
from brainsmith.plugin.core import step, transform


@transform(name="Good")
class Good(Transformation):
    def apply(self, model):
        return model, False


@step(name="good_step")
def good_step(model, cfg):
    return model
"""

# name -> (files, culprit plugin, text the reason must contain)
IMPORT_FAILURES = {
    "missing-dependency": (
        {
            "needs_dep.py": """
            import not_installed_dependency_abc
            from brainsmith.plugin.core import transform

            @transform(name="NeedsDep")
            class NeedsDep:
                pass
            """
        },
        "NeedsDep",
        "it imports 'not_installed_dependency_abc', which is not installed",
    ),
    "exception-at-import": (
        {
            "explodes.py": """
            from qonnx.transformation.base import Transformation
            from brainsmith.plugin.core import transform

            raise RuntimeError("boom at import")

            @transform(name="Explodes")
            class Explodes(Transformation):
                def apply(self, model):
                    return model, False
            """
        },
        "Explodes",
        "raised RuntimeError: boom at import",
    ),
    "class-body-raises": (
        {
            "bad_body.py": """
            from qonnx.transformation.base import Transformation
            from brainsmith.plugin.core import transform

            @transform(name="BadBody")
            class BadBody(Transformation):
                WIDTH = int("not a number")

                def apply(self, model):
                    return model, False
            """
        },
        "BadBody",
        "raised ValueError: invalid literal for int()",
    ),
    "init-subclass-raises": (
        {
            "strict_base.py": """
            from qonnx.transformation.base import Transformation
            from brainsmith.plugin.core import transform

            class Strict(Transformation):
                def __init_subclass__(cls, **kwargs):
                    raise TypeError(f"{cls.__name__} may not subclass Strict")

            @transform(name="Rebel")
            class Rebel(Strict):
                def apply(self, model):
                    return model, False
            """
        },
        "Rebel",
        "raised TypeError: Rebel may not subclass Strict",
    ),
    "decorator-rejects-its-target": (
        {
            "not_a_transform.py": """
            from brainsmith.plugin.core import transform

            @transform(name="Plain")
            class Plain:
                pass
            """
        },
        "Plain",
        "raised PluginMetadataError",
    ),
    "plugin-before-a-failure-in-its-module": (
        {
            "half_done.py": """
            from qonnx.transformation.base import Transformation
            from brainsmith.plugin.core import transform

            @transform(name="Early")
            class Early(Transformation):
                def apply(self, model):
                    return model, False

            class Later:
                raise LookupError("later class body failed")
            """
        },
        "Early",
        "raised LookupError: later class body failed",
    ),
    "fatal-circular-import": (
        {
            "loop_a.py": """
            from loop_b import B_LIMIT
            from qonnx.transformation.base import Transformation
            from brainsmith.plugin.core import transform

            A_LIMIT = 4

            @transform(name="LoopA")
            class LoopA(Transformation):
                def apply(self, model):
                    return model, False
            """,
            "loop_b.py": """
            from loop_a import A_LIMIT

            B_LIMIT = A_LIMIT * 2
            """,
        },
        "LoopA",
        "(most likely due to a circular import)",
    ),
}
IDS = list(IMPORT_FAILURES)


@pytest.fixture(autouse=True)
def forget_plugin_modules(tmp_path):
    """Plugin modules imported from this test's folders leave ``sys.modules`` and ``sys.path``
    afterwards, so every test imports its own files."""
    path = list(sys.path)
    yield
    sys.path[:] = path
    for name, module in list(sys.modules.items()):
        if str(getattr(module, "__file__", None) or "").startswith(str(tmp_path)):
            del sys.modules[name]


def write_scenario(plugin_folder, scenario: str) -> tuple[str, str]:
    """The good plugins plus the scenario's broken files; returns (culprit, reason text)."""
    files, culprit, reason = IMPORT_FAILURES[scenario]
    plugin_folder("good.py", GOOD)
    for name, source in files.items():
        plugin_folder(name, source)
    return culprit, reason


def broken(culprit: str) -> list[dict]:
    return [
        p
        for p in get_plugin_manager().health_check()["broken_plugins"]
        if f"user:{culprit}" in p["plugin"]
    ]


@pytest.mark.parametrize("scenario", IDS)
def test_plugin_that_fails_to_import_raises_an_error_naming_it_and_why(plugin_folder, scenario):
    culprit, reason = write_scenario(plugin_folder, scenario)
    with pytest.raises(PluginLoadError) as first:
        transforms[culprit]
    message = str(first.value)
    assert f"transform user:{culprit}" in message and reason in message
    with pytest.raises(PluginLoadError) as again:  # the failure is stable, never half-loaded
        transforms[culprit]
    assert str(again.value) == message


@pytest.mark.parametrize("scenario", IDS)
def test_plugin_that_fails_to_import_leaves_the_others_working(plugin_folder, scenario):
    culprit, reason = write_scenario(plugin_folder, scenario)
    with pytest.raises(PluginLoadError):
        transforms[culprit]
    assert transforms.Good().apply("model") == ("model", False)
    assert steps.good_step("model", None) == "model"
    health = get_plugin_manager().health_check()
    assert health["status"] == "degraded"
    assert [reason in p["reason"] for p in broken(culprit)] == [True]
    assert not broken("Good")


def test_two_plugins_with_one_qualified_name_keep_the_first_and_report_both(plugin_folder):
    template = """
    from qonnx.transformation.base import Transformation
    from brainsmith.plugin.core import transform

    @transform(name="Same")
    class {cls}(Transformation):
        def apply(self, model):
            return model, False
    """
    plugin_folder("good.py", GOOD)
    plugin_folder("same_a.py", template.format(cls="FromA"))
    plugin_folder("same_b.py", template.format(cls="FromB"))
    assert transforms.Same.__qualname__ == "FromA"
    assert transforms.Good.__name__ == "Good"
    import same_b  # the other definition runs its decorator too: still one report

    assert same_b.FromB.__name__ == "FromB"
    health = get_plugin_manager().health_check()
    assert health["status"] == "degraded"
    (problem,) = broken("Same")
    assert "transform user:Same is defined twice" in problem["reason"]
    assert "same_a:FromA" in problem["reason"] and "same_b:FromB" in problem["reason"]


SHADOW = """
import numpy as np
from qonnx.transformation.base import Transformation
from brainsmith.plugin.core import transform


@transform(name="RemoveIdentityOps")
class DoubleWeights(Transformation):
    \"\"\"QONNX's name, another job: every float initializer doubled.\"\"\"

    def apply(self, model):
        for tensor in model.graph.initializer:
            value = model.get_initializer(tensor.name)
            if value.dtype == np.float32 and value.size > 1:
                model.set_initializer(tensor.name, value * 2)
        return model, False
"""
QONNX_FILE = "qonnx/transformation/remove.py"


def shadowing_blueprint(tmp_path: Path, name: str) -> Path:
    """The shipped MLP blueprint with transform ``name`` before streamlining."""
    blueprint = tmp_path / "shadowed.yaml"
    blueprint.write_text(
        f"name: shadowed\nextends: {MLP_BLUEPRINT}\n"
        f"hw_compiler:\n  transforms_phased:\n    pre_hw: [{name!r}]\n"
    )
    return blueprint


@pytest.mark.parametrize("verify", ["none", "each"])
def test_a_plugin_shadowing_a_qonnx_transform_stops_the_build_naming_both_files(
    plugin_folder, tmp_path, verify
):
    """A blueprint's short name that a user plugin takes from QONNX is refused before any
    step, in every verify mode (with ``none`` the plugin ran, unnamed, and the build passed)."""
    mine = plugin_folder("shadow.py", SHADOW)
    out = tmp_path / "out"
    blueprint = shadowing_blueprint(tmp_path, "RemoveIdentityOps")
    ran = invoke("build", MLP, blueprint, "-o", out, "--verify", verify)
    assert ran.returncode == 2, ran.stdout + ran.stderr
    err = " ".join(ran.stderr.split())
    assert f"user:RemoveIdentityOps ({mine}:7)" in err, err
    assert "qonnx:RemoveIdentityOps (" in err and QONNX_FILE in err, err
    assert not out.exists()


def test_a_qualified_name_picks_either_of_the_two(plugin_folder, tmp_path):
    plugin_folder("shadow.py", SHADOW)
    for name in ("user:RemoveIdentityOps", "qonnx:RemoveIdentityOps"):
        ran = invoke("blueprint", "validate", shadowing_blueprint(tmp_path, name))
        assert ran.returncode == 0, ran.stdout + ran.stderr


def test_a_plugin_taking_a_qonnx_name_is_a_warning_and_a_health_line(plugin_folder):
    mine = plugin_folder("shadow.py", SHADOW)
    from brainsmith.errors import DuplicatePluginWarning

    with pytest.warns(DuplicatePluginWarning, match="is shadowed by user:RemoveIdentityOps") as hit:
        assert transforms.RemoveIdentityOps.__name__ == "DoubleWeights"
    assert (hit[0].filename, hit[0].lineno) == (str(mine), 7)
    health = get_plugin_manager().health_check()
    (line,) = [s for s in health["shadowed_plugins"] if "RemoveIdentityOps" in s]
    assert line.startswith("transform qonnx:RemoveIdentityOps (") and QONNX_FILE in line, line
    assert f"is shadowed by user:RemoveIdentityOps ({mine}:7)" in line, line


CYCLE = """
import time
import {other}
from qonnx.transformation.base import Transformation
from brainsmith.plugin.core import transform

time.sleep(0.1)  # widen the window in which two threads import the pair at once


@transform(name="{name}")
class {name}(Transformation):
    def apply(self, model):
        return {other}.PARTNER, False

PARTNER = "{name}"
"""


def write_cycle(plugin_folder) -> None:
    plugin_folder("cycle_a.py", CYCLE.format(name="CycleA", other="cycle_b"))
    plugin_folder("cycle_b.py", CYCLE.format(name="CycleB", other="cycle_a"))


def test_plugin_modules_importing_each_other_both_load(plugin_folder):
    write_cycle(plugin_folder)
    assert transforms.CycleA().apply(None) == ("CycleB", False)
    assert transforms.CycleB().apply(None) == ("CycleA", False)
    assert get_plugin_manager().health_check()["status"] == "healthy"


def test_threads_loading_a_circular_pair_at_once_finish_with_one_class_each(plugin_folder):
    write_cycle(plugin_folder)
    registry = get_plugin_manager().registry()
    import qonnx.transformation.base  # noqa: F401  (only the cycle is imported concurrently)

    barrier = threading.Barrier(16)
    loaded: dict[str, set[int]] = {"CycleA": set(), "CycleB": set()}
    failures: list[str] = []

    def load(name: str) -> None:
        barrier.wait(timeout=30)
        try:
            loaded[name].add(id(registry.get("transform", name)))
        except PluginLoadError as exc:
            failures.append(str(exc))

    threads = [
        threading.Thread(target=load, args=("CycleA" if i % 2 else "CycleB",), daemon=True)
        for i in range(16)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not any(t.is_alive() for t in threads), "a thread is stuck in the import cycle"
    assert failures == []
    assert [len(ids) for ids in loaded.values()] == [1, 1]


# -- hanging imports: plugin_system.load_timeout ---------------------------------------------

HANGS = """
import os
import time
from qonnx.transformation.base import Transformation
from brainsmith.plugin.core import transform

deadline = time.time() + 600  # longer than any wait of the tests (each opens the gate)
while not os.path.exists({gate!r}) and time.time() < deadline:
    time.sleep(0.01)


@transform(name="Hangs")
class Hangs(Transformation):
    def apply(self, model):
        return model, False
"""


HANGS_FOREVER = """
import threading
from qonnx.transformation.base import Transformation
from brainsmith.plugin.core import transform

threading.Event().wait()  # never returns


@transform(name="Hangs")
class Hangs(Transformation):
    def apply(self, model):
        return model, False
"""

# A hung import fails after the timeout whatever the machine's speed, so a short one gives up on
# it; a good plugin's import is given a generous one, never raced against the short one (a loaded
# machine can take longer than half a second to import a small module).
GENEROUS_LOAD_TIMEOUT = 60.0


def wait_until_loaded(name: str, seconds: float = 120) -> object:
    """The plugin once its (background) import has finished."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            return transforms[name]
        except PluginLoadError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def test_hanging_import_fails_after_the_load_timeout_naming_the_plugin(
    plugin_folder, tmp_path, monkeypatch
):
    gate = tmp_path / "gate"
    plugin_folder("good.py", GOOD)
    plugin_folder("hangs_named.py", HANGS.format(gate=str(gate)))
    monkeypatch.setenv("BRAINSMITH_PLUGIN_LOAD_TIMEOUT", "0.5")
    get_plugin_manager().registry()
    try:
        started = time.monotonic()
        with pytest.raises(PluginLoadError) as err:
            transforms.Hangs  # noqa: B018
        waited = time.monotonic() - started
    finally:
        gate.write_text("go")  # lets the background import finish
    wait_until_loaded("Hangs")
    assert waited >= 0.5  # it gave up at the timeout (the gate opens only afterwards)
    assert "transform user:Hangs" in str(err.value)
    assert "did not finish within 0.5 s (plugin_system.load_timeout)" in str(err.value)


def test_hanging_import_leaves_the_others_working_and_recovers_when_it_ends(
    plugin_folder, tmp_path, monkeypatch
):
    gate = tmp_path / "gate"
    plugin_folder("good.py", GOOD)
    plugin_folder("hangs_recovers.py", HANGS.format(gate=str(gate)))
    monkeypatch.setenv("BRAINSMITH_PLUGIN_LOAD_TIMEOUT", "0.3")
    try:
        with pytest.raises(PluginLoadError):
            transforms["Hangs"]
        with pytest.raises(PluginLoadError):  # still importing: fails again, never blocks
            transforms["Hangs"]
        registry = get_plugin_manager().registry()
        monkeypatch.setattr(registry, "load_timeout", GENEROUS_LOAD_TIMEOUT)
        assert transforms.Good().apply("m") == ("m", False)
        health = get_plugin_manager().health_check()
        assert health["status"] == "degraded"
        assert ["load_timeout" in p["reason"] for p in broken("Hangs")] == [True]
    finally:
        gate.write_text("go")
    assert wait_until_loaded("Hangs").__name__ == "Hangs"
    assert not broken("Hangs")


def test_process_with_a_hung_plugin_import_still_exits(plugin_folder):
    plugin_folder("good.py", GOOD)
    plugin_folder("hangs_forever.py", HANGS_FOREVER)
    result = run_python(
        f"""
        from brainsmith.plugin.manager import get_plugin_manager
        from brainsmith.plugins import transforms
        try:
            transforms.Hangs
        except ImportError as exc:
            print(type(exc).__name__)
        get_plugin_manager().registry().load_timeout = {GENEROUS_LOAD_TIMEOUT}
        print(transforms.Good.__name__)
        """,
        env={"BRAINSMITH_PLUGIN_LOAD_TIMEOUT": "0.5"},
    )  # the hung import never ends: were its thread to hold the exit, this would time out
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["PluginLoadError", "Good"]


def test_loads_after_a_hung_import_do_not_wait_for_its_turn(plugin_folder, tmp_path, monkeypatch):
    """Plugin imports take turns (brainsmith.plugin.loading.import_turn); the turn of an import
    given up on is not waited for: an untimed load would otherwise wait for it (30 s; an hour
    here, so that the join below tells the two apart however slow the machine)."""
    import qonnx.transformation.base  # noqa: F401  (Good's import is then its own code only)

    from brainsmith.plugin import loading

    turn = loading.import_turn
    monkeypatch.setattr(loading, "import_turn", lambda wait=3600.0: turn(wait))
    gate = tmp_path / "gate"
    plugin_folder("good.py", GOOD)
    plugin_folder("hangs_turn.py", HANGS.format(gate=str(gate)))
    monkeypatch.setenv("BRAINSMITH_PLUGIN_LOAD_TIMEOUT", "0.5")
    loaded: list[object] = []
    try:
        with pytest.raises(PluginLoadError):
            transforms["Hangs"]
        monkeypatch.setattr(get_plugin_manager().registry(), "load_timeout", 0.0)
        loader = threading.Thread(target=lambda: loaded.append(transforms["Good"]), daemon=True)
        loader.start()
        loader.join(timeout=120)  # a hang guard, far below the hour's wait for a turn
    finally:
        gate.write_text("go")
    assert [obj.__name__ for obj in loaded] == ["Good"]
    assert wait_until_loaded("Hangs").__name__ == "Hangs"


def test_load_timeout_comes_from_the_project_file_and_the_environment(tmp_path, monkeypatch):
    path = tmp_path / "config.yaml"
    path.write_text("plugin_system:\n  load_timeout: 2.5\n")
    monkeypatch.setenv("BRAINSMITH_CONFIG", str(path))
    assert load_config().load_timeout == 2.5
    monkeypatch.setenv("BRAINSMITH_PLUGIN_LOAD_TIMEOUT", "7")
    assert load_config().load_timeout == 7


@pytest.mark.parametrize("value", ["-1", "soon", "nan"])
def test_invalid_load_timeout_names_the_variable(monkeypatch, value):
    monkeypatch.setenv("BRAINSMITH_PLUGIN_LOAD_TIMEOUT", value)
    with pytest.raises(ConfigError) as err:
        load_config()
    assert "BRAINSMITH_PLUGIN_LOAD_TIMEOUT" in str(err.value)
    assert "a number of seconds >= 0" in str(err.value)


def test_without_a_load_timeout_imports_run_in_the_calling_thread(plugin_folder):
    plugin_folder(
        "where.py",
        """
        import threading
        from qonnx.transformation.base import Transformation
        from brainsmith.plugin.core import transform

        imported_in = threading.current_thread().name

        @transform(name="Where")
        class Where(Transformation):
            def apply(self, model):
                return model, False
        """,
    )
    transforms.Where  # noqa: B018
    import where

    assert where.imported_in == threading.current_thread().name
