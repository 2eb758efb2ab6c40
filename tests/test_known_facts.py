"""Facts shipped for the pinned QONNX and FINN releases: a cold discovery parses none of their
files, finds exactly what parsing finds, and parses any file whose content differs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from brainsmith.plugin.adapters import adapter_classes
from brainsmith.plugin.discovery.sources import package_scan

ADAPTERS = {cls.framework: cls for cls in adapter_classes()}


def plain(value):
    """As JSON holds it (tuples become lists)."""
    return json.loads(json.dumps(value))


class Unshipped:
    """The same adapter without shipped facts: parses every file."""

    @staticmethod
    def of(cls):
        return type(f"Unshipped{cls.__name__}", (cls,), {"known_facts_file": ""})


@pytest.mark.parametrize("framework", sorted(ADAPTERS))
def test_shipped_facts_are_those_of_the_installed_release_and_its_scanner(framework):
    cls = ADAPTERS[framework]
    shipped = json.loads(Path(cls.known_facts_file).read_text(encoding="utf-8"))
    assert shipped["scanner"] == cls.scanner_digest(), "run `make known-facts`"
    assert cls.known_facts(), "run `make known-facts`"
    before = package_scan.parsed_files
    with_facts = cls().scan(None)
    assert package_scan.parsed_files == before  # no file of the release parsed
    parsed = Unshipped.of(cls)().scan(None)
    assert package_scan.parsed_files - before == len(parsed["files"])
    assert plain(with_facts["files"]) == plain(parsed["files"])


def test_a_file_that_differs_from_the_release_is_parsed_and_its_new_facts_used(tmp_path):
    cls = ADAPTERS["qonnx"]
    copy = tmp_path / "qonnx"
    shutil.copytree(cls().root, copy, ignore=shutil.ignore_patterns("__pycache__"))
    edited = copy / "transformation" / "general.py"
    edited.write_text(
        edited.read_text() + "\n\nclass AddedHere(Transformation):\n    def apply(self, model):\n"
        "        return model, False\n"
    )
    adapter = cls()
    adapter.root = str(copy)
    before = package_scan.parsed_files
    state = adapter.scan(None)
    assert package_scan.parsed_files - before == 1
    facts = state["files"]["transformation/general.py"][-1]
    assert "AddedHere" in facts["classes"]
    specs, _ = adapter.specs(state, adapter.index([state]))
    assert "AddedHere" in {record[1] for record in specs}


def test_stale_or_foreign_shipped_facts_are_never_used(tmp_path):
    cls = ADAPTERS["qonnx"]
    shipped = json.loads(Path(cls.known_facts_file).read_text(encoding="utf-8"))
    stale = tmp_path / "qonnx.json"
    stale.write_text(json.dumps({**shipped, "scanner": "another scanner"}))
    assert type("Stale", (cls,), {"known_facts_file": str(stale)}).known_facts() == {}
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    assert type("Broken", (cls,), {"known_facts_file": str(broken)}).known_facts() == {}
