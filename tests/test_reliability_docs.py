"""docs/reliability.md names real tests, and every reliability test is in its tables."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO

DOC = REPO / "docs" / "reliability.md"
REFERENCE = re.compile(r"`(tests/[\w/]+\.py)::(\w+)(\[[^\]`]+\])?`")


def references() -> list[tuple[str, str, str]]:
    """(file, test function, parametrization id or "") for every test the document names."""
    return REFERENCE.findall(DOC.read_text(encoding="utf-8"))


def defined_tests(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {
        node.name
        for node in tree.body
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")
    }


def test_every_test_named_in_the_reliability_tables_exists():
    assert len(references()) > 50
    missing = [
        f"{path}::{name}"
        for path, name, _ in references()
        if not (REPO / path).is_file() or name not in defined_tests(REPO / path)
    ]
    assert missing == []


def test_every_case_named_in_the_reliability_tables_is_collected():
    cases = sorted({f"{path}::{name}{case}" for path, name, case in references() if case})
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *cases],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    collected = set(result.stdout.split())
    assert [case for case in cases if case not in collected] == []


def test_every_reliability_test_is_in_the_tables():
    named = {(path, name) for path, name, _ in references()}
    unlisted = [
        f"{path.relative_to(REPO).as_posix()}::{name}"
        for path in sorted((REPO / "tests").glob("test_reliability_*.py"))
        for name in sorted(defined_tests(path))
        if (path.relative_to(REPO).as_posix(), name) not in named
    ]
    assert unlisted == []
