"""No code from data: the package never deserialises code or runs strings, imports modules only
in audited loaders, and neither a discovery index nor a blueprint can make it import a module."""

from __future__ import annotations

import ast
import json
import os
import time
from pathlib import Path

import pytest

from brainsmith.plugin.discovery.folders import package_name
from brainsmith.plugin.discovery.index import index_name
from brainsmith.plugin.settings import memo
from tests.conftest import REPO, run_python

PACKAGE = REPO / "brainsmith"

# -- the source audit ------------------------------------------------------------------------

PICKLE_MODULES = {"pickle", "_pickle", "cPickle", "cloudpickle", "dill", "jsonpickle", "shelve"}
CALLS = {  # resolved dotted name of a callee -> rule
    "eval": "eval",
    "builtins.eval": "eval",
    "exec": "exec",
    "builtins.exec": "exec",
    "compile": "compile",
    "builtins.compile": "compile",
    "__import__": "__import__",
    "builtins.__import__": "__import__",
    "importlib.__import__": "__import__",
    "importlib.import_module": "import_module",
    "importlib.util.spec_from_file_location": "import from a path",
    "runpy.run_path": "runpy",
    "runpy.run_module": "runpy",
    "marshal.loads": "marshal.loads",
    "marshal.load": "marshal.loads",
    "os.system": "shell",
    "os.popen": "shell",
    **{f"yaml.{name}": "yaml.load" for name in ("load", "load_all", "full_load", "unsafe_load")},
    **{f"yaml.{name}_all": "yaml.load" for name in ("full_load", "unsafe_load")},
    **{
        f"stevedore.{name}": "stevedore"
        for name in ("ExtensionManager", "NamedExtensionManager", "DriverManager", "HookManager")
    },
}
UNSAFE_YAML = {f"yaml.{n}" for n in ("Loader", "FullLoader", "UnsafeLoader", "CLoader")} | {
    f"yaml.{n}" for n in ("CFullLoader", "CUnsafeLoader")
}

# Every place that may turn a name or a file into running code, and why it is safe there.
AUDITED = {
    ("brainsmith/plugin/settings/memo.py", "marshal.loads"): (
        "reads the discovery index: marshal builds plain data, never runs code, and decode() "
        "type-checks the record"
    ),
    ("brainsmith/plugin/loading.py", "import_module"): (
        "imports a registered plugin's module on first use; discovery registers only modules of "
        "the source that scanned them (trust.from_source), only the object that source registers "
        "is served (loading.not_this_plugin), and a pip package's module only when "
        "an installed distribution declares it (loading._check_declared)"
    ),
    ("brainsmith/plugin/__init__.py", "__import__"): (
        "lazy public attributes, imported without loading importlib: the module name comes "
        "from the constant _EXPORTS table"
    ),
    ("brainsmith/plugin/lazy.py", "__import__"): (
        "lazy package attributes (brainsmith.blueprint, brainsmith.plugin.lifecycle): "
        "the module name comes from the package's constant _EXPORTS table"
    ),
    ("brainsmith/hardware/board/boards.py", "import_module"): (
        "a board's amaranth-boards module: the module name comes from the constant table of "
        "boards (blueprint.choices.BOARDS), looked up by a name checked against it, never "
        "taken from a build folder or a blueprint"
    ),
    ("brainsmith/hardware/place_route/linked.py", "import_module"): (
        "a board's amaranth-boards module, whose pins a part-level top is placed on: the "
        "module name comes from a family's constant table of boards (ice40.BOARDS, gowin's "
        "PARTS), never from a build folder or a blueprint"
    ),
    ("brainsmith/cli/app.py", "import_module"): (
        "lazy subcommands: the module name comes from the constant COMMANDS table"
    ),
    ("brainsmith/plugin/adapters.py", "import_module"): (
        "a framework adapter: the module of one of the constant ADAPTERS targets, imported on "
        "first use (the hub imports no framework before that)"
    ),
    ("brainsmith/frameworks/finn/adapter.py", "import_module"): (
        "FINN's step table (finn.builder.build_dataflow_steps) or the custom-op table of one of "
        "the constant FINN domains (facts.HW_DOMAIN, facts.BACKEND_STYLES), to check that an object is "
        "what FINN registers before it is served"
    ),
    ("brainsmith/frameworks/finn/layers.py", "import_module"): (
        "FINN's custom-op table of one of the three constant LAYER_DOMAINS (layer_place never "
        "returns a domain a plugin declared), to register a loaded layer class there; or the "
        "registering function of a layer brainsmith's steps insert (the constant INSERTED_LAYERS)"
    ),
    ("brainsmith/plugin/lifecycle/pathload.py", "import from a path"): (
        "load_plugin(path) imports the plugin file, package or extension its caller names: code "
        "the user chose to run"
    ),
    ("brainsmith/plugin/lifecycle/pathload.py", "exec_module"): (
        "load_plugin(path) runs the file, package or compiled extension it names through its "
        "importlib loader (for Python, one that reads the source, never bytecode): code the "
        "user chose to run"
    ),
    ("brainsmith/plugin/discovery/sources/entry_points.py", "stevedore"): (
        "discovery imports the modules installed distributions declare in the "
        "brainsmith.plugins entry-point group (a new or changed distribution only, through a "
        "subclass that contains sys.exit())"
    ),
    ("brainsmith/plugin/discovery/folders.py", "import from a path"): (
        "a configured plugin folder's own __init__.py, imported as that folder's package when "
        "one of its registered plugins is loaded"
    ),
    ("brainsmith/plugin/discovery/folders.py", "__import__"): (
        "a plain sibling import inside a plugin folder (import helpers): the name is a file of "
        "a configured plugin folder, found by listing it, and is imported under the folder's "
        "unique package name with the import statement's own locking"
    ),
}


def aliases(tree: ast.Module) -> dict[str, str]:
    """Local name -> dotted name, for every import in the module (also inside functions)."""
    table: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                table[alias.asname or alias.name.partition(".")[0]] = (
                    alias.name if alias.asname else alias.name.partition(".")[0]
                )
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                table[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return table


def dotted(expr: ast.expr, table: dict[str, str]) -> str:
    parts: list[str] = []
    while isinstance(expr, ast.Attribute):
        parts.append(expr.attr)
        expr = expr.value
    if not isinstance(expr, ast.Name):
        return ""
    return ".".join([table.get(expr.id, expr.id), *reversed(parts)])


def findings(path: Path) -> list[tuple[int, str]]:
    """(line, rule) for every construct of ``path`` that could run code from data."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    table = aliases(tree)
    callees = {id(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call)}
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            names = [a.name for a in node.names]
            modules = [node.module or ""] if isinstance(node, ast.ImportFrom) else names
            if any(m.partition(".")[0] in PICKLE_MODULES for m in modules):
                found.append((node.lineno, "pickle"))
        elif isinstance(node, ast.Call):
            name = dotted(node.func, table)
            if name in CALLS:
                found.append((node.lineno, CALLS[name]))
            elif isinstance(node.func, ast.Attribute) and node.func.attr == "exec_module":
                found.append((node.lineno, "exec_module"))
            for keyword in node.keywords:
                shell_off = isinstance(keyword.value, ast.Constant) and not keyword.value.value
                if keyword.arg == "shell" and not shell_off:
                    found.append((node.lineno, "shell"))
        elif isinstance(node, ast.ClassDef):  # subclassing a plugin loader uses it too
            for base in node.bases:
                base = base.value if isinstance(base, ast.Subscript) else base  # Generic[...]
                if CALLS.get(dotted(base, table)) == "stevedore":
                    found.append((node.lineno, "stevedore"))
        elif isinstance(node, ast.Name) and node.id in ("eval", "exec", "__import__"):
            if id(node) not in callees:  # e.g. ``run = eval``
                found.append((node.lineno, f"{node.id} (as a value)"))
        elif isinstance(node, ast.Attribute) and dotted(node, table) in UNSAFE_YAML:
            found.append((node.lineno, "yaml.load"))
    return found


def package_findings() -> dict[tuple[str, str], list[int]]:
    result: dict[tuple[str, str], list[int]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(REPO).as_posix()
        for line, rule in findings(path):
            result.setdefault((rel, rule), []).append(line)
    return result


def test_package_source_runs_no_code_from_data_outside_audited_loaders():
    unaudited = [
        f"{path}:{line}: {rule}"
        for (path, rule), lines in package_findings().items()
        if (path, rule) not in AUDITED
        for line in lines
    ]
    assert unaudited == [], "code-from-data constructs outside the audited loaders"


def test_every_audited_loader_is_still_in_use():
    stale = sorted(set(AUDITED) - set(package_findings()))
    assert stale == [], "remove these entries from AUDITED"


def test_the_audit_sees_what_it_forbids(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text(
        "import pickle\n"
        "import yaml as y\n"
        "from marshal import loads\n"
        "import subprocess, importlib, stevedore\n"
        "run = eval\n"
        "y.load(data)\n"
        "y.unsafe_load(data)\n"
        "y.load(data, Loader=y.FullLoader)\n"
        "loads(blob)\n"
        "subprocess.run(cmd, shell=True)\n"
        "__import__('os')\n"
        "importlib.import_module(name)\n"
        "exec(code)\n"
        "class Mine(stevedore.ExtensionManager): pass\n"
        "class Typed(stevedore.ExtensionManager['Any']): pass\n"
        "# eval(comment) and 'exec(text)' do not count\n"
    )
    assert sorted(findings(sample)) == [
        (1, "pickle"),
        (5, "eval (as a value)"),
        (6, "yaml.load"),
        (7, "yaml.load"),
        (8, "yaml.load"),
        (8, "yaml.load"),
        (9, "marshal.loads"),
        (10, "shell"),
        (11, "__import__"),
        (12, "import_module"),
        (13, "exec"),
        (14, "stevedore"),
        (15, "stevedore"),
    ]


# -- data that names modules ---------------------------------------------------------------

CANARY = """
from pathlib import Path
Path(__file__).with_name("IMPORTED").write_text("the hub imported canary_payload")

def run(*args, **kwargs):
    return "ran"

class Run:
    pass
"""

REPORT = """
import json, sys
from brainsmith.plugin.manager import get_plugin_manager

manager = get_plugin_manager()
registry = manager.registry()
outcomes = {}
for plugin_type, name in WANTED:
    try:
        obj = registry.get(plugin_type, name)
        outcomes[name] = "served " + repr(obj)
    except Exception as exc:
        outcomes[name] = type(exc).__name__ + ": " + str(exc)
print(json.dumps({
    "outcomes": outcomes,
    "broken": manager.health_check()["broken_plugins"],
    "imported": sorted(m for m in ("canary_payload", "subprocess") if m in sys.modules),
    "forged_site_on_path": any(p.endswith("forged-site") for p in sys.path),
}))
"""


@pytest.fixture
def canary(tmp_path, monkeypatch) -> Path:
    """An importable module that leaves a file behind if anything imports it."""
    folder = tmp_path / "site"
    folder.mkdir()
    (folder / "canary_payload.py").write_text(CANARY)
    monkeypatch.setenv("PYTHONPATH", str(folder))
    return folder / "IMPORTED"


def forge(source: str, record: list, listing: list | None = None) -> None:
    """Add ``record`` (and entry-point ``listing`` rows) to every index file in the cache."""
    directory = os.environ["BRAINSMITH_CACHE_DIR"]
    for name in os.listdir(directory):
        if not (name.startswith("index-") and "-files" not in name):
            continue
        path = os.path.join(directory, name)
        with open(path, "rb") as handle:
            stamp, payload = memo.decode(handle.read(), path)
        for source_id, state in payload["sources"].items():
            if source_id == source or source_id.startswith(f"{source}:"):  # user:<folder>
                state["specs"].append(record)
                state["checked"] = time.time()  # within the TTL, however old the session is
                state.setdefault("listing", []).extend(listing or [])
        assert memo.write(name[: -len(".bsm")], stamp, payload)


FORGED = {  # id -> (source, record, entry-point listing rows)
    "brainsmith": ("brainsmith", ["step", "forged", "brainsmith", "canary_payload:run", {}, ""]),
    "qonnx": ("qonnx", ["step", "forged", "qonnx", "canary_payload:run", {}, ""]),
    "finn": ("finn", ["step", "forged", "finn", "builtins:eval", {}, ""]),
    "user-module-outside-the-folder": (
        "user",
        ["step", "forged", "user", "canary_payload:run", {"plugin_dir": "{folder}"}, "{site}"],
    ),
    "user-module-not-its-file": (
        "user",
        ["step", "forged", "user", "os:system", {"plugin_dir": "{folder}"}, "{folder}/good.py"],
    ),
    "user-claiming-a-builtin-framework": (
        "user",
        ["step", "forged", "brainsmith", "good:good_step", {"plugin_dir": "{folder}"}, ""],
    ),
    "entry-point-claiming-a-builtin-framework": (
        "entry_points",
        ["step", "forged", "brainsmith", "subprocess:Popen", {}, ""],
        [["evil", "1", "plugins", "subprocess"]],
    ),
    "entry-point-no-distribution-declares": (
        "entry_points",
        ["step", "forged", "evil", "canary_payload:run", {}, ""],
        [["evil", "1", "plugins", "canary_payload"]],
    ),
    # A module of the right package, but not one of its plugin files: the hub's own code.
    "brainsmith-module-of-the-hub": (
        "brainsmith",
        ["step", "forged", "brainsmith", "brainsmith.plugin.loading:os.system", {}, "{loading}"],
    ),
    # The right plugin file, but an object the scan does not register.
    "brainsmith-undecorated-function": (
        "brainsmith",
        ["step", "forged", "brainsmith", "brainsmith.steps.dataflow:apply_transforms", {}, "{df}"],
    ),
    "brainsmith-plugin-under-another-name": (
        "brainsmith",
        ["step", "forged", "brainsmith", "brainsmith.steps.dataflow:cleanup", {}, "{df}"],
    ),
    "brainsmith-plugin-dir": (
        "brainsmith",
        [
            "step",
            "forged",
            "brainsmith",
            "brainsmith.steps.dataflow:cleanup",
            {"plugin_dir": "{forged_site}"},
            "{df}",
        ],
    ),
    "user-undecorated-function": (
        "user",
        [
            "step",
            "forged",
            "user",
            "{package}.good:helper",
            {"plugin_dir": "{folder}"},
            "{folder}/good.py",
        ],
    ),
    "finn-function-as-a-step": (
        "finn",
        ["step", "forged", "finn", "finn.util.basic:launch_process_helper", {}, ""],
    ),
    "qonnx-class-as-a-transform": (
        "qonnx",
        ["transform", "forged", "qonnx", "qonnx.core.modelwrapper:ModelWrapper", {}, ""],
    ),
}
GOOD = """
import os
from brainsmith.plugin.core import step

@step(name="good_step")
def good_step(model, cfg):
    return model


def helper(model, cfg):
    return os.system("echo helper ran")
"""


@pytest.mark.parametrize("forged", list(FORGED))
def test_forged_index_record_never_imports_its_module(plugin_folder, canary, forged):
    plugin_folder("good.py", GOOD)
    assert run_python(REPORT.replace("WANTED", "[]")).returncode == 0  # writes the index
    source, record, *listing = FORGED[forged]
    fill = {
        "{package}": package_name(str(plugin_folder.folder)),
        "{folder}": str(plugin_folder.folder),
        "{site}": str(canary.parent / "x.py"),
        "{loading}": str(PACKAGE / "plugin" / "loading.py"),
        "{df}": str(PACKAGE / "steps" / "dataflow.py"),
        "{forged_site}": str(canary.parent.parent / "forged-site"),
    }
    record = [_fill(part, fill) for part in record]
    forge(source, record, *listing)
    plugin_type = record[0]
    wanted = [(plugin_type, f"{record[2]}:forged"), ("step", "good_step")]
    result = run_python(REPORT.replace("WANTED", repr(wanted)))
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout.strip().splitlines()[-1])
    outcome = report["outcomes"][f"{record[2]}:forged"]
    assert not outcome.startswith("served"), outcome
    assert report["outcomes"]["good_step"].startswith("served <function good_step")
    named = record[3].partition(":")[0]  # FINN and QONNX modules may import subprocess
    assert [m for m in report["imported"] if m == named or m == "canary_payload"] == []
    assert not canary.exists() and report["forged_site_on_path"] is False
    reasons = [p["reason"] for p in report["broken"] if "forged" in p["plugin"]]
    assert len(reasons) == 1
    assert any(
        refusal in reasons[0]
        for refusal in ("outside this source; ignored", "refusing to import", "refusing to serve")
    ), reasons[0]
    assert record[3] in reasons[0]


def test_forged_index_record_does_not_survive_revalidation(plugin_folder):
    plugin_folder("good.py", GOOD)
    assert run_python(REPORT.replace("WANTED", "[]")).returncode == 0  # writes the index
    dataflow = str(PACKAGE / "steps" / "dataflow.py")
    forge(
        "brainsmith",
        ["step", "forged", "brainsmith", "brainsmith.steps.dataflow:cleanup", {}, dataflow],
    )
    wanted = [("step", "brainsmith:forged"), ("step", "good_step")]
    result = run_python(
        REPORT.replace("WANTED", repr(wanted)), env={"BRAINSMITH_PLUGIN_CACHE_TTL": "0"}
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["outcomes"]["brainsmith:forged"].startswith("PluginNotFoundError: no step named")
    assert report["outcomes"]["good_step"].startswith("served <function good_step")
    assert [p for p in report["broken"] if "forged" in p["plugin"]] == []
    # The rewritten index holds the specs derived anew.
    path = Path(memo.path_for(index_name()))
    _, payload = memo.decode(path.read_bytes(), str(path))
    names = [r[1] for state in payload["sources"].values() for r in state["specs"]]
    assert "forged" not in names and "cleanup" in names


def _fill(value: object, fill: dict[str, str]) -> object:
    if isinstance(value, str):
        for key, text in fill.items():
            value = value.replace(key, text)
        return value
    if isinstance(value, dict):
        return {k: _fill(v, fill) for k, v in value.items()}
    return value


BLUEPRINT_NAMES = [
    "os:system",
    "subprocess.Popen",
    "builtins.eval",
    "builtins:eval",
    "canary_payload:run",
    "~canary_payload.Run",
]
LOAD_BLUEPRINT = """
import json, sys
from brainsmith.blueprint import BlueprintError, load_blueprint

try:
    load_blueprint(PATH)
    problems = []
except BlueprintError as exc:
    problems = [str(p) for p in exc.problems]
print(json.dumps({
    "problems": problems,
    "imported": sorted(m for m in ("canary_payload", "subprocess") if m in sys.modules),
}))
"""


def test_blueprint_naming_modules_never_imports_them(tmp_path, canary):
    names = json.dumps(BLUEPRINT_NAMES)
    path = tmp_path / "hostile.yaml"
    path.write_text(f"hw_compiler:\n  kernels: {names}\n  transforms: {names}\nsteps: {names}\n")
    result = run_python(LOAD_BLUEPRINT.replace("PATH", repr(str(path))))
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["imported"] == [] and not canary.exists()
    for name in BLUEPRINT_NAMES:
        bare = name.lstrip("~")
        hits = [p for p in report["problems"] if f"'{bare}' is not a registered" in p]
        assert len(hits) == 3, (name, report["problems"])
        assert all("never import paths" in p for p in hits)


BYTECODE_PLUGIN = """
from brainsmith.plugin import step

VALUE = "LABEL"


@step(name="labelled")
def labelled(model, cfg):
    return model
"""


def test_loaded_python_plugin_runs_from_its_source_never_from_bytecode(tmp_path):
    import importlib
    import importlib.util
    import sys

    from brainsmith.plugin.lifecycle import load_plugin

    path = tmp_path / "labels.py"
    path.write_text(BYTECODE_PLUGIN.replace("LABEL", "source"))
    # Bytecode of other code, stamped with the file's own mtime and size: a loader that
    # trusts __pycache__ would run it.
    st = path.stat()
    other = compile(BYTECODE_PLUGIN.replace("LABEL", "stale bytecode"), str(path), "exec")
    stale = importlib._bootstrap_external._code_to_timestamp_pyc(other, st.st_mtime, st.st_size)
    cached = Path(importlib.util.cache_from_source(str(path)))
    cached.parent.mkdir()
    cached.write_bytes(stale)
    load_plugin(path)
    module = sys.modules["labels"]
    assert module.VALUE == "source"
    # The module's own loader (what debuggers, coverage and reloaders ask) reads the source too.
    assert module.__spec__.loader is module.__loader__
    code = module.__loader__.get_code("labels")
    assert "source" in code.co_consts and "stale bytecode" not in code.co_consts
    assert sorted(p.name for p in cached.parent.iterdir()) == [cached.name]  # nothing written
    assert {rule for (file, rule) in package_findings() if file.endswith("pathload.py")} == {
        "import from a path",
        "exec_module",
    }
