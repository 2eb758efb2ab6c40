"""load_plugin / unload_plugin / reload_plugin from a .py file, a package folder or a .so."""

from __future__ import annotations

import json
import subprocess
import sys
import sysconfig
import textwrap

import numpy as np
import pytest
from onnx import TensorProto, helper
from qonnx.core.modelwrapper import ModelWrapper
from qonnx.transformation.infer_shapes import InferShapes
from qonnx.util.basic import qonnx_make_model

from brainsmith.plugin import PluginError, PluginLoadError, PluginNotFoundError
from brainsmith.plugin.lifecycle import (
    execute_kernel,
    get_plugin_info,
    is_custom_kernel_registered,
    is_plugin_loaded,
    list_plugins,
    load_plugin,
    reload_plugin,
    unload_plugin,
)
from brainsmith.plugin.lifecycle.bundles import PluginLifecycleError
from brainsmith.plugin.manager import get_plugin_manager
from brainsmith.plugins import steps, transforms

MARK = '''
"""Marks models for the fold team."""
from qonnx.transformation.base import Transformation
from brainsmith.plugin import transform

BRAINSMITH_PLUGIN = {"version": "1.2.0", "author": "fold team"}


@transform(name="Mark")
class Mark(Transformation):
    def apply(self, model):
        model.set_metadata_prop("mark", "{label}")
        return model, False
'''

REGISTER_STEP = """
import sys
from brainsmith.plugin import step
sys.cfold_initialisations = getattr(sys, 'cfold_initialisations', 0) + 1
BRAINSMITH_PLUGIN = {'version': '0.3.0', 'author': 'fold team', 'min_brainsmith_version': '@MIN@'}

@step(name='c_fold')
def c_fold(model, cfg):
    '''PE of every MatMul: the largest divisor of its output channels up to 16 (in C).'''
    for node in model.graph.node:
        if node.op_type == 'MatMul':
            channels = model.get_tensor_shape(node.output[0])[-1]
            model.set_metadata_prop('pe_' + node.name, str(fold_factor(channels, 16)))
    return model
"""

C_SOURCE = r"""
#define PY_SSIZE_T_CLEAN
#include <Python.h>

static PyObject *fold_factor(PyObject *self, PyObject *args) {
    long channels, cap, best = 1;
    if (!PyArg_ParseTuple(args, "ll", &channels, &cap)) return NULL;
    for (long d = 1; d <= cap && d <= channels; d++)
        if (channels % d == 0) best = d;
    return PyLong_FromLong(best);
}

/* The module's init runs Python that registers a step calling fold_factor. */
static int exec_module(PyObject *module) {
    PyObject *globals = PyModule_GetDict(module);
    if (PyDict_SetItemString(globals, "__builtins__", PyEval_GetBuiltins()) < 0) return -1;
    PyObject *result = PyRun_String(@REGISTER@, Py_file_input, globals, globals);
    if (result == NULL) return -1;
    Py_DECREF(result);
    return 0;
}

static PyMethodDef methods[] = {
    {"fold_factor", fold_factor, METH_VARARGS, "Largest divisor of channels <= cap."},
    {NULL, NULL, 0, NULL},
};
static PyModuleDef_Slot slots[] = {{Py_mod_exec, exec_module}, {0, NULL}};
static struct PyModuleDef definition = {
    PyModuleDef_HEAD_INIT, "cfold", "Folding factors computed in C.", 0, methods, slots,
};
PyMODINIT_FUNC PyInit_cfold(void) { return PyModuleDef_Init(&definition); }
"""


def build_extension(folder, min_version: str = "0.1.0"):
    """Compile the ``cfold`` extension module with the system C compiler."""
    folder.mkdir(parents=True, exist_ok=True)
    source = folder / "cfold.c"
    register = json.dumps(REGISTER_STEP.replace("@MIN@", min_version))
    source.write_text(C_SOURCE.replace("@REGISTER@", register))
    target = folder / f"cfold{sysconfig.get_config_var('EXT_SUFFIX')}"
    include = sysconfig.get_paths()["include"]
    subprocess.run(
        ["gcc", "-shared", "-fPIC", "-O1", f"-I{include}", str(source), "-o", str(target)],
        check=True,
        capture_output=True,
    )
    return target


def write(path, text: str):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


def matmul_model():
    node = helper.make_node("MatMul", ["x", "w"], ["y"], name="mm0")
    graph = helper.make_graph(
        [node],
        "fold",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 24])],
    )
    model = ModelWrapper(qonnx_make_model(graph))
    model.set_initializer("w", np.ones((8, 24), np.float32))
    return model.transform(InferShapes())


def apply_mark(transform_class) -> str:
    model = matmul_model().transform(transform_class())
    return model.get_metadata_prop("mark")


def test_a_file_is_only_loaded_by_an_explicit_call(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "marker.py", MARK.replace("{label}", "v1"))
    assert "Mark" not in transforms
    load_plugin(tmp_path / "marker.py")
    assert apply_mark(transforms.Mark) == "v1"


def test_file_plugins_register_under_the_plugin_name(tmp_path):
    load_plugin(write(tmp_path / "fold_marks.py", MARK.replace("{label}", "v1")))
    assert transforms.fold_marks.Mark is transforms.Mark
    assert transforms.get_spec("Mark").qualified_name == "fold-marks:Mark"


def test_plugin_info_comes_from_the_file(tmp_path):
    path = write(tmp_path / "marker.py", MARK.replace("{label}", "v1"))
    info = load_plugin(path)
    assert (info.name, str(info.version), info.author) == ("marker", "1.2.0", "fold team")
    assert info.description == "Marks models for the fold team."
    assert info.path == str(path) and info.provides == ("marker:Mark",)
    assert get_plugin_info("marker") == info
    assert is_plugin_loaded("marker") and list_plugins() == [info]


def test_name_overrides_the_file_name(tmp_path):
    load_plugin(write(tmp_path / "marker.py", MARK.replace("{label}", "v1")), name="acme")
    assert transforms.get_spec("Mark").qualified_name == "acme:Mark"
    assert is_plugin_loaded("acme") and not is_plugin_loaded("marker")


def test_a_package_folder_registers_plugins_of_its_submodules(tmp_path):
    package = tmp_path / "acme_pkg"
    write(package / "__init__.py", "from . import steps_impl\n")
    write(
        package / "steps_impl.py",
        """
        from brainsmith.plugin import step

        @step(name="acme_tidy")
        def acme_tidy(model, cfg):
            return model
        """,
    )
    info = load_plugin(package)
    assert info.provides == ("acme-pkg:acme_tidy",)
    assert steps.acme_tidy.__module__ == "acme_pkg.steps_impl"


def test_a_compiled_extension_registers_a_step_backed_by_c(tmp_path):
    info = load_plugin(build_extension(tmp_path / "build"))
    assert (info.name, str(info.version), info.description) == (
        "cfold",
        "0.3.0",
        "Folding factors computed in C.",
    )
    model = steps.cfold.c_fold(matmul_model(), None)
    assert model.get_metadata_prop("pe_mm0") == "12"  # 24 channels, at most 16 PEs


def test_an_incompatible_compiled_extension_is_refused(tmp_path):
    with pytest.raises(PluginLoadError, match=r"'cfold'.* is unavailable: needs brainsmith >= 99"):
        load_plugin(build_extension(tmp_path / "build", min_version="99.0"))
    assert "c_fold" not in steps and "cfold" not in sys.modules


def test_an_incompatible_compiled_extension_has_run_its_initialisation_when_refused(tmp_path):
    """docs/lifecycle.md: a .so's constraints are read after its initialisation ran."""
    before = getattr(sys, "cfold_initialisations", 0)
    with pytest.raises(PluginLoadError, match="is unavailable"):
        load_plugin(build_extension(tmp_path / "build", min_version="99.0"))
    assert sys.cfold_initialisations == before + 1 and not is_plugin_loaded("cfold")


def test_a_compiled_extension_cannot_be_hot_reloaded(tmp_path):
    load_plugin(build_extension(tmp_path / "build"))
    with pytest.raises(PluginLoadError, match="restart it to use the new build"):
        reload_plugin("cfold")
    assert "c_fold" in steps


def test_an_incompatible_file_is_not_executed(tmp_path):
    path = write(
        tmp_path / "future.py",
        """
        import sys
        BRAINSMITH_PLUGIN = {"min_brainsmith_version": "99.0"}
        sys.future_plugin_ran = True
        """,
    )
    with pytest.raises(PluginLoadError, match=r"'future' .*future\.py:3.* is unavailable"):
        load_plugin(path)
    assert not hasattr(sys, "future_plugin_ran") and not is_plugin_loaded("future")


def test_unload_removes_its_plugins_and_modules(tmp_path):
    load_plugin(write(tmp_path / "marker.py", MARK.replace("{label}", "v1")))
    transforms.Mark  # noqa: B018 - cached on the collection
    unload_plugin("marker")
    assert "Mark" not in transforms and "marker" not in sys.modules
    assert not is_plugin_loaded("marker") and list_plugins() == []


def test_reload_serves_the_changed_code(tmp_path):
    path = write(tmp_path / "marker.py", MARK.replace("{label}", "v1"))
    load_plugin(path)
    assert apply_mark(transforms.Mark) == "v1"
    write(path, MARK.replace("{label}", "version two"))
    reload_plugin("marker")
    assert apply_mark(transforms.Mark) == "version two"
    assert apply_mark(get_plugin_manager().registry().get("transform", "Mark")) == "version two"


def test_reload_drops_cached_instances(tmp_path):
    path = write(tmp_path / "marker.py", MARK.replace("{label}", "v1"))
    load_plugin(path)
    manager = get_plugin_manager()
    before = manager.get_instance("transform", "Mark")
    write(path, MARK.replace("{label}", "v2"))
    reload_plugin("marker")
    after = manager.get_instance("transform", "Mark")
    assert after is not before
    assert matmul_model().transform(after).get_metadata_prop("mark") == "v2"


def test_reload_with_a_syntax_error_keeps_the_previous_version(tmp_path):
    path = write(tmp_path / "marker.py", MARK.replace("{label}", "v1"))
    load_plugin(path)
    path.write_text("def broken(:\n")
    with pytest.raises(PluginLoadError, match=r"marker.py:1.*previous version of 'marker' stays"):
        reload_plugin("marker")
    assert apply_mark(transforms.Mark) == "v1"


def test_reload_that_fails_at_import_keeps_the_previous_version(tmp_path):
    path = write(tmp_path / "marker.py", MARK.replace("{label}", "v1"))
    load_plugin(path)
    write(path, MARK.replace("{label}", "v2") + "\nraise RuntimeError('half-written')\n")
    with pytest.raises(PluginLoadError, match=r"half-written.*previous version of 'marker' stays"):
        reload_plugin("marker")
    assert apply_mark(transforms.Mark) == "v1" and is_plugin_loaded("marker")


def test_import_error_names_the_plugin_and_line_and_registers_nothing(tmp_path):
    path = write(
        tmp_path / "broken.py",
        """
        from brainsmith.plugin import step

        @step(name="early")
        def early(model, cfg):
            return model

        raise ValueError("missing HLS pragma table")
        """,
    )
    with pytest.raises(PluginLoadError, match=r"plugin 'broken'.*missing HLS pragma table.*py:8"):
        load_plugin(path)
    assert "early" not in steps and "broken" not in sys.modules and not is_plugin_loaded("broken")
    health = get_plugin_manager().health_check()["broken_plugins"]
    assert any("missing HLS pragma table" in p["reason"] for p in health)


def test_loading_twice_points_to_reload(tmp_path):
    path = write(tmp_path / "marker.py", MARK.replace("{label}", "v1"))
    load_plugin(path)
    with pytest.raises(PluginLoadError, match=r"use reload_plugin\('marker'\)"):
        load_plugin(path)


def test_unsupported_paths_say_what_is_accepted(tmp_path):
    with pytest.raises(PluginLoadError, match="no such file or folder"):
        load_plugin(tmp_path / "missing.py")
    with pytest.raises(PluginLoadError, match=r"expected a \.py file, a package folder"):
        load_plugin(write(tmp_path / "notes.txt", "hello"))


def test_a_module_name_already_imported_is_refused(tmp_path):
    with pytest.raises(PluginLoadError, match="a module named 'json' is already imported"):
        load_plugin(write(tmp_path / "json.py", "x = 1\n"))


def test_unknown_loaded_plugin_suggests_names(tmp_path):
    load_plugin(write(tmp_path / "marker.py", MARK.replace("{label}", "v1")))
    with pytest.raises(PluginNotFoundError, match="did you mean 'marker'"):
        get_plugin_info("markr")


def test_kernels_built_in_a_file_belong_to_it_and_leave_with_it(tmp_path):
    path = write(
        tmp_path / "acts.py",
        """
        from brainsmith.plugin.lifecycle import KernelBuilder
        KernelBuilder("hard_tanh").execute(lambda x: x.clip(-1, 1)).build()
        """,
    )
    assert load_plugin(path).provides == ("acts:hard_tanh",)
    assert execute_kernel("hard_tanh", [np.array([-3.0, 0.5])]).tolist() == [-1.0, 0.5]
    unload_plugin("acts")
    assert not is_custom_kernel_registered("hard_tanh")


PACKAGE_OBJECT = """
from brainsmith.plugin.lifecycle import KernelBuilder, BundleBuilder

events = []
BRAINSMITH_PLUGIN = (
    BundleBuilder().name("lifecycle").version("2.0.0").author("ops team").build()
    .set_initialize_fn(lambda registry: events.append("initialize"))
    .set_cleanup_fn({cleanup})
    .set_custom_operations_fn(
        lambda: [KernelBuilder("neg").execute(lambda x: -x).create()])
)
"""


def test_a_file_defining_a_plugin_object_runs_its_lifecycle(tmp_path):
    path = write(tmp_path / "lifecycle.py", PACKAGE_OBJECT.format(cleanup="events.append"))
    info = load_plugin(path)
    module = sys.modules["lifecycle"]
    assert (str(info.version), info.author, info.provides) == (
        "2.0.0",
        "ops team",
        ("lifecycle:neg",),
    )
    assert module.events == ["initialize"]
    unload_plugin("lifecycle")
    assert module.events[-1] is get_plugin_manager().registry()
    assert not is_custom_kernel_registered("neg")


def test_failing_cleanup_on_unload_is_reported_and_the_plugin_is_gone(tmp_path):
    cleanup = "lambda registry: 1 / 0"
    load_plugin(write(tmp_path / "lifecycle.py", PACKAGE_OBJECT.format(cleanup=cleanup)))
    with pytest.raises(PluginLifecycleError, match="plugin 'lifecycle': cleanup raised"):
        unload_plugin("lifecycle")
    assert not is_plugin_loaded("lifecycle") and "lifecycle" not in sys.modules


def test_loaded_plugins_survive_rediscovery(tmp_path):
    load_plugin(write(tmp_path / "marker.py", MARK.replace("{label}", "v1")))
    get_plugin_manager().discover_plugins(frameworks=["brainsmith"])
    assert apply_mark(transforms.marker.Mark) == "v1"


def test_a_reserved_name_is_refused(tmp_path):
    with pytest.raises(PluginError, match="'finn' is reserved"):
        load_plugin(write(tmp_path / "finn.py", "x = 1\n"))
