"""FINN's adapter: its transforms, kernels, backends and build steps, read from FINN's
installed sources without importing FINN.

Naming: transforms and kernels keep their class names (``finn:Streamline``,
``finn:MVAU``); backends keep FINN's registry keys (``finn:MVAU_hls``) and link to their
kernel with ``backend_type``; FINN build steps keep FINN's own step names
(``finn:step_streamline``), the names FINN's ``DataflowBuildConfig`` uses.
"""

from __future__ import annotations

import ast
import importlib
import os

from brainsmith.frameworks.finn.facts import BACKEND_STYLES, HW_DOMAIN
from brainsmith.frameworks.finn.tables import is_custom_op_class
from brainsmith.plugin.discovery.sources.adapters import FrameworkAdapter
from brainsmith.plugin.discovery.sources.classindex import ClassIndex
from brainsmith.plugin.discovery.sources.pyscan import dotted, scan_tree

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from brainsmith.plugin.discovery.sources import ModuleFacts, State
    from brainsmith.plugin.discovery.sources.adapters import TargetProblem
    from brainsmith.plugin.registry import Registry
    from brainsmith.plugin.spec import PluginSpec

REGISTRY_MODULES = (HW_DOMAIN, *BACKEND_STYLES)
STEP_REGISTRAR = "finn.builder.build_dataflow_steps.register_build_dataflow_step"
# Kernels FINN has no backend for: a build step replaces their layers by others.
FINN_DECOMPOSED = {"Shuffle": ("InnerShuffle", "OuterShuffle")}  # step_transpose_decomposition


class FINNAdapter(FrameworkAdapter):
    framework = "finn"
    known_facts_file = os.path.join(
        os.path.dirname(os.path.dirname(__file__)), "known", "finn.json"
    )
    install_hint = (
        "FINN is not installed; install it with `scripts/bootstrap.sh` "
        "(or `pip install --no-deps finn-plus==1.6.1` plus `pip install 'brainsmith[finn]'`)"
    )
    # Modules that import FINN at top level: FINN is prepared for this process before they load.
    prepares = ("finn.", "brainsmith.kernels.", "brainsmith.backends.", "brainsmith.steps.")

    @classmethod
    def prepare(cls) -> None:
        from brainsmith.frameworks.finn.env import prepare_finn
        from brainsmith.plugin.loading import import_turn

        with import_turn():
            prepare_finn()

    @classmethod
    def serves(cls, spec: PluginSpec, obj: object) -> bool:
        """A transform: a ``Transformation`` subclass; a step: what FINN's step table holds
        under the name; a kernel or backend: what FINN's custom-op tables hold."""
        if spec.type == "transform":
            return super().serves(spec, obj)
        from brainsmith.plugin.loading import import_turn

        if spec.type == "step":
            with import_turn():
                steps = importlib.import_module("finn.builder.build_dataflow_steps")
            table = getattr(steps, "build_dataflow_step_lookup", None)
            if table is None:  # a FINN without a step table: any function of the module
                import inspect

                return inspect.isfunction(obj)
            return table.get(spec.name) is obj
        domain = HW_DOMAIN if spec.type == "kernel" else spec.metadata.get("domain")
        if not isinstance(domain, str) or (spec.type == "backend" and domain not in BACKEND_STYLES):
            return False
        with import_turn():
            table = getattr(importlib.import_module(domain), "custom_op", {})
        return isinstance(table, dict) and table.get(spec.name) is obj

    @classmethod
    def target_problems(cls, part: str | None, board: str | None) -> list[TargetProblem]:
        """``fpga_part`` and ``board`` against FINN's tables (read without importing FINN)."""
        from brainsmith.frameworks.finn.parts import boards, is_part, known_parts
        from brainsmith.plugin.names import suggest

        known = boards()
        if not known:  # FINN is not installed: nothing to check against
            return []
        problems: list[TargetProblem] = []
        if part and not is_part(part):
            problems.append((
                "fpga_part",
                f"build.fpga_part '{part}' is not an AMD/Xilinx part number",
                "a part such as xcvc1902-vsva2197-2MP-e-S or xc7z020clg400-1 (device, package, "
                "speed grade), or a board instead",
                suggest(part, known_parts()),
            ))  # fmt: skip
        if board and board not in known:
            problems.append((
                "board",
                f"build.board '{board}' is not a board FINN knows",
                "one of " + ", ".join(known),
                suggest(board, list(known)),
            ))  # fmt: skip
        return problems

    @classmethod
    def layer_loaded(cls, registry: Registry, spec: PluginSpec, obj: object) -> None:
        if is_custom_op_class(obj):
            from brainsmith.frameworks.finn.layers import on_layer_loaded

            on_layer_loaded(registry, spec, obj)

    def extract(self, tree: ast.Module, module: str, is_package: bool) -> ModuleFacts:
        return file_facts(tree, module, is_package)

    def extra_specs(self, state: State, index: ClassIndex) -> list[list[Any]]:
        where = _definitions(state)
        records: list[list[Any]] = []
        for *_, data in state.get("files", {}).values():
            for registry, key, cls in data.get("registered", []):
                real = index.resolve(cls) or cls
                records.append(_layer_record(registry, key, real, where))
            for name, fn in data.get("steps", []):
                real = _resolve_function(fn, index)
                source, line, doc = where.get(real, ("", 0, ""))
                meta = {"description": doc, "line": line, "stage": "build"}
                records.append(["step", name, "finn", _target(real), meta, source])
        return records


Definitions = dict[str, tuple[str, int, str]]  # dotted name -> (source, line, doc)


def _definitions(state: State) -> Definitions:
    """Where each class and function of the scanned files is defined, and its doc."""
    where: Definitions = {}
    for rel, (*_, data) in state.get("files", {}).items():
        if "error" in data:
            continue
        source = os.path.join(state["root"] or "", rel)
        for name, (_, line, doc) in data["classes"].items():
            where[f"{data['module']}.{name}"] = (source, line, doc)
        for name, (line, doc) in data["functions"].items():
            where[f"{data['module']}.{name}"] = (source, line, doc)
    return where


def _layer_record(registry: str, key: str, real: str, where: Definitions) -> list[Any]:
    """A registered custom op's spec record: a kernel (FINN's hardware layer) or a backend."""
    source, line, doc = where.get(real, ("", 0, ""))
    meta: dict[str, object] = {"description": doc, "line": line, "stage": "fpgadataflow"}
    if registry == HW_DOMAIN:
        meta["domain"] = HW_DOMAIN
        if key in FINN_DECOMPOSED:  # built from other kernels' layers
            meta["decomposes_into"] = list(FINN_DECOMPOSED[key])
        return ["kernel", key, "finn", _target(real), meta, source]
    style = BACKEND_STYLES[registry]
    meta.update(kernel=_kernel_of(key, style), backend_type=style, domain=registry)
    return ["backend", key, "finn", _target(real), meta, source]


def _kernel_of(key: str, style: str) -> str:
    suffix = f"_{style}"
    return key[: -len(suffix)] if key.endswith(suffix) else key


def _resolve_function(dotted_name: str, index: ClassIndex) -> str:
    for _ in range(8):
        module, _, name = dotted_name.rpartition(".")
        data = index.modules.get(module)
        if data is None or name in data.get("functions", {}) or name not in data["imports"]:
            return dotted_name
        dotted_name = data["imports"][name]
    return dotted_name


def _target(dotted_name: str) -> str:
    module, _, name = dotted_name.rpartition(".")
    return f"{module}:{name}"


def file_facts(tree: ast.Module, module: str, is_package: bool) -> ModuleFacts:
    """Per-file facts: classes and imports, plus FINN's registrations (custom ops, steps)."""
    data = scan_tree(tree, module, is_package)
    imports: dict[str, str] = data["imports"]
    registered: list[list[object]] = []  # [registry module, key, dotted class]
    steps: list[list[str]] = []  # [step name, function name]
    for node in tree.body:
        if isinstance(node, ast.ClassDef | ast.FunctionDef):
            _decorated(node, imports, module, registered, steps)
        elif module in REGISTRY_MODULES and isinstance(node, ast.Assign):
            registered.extend(_assigned_op(node, imports, module))
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            steps.extend(_registered_step(node.value, imports, module))
    data["registered"] = registered
    data["steps"] = steps
    return data


def _decorated(
    node: ast.ClassDef | ast.FunctionDef,
    imports: dict[str, str],
    module: str,
    registered: list[list[object]],
    steps: list[list[str]],
) -> None:
    """``@register_custom_op`` classes into ``registered``, ``@register_build_dataflow_step``
    functions into ``steps``."""
    for deco in node.decorator_list:
        func = deco.func if isinstance(deco, ast.Call) else deco
        name = dotted(func, imports, module) or ""
        if name.endswith(".register_custom_op") and name[:-19] in REGISTRY_MODULES:
            registered.append([name[:-19], node.name, f"{module}.{node.name}"])
        elif name == STEP_REGISTRAR and isinstance(deco, ast.Call):
            steps.append([_step_name(deco, node.name), f"{module}.{node.name}"])


def _assigned_op(node: ast.Assign, imports: dict[str, str], module: str) -> list[list[object]]:
    """A registry module's ``custom_op["Name"] = Class``: [[module, name, dotted class]]."""
    target = node.targets[0]
    if not (
        isinstance(target, ast.Subscript)
        and isinstance(target.value, ast.Name)
        and target.value.id == "custom_op"
        and isinstance(target.slice, ast.Constant)
    ):
        return []
    value = dotted(node.value, imports, module)
    return [[module, target.slice.value, value]] if value else []


def _registered_step(outer: ast.Call, imports: dict[str, str], module: str) -> list[list[str]]:
    """``register_build_dataflow_step(...)(step_fn)``: [[step name, dotted function]]."""
    if not (
        isinstance(outer.func, ast.Call)
        and outer.args
        and dotted(outer.func.func, imports, module) == STEP_REGISTRAR
    ):
        return []
    fn = dotted(outer.args[0], imports, module) or ""
    return [[_step_name(outer.func, fn.rpartition(".")[2]), fn]]


def _step_name(call: ast.Call, default: str) -> str:
    for arg in [*call.args[:1], *(k.value for k in call.keywords if k.arg == "step_name")]:
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            return arg.value
    return default
