"""Instance cache, statistics, health, debug mode and reset."""

from __future__ import annotations

import gc
import logging
import threading
import time

import pytest

from brainsmith.plugin import loading
from brainsmith.plugin.manager import get_plugin_manager, reset_plugin_system
from brainsmith.plugins import transforms

COUNTED = """
from qonnx.transformation.base import Transformation
from brainsmith.plugin.core import transform

CREATED = []

@transform(name="Counted")
class Counted(Transformation):
    def __init__(self, factor=1):
        super().__init__()
        self.factor = factor
        CREATED.append(self)

    def apply(self, model):
        return model, False
"""


def test_same_arguments_give_one_shared_instance(plugin_folder):
    plugin_folder("counted.py", COUNTED)
    manager = get_plugin_manager()
    first = manager.get_instance("transform", "Counted", factor=2)
    assert manager.get_instance("transform", "Counted", factor=2) is first
    assert manager.get_instance("transform", "Counted", factor=3) is not first


def test_instances_are_freed_when_unused(plugin_folder):
    plugin_folder("counted.py", COUNTED)
    manager = get_plugin_manager()
    instance = manager.get_instance("transform", "Counted")
    import counted

    counted.CREATED.clear()  # the module's own list would keep it alive
    del instance
    gc.collect()
    assert manager.get_performance_stats()["instances_cached"] == 0
    manager.get_instance("transform", "Counted")
    assert len(counted.CREATED) == 1  # a new object was made


def test_sixteen_threads_get_one_instance(plugin_folder):
    plugin_folder("counted.py", COUNTED)
    manager = get_plugin_manager()
    barrier = threading.Barrier(16)
    results = []

    def worker():
        barrier.wait()
        results.append(manager.get_instance("transform", "Counted", factor=7))

    threads = [threading.Thread(target=worker) for _ in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert len(results) == 16
    assert len({id(r) for r in results}) == 1
    import counted

    assert len([c for c in counted.CREATED if c.factor == 7]) == 1


def test_a_hung_plugin_import_delays_another_only_by_the_turn_wait(
    plugin_folder, tmp_path, monkeypatch
):
    """Plugin imports take turns (CPython's import deadlocks), but a turn held by an import
    that does not end is taken anyway after ``IMPORT_TURN_WAIT`` (2 s here, 30 s by default):
    the other plugin loads while the first import still runs."""
    monkeypatch.setattr(loading, "IMPORT_TURN_WAIT", 2.0)
    gate, started = tmp_path / "gate", tmp_path / "started"
    plugin_folder(
        "slow_import.py",
        f"""
        import os, pathlib, time
        from qonnx.transformation.base import Transformation
        from brainsmith.plugin.core import transform
        pathlib.Path({str(started)!r}).touch()
        deadline = time.time() + 600  # far beyond the 2 s another import waits for its turn
        while not os.path.exists({str(gate)!r}) and time.time() < deadline:
            time.sleep(0.01)

        @transform(name="Slow")
        class Slow(Transformation):
            def apply(self, model):
                return model, False
    """,
    )
    plugin_folder("counted.py", COUNTED)
    manager = get_plugin_manager()
    manager.registry()
    slow = threading.Thread(target=manager.get_instance, args=("transform", "Slow"))
    slow.start()
    try:
        deadline = time.monotonic() + 120
        while not started.exists():  # slow_import is being imported (whatever the load)
            assert slow.is_alive() and time.monotonic() < deadline, "slow_import never started"
            time.sleep(0.01)
        asked = time.monotonic()
        other = manager.get_instance("transform", "Counted")  # must not wait for slow_import
        waited = time.monotonic() - asked
        assert slow.is_alive(), "the slow import should still be running"
        assert 1.5 <= waited < 60, f"waited {waited:.1f} s for a turn of 2 s"
    finally:
        gate.write_text("go")
    slow.join(timeout=60)
    assert other is not None and not slow.is_alive()


def test_steps_are_returned_as_functions(plugin_folder):
    plugin_folder(
        "a_step.py",
        """
        from brainsmith.plugin.core import step

        @step(name="noop_step")
        def noop_step(model, cfg):
            return model
    """,
    )
    fn = get_plugin_manager().get_instance("step", "noop_step")
    assert fn.__name__ == "noop_step"


@pytest.mark.cold_cache
def test_performance_stats_report_what_the_design_promises():
    stats = get_plugin_manager().get_performance_stats()
    for key in (
        "discovery_time_ms",
        "cache_hit_rate",
        "memory_usage_mb",
        "plugin_count",
        "source_timings_ms",
    ):
        assert key in stats
    assert stats["plugin_count"] >= 400
    assert stats["memory_usage_mb"] > 1
    assert set(stats["source_timings_ms"]) >= {"qonnx", "finn", "brainsmith"}
    get_plugin_manager().discover_plugins()
    assert get_plugin_manager().get_performance_stats()["cache_hit_rate"] > 0


def test_health_is_healthy_with_frameworks_counted():
    health = get_plugin_manager().health_check()
    assert health["status"] == "healthy", health["broken_plugins"]
    assert health["cache_available"] is True
    assert health["frameworks_available"] >= 2
    assert health["frameworks"]["finn"] and health["frameworks"]["qonnx"]


def test_health_is_degraded_and_names_a_broken_plugin(plugin_folder):
    plugin_folder(
        "bad.py",
        "raise RuntimeError('boom at import')\n"
        "from brainsmith.plugin.core import transform\n"
        "@transform(name='Boom')\nclass Boom: pass\n",
    )
    with pytest.raises(ImportError, match="boom at import"):
        transforms.Boom  # noqa: B018
    health = get_plugin_manager().health_check()
    assert health["status"] == "degraded"
    assert any(
        "user:Boom" in p["plugin"] and "boom at import" in p["reason"]
        for p in health["broken_plugins"]
    )


@pytest.mark.cold_cache
def test_debug_mode_logs_sources_cache_and_loads(caplog):
    manager = get_plugin_manager()
    manager.set_debug_mode(True)
    try:
        with caplog.at_level(logging.DEBUG, logger="brainsmith.plugin"):
            manager.discover_plugins()
            transforms.qonnx.FoldConstants  # noqa: B018
        text = caplog.text
        assert "discovery index" in text and "source finn" in text
        assert "loading transform qonnx:FoldConstants" in text
    finally:
        manager.set_debug_mode(False)


def test_clear_cache_removes_index_files_and_forgets_registry():
    manager = get_plugin_manager()
    manager.registry()
    assert manager.clear_cache() >= 1
    assert manager.get_performance_stats()["plugin_count"] >= 400


def test_reset_plugin_system_gives_a_fresh_manager():
    before = get_plugin_manager()
    before.registry()
    reset_plugin_system()
    assert get_plugin_manager() is not before


def test_discover_filters_by_type_and_framework():
    manager = get_plugin_manager()
    registry = manager.discover_plugins(types=["kernel"], frameworks=["finn"])
    assert {(s.type, s.framework) for s in registry.specs()} == {("kernel", "finn")}
    assert manager.discover_plugins(types=["kernel"], frameworks=["finn"]) is registry


def test_the_registry_owns_every_runtime_source_and_reset_empties_them(tmp_path):
    from brainsmith.plugin.lifecycle import (
        BundleBuilder,
        BundleRegistry,
        KernelBuilder,
        VersionInfo,
        is_plugin_loaded,
        kernel_builder,
        list_custom_kernels,
        load_plugin,
        switch_backend,
    )

    source = tmp_path / "fold_mark.py"
    source.write_text(
        "from qonnx.transformation.base import Transformation\n"
        "from brainsmith.plugin import transform\n\n"
        "@transform(name='FoldMark')\n"
        "class FoldMark(Transformation):\n"
        "    def apply(self, model):\n        return model, False\n"
    )

    def operations():
        return [KernelBuilder("acme_triple").execute(lambda x: 3 * x).create()]

    load_plugin(str(source))
    bundle = BundleBuilder().name("acme-ops").version(VersionInfo(1, 0, 0)).build()
    bundles = BundleRegistry()
    bundles.register(bundle.set_custom_operations_fn(operations))
    KernelBuilder("acme_double").execute(lambda x: 2 * x).build()
    switch_backend("MVAU", "hls")

    registry = get_plugin_manager().registry()
    held = {
        s.name: (s.framework, sorted(p.qualified_name for p in s.specs))
        for kind in ("path", "bundle", "kernel")
        for s in registry.sources(kind)
    }
    assert held == {
        "path:fold-mark": ("fold-mark", ["fold-mark:FoldMark"]),
        "bundle:acme-ops": ("acme-ops", ["acme-ops:acme_triple"]),
        "kernel:acme_double": ("", ["user:acme_double"]),
    }
    assert registry.owner("acme-ops").label == "plugin package acme-ops"
    assert registry.backend_choices == {"MVAU": "hls"}
    assert set(kernel_builder.custom_op) == {"acme_triple", "acme_double"}  # what QONNX reads

    reset_plugin_system()
    fresh = get_plugin_manager().registry()
    assert fresh is not registry
    assert [fresh.sources(kind) for kind in ("path", "bundle", "kernel")] == [[], [], []]
    assert fresh.backend_choices == {} and kernel_builder.custom_op == {}
    assert bundles.list_plugins() == [] and list_custom_kernels() == []
    assert not is_plugin_loaded("fold_mark")


def test_a_released_source_takes_its_plugins_and_its_name_with_it():
    from brainsmith.plugin.errors import PluginError
    from brainsmith.plugin.lifecycle import BundleBuilder, BundleRegistry, VersionInfo

    bundles = BundleRegistry()
    bundle = BundleBuilder().name("acme-ops").version(VersionInfo(1, 0, 0)).build()
    bundles.register(bundle)
    with pytest.raises(PluginError, match="already used by plugin package acme-ops"):
        BundleRegistry().register(bundle)
    bundles.unregister("acme-ops")
    registry = get_plugin_manager().registry()
    assert registry.owner("acme-ops") is None and registry.sources("bundle") == []
    BundleRegistry().register(bundle)  # the name is free again
