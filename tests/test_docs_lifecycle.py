"""docs/lifecycle.md is executable: each python block runs in a fresh interpreter."""

from __future__ import annotations

import re

import pytest

from tests.conftest import REPO, run_python

DOC = REPO / "docs" / "lifecycle.md"
BLOCK = re.compile(r"^## ([^\n]+)$|^```python\n(.*?)^```", re.S | re.M)


def blocks() -> list[tuple[str, str]]:
    found, section = [], "intro"
    for heading, code in BLOCK.findall(DOC.read_text()):
        if heading:
            section = heading.strip().lower().replace(" ", "-")
        else:
            found.append((f"{section}-{len(found)}", code))
    return found


def test_every_section_has_examples():
    sections = {name.rsplit("-", 1)[0] for name, _ in blocks()}
    assert len(blocks()) >= 8 and len(sections) == 5


@pytest.mark.parametrize(("name", "code"), blocks(), ids=[name for name, _ in blocks()])
def test_python_block_runs(name, code, tmp_path):
    result = run_python(code, cwd=tmp_path)
    assert result.returncode == 0, f"{name}:\n{code}\n{result.stderr[-3000:]}"
