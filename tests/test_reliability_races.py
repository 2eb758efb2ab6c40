"""Races: 8 processes x 16 threads discover, load and instantiate at once from a cold cache."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from brainsmith.plugin.settings import memo

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
counted = [m for n, m in list(sys.modules.items()) if n.rpartition(".")[2] == "race_counted"]
created = counted[0].CREATED if counted else []  # (the plugin folder is a package of its own)
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


# -- lifecycle operations racing with plugin use -------------------------------------------------

HOT = {  # a package plugin with a submodule: every load imports modules
    "__init__.py": """
import time

from hot.ops import Hot

time.sleep(0.001)  # plugins read files and start things at import: other threads run
""",
    "ops.py": """
from qonnx.transformation.base import Transformation
from brainsmith.plugin import transform


@transform(name="Hot")
class Hot(Transformation):
    def apply(self, model):
        return model, False
""",
}
LIFECYCLE = """
import json, os, random, sys, threading
sys.setswitchinterval(1e-5)
from brainsmith.plugin import PluginError, PluginNotFoundError
from brainsmith.plugin.manager import get_plugin_manager
from brainsmith.plugins import transforms
from brainsmith.plugin.lifecycle import get_plugin_info, is_plugin_loaded, list_plugins, load_plugin, reload_plugin, unload_plugin

manager = get_plugin_manager()
manager.registry()
lock = threading.Lock()
errors, outcomes = [], {}
done = threading.Event()


def note(kind):
    with lock:
        outcomes[kind] = outcomes.get(kind, 0) + 1


def change(seed):
    chooser = random.Random(seed)
    for _ in range(OPERATIONS):
        operation = chooser.choice(["load", "unload", "reload"])
        try:
            if operation == "load":
                load_plugin(PATH)
            elif operation == "unload":
                unload_plugin("hot")
            else:
                reload_plugin("hot")
            note(operation)
        except PluginNotFoundError as exc:  # unload or reload of a plugin not loaded
            note(f"{operation} refused")
        except PluginError as exc:
            if operation == "load" and "is already loaded" in str(exc):
                note(f"{operation} refused")
            else:
                with lock:
                    errors.append(f"{operation}: {type(exc).__name__}: {exc}")
        except BaseException as exc:
            with lock:
                errors.append(f"{operation}: {type(exc).__name__}: {exc}")


def use(index):
    while not done.is_set():
        try:
            if index % 4 == 0:
                transforms.Hot
            elif index % 4 == 1:
                transforms.hot.Hot
            elif index % 4 == 2:
                transforms["hot:Hot"]
            else:
                manager.get_instance("transform", "hot:Hot")
            for info in list_plugins():
                assert info.name == "hot" and info.provides == ("hot:Hot",), info
            get_plugin_info("hot")
            note("used")
        except PluginNotFoundError:
            note("not loaded")
        except BaseException as exc:
            with lock:
                errors.append(f"use: {type(exc).__name__}: {exc}")


changers = [threading.Thread(target=change, args=(i,), daemon=True) for i in range(4)]
users = [threading.Thread(target=use, args=(i,), daemon=True) for i in range(8)]
for thread in changers + users:
    thread.start()
for thread in changers:
    thread.join(timeout=JOIN)
hung = sum(t.is_alive() for t in changers)
done.set()
for thread in users:
    thread.join(timeout=30)
if is_plugin_loaded("hot"):
    unload_plugin("hot")
after = {
    "listed": "Hot" in transforms,
    "specs": [s.qualified_name for s in manager.registry().specs() if s.name == "Hot"],
    "modules": [m for m in list(sys.modules) if m.partition(".")[0] == "hot"],
}
try:
    transforms.Hot
    after["served"] = True
except PluginNotFoundError:
    after["served"] = False
try:
    load_plugin(PATH)
    after["reloads"] = transforms.Hot.__module__
    unload_plugin("hot")
except BaseException as exc:
    after["reloads"] = f"{type(exc).__name__}: {exc}"
print(json.dumps({"hung": hung, "errors": errors[:20], "outcomes": outcomes, "after": after}))
sys.stdout.flush()
os._exit(0)
"""


def test_threads_loading_unloading_reloading_a_path_plugin_while_others_use_it(tmp_path):
    path = tmp_path / "hot"
    path.mkdir()
    for name, source in HOT.items():
        (path / name).write_text(source)
    code = f"PATH = {str(path)!r}\nOPERATIONS = 150\nJOIN = 240\n" + textwrap.dedent(LIFECYCLE)
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=400
    )
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["hung"] == 0 and report["errors"] == [], report
    assert report["outcomes"].get("load", 0) > 10 and report["outcomes"].get("used", 0) > 10
    assert report["after"] == {
        "listed": False,
        "specs": [],
        "modules": [],
        "served": False,
        "reloads": "hot.ops",
    }


MANAGERS = """
import json, sys, threading
sys.setswitchinterval(1e-6)
from brainsmith.plugin import manager as hub

split = 0
for _ in range(TRIALS):
    hub.reset_plugin_system()
    barrier = threading.Barrier(8)
    made = []

    def first():
        barrier.wait()
        made.append(id(hub.get_plugin_manager()))

    threads = [threading.Thread(target=first) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    split += len(set(made)) > 1
print(json.dumps({"split": split}))
"""


def test_threads_asking_for_the_manager_at_once_get_one_manager():
    code = "TRIALS = 300\n" + textwrap.dedent(MANAGERS)
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.loads(result.stdout.strip().splitlines()[-1]) == {"split": 0}


SELF_RELOADING = """
from brainsmith.plugin.lifecycle import reload_plugin

reload_plugin("selfish")  # its own code, while it is being loaded
"""


def test_plugin_whose_own_code_reloads_it_is_refused_not_deadlocked(tmp_path):
    path = tmp_path / "selfish.py"
    path.write_text(SELF_RELOADING)
    code = f"""
import json, os, sys, threading
from brainsmith.plugin.lifecycle import is_plugin_loaded, load_plugin
outcome = []

def run():
    try:
        load_plugin({str(path)!r})
        outcome.append("loaded")
    except Exception as exc:
        outcome.append(str(exc))

thread = threading.Thread(target=run, daemon=True)
thread.start()
thread.join(60)
print(json.dumps({{"hung": thread.is_alive(), "outcome": outcome, "loaded": is_plugin_loaded("selfish")}}))
sys.stdout.flush()
os._exit(0)
"""
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
    )
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["hung"] is False and report["loaded"] is False
    assert "a plugin's own code cannot load, unload or reload it" in report["outcome"][0]


IMPORT_LOCK_WAIT = {
    "sync_events.py": """
import threading
A_RUNNING = threading.Event()
B_IMPORTING = threading.Event()
""",
    "plugin_a.py": """
import sync_events
sync_events.A_RUNNING.set()
sync_events.B_IMPORTING.wait(30)
import shared_module  # blocks on the import lock thread B holds
""",
    "shared_module.py": """
import time
import sync_events
from brainsmith.plugin.lifecycle import load_plugin
sync_events.B_IMPORTING.set()
sync_events.A_RUNNING.wait(30)
time.sleep(0.3)  # thread A is now waiting for this module
load_plugin(PLUGIN_A)  # thread A holds plugin_a: waiting here would deadlock
""",
}
TWO_THREADS = """
import json, os, sys, threading
sys.path.insert(0, FOLDER)
from brainsmith.plugin.lifecycle import load_plugin
import sync_events
outcomes = {}

def thread_a():
    try:
        load_plugin(PLUGIN_A)
        outcomes["a"] = "loaded"
    except Exception as exc:
        outcomes["a"] = f"{type(exc).__name__}: {exc}"

def thread_b():
    sync_events.A_RUNNING.wait(30)
    try:
        import shared_module
        outcomes["b"] = "imported"
    except Exception as exc:
        outcomes["b"] = f"{type(exc).__name__}: {exc}"

threads = [threading.Thread(target=f, daemon=True) for f in (thread_a, thread_b)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join(60)
print(json.dumps({"hung": sum(t.is_alive() for t in threads), "outcomes": outcomes}))
sys.stdout.flush()
os._exit(0)
"""


def test_module_level_code_waiting_for_a_plugin_another_thread_loads_is_refused(tmp_path):
    plugin_a = tmp_path / "plugin_a.py"
    for name, source in IMPORT_LOCK_WAIT.items():
        text = source.replace("PLUGIN_A", repr(str(plugin_a)))
        (tmp_path / name).write_text(text)
    code = f"FOLDER = {str(tmp_path)!r}\nPLUGIN_A = {str(plugin_a)!r}\n" + TWO_THREADS
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
    )
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["hung"] == 0, report
    assert "module-level code cannot wait for it" in report["outcomes"]["b"], report
