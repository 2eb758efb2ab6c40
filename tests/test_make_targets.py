"""Every ``make TARGET`` the docs and the code name is a target of the Makefile, and the
targets a new user reaches for do what the README says."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
NAMED = re.compile(r"`make ([a-z][a-z-]*)|\(make ([a-z][a-z-]*)\)|: make ([a-z][a-z-]*)\)")


def targets() -> set[str]:
    text = (REPO / "Makefile").read_text()
    return set(re.findall(r"^([a-z][a-z-]*):", text, re.M))


def named() -> dict[str, set[str]]:
    """target -> the files that name it."""
    found: dict[str, set[str]] = {}
    files = [REPO / "README.md", *(REPO / "docs").glob("*.md")]
    files += [*(REPO / "examples").glob("*.py"), *(REPO / "scripts").glob("*.py")]
    for path in files:
        for match in NAMED.finditer(path.read_text()):
            target = next(group for group in match.groups() if group)
            found.setdefault(target, set()).add(str(path.relative_to(REPO)))
    return found


def test_every_make_target_named_in_docs_and_examples_exists():
    mentioned = named()
    assert {"models", "dist", "demo", "test"} <= set(mentioned)
    missing = {target: sorted(files) for target, files in mentioned.items()}
    assert {t: f for t, f in missing.items() if t not in targets()} == {}


def test_readme_lists_the_models_and_dist_targets():
    other = (REPO / "README.md").read_text().split("Other targets:", 1)[1].split("\n\n")[0]
    assert "`make models`" in other and "`make dist`" in other


@pytest.mark.parametrize(
    ("target", "commands"),
    [
        ("models", ["-m examples.make_models", "-m examples.brevitas_models", "-m examples.zoo"]),
        ("dist", ["-m scripts.dist"]),
    ],
)
def test_target_runs_its_entry_points(target, commands):
    dry = subprocess.run(
        ["make", "-n", target, "BOOT=true"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout
    assert [c for c in commands if c not in dry] == []


def test_models_exports_only_the_zoo_networks_named():
    dry = subprocess.run(
        ["make", "-n", "models", "BOOT=true", "ZOO=tfc_w1a1 kws_conv1d"],
        cwd=REPO, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert "-m examples.zoo tfc_w1a1 kws_conv1d" in dry


@pytest.mark.parametrize(
    ("target", "says"),
    [("browser", "chromium"), ("simulator", "Verilator"), ("redis", "redis-server")],
)
def test_a_tool_target_says_in_one_line_what_it_checked(target, says):
    """``make browser``, ``simulator`` and ``redis`` check (and install) a tool: one line
    says which, and which version, is there."""
    user = {k: v for k, v in os.environ.items() if k not in ("MAKELEVEL", "MAKEFLAGS", "MFLAGS")}
    result = subprocess.run(  # as from a terminal, not inside make test (no "Entering directory")
        ["make", target], cwd=REPO, capture_output=True, text=True, timeout=900, env=user
    )
    assert result.returncode == 0, result.stderr
    assert len(result.stdout.splitlines()) == 1 and says in result.stdout, result.stdout
