"""A pytest plugin for plugin authors. Installed with brainsmith (entry point ``pytest11``),
so its fixtures are simply there.

``brainsmith_hub``: each test gets an isolated, freshly reset hub::

    def test_my_transform_is_registered(brainsmith_hub):
        folder = brainsmith_hub.plugin_folder()
        (folder / "mine.py").write_text(SOURCE)
        assert "Mine" in brainsmith_hub.registry().specs("transform", "user")[0].name

It points the discovery cache at a private temporary folder, ignores the project's
``.brainsmith/config.yaml``, and resets the plugin system before and after the test, so
tests neither see each other's plugins nor the developer's cache.

``rtl_simulation``: generates the HDL of every RTL layer of a model and simulates each in
Verilator on the given inputs, compared bit for bit with the model's Python execution::

    def test_my_layer_in_verilator(rtl_simulation):
        result = rtl_simulation(model, [[x0], [x1]])  # per frame, one array per model input
        assert [layer.status for layer in result.layers] == ["match"], result.summary()

Tests using it are skipped, with the reason, where Verilator is not installed.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from brainsmith.frameworks.finn.env import prepare_finn
from brainsmith.hardware.rtlsim.verilator import ToolchainError, find_toolchain
from brainsmith.plugin.manager import get_plugin_manager, reset_plugin_system
from brainsmith.plugin.settings.config import ENV_VARS, REMOVED_ENV_VARS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

    import numpy as np
    from qonnx.core.modelwrapper import ModelWrapper

    from brainsmith.hardware.rtlsim.layers import DesignResult
    from brainsmith.plugin.manager import PluginManager
    from brainsmith.plugin.registry import Registry


class IsolatedHub:
    """The plugin manager of one test, plus helpers to add plugin folders."""

    def __init__(self, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.root = root
        self._monkeypatch = monkeypatch
        self._folders: list[str] = []

    @property
    def manager(self) -> PluginManager:
        return get_plugin_manager()

    def registry(self) -> Registry:
        """The registry (discovering on first use)."""
        return self.manager.registry()

    def plugin_folder(self, name: str = "plugins") -> Path:
        """A new folder whose decorated plugins the hub discovers (framework ``user``)."""
        folder = self.root / name
        folder.mkdir(parents=True, exist_ok=True)
        self._folders.append(str(folder))
        self._monkeypatch.setenv("BRAINSMITH_PLUGIN_DIRS", os.pathsep.join(self._folders))
        self.reset()
        return folder

    def reset(self) -> None:
        """Forget everything discovered so far (the next use rediscovers)."""
        reset_plugin_system()


def isolate_environment(monkeypatch: pytest.MonkeyPatch, cache: Path, config: Path) -> None:
    """Point brainsmith at ``cache`` and ``config`` (written empty if missing) and clear every
    other setting brainsmith reads from the environment (``plugin.settings.config.ENV_VARS``)
    or refuses (``REMOVED_ENV_VARS``)."""
    if not config.exists():
        config.write_text("plugin_system: {}\n")
    tools = ("BRAINSMITH_RTLSIM_CACHE", "BRAINSMITH_SYNTHESIS_CACHE")
    for var in (*ENV_VARS, *REMOVED_ENV_VARS, *tools):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("BRAINSMITH_CACHE_DIR", str(cache))
    monkeypatch.setenv("BRAINSMITH_CONFIG", str(config))


DEFAULT_PART = "xcvc1902-vsva2197-2MP-e-S"  # brainsmith's default build part


class RTLSimulation:
    """Simulates a model's RTL layers in Verilator (``brainsmith.hardware.rtlsim``); one folder per call."""

    def __init__(self, workdir: Path, part: str = DEFAULT_PART, clock_ns: float = 5.0) -> None:
        self.workdir = workdir
        self.part = part
        self.clock_ns = clock_ns
        self.runs = 0

    def __call__(
        self, model: ModelWrapper, samples: Sequence[Sequence[np.ndarray]]
    ) -> DesignResult:
        """Generate the HDL of ``model``'s RTL layers (FINN's ``PrepareIP``) and simulate each
        on ``samples`` (per frame, one array per model input); returns the
        ``brainsmith.hardware.rtlsim.layers.DesignResult``."""
        prepare_finn()
        from finn.transformation.fpgadataflow.prepare_ip import PrepareIP
        from qonnx.transformation.general import GiveUniqueNodeNames

        from brainsmith.hardware.rtlsim.layers import simulate_design

        self.runs += 1
        model = model.transform(GiveUniqueNodeNames())
        model = model.transform(PrepareIP(self.part, self.clock_ns))
        return simulate_design(model, samples, str(self.workdir / f"run{self.runs}"))


@pytest.fixture
def rtl_simulation(tmp_path: Path) -> RTLSimulation:
    """Verilator simulation of a model's RTL layers against Python (skipped without Verilator)."""
    try:
        find_toolchain()
    except ToolchainError as exc:
        pytest.skip(f"no Verilator here: {exc}")
    return RTLSimulation(tmp_path / "rtlsim")


@pytest.fixture
def brainsmith_hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[IsolatedHub]:
    """An isolated brainsmith plugin hub for one test."""
    cache = tmp_path / "brainsmith-cache"
    cache.mkdir(mode=0o700)
    isolate_environment(monkeypatch, cache, tmp_path / "brainsmith-config.yaml")
    hub = IsolatedHub(tmp_path, monkeypatch)
    hub.reset()
    yield hub
    hub.reset()
