"""Availability (versions, requires, tools, own checks), priorities and backend selection."""

from __future__ import annotations

import os

import pytest

from brainsmith.plugin import PluginNotFoundError, backend
from brainsmith.plugin.lifecycle import (
    auto_select,
    backend_preferences,
    is_available,
    priority,
    switch_backend,
)
from brainsmith.plugin.lifecycle.availability import PluginUnavailableError
from brainsmith.plugin.manager import get_plugin_manager
from brainsmith.plugins import backends


def acme_backends(hls_tools=(), rtl_requires=(), hls_priority="NORMAL"):
    """Two backends of kernel AcmeConv, registered at runtime (framework ``user``)."""

    @backend(
        name="AcmeConv_hls",
        kernel="AcmeConv",
        backend_type="hls",
        priority=hls_priority,
        tools=list(hls_tools) or ["sh"],
    )
    class AcmeConvHLS:
        pass

    @backend(
        name="AcmeConv_rtl",
        kernel="AcmeConv",
        backend_type="rtl",
        requires=list(rtl_requires) or ["numpy"],
    )
    class AcmeConvRTL:
        pass

    return AcmeConvHLS, AcmeConvRTL


def spec(name: str):
    return get_plugin_manager().registry().find("backend", name)


def test_priority_defaults_to_normal_and_accepts_level_names():
    acme_backends(hls_priority="HIGH")
    assert priority(spec("AcmeConv_hls")) == 75
    assert priority(spec("AcmeConv_rtl")) == 50


def test_finn_backends_are_available_without_xilinx_tools():
    assert is_available("backend", "MVAU_hls") == (True, "available")
    assert is_available("backend", "finn:MVAU_rtl") == (True, "available")


def test_missing_python_package_makes_a_plugin_unavailable_without_importing():
    acme_backends(rtl_requires=["acme_fpga_toolkit>=2"])
    ok, reason = is_available("backend", "AcmeConv_rtl")
    assert not ok
    assert (
        reason == "needs Python package(s) acme_fpga_toolkit>=2 (pip install acme_fpga_toolkit>=2)"
    )


def test_missing_tool_makes_a_plugin_unavailable():
    acme_backends(hls_tools=["acme_vitis_hls"])
    assert is_available(spec("AcmeConv_hls")) == (
        False,
        "needs acme_vitis_hls on PATH (install it or source its settings script)",
    )


def test_a_tool_on_path_makes_it_available(tmp_path, monkeypatch):
    tool = tmp_path / "acme_vitis_hls"
    tool.write_text("#!/bin/sh\nexit 0\n")
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    acme_backends(hls_tools=["acme_vitis_hls"])
    assert is_available(spec("AcmeConv_hls")) == (True, "available")


def test_incompatible_version_is_unavailable_with_the_reason():
    @backend(name="Old_hls", kernel="Old", backend_type="hls", max_brainsmith_version="0.0.1")
    class OldHLS:
        pass

    ok, reason = is_available(spec("Old_hls"))
    assert not ok and reason.startswith("needs brainsmith <= 0.0.1")


def test_a_plugins_own_check_can_say_no():
    hls, _ = acme_backends()
    hls.check_available = staticmethod(lambda: (False, "no board attached"))
    assert is_available(spec("AcmeConv_hls")) == (False, "no board attached")


def test_a_failing_check_is_reported_with_the_plugin_name():
    hls, _ = acme_backends()

    def check():
        raise RuntimeError("license server down")

    hls.check_available = staticmethod(check)
    ok, reason = is_available(spec("AcmeConv_hls"))
    assert not ok and reason.startswith("user:AcmeConv_hls: availability check raised RuntimeError")
    health = get_plugin_manager().health_check()["broken_plugins"]
    assert any(
        "AcmeConv_hls" in p["plugin"] and "license server down" in p["reason"] for p in health
    )


def test_a_failing_check_does_not_stop_selection_of_another_backend():
    hls, _ = acme_backends(hls_priority="HIGHEST")
    hls.check_available = staticmethod(lambda: 1 / 0)
    assert auto_select("AcmeConv").name == "AcmeConv_rtl"


def test_list_plugins_can_show_only_available_ones():
    acme_backends(hls_tools=["acme_vitis_hls"])
    assert "AcmeConv_hls" in backends.list_plugins()
    available = backends.list_plugins(available_only=True)
    assert "AcmeConv_hls" not in available and "AcmeConv_rtl" in available


def test_auto_select_prefers_rtl_on_equal_priority():
    assert auto_select("MVAU").qualified_name == "finn:MVAU_rtl"


def test_auto_select_takes_the_highest_priority():
    acme_backends(hls_priority="HIGH")
    assert auto_select("AcmeConv").name == "AcmeConv_hls"


def test_auto_select_skips_unavailable_backends():
    acme_backends(hls_priority="HIGHEST", hls_tools=["acme_vitis_hls"])
    assert auto_select("AcmeConv").name == "AcmeConv_rtl"


def test_no_available_backend_lists_each_reason():
    acme_backends(hls_tools=["acme_vitis_hls"], rtl_requires=["acme_missing"])
    with pytest.raises(PluginUnavailableError) as err:
        auto_select("AcmeConv")
    message = str(err.value)
    assert "no available backend for kernel 'AcmeConv'" in message
    assert "user:AcmeConv_hls is unavailable: needs acme_vitis_hls" in message
    assert "user:AcmeConv_rtl is unavailable: needs Python package(s) acme_missing" in message


def test_switch_backend_changes_the_choice_at_runtime():
    assert switch_backend("MVAU", "hls").qualified_name == "finn:MVAU_hls"
    assert auto_select("MVAU").name == "MVAU_hls"
    assert backend_preferences() == {"MVAU": "hls"}
    assert switch_backend("MVAU", None).name == "MVAU_rtl"
    assert auto_select("MVAU").name == "MVAU_rtl"


def test_switching_to_an_unavailable_backend_is_refused_and_changes_nothing():
    acme_backends(hls_tools=["acme_vitis_hls"])
    with pytest.raises(PluginUnavailableError, match="AcmeConv_hls is unavailable: needs acme"):
        switch_backend("AcmeConv", "AcmeConv_hls")
    assert backend_preferences() == {} and auto_select("AcmeConv").name == "AcmeConv_rtl"


def test_switching_to_an_unknown_backend_suggests_the_kernels_backends():
    with pytest.raises(PluginNotFoundError, match="did you mean 'MVAU_hls'"):
        switch_backend("MVAU", "MVAU_hsl")


def test_a_blueprint_preference_overrides_the_runtime_switch():
    switch_backend("MVAU", "rtl")
    blueprint_backends = {"MVAU": "finn:MVAU_hls"}
    assert auto_select("MVAU", prefer=blueprint_backends).name == "MVAU_hls"
    assert auto_select("Thresholding", prefer=blueprint_backends).name == "Thresholding_rtl"


def test_unknown_kernel_suggests_kernels_with_backends():
    with pytest.raises(PluginNotFoundError, match="did you mean 'MVAU'"):
        auto_select("MVAV")
