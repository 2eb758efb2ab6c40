"""Read what a Python file defines without importing it: classes, their bases, imports,
decorated plugins and literal registry assignments. Results are plain data (cacheable)."""

from __future__ import annotations

import ast

from brainsmith.plugin.metadata import first_doc_line

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


DECORATOR_TARGETS = {
    f"{module}.{name}": name
    for module in ("brainsmith.plugin.core", "brainsmith.plugin.decorators", "brainsmith.plugin")
    for name in ("transform", "kernel", "backend", "step")
}


def module_name_for(relpath: str) -> str:
    """``pkg/sub/mod.py`` -> ``pkg.sub.mod``; ``pkg/__init__.py`` -> ``pkg``."""
    parts = relpath[:-3].replace("\\", "/").split("/")
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def scan_tree(tree: ast.Module, module: str, is_package: bool) -> dict[str, Any]:
    """Classes (with resolved bases), functions, imports and decorated plugins of a module."""
    imports = _imports(tree, module, is_package)
    classes: dict[str, list[Any]] = {}
    functions: dict[str, list[Any]] = {}
    plugins: list[list[Any]] = []
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            bases = [b for b in (dotted(base, imports, module) for base in node.bases) if b]
            classes[node.name] = [bases, node.lineno, first_doc_line(ast.get_docstring(node))]
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            functions[node.name] = [node.lineno, first_doc_line(ast.get_docstring(node))]
        else:
            continue
        for decorator in node.decorator_list:
            found = _plugin_decorator(decorator, imports, module)
            if found is not None:
                plugin_type, kwargs, error = found
                kind = "class" if isinstance(node, ast.ClassDef) else "function"
                doc = first_doc_line(ast.get_docstring(node))
                plugins.append([plugin_type, node.name, kind, decorator.lineno, kwargs, error, doc])
    return {
        "module": module,
        "imports": imports,
        "classes": classes,
        "functions": functions,
        "plugins": plugins,
    }


def _imports(tree: ast.Module, module: str, is_package: bool) -> dict[str, str]:
    """Local name -> dotted target for module-level imports (also inside ``if``/``try``)."""
    table: dict[str, str] = {}
    package = module if is_package else module.rpartition(".")[0]

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        table[alias.asname] = alias.name
                    else:
                        head = alias.name.partition(".")[0]
                        table[head] = head
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")
                    parts = parts[: len(parts) - (node.level - 1)] if node.level > 1 else parts
                    base = ".".join(p for p in [*parts, node.module or ""] if p)
                for alias in node.names:
                    if alias.name != "*":
                        table[alias.asname or alias.name] = f"{base}.{alias.name}"
            elif isinstance(node, ast.If | ast.Try):
                visit(node.body)
                for handler in getattr(node, "handlers", []):
                    visit(handler.body)
                visit(node.orelse)

    visit(tree.body)
    return table


def dotted(expr: ast.expr, imports: dict[str, str], module: str) -> str | None:
    """The fully qualified name an expression such as ``base.Transformation`` refers to."""
    parts: list[str] = []
    while isinstance(expr, ast.Attribute):
        parts.append(expr.attr)
        expr = expr.value
    if isinstance(expr, ast.Subscript):  # Generic[T] style bases
        return dotted(expr.value, imports, module)
    if not isinstance(expr, ast.Name):
        return None
    head = imports.get(expr.id, f"{module}.{expr.id}")
    return ".".join([head, *reversed(parts)])


def _plugin_decorator(
    expr: ast.expr, imports: dict[str, Any], module: str
) -> tuple[str, dict[str, Any], str | None] | None:

    call = expr if isinstance(expr, ast.Call) else None
    name = dotted(call.func if call else expr, imports, module)
    plugin_type = DECORATOR_TARGETS.get(name or "")
    if plugin_type is None:
        return None
    kwargs: dict[str, Any] = {}
    error = None
    if call is not None:
        if call.args:
            error = f"@{plugin_type} takes keyword arguments only"
        for keyword in call.keywords:
            if keyword.arg is None:
                error = f"@{plugin_type}(**...) cannot be read without importing; spell the keywords out"
                continue
            try:
                kwargs[keyword.arg] = ast.literal_eval(keyword.value)
            except ValueError:
                error = (
                    f"@{plugin_type} keyword '{keyword.arg}' must be a literal value "
                    "so the plugin can be discovered without importing its module"
                )
    return plugin_type, kwargs, error
