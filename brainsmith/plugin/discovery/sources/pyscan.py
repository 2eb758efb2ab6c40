"""Read what a Python file defines without importing it: classes, their bases, imports,
decorated plugins and literal registry assignments. Results are plain data (cacheable)."""

from __future__ import annotations

import ast

from brainsmith.plugin.metadata import first_doc_line

TYPE_CHECKING = False
if TYPE_CHECKING:
    from brainsmith.plugin.discovery.sources import ModuleFacts


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


def scan_tree(tree: ast.Module, module: str, is_package: bool) -> ModuleFacts:
    """Classes (with resolved bases), functions, imports and decorated plugins of a module."""
    imports = _imports(tree, module, is_package)
    classes: dict[str, list[object]] = {}
    functions: dict[str, list[object]] = {}
    plugins: list[list[object]] = []
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            bases = [b for b in (dotted(base, imports, module) for base in node.bases) if b]
            classes[node.name] = [bases, node.lineno, first_doc_line(ast.get_docstring(node))]
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            functions[node.name] = [node.lineno, first_doc_line(ast.get_docstring(node))]
        else:
            continue
        plugins += _plugins(node, imports, module)
    return {
        "module": module,
        "imports": imports,
        "classes": classes,
        "functions": functions,
        "plugins": plugins,
    }


def _plugins(
    node: ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef,
    imports: dict[str, str],
    module: str,
) -> list[list[object]]:
    """``[type, name, kind, line, keywords, error, first doc line]`` per plugin decorator."""
    kind = "class" if isinstance(node, ast.ClassDef) else "function"
    found: list[list[object]] = []
    for decorator in node.decorator_list:
        plugin = _plugin_decorator(decorator, imports, module)
        if plugin is not None:
            plugin_type, kwargs, error = plugin
            doc = first_doc_line(ast.get_docstring(node))
            found.append([plugin_type, node.name, kind, decorator.lineno, kwargs, error, doc])
    return found


def _imports(tree: ast.Module, module: str, is_package: bool) -> dict[str, str]:
    """Local name -> dotted target for module-level imports (also inside ``if``/``try``)."""
    table: dict[str, str] = {}
    _visit(tree.body, module if is_package else module.rpartition(".")[0], table)
    return table


def _visit(body: list[ast.stmt], package: str, table: dict[str, str]) -> None:
    """Enter the imports of ``body`` (and of the ``if``/``try`` blocks in it) in ``table``."""
    for node in body:
        if isinstance(node, ast.Import):
            table.update(_plain_import(node))
        elif isinstance(node, ast.ImportFrom):
            table.update(_from_import(node, package))
        elif isinstance(node, ast.If | ast.Try):
            _visit(node.body, package, table)
            for handler in getattr(node, "handlers", []):
                _visit(handler.body, package, table)
            _visit(node.orelse, package, table)


def _plain_import(node: ast.Import) -> dict[str, str]:
    """``import a.b as c`` binds ``c`` to ``a.b``; ``import a.b`` binds ``a``."""
    table: dict[str, str] = {}
    for alias in node.names:
        head = alias.name.partition(".")[0]
        table[alias.asname or head] = alias.name if alias.asname else head
    return table


def _from_import(node: ast.ImportFrom, package: str) -> dict[str, str]:
    """``from base import name as local``: local -> ``base.name`` (``*`` binds nothing known)."""
    base = _from_base(node, package)
    return {a.asname or a.name: f"{base}.{a.name}" for a in node.names if a.name != "*"}


def _from_base(node: ast.ImportFrom, package: str) -> str:
    """The module a ``from`` import reads, relative ones resolved against ``package``."""
    if not node.level:
        return node.module or ""
    parts = package.split(".")
    if node.level > 1:
        parts = parts[: len(parts) - (node.level - 1)]
    return ".".join(p for p in [*parts, node.module or ""] if p)


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
    expr: ast.expr, imports: dict[str, str], module: str
) -> tuple[str, dict[str, object], str | None] | None:
    """``(plugin type, keywords, error)`` of a plugin decorator; None for any other."""
    call = expr if isinstance(expr, ast.Call) else None
    name = dotted(call.func if call else expr, imports, module)
    plugin_type = DECORATOR_TARGETS.get(name or "")
    if plugin_type is None:
        return None
    if call is None:
        return plugin_type, {}, None
    kwargs, error = _keywords(call, plugin_type)
    return plugin_type, kwargs, error


def _keywords(call: ast.Call, plugin_type: str) -> tuple[dict[str, object], str | None]:
    """The literal keywords of a decorator call, and why it cannot be read (the last reason)."""
    kwargs: dict[str, object] = {}
    error = f"@{plugin_type} takes keyword arguments only" if call.args else None
    for keyword in call.keywords:
        if keyword.arg is None:
            error = (
                f"@{plugin_type}(**...) cannot be read without importing; spell the keywords out"
            )
            continue
        try:
            kwargs[keyword.arg] = ast.literal_eval(keyword.value)
        except ValueError:
            error = (
                f"@{plugin_type} keyword '{keyword.arg}' must be a literal value "
                "so the plugin can be discovered without importing its module"
            )
    return kwargs, error
