"""Property tests: whatever a user writes, loading it gives a Blueprint or a BlueprintError
whose problems are single ``file:line:column`` lines — never another exception.

Each test runs ``BRAINSMITH_FUZZ_EXAMPLES`` cases (200 by default; ``make fuzz`` runs 10,000).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from brainsmith.blueprint import Blueprint, BlueprintError, load_blueprint
from brainsmith.blueprint.options import BUILD_KEYS
from brainsmith.blueprint.schema import HW_KEYS, KERNEL_KEYS, PHASES, TOP_KEYS
from tests.support.fuzz import fuzz_settings
from tests.test_blueprint_support import TOY_BLUEPRINT, use_toy_registry, write

REPO = Path(__file__).resolve().parents[1]


pytestmark = pytest.mark.fuzz
FUZZ = fuzz_settings(200)


@pytest.fixture(autouse=True)
def toys(isolated_hub, tmp_path_factory, monkeypatch):
    use_toy_registry(tmp_path_factory, monkeypatch)


@pytest.fixture
def folder(tmp_path) -> Path:
    """Bases a fuzzed document can extend: valid ones, a cycle, and a folding config."""
    for path in (REPO / "blueprints").glob("*.yaml"):
        shutil.copy(path, tmp_path / path.name)
    write(tmp_path, "toy.yaml", TOY_BLUEPRINT)
    write(tmp_path, "loop_a.yaml", "extends: loop_b.yaml\n")
    write(tmp_path, "loop_b.yaml", "extends: loop_a.yaml\n")
    write(tmp_path, "folding.json", "{}")
    return tmp_path


def outcome(path: Path) -> Blueprint | None:
    """Load ``path``; a BlueprintError must carry one-line problems that name a file."""
    try:
        return load_blueprint(path)
    except BlueprintError as exc:
        assert exc.problems
        for problem in exc.problems:
            line = str(problem)
            assert "\n" not in line and "\r" not in line, line
            assert line.startswith(problem.file) and problem.line >= 0 and problem.column >= 0
        return None


# -- what documents are made of ----------------------------------------------------------------

KEYS = sorted({*TOP_KEYS, *HW_KEYS, *KERNEL_KEYS, *PHASES, *BUILD_KEYS, "<<", "mid_hw"})
NAMES = [
    "ToyMatMul",
    "toymatmul",
    "ToySoftmax",
    "gemm",
    "Gemm",
    "ToyExpand",
    "ToyTidy",
    "toy_first",
    "finn:Streamline",
    "FINN:streamline",
    "finn:MVAU",
    "Thresholding",
    "qonnx:FoldConstants",
    "matmul",
    "softmax",
    "LayerNorm",
    "ExpandNorms",
    "cleanup",
    "hls",
    "rtl",
    "HLS",
    "MatMulRTL",
    "ToyMatMulRTL",
    "ToySoftmaxHLS",
    "finn:MVAU_hls",
    "~ToyExpand",
    "~nothing",
    "~",
    "",
    "os:system",
    "my.module.Class",
    "a:b:c",
    ":x",
    "x:",
    "../base.yaml",
    "~os.path:join",
]
FILES = [
    "base.yaml",
    "mlp.yaml",
    "toy.yaml",
    "loop_a.yaml",
    "doc.yaml",
    "missing.yaml",
    "folding.json",
    ".",
    "",
    "/dev/null",
    "/",
    "a\x00b",
    "../" * 40 + "x.yaml",
]


def _hashable(value: object) -> bool:
    return not isinstance(value, float) or value == value  # NaN keys never compare equal


scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**80), max_value=2**80),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(NAMES + FILES + ["final", "each", "none", "1e6", "5.0", "Pynq-Z1"]),
    st.text(max_size=20),
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.sampled_from(KEYS) | scalars.filter(_hashable), inner, max_size=4)
    ),
    max_leaves=16,
)


names = st.sampled_from(NAMES) | st.text(max_size=12)
name_lists = st.lists(names, max_size=5) | values
kernel_entries = names | st.fixed_dictionaries(
    {}, optional={"kernel": names | values, "backends": name_lists, "extra": values}
)
hw_sections = st.fixed_dictionaries(
    {},
    optional={
        "kernels": st.lists(kernel_entries, max_size=4) | values,
        "transforms": name_lists,
        "transforms_phased": st.dictionaries(
            st.sampled_from(["pre_hw", "post_hw", "mid_hw"]), name_lists, max_size=3
        )
        | values,
    },
)
build_values = {
    "fpga_part": st.sampled_from(["xc7z020clg400-1", "", None]) | values,
    "board": st.sampled_from(["Pynq-Z1", "U250"]) | values,
    "clock_ns": st.floats(allow_nan=True, allow_infinity=True) | st.integers() | values,
    "target_fps": st.integers() | values,
    "verify": st.sampled_from(["each", "final", "none", "Final"]) | values,
    "verify_samples": st.integers() | values,
    "folding_config": st.sampled_from(FILES) | values,
    "specialize_config": st.sampled_from(FILES) | values,
    "output_dir": st.sampled_from(FILES) | values,
}
blueprints = st.fixed_dictionaries(
    {},
    optional={
        "name": st.sampled_from(["mlp", "my model", "", "x" * 101]) | values,
        "description": st.text(max_size=30) | values,
        "extends": st.sampled_from(FILES) | values,
        "hw_compiler": hw_sections | values,
        "steps": name_lists,
        "build": st.fixed_dictionaries({}, optional=build_values) | values,
        "stray": values,
    },
)


# -- properties --------------------------------------------------------------------------------


@FUZZ
@given(document=values)
def test_any_yaml_value_gives_a_blueprint_or_a_blueprint_error(folder, document):
    outcome(write(folder, "doc.yaml", yaml.safe_dump(document)))


@FUZZ
@given(document=blueprints)
def test_blueprint_shaped_documents_give_a_blueprint_or_a_blueprint_error(folder, document):
    outcome(write(folder, "doc.yaml", yaml.safe_dump(document)))


@FUZZ
@given(document=blueprints)
def test_a_loaded_blueprint_shows_as_a_blueprint_that_loads_the_same(folder, document):
    loaded = outcome(write(folder, "doc.yaml", yaml.safe_dump(document)))
    if loaded is not None:
        # beside the original: its paths are absolute now, and must stay inside the project
        shown = write(folder, "shown.yaml", yaml.safe_dump(loaded.to_dict()))
        assert load_blueprint(shown).to_dict() == loaded.to_dict()


MUTATIONS = ["!!python/name:os.system ", "&a ", "*a", "<<: ", "  ", "\x00", "\ufeff", "é"]
SEEDS = [TOY_BLUEPRINT, *(p.read_text() for p in sorted((REPO / "blueprints").glob("*.yaml")))]
edits = st.lists(
    st.tuples(
        st.integers(min_value=0, max_value=4000),
        st.sampled_from(["insert", "delete", "replace"]),
        st.sampled_from([*":-[]{}~!&*#|>'\"%@,?\n\t \\", *MUTATIONS]) | st.text(max_size=3),
    ),
    min_size=1,
    max_size=8,
)


@FUZZ
@given(seed=st.sampled_from(SEEDS), changes=edits)
def test_mutated_blueprint_text_gives_a_blueprint_or_a_blueprint_error(folder, seed, changes):
    text = seed
    for position, operation, chunk in changes:
        at = position % (len(text) + 1)
        if operation == "insert":
            text = text[:at] + chunk + text[at:]
        elif operation == "delete":
            text = text[:at] + text[at + len(chunk) + 1 :]
        else:
            text = text[:at] + chunk + text[at + len(chunk) :]
    (folder / "doc.yaml").write_text(text, encoding="utf-8", errors="surrogatepass")
    outcome(folder / "doc.yaml")


@FUZZ
@given(data=st.binary(max_size=200) | st.text(max_size=200).map(str.encode))
def test_arbitrary_bytes_give_a_blueprint_or_a_blueprint_error(folder, data):
    (folder / "doc.yaml").write_bytes(data)
    outcome(folder / "doc.yaml")


@FUZZ
@given(
    links=st.lists(st.sampled_from([*range(5), None, "missing", "self"]), min_size=5, max_size=5)
)
def test_any_extends_graph_gives_a_blueprint_or_a_blueprint_error(folder, links):
    for index, target in enumerate(links):
        text = "steps: [toy_first]\n"
        if target == "self":
            text += f"extends: g{index}.yaml\n"
        elif target == "missing":
            text += "extends: nowhere/g.yaml\n"
        elif target is not None:
            text += f"extends: g{target}.yaml\n"
        write(folder, f"g{index}.yaml", text)
    outcome(folder / "g0.yaml")
