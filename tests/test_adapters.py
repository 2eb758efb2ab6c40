"""QONNX and FINN adapters: everything the frameworks define, found without importing them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from brainsmith.plugin.manager import get_plugin_manager
from tests.conftest import REPO, run_python


@pytest.fixture(scope="module")
def truth():
    """What QONNX and FINN really define, collected by importing every module."""
    result = subprocess.run(
        [sys.executable, str(REPO / "tests" / "support" / "framework_truth.py")],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=REPO,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    data = json.loads(result.stdout)
    assert data["failures"] == {"qonnx": [], "finn": []}
    return data


def found(plugin_type: str, framework: str) -> list[list[str]]:
    registry = get_plugin_manager().registry()
    return sorted([s.name, s.target] for s in registry.specs(plugin_type, framework))


@pytest.mark.parametrize(
    "category",
    ["qonnx:transform", "finn:transform", "finn:kernel", "finn:backend", "finn:step"],
)
def test_adapter_finds_exactly_what_the_framework_defines(truth, category):
    framework, plugin_type = category.split(":")
    expected = truth[category]
    actual = found(plugin_type, framework)
    missing = [e for e in expected if e not in actual]
    extra = [a for a in actual if a not in expected]
    assert (missing, extra) == ([], []), f"{category}: missing {missing}, unexpected {extra}"


def test_counts_match_the_known_releases(truth):
    counts = {key: len(value) for key, value in truth.items() if key != "failures"}
    assert counts["qonnx:transform"] >= 65 and counts["finn:transform"] >= 182
    assert counts["finn:step"] >= 31


def test_backends_are_linked_to_their_kernels():
    registry = get_plugin_manager().registry()
    spec = registry.find("backend", "finn:MVAU_hls")
    assert (spec.metadata["kernel"], spec.metadata["backend_type"]) == ("MVAU", "hls")
    assert registry.find("backend", "finn:MVAU_rtl").metadata["backend_type"] == "rtl"
    kernels = {s.name for s in registry.specs("kernel", "finn")}
    orphans = [
        s.name for s in registry.specs("backend", "finn") if s.metadata["kernel"] not in kernels
    ]
    # FINN's infrastructure backends have no generic kernel; a new one shows up here.
    assert sorted(orphans) == [
        "CheckSum_hls",
        "FINNLoop",
        "IODMA_hls",
        "NodeContainer",
        "RemoveDataPath_rtl",
        "TLastMarker_hls",
    ]


def test_metadata_has_description_stage_and_source():
    registry = get_plugin_manager().registry()
    spec = registry.find("transform", "finn:Streamline")
    assert spec.metadata["stage"] == "streamline"
    assert spec.description.startswith("Apply the streamlining transform")
    assert spec.source.endswith(os.path.join("finn", "transformation", "streamline", "__init__.py"))
    assert registry.find("transform", "finn:InferLayerNorm").metadata["stage"] == "fpgadataflow"
    assert registry.find("transform", "qonnx:FoldConstants").framework == "qonnx"


def test_listing_everything_imports_neither_finn_torch_nor_onnx():
    result = run_python("""
        import sys
        from brainsmith.plugin.manager import get_plugin_manager
        registry = get_plugin_manager().discover_plugins()
        print(len(registry.specs()), sorted(m for m in ("finn", "torch", "onnx", "qonnx") if m in sys.modules))
    """)
    assert result.returncode == 0, result.stderr
    count, imported = result.stdout.strip().split(" ", 1)
    assert int(count) >= 400 and imported == "[]"


def test_using_a_plugin_imports_only_its_module():
    result = run_python("""
        import sys
        from brainsmith.plugins import transforms
        cls = transforms.qonnx.FoldConstants
        print(cls.__module__, "finn" in sys.modules)
    """)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["qonnx.transformation.fold_constants", "False"]


def test_finn_build_steps_load_without_xilinx_tools():
    result = run_python(
        """
        import os, sys
        from brainsmith.plugins import steps
        fn = steps.finn.step_streamline
        print(fn.__module__, bool(os.environ.get("XILINX_VIVADO")))
    """,
        env={"XILINX_VIVADO": ""},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["finn.builder.build_dataflow_steps", "False"]


@pytest.fixture(scope="module")
def site_without_finn(tmp_path_factory):
    """A real environment where FINN is not installed: every package of ours but finn."""
    import site

    root = tmp_path_factory.mktemp("no_finn")
    for parent in site.getsitepackages():
        for entry in Path(parent).iterdir():
            if entry.name.split("-")[0].split(".")[0] in ("finn", "finn_plus", "finn_xsi"):
                continue
            if entry.suffix == ".pth" and entry.name.startswith("_"):
                continue
            target = root / entry.name
            if not target.exists():
                target.symlink_to(entry)
    return root


def run_without_finn(code: str, site_dir: Path) -> subprocess.CompletedProcess:
    import textwrap

    prelude = f"import site, sys; sys.path[:] = [p for p in sys.path if 'site-packages' not in p]; site.addsitedir({str(site_dir)!r}); sys.path.insert(0, {str(REPO)!r})\n"
    return subprocess.run(
        [sys.executable, "-S", "-c", prelude + textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=300,
        env=os.environ,
    )


def test_without_finn_brainsmith_and_qonnx_plugins_work(site_without_finn):
    result = run_without_finn(
        """
        import importlib.util
        assert importlib.util.find_spec("finn") is None, "finn is still importable"
        from brainsmith.plugins import transforms
        print(transforms.qonnx.FoldConstants.__name__, len(transforms.finn.list_plugins()))
    """,
        site_without_finn,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["FoldConstants", "0"]


def test_without_finn_using_a_finn_plugin_says_how_to_install(site_without_finn):
    result = run_without_finn(
        """
        from brainsmith.plugins import transforms
        try:
            transforms.finn.Streamline
        except AttributeError as exc:
            print(exc)
    """,
        site_without_finn,
    )
    assert result.returncode == 0, result.stderr
    assert "FINN is not installed" in result.stdout
    assert "finn-plus==1.6.1" in result.stdout


def test_without_finn_health_reports_available_frameworks(site_without_finn):
    result = run_without_finn(
        """
        import json
        from brainsmith.plugin.manager import get_plugin_manager
        health = get_plugin_manager().health_check()
        print(json.dumps([health["frameworks"], health["missing_frameworks"]]))
    """,
        site_without_finn,
    )
    assert result.returncode == 0, result.stderr
    frameworks, missing = json.loads(result.stdout)
    assert frameworks["qonnx"] is True and frameworks["finn"] is False
    assert "FINN is not installed" in missing["finn"]
