"""The shape of the code: size, complexity, typing and imports of each package of brainsmith.

    .venv/bin/python -m benchmarks.house [--label after]

Per package folder (its own .py files, subfolders counted as packages of their own): lines,
functions (methods and nested functions included), mean cyclomatic complexity and the share of
functions over 10 (McCabe, as radon counts it), whether mypy checks it strictly (pyproject's
strict overrides), ``Any`` in annotations, ``# type: ignore`` comments, and the share of
imports written inside a function. Writes benchmarks/results/house.json (one entry per label;
others kept) and its section of benchmarks/RESULTS.md. Reads files only: no load to record.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import subprocess
import time
import tomllib
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from radon.complexity import cc_visit
from radon.visitors import Function

from benchmarks.first_hour import update_results
from benchmarks.machine import machine_info

HERE = Path(__file__).resolve().parent
PACKAGE = HERE.parent / "brainsmith"
RESULT = HERE / "results" / "house.json"
HEADING = "## The shape of the code (python -m benchmarks.house)"
IGNORE = re.compile(r"#\s*type:\s*ignore")


@dataclass
class Figures:
    """One package's (or the whole tree's) figures."""

    lines: int = 0
    complexities: list[int] = field(default_factory=list)
    imports: int = 0
    imports_inside: int = 0
    any_annotations: int = 0
    type_ignores: int = 0
    strict_lines: int = 0

    def add(self, other: Figures) -> None:
        self.lines += other.lines
        self.complexities += other.complexities
        self.imports += other.imports
        self.imports_inside += other.imports_inside
        self.any_annotations += other.any_annotations
        self.type_ignores += other.type_ignores
        self.strict_lines += other.strict_lines

    def summary(self) -> dict[str, float | int]:
        count = len(self.complexities)
        over = sum(c > 10 for c in self.complexities)
        return {
            "lines": self.lines,
            "functions": count,
            "mean_complexity": round(sum(self.complexities) / count, 2) if count else 0.0,
            "over_10": over,
            "over_10_percent": round(100 * over / count, 1) if count else 0.0,
            "any_annotations": self.any_annotations,
            "type_ignores": self.type_ignores,
            "imports_inside_percent": round(100 * self.imports_inside / self.imports, 1)
            if self.imports
            else 0.0,
            "strict_percent": round(100 * self.strict_lines / self.lines, 1) if self.lines else 0.0,
        }


def function_complexities(source: str) -> list[int]:
    """The complexity of every function, method and nested function of ``source``, each
    once: radon lists a module's classes and, beside them, their methods, but not the
    methods of a class inside a class."""
    found: list[int] = []
    pending = [(block, True) for block in cc_visit(source)]
    while pending:
        block, listed = pending.pop()
        if isinstance(block, Function):
            found.append(block.complexity)
            pending.extend((closure, False) for closure in block.closures)
        else:
            if not listed:  # an inner class: its methods are nowhere else
                pending.extend((method, False) for method in block.methods)
            pending.extend((inner, False) for inner in getattr(block, "inner_classes", []))
    return found


def is_any(node: ast.expr | None) -> int:
    """How many times ``Any`` is named in the annotation ``node``."""
    if node is None:
        return 0
    count = 0
    for sub in ast.walk(node):
        name = sub.id if isinstance(sub, ast.Name) else getattr(sub, "attr", None)
        if name == "Any":
            count += 1
        elif isinstance(sub, ast.Constant) and isinstance(sub.value, str):
            count += len(re.findall(r"\bAny\b", sub.value))
    return count


def annotations(tree: ast.Module) -> list[ast.expr | None]:
    """Every annotation in ``tree``: arguments, returns and annotated assignments."""
    found: list[ast.expr | None] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            arguments = node.args
            every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
            every += [a for a in (arguments.vararg, arguments.kwarg) if a]
            found += [a.annotation for a in every]
            found.append(node.returns)
        elif isinstance(node, ast.AnnAssign):
            found.append(node.annotation)
    return found


def imports_inside(tree: ast.Module) -> tuple[int, int]:
    """(imports in all, imports written inside a function) of ``tree``."""
    inside: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            inside |= {id(s) for s in ast.walk(node) if isinstance(s, ast.Import | ast.ImportFrom)}
    every = [n for n in ast.walk(tree) if isinstance(n, ast.Import | ast.ImportFrom)]
    return len(every), sum(id(n) in inside for n in every)


def strict_patterns() -> list[str]:
    """The module patterns pyproject.toml checks with mypy's strict flags."""
    config = tomllib.loads((HERE.parent / "pyproject.toml").read_text())["tool"]["mypy"]
    if config.get("strict"):
        return ["brainsmith", "brainsmith.*"]
    patterns: list[str] = []
    for override in config.get("overrides", []):
        if override.get("disallow_untyped_defs"):
            modules = override["module"]
            patterns += [modules] if isinstance(modules, str) else modules
    return patterns


def is_strict(module: str, patterns: list[str]) -> bool:
    for pattern in patterns:
        if pattern.endswith(".*") and module.startswith(pattern[:-1]):
            return True
        if module == pattern:
            return True
    return False


def file_figures(path: Path, patterns: list[str]) -> Figures:
    source = path.read_text()
    tree = ast.parse(source)
    lines = len(source.splitlines())
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
    imports, inside = imports_inside(tree)
    return Figures(
        lines=lines,
        complexities=function_complexities(source),
        imports=imports,
        imports_inside=inside,
        any_annotations=sum(is_any(a) for a in annotations(tree)),
        type_ignores=len(IGNORE.findall(source)),
        strict_lines=lines if is_strict(module, patterns) else 0,
    )


def measure() -> dict[str, dict[str, float | int]]:
    """Figures per package folder, and for the whole tree under "brainsmith/"."""
    patterns = strict_patterns()
    packages: dict[str, Figures] = defaultdict(Figures)
    whole = Figures()
    for path in sorted(PACKAGE.rglob("*.py")):
        figures = file_figures(path, patterns)
        packages[str(path.parent.relative_to(PACKAGE.parent)) + "/"].add(figures)
        whole.add(figures)
    table = {name: packages[name].summary() for name in sorted(packages)}
    return {"brainsmith/ (all)": whole.summary(), **table}


def section(runs: dict[str, dict]) -> list[str]:
    lines = [
        HEADING,
        "",
        "Measured by `python -m benchmarks.house` (reads the source; no timing, so no load to "
        "record). Per package folder, its own .py files (a subfolder is a package of its own). "
        "Complexity: McCabe's, per function, method and nested function (radon's count); "
        "strict: the share of lines mypy checks with the strict flags.",
    ]
    for label, run in runs.items():
        whole = run["packages"]["brainsmith/ (all)"]
        lines += [
            "",
            f"### {label} ({run['measured']}, {run['commit']})",
            "",
            f"All of brainsmith/: {whole['lines']:,} lines, {whole['functions']:,} functions, mean "
            f"complexity {whole['mean_complexity']}, {whole['over_10_percent']} % over 10, "
            f"{whole['strict_percent']} % of lines strict, {whole['any_annotations']} `Any` in "
            f"annotations, {whole['type_ignores']} `type: ignore`, "
            f"{whole['imports_inside_percent']} % of imports inside functions.",
            "",
            "| package | lines | functions | mean complexity | over 10 | strict | `Any` | imports inside |",
            "|---|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for name, row in run["packages"].items():
            if name == "brainsmith/ (all)" or not row["functions"]:
                continue
            lines.append(
                f"| {name} | {row['lines']:,} | {row['functions']} | {row['mean_complexity']} | "
                f"{row['over_10']} ({row['over_10_percent']} %) | {row['strict_percent']} % | "
                f"{row['any_annotations']} | {row['imports_inside_percent']} % |"
            )
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--label", default="now", help="kept beside other labels' runs")
    args = parser.parse_args()
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=HERE.parent
    ).stdout.strip()
    data = json.loads(RESULT.read_text()) if RESULT.exists() else {"runs": {}}
    data["runs"][args.label] = {
        "measured": time.strftime("%Y-%m-%d %H:%M"),
        "commit": commit or "unknown",
        "packages": measure(),
    }
    data["machine"] = machine_info()
    RESULT.write_text(json.dumps(data, indent=2) + "\n")
    lines = section(data["runs"])
    update_results(lines, HEADING)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
