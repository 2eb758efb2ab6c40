"""Plugin packages as objects: BundleBuilder, PluginBundle lifecycle hooks and BundleRegistry."""

from __future__ import annotations

import numpy as np
import pytest

from brainsmith.plugin import PluginError, PluginLoadError, PluginNotFoundError, step, transform
from brainsmith.plugin.lifecycle import (
    BundleBuilder,
    BundleRegistry,
    KernelBuilder,
    VersionInfo,
    execute_kernel,
)
from brainsmith.plugin.lifecycle.bundles import PluginLifecycleError
from brainsmith.plugin.manager import get_plugin_manager
from brainsmith.plugins import steps, transforms


def make_plugin(name: str = "acme-ops", **versions):
    builder = (
        BundleBuilder()
        .name(name)
        .version(VersionInfo(1, 0, 0))
        .description("Acme's folding helpers")
        .author("Acme FPGA team")
        .min_brainsmith_version(VersionInfo(0, 1, 0))
    )
    for key, value in versions.items():
        getattr(builder, key)(value)
    return builder.build()


def operations():
    from qonnx.transformation.base import Transformation

    @transform(name="AcmeMark")
    class AcmeMark(Transformation):
        def apply(self, model):
            model.set_metadata_prop("acme", "marked")
            return model, False

    @step(name="acme_step")
    def acme_step(model, cfg):
        return model

    return [AcmeMark, acme_step, KernelBuilder("acme_double").execute(lambda x: 2 * x).create()]


def health_reasons() -> list[str]:
    return [p["reason"] for p in get_plugin_manager().health_check()["broken_plugins"]]


def test_builder_makes_a_plugin_with_its_info():
    info = make_plugin().info
    assert (info.name, str(info.version), info.author) == ("acme-ops", "1.0.0", "Acme FPGA team")
    assert info.description == "Acme's folding helpers"
    assert info.min_brainsmith_version == VersionInfo(0, 1, 0)
    assert str(info) == "acme-ops 1.0.0 by Acme FPGA team: Acme's folding helpers"


def test_builder_rejects_a_reserved_name():
    with pytest.raises(PluginError, match="'finn' is reserved"):
        BundleBuilder().name("finn").build()


def test_builder_rejects_a_bad_version():
    with pytest.raises(PluginError, match="plugin 'acme': not a version: 'soon'"):
        BundleBuilder().name("acme").version("soon").build()


def test_register_runs_initialize_with_the_hub_registry():
    seen = []
    plugin = make_plugin().set_initialize_fn(seen.append)
    BundleRegistry().register(plugin)
    assert seen == [get_plugin_manager().registry()]


def test_contributions_join_the_hub_under_the_package_name():
    registry = BundleRegistry()
    info = registry.register(make_plugin().set_custom_operations_fn(operations))
    assert set(info.provides) == {"acme-ops:AcmeMark", "acme-ops:acme_step", "acme-ops:acme_double"}
    assert transforms.acme_ops.AcmeMark is transforms.AcmeMark
    assert steps["acme-ops:acme_step"].__name__ == "acme_step"


def test_contributed_kernel_executes():
    BundleRegistry().register(make_plugin().set_custom_operations_fn(operations))
    assert execute_kernel("acme_double", [np.array([1.0, 2.0])]).tolist() == [2.0, 4.0]


def test_registry_lists_and_finds_packages():
    registry = BundleRegistry()
    registry.register(make_plugin())
    assert [i.name for i in registry.list_plugins()] == ["acme-ops"]
    assert registry.is_registered("acme-ops") and registry.is_registered("acme_ops")
    assert registry.get_plugin("acme-ops").info.version == VersionInfo(1, 0, 0)


def test_unknown_package_suggests_the_registered_ones():
    registry = BundleRegistry()
    registry.register(make_plugin())
    with pytest.raises(PluginNotFoundError, match="did you mean 'acme-ops'"):
        registry.get_plugin("acme-op")


def test_unregister_removes_contributions_and_runs_cleanup():
    cleaned = []
    registry = BundleRegistry()
    plugin = make_plugin().set_custom_operations_fn(operations).set_cleanup_fn(cleaned.append)
    registry.register(plugin)
    transforms.AcmeMark  # noqa: B018 - cached on the collection
    registry.unregister("acme-ops")
    assert cleaned == [get_plugin_manager().registry()]
    assert not registry.is_registered("acme-ops")
    assert "AcmeMark" not in transforms
    with pytest.raises(PluginNotFoundError):
        execute_kernel("acme_double", [np.ones(2)])


def test_registering_twice_is_refused():
    registry = BundleRegistry()
    registry.register(make_plugin())
    with pytest.raises(PluginError, match="already registered"):
        registry.register(make_plugin())


def test_incompatible_package_is_not_registered_and_says_why():
    initialized = []
    plugin = make_plugin(max_brainsmith_version="0.0.1").set_initialize_fn(initialized.append)
    registry = BundleRegistry()
    with pytest.raises(
        PluginLoadError, match=r"'acme-ops' is unavailable: needs brainsmith <= 0\.0\.1"
    ):
        registry.register(plugin)
    assert not registry.is_registered("acme-ops") and initialized == []
    assert any("needs brainsmith <= 0.0.1" in r for r in health_reasons())


def test_failing_initialize_names_the_plugin_and_registers_nothing():
    def initialize(registry):
        raise RuntimeError("no license server")

    registry = BundleRegistry()
    plugin = make_plugin().set_initialize_fn(initialize).set_custom_operations_fn(operations)
    with pytest.raises(PluginLifecycleError, match="plugin 'acme-ops': initialize raised") as err:
        registry.register(plugin)
    assert err.value.plugin == "acme-ops" and err.value.stage == "initialize"
    assert "test_plugin_packages.py" in str(err.value)
    assert not registry.is_registered("acme-ops") and "AcmeMark" not in transforms
    assert any("no license server" in r for r in health_reasons())


def test_failing_custom_operations_runs_cleanup_and_registers_nothing():
    cleaned = []

    def broken():
        raise KeyError("missing table")

    registry = BundleRegistry()
    plugin = make_plugin().set_custom_operations_fn(broken).set_cleanup_fn(cleaned.append)
    with pytest.raises(PluginLifecycleError, match="custom_operations raised KeyError"):
        registry.register(plugin)
    assert len(cleaned) == 1 and not registry.is_registered("acme-ops")


def test_an_invalid_contribution_leaves_the_hub_unchanged():
    def mixed():
        return [*operations(), 42]

    registry = BundleRegistry()
    with pytest.raises(PluginError, match=r"custom operation 3 \(42\) is neither a decorated"):
        registry.register(make_plugin().set_custom_operations_fn(mixed))
    hub = get_plugin_manager().registry()
    assert hub.specs(framework="acme-ops") == []
    assert hub.find("transform", "AcmeMark").framework == "user"  # where it was decorated


def test_failing_cleanup_is_reported_but_the_package_is_gone():
    def cleanup(registry):
        raise OSError("device busy")

    registry = BundleRegistry()
    registry.register(make_plugin().set_custom_operations_fn(operations).set_cleanup_fn(cleanup))
    with pytest.raises(PluginLifecycleError, match="cleanup raised OSError: device busy"):
        registry.unregister("acme-ops")
    assert not registry.is_registered("acme-ops") and "AcmeMark" not in transforms
    assert any("device busy" in r for r in health_reasons())


def test_one_failing_package_does_not_affect_another():
    registry = BundleRegistry()
    registry.register(make_plugin().set_custom_operations_fn(operations))

    def initialize(registry):
        raise ValueError("bad")

    with pytest.raises(PluginLifecycleError):
        registry.register(make_plugin("other-ops").set_initialize_fn(initialize))
    assert registry.is_registered("acme-ops") and transforms.acme_ops.AcmeMark


def test_package_plugins_survive_rediscovery():
    BundleRegistry().register(make_plugin().set_custom_operations_fn(operations))
    get_plugin_manager().discover_plugins(frameworks=["brainsmith", "qonnx"])
    assert transforms.acme_ops.AcmeMark.__name__ == "AcmeMark"


def test_a_built_kernel_moves_into_the_package_that_returns_it():
    kernel = KernelBuilder("acme_square").execute(lambda x: x * x).build()
    hub = get_plugin_manager().registry()
    assert hub.find("kernel", "acme_square").framework == "user"
    BundleRegistry().register(make_plugin().set_custom_operations_fn(lambda: [kernel]))
    assert [s.qualified_name for s in hub.candidates("kernel", "acme_square")] == [
        "acme-ops:acme_square"
    ]
