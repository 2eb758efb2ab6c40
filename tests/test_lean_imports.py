"""Importing the hub and listing brainsmith's own plugins imports no heavy framework."""

from __future__ import annotations

from tests.conftest import run_python

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
