"""``make test``'s workers keep each ``xdist_group`` on one worker, so a network a group's
module fixture builds is built once per run, not once per worker."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def make_test_options() -> list[str]:
    """The worker options of the Makefile's ``test`` target (``-n 2 --dist loadgroup``)."""
    line = re.search(
        r"^test:.*\n\t@\$\(PY\) -m pytest (.*)$", (REPO / "Makefile").read_text(), re.M
    )
    assert line, "the Makefile's test target runs pytest"
    words = line.group(1).split()
    options = []
    for flag in ("-n", "--dist"):
        assert flag in words, f"make test passes {flag}"
        options += [flag, words[words.index(flag) + 1]]
    return options


def test_a_group_runs_on_one_worker(tmp_path: Path):
    record = tmp_path / "workers"
    record.mkdir()
    (tmp_path / "test_grouped.py").write_text(
        textwrap.dedent(
            f"""
            import os
            import pytest

            @pytest.mark.xdist_group("one")
            @pytest.mark.parametrize("case", range(6))
            def test_case(case):
                worker = os.environ["PYTEST_XDIST_WORKER"]
                open(os.path.join({str(record)!r}, f"{{case}}-{{worker}}"), "w").close()
            """
        )
    )
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *make_test_options()],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    workers = {name.split("-", 1)[1] for name in (p.name for p in record.iterdir())}
    assert len(list(record.iterdir())) == 6
    assert len(workers) == 1, f"one group ran on workers {sorted(workers)}"
