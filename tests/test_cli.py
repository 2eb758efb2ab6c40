"""The ``brainsmith`` command as a user runs it."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import run_python
from tests.support.processes import Ran, invoke


def brainsmith(*args: str, env: dict | None = None) -> Ran:
    """``brainsmith ARGS`` in this process, with ``env`` added to the environment."""
    return invoke(*args, env=env)


def brainsmith_process(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """``brainsmith ARGS`` as a process of its own: Python itself prints its warnings there."""
    return subprocess.run([sys.executable, "-m", "brainsmith", *args], capture_output=True,
                          text=True, timeout=300, env={**os.environ, **(env or {})})  # fmt: skip


def test_help_lists_commands_without_loading_the_hub():
    result = run_python("""
        import sys
        from brainsmith.cli import cli
        try:
            cli(["--help"])
        except SystemExit:
            pass
        print("LOADED", sorted(m for m in ("brainsmith.plugin.manager", "rich", "yaml", "qonnx")
                               if m in sys.modules))
    """)
    assert "plugins" in result.stdout and "build" in result.stdout
    assert result.stdout.strip().splitlines()[-1] == "LOADED []"


HELP_RUN = """
import sys
sys.argv = ["brainsmith", {flag!r}]
from brainsmith.cli import main
main()
print("CLICK", "click" in sys.modules)
"""


def test_top_level_help_is_clicks_own_text_and_needs_click_only_the_first_time():
    from brainsmith.cli.app import top_level_help

    runs = [
        run_python(HELP_RUN.format(flag=flag), env={"COLUMNS": "100"})
        for flag in ("--help", "-h", "--help")
    ]
    assert all(r.returncode == 0 for r in runs), runs[0].stderr
    texts = [r.stdout.rpartition("CLICK")[0] for r in runs]
    assert texts[0] == texts[1] == texts[2] == top_level_help() + "\n"  # width 80 here too
    assert [r.stdout.split()[-1] for r in runs] == ["True", "False", "False"]
    narrow = run_python(HELP_RUN.format(flag="--help"), env={"COLUMNS": "60"})
    assert narrow.stdout.split()[-1] == "True"  # another width: rendered by click again
    assert narrow.stdout.rpartition("CLICK")[0] != texts[0]  # wrapped for 60 columns


def test_plugins_list_json_filters_by_type_and_framework():
    result = brainsmith("plugins", "list", "--type", "kernel", "--framework", "finn", "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert {(d["type"], d["framework"]) for d in data} == {("kernel", "finn")}
    assert any(d["name"] == "MVAU" for d in data)


def test_plugins_list_table_shows_names():
    result = brainsmith("plugins", "list", "--framework", "qonnx")
    assert result.returncode == 0, result.stderr
    assert "FoldConstants" in result.stdout


CLIP = """
from qonnx.transformation.base import Transformation
from brainsmith.plugin.core import transform


@transform(name="ClipToRange")
class ClipToRange(Transformation):
    \"\"\"Clips integers to [low, high], PE channels per clock cycle.\"\"\"

    def apply(self, model):
        return model, False
"""


def test_plugins_list_into_a_pipe_keeps_every_name_and_description_whole(tmp_path):
    """Piped, the listing is one plain line per plugin: no name cut to the width of a
    terminal, and a description's [brackets] are text, not markup."""
    (tmp_path / "clip.py").write_text(CLIP)
    env = {"BRAINSMITH_PLUGIN_DIRS": str(tmp_path), "COLUMNS": ""}
    listed = json.loads(brainsmith("plugins", "list", "--json", env=env).stdout)
    result = brainsmith("plugins", "list", env=env)  # stdout is a pipe here
    assert result.returncode == 0, result.stderr
    assert "…" not in result.stdout and "..." not in result.stdout
    rows = {tuple(line.split()[:3]) for line in result.stdout.splitlines()}
    missing = [d["name"] for d in listed if (d["type"], d["name"], d["framework"]) not in rows]
    assert len(listed) >= 400 and not missing, missing
    assert "Clips integers to [low, high], PE channels per clock cycle" in result.stdout


def test_plugins_list_of_a_framework_whose_plugins_are_all_broken_names_them(tmp_path):
    (tmp_path / "broken.py").write_text("def broken(:\n")
    env = {"BRAINSMITH_PLUGIN_DIRS": str(tmp_path)}
    listed = brainsmith("plugins", "list", "--framework", "user", "--all", env=env)
    assert "no plugins from framework 'user'" not in listed.stdout + listed.stderr
    assert f"{tmp_path / 'broken.py'}:1: syntax error" in listed.stdout, listed.stderr
    short = brainsmith("plugins", "list", "--framework", "user", env=env)
    assert "known frameworks" not in short.stderr
    assert "1 plugin problem(s)" in short.stderr and "broken.py" in short.stderr, short.stderr


def test_plugins_list_unknown_framework_is_an_error():
    result = brainsmith("plugins", "list", "--framework", "fiin")
    assert result.returncode == 1
    assert "no plugins from framework 'fiin'" in result.stderr


def test_plugins_info_shows_metadata_source_and_status():
    result = brainsmith("plugins", "info", "finn:Streamline")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "transform finn:Streamline" in out and "streamline" in out
    assert "finn.transformation.streamline:Streamline" in out
    assert "not loaded" in out


def test_plugins_info_load_reports_loaded():
    result = brainsmith("plugins", "info", "qonnx:FoldConstants", "--load", "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["loaded"] is True


def test_plugins_info_unknown_name_suggests():
    result = brainsmith("plugins", "info", "Streamlin")
    assert result.returncode == 1
    assert "did you mean 'Streamline'" in result.stderr


@pytest.mark.parametrize(("folder_content", "code"), [(None, 0), ("def broken(:\n", 1)])
def test_plugins_health_exit_code_reflects_status(tmp_path, folder_content, code):
    env = {}
    if folder_content:
        (tmp_path / "broken.py").write_text(folder_content)
        env["BRAINSMITH_PLUGIN_DIRS"] = str(tmp_path)
    result = brainsmith("plugins", "health", env=env)
    assert result.returncode == code, result.stdout + result.stderr
    assert ("degraded" if code else "healthy") in result.stdout


def test_a_user_plugin_with_a_built_in_name_is_named_as_shadowed(tmp_path):
    """The design document's own ``@transform(name="ExpandNorms")`` in a plugin folder:
    brainsmith's keeps the short name; the user's is a warning at its file:line and a
    line in ``plugins health`` (still healthy: ``user:ExpandNorms`` reaches it)."""
    (tmp_path / "norms.py").write_text(
        "from brainsmith.plugin import transform\n\n\n"
        '@transform(name="ExpandNorms", stage="pre_hw")\n'
        "class MyExpandNorms:\n"
        "    def apply(self, model):\n"
        "        return model, False\n"
    )
    result = brainsmith_process("plugins", "health", env={"BRAINSMITH_PLUGIN_DIRS": str(tmp_path)})
    assert result.returncode == 0, result.stdout + result.stderr
    where = f"{tmp_path / 'norms.py'}:4"
    assert f"shadowed: transform user:ExpandNorms ({where}) is shadowed by " in result.stdout
    assert "brainsmith:ExpandNorms" in result.stdout
    assert f"{where}: DuplicatePluginWarning" in result.stderr or where in result.stderr


def test_plugins_stats_json():
    result = brainsmith("plugins", "stats", "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["plugin_count"] >= 400


def test_plugins_stats_prints_tables_not_python_dicts():
    result = brainsmith("plugins", "stats")
    assert result.returncode == 0, result.stderr
    assert "{" not in result.stdout and "'" not in result.stdout, result.stdout
    lines = result.stdout.splitlines()
    data = json.loads(brainsmith("plugins", "stats", "--json").stdout)
    for plugin_type, count in data["plugins_by_type"].items():
        assert any(line.split()[:2] == [plugin_type, str(count)] for line in lines), lines
    for framework, count in data["plugins_by_framework"].items():
        assert any(
            line.split()[-2:] == [framework, str(count)]
            or line.split()[:2] == [framework, str(count)]
            for line in lines
        ), lines


def test_plugins_stats_counts_the_discovery_of_its_own_process():
    """A fresh process reads the index the previous one wrote: one lookup, a cache hit."""
    brainsmith("plugins", "list", "--json")
    data = json.loads(brainsmith("plugins", "stats", "--json").stdout)
    assert data["index_cache"] == "hit" and data["cache_hit_rate"] == 1.0, data


def test_cache_clear_removes_the_index():
    brainsmith("plugins", "list", "--json")
    assert os.listdir(os.environ["BRAINSMITH_CACHE_DIR"])
    result = brainsmith("cache", "clear")
    assert result.returncode == 0 and "removed" in result.stdout
    assert os.listdir(os.environ["BRAINSMITH_CACHE_DIR"]) == []


def test_bad_configuration_is_reported_without_a_traceback():
    result = brainsmith("plugins", "list", env={"BRAINSMITH_PLUGIN_DEBUG": "turbo"})
    assert result.returncode == 2
    assert "BRAINSMITH_PLUGIN_DEBUG" in result.stderr and "Traceback" not in result.stderr


def test_plugins_info_load_exits_non_zero_when_the_plugin_fails_to_load(tmp_path):
    (tmp_path / "rebel.py").write_text(
        "from brainsmith.plugin.core import step\n"
        "raise RuntimeError('refuses to import')\n"
        "@step(name='rebel_step')\n"
        "def rebel_step(model, cfg):\n"
        "    return model\n"
    )
    env = {"BRAINSMITH_PLUGIN_DIRS": str(tmp_path)}
    result = brainsmith("plugins", "info", "rebel_step", "--load", env=env)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "raised RuntimeError: refuses to import" in result.stdout + result.stderr
    as_json = brainsmith("plugins", "info", "rebel_step", "--load", "--json", env=env)
    assert as_json.returncode == 1
    assert "refuses to import" in json.loads(as_json.stdout)["error"]


@pytest.mark.parametrize(
    "command", ["plugins health", "plugins health --json", "plugins list", "--version"]
)
def test_a_reader_that_leaves_early_ends_the_command_quietly_with_sigpipes_status(command):
    """``brainsmith plugins health | head -1``: the closed pipe is the status a program that
    SIGPIPE stopped has (141), never health's 1 (degraded) or 2 (unhealthy), with no error."""
    shell = f"{sys.executable} -m brainsmith {command} | true; echo ${{PIPESTATUS[0]}}"
    for _ in range(3):  # the reader is gone before the first write: the same every time
        result = subprocess.run(["bash", "-c", shell], capture_output=True, text=True,
                                timeout=120)  # fmt: skip
        assert result.stdout.strip() == "141", result.stdout + result.stderr
        assert result.stderr == "", result.stderr
