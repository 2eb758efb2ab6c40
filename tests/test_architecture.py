"""The layout keeps its layers: no import cycle anywhere in brainsmith, counting imports made
inside functions, and the everyday import stays free of the heavy frameworks."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import brainsmith

PACKAGE = Path(brainsmith.__file__).parent


def import_graph(annotations: bool = False) -> dict[str, set[str]]:
    """module -> the brainsmith modules it imports (at any depth of its code that can run;
    ``annotations``: also those imported under ``TYPE_CHECKING`` for annotations only)."""
    modules = {}
    for path in PACKAGE.rglob("*.py"):
        name = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        modules[name.removesuffix(".__init__")] = path
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in _runtime_nodes(ast.parse(path.read_text()), annotations):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*parts, base] if base else parts)
                targets = [
                    f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base
                    for a in node.names
                ]
            else:
                continue
            for target in targets:
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    graph[name].add(target)
    return graph


def _runtime_nodes(tree: ast.AST, annotations: bool = False):
    """Every node that can run: all of them but the bodies of ``if TYPE_CHECKING:`` (names for
    annotations only, never imported), unless ``annotations``."""
    stack = [tree]
    while stack:
        node = stack.pop()
        yield node
        if (
            not annotations
            and isinstance(node, ast.If)
            and getattr(node.test, "id", "") == "TYPE_CHECKING"
        ):
            stack.extend(node.orelse)
        else:
            stack.extend(ast.iter_child_nodes(node))


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_import_cycle_in_brainsmith_not_even_inside_functions():
    assert cycles(import_graph()) == []


def test_the_cycle_check_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


EVERYDAY = "brainsmith.plugins, brainsmith.plugin, brainsmith.plugin.lifecycle"
FRAMEWORKS = ("qonnx", "onnx", "numpy", "finn", "torch", "yaml")
# Each costs milliseconds at start-up; annotations name them under ``TYPE_CHECKING`` instead.
COSTLY = ("typing", "dataclasses", "json", "re", "logging", "inspect", "importlib.metadata")


@pytest.mark.parametrize("unwanted", [FRAMEWORKS, COSTLY], ids=["frameworks", "costly-stdlib"])
def test_importing_the_everyday_api_pulls_in_none_of(unwanted):
    code = (
        f"import sys, {EVERYDAY}\n"
        f"print(sorted(m for m in sys.modules if m in {unwanted!r} "
        f"or m.partition('.')[0] in {unwanted!r}))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert result.stdout.strip() == "[]"


def test_the_architecture_doc_names_real_paths_and_every_hub_module():
    """docs/architecture.md stays true: each path it names exists, and each module of the
    plugin hub and of frameworks/ is named there."""
    import re

    doc = (PACKAGE.parent / "docs" / "architecture.md").read_text()
    named = set(
        re.findall(
            r"`((?:plugin|frameworks|builder|report|report_schema|planning|commands|hardware|dse|steps|intake)/[\w/]*(?:\.py)?)`",
            doc,
        )
    )
    missing = sorted(path for path in named if not (PACKAGE / path).exists())
    assert missing == [], f"docs/architecture.md names paths that do not exist: {missing}"
    words = set(re.findall(r"[\w]+(?=\.py\b)|[\w]+(?=/)", doc)) | set(re.findall(r"\b\w+\b", doc))
    modules = [
        path
        for folder in ("plugin", "frameworks")
        for path in (PACKAGE / folder).rglob("*.py")
        if path.name != "__init__.py"
    ]
    unnamed = sorted(str(p.relative_to(PACKAGE)) for p in modules if p.stem not in words)
    assert unnamed == [], f"docs/architecture.md does not mention: {unnamed}"


def documented_layers() -> list[list[str]]:
    """The layers of docs/architecture.md's import diagram, top first: each a list of module
    paths relative to brainsmith/ (``cli/`` a folder, ``plugin/manager`` a module)."""
    doc = (PACKAGE.parent / "docs" / "architecture.md").read_text()
    block = doc.split("Imports only go down these layers", 1)[1].split("```")[1]
    layers = []
    for line in block.strip("\n").splitlines():
        names = line.strip().split("  ", 1)[0]
        layers.append([name.strip() for name in names.split(",")])
    return layers


def layer_of(module: str, layers: list[list[str]]) -> int | None:
    """The index of the most specific documented entry covering ``module``."""
    path = module.removeprefix("brainsmith").lstrip(".").replace(".", "/") or "__init__"
    best: tuple[int, int] | None = None  # (specificity, layer)
    for number, layer in enumerate(layers):
        for entry in layer:
            folder = entry.endswith("/")
            hit = f"{path}/".startswith(entry) if folder else entry in (path, f"{path}/__init__")
            if hit and (best is None or len(entry) > best[0]):
                best = (len(entry), number)
    return None if best is None else best[1]


def test_imports_go_down_the_documented_layers_only():
    """Not only no cycle: every import (inside functions too, and for annotations only) goes
    to the same or a lower layer of docs/architecture.md, and every module is in a layer."""
    layers = documented_layers()
    graph = import_graph(annotations=True)
    unplaced = sorted(m for m in graph if layer_of(m, layers) is None)
    assert unplaced == [], f"modules in no layer of docs/architecture.md: {unplaced}"
    upward = sorted(
        f"{a} -> {b}"
        for a, targets in graph.items()
        for b in targets
        if layer_of(b, layers) < layer_of(a, layers)  # a lower index is a higher layer
    )
    assert upward == [], "imports that go up the layers:\n" + "\n".join(upward)


def commands_importing_commands(graph: dict[str, set[str]]) -> list[str]:
    """``a -> b`` for each module ``a`` of ``commands/`` importing another, ``b``, of it."""
    inside = "brainsmith.commands."
    return sorted(
        f"{a} -> {b}"
        for a, targets in graph.items()
        if a.startswith(inside)
        for b in targets
        if b.startswith(inside)
    )


def test_no_command_imports_another_command():
    """Each module of ``commands/`` is one command: what two of them share lives below them
    (``intake/build_folder.py``), not in one of them."""
    found = commands_importing_commands(import_graph(annotations=True))
    assert found == [], "commands importing commands:\n" + "\n".join(found)


def test_the_command_check_finds_a_command_importing_another():
    graph = {
        "brainsmith.commands.flash": {"brainsmith.commands.synthesis", "brainsmith.files"},
        "brainsmith.commands": {"brainsmith.commands.flash"},
        "brainsmith.cli.flash": {"brainsmith.commands.flash"},
    }
    found = commands_importing_commands(graph)
    assert found == ["brainsmith.commands.flash -> brainsmith.commands.synthesis"]


def test_the_layer_check_finds_an_import_that_goes_up():
    layers = [["cli/"], ["builder/"], ["plugin/manager", "plugin/registry"], ["errors"]]
    assert [layer_of(m, layers) for m in ("brainsmith.cli.build", "brainsmith.errors")] == [0, 3]
    assert layer_of("brainsmith.plugin.registry", layers) == 2
    assert layer_of("brainsmith.plugin.spec", layers) is None
    assert layer_of("brainsmith.builder", layers) == 1  # the package itself


def _fact_literals(tree: ast.AST) -> list[tuple[int, str]]:
    """FINN's hardware domain as a string and the resource keys as a tuple or list, where
    written (a plugin's ``domain=`` declaration, read as data before import, aside)."""
    declared = {
        id(keyword.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        for keyword in node.keywords
        if keyword.arg == "domain"
    }
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if node.value.startswith("finn.custom_op.fpgadataflow") and id(node) not in declared:
                found.append((node.lineno, node.value))
        elif isinstance(node, ast.Tuple | ast.List):
            words = {e.value for e in node.elts if isinstance(e, ast.Constant)}
            if {"LUT", "BRAM_18K", "URAM", "DSP"} <= words:
                found.append((node.lineno, "the resource keys"))
    return found


def test_finns_domains_and_resource_keys_are_defined_once_in_frameworks_finn():
    home = PACKAGE / "frameworks" / "finn"
    elsewhere = {
        f"{path.relative_to(PACKAGE.parent)}:{line}": what
        for path in PACKAGE.rglob("*.py")
        if home not in path.parents
        for line, what in _fact_literals(ast.parse(path.read_text()))
    }
    assert elsewhere == {}, "import them from brainsmith.frameworks.finn.facts"
    inside = {
        f"{path.name}:{line}": what
        for path in home.rglob("*.py")
        if path.name != "facts.py"
        for line, what in _fact_literals(ast.parse(path.read_text()))
    }
    assert inside == {}, "define them in brainsmith/frameworks/finn/facts.py only"


def test_the_build_pipeline_picture_is_drawn_from_the_code(hub):
    """docs/architecture.md's build pipeline is what ``scripts.pipeline_picture`` draws from
    the default blueprint's plan today (run it after changing the steps)."""
    from scripts.pipeline_picture import DOC, block

    assert block() in DOC.read_text(), "run: python -m scripts.pipeline_picture"
