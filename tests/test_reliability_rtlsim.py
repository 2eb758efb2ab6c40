"""``brainsmith verify-rtl`` simulates only what the build generated: every generated HDL file
is checked against the hashes the build recorded at code generation, RTL that would reach the
host (commands, file writes, C/C++ code, DPI, reads outside the layer) is refused before it is
compiled, a simulation that prints without end is stopped, and a moved or copied build folder
simulates its own files, or says it cannot and exits non-zero. A disk that fills up under
Verilator is named, and the build exits 2."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

import brainsmith
from brainsmith.hardware.rtlsim.layers import PLUMBING
from tests.support.tiers import wide
from tests.test_rtlsim import code_dir, verify_rtl

REPO = Path(__file__).resolve().parents[1]
MODELS = REPO / "examples" / "models"
BLUEPRINTS = REPO / "blueprints"
MANIFEST = Path("finn") / "hdl_manifest.json"

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("rtlsim")]


@pytest.fixture(scope="module")
def built(hub, farm) -> Path:
    """The run's build of the shipped MLP (Python verification only); tests tamper with copies."""
    return Path(farm.build(MODELS / "mlp_4bit.onnx", BLUEPRINTS / "mlp.yaml").output_dir)


@pytest.fixture
def copy(built, tmp_path) -> Path:
    """A copy of the build, as a CI artefact unpacked elsewhere would be."""
    return Path(shutil.copytree(built, tmp_path / "copy", symlinks=True))


def statuses(report: Path) -> dict[str, str]:
    layers = json.loads(report.read_text())["rtlsim"]["layers"]
    return {layer["name"]: layer["status"] for layer in layers}


def inject(path: Path, lines: str) -> int:
    """Put ``lines`` into the last module of ``path``; returns the line number of the first."""
    text = path.read_text()
    end = text.rindex("endmodule")
    path.write_text(text[:end] + lines + "\n" + text[end:])
    return text[:end].count("\n") + 1


def record_as_built(folder: Path, path: Path) -> None:
    """What a forged artefact does: record the tampered file's hash as the build's own."""
    key = path.relative_to(folder / "finn").as_posix()
    manifest = {"format": 1, "root": str(folder / "finn"), "files": {key: ""}}
    if (folder / MANIFEST).exists():
        manifest = json.loads((folder / MANIFEST).read_text())
    assert key in manifest["files"], sorted(manifest["files"])
    manifest["files"][key] = hashlib.sha256(path.read_bytes()).hexdigest()
    (folder / MANIFEST).write_text(json.dumps(manifest))


# -- hashes recorded at code generation ---------------------------------------------------


def test_build_records_a_hash_of_every_generated_hdl_file(built):
    manifest = json.loads((built / MANIFEST).read_text())
    generated = sorted(  # the layers' code, and the sizing's FIFOs and width converters
        p.relative_to(built / "finn").as_posix()
        for folder in ("build", "fifo_sizing/code")
        for p in (built / "finn" / folder).rglob("*")
        if p.suffix in (".v", ".sv")
    )
    layers = [name for name in generated if name.startswith("build/")]
    assert len(layers) == 6 and sorted(manifest["files"]) == generated
    for name, digest in manifest["files"].items():
        assert hashlib.sha256((built / "finn" / name).read_bytes()).hexdigest() == digest


def test_command_added_to_generated_rtl_is_refused_and_does_not_run(copy, hub, tmp_path):
    marker = tmp_path / "ran"
    path = code_dir(copy, "Thresholding_rtl_0") / "Thresholding_rtl_0.v"
    inject(path, f'\tinitial $system("id > {marker}");')
    result = verify_rtl(copy, cache=hub)
    assert result.returncode == 2, result.stdout + result.stderr
    assert not marker.exists()
    assert f"error: {path} differs from what the build generated" in result.stderr
    assert "build it again" in result.stderr and "--allow-changed-rtl" in result.stderr


@pytest.mark.parametrize(
    "lines, task",
    [
        ('\tinitial $system("id > {marker}");', "$system"),
        (
            '\tinitial begin : w\n\t\tinteger f;\n\t\tf = $fopen("{marker}", "w");\n'
            '\t\t$fwrite(f, "x");\n\t\t$fclose(f);\n\tend',
            "$fopen",
        ),
    ],
    ids=["system", "fopen-write"],
)
def test_host_access_in_a_forged_build_is_refused_before_compiling(
    copy, hub, tmp_path, lines, task
):
    """A folder whose record was forged to match still cannot run a command or write a file:
    the task is refused by name, file and line, and nothing runs."""
    marker = tmp_path / "ran"
    path = code_dir(copy, "Thresholding_rtl_0") / "Thresholding_rtl_0.v"
    line = inject(path, lines.format(marker=marker))
    record_as_built(copy, path)
    result = verify_rtl(copy, "--layer", "Thresholding_rtl_0", cache=hub)
    assert result.returncode == 2, result.stdout + result.stderr
    assert not marker.exists()
    found = re.search(rf"error: {re.escape(str(path))}:(\d+): {re.escape(task)}\b", result.stderr)
    assert found, result.stderr
    assert line <= int(found.group(1)) <= line + 3


OUTPUT_CAP_MIB = (
    16  # what a simulation may print (brainsmith.hardware.rtlsim.stimulus.OUTPUT_LIMIT)
)
FLOOD_LINES = 5 * OUTPUT_CAP_MIB * 2**20 // 64  # five times the cap, in 64-byte lines
FLOOD = f'\tinitial for (int i = 0; i < {FLOOD_LINES}; i++) $display("flood %08d: {"x" * 47}", i);'


def test_a_display_loop_is_stopped_at_the_output_cap_naming_the_layer(copy, hub):
    """A forged layer that prints without end is stopped once it printed more than the cap
    (read as it comes, so memory stays bounded), and the layer fails saying so."""
    path = code_dir(copy, "Thresholding_rtl_0") / "Thresholding_rtl_0.v"
    inject(path, FLOOD)
    record_as_built(copy, path)
    result = verify_rtl(copy, "--layer", "Thresholding_rtl_0", cache=hub)
    assert result.returncode == 1, result.stdout + result.stderr
    assert (
        "error: RTL simulation: layer Thresholding_rtl_0 (Thresholding_rtl) the simulation of "
        f"Thresholding_rtl_0 printed more than {OUTPUT_CAP_MIB} MiB; stopped"
    ) in result.stderr, result.stderr
    assert "flood" not in result.stdout + result.stderr
    assert statuses(copy / "report.json") == {"Thresholding_rtl_0": "failed"}
    beats = copy / "finn" / "rtlsim" / "Thresholding_rtl_0" / "out0_V.hex"
    assert not beats.exists() or beats.stat().st_size == 0  # stopped inside the loop


def test_a_process_that_repeats_a_line_is_stopped_naming_the_line(tmp_path):
    """A simulator stopped at the cap says what it kept printing (BERT-tiny's stitched design
    stopped with "printed more than 16 MiB" and no word of the warning that filled them)."""
    import sys

    from brainsmith.hardware.processes import TooMuchOutput, run_bounded

    loop = "import itertools\nfor i in itertools.count():\n print('note' if i % 9 else 'flood')"
    with pytest.raises(TooMuchOutput) as caught:
        run_bounded([sys.executable, "-c", loop], cwd=str(tmp_path), timeout=60, limit=2**20)
    message = str(caught.value)
    assert message.startswith(
        'printed more than 1 MiB; stopped; the line printed most often: "note" ('
    )
    assert message.endswith(" times)") and "flood" not in message


def test_a_process_without_a_time_limit_is_killed_when_interrupted(tmp_path):
    """A simulation has no wall-clock limit (a stall is counted in simulated cycles); Ctrl-C
    (SIGINT, here sent by a timer) still ends the wait and kills the process."""
    import os
    import signal
    import sys
    import threading
    import time

    from brainsmith.hardware.processes import run_bounded

    marker = tmp_path / "pid"
    code = f"import os, time; open({str(marker)!r}, 'w').write(str(os.getpid())); time.sleep(60)"
    timer = threading.Timer(2.0, os.kill, (os.getpid(), signal.SIGINT))
    began = time.monotonic()
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        run_bounded([sys.executable, "-c", code], cwd=str(tmp_path), timeout=None, limit=2**20)
    assert 1.5 < time.monotonic() - began < 30
    with pytest.raises(ProcessLookupError):  # killed and reaped
        os.kill(int(marker.read_text()), 0)


def test_a_process_waited_for_in_a_thread_is_killed_when_its_caller_stops_it(tmp_path):
    """A build compiles the simulated board in a thread while nextpnr runs; when the round is
    thrown away or the build stops, the compiler it waits for is killed within moments."""
    import os
    import threading
    import time

    from brainsmith.hardware.processes import Stopped, run_bounded

    marker = tmp_path / "pid"
    stop = threading.Event()
    caught: list[BaseException] = []

    def wait() -> None:
        try:
            run_bounded(["sh", "-c", f"echo $$ > {marker}; exec sleep 60"], cwd=str(tmp_path),
                        timeout=None, limit=2**20, stop=stop)  # fmt: skip
        except BaseException as exc:
            caught.append(exc)

    waiting = threading.Thread(target=wait)
    waiting.start()
    while not marker.exists() or not marker.read_text().strip():
        time.sleep(0.05)
    began = time.monotonic()
    stop.set()
    waiting.join(50)
    assert not waiting.is_alive() and time.monotonic() - began < 50  # not the sleep's 60 s
    assert len(caught) == 1 and isinstance(caught[0], Stopped)
    with pytest.raises(ProcessLookupError):  # killed and reaped
        os.kill(int(marker.read_text()), 0)


def test_a_compile_stopped_by_its_caller_leaves_nothing_in_the_cache(tmp_path, monkeypatch):
    """A compile given up (``stop`` set) raises Stopped and keeps no simulator and no half-made
    folder in the compile cache, so the next compile of the design starts clean."""
    import threading

    from brainsmith.hardware.processes import Stopped
    from brainsmith.hardware.rtlsim.compile import compile_layer
    from brainsmith.hardware.rtlsim.layer_design import LayerDesign
    from brainsmith.hardware.rtlsim.verilator import find_toolchain

    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    monkeypatch.setenv("BRAINSMITH_RTLSIM_CACHE", str(cache))
    design = LayerDesign(
        node="counter", op_type="test", top="counter", code_dir="", files=[], inputs=[],
        outputs=[], generated={"counter.sv": "module counter(input logic ap_clk, "
                               "input logic ap_rst_n, output logic [7:0] q);\n"
                               "always_ff @(posedge ap_clk) q <= ap_rst_n ? q + 1 : 0;\n"
                               "endmodule\n"},
    )  # fmt: skip
    stop = threading.Event()
    stop.set()
    with pytest.raises(Stopped):
        compile_layer(design, find_toolchain(), str(tmp_path / "work"), stop)
    assert [p.name for p in cache.iterdir() if not p.name.endswith(".lock")] == []


def test_changed_rtl_is_simulated_only_when_asked_and_with_a_warning(copy, hub):
    path = code_dir(copy, "Thresholding_rtl_1") / "Thresholding_rtl_1.v"
    inject(path, "\t// edited by hand")
    refused = verify_rtl(copy, "--layer", "Thresholding_rtl_1", cache=hub)
    assert refused.returncode == 2 and f"{path} differs from what" in refused.stderr
    allowed = verify_rtl(copy, "--layer", "Thresholding_rtl_1", "--allow-changed-rtl", cache=hub)
    assert allowed.returncode == 0, allowed.stderr
    assert f"warning: {path} differs from what the build generated" in allowed.stderr
    assert statuses(copy / "report.json") == {"Thresholding_rtl_1": "match"}


def test_file_the_build_did_not_record_is_refused(copy, hub):
    manifest = json.loads((copy / MANIFEST).read_text())
    wrapper = code_dir(copy, "MVAU_rtl_0") / "MVAU_rtl_0_memstream_wrapper.v"
    del manifest["files"][wrapper.relative_to(copy / "finn").as_posix()]
    (copy / MANIFEST).write_text(json.dumps(manifest))
    result = verify_rtl(copy, "--layer", "MVAU_rtl_0", cache=hub)
    assert result.returncode == 2, result.stderr
    assert f"error: {wrapper} is not among the files the build generated" in result.stderr


def test_code_folder_linked_to_outside_the_build_is_refused(copy, hub, tmp_path):
    folder = code_dir(copy, "Thresholding_rtl_0")
    outside = Path(shutil.move(folder, tmp_path / "elsewhere"))
    folder.symlink_to(outside, target_is_directory=True)
    result = verify_rtl(copy, "--layer", "Thresholding_rtl_0", cache=hub)
    assert result.returncode == 2, result.stderr
    assert f"a link out of the folder (to {outside})" in result.stderr


def test_build_folder_without_a_record_is_refused_saying_how_to_make_one(copy, hub):
    (copy / MANIFEST).unlink()
    result = verify_rtl(copy, cache=hub)
    assert result.returncode == 2, result.stderr
    assert f"error: {copy} has no record of the RTL its build generated" in result.stderr
    assert "build it again" in result.stderr
    assert json.loads((copy / "report.json").read_text())["rtlsim"] is None  # untouched


DAMAGED = {  # what a damaged JSON file of a build folder may hold, and what the error says
    "not-json": ("{'status': ok", "is not JSON"),
    "a-list": ("[1, 2, 3]", "holds a JSON list, not an object"),
    "nested": ("[" * 200_000, "is nested too deeply to be read"),
}


@pytest.mark.parametrize("damage", sorted(DAMAGED))
def test_a_damaged_report_is_an_error_naming_it_not_a_traceback(copy, hub, damage):
    text, words = DAMAGED[damage]
    (copy / "report.json").write_text(text)
    result = verify_rtl(copy, cache=hub)
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert f"error: the build's report cannot be read: {copy / 'report.json'} {words}" in (
        result.stderr
    )
    assert "try: this folder's report.json is damaged" in result.stderr
    assert (copy / "report.json").read_text() == text  # left as it was


@pytest.mark.parametrize("damage", sorted(DAMAGED))
def test_a_damaged_hdl_record_is_refused_naming_it(copy, hub, damage):
    text, words = DAMAGED[damage]
    (copy / MANIFEST).write_text(text)
    result = verify_rtl(copy, cache=hub)
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert "hdl_manifest.json" in result.stderr and words in result.stderr, result.stderr


# -- copied and moved build folders ----------------------------------------------------------


def test_copied_build_folder_simulates_its_own_files(copy, hub):
    """A wrong threshold in the copy is found: the copy's files are simulated, not the
    original's (whose paths final.onnx and the generated Verilog record)."""
    path = code_dir(copy, "Thresholding_rtl_1") / "Thresholding_rtl_1_threshs_0_0.dat"
    lines = path.read_text().splitlines()
    path.write_text("\n".join(["7ff"] * 4 + lines[4:]) + "\n")
    result = verify_rtl(copy, "--layer", "Thresholding_rtl_1", cache=hub)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "layer Thresholding_rtl_1 (Thresholding_rtl) differs from Python" in result.stderr
    assert statuses(copy / "report.json") == {"Thresholding_rtl_1": "mismatch"}


def test_moved_build_folder_simulates_every_layer(hub, tmp_path):
    made = tmp_path / "made"
    brainsmith.build(str(MODELS / "mlp_4bit.onnx"), str(BLUEPRINTS / "mlp.yaml"), str(made))
    moved = made.rename(tmp_path / "moved")
    result = verify_rtl(moved, cache=hub)
    assert result.returncode == 0, result.stdout + result.stderr
    assert set(statuses(moved / "report.json").values()) == {"match"}
    report = json.loads((moved / "report.json").read_text())
    computing = [x for x in report["rtlsim"]["layers"] if not x["op_type"].startswith(PLUMBING)]
    assert len(computing) == 4 and report["rtlsim"]["stitched"]["status"] == "match"


def test_copy_without_its_generated_rtl_fails_instead_of_checking_nothing(copy, hub):
    shutil.rmtree(copy / "finn" / "build")
    result = verify_rtl(copy, cache=hub)
    assert result.returncode != 0, result.stdout + result.stderr
    found = statuses(copy / "report.json")
    computing = {name: status for name, status in found.items() if not name.startswith(PLUMBING)}
    assert computing == dict.fromkeys(computing, "failed") and len(computing) == 4
    assert re.search(
        rf"error: RTL simulation: layer Thresholding_rtl_0 \(Thresholding_rtl\) no generated "
        rf"RTL: {re.escape(str(copy / 'finn' / 'build'))}/code_gen_ipgen_Thresholding_rtl_0_\w+ "
        r"does not exist",
        result.stderr,
    ), result.stderr


# -- a full disk under Verilator ----------------------------------------------------------

SIZED = "steps: [cleanup, qonnx_to_finn, streamline, hardware_inference, specialize, folding,"
SIZED += " estimates, codegen, size_fifos]\n"


@pytest.mark.parametrize("size", wide(["64k", "512k", "1500k"], ["1500k"]))
def test_a_full_disk_under_the_fifo_sizing_compile_exits_2_naming_the_disk(hub, tmp_path, size):
    """The compiled simulators' folder on a real tmpfs of ``size``: full while the sources are
    copied (our write), while Verilator writes its C++ (it says nothing and exits 0; make then
    finds no makefile) or while the compiler writes objects ("No space left on device"). Each
    time the build fails with exit code 2, naming the full disk and what to do."""
    from tests.test_build_outdir import BUILD, in_mount_namespace

    disk, out = tmp_path / "disk", tmp_path / "out"
    disk.mkdir()
    blueprint = tmp_path / "sized.yaml"
    blueprint.write_text(f"name: sized\nextends: {BLUEPRINTS / 'mlp.yaml'}\n{SIZED}")
    model = MODELS / "mlp_4bit.onnx"
    command = " ".join(f"'{part}'" for part in [*BUILD, model, blueprint, "-o", out, "-q"])
    result = in_mount_namespace(
        f"mount -t tmpfs -o size={size},mode=0700 none '{disk}' || exit 99; "
        f"BRAINSMITH_RTLSIM_CACHE='{disk}' exec {command}"
    )
    assert result.returncode == 2, result.stdout + result.stderr
    reason = f"the disk holding {disk} is full (No space left on device)"
    assert f"error: build failed in step 'size_fifos': {reason}" in result.stderr, result.stderr
    assert f"try: free space on that disk (df -h {disk})" in result.stderr
    assert "Traceback" not in result.stderr and "Verilator failed" not in result.stderr
    report = json.loads((out / "report.json").read_text())
    assert report["status"] == "failed" and report["error"]["reason"] == reason


# -- the screen itself, on Verilator's preprocessed text -----------------------------------

MODULE = "module m (input clk);\n\tlogic [7:0] mem [4];\n{body}\nendmodule\n"
REFUSED = [
    ('\tinitial $system("touch x");', "$system"),
    ('`define CAT(a, b) a``b\n\tinitial `CAT($sys, tem)("touch x");', "$system"),
    ('\tinitial $c("system(\\"id\\");");', "$c"),
    ('\tinitial $c32("1");', "$c32"),
    ("`systemc_imp_header\n#include <cstdlib>\n`verilog", "`systemc_imp_header"),
    ('\timport "DPI-C" function int host(input string cmd);', 'import "DPI-C"'),
    ('\texport "DPI-C" function f;\n\tfunction int f(); return 0; endfunction', 'export "DPI-C"'),
    ('\tinteger f = $fopen("out.txt", "w");', "$fopen"),
    ('\tinteger f = $fopen("out.txt", "a+");', "$fopen"),
    ('\tinteger f = $fopen("out.txt");', "$fopen"),
    ('\tstring mode = "r";\n\tinteger f = $fopen("out.txt", mode);', "$fopen"),
    ('\tinitial $writememh("out.hex", mem);', "$writememh"),
    ('\tinitial $writememb("out.bin", mem);', "$writememb"),
    ('\tinitial $fdisplay(32\'h8000_0002, "x");', "$fdisplay"),
    ('\tinitial $fwrite(1, "x");', "$fwrite"),
    ('\tinitial $fstrobe(1, "x");', "$fstrobe"),
    ('\tinitial $fmonitor(1, "x");', "$fmonitor"),
    ('\tinitial $dumpfile("/tmp/wave.vcd");', "$dumpfile"),
    ('\tinitial $dumpfile("../wave.vcd");', "$dumpfile"),
]
ACCEPTED = [
    '\tinitial $readmemh("./Thresholding_rtl_0_threshs_0_0.dat", mem);',
    '\tinteger f = $fopen("memblock.dat", "r");',
    '\tinitial $display("$system and $fopen(x, \\"w\\") in a string");',
    "\t// $system in a comment\n\t/* $fwrite(1, x) */",
    '\tinitial $dumpfile("wave.vcd");',
    '\tinitial $display("%d", $clog2(8));',
]


def screen_text(tmp_path: Path, body: str, readable: tuple[str, ...] = ()) -> None:
    from brainsmith.hardware.rtlsim.screen import screen
    from brainsmith.hardware.rtlsim.verilator import find_toolchain

    source = tmp_path / "m.sv"
    source.write_text(MODULE.format(body=body))
    more = {"readable": readable} if readable else {}  # folders parameter files may be in
    screen([str(source)], find_toolchain(), str(tmp_path), **more)


@pytest.mark.parametrize("body, task", REFUSED, ids=[task for _, task in REFUSED])
def test_rtl_reaching_the_host_is_refused_naming_file_line_and_task(tmp_path, body, task):
    from brainsmith.hardware.rtlsim.screen import UnsafeSource

    with pytest.raises(UnsafeSource) as caught:
        screen_text(tmp_path, body)
    message = str(caught.value)
    assert message.startswith(f"{tmp_path / 'm.sv'}:"), message
    assert f": {task} " in message, message
    assert int(message.split(":")[1]) in range(3, 4 + body.count("\n")), message


@pytest.mark.parametrize("body", ACCEPTED)
def test_rtl_reading_its_own_files_passes_the_screen(tmp_path, body):
    screen_text(tmp_path, body)


def test_the_screen_reads_what_verilators_own_script_preprocesses(tmp_path):
    """The screen runs the PyPI package's binary without its perl wrapper; what it reads
    must be what the wrapper would have printed (macros, includes and line markers)."""
    from brainsmith.hardware.rtlsim.screen import _preprocessed
    from brainsmith.hardware.rtlsim.verilator import find_toolchain

    toolchain = find_toolchain()
    assert os.path.basename(toolchain.preprocessor) == "verilator_bin", toolchain
    (tmp_path / "word.vh").write_text("`define WORD 8\n")
    body = '`include "word.vh"\n`define TASK $display\ninitial `TASK("%d", `WORD);'
    (tmp_path / "m.sv").write_text(MODULE.format(body=body))
    script = subprocess.run([toolchain.verilator, "-E", "m.sv"], cwd=tmp_path, env=toolchain.env,
                            capture_output=True, text=True, check=True).stdout  # fmt: skip
    assert _preprocessed(["m.sv"], toolchain, str(tmp_path), defines=[]) == script
    assert '$display("%d", 8)' in script


HOST_FILE = Path("/etc/passwd")
INCLUDES = {  # an `include of a file outside the layer's sources, and the path it names
    "absolute": ('`include "/etc/passwd"', '"/etc/passwd"'),
    "parent": ('`include "../outside.sv"', '"../outside.sv"'),
    "macro": ('`define HOST "/etc/passwd"\n`include `HOST', "`HOST"),
}


@pytest.mark.parametrize("name", sorted(INCLUDES))
def test_an_include_outside_the_layer_sources_is_refused_naming_file_line_and_path(tmp_path, name):
    """Before Verilator reads the included file: nothing of it is in the message."""
    from brainsmith.hardware.rtlsim.screen import UnsafeSource

    body, included = INCLUDES[name]
    (tmp_path.parent / "outside.sv").write_text("secret_module_text\n")
    with pytest.raises(UnsafeSource) as caught:
        screen_text(tmp_path, body)
    message = str(caught.value)
    line = 3 + body.count("\n")
    assert message.startswith(f"{tmp_path / 'm.sv'}:{line}: `include {included}"), message
    assert "outside" in message
    assert HOST_FILE.read_text().splitlines()[0] not in message
    assert "secret_module_text" not in message


def test_a_forged_include_of_a_host_file_is_refused_before_compiling_and_reaches_no_log(copy, hub):
    path = code_dir(copy, "Thresholding_rtl_0") / "Thresholding_rtl_0.v"
    line = inject(path, f'`include "{HOST_FILE}"')
    record_as_built(copy, path)
    result = verify_rtl(copy, "--layer", "Thresholding_rtl_0", cache=hub)
    assert result.returncode == 2, result.stdout + result.stderr
    assert f'error: {path}:{line}: `include "{HOST_FILE}"' in result.stderr, result.stderr
    secret = HOST_FILE.read_text().splitlines()[0].encode()
    assert secret not in (result.stdout + result.stderr).encode()
    written = [p for p in copy.rglob("*") if p.is_file() and secret in p.read_bytes()]
    assert written == []
    assert not list((copy / "finn" / "rtlsim").rglob("compile.log"))  # nothing compiled


PATHS = {  # a file outside the layer's folders named in a literal, and the literal
    "readmemh-absolute": ('\tinitial $readmemh("/etc/hosts", mem);', "/etc/hosts"),
    "readmemb-absolute": ('\tinitial $readmemb("/abs/memblock.dat", mem);', "/abs/memblock.dat"),
    "parameter-parent": (
        '\tlocalparam string F = "../../weights.dat";\n\tinitial $readmemh(F, mem);',
        "../../weights.dat",
    ),
    "fopen-home": ('\tinteger f = $fopen("~/.ssh/id_rsa", "r");', "~/.ssh/id_rsa"),
}


@pytest.mark.parametrize("name", sorted(PATHS))
def test_a_file_outside_the_layer_folders_is_refused_naming_file_line_and_path(tmp_path, name):
    from brainsmith.hardware.rtlsim.screen import UnsafeSource

    body, named = PATHS[name]
    with pytest.raises(UnsafeSource) as caught:
        screen_text(tmp_path, body)
    message = str(caught.value)
    assert message.startswith(f'{tmp_path / "m.sv"}:3: "{named}" '), message
    assert "outside" in message


def test_a_parameter_file_in_a_layer_folder_passes_the_screen(tmp_path):
    """The stitched design reads each layer's parameter files by absolute path."""
    folder = tmp_path / "code_gen_ipgen_Thresholding_rtl_0_x"
    screen_text(
        tmp_path,
        f'\tinitial $readmemh("{folder}/Thresholding_rtl_0_threshs_0_0.dat", mem);\n'
        '\tinitial $readmemh("./memblock.dat", mem);',
        readable=(str(folder),),
    )


def test_every_generated_and_library_source_of_the_build_passes_the_screen(built, tmp_path):
    """FINN's own generated RTL and finn-rtllib (as compiled here) pass, fifo_gauge too."""
    from finn.util.settings import get_settings
    from qonnx.core.modelwrapper import ModelWrapper

    from brainsmith.frameworks.finn.env import prepare_finn
    from brainsmith.hardware.rtlsim.compile import source_texts
    from brainsmith.hardware.rtlsim.layer_design import layer_design, verilator_ready
    from brainsmith.hardware.rtlsim.screen import screen
    from brainsmith.hardware.rtlsim.verilator import find_toolchain

    prepare_finn()
    toolchain = find_toolchain()
    model = ModelWrapper(str(built / "final.onnx"))
    stage = tmp_path / "screened"
    for node in model.graph.node:
        folder = stage / node.name
        folder.mkdir(parents=True)
        paths = []
        for name, text in source_texts(layer_design(model, node)):
            (folder / name).write_text(text)
            paths.append(str(folder / name))
        screen(paths, toolchain, str(folder))
    gauge = Path(get_settings().finn_rtllib) / "fifo" / "hdl" / "fifo_gauge.sv"
    ready = stage / "fifo_gauge.sv"
    ready.write_text(verilator_ready(str(gauge), gauge.read_text()))
    screen([str(ready)], toolchain, str(stage))


def test_a_netlist_larger_than_the_preprocessors_floor_passes_and_a_macro_bomb_does_not(
    tmp_path, monkeypatch
):
    """A routed netlist is as large as its network (a U-Net's was over 32 MiB, and its
    gate-level check stopped: "Verilator's preprocessor printed more than 32 MiB"): the
    preprocessor may print a few times what the sources hold, so a large plain netlist is
    screened (here one over a floor lowered to 512 KiB); macros that expand without end still
    stop it, naming the line they repeat."""
    from brainsmith.hardware.processes import MIB
    from brainsmith.hardware.rtlsim import screen as screening
    from brainsmith.hardware.rtlsim.screen import PreprocessError
    from brainsmith.hardware.rtlsim.verilator import find_toolchain

    monkeypatch.setattr(screening, "PREPROCESS_LIMIT", MIB // 2)
    wires = "".join(f"  wire w{i} = a ^ w{i - 1};\n" for i in range(1, 30_000))
    netlist = tmp_path / "netlist.v"
    netlist.write_text(f"module netlist(input a, output y);\n  wire w0 = a;\n{wires}"
                       "  assign y = w29999;\nendmodule\n")  # fmt: skip
    assert netlist.stat().st_size > 1.5 * MIB // 2
    toolchain = find_toolchain()
    screening.screen([str(netlist)], toolchain, str(tmp_path))
    doubling = "".join(f"`define M{i} `M{i - 1} `M{i - 1}\n" for i in range(1, 11))
    bomb = tmp_path / "bomb.v"  # 1,000 short lines, each 1,024 tokens expanded: 2 MiB
    bomb.write_text(f"`define M0 x\n{doubling}module bomb;\n" + "`M10\n" * 1000 + "endmodule\n")
    with pytest.raises(PreprocessError, match=r"printed more than .*the line printed most often"):
        screening.screen([str(bomb)], toolchain, str(tmp_path))
