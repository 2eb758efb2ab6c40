"""Importing the hub and listing brainsmith's own plugins imports no heavy framework."""

from __future__ import annotations

import json

import pytest

from tests.conftest import REPO, run_python

HEAVY = ("qonnx", "onnx", "numpy", "finn", "torch")
# A warm start also stays off the parsers and metadata readers that only a scan needs.
WARM_HEAVY = (*HEAVY, "yaml", "stevedore", "importlib.metadata", "ast")


def test_import_brainsmith_and_plugins_is_lean():
    result = run_python(f"""
        import sys
        import brainsmith, brainsmith.plugins, brainsmith.plugin
        print([m for m in {HEAVY!r} if m in sys.modules])
    """)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


# What ``import brainsmith.plugins`` adds to a fresh interpreter's modules (21 of brainsmith's
# when first listed; discovery's index is now imported by the first discovery). A change may
# rename one of these (a module moved), never add one: the hub's start-up stays this small.
PLUGINS_IMPORT_BRAINSMITH = (
    "brainsmith",
    "brainsmith.errors",
    "brainsmith.plugin",
    "brainsmith.plugin.collections",
    "brainsmith.plugin.discovery",
    "brainsmith.plugin.discovery.trust",
    "brainsmith.plugin.errors",
    "brainsmith.plugin.log",
    "brainsmith.plugin.manager",
    "brainsmith.plugin.metadata",
    "brainsmith.plugin.refresher",
    "brainsmith.plugin.registry",
    "brainsmith.plugin.settings",
    "brainsmith.plugin.settings.config",
    "brainsmith.plugin.settings.memo",
    "brainsmith.plugin.spec",
    "brainsmith.plugin.values",
    "brainsmith.plugins",
)
PLUGINS_IMPORT_OTHERS = ("__future__", "errno")


def test_import_brainsmith_plugins_adds_no_module():
    result = run_python("""
        import sys
        before = set(sys.modules)
        import brainsmith.plugins
        print(" ".join(sorted(set(sys.modules) - before)))
    """)
    assert result.returncode == 0, result.stderr
    added = set(result.stdout.split())
    ours = {m for m in added if m.partition(".")[0] == "brainsmith"}
    assert sorted(ours - set(PLUGINS_IMPORT_BRAINSMITH)) == []
    assert len(ours) <= len(PLUGINS_IMPORT_BRAINSMITH)
    assert sorted(added - ours - set(PLUGINS_IMPORT_OTHERS)) == []


def test_listing_brainsmith_plugins_is_lean():
    result = run_python(f"""
        import sys
        from brainsmith.plugin.manager import get_plugin_manager
        registry = get_plugin_manager().discover_plugins(frameworks=["brainsmith"])
        assert all(s.framework == "brainsmith" for s in registry.specs())
        print([m for m in {HEAVY!r} if m in sys.modules])
    """)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_warm_listing_of_everything_is_lean():
    code = f"""
        import sys
        from brainsmith.plugins import transforms, kernels, backends, steps
        total = sum(len(c.list_plugins()) for c in (transforms, kernels, backends, steps))
        print(total, [m for m in {WARM_HEAVY!r} if m in sys.modules])
    """
    run_python(code)  # cold: fills the index
    result = run_python(code)
    assert result.returncode == 0, result.stderr
    total, imported = result.stdout.strip().split(" ", 1)
    assert int(total) > 350
    assert imported == "[]"


@pytest.mark.slow  # builds the CNV
def test_a_build_imports_only_the_parts_of_finn_it_runs(tmp_path):
    """FINN's builder module imports every step's dependencies (QoR models with scikit-learn,
    the ONNX passes frontend); a build whose FINN hardware steps are skipped here (no Vivado)
    imports none of it, and still records those steps as skipped."""
    out = tmp_path / "cnv"
    result = run_python(
        f"""
        import json, sys
        import brainsmith
        result = brainsmith.build("examples/models/cnv.onnx", "blueprints/cnv.yaml", {str(out)!r},
                                  verify="none")
        steps = {{s["name"]: s["status"] for s in json.load(open(result.report_path))["steps"]}}
        unused = ("finn.builder.build_dataflow_steps", "sklearn", "pandas", "onnx_passes")
        print(json.dumps([result.status, steps, [m for m in unused if m in sys.modules]]))
        """,
        env={"XILINX_VIVADO": ""},
        cwd=REPO,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    status, steps, imported = json.loads(result.stdout.strip().splitlines()[-1])
    assert status == "ok"
    assert steps["estimates"] == steps["codegen"] == "ok"
    assert steps["step_hw_ipgen"] == steps["step_create_stitched_ip"] == "skipped"
    assert imported == []
