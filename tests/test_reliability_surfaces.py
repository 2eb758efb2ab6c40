"""Hostile input on the build's surfaces: huge models and external data refused before they
are read, checkpoints that point outside their folder, a metrics file that is not a file,
plugin folders that are replaced or edited in bursts while `watch` runs, and links in plugin
packages and folders that lead out of them."""

from __future__ import annotations

import io
import json
import os
import queue
import shutil
import stat
import time
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import brainsmith
from brainsmith.builder.checkpoint import FILE, Checkpoint
from brainsmith.intake.model import (
    MAX_ATTRIBUTE_BYTES,
    MAX_MODEL_BYTES,
    MAX_NODES,
    InputError,
    check_model,
)
from brainsmith.plugin.discovery.sources.package_scan import folder_stamps, scan_folder
from brainsmith.plugin.discovery.stamps import unchanged
from brainsmith.plugin.manager import get_plugin_manager
from brainsmith.plugins import transforms
from brainsmith.terminal import console, table
from tests.conftest import run_python
from tests.support.models import mlp_with
from tests.support.packages import build_wheel, pip_install_target, write_project
from tests.support.processes import brainsmith as brainsmith_command
from tests.support.processes import invoke, on_terminal

REPO = Path(__file__).resolve().parents[1]
MLP = str(REPO / "examples" / "models" / "mlp_4bit.onnx")
BLUEPRINT = str(REPO / "blueprints" / "mlp.yaml")


def relu_chain(path: Path, nodes: int) -> Path:
    """A float model of ``nodes`` Relu layers in a row (valid ONNX, 29 bytes a node)."""
    chain = [helper.make_node("Relu", [f"t{i}"], [f"t{i + 1}"]) for i in range(nodes)]
    graph = helper.make_graph(
        chain,
        "chain",
        [helper.make_tensor_value_info("t0", TensorProto.FLOAT, [1, 8])],
        [helper.make_tensor_value_info(f"t{nodes}", TensorProto.FLOAT, [1, 8])],
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)
    return path


def run(*args: str, timeout: float = 120) -> tuple[int, str, float]:
    """``brainsmith ARGS`` in a process of its own: exit code, stderr and seconds."""
    began = time.monotonic()
    process = brainsmith_command(*args)
    _, err = process.communicate(timeout=timeout)
    return process.returncode, err, time.monotonic() - began


def run_here(*args: str) -> tuple[int, str, float]:
    """``brainsmith ARGS`` in this process: exit code, stderr and seconds (a test's
    ``timeout`` mark ends a regression that runs for minutes)."""
    began = time.monotonic()
    code, _, err = invoke(*args)
    return code, err, time.monotonic() - began


# -- models ---------------------------------------------------------------------------------------


@pytest.mark.timeout(240)
def test_a_model_of_ten_thousand_nodes_is_refused_before_any_work(tmp_path):
    model = relu_chain(tmp_path / "relus.onnx", 10_000)
    assert model.stat().st_size < 300_000
    for command in ("build", "check"):
        extra = ["-o", str(tmp_path / "out")] if command == "build" else []
        code, err, seconds = run_here(command, str(model), *extra)
        assert code == 2, err
        assert f"relus.onnx has 10,000 nodes, over the limit of {MAX_NODES:,}" in err
        assert "BRAINSMITH_MAX_NODES" in err
        assert seconds < 30  # before: still loading after 200 s
    assert not (tmp_path / "out").exists()


def test_the_node_limit_can_be_raised_and_a_bad_value_is_named(tmp_path, monkeypatch):
    model = relu_chain(tmp_path / "relus.onnx", 50)
    monkeypatch.setenv("BRAINSMITH_MAX_NODES", "40")
    with pytest.raises(InputError, match="has 50 nodes, over the limit of 40"):
        check_model(str(model))
    monkeypatch.setenv("BRAINSMITH_MAX_NODES", "60")
    assert len(check_model(str(model)).proto.graph.node) == 50
    monkeypatch.setenv("BRAINSMITH_MAX_NODES", "lots")
    with pytest.raises(InputError, match="BRAINSMITH_MAX_NODES='lots' is not a positive"):
        check_model(str(model))


def attribute_after_the_output(value):
    """A change: a Relu reading the model's output, with attribute ``big`` = ``value`` (a
    node no step removes, so every pass of every step meets the attribute)."""

    def change(model) -> None:
        output = model.graph.output[0]
        model.graph.node.append(
            helper.make_node("Relu", [output.name], ["relu_out"], name="tail_relu", big=value)
        )
        output.name = "relu_out"

    return change


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (list(range(2_000_000)), "2,000,000 ints"),  # 8 MB; before: check took about 5 minutes
        (bytes(range(256)) * 65_536, "a string of 16,777,216 bytes"),  # before: over 10 minutes
    ],
    ids=["ints", "string"],
)
@pytest.mark.timeout(240)
def test_a_node_attribute_of_megabytes_is_refused_naming_it_before_any_work(tmp_path, value, shown):
    """FINN's and QONNX's passes print and copy every node, attributes and all, at each of
    hundreds of passes: refused at intake, naming the node, the attribute and its size. The
    timeout ends a regression instead of letting it run for minutes."""
    model = mlp_with(tmp_path / "big.onnx", attribute_after_the_output(value))
    for command in ("check", "build"):
        extra = ["-o", str(tmp_path / "out")] if command == "build" else []
        code, _, err = invoke(command, str(model), *extra)
        assert code == 2, err
        assert "node tail_relu (Relu) has attribute 'big' of " in err, err
        assert f"({shown}), over the limit of {MAX_ATTRIBUTE_BYTES:,} bytes" in err, err
        assert "BRAINSMITH_MAX_ATTRIBUTE_BYTES" in err
    assert not (tmp_path / "out").exists()


def test_the_attribute_limit_can_be_raised_and_spares_what_a_constant_holds(tmp_path, monkeypatch):
    """The limit applies to each attribute but a Constant's value (its weights, which the
    first step turns into an initializer); ``BRAINSMITH_MAX_ATTRIBUTE_BYTES`` sets it."""
    model = mlp_with(tmp_path / "small.onnx", attribute_after_the_output(list(range(100))))
    monkeypatch.setenv("BRAINSMITH_MAX_ATTRIBUTE_BYTES", "100")
    with pytest.raises(
        InputError, match=r"'big' of \d+ bytes \(100 ints\), over the limit of 100 "
    ):
        check_model(str(model))
    monkeypatch.setenv("BRAINSMITH_MAX_ATTRIBUTE_BYTES", "1000")
    assert check_model(str(model)).proto.graph.node[-1].name == "tail_relu"
    monkeypatch.setenv("BRAINSMITH_MAX_ATTRIBUTE_BYTES", "lots")
    with pytest.raises(InputError, match="BRAINSMITH_MAX_ATTRIBUTE_BYTES='lots' is not a positive"):
        check_model(str(model))
    monkeypatch.delenv("BRAINSMITH_MAX_ATTRIBUTE_BYTES")
    weights = numpy_helper.from_array(np.ones((1, MAX_ATTRIBUTE_BYTES), np.float32), "W")
    graph = helper.make_graph(
        [helper.make_node("Constant", [], ["W"], value=weights),
         helper.make_node("Add", ["x", "W"], ["y"])],
        "constant",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, MAX_ATTRIBUTE_BYTES])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, MAX_ATTRIBUTE_BYTES])],
    )  # fmt: skip
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), model)
    assert len(check_model(str(model)).proto.graph.node) == 2


def model_with_external_data(folder: Path, weights: np.ndarray) -> Path:
    """An Add whose constant is stored next to the model in ``weights.bin``."""
    tensor = numpy_helper.from_array(weights, "W")
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "W"], ["y"])],
        "external",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(weights.shape))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(weights.shape))],
        [tensor],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    path = folder / "external.onnx"
    onnx.save(model, path, save_as_external_data=True, location="weights.bin", size_threshold=0)
    return path


def test_external_data_larger_than_a_model_can_hold_is_refused_unread(tmp_path):
    path = model_with_external_data(tmp_path, np.ones((1, 16), np.float32))
    proto = onnx.load(path, load_external_data=False)
    entries = proto.graph.initializer[0].external_data
    for entry in [e for e in entries if e.key in ("length", "offset")]:
        entries.remove(entry)  # no length: onnx would read the rest of the file
    onnx.save(proto, path)
    with open(tmp_path / "weights.bin", "r+b") as handle:
        handle.truncate(8 * 2**30)  # an 8 GiB sparse file: nothing on disk, all of it read
    code, err, seconds = run("check", str(path))  # a regression reads 16.8 GB: not in this process
    assert code == 2, err
    assert f"over the {MAX_MODEL_BYTES:,} bytes an ONNX model can hold; nothing was read" in err
    assert "'weights.bin' for tensor 'W'" in err
    assert seconds < 30  # before: 61 s and 16.8 GB read before the refusal


def test_a_model_with_ordinary_external_data_still_loads(tmp_path):
    weights = np.arange(12, dtype=np.float32).reshape(1, 12)
    path = model_with_external_data(tmp_path, weights)
    checked = check_model(str(path))
    assert np.array_equal(numpy_helper.to_array(checked.proto.graph.initializer[0]), weights)


# -- checkpoints ----------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.xdist_group("build")
def test_a_checkpoint_naming_files_outside_its_folder_is_refused(tmp_path):
    head = brainsmith.build(MLP, BLUEPRINT, str(tmp_path / "head"), stop_after=2)
    folder = Path(head.output_dir)
    elsewhere = tmp_path / "elsewhere.onnx"
    shutil.copy(MLP, elsewhere)
    original = json.loads((folder / FILE).read_text())

    def forge(model: str) -> None:
        (folder / FILE).write_text(json.dumps({**original, "model": model}))

    forge("../elsewhere.onnx")  # before: continued from
    with pytest.raises(ValueError, match=r"names files outside .*elsewhere\.onnx"):
        Checkpoint.load(str(folder))
    link = folder / "intermediate_models" / "link.onnx"  # inside by name, outside in fact
    link.symlink_to(elsewhere)
    forge("intermediate_models/link.onnx")
    with pytest.raises(ValueError, match="names files outside"):
        Checkpoint.load(str(folder))
    forge(original["model"])
    assert Checkpoint.load(str(folder)).model == str(folder / original["model"])


# -- metrics --------------------------------------------------------------------------------------


def test_a_metrics_file_that_is_not_a_regular_file_is_refused_and_left_alone(tmp_path):
    fifo = tmp_path / "metrics.fifo"
    os.mkfifo(fifo)
    target = tmp_path / "kept.prom"
    target.write_text("# the user's file\n")
    link = tmp_path / "link.prom"
    link.symlink_to(target)
    for path, reason in ((fifo, "not a regular file"), (link, "symbolic link")):
        code, err, _ = run_here("build", MLP, BLUEPRINT, "-o", str(tmp_path / "out"), "-q",
                                "--metrics-file", str(path))  # fmt: skip
        assert code == 2, err
        assert f"--metrics-file {path}: " in err and reason in err
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)  # before: replaced by a regular file
    assert link.is_symlink() and target.read_text() == "# the user's file\n"
    assert not (tmp_path / "out").exists()  # refused before the build began


# -- watch ----------------------------------------------------------------------------------------

PLUGIN = """
from qonnx.transformation.base import Transformation
from brainsmith.plugin.core import transform


@transform(name="{name}")
class {name}(Transformation):
    def apply(self, model):
        return model, False
"""


def user_plugins() -> list[str]:
    return sorted(s.name for s in get_plugin_manager().registry().specs(framework="user"))


def wait_for(condition, seconds: float = 60) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


def replace_folder(folder: Path, how: str, tmp_path: Path) -> None:
    """Put a new folder at ``folder``'s path, holding ``replaced.py``, the way ``how`` says."""
    fresh = tmp_path / f"release-{how}"
    fresh.mkdir()
    (fresh / "replaced.py").write_text(PLUGIN.format(name="Replaced"))
    if how == "symlink":  # `ln -sfn`: a link made aside, renamed over the folder's path
        shutil.rmtree(folder)
        aside = tmp_path / "link.tmp"
        aside.symlink_to(fresh, target_is_directory=True)
        os.replace(aside, folder)
    elif how == "new-directory":
        shutil.rmtree(folder)
        shutil.copytree(fresh, folder)
    else:  # a release moved into place
        shutil.rmtree(folder)
        os.rename(fresh, folder)


@pytest.mark.parametrize("how", ["symlink", "new-directory", "moved-into-place"])
def test_watch_follows_a_plugin_folder_that_is_replaced(plugin_folder, tmp_path, how):
    plugin_folder("first.py", PLUGIN.format(name="First"))
    manager = get_plugin_manager()
    assert user_plugins() == ["First"]
    changes: queue.Queue = queue.Queue()
    with manager.watch(on_change=changes.put):
        replace_folder(plugin_folder.folder, how, tmp_path)
        assert wait_for(lambda: user_plugins() == ["Replaced"]), user_plugins()
        (plugin_folder.folder / "later.py").write_text(PLUGIN.format(name="Later"))
        assert wait_for(lambda: user_plugins() == ["Later", "Replaced"]), user_plugins()
    assert transforms.Later.__name__ == "Later"


@pytest.mark.parametrize("fallback", [True, False])
def test_a_file_whose_event_is_lost_is_picked_up_by_the_poll(plugin_folder, monkeypatch, fallback):
    from brainsmith.plugin.manager import PluginManager

    if not fallback:  # without the poll's comparison of the files the lost event stays lost
        monkeypatch.setattr(PluginManager, "folders_changed", lambda manager: False)
    plugin_folder("first.py", PLUGIN.format(name="First"))
    manager = get_plugin_manager()
    assert user_plugins() == ["First"]
    with manager.watch() as watcher:
        watcher._observer.unschedule_all()  # the file-system events stop arriving
        (plugin_folder.folder / "later.py").write_text(PLUGIN.format(name="Later"))
        found = wait_for(
            lambda: user_plugins() == ["First", "Later"], seconds=20 if fallback else 2
        )
    assert found is fallback, user_plugins()


def test_a_change_deep_in_the_folder_whose_event_is_lost_is_picked_up_by_the_poll(plugin_folder):
    """Whatever events are lost or raced (a burst, a replaced folder), the watcher compares
    the files with those the registry was made from: a plugin deleted in a subpackage, which
    leaves the folder's own modification time as it was, is gone within a few polls."""
    plugin_folder("kept.py", PLUGIN.format(name="Kept"))
    plugin_folder("pkg/__init__.py", "")
    plugin_folder("pkg/deep.py", PLUGIN.format(name="Deep"))
    manager = get_plugin_manager()
    assert user_plugins() == ["Deep", "Kept"]
    with manager.watch() as watcher:
        watcher._observer.unschedule_all()  # the file-system events stop arriving
        (plugin_folder.folder / "pkg" / "deep.py").unlink()
        assert wait_for(lambda: user_plugins() == ["Kept"], seconds=20), user_plugins()


def test_a_file_deleted_while_the_folder_is_scanned_is_noticed(tmp_path):
    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / "b.py").write_text("y = 2\n")

    def extract(tree, module, is_package):  # a.py goes while b.py is being read
        if module == "b":
            (tmp_path / "a.py").unlink()
        return {}

    files, folders = scan_folder(str(tmp_path), "", None, extract)
    assert sorted(files) == ["a.py", "b.py"]  # a.py was read before it went
    assert not unchanged(folder_stamps(str(tmp_path), files, folders))


def test_watch_after_a_burst_of_edits_lists_exactly_what_is_there(plugin_folder):
    folder = plugin_folder.folder
    manager = get_plugin_manager()
    manager.registry()
    with manager.watch(debounce=0.1):
        began = time.monotonic()
        index = 0
        while time.monotonic() - began < 2:  # create, edit, delete: an editor and git at once
            name = f"Burst{index % 7}"
            path = folder / f"burst{index % 7}.py"
            if path.exists() and index % 3 == 0:
                path.unlink()
            else:
                path.write_text(PLUGIN.format(name=name) + f"# edit {index}\n")
            index += 1
            time.sleep(0.005)
        present = sorted(
            p.read_text().split('name="')[1].split('"')[0] for p in folder.glob("*.py")
        )
        assert wait_for(lambda: user_plugins() == present, seconds=20), (user_plugins(), present)


# -- links out of a plugin package or folder ------------------------------------------------------

STDLIB = os.path.dirname(os.__file__)  # hundreds of modules: parsing them takes seconds
SCANNED = """
import json
from brainsmith.plugin.discovery.sources import package_scan
from brainsmith.plugin.manager import get_plugin_manager

registry = get_plugin_manager().registry()
print(json.dumps({
    "specs": sorted(s.qualified_name for s in registry.specs() if s.framework == FRAMEWORK),
    "problems": [[p.plugin, p.reason] for p in registry.problems],
    "parsed": package_scan.parsed_files,
}))
"""


def scanned(framework: str, env: dict | None = None) -> dict:
    """A fresh process's discovery: ``framework``'s plugins, every problem, files parsed."""
    result = run_python(SCANNED.replace("FRAMEWORK", repr(framework)), env=env, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def links_out(problems: list) -> dict[str, str]:
    """The last path component of each file or folder named as a link out, with its reason."""
    return {
        Path(plugin.split(" (")[0]).name: reason
        for plugin, reason in problems
        if "a link out of the package" in reason
    }


TAG = """
from qonnx.transformation.base import Transformation
from brainsmith.plugin import transform


@transform(name="AcmeTag")
class AcmeTag(Transformation):
    def apply(self, model):
        return model, False
"""


@pytest.mark.parametrize("where", ["inside-the-package", "the-package-folder"])
def test_links_out_of_an_installed_plugin_package_are_named_and_never_read(tmp_path, where):
    """A pip package read from source with a folder linked to the standard library in it, or
    whose package folder is itself such a link: the link is named ("a link out of the
    package") and the standard library is not walked. A module linked from elsewhere is read
    as the module, one bounded file (setuptools' strict editable install is such links)."""
    project = write_project(
        tmp_path / "src",
        "acme-links",
        "acme_links",
        '"""Acme."""\n',
        {"acme_links": "acme_links"},
        {"transforms.py": TAG},
        group="brainsmith.plugin_packages",
    )
    site = tmp_path / "site"
    pip_install_target(build_wheel(project, tmp_path / "dist"), site)
    package = site / "acme_links"
    if where == "inside-the-package":
        (package / "stdlib").symlink_to(STDLIB, target_is_directory=True)
        (package / "borrowed.py").symlink_to(os.path.join(STDLIB, "os.py"))
    else:
        package.rename(tmp_path / "moved")
        package.symlink_to(STDLIB, target_is_directory=True)
    path = os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))
    found = scanned("acme-links", {"PYTHONPATH": path})
    named = links_out(found["problems"])
    if where == "inside-the-package":
        assert found["specs"] == ["acme-links:AcmeTag"], found
        assert sorted(named) == ["stdlib"], found["problems"]
        assert found["parsed"] <= 3, found  # __init__.py, transforms.py and borrowed.py
    else:
        assert found["specs"] == [], found
        assert list(named) == ["acme_links"], found["problems"]
        assert STDLIB in named["acme_links"] and found["parsed"] == 0, found


def test_links_out_of_a_plugin_folder_are_named_and_never_read_links_inside_are_not_followed(
    plugin_folder,
):
    """A plugin folder's link to a folder outside it is named and not walked, a link to a
    module outside it is read as the module; a link to a module of the folder is not followed
    (its target is scanned where it is), so its plugin is listed once, with no clash."""
    plugin_folder("good.py", PLUGIN.format(name="GoodOne"))
    folder = plugin_folder.folder
    (folder / "stdlib").symlink_to(STDLIB, target_is_directory=True)
    (folder / "borrowed.py").symlink_to(os.path.join(STDLIB, "os.py"))
    (folder / "alias.py").symlink_to(folder / "good.py")
    (folder / "again").symlink_to(folder, target_is_directory=True)
    found = scanned("user")
    assert found["specs"] == ["user:GoodOne"], found
    assert sorted(links_out(found["problems"])) == ["stdlib"], found["problems"]
    assert [p for p in found["problems"] if "a link out of the package" not in p[1]] == []
    assert found["parsed"] == 2, found  # good.py and borrowed.py


# -- text from data on the terminal ---------------------------------------------------------------

ESCAPES = "\x1b]0;owned\x07\x1b]52;c;Y3VybCBldmlsLnNo\x07\x1b[2J\u202e"


def test_escape_sequences_in_names_and_errors_never_reach_the_terminal(tmp_path):
    """A file name or error text from data (a plugin file, a model path) is shown with its
    escapes visible, not obeyed: no window title, clipboard write or cleared screen."""
    folder = tmp_path / "plugins"
    folder.mkdir()
    (folder / f"bad{ESCAPES}.py").write_text("def broken(:\n")
    env = {"BRAINSMITH_PLUGIN_DIRS": str(folder)}
    outputs = []
    for args in (
        ("plugins", "health"),
        ("plugins", "list"),
        ("build", str(tmp_path / f"m{ESCAPES}.onnx")),
    ):
        _, out, err = invoke(*args, env=env)
        outputs.append(out + err)
    assert "syntax error" in outputs[0] and "does not exist" in outputs[2], outputs
    for text in outputs:
        assert "\x1b" not in text and "\x07" not in text and "\u202e" not in text, repr(text)
    assert "\\x1b" in outputs[0] and "\\x1b" in outputs[2] and "\\u202e" in outputs[2]


MARKUP = "see [link=https://evil.example]here[/link], [conceal]hidden[/conceal] and [/]"
LINK, CONCEALED = "\x1b]8;", "\x1b[8m"  # what a terminal obeys: a hyperlink, hidden text


def test_markup_in_a_plugin_description_is_shown_as_written_on_a_terminal(tmp_path):
    """A description with rich markup reaches a real terminal as its text: no hyperlink, no
    concealed text, in ``plugins list`` and ``plugins info``."""
    folder = tmp_path / "plugins"
    folder.mkdir()
    (folder / "marked.py").write_text(
        "from brainsmith.plugin import transform\n\n"
        f"@transform(name='Marked', description={MARKUP!r})\n"
        "class Marked:\n    def apply(self, model):\n        return model, False\n"
    )
    env = {**os.environ, "BRAINSMITH_PLUGIN_DIRS": str(folder), "COLUMNS": "300"}
    for args in (("plugins", "list", "-f", "user"), ("plugins", "info", "user:Marked")):
        code, shown = on_terminal(*args, env=env)
        assert code == 0, shown
        assert "\x1b[" in shown  # a terminal: the command's own styles are there
        assert LINK not in shown and CONCEALED not in shown, repr(shown)
        assert MARKUP in shown, repr(shown)


def test_markup_in_names_from_a_build_folder_is_text_in_every_table():
    """Layer names in verify-rtl's and synth's tables come from a build folder: their brackets
    are text (a stray ``[/]`` is no error), and the console emits no link or hidden text even
    when markup reaches it."""
    out = console(file=io.StringIO(), force_terminal=True, color_system="truecolor", width=300)
    rows = table()
    rows.add_column("layer")
    rows.add_row(MARKUP)
    out.print(rows)
    out.print("[link=https://evil.example]plain[/link] [conceal]shown[/conceal]")
    shown = out.file.getvalue()
    assert MARKUP in shown and "plain shown" in shown, repr(shown)
    assert LINK not in shown and CONCEALED not in shown, repr(shown)
