"""The generated RTL, synthesised by Yosys (synth_xilinx, out of context): every RTL layer of
the shipped MLP built for an UltraScale+ part has counts (the RTL matrix layers LUTs and
DSPs, which FINN does not estimate); a second run is served from the cache; HLS layers and a
Versal part are named with their reasons; a broken source gives Yosys' error line; the part
to family table; each source fix applies where its pattern matches and only there."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import time
from pathlib import Path

import pytest

import brainsmith
from brainsmith.hardware.rtlsim.layer_design import hoist_leaf_loads
from brainsmith.hardware.synthesis.families import NotSynthesisable, family_of
from brainsmith.hardware.synthesis.layer_sources import (
    declare_before_use,
    memory_style_names,
    nettype_outside_modules,
    parameters_before_ports,
    primitives_used,
    scope_select_in_range,
    without_recovery_watchdog,
    yosys_ready,
)
from tests.support.processes import Ran, invoke

REPO = Path(__file__).resolve().parents[1]
MODELS = REPO / "examples" / "models"
BLUEPRINTS = REPO / "blueprints"
PART = "xczu7ev-ffvc1156-2-e"
COUNTS = {"LUT", "FF", "CARRY", "DSP", "BRAM_18K", "BRAM_36K", "URAM"}


def slow(test):
    """A test that builds or synthesises: in the slow tier, on one worker with the others."""
    return pytest.mark.slow(pytest.mark.xdist_group("synthesis")(test))


def synth(folder: Path, cache: Path, *args: str, shared: bool = False) -> Ran:
    """``brainsmith synth`` in this process, with the module's own cache, counted by its
    tests; ``shared``: the run's synthesis cache, kept between runs, instead."""
    env = {"BRAINSMITH_CACHE_DIR": str(cache)}
    if not shared:
        env["BRAINSMITH_SYNTHESIS_CACHE"] = None
    return invoke("synth", str(folder), *args, env=env)


def layers(folder: Path) -> dict[str, dict]:
    data = json.loads((folder / "synthesis.json").read_text())
    return {layer["name"]: layer for layer in data["layers"]}


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    """One synthesis cache for the module, so later runs find what the first synthesised."""
    folder = tmp_path_factory.mktemp("synthesis-cache")
    os.chmod(folder, 0o700)
    return folder


STITCHED = ("StreamingFIFO_rtl", "StreamingDataWidthConverter_rtl")
WITH_FIFOS = """extends: {mlp}
steps: [cleanup, qonnx_to_finn, streamline, hardware_inference, specialize, folding,
        estimates, codegen, size_fifos]
"""


@pytest.fixture(scope="module")
def mlp(hub, tmp_path_factory) -> Path:
    """The shipped 4-bit MLP, every layer RTL, built for an UltraScale+ part with its FIFOs
    and width converters inserted and the FIFOs sized (what the stitched design adds)."""
    folder = tmp_path_factory.mktemp("mlp")
    blueprint = folder / "mlp_fifos.yaml"
    blueprint.write_text(WITH_FIFOS.format(mlp=BLUEPRINTS / "mlp.yaml"))
    out = folder / "out"
    brainsmith.build(
        str(MODELS / "mlp_4bit.onnx"),
        str(blueprint),
        str(out),
        options={"fpga_part": PART},
        prefer="rtl",
        verify="none",
    )
    return out


@pytest.fixture(scope="module")
def synthesised(mlp, cache) -> tuple[Path, Ran, float]:
    began = time.perf_counter()
    result = synth(mlp, cache)
    return mlp, result, time.perf_counter() - began


@slow
def test_every_rtl_layer_of_the_mlp_has_yosys_counts(synthesised):
    folder, result, _ = synthesised
    assert result.returncode == 0, result.stderr
    found = layers(folder)
    compute = sorted(name for name in found if not name.startswith(STITCHED))
    assert compute == ["MVAU_rtl_0", "MVAU_rtl_1", "Thresholding_rtl_0", "Thresholding_rtl_1"]
    fifos = [layer for name, layer in found.items() if name.startswith("StreamingFIFO_rtl")]
    assert len(fifos) >= 3 and all("fifo.sv: nettype_outside_modules" in x["fixes"] for x in fifos)
    for layer in found.values():
        assert layer["status"] == "synthesised" and layer["reason"] == "", layer
        assert set(layer["counts"]) == COUNTS and layer["counts"]["FF"] > 0
        assert layer["counts"]["LUT"] > 0 and layer["finn_estimate"] is not None
    # the layers size_fifos inserted after FINN's estimate step are estimated too, by FINN's
    # own methods where it has them and brainsmith's fitted models where it has none
    report = json.loads((folder / "report.json").read_text())
    assert report["incomplete"] == {}, report["incomplete"]
    inserted = [x for x in report["layers"] if x["name"].startswith(STITCHED)]
    assert {x["name"] for x in inserted} == {n for n in found if n.startswith(STITCHED)}
    for layer in inserted:
        assert layer["LUT"] is not None and layer["not_estimated"] == [], layer
        assert layer["estimated_by"]["DSP"] == "brainsmith" and layer["DSP"] == 0, layer
    # FIFOs alike but for their names are synthesised once: the others take its counts
    fresh = [x for x in fifos if not x["cached"]]
    assert fresh and all(not found[name]["cached"] for name in compute)
    for fifo in fifos:
        same = [x for x in fresh if x["counts"] == fifo["counts"]]
        assert same, fifo
    for name in ("MVAU_rtl_0", "MVAU_rtl_1"):
        matrix = found[name]
        # FINN estimates no LUTs for an RTL matrix layer; Yosys counts them, and the DSPs
        assert matrix["finn_estimate"]["LUT"] is None
        assert matrix["counts"]["LUT"] > 0 and matrix["counts"]["DSP"] > 0
        assert "mvu.sv: without_recovery_watchdog" in matrix["fixes"]
    assert "thresholding.sv: scope_select_in_range" in found["Thresholding_rtl_0"]["fixes"]
    data = json.loads((folder / "synthesis.json").read_text())
    assert data["family"] == "xcup" and data["part"] == PART
    assert data["yosys"].startswith("Yosys 0.70")
    assert data["totals"]["DSP"] == sum(layer["counts"]["DSP"] for layer in found.values())
    # the table: FINN's estimate beside Yosys' count, and the totals
    row = next(line for line in result.stdout.splitlines() if line.startswith("MVAU_rtl_0"))
    assert f"- / {found['MVAU_rtl_0']['counts']['LUT']:,}" in row
    assert any(line.startswith("total") for line in result.stdout.splitlines())
    assert "out of context, no place and route" in result.stdout


@slow
def test_a_second_run_is_served_from_the_cache(synthesised, cache):
    folder, _, cold = synthesised
    first = layers(folder)
    began = time.perf_counter()
    result = synth(folder, cache)
    warm = time.perf_counter() - began
    assert result.returncode == 0, result.stderr
    again = layers(folder)
    assert all(layer["cached"] for layer in again.values()), again
    assert {n: layer["counts"] for n, layer in again.items()} == {
        n: layer["counts"] for n, layer in first.items()
    }
    assert warm < cold and all(layer["seconds"] < 1 for layer in again.values())
    assert "cached" in result.stdout
    entries = list((cache / "synthesis").glob("*.json"))
    distinct = sum(1 for layer in first.values() if layer["seconds"] > 0)
    assert len(entries) == distinct < len(first) and all(
        e.stat().st_mode & 0o077 == 0 for e in [cache / "synthesis"]
    )
    assert all(json.loads(e.read_text())["format"] for e in entries)  # JSON, not pickle


@slow
def test_hls_layers_are_named_with_their_reason(hub, cache, tmp_path):
    """The default blueprint leaves some layers in HLS: they have no RTL to synthesise."""
    out = tmp_path / "mixed"
    brainsmith.build(
        str(MODELS / "mlp_4bit.onnx"), None, str(out), options={"fpga_part": PART}, verify="none"
    )
    result = synth(out, cache)
    assert result.returncode == 0, result.stderr
    found = layers(out)
    hls = {name: layer for name, layer in found.items() if "_hls" in layer["op_type"]}
    assert hls, found
    for layer in hls.values():
        assert layer["status"] == "not synthesised" and layer["counts"] is None
        assert layer["reason"].startswith("HLS: no RTL to synthesise")
    assert any(layer["status"] == "synthesised" for layer in found.values())
    assert "not synthesised: HLS: no RTL to synthesise" in result.stdout


@slow
def test_a_versal_part_is_refused_naming_the_family_to_use(mlp, cache, tmp_path):
    folder = tmp_path / "versal"
    shutil.copytree(mlp, folder, ignore=shutil.ignore_patterns("synthesis*"))
    report = json.loads((folder / "report.json").read_text())
    report["fpga_part"] = "xcvc1902-vsva2197-2MP-e-S"  # the part the build would have had
    (folder / "report.json").write_text(json.dumps(report))
    result = synth(folder, cache)
    assert result.returncode == 2
    assert "Versal" in result.stderr and "UltraScale+ (xcup)" in result.stderr
    assert f"--part {PART}" in result.stderr
    assert not (folder / "synthesis").exists() and not (folder / "synthesis.json").exists()


@slow
def test_a_broken_source_gives_the_yosys_error_line_and_keeps_the_log(mlp, cache, tmp_path):
    folder = tmp_path / "broken"
    shutil.copytree(mlp, folder, ignore=shutil.ignore_patterns("synthesis*"))
    (generated,) = (folder / "finn" / "build").glob("code_gen_ipgen_Thresholding_rtl_1_*")
    source = generated / "Thresholding_rtl_1.v"
    text = source.read_text()
    source.write_text(text.replace("endmodule", "wire broken = ;\nendmodule", 1))
    line = text[: text.index("endmodule")].count("\n") + 1
    # edited by hand, so not recorded; the other layers from the run's kept cache
    result = synth(folder, cache, "--allow-changed-rtl", shared=True)
    assert result.returncode == 1, result.stdout
    found = layers(folder)
    broken = found["Thresholding_rtl_1"]
    assert broken["status"] == "failed" and broken["counts"] is None
    assert broken["reason"].startswith(f"Thresholding_rtl_1.v:{line}: ERROR"), broken["reason"]
    log = folder / broken["log"]
    assert log.is_file() and broken["reason"].split(": ", 1)[1] in log.read_text()
    assert f"error: layer Thresholding_rtl_1 (Thresholding_rtl): {broken['reason']}" in (
        result.stderr
    )
    others = [layer for name, layer in found.items() if name != "Thresholding_rtl_1"]
    # the broken layer takes nothing else down (whether served from the cache is checked above)
    assert all(layer["status"] == "synthesised" and layer["counts"] for layer in others), others
    copy = folder / "synthesis" / "Thresholding_rtl_1" / "src" / "Thresholding_rtl_1.v"
    assert "wire broken" in copy.read_text()
    # the fixes were applied to copies: FINN's installed file is as it was
    assert "uwire  snk_re = !snk_we" in rtllib("axi", "hdl", "axilite.sv")


def test_a_folder_that_is_not_a_finished_build_is_refused(tmp_path):
    result = synth(tmp_path, tmp_path / "cache")
    assert result.returncode == 2
    assert "is not a brainsmith build folder (no report.json)" in result.stderr


@slow
def test_the_blocks_of_synthesis_md_run(tmp_path_factory):
    """docs/synthesis.md's commands, as tests/test_docs_blocks.py runs every document's, on
    this worker: its Yosys runs are the shipped MLP's, which the shared cache then serves."""
    from tests.test_docs_blocks import doc_run

    run = doc_run(REPO / "docs" / "synthesis.md", tmp_path_factory)
    assert run.failures == [], "\n\n".join(run.failures)


def test_the_boards_table_of_the_docs_is_brainsmiths_own():
    from brainsmith.frameworks.finn.parts import boards, part_resources

    text = (REPO / "docs" / "synthesis.md").read_text()
    rows = [line for line in text.splitlines() if line.startswith("| `") and "` | `x" in line]
    assert len(rows) == 6
    for row in rows:
        board, part, family, *amounts, source = [c.strip(" `") for c in row.strip("|").split("|")]
        assert boards()[board] == part, row
        try:
            assert family == family_of(part), row
        except NotSynthesisable:
            assert family == "none (Versal)", row
        found = part_resources(part)
        if found is None:
            assert set(amounts) == {"—"} and source == "none", row
        else:
            keys = ("LUT", "FF", "BRAM_18K", "URAM", "DSP")
            assert [int(a.replace(",", "")) for a in amounts] == [found[0][k] for k in keys], row
            assert source == found[1], row


@pytest.mark.parametrize(
    ("part", "family"),
    [
        ("xc7z020clg400-1", "xc7"),
        ("xc7a35ticsg324-1L", "xc7"),
        ("xcku040-ffva1156-2-e", "xcu"),
        ("xcvu095-ffva2104-2-e", "xcu"),
        ("xcku5p-ffvb676-2-e", "xcup"),
        ("xcvu9p-flga2104-2L-e", "xcup"),
        ("xczu7ev-ffvc1156-2-e", "xcup"),
        ("xczu3eg-sbva484-1-e", "xcup"),
        ("xck26-sfvc784-2LV-c", "xcup"),
        ("xcu250-figd2104-2L-e", "xcup"),
        ("xcu280-fsvh2892-2L-e", "xcup"),
        ("xcu55c-fsvh2892-2L-e", "xcup"),
        ("xcau15p-ffvb676-2-e", "xcup"),
    ],
)
def test_the_family_of_each_part(part, family):
    assert family_of(part) == family


@pytest.mark.parametrize(
    "part",
    ["xcvc1902-vsva2197-2MP-e-S", "xcv80-lsva4737-2MHP-e-S", "xcve2302-sfva784-1LP-e-S",
     "xcvp1202-vsva2785-2MP-e-S"],
)  # fmt: skip
def test_versal_parts_are_not_synthesisable_and_the_reason_names_the_nearest_family(part):
    with pytest.raises(NotSynthesisable, match=r"Versal part.*UltraScale\+ \(xcup\)"):
        family_of(part)


def test_an_unknown_part_is_not_guessed():
    with pytest.raises(NotSynthesisable, match="not a part of a family"):
        family_of("lfe5u-85f-8bg381c")


def rtllib(*parts: str) -> str:
    spec = importlib.util.find_spec("finn")
    assert spec is not None and spec.origin is not None
    return (Path(spec.origin).parent / "finn-rtllib" / Path(*parts)).read_text()


def test_the_declaration_order_fix_on_finns_axilite():
    original = rtllib("axi", "hdl", "axilite.sv")
    fixed = declare_before_use(original)
    assert fixed != original
    declared = fixed.index("uwire  snk_re;")
    assert declared < fixed.index("if(snk_re)")  # declared before the first use
    assert "uwire  snk_re =" not in fixed and "assign  snk_re = !snk_we" in fixed
    assert declare_before_use(fixed) == fixed  # applied once, then nothing matches
    assert declare_before_use("module m; uwire snk_re = 1; endmodule") == (
        "module m; uwire snk_re = 1; endmodule"
    )


def test_the_watchdog_fix_on_finns_mvu():
    original = rtllib("mvu", "mvu.sv")
    fixed = without_recovery_watchdog(original)
    assert "blkRecoveryWatch" in original and "#100ns" in original
    assert "#100ns" not in fixed and "DSP48E2" in fixed
    assert len(original) - len(fixed) < 800  # the watchdog only
    assert without_recovery_watchdog(fixed) == fixed
    other = "if(1) begin : blkRecoveryWatch\n logic x;\nend : blkRecoveryWatch"
    assert without_recovery_watchdog(other) == other  # not the watchdog: left alone


def test_the_part_select_fix_on_finns_thresholding():
    original = rtllib("thresholding", "hdl", "thresholding.sv")
    fixed = scope_select_in_range(original)
    assert fixed.count("p.ptr[M-1:(SN+1 < M? SN+1 : M-1)]") == 1
    assert fixed.replace("(SN+1 < M? SN+1 : M-1)", "SN+1") == original
    assert scope_select_in_range(fixed) == fixed


def test_the_leaf_load_fix_on_finns_add_multi():
    original = rtllib("mvu", "add_multi.sv")
    fixed = hoist_leaf_loads(original)
    assert fixed != original
    function = fixed.index("function leaf_load_t init_leaf_loads()")
    assert function < fixed.index("if(L < 1) begin : genTrivial")  # outside the generate
    assert hoist_leaf_loads(fixed) == fixed


@pytest.mark.parametrize(("parts", "module"), [(("fifo", "hdl", "fifo.sv"), "fifo"),
                                              (("dwc", "hdl", "vpc.sv"), "vpc")])  # fmt: skip
def test_the_nettype_fix_on_finns_fifo_and_width_converter(parts, module):
    original = rtllib(*parts)
    fixed = nettype_outside_modules(original)
    header, end = fixed.index(f"module {module} #("), fixed.index(f"endmodule : {module}")
    assert fixed.rindex("`default_nettype none", 0, header) < header  # before the module
    assert fixed.index("`default_nettype wire", end) > end  # after it
    assert "`default_nettype" not in fixed[header:end]
    assert sorted(fixed.splitlines()) == sorted(original.splitlines())  # lines moved, not changed
    assert nettype_outside_modules(fixed) == fixed
    inside = "module m (input a);\n`default_nettype none\nwire b;\n`default_nettype wire\nassign b = a;\nendmodule\n"
    assert nettype_outside_modules(inside) == inside  # not just inside: left alone


@pytest.mark.parametrize(
    "parts",
    [("memstream", "hdl", "memstream.sv"), ("thresholding", "hdl", "thresholding.sv"),
     ("fifo", "hdl", "fifo.sv")],
)  # fmt: skip
def test_the_memory_style_fix_on_finns_weight_threshold_and_fifo_memories(parts):
    original = rtllib(*parts)
    fixed = memory_style_names(original)
    assert "RAM_STYLE =" in original and "(* RAM_STYLE" not in fixed and "ram_style =" in fixed
    assert fixed.lower() == original.lower()  # attribute names only: the same text otherwise
    assert memory_style_names(fixed) == fixed
    assert yosys_ready("memstream.sv", original, "/nowhere") == fixed
    untouched = 'always @(*) y = a * b; (* X_INTERFACE_INFO = "RAM_STYLE = x" *) wire q;'
    assert memory_style_names(untouched) == untouched


def test_layers_alike_but_for_their_names_are_one_design_to_synthesise():
    from brainsmith.hardware.synthesis.layer_sources import SynthesisDesign

    def fifo(name: str, depth: int) -> SynthesisDesign:
        text = f"module {name} (input x);\n  fifo #(.DEPTH({depth})) {name}_inst ();\nendmodule\n"
        return SynthesisDesign(name, "StreamingFIFO_rtl", name, [(f"{name}.v", text)], [], [])

    assert fifo("StreamingFIFO_rtl_3", 2).digest() == fifo("StreamingFIFO_rtl_17", 2).digest()
    assert fifo("StreamingFIFO_rtl_3", 2).digest() != fifo("StreamingFIFO_rtl_3", 4).digest()
    # a longer name that begins with the layer's is not the layer's name
    longer = SynthesisDesign(
        "L_1", "X", "L_1", [("L_1.v", "module L_1; L_10 u(); endmodule")], [], []
    )
    other = SynthesisDesign(
        "L_2", "X", "L_2", [("L_2.v", "module L_2; L_20 u(); endmodule")], [], []
    )
    assert longer.digest() != other.digest()


def test_primitives_are_found_where_instantiated_only():
    mvu = rtllib("mvu", "mvu.sv")
    assert {"DSP48E1", "DSP48E2", "LUT6_2"} <= set(primitives_used([mvu]))
    assert primitives_used(["// DSP48E2 #( in a comment\nmodule m; endmodule"]) == []


def test_the_parameter_order_fix_on_finns_sliding_window_wrapper():
    template = rtllib("swg", "swg_template_wrapper.v")
    original = template.replace("$TOP_MODULE_NAME$", "swg_0")
    original = original.replace("$IN_WIDTH_PADDED$", "24").replace("$OUT_WIDTH_PADDED$", "216")
    fixed = parameters_before_ports(original)
    header = "module swg_0 #(parameter IN_WIDTH_PADDED = 24, parameter OUT_WIDTH_PADDED = 216) ("
    assert header in fixed  # declared before the ports that use them
    assert "parameter IN_WIDTH_PADDED = 24;" in original and "IN_WIDTH_PADDED = 24;" not in fixed
    assert "parameter BIT_WIDTH = $BIT_WIDTH$;" in fixed  # the others stay where they are
    assert parameters_before_ports(fixed) == fixed
    plain = "module m (input a);\nparameter W = 2;\nendmodule"
    assert parameters_before_ports(plain) == plain  # no port names it: left alone


def test_every_generated_wrapper_gets_the_parameter_fix_and_add_multi_its_hoist(tmp_path):
    fixes: list[str] = []
    wrapper = "module w (input [N-1:0] x);\nparameter N = 4;\nendmodule\n"
    assert "#(parameter N = 4)" in yosys_ready("L_3_wrapper.v", wrapper, str(tmp_path), fixes)
    add_multi = rtllib("mvu", "add_multi.sv")
    hoisted = yosys_ready("add_multi.sv", add_multi, str(tmp_path), fixes)
    assert hoisted != add_multi and "init_leaf_loads" in hoisted
    assert fixes == ["L_3_wrapper.v: parameters_before_ports", "add_multi.sv: hoist_leaf_loads"]


def matrix_layer(mw: int, mh: int, simd: int, pe: int, ram_style: str, seed: int):
    """A 4-bit RTL matrix layer (MW x MH, random INT4 weights) with its weights on chip in
    ``ram_style``, its RTL generated for PART."""
    import numpy as np
    from finn.transformation.fpgadataflow.prepare_ip import PrepareIP
    from qonnx.core.datatype import DataType
    from qonnx.util.basic import gen_finn_dt_tensor

    from benchmarks.synth_fit import _model
    from brainsmith.frameworks.finn.env import prepare_finn

    prepare_finn()
    np.random.seed(seed)
    weights = gen_finn_dt_tensor(DataType["INT4"], [mw, mh])
    model = _model(
        "MVAU", [("x", [1, mw])], [("y", [1, mh])], {"x": "UINT4", "w": "INT4"}, {"w": weights},
        MW=mw, MH=mh, SIMD=simd, PE=pe, inputDataType="UINT4", weightDataType="INT4",
        outputDataType="INT32", noActivation=1, binaryXnorMode=0,
        mem_mode="internal_decoupled", ram_style=ram_style,
    )  # fmt: skip
    return model.transform(PrepareIP(PART, 5.0))


@slow
def test_a_narrow_weight_memory_of_640_words_in_lut_ram_is_synthesised(
    hub, cache, tmp_path, monkeypatch
):
    """A matrix layer whose 640 x 4-bit weights stay in distributed RAM (CNV's last layer):
    Yosys' own UltraScale LUT-RAM library offered a RAM its mapping file cannot map."""
    from brainsmith.hardware.synthesis.layer_sources import synthesis_design
    from brainsmith.hardware.synthesis.run import cache_root, synthesise_layer
    from brainsmith.hardware.synthesis.yosys import find_yosys, lutram_library

    model = matrix_layer(64, 10, 1, 1, "distributed", seed=0)
    design = synthesis_design(model, model.graph.node[0])
    monkeypatch.setenv("BRAINSMITH_CACHE_DIR", str(cache))
    monkeypatch.delenv("BRAINSMITH_SYNTHESIS_CACHE", raising=False)
    result = synthesise_layer(design, "xcup", find_yosys(), cache_root(), str(tmp_path / "run"))
    assert result.status == "synthesised", result.reason
    assert result.counts is not None and result.counts["DSP"] == 1
    library = lutram_library()
    assert library is not None and 'option "ABITS" 9 {\n\t\tabits 9;' in library
    assert (tmp_path / "run" / "lutrams_xcu.txt").read_text() == library
    script = (tmp_path / "run" / "run.ys").read_text()
    assert "-lib /design/lutrams_xcu.txt" in script and "-run map_ffram:" in script


@slow
@pytest.mark.parametrize(("style", "in_bram"), [("distributed", False), ("block", True)])
def test_a_weight_memory_is_synthesised_where_its_ram_style_puts_it(
    hub, cache, tmp_path, monkeypatch, style, in_bram
):
    """1,024 words of 16-bit weights: in block RAM when built so, in LUT-RAM when built
    ``distributed`` (finn-rtllib's upper-case ``RAM_STYLE`` attribute was not read)."""
    from brainsmith.hardware.synthesis.layer_sources import synthesis_design
    from brainsmith.hardware.synthesis.run import cache_root, synthesise_layer
    from brainsmith.hardware.synthesis.yosys import find_yosys

    model = matrix_layer(128, 32, 2, 2, style, seed=1)
    design = synthesis_design(model, model.graph.node[0])
    assert any(fix.endswith(": memory_style_names") for fix in design.fixes)
    monkeypatch.setenv("BRAINSMITH_CACHE_DIR", str(cache))
    monkeypatch.delenv("BRAINSMITH_SYNTHESIS_CACHE", raising=False)
    result = synthesise_layer(design, "xcup", find_yosys(), cache_root(), str(tmp_path / "run"))
    assert result.status == "synthesised", result.reason
    counts = result.counts
    assert counts is not None
    blocks = counts["BRAM_18K"] + counts["BRAM_36K"]
    assert (blocks > 0) == in_bram, counts
    if not in_bram:  # 16 Kib in LUT-RAM: at least 16 Kib / 512 bits per RAM64M8's 7 LUTs
        assert counts["LUT"] >= 16 * 1024 // 512 * 7, counts
    # brainsmith's estimate (the fitted unit and the weight memory as Yosys builds it)
    from qonnx.custom_op.registry import getCustomOp

    from brainsmith.frameworks.finn.rtl_costs import estimate

    estimated = estimate(getCustomOp(model.graph.node[0]), PART)["LUT"]
    assert abs(estimated - counts["LUT"]) <= 0.25 * counts["LUT"], (estimated, counts)


@pytest.mark.parametrize("module", ["synthesis", "rtlsim"])
def test_a_tool_cache_others_can_write_is_refused_naming_its_variable(
    tmp_path, monkeypatch, module
):
    """``BRAINSMITH_SYNTHESIS_CACHE`` / ``BRAINSMITH_RTLSIM_CACHE``: a folder of the user's own
    is made private (0700) and used; one other users can write is refused, naming the
    variable and what to do."""
    from brainsmith.hardware.rtlsim.compile import RTLSIM_CACHE_VARIABLE
    from brainsmith.hardware.rtlsim.compile import cache_root as rtlsim_root
    from brainsmith.hardware.synthesis.run import SYNTHESIS_CACHE_VARIABLE
    from brainsmith.hardware.synthesis.run import cache_root as synthesis_root

    variable, root = {
        "synthesis": (SYNTHESIS_CACHE_VARIABLE, synthesis_root),
        "rtlsim": (RTLSIM_CACHE_VARIABLE, rtlsim_root),
    }[module]
    own = tmp_path / "own"
    monkeypatch.setenv(variable, str(own))
    assert root() == str(own) and own.stat().st_mode & 0o777 == 0o700
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    monkeypatch.setenv(variable, str(shared))
    with pytest.raises(Exception, match=f"{variable}=.* only this user can write") as caught:
        root()
    assert "point it at a folder of your own or unset it" in str(caught.value)
