"""Races: 8 processes x 16 threads discover, load and instantiate at once from a cold cache."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from brainsmith.plugin import memo

PROCESSES = 8
THREADS = 16

COUNTED = """
import threading
from qonnx.transformation.base import Transformation
from brainsmith.plugin.core import transform
from race_helpers import RaceHelper

CREATED = []
_lock = threading.Lock()


@transform(name="RaceCounted")
class RaceCounted(Transformation):
    def __init__(self, factor=1):
        super().__init__()
        self.factor = factor
        with _lock:
            CREATED.append(factor)

    def apply(self, model):
        return RaceHelper().apply(model)
"""
HELPERS = """
from qonnx.transformation.base import Transformation
from brainsmith.plugin.core import kernel, step, transform


@transform(name="RaceHelper")
class RaceHelper(Transformation):
    def apply(self, model):
        return model, False


@kernel(name="RaceKernel")
class RaceKernel:
    pass


@step(name="race_step")
def race_step(model, cfg):
    return model
"""

WORKER = """
import hashlib, json, os, sys, threading
from brainsmith.plugin.manager import get_plugin_manager
from brainsmith.plugins import transforms

WANTED = [
    ("transform", "RaceCounted", {}),
    ("transform", "RaceCounted", {"factor": 2}),
    ("transform", "RaceHelper", {}),
    ("kernel", "RaceKernel", {}),
    ("step", "race_step", {}),
    ("transform", "qonnx:FoldConstants", {}),
    ("transform", "finn:Streamline", {}),
    ("transform", "finn:MinimizeAccumulatorWidth", {}),
]
manager = get_plugin_manager()
barrier = threading.Barrier(THREADS)
lock = threading.Lock()
keep, errors, listings, seen, classes = [], [], set(), {}, {}


def work(index):
    try:
        barrier.wait(timeout=120)
        registry = manager.registry()  # every thread races the first discovery
        rows = sorted([s.type, s.qualified_name, s.target] for s in registry.specs())
        listing = hashlib.sha256(json.dumps(rows).encode()).hexdigest()
        turn = index % len(WANTED)
        for plugin_type, name, kwargs in WANTED[turn:] + WANTED[:turn]:
            instance = manager.get_instance(plugin_type, name, **kwargs)
            key = f"{plugin_type} {name} {sorted(kwargs.items())}"
            made = instance if plugin_type == "step" else type(instance)
            with lock:
                keep.append(instance)  # the instance cache is weak: keep them alive
                seen.setdefault(key, set()).add(id(instance))
                classes.setdefault(key, set()).add(f"{made.__module__}:{made.__qualname__}")
        assert transforms.RaceHelper is registry.get("transform", "RaceHelper")
        with lock:
            listings.add(listing)
    except BaseException as exc:
        with lock:
            errors.append(f"{type(exc).__name__}: {exc}")


threads = [threading.Thread(target=work, args=(i,), daemon=True) for i in range(THREADS)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join(timeout=JOIN)
created = sys.modules["race_counted"].CREATED if "race_counted" in sys.modules else []
print(json.dumps({
    "hung": sum(t.is_alive() for t in threads),
    "errors": errors,
    "listings": sorted(listings),
    "instances": {key: len(ids) for key, ids in sorted(seen.items())},
    "classes": {key: sorted(names) for key, names in sorted(classes.items())},
    "created": sorted(created),
}))
sys.stdout.flush()
os._exit(0)  # a hung thread must not keep the process alive
"""


@pytest.fixture
def race_folder(plugin_folder):
    plugin_folder("race_counted.py", COUNTED)
    plugin_folder("race_helpers.py", HELPERS)
    return plugin_folder.folder


def run_processes(count: int, join: int) -> list[dict]:
    code = f"THREADS = {THREADS}\nJOIN = {join}\n" + textwrap.dedent(WORKER)
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=os.environ,
        )
        for _ in range(count)
    ]
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=join + 120)
        assert proc.returncode == 0, err
        results.append(json.loads(out.strip().splitlines()[-1]))
    return results


@pytest.mark.cold_cache
def test_processes_and_threads_racing_from_a_cold_cache_all_agree(race_folder):
    results = run_processes(PROCESSES, join=240)
    assert [r["hung"] for r in results] == [0] * PROCESSES, "deadlock: threads still running"
    assert [e for r in results for e in r["errors"]] == []
    listings = {digest for r in results for digest in r["listings"]}
    assert len(listings) == 1, "threads or processes saw different registries"
    assert len({json.dumps(r["classes"]) for r in results}) == 1
    for result in results:
        assert set(result["instances"].values()) == {1}, result["instances"]
        assert result["created"] == [1, 2]  # one RaceCounted per argument set
    directory = os.environ["BRAINSMITH_CACHE_DIR"]
    for name in os.listdir(directory):
        assert name.endswith(".bsm"), f"left behind: {name}"
        path = os.path.join(directory, name)
        with open(path, "rb") as handle:
            assert memo.decode(handle.read(), path) is not None, f"damaged: {name}"
