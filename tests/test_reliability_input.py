"""Hostile input: YAML bombs are refused fast with bounded memory, and fuzzed configuration and
blueprint files only ever raise ConfigError or BlueprintError.

The property tests run ``BRAINSMITH_FUZZ_EXAMPLES`` cases (150 by default; ``make fuzz`` runs
10,000). The blueprint loader's own property tests are in tests/test_blueprint_fuzz.py.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from hypothesis import example, given
from hypothesis import strategies as st

from brainsmith.blueprint import Blueprint, BlueprintError, load_blueprint
from brainsmith.plugin.errors import ConfigError
from brainsmith.plugin.settings.config import CONFIG_KEYS, ENV_VARS, PluginConfig, load_config
from brainsmith.safe_yaml import MAX_BYTES, MAX_DEPTH, MAX_NODES
from tests.conftest import run_python
from tests.support.fuzz import fuzz_settings
from tests.test_blueprint_support import use_toy_registry

FUZZ = fuzz_settings(150)
MAX_PEAK_GROWTH_KIB = 64 * 1024


fuzz = pytest.mark.fuzz


# -- bombs: refused quickly, in bounded memory ---------------------------------------------------


def _laughs() -> str:
    lines = ['a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for previous, name in itertools.pairwise("abcdefghij"):
        lines.append(f"{name}: &{name} [{', '.join(['*' + previous] * 9)}]")
    return "\n".join(lines) + "\n"  # 9**10 values once expanded


BOMBS = {
    "python-tag": (
        "steps: !!python/object/apply:os.system ['touch {marker}']\n",
        "tag 'tag:yaml.org,2002:python/object/apply:os.system' is not allowed",
    ),
    "billion-laughs": (_laughs(), f"more than {MAX_NODES} values"),
    "deep-nesting": ("[" * 100_000, f"nested deeper than {MAX_DEPTH} levels"),
    "huge-file": ("# " + "x" * MAX_BYTES + "\n", "file is larger than 1024 KiB"),
    "wide-list": ("x: [" + "1," * 450_000 + "1]\n", f"more than {MAX_NODES} values"),
}

PROBE = """
import json, os, time

def peak_kib():
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])

from brainsmith.blueprint import BlueprintError, load_blueprint
from brainsmith.plugin.settings.config import load_config
from brainsmith.plugin.errors import ConfigError

path = os.environ["PROBE_FILE"]
before = peak_kib()
started = time.perf_counter()
try:
    if os.environ["PROBE_LOADER"] == "blueprint":
        load_blueprint(path)
    else:
        os.environ["BRAINSMITH_CONFIG"] = path
        load_config()
    error, message = None, ""
except (BlueprintError, ConfigError) as exc:
    error, message = type(exc).__name__, str(exc)
print(json.dumps({
    "seconds": time.perf_counter() - started,
    "peak_growth_kib": peak_kib() - before,
    "error": error,
    "message": message,
}))
"""


@pytest.mark.parametrize("loader", ["blueprint", "config"])
@pytest.mark.parametrize("bomb", list(BOMBS))
def test_yaml_bomb_is_refused_quickly_in_bounded_memory(tmp_path, loader, bomb):
    marker = tmp_path / "marker"
    text, expected = BOMBS[bomb]
    path = tmp_path / f"{bomb}.yaml"
    path.write_text(text.replace("{marker}", str(marker)))
    result = run_python(PROBE, env={"PROBE_FILE": str(path), "PROBE_LOADER": loader}, timeout=60)
    assert result.returncode == 0, result.stderr[-2000:]
    outcome = json.loads(result.stdout.strip().splitlines()[-1])
    assert outcome["error"] == {"blueprint": "BlueprintError", "config": "ConfigError"}[loader]
    assert outcome["message"].startswith(str(path)) and expected in outcome["message"]
    assert outcome["peak_growth_kib"] < MAX_PEAK_GROWTH_KIB, outcome
    assert not marker.exists()


# -- what fuzzed documents are made of -----------------------------------------------------------

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**200), max_value=2**200),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=16),
    st.sampled_from(["~", "~\x00x", "\x00", "..", "/", "full", "blueprint", "*", "finn", "300"]),
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
sections = st.dictionaries(st.sampled_from([*CONFIG_KEYS, "cache_tll", ""]), values, max_size=6)
config_documents = values | st.fixed_dictionaries(
    {}, optional={"plugin_system": sections | values, "other": values}
)

FRAGMENTS = [
    "!!python/object/apply:os.system ['true'] ",
    "!!python/name:os.system ",
    "!!python/module:os ",
    "!<tag:yaml.org,2002:python/object/new:os.system> ",
    "!!binary aGk= ",
    "!!set {a, b} ",
    "!!omap [a: 1] ",
    "!!timestamp 2001-12-14 ",
    "!!float .nan ",
    "!local ",
    "%YAML 1.1\n",
    "%TAG ! tag:yaml.org,2002:python/\n",
    "---\n",
    "...\n",
    "&a ",
    "*a",
    "*missing",
    "<<: *a\n",
    "? ",
    "- ",
    ": ",
    "[",
    "]",
    "{",
    "}",
    ",",
    "'",
    '"',
    "|\n",
    ">-\n",
    "#",
    "\n",
    "\n  ",
    "\t",
    "\x00",
    "\x85",
    "\ufeff",
    "\u2028",
    "1e999",
    "0x_1",
    "-.inf",
    "~",
    "plugin_system:\n  ",
    "cache_ttl: ",
    "load_timeout: ",
    "plugin_dirs: ",
    "cache_dir: ",
    "frameworks: ",
    "name: ",
    "extends: ",
    "hw_compiler:\n  ",
    "kernels: ",
    "transforms: ",
    "steps: ",
    "build: ",
    "/dev/zero",
    "/proc/self/status",
    "..",
    "toy.yaml",
    "os:system",
    "ToyMatMul",
]
hostile_texts = st.lists(
    st.sampled_from(FRAGMENTS) | st.text(max_size=4), min_size=1, max_size=40
).map("".join)
_count = itertools.count()


def fresh_file(folder: Path, text: str) -> Path:
    """A new file per example: the config memo is keyed by path, mtime and size."""
    path = folder / f"doc{next(_count)}.yaml"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    return path


def config_outcome(path: Path, monkeypatch) -> PluginConfig | None:
    monkeypatch.setenv("BRAINSMITH_CONFIG", str(path))
    try:
        return load_config()
    except ConfigError as exc:
        assert str(exc)
        return None


def blueprint_outcome(path: Path) -> Blueprint | None:
    try:
        return load_blueprint(path)
    except BlueprintError as exc:
        assert exc.problems and all(str(p).startswith(p.file) for p in exc.problems)
        return None


# -- the configuration loader --------------------------------------------------------------------


@fuzz
@FUZZ
@given(document=config_documents)
@example(document={"plugin_system": {"cache_dir": "~\x00x"}})
@example(document={"plugin_system": {"plugin_dirs": ["a\x00b"], "cache_ttl": 10**400}})
def test_any_config_document_gives_a_config_or_a_config_error(tmp_path, monkeypatch, document):
    config_outcome(fresh_file(tmp_path, yaml.safe_dump(document)), monkeypatch)


@fuzz
@FUZZ
@given(text=hostile_texts)
@example(text="!!timestamp 2001-12-14 x\n")
def test_hostile_config_text_gives_a_config_or_a_config_error(tmp_path, monkeypatch, text):
    config_outcome(fresh_file(tmp_path, text), monkeypatch)


@fuzz
@FUZZ
@given(data=st.binary(max_size=300))
def test_arbitrary_config_bytes_give_a_config_or_a_config_error(tmp_path, monkeypatch, data):
    path = tmp_path / f"doc{next(_count)}.yaml"
    path.write_bytes(data)
    config_outcome(path, monkeypatch)


env_text = st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\x00"))
FUZZED_VARS = sorted(var for var in ENV_VARS if var != "BRAINSMITH_CACHE_DIR")  # any path goes


@fuzz
@FUZZ
@given(
    settings_=st.dictionaries(
        st.sampled_from(FUZZED_VARS),
        env_text
        | st.sampled_from(["nan", "inf", "-0", "1e999", "0x10", "TRUE", "on", "", " ", ":", "::"]),
        min_size=1,
    )
)
def test_any_environment_gives_a_config_or_a_config_error(settings_):
    with pytest.MonkeyPatch.context() as env:  # examples share the test's environment
        for var, value in settings_.items():
            env.setenv(var, value)
        try:
            load_config()
        except ConfigError as exc:
            assert any(var in str(exc) for var in settings_)


# -- the blueprint loader ------------------------------------------------------------------------


@pytest.fixture
def toy_blueprints(tmp_path_factory, monkeypatch, tmp_path) -> Path:
    """Toy plugins (shared index) and a folder with a valid base blueprint to extend."""
    use_toy_registry(tmp_path_factory, monkeypatch)
    (tmp_path / "toy.yaml").write_text("steps: [toy_first]\n")
    return tmp_path


@fuzz
@FUZZ
@given(text=hostile_texts)
@example(text="!!timestamp 2001-12-14 x\n")
def test_hostile_blueprint_text_gives_a_blueprint_or_a_blueprint_error(toy_blueprints, text):
    blueprint_outcome(fresh_file(toy_blueprints, text))


# -- plugin names in decorators ------------------------------------------------------------------

BAD_NAMES = {
    "qualified-builtin": "finn:Streamline",
    "import-path": "os:system",
    "newline": "Fold\nBias",
    "space": "Fold Bias",
    "5000-characters": "F" * 5000,
    "empty": "",
    "non-ascii": "Fáltung",
}


@pytest.mark.parametrize("case", list(BAD_NAMES))
def test_decorator_name_that_is_not_a_plain_name_is_refused(plugin_folder, case):
    from brainsmith.plugin import step
    from brainsmith.plugin.errors import PluginMetadataError
    from brainsmith.plugin.manager import get_plugin_manager

    name = BAD_NAMES[case]
    with pytest.raises(PluginMetadataError, match=r"test_reliability_input\.py:\d+: invalid @step"):

        @step(name=name)
        def named(model, cfg):
            return model

    plugin_folder(
        "named.py",
        f"from brainsmith.plugin import step\n\n@step(name={name!r})\n"
        "def named(model, cfg):\n    return model\n",
    )
    registry = get_plugin_manager().registry()
    assert [s for s in registry.specs("step") if s.target.endswith(":named")] == []
    problems = [p for p in registry.problems if p.plugin == "named"]
    assert len(problems) == 1 and "'name' must be a name such as 'FoldBias'" in problems[0].reason
    assert len(problems[0].reason) < 400


# -- blueprint files that are not YAML text --------------------------------------------------------

BYTE_PROBLEMS = {  # id -> (file content, (line, column) reported, text of the message)
    "over-1-MiB": (
        b"name: big\n" + (b"# " + b"x" * 98 + b"\n") * 10_500,
        (10_383, 86),  # byte 1 MiB: 10 + 10,381 lines of 101 bytes + 85
        "larger than 1024 KiB",
    ),
    "not-utf-8": (
        b"name: x\ndescription: caf\xe9 au lait\n",
        (2, 17),
        "not UTF-8 text (byte 0xe9)",
    ),
    "nul-byte": (b'name: x\ndescription: "\xc3\xa9t\x00"\n', (2, 17), "a NUL byte"),
}


@pytest.mark.parametrize("case", list(BYTE_PROBLEMS))
def test_blueprint_byte_level_problem_is_reported_at_its_line_and_column(tmp_path, case):
    content, (line, column), text = BYTE_PROBLEMS[case]
    path = tmp_path / "bad.yaml"
    path.write_bytes(content)
    with pytest.raises(BlueprintError) as error:
        load_blueprint(path)
    [problem] = error.value.problems
    assert (problem.line, problem.column) == (line, column), str(problem)
    assert text in problem.message and str(problem).startswith(f"{path}:{line}:{column}: error:")


def test_extends_naming_a_fifo_through_a_symlink_is_refused_without_hanging(tmp_path):
    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "base.yaml").symlink_to(tmp_path / "pipe")
    (tmp_path / "top.yaml").write_text("name: top\nextends: base.yaml\n")
    result = run_python(
        f"""
        from brainsmith.blueprint import BlueprintError, load_blueprint
        try:
            load_blueprint({str(tmp_path / "top.yaml")!r})
        except BlueprintError as exc:
            print(exc)
        """,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == (
        f"{tmp_path / 'top.yaml'}:2:10: error: cannot read '{tmp_path / 'base.yaml'}': a FIFO "
        "(named pipe), not a regular file; expected a blueprint YAML file"
    )


def test_a_script_named_finn_is_named_instead_of_hanging(tmp_path):
    """A user's ``finn.py`` beside their script hides the finn-plus package: importing FINN
    runs the script again, which asks for FINN again; that is an error naming the file, not
    a thread waiting for itself forever."""
    script = tmp_path / "finn.py"
    script.write_text(
        "from brainsmith.frameworks.finn.env import prepare_finn\nprepare_finn()\nprint('ok')\n"
    )
    result = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path, timeout=120
    )
    assert result.returncode != 0
    assert f"importing FINN ran {script}" in result.stderr
    assert "rename it" in result.stderr
