"""QONNX and FINN adapters: their transforms, kernels, backends and build steps, read from
the installed sources (``ast``), so listing them imports neither FINN, torch nor onnx.

Naming: transforms and kernels keep their class names (``finn:Streamline``,
``finn:MVAU``); backends keep FINN's registry keys (``finn:MVAU_hls``) and link to their
kernel with ``backend_type``; FINN build steps keep FINN's own step names
(``finn:step_streamline``), the names FINN's ``DataflowBuildConfig`` uses.
"""

from __future__ import annotations

import ast
import os
import time

from brainsmith.plugin.sources.classindex import ClassIndex
from brainsmith.plugin.sources.distributions import is_editable, owner_of, stamped_files
from brainsmith.plugin.sources.package_scan import folder_stamps, scan_folder
from brainsmith.plugin.sources.pyscan import dotted, scan_tree
from brainsmith.plugin.stamps import stamp_paths, unchanged

FINN_KERNELS = "finn.custom_op.fpgadataflow"
FINN_BACKENDS = {"finn.custom_op.fpgadataflow.hls": "hls", "finn.custom_op.fpgadataflow.rtl": "rtl"}
REGISTRY_MODULES = (FINN_KERNELS, *FINN_BACKENDS)
STEP_REGISTRAR = "finn.builder.build_dataflow_steps.register_build_dataflow_step"


def locate_package(name: str) -> str | None:
    """The folder of an installed top-level package, found without importing it."""
    import importlib.util

    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations or spec.origin in (None, "namespace"):
        return None
    return next(iter(spec.submodule_search_locations))


def extract(tree: ast.Module, module: str, is_package: bool) -> dict:
    """Per-file facts: classes and imports, plus FINN registrations (custom ops, steps)."""
    data = scan_tree(tree, module, is_package)
    imports = data["imports"]
    registered: list[list] = []  # [registry module, key, dotted class]
    steps: list[list] = []  # [step name, function name]
    for node in tree.body:
        if isinstance(node, ast.ClassDef | ast.FunctionDef):
            for deco in node.decorator_list:
                func = deco.func if isinstance(deco, ast.Call) else deco
                name = dotted(func, imports, module) or ""
                if name.endswith(".register_custom_op") and name[:-19] in REGISTRY_MODULES:
                    registered.append([name[:-19], node.name, f"{module}.{node.name}"])
                elif name == STEP_REGISTRAR and isinstance(deco, ast.Call):
                    steps.append([_step_name(deco, node.name), f"{module}.{node.name}"])
        elif module in REGISTRY_MODULES and isinstance(node, ast.Assign):
            target = node.targets[0]
            if (
                isinstance(target, ast.Subscript)
                and isinstance(target.value, ast.Name)
                and target.value.id == "custom_op"
                and isinstance(target.slice, ast.Constant)
            ):
                value = dotted(node.value, imports, module)
                if value:
                    registered.append([module, target.slice.value, value])
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            # register_build_dataflow_step()(step_fn)
            outer = node.value
            if (
                isinstance(outer.func, ast.Call)
                and outer.args
                and dotted(outer.func.func, imports, module) == STEP_REGISTRAR
            ):
                fn = dotted(outer.args[0], imports, module) or ""
                steps.append([_step_name(outer.func, fn.rpartition(".")[2]), fn])
    data["registered"] = registered
    data["steps"] = steps
    return data


def _step_name(call: ast.Call, default: str) -> str:
    for arg in [*call.args[:1], *(k.value for k in call.keywords if k.arg == "step_name")]:
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            return arg.value
    return default


def stage_of(module: str, is_package: bool = False) -> str:
    """``finn.transformation.streamline.reorder`` -> ``streamline``; top-level -> ``general``."""
    parts = module.split(".")
    if "transformation" in parts:
        rest = parts[parts.index("transformation") + 1 :]
        return rest[0] if len(rest) > 1 or (rest and is_package) else "general"
    return parts[1] if len(parts) > 1 else "general"


class FrameworkAdapter:
    """Discovers one framework's plugins from its installed source tree.

    Installed with pip, the tree changes only through pip, which rewrites the distribution's
    metadata: within the TTL its stamp is the package folder and those files. A tree that is
    not a plain install (an editable install, a checkout on ``PYTHONPATH``) is stamped file
    by file, like a plugin folder. After the TTL every file is checked.
    """

    framework = ""

    def __init__(self) -> None:
        self.root = locate_package(self.framework)

    def is_available(self) -> bool:
        return self.root is not None

    def scan(self, previous: dict | None, full: bool = True, scan_data=lambda: None) -> dict:
        """Rescan the framework's tree; files whose stamp is unchanged reuse ``scan_data()``."""
        previous = previous if previous and previous.get("root") == self.root else None
        if previous and not full and unchanged(previous.get("stamp")):
            return previous  # only sys.path changed, and the framework resolves as before
        if self.root is None:
            return {"root": None, "files": {}, "specs": [], "problems": [], "stamp": [],
                    "checked": time.time()}  # fmt: skip
        old = scan_data() if previous is not None else None
        files, walked = scan_folder(self.root, self.framework, old, extract)
        owner = owner_of(self.root)
        editable = owner is None or is_editable(owner)
        stamp = stamp_paths([self.root, *(stamped_files(owner) if owner else [])])
        if editable:
            stamp += folder_stamps(self.root, files, walked)
        return {
            "root": self.root,
            "editable": editable,
            "files": files,
            "specs": [],
            "problems": [],
            "stamp": stamp,
            "checked": time.time(),
        }

    def index(self, states: list[dict]) -> ClassIndex:
        index = ClassIndex()
        for state in states:
            for *_, data in state.get("files", {}).values():
                if "error" not in data:
                    index.add_module(data["module"], data)
        return index

    def specs(self, state: dict, index: ClassIndex) -> tuple[list[list], list[list]]:
        """Spec records and problem records for this framework."""
        specs: list[list] = []
        problems: list[list] = []
        for rel, (*_, data) in sorted(state.get("files", {}).items()):
            if "error" in data:
                problems.append([self.framework, rel, data["error"]])
                continue
            module = data["module"]
            source = os.path.join(state["root"], rel)
            for name, (_, line, doc) in data["classes"].items():
                if index.is_subclass(f"{module}.{name}"):
                    stage = stage_of(module, rel.endswith("__init__.py"))
                    meta = {"stage": stage, "description": doc, "line": line}
                    specs.append(
                        ["transform", name, self.framework, f"{module}:{name}", meta, source]
                    )
        specs.extend(self.extra_specs(state, index))
        return specs, problems

    def extra_specs(self, state: dict, index: ClassIndex) -> list[list]:
        return []


class QONNXAdapter(FrameworkAdapter):
    framework = "qonnx"


# Kernels FINN has no backend for: a build step replaces their layers by others.
FINN_DECOMPOSED = {"Shuffle": ("InnerShuffle", "OuterShuffle")}  # step_transpose_decomposition


class FINNAdapter(FrameworkAdapter):
    framework = "finn"

    def extra_specs(self, state: dict, index: ClassIndex) -> list[list]:
        where: dict[str, tuple[str, int, str]] = {}  # dotted -> (source, line, doc)
        for rel, (*_, data) in state.get("files", {}).items():
            if "error" in data:
                continue
            for name, (_, line, doc) in data["classes"].items():
                where[f"{data['module']}.{name}"] = (os.path.join(state["root"], rel), line, doc)
            for name, (line, doc) in data["functions"].items():
                where[f"{data['module']}.{name}"] = (os.path.join(state["root"], rel), line, doc)
        records: list[list] = []
        for *_, data in state.get("files", {}).values():
            for registry, key, cls in data.get("registered", []):
                real = index.resolve(cls) or cls
                source, line, doc = where.get(real, ("", 0, ""))
                meta = {"description": doc, "line": line, "stage": "fpgadataflow"}
                if registry == FINN_KERNELS:
                    meta["domain"] = FINN_KERNELS
                    if key in FINN_DECOMPOSED:  # built from other kernels' layers
                        meta["decomposes_into"] = list(FINN_DECOMPOSED[key])
                    records.append(["kernel", key, "finn", _target(real), meta, source])
                else:
                    style = FINN_BACKENDS[registry]
                    meta.update(kernel=_kernel_of(key, style), backend_type=style, domain=registry)
                    records.append(["backend", key, "finn", _target(real), meta, source])
            for name, fn in data.get("steps", []):
                real = _resolve_function(fn, index)
                source, line, doc = where.get(real, ("", 0, ""))
                meta = {"description": doc, "line": line, "stage": "build"}
                records.append(["step", name, "finn", _target(real), meta, source])
        return records


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
