"""Hardening round 6: the board surfaces (docs/reliability.md). Each test was written to
fail before its fix."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from brainsmith.folder_lock import FolderBusy, FolderLock
from brainsmith.hardware.board.streams import DriverError
from brainsmith.hardware.place_route.ecp5 import BOARD_PACKING
from tests.support.ports import babble, trickle

# -- row: the folder lock ---------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["symlink", "hardlink", "folder", "fifo"])
def test_a_planted_lock_file_is_refused_and_what_it_points_at_is_untouched(tmp_path, kind):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    folder = tmp_path / "build"
    folder.mkdir()
    lock = tmp_path / "build.lock"
    if kind == "symlink":
        lock.symlink_to(victim)
    elif kind == "hardlink":
        os.link(victim, lock)
    elif kind == "folder":
        lock.mkdir()
    else:
        os.mkfifo(lock)
    with pytest.raises(FolderBusy) as refused:
        FolderLock(str(folder), "build").acquire()
    assert "build.lock" in refused.value.reason
    assert "remove it" in refused.value.hint
    assert victim.read_text() == "precious\n"


def test_a_link_to_a_missing_file_is_refused_and_creates_nothing(tmp_path):
    target = tmp_path / "elsewhere" / "made.txt"
    target.parent.mkdir()
    folder = tmp_path / "build"
    folder.mkdir()
    (tmp_path / "build.lock").symlink_to(target)
    with pytest.raises(FolderBusy):
        FolderLock(str(folder), "build").acquire()
    assert not target.exists()


def test_the_lock_still_works_and_is_removed_on_release(tmp_path):
    folder = tmp_path / "build"
    lock = FolderLock(str(folder), "build")
    lock.acquire()
    try:
        assert Path(lock.path).read_text().startswith(f"build, pid {os.getpid()}")
        with pytest.raises(FolderBusy):
            FolderLock(str(folder), "build").acquire()
    finally:
        lock.release()
    assert not Path(lock.path).exists()


# -- row: a board that lies, a number that is not finite ---------------------------------------


@pytest.mark.parametrize("planted", [np.inf, -np.inf, np.nan])
@pytest.mark.parametrize("exact", [False, True])
def test_an_expected_output_that_is_not_finite_is_refused_not_a_pass(planted, exact):
    from brainsmith.commands.run import compare

    expected = np.linspace(-1.0, 1.0, 20).reshape(2, 10)
    expected[1, 3] = planted
    zeros = np.zeros_like(expected)  # a board answering nothing but zeros
    with pytest.raises(DriverError) as refused:
        compare(zeros, expected, exact, "y.npy")
    assert refused.value.exit_code == 2
    assert "y.npy" in refused.value.reason and "not finite" in refused.value.reason
    assert "frame 1" in refused.value.reason


@pytest.mark.parametrize("answer", [np.inf, -np.inf, np.nan])
def test_a_board_answering_a_value_that_is_not_finite_differs(answer):
    from brainsmith.commands.run import compare

    expected = np.linspace(-1.0, 1.0, 20).reshape(2, 10)
    got = expected.copy()
    got[0, 5] = answer
    with pytest.raises(DriverError) as differs:
        compare(got, expected, False, "y.npy")
    assert differs.value.exit_code == 1
    assert "1 of 20 elements differ" in differs.value.reason


def test_huge_finite_values_keep_the_tolerance_finite_and_still_catch_zeros():
    from brainsmith.commands.run import compare

    expected = np.full((1, 4), 1e308)
    with pytest.raises(DriverError) as differs:
        compare(np.zeros_like(expected), expected, False, "y.npy")
    assert "4 of 4 elements differ" in differs.value.reason


# -- row: numbers at the point they enter (report file, option) --------------------------------


@pytest.mark.parametrize(
    ("key", "text"),
    [("baud", "0.5"), ("baud", "Infinity"), ("baud", "1e300"), ("baud", "1"), ("baud", "NaN"),
     ("baud", '"fast"'), ("clock_mhz", "1e-300"), ("clock_mhz", "-Infinity"),
     ("clock_mhz", "true")],
)  # fmt: skip
def test_a_figure_of_bitstream_report_json_out_of_its_range_is_refused_by_name(tmp_path, key, text):
    from brainsmith.hardware.board.driver import bitstream_figure

    (tmp_path / "bitstream").mkdir()
    (tmp_path / "bitstream" / "report.json").write_text(f'{{"{key}": {text}}}')
    with pytest.raises(DriverError) as refused:
        bitstream_figure(str(tmp_path), key)
    assert f"{key} " in refused.value.reason and "report.json" in refused.value.reason
    assert "brainsmith bitstream" in refused.value.hint


def test_figures_in_range_are_read_and_a_missing_one_is_none(tmp_path):
    from brainsmith.hardware.board.driver import bitstream_figure

    (tmp_path / "bitstream").mkdir()
    (tmp_path / "bitstream" / "report.json").write_text('{"baud": 3000000, "clock_mhz": 85.0}')
    assert bitstream_figure(str(tmp_path), "baud") == 3_000_000
    assert bitstream_figure(str(tmp_path), "clock_mhz") == 85.0
    (tmp_path / "bitstream" / "report.json").write_text("{}")
    assert bitstream_figure(str(tmp_path), "baud") is None


@pytest.mark.parametrize("baud", [str(2**32), str(10**30), "1199", "0"])
def test_run_refuses_a_baud_out_of_range_before_touching_anything(tmp_path, baud):
    from tests.support.processes import invoke

    ran = invoke("run", str(tmp_path), "--simulate", "--baud", baud)
    assert ran.returncode == 2
    assert "--baud" in ran.stderr and "12000000" in ran.stderr


def test_the_command_line_s_baud_range_is_the_driver_s():
    import click

    from brainsmith.cli.run import run
    from brainsmith.hardware.board.driver import BAUD_RANGE

    (option,) = [p for p in run.params if p.name == "baud"]
    assert isinstance(option.type, click.IntRange)
    assert (option.type.min, option.type.max) == BAUD_RANGE


# -- row: input and output files of run and export ---------------------------------------------


def test_an_npy_header_claiming_hundreds_of_gib_is_refused_from_its_header(tmp_path):
    from brainsmith.commands.run import load_array

    forged = tmp_path / "x.npy"
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (200000000000,), }"
    header += " " * (118 - len(header)) + "\n"
    forged.write_bytes(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode())
    with pytest.raises(DriverError) as refused:
        load_array(str(forged), "--input")
    assert "--input" in refused.value.reason and str(forged) in refused.value.reason


@pytest.mark.parametrize("value", [np.nan, np.inf])
def test_inputs_that_are_not_finite_are_refused_by_name(tmp_path, value):
    from brainsmith.commands.run import load_array

    path = tmp_path / "x.npy"
    np.save(path, np.array([[0.5, value]], np.float32))
    with pytest.raises(DriverError) as refused:
        load_array(str(path), "--input", finite=True)
    assert "not finite" in refused.value.reason


def test_run_output_into_a_missing_folder_is_refused_before_the_run(tmp_path):
    from tests.support.processes import invoke

    missing = tmp_path / "no" / "such" / "y.npy"
    ran = invoke("run", str(tmp_path / "build"), "--simulate", "--output", str(missing))
    assert ran.returncode == 2
    assert f"the folder {missing.parent} does not exist" in ran.stderr
    assert "mkdir -p" in ran.stderr


def test_run_output_names_the_file_numpy_writes_and_refuses_a_folder(tmp_path):
    from brainsmith.commands.run import output_path, save_array

    assert output_path(str(tmp_path / "outs")) == str(tmp_path / "outs.npy")
    assert output_path(str(tmp_path / "y.npy")) == str(tmp_path / "y.npy")
    (tmp_path / "taken.npy").mkdir()
    with pytest.raises(DriverError, match="is a folder"):
        output_path(str(tmp_path / "taken.npy"))
    save_array(str(tmp_path / "y.npy"), np.arange(3))
    assert np.load(tmp_path / "y.npy").tolist() == [0, 1, 2]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["taken.npy", "y.npy"]


# -- row: a build folder nested 1,500 folders deep ---------------------------------------------


@pytest.fixture
def deep_build(tmp_path):
    """A build folder (a report.json) with 1,500 folders nested below it, removed after the
    test level by level (pytest's own clean-up, shutil.rmtree, recurses and fails on it)."""
    root = tmp_path / "build"
    root.mkdir()
    (root / "report.json").write_text("{}")
    descriptors = [os.open(root, os.O_RDONLY)]
    try:  # each level made relative to the last: the path itself grows past PATH_MAX
        for _ in range(1500):
            os.mkdir("d", dir_fd=descriptors[-1])
            descriptors.append(os.open("d", os.O_RDONLY, dir_fd=descriptors[-1]))
        yield root
    finally:
        for inner, outer in zip(descriptors[:0:-1], descriptors[-2::-1], strict=True):
            os.close(inner)
            os.rmdir("d", dir_fd=outer)
        os.close(descriptors[0])


def test_a_folder_nested_1500_deep_is_refused_by_the_gate_not_a_recursion_error(deep_build):
    from brainsmith.intake.gate import MAX_DEPTH, UntrustedFolder, open_build_folder

    folder = deep_build
    with pytest.raises(UntrustedFolder) as refused:
        open_build_folder(folder)
    assert f"folders nested more than {MAX_DEPTH} deep" in str(refused.value)


def test_the_commands_on_a_deep_folder_exit_2_without_a_traceback(tmp_path, deep_build):
    from tests.support.processes import invoke

    folder = deep_build
    for command in (
        ["run", str(folder), "--simulate"],
        ["export", str(folder), str(tmp_path / "x")],
    ):
        ran = invoke(*command)
        assert ran.returncode == 2, (command, ran.stdout, ran.stderr)
        assert "nested more than" in ran.stderr, ran.stderr


# -- row: family plugins -----------------------------------------------------------------------

ODD_FAMILIES = """\
from dataclasses import replace

from brainsmith.hardware.place_route.ecp5 import ECP5

INT_PREFIXES = replace(ECP5, name="ints", prefixes=(1,))
NO_PREFIXES = replace(ECP5, name="none", prefixes=None)
EMPTY_PREFIXES = replace(ECP5, name="empty", prefixes=("",))
"""
ODD_IMPORTS = {
    "interrupting.py": "raise KeyboardInterrupt\n",
    "exiting.py": "import sys\nsys.exit(3)\n",
    "hanging.py": "import time\ntime.sleep(3600)\n",
}


@pytest.fixture(scope="module")
def odd_families(tmp_path_factory) -> Path:
    """One pip-installed package of family entry points that each break in their own way."""
    from tests.support.packages import build_wheel, pip_install_target, write_project

    root = tmp_path_factory.mktemp("odd-families")
    points = {
        "ints": "brainsmith_odd:INT_PREFIXES", "none": "brainsmith_odd:NO_PREFIXES",
        "empty": "brainsmith_odd:EMPTY_PREFIXES", "interrupt": "brainsmith_odd.interrupting:F",
        "exit": "brainsmith_odd.exiting:F", "hang": "brainsmith_odd.hanging:F",
    }  # fmt: skip
    project = write_project(root / "src", "brainsmith-odd", "brainsmith_odd", ODD_FAMILIES,
                            points, ODD_IMPORTS, group="brainsmith.families")  # fmt: skip
    pip_install_target(build_wheel(project, root / "wheels"), root / "site")
    return root / "site"


@pytest.mark.slow  # a pip-installed package: not in make test-fast
def test_each_broken_family_plugin_is_named_and_ecp5_works_on(odd_families):
    """A process of its own: one of the plugins hangs for an hour at import."""
    import subprocess
    import sys

    code = (
        "from brainsmith.hardware.place_route.families import families, target\n"
        "found = families()\n"
        "print([f.name for f in found.usable])\n"
        "print(*found.left_out, sep='\\n')\n"
        "print('TARGET', target('LFE5U-85F-6BG381C')[0].name)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(odd_families), "BRAINSMITH_PLUGIN_LOAD_TIMEOUT": "2"}
    ran = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         timeout=120)  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    lines = ran.stdout.splitlines()
    assert (
        lines[0] == "['ECP5', 'Nexus', 'iCE40', 'Gowin', 'GateMate']" and lines[-1] == "TARGET ECP5"
    )
    why = {line.split("'")[1]: line for line in lines[1:-1]}
    assert sorted(why) == ["empty", "exit", "hang", "interrupt", "ints", "none"]
    for name in ("ints", "none", "empty"):
        assert "not a tuple of non-empty strings" in why[name]
    assert "raised KeyboardInterrupt" in why["interrupt"]
    assert "called sys.exit(3)" in why["exit"]
    assert "ImportTimeout" in why["hang"]


# -- row: flash loads the bytes it checked -----------------------------------------------------

SWAPPING_LOADER = """#!/bin/sh
# the build's bitstream swapped the moment the loader starts; then the hash of what it got
printf 'swapped in' > "$SWAP"
sha256sum "$(eval echo \\${$#})" > "$RECORD"
"""


def test_flash_loads_exactly_the_bytes_it_hashed_when_the_file_is_swapped(tmp_path):
    import hashlib
    import json

    from tests.support.processes import invoke

    build = tmp_path / "b"
    (build / "bitstream").mkdir(parents=True)
    bit = build / "bitstream" / "ulx3s-85f.bit"
    bit.write_bytes(b"\xff\x00 the checked bitstream " * 64)
    digest = hashlib.sha256(bit.read_bytes()).hexdigest()
    made = {"bitstream": str(bit), "sha256": digest, "board": "ulx3s-85f"}
    (build / "report.json").write_text(json.dumps({"status": "ok", "board": "ulx3s-85f"}))
    (build / "bitstream" / "report.json").write_text(json.dumps(made))
    tools = tmp_path / "bin"
    tools.mkdir()
    (tools / "openFPGALoader").write_text(SWAPPING_LOADER)
    (tools / "openFPGALoader").chmod(0o755)
    path = f"{tools}{os.pathsep}{os.environ['PATH']}"
    record = tmp_path / "loaded.txt"
    ran = invoke("flash", str(build), env={"PATH": path, "SWAP": str(bit), "RECORD": str(record)})
    assert ran.returncode == 0, ran.stderr
    assert bit.read_bytes() == b"swapped in"  # the swap happened
    assert record.read_text().split()[0] == digest  # and the checked bytes were loaded


# -- row: a board that babbles or trickles -----------------------------------------------------


@pytest.mark.parametrize("talk", [babble, trickle], ids=["babble", "trickle"])
def test_a_port_that_babbles_or_trickles_ends_the_exchange_at_its_deadline(lying_port, talk):
    import serial

    from brainsmith.hardware.board.link import Link, LinkError

    port = serial.Serial(lying_port(talk), 115200, timeout=2.0)  # a load never times a read out
    with pytest.raises(LinkError) as failed:
        Link(port, deadline=1.0).identify()
    assert "no whole frame within 1 s" in str(failed.value)
    port.close()


# -- row: a clock out of range -----------------------------------------------------------------


@pytest.mark.parametrize("mhz", ["1e300", "inf", "nan", "0", "-5", "0.5"])
def test_place_route_refuses_a_clock_out_of_range_before_any_tool_runs(tmp_path, mhz):
    from tests.support.processes import invoke

    ran = invoke("place-route", str(tmp_path), "--part", "LFE5U-85F-6BG381C", "--mhz", mhz)
    assert ran.returncode == 2
    assert "--mhz" in ran.stderr and "1.0<=x<=1000.0" in ran.stderr


@pytest.mark.parametrize(
    ("command", "option"),
    [(["bitstream", "{tmp}", "--board", "ulx3s-85f"], "--mhz"),
     (["explore", "{tmp}/m.onnx", "{tmp}/b.yaml", "-o", "{tmp}/out"], "--variant-timeout"),
     (["explore", "{tmp}/m.onnx", "{tmp}/b.yaml", "-o", "{tmp}/out"], "--scheduler-timeout")],
)  # fmt: skip
@pytest.mark.parametrize("value", ["nan", "inf"])
def test_every_clock_and_time_option_refuses_nan_and_infinity(tmp_path, command, option, value):
    from tests.support.processes import invoke

    ran = invoke(*(word.format(tmp=tmp_path) for word in command), option, value)
    assert ran.returncode == 2, ran.stdout + ran.stderr
    assert f"Invalid value for '{option}'" in ran.stderr


# -- row: the user's own bitstream cache -------------------------------------------------------

GOOD_FIGURES = {
    "sha256": "", "board": "ulx3s-85f", "part": "LFE5U-85F-6BG381C", "asked_mhz": 100.0,
    "clock_mhz": 100.0, "baud": 3_000_000, "clocks_per_bit": 33, "fmax_mhz": {"clk": 120.5},
    "resources": {}, "seconds": {}, "tools": {},
}  # fmt: skip


def cached_bitstream(root: Path, content: bytes, **changed) -> tuple[str, tuple[str, str]]:
    """A bitstream cache entry as a run writes it (its .bit holding ``content``, a netlist),
    its figures ``changed``: (the entry, (the .bit, the netlist))."""
    import gzip
    import hashlib

    from brainsmith.hardware.plan import write_entry

    bit, netlist, entry = root / "k.bit", root / "k.v.gz", root / "k.json"
    bit.write_bytes(content)
    netlist.write_bytes(gzip.compress(b"module board_top; endmodule\n"))
    figures = {**GOOD_FIGURES, "sha256": hashlib.sha256(content).hexdigest(), **changed}
    write_entry(str(entry), "k", figures)
    return str(entry), (str(bit), str(netlist))


BITSTREAM = b"\xff\x00 comment \x00\xff" + b"\xff\xff\xbd\xb3" + b"\x00" * 64


@pytest.mark.parametrize(
    ("content", "changed"),
    [(b"#!/bin/sh\nnot a bitstream\n", {}), (BITSTREAM, {"fmax_mhz": {"clk": "fast"}}),
     (BITSTREAM, {"fmax_mhz": {"clk": float("inf")}}), (BITSTREAM, {"clock_mhz": -1}),
     (BITSTREAM, {"fmax_mhz": [120.5]}), (BITSTREAM, {"clocks_per_bit": 0}),
     (BITSTREAM, {"baud": 10**400})],
    ids=["not-a-bitstream", "fmax-text", "fmax-inf", "clock-negative", "fmax-list", "no-bits",
         "baud-past-a-float"],
)  # fmt: skip
def test_a_cached_bitstream_entry_that_a_run_would_not_write_is_dropped(tmp_path, content, changed):
    from brainsmith.hardware.place_route.bitstream import _from_cache

    entry, cached = cached_bitstream(tmp_path, content, **changed)
    out = tmp_path / "build" / "bitstream" / "ulx3s-85f.bit"
    assert _from_cache(entry, cached, "k", str(out), BOARD_PACKING) is None
    assert not out.exists() and not any(os.path.exists(p) for p in (entry, *cached))


def test_a_cached_bitstream_entry_a_run_wrote_is_used(tmp_path):
    from brainsmith.hardware.place_route.bitstream import _from_cache

    entry, cached = cached_bitstream(tmp_path, BITSTREAM)
    out = tmp_path / "build" / "bitstream" / "ulx3s-85f.bit"
    found = _from_cache(entry, cached, "k", str(out), BOARD_PACKING)
    assert found is not None and found.cached and found.fmax_mhz == {"clk": 120.5}
    assert out.read_bytes() == BITSTREAM


# -- row: one reading of a build's file list --------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("planted", ["link", "path"])
def test_a_design_naming_a_file_outside_the_build_is_refused_by_the_simulated_board(
    farm, tmp_path, planted
):
    """The simulated board (and its gate-level check) reads the design's files as Yosys and
    export read them (``design.json``, through the gate): a source swapped for a link out of
    the build after the gate, or a design.json naming a path out of it, is refused naming
    design.json and the path, before Verilator reads anything."""
    import json
    import shutil

    from brainsmith.hardware.board.simulated import board_design
    from brainsmith.hardware.board.streams import streams
    from tests.support.farm import all_rtl_mlp

    copy = tmp_path / "build"
    shutil.copytree(all_rtl_mlp(farm), copy, symlinks=True)
    secret = tmp_path / "secret.sv"
    secret.write_text("module secret; endmodule\n")
    if planted == "link":
        design = streams(str(copy))
        victim = design.design.sources[-1].path
        (copy / victim).unlink()
        (copy / victim).symlink_to(secret)
        with pytest.raises(DriverError) as refused:
            board_design(design)
        assert str(copy / "design.json") in refused.value.reason
        assert f"{victim}, which leads out of the build folder" in refused.value.reason
    else:
        described = json.loads((copy / "design.json").read_text())
        described["files"].append({"path": "../secret.sv", "type": "systemVerilogSource"})
        (copy / "design.json").write_text(json.dumps(described))
        with pytest.raises(DriverError) as refused:
            streams(str(copy))
        assert "design.json: files[" in refused.value.reason
        assert "../secret.sv" in refused.value.reason
