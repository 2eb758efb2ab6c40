"""A fresh process checks the index records of brainsmith's, QONNX's and FINN's plugins when
it first needs them: a lookup checks the records of its name, a listing those of its type.
Every answer is the one a registry checked in full gives, and a bad record is still reported."""

from __future__ import annotations

import json

import pytest

from brainsmith.errors import DuplicatePluginWarning
from brainsmith.plugin.manager import get_plugin_manager
from brainsmith.plugin.spec import PluginSpec
from tests.conftest import run_python
from tests.test_reliability_cache import forge_index

COUNTS = """
import json
from brainsmith.plugins import transforms, kernels
from brainsmith.plugin.manager import get_plugin_manager
registry = get_plugin_manager().registry()
counts = {"start": registry.unchecked}
transforms.get_spec("FoldConstants")
counts["after_lookup"] = registry.unchecked
kernels.list_plugins()
counts["after_kernels"] = registry.unchecked
counts["kernel_records"] = sum(1 for s in registry.specs("kernel"))
counts["problems"] = len(registry.problems)
counts["total"] = len(registry.specs())
counts["end"] = registry.unchecked
print(json.dumps(counts))
"""


def test_a_lookup_checks_the_records_of_its_name_and_a_listing_those_of_its_type():
    counts = json.loads(run_python(COUNTS).stdout.strip().splitlines()[-1])
    assert counts["start"] == counts["total"] > 300  # none checked before the first query
    fold_constants = 1  # QONNX's: the only plugin of that name
    assert counts["after_lookup"] == counts["start"] - fold_constants
    assert counts["after_kernels"] == counts["after_lookup"] - counts["kernel_records"]
    assert counts["problems"] == 0 and counts["end"] == 0


SAME_ANSWERS = """
import json
from brainsmith.plugin.manager import get_plugin_manager
registry = get_plugin_manager().registry()
unchecked = registry.unchecked
if EAGER:
    registry.specs()
names = lambda specs: [s.framework + ":" + s.name for s in specs]
answers = {
    "unchecked_before": unchecked,
    "candidates": names(registry.candidates("kernel", "MVAU")),
    "find": registry.find("transform", "Streamline").qualified_name,
    "find_case": registry.find("kernel", "mvau").qualified_name,
    "by_target": names(registry.by_target("qonnx.transformation.fold_constants:FoldConstants")),
    "has_finn": registry.has_framework("finn"),
    "has_other": registry.has_framework("no-such-framework"),
    "frameworks": registry.frameworks(),
    "shadowed": [[a.qualified_name, b.qualified_name] for a, b in registry.shadowed()],
    "specs": sorted(names(registry.specs())),
    "problems": [p.reason for p in registry.problems],
}
print(json.dumps(answers))
"""


def test_every_query_answers_as_a_registry_checked_in_full():
    def answers(eager: bool) -> dict:
        result = run_python(SAME_ANSWERS.replace("EAGER", repr(eager)))
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout.strip().splitlines()[-1])

    lazy, eager = answers(False), answers(True)
    assert lazy.pop("unchecked_before") > 300 and eager.pop("unchecked_before") > 300
    assert lazy == eager
    assert lazy["candidates"] == ["finn:MVAU"] and lazy["has_finn"] and not lazy["has_other"]


USE_ONE = """
import json
from brainsmith.plugins import transforms, steps
from brainsmith.plugin.manager import get_plugin_manager
manager = get_plugin_manager()
transforms.get_spec("FoldConstants")
print(json.dumps({"broken": manager.health_check()["broken_plugins"],
                  "steps": steps.list_plugins()}))
"""


def test_a_bad_record_among_plugins_not_used_is_still_reported_and_left_out():
    def report() -> dict:
        result = run_python(USE_ONE)
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout.strip().splitlines()[-1])

    before = report()
    assert before["broken"] == []
    victim = {}

    def damage(payload: dict) -> None:
        record = next(r for r in payload["sources"]["finn"]["specs"] if r[0] == "step")
        record[4]["priority"] = "urgent"  # a step the lookup above does not name
        victim["name"] = record[1]

    forge_index(damage)
    after = report()
    [problem] = after["broken"]
    assert problem["plugin"] == f"step finn:{victim['name']}"
    assert "malformed index record" in problem["reason"] and "'priority'" in problem["reason"]
    assert after["steps"] == [name for name in before["steps"] if name != victim["name"]]


def test_a_plugin_added_at_run_time_does_not_take_a_discovered_name_not_yet_checked():
    registry = get_plugin_manager().registry()
    assert registry.unchecked > 0
    impostor = PluginSpec("transform", "FoldConstants", "qonnx", "my_module:FoldConstants")
    with pytest.warns(DuplicatePluginWarning, match="qonnx:FoldConstants is defined twice"):
        kept = registry.add(impostor)
    assert kept is not impostor
    assert kept.target == "qonnx.transformation.fold_constants:FoldConstants"
    assert any("qonnx:FoldConstants is defined twice" in p.reason for p in registry.problems)


def test_a_recheck_that_finds_nothing_changed_checks_no_record():
    manager = get_plugin_manager()
    registry = manager.registry()
    registry.candidates("transform", "FoldConstants")
    unchecked = registry.unchecked
    assert unchecked > 300
    changes = manager.refresh()  # what a long-running process does once per TTL
    assert not changes and registry.unchecked == unchecked
    assert registry.find("transform", "FoldConstants").framework == "qonnx"
