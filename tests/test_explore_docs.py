"""docs/explore.md tells the truth: its tree is what ``blueprint show`` prints, its step
table covers every step the tree knows, and its SLURM example makes a job script of
single-threaded workers."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from click.testing import CliRunner

from brainsmith.cli import cli
from brainsmith.dse.tree import STEP_INPUTS

REPO = Path(__file__).resolve().parents[1]
DOCS = (REPO / "docs" / "explore.md").read_text()


def test_the_documented_tree_is_what_show_prints():
    shown = CliRunner().invoke(
        cli, ["blueprint", "show", str(REPO / "blueprints/mlp_explore.yaml")]
    )
    comments = [line for line in shown.output.splitlines() if line.startswith("# ")]
    block = DOCS[DOCS.index("$ brainsmith blueprint show blueprints/mlp_explore.yaml") :]
    block = block[: block.index("```")]
    documented = [
        line for line in block.splitlines() if line.startswith("# ") and "..." not in line
    ]
    assert len(documented) >= 5
    for line in documented:
        assert line in comments, line


def test_the_step_table_covers_every_step_the_tree_knows():
    table = DOCS[DOCS.index("| step | reads |") :].split("\n\n")[0]
    for name in STEP_INPUTS:
        assert f"`{name.rpartition(':')[2]}`" in table, name


def test_the_slurm_example_makes_single_threaded_workers():
    from dask_jobqueue import SLURMCluster

    block = re.search(r"```python\n(from dask_jobqueue import SLURMCluster.*?)```", DOCS, re.S)[1]
    call = next(
        node
        for node in ast.walk(ast.parse(block))
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "SLURMCluster"
    )
    options = {k.arg: ast.literal_eval(k.value) for k in call.keywords}
    # the scheduler listens on loopback only: the job script is all this test looks at
    with SLURMCluster(
        **options, scheduler_options={"host": "127.0.0.1", "dashboard_address": "127.0.0.1:0"}
    ) as cluster:
        script = cluster.job_script()
    assert "--nthreads 1" in script and "--nworkers 8" in script
    assert "#SBATCH -p normal" in script and "#SBATCH -A fpga" in script
    assert "/shared/venvs/brainsmith/bin/python -m distributed.cli.dask_worker" in script


def test_the_python_example_guards_its_call_for_the_workers():
    block = re.search(r"```python\n(import brainsmith\n.*?)```", DOCS, re.S)[1]
    tree = ast.parse(block)
    guard = next(node for node in tree.body if isinstance(node, ast.If))
    assert ast.unparse(guard.test) == "__name__ == '__main__'"
    calls = [n for n in ast.walk(guard) if isinstance(n, ast.Call)]
    assert any(ast.unparse(c.func) == "brainsmith.explore" for c in calls)


def test_an_unguarded_script_is_refused_in_its_workers_with_the_fix(tmp_path):
    """Run as a script without the guard, each starting worker would run the exploration
    again; it is refused there, and the script fails with the fix instead of Dask's
    "Nanny failed to start"."""
    import subprocess
    import sys

    script = tmp_path / "explore_mlp.py"
    script.write_text(
        "import brainsmith\n"
        f"brainsmith.explore({str(REPO / 'examples/models/mlp_4bit.onnx')!r}, "
        f"{str(REPO / 'blueprints/mlp_explore.yaml')!r}, 'out', workers=1)\n"
    )
    done = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert done.returncode != 0
    assert f"each worker of the local cluster runs {script} again" in done.stderr
    assert 'if __name__ == "__main__":' in done.stderr.splitlines()[-1]
    assert "ExploreError: the local cluster's worker processes did not start" in done.stderr
    assert not (tmp_path / "out" / "explore.json").exists()
