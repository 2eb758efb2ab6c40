"""brainsmith explore on a real Dask cluster: a ``dask scheduler`` and ``dask worker``
processes on the loopback interface, started and always torn down by the test; the
distributed run must give the same results as the local one."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

import brainsmith
from brainsmith.dse import ExploreError
from tests.support.cluster import dask_cluster

REPO = Path(__file__).resolve().parents[1]
MLP = str(REPO / "examples" / "models" / "mlp_4bit.onnx")
SPACE = f"""\
name: mlp_cluster
extends: {REPO / "blueprints" / "mlp.yaml"}
build: {{size_fifos: false}}  # FINN's FIFO depths: the sizing is test_fifo_sizing's
design_space:
  backends: {{matmul: [rtl, hls]}}
  build: {{target_fps: [100000, 1000000]}}
"""

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("explore")]


@pytest.fixture
def cluster(tmp_path):
    """A scheduler and two single-threaded workers on 127.0.0.1; yields the address and
    the scheduler file."""
    with dask_cluster(tmp_path) as found:
        yield found


def test_a_real_cluster_gives_the_same_results_as_the_local_run(cluster, tmp_path):
    address, _ = cluster
    space = tmp_path / "space.yaml"
    space.write_text(SPACE)
    remote = brainsmith.explore(MLP, str(space), str(tmp_path / "remote"), scheduler=address)
    local = brainsmith.explore(MLP, str(space), str(tmp_path / "local"), workers=0)
    assert remote.data["executor"] == {"executor": "dask", "scheduler": address, "workers": 2}
    assert [v["status"] for v in remote.variants] == ["ok"] * 4
    metrics = {v["id"]: v["metrics"] for v in remote.variants}
    assert metrics == {v["id"]: v["metrics"] for v in local.variants}
    assert [v["id"] for v in remote.pareto] == [v["id"] for v in local.pareto]
    assert remote.data["segments_run"] == local.data["segments_run"] == 7
    # Every segment ran on a worker of the cluster (which ones is the scheduler's choice: it
    # keeps a shared segment's children beside its checkpoint when that is faster).
    workers = {s["worker"] for s in remote.data["segments"]}
    assert workers and all(w.startswith("tcp://127.0.0.1:") for w in workers), workers


def test_the_scheduler_file_names_the_cluster_too(cluster, tmp_path):
    _, info = cluster
    space = tmp_path / "space.yaml"
    space.write_text(SPACE.replace("[100000, 1000000]", "[100000]").replace("[rtl, hls]", "[rtl]"))
    result = brainsmith.explore(MLP, str(space), str(tmp_path / "out"), scheduler=str(info))
    assert [v["status"] for v in result.variants] == ["ok"]


def test_an_unreachable_scheduler_is_a_clear_error(tmp_path):
    space = tmp_path / "space.yaml"
    space.write_text(SPACE)
    began = time.monotonic()
    with pytest.raises(ExploreError) as caught:
        brainsmith.explore(MLP, str(space), str(tmp_path / "out"), scheduler="tcp://127.0.0.1:9")
    assert caught.value.exit_code == 2
    assert "cannot reach the Dask scheduler at tcp://127.0.0.1:9" in caught.value.reason
    assert "nothing listens at that port" in caught.value.reason  # said at once, no retries
    assert "dask scheduler" in caught.value.hint
    assert time.monotonic() - began < 60


def test_workers_and_a_scheduler_together_are_refused(tmp_path):
    with pytest.raises(ExploreError) as caught:
        brainsmith.explore(MLP, "space.yaml", str(tmp_path), workers=2, scheduler="tcp://x:1")
    assert caught.value.exit_code == 2 and "contradict" in caught.value.reason
    assert not os.listdir(tmp_path)  # refused before anything was written
