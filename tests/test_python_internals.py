"""The three CPython import internals the hub relies on, checked on the running Python.

Python offers no public way to ask "is this thread running a module's import?", "is this
module still initialising?" or "was this import refused as a deadlock?". The hub needs all
three (lifecycle operations from module-level code, serving a half-imported module, imports
racing across threads), so it reads them from importlib's internals; pyproject.toml bounds
``requires-python`` to the releases these tests have passed on, and a new Python release
must pass them before the bound moves.
"""

from __future__ import annotations

import importlib
import sys
import textwrap

import pytest

from brainsmith.plugin import loading
from brainsmith.plugin.lifecycle import oplock


@pytest.fixture
def module_dir(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    for name in [m for m in sys.modules if m.startswith("bsm_internals_")]:
        del sys.modules[name]


def test_a_thread_inside_an_import_is_recognised(module_dir):
    (module_dir / "bsm_internals_probe.py").write_text(
        textwrap.dedent(
            """
            from brainsmith.plugin.lifecycle import oplock

            def call():
                return oplock._inside_import()

            DURING_IMPORT = call()
            """
        )
    )
    probe = importlib.import_module("bsm_internals_probe")
    assert probe.DURING_IMPORT is True
    assert probe.call() is False  # after the import
    assert oplock._inside_import is not None


def test_a_module_being_imported_is_recognised_as_initialising(module_dir):
    (module_dir / "bsm_internals_half.py").write_text(
        "import sys\nfrom brainsmith.plugin import loading\n"
        "HALF = loading._initializing(sys.modules[__name__])\n"
    )
    module = importlib.import_module("bsm_internals_half")
    assert module.HALF is True
    assert loading._initializing(module) is False


def test_the_deadlock_error_the_loader_retries_has_the_name_it_checks():
    bootstrap = sys.modules["importlib._bootstrap"]
    assert bootstrap._DeadlockError.__name__ == "_DeadlockError"
    assert issubclass(bootstrap._DeadlockError, RuntimeError)
    assert loading.DEADLOCK_RETRIES > 0


def test_requires_python_is_bounded_to_the_releases_checked_here():
    import tomllib
    from pathlib import Path

    from packaging.specifiers import SpecifierSet

    project = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())
    supported = SpecifierSet(project["project"]["requires-python"])
    running = f"{sys.version_info.major}.{sys.version_info.minor}"
    assert running in supported
    assert "3.14" not in supported  # raised only after these tests pass on a new release
