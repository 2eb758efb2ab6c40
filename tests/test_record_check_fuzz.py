"""Property test: the quick path of a source's record check accepts nothing the full checks
refuse, and gives the spec they give. Records are real index records with one or two fields
or metadata entries replaced by awkward values (other types, empty, dotted, non-ASCII, paths
outside the source, unknown keys).

Each test runs ``BRAINSMITH_FUZZ_EXAMPLES`` cases (200 by default; ``make fuzz`` runs 10,000).
"""

from __future__ import annotations

import copy
import os

import pytest
from hypothesis import given
from hypothesis import strategies as st

from brainsmith.plugin.discovery.index import discover
from brainsmith.plugin.discovery.trust import SourceCheck, from_source
from brainsmith.plugin.manager import get_plugin_manager
from brainsmith.plugin.spec import PluginSpec
from tests.support.fuzz import fuzz_settings

FUZZ = fuzz_settings(200)
pytestmark = pytest.mark.fuzz

AWKWARD = st.one_of(
    st.none(),
    st.integers(-3, 1000),
    st.booleans(),
    st.lists(st.text(max_size=3), max_size=2),
    st.dictionaries(st.text(max_size=4), st.text(max_size=4), max_size=2),
    st.sampled_from(
        [
            "",
            ".",
            "a..b",
            "1abc",
            "é",
            "x" * 301,
            "transform",
            "backend",
            "finn",
            "qonnx",
            "brainsmith",
            "user",
            "Name",
            "finn:Name",
            "finn.transformation.x:Y",
            "finn.transformation..x:Y",
            "finn.1x:Y",
            "qonnx.core:Y.z",
            "qonnx.core:Y.1z",
            "brainsmith.transforms:X",
            "brainsmith.transforms.x:X",
            "brainsmith.other.x:X",
            "os:system",
            "/etc/passwd",
            "/tmp/finn/transformation/x.py",
        ]
    ),
    st.text(max_size=12),
)
KEYS = st.sampled_from(
    [
        "description",
        "line",
        "stage",
        "priority",
        "requires",
        "kernel",
        "backend_type",
        "domain",
        "op_type",
        "folding",
        "plugin_dir",
        "brainsmith_version",
        "name",
        "entry",
        "decomposes_into",
    ]
)


@pytest.fixture(scope="module")
def sources() -> list[tuple[str, dict]]:
    states = discover(get_plugin_manager().config).states
    return [(source, state) for source, state in states.items() if state.get("specs")]


def full(record: object, source: str, state: dict) -> PluginSpec | None:
    try:
        spec = PluginSpec.from_record(record)  # type: ignore[arg-type]
    except (ValueError, TypeError):
        return None
    return spec if from_source(spec, source, state, get_plugin_manager().config) else None


def test_every_plain_record_of_brainsmith_qonnx_and_finn_takes_the_quick_path(sources):
    config = get_plugin_manager().config
    checked = 0
    for source, state in sources:
        check = SourceCheck(source, state, config)
        for record in state["specs"]:
            if source in ("brainsmith", "qonnx", "finn"):
                assert check._quick(record) is not None, record
                checked += 1
    assert checked > 300


# Dotted names, each part an identifier or not, for a module or a qualname.
PART = st.sampled_from(["x", "Y", "transforms", "kernels", "steps", "other", "1z", "", "é", "a-b"])
DOTTED = st.lists(PART, min_size=1, max_size=4).map(".".join)


def moved(record: list, module: str, qualname: str, init: bool) -> None:
    """Point ``record`` at ``module:qualname`` with the file that module would be read from
    under the record's own package folder (so only the names decide)."""
    old = record[3].partition(":")[0].split(".")
    tail = os.sep.join(old[1:]) + ".py"
    if not record[5].endswith(tail):
        return  # a package's __init__.py: left as it is
    root = record[5][: -len(tail)]
    parts = module.split(".")
    path = root + os.sep.join(parts[1:])
    record[3] = f"{module}:{qualname}"
    record[5] = path + (f"{os.sep}__init__.py" if init else ".py")


@FUZZ
@given(data=st.data())
def test_the_quick_path_accepts_only_what_the_full_checks_accept(sources, data):
    source, state = data.draw(st.sampled_from(sources))
    record = copy.deepcopy(data.draw(st.sampled_from(state["specs"])))
    for _ in range(data.draw(st.integers(1, 2))):
        how = data.draw(st.sampled_from(["field", "metadata", "names"]))
        if how == "field":
            record[data.draw(st.integers(0, 5))] = data.draw(AWKWARD)
        elif how == "metadata" and isinstance(record[4], dict):
            record[4][data.draw(KEYS)] = data.draw(AWKWARD)
        elif how == "names" and isinstance(record[3], str) and isinstance(record[5], str):
            package = record[3].partition(".")[0]
            module = data.draw(DOTTED.map(lambda rest, p=package: f"{p}.{rest}" if rest else p))
            moved(record, module, data.draw(DOTTED), data.draw(st.booleans()))
    quick = SourceCheck(source, state, get_plugin_manager().config)._quick(record)
    if quick is not None:
        spec = full(record, source, state)
        assert spec is not None, record
        assert quick.as_dict() == spec.as_dict() and quick.record == spec.record
