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
