"""Folding that meets the target at the fewest resources: brainsmith's search against FINN's
SetFolding on real Brevitas exports, the limit named when a target is out of reach, and the
``build.folding`` settings."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest
from qonnx.core.modelwrapper import ModelWrapper

import brainsmith
from brainsmith.blueprint import BlueprintError, load_blueprint
from brainsmith.builder import BuildError
from brainsmith.frameworks.finn.folding.search import (
    COSTED,
    _Search,
    estimate,
    fold,
    layer_cycles,
)
from brainsmith.frameworks.finn.folding.target import finn_record
from brainsmith.frameworks.finn.parts import part_resources
from tests.support.models import export_zoo

REPO = Path(__file__).resolve().parents[1]
PART = "xcvc1902-vsva2197-2MP-e-S"
AVAILABLE = part_resources(PART)[0]


@pytest.fixture(scope="module")
def specialized(hub, tmp_path_factory):
    """The zoo's ResNet (a Brevitas export) built up to its backends, before folding."""
    folder = tmp_path_factory.mktemp("folding")
    model = str(REPO / "examples" / "models" / "zoo" / "resnet8.onnx")
    head = brainsmith.build(model, None, str(folder / "head"), stop_after=5, verify="none")
    return ModelWrapper(head.checkpoint.model)


def setfolding(model, target: int, wwidth_max: int = 36):
    from finn.transformation.fpgadataflow.set_folding import SetFolding

    return model.transform(SetFolding(target, mvau_wwidth_max=wwidth_max))


def cost(model) -> float:
    """The design's estimated resources as fractions of the part, summed."""
    from qonnx.custom_op.registry import getCustomOp

    total = 0.0
    for node in model.graph.node:
        if node.domain.startswith("finn.custom_op.fpgadataflow"):
            found = estimate(getCustomOp(node), PART)
            total += sum(found[key] / AVAILABLE[key] for key in COSTED if AVAILABLE[key])
    return total


pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("build")]


def test_brainsmith_folding_meets_a_target_finn_setfolding_misses(specialized):
    target = 2000  # 100,000 fps at 5 ns
    finn = setfolding(copy.deepcopy(specialized), target)
    record = finn_record(finn, target, 36)
    assert record["cycles"] > target and record["bottleneck"]  # before: 48,828 fps
    assert "mvau_wwidth_max 36" in record["limit"]
    ours = copy.deepcopy(specialized)
    result = fold(ours, target, PART, AVAILABLE)
    assert max(layer_cycles(ours).values()) <= target
    assert result.bottleneck is None and result.cycles <= target
    assert result.utilisation < 0.9


def test_where_both_meet_the_target_brainsmith_costs_no_more(specialized):
    for target in (20_000, 8_000):
        finn = setfolding(copy.deepcopy(specialized), target)
        ours = copy.deepcopy(specialized)
        fold(ours, target, PART, AVAILABLE)
        assert max(layer_cycles(finn).values()) <= target
        assert max(layer_cycles(ours).values()) <= target
        assert cost(ours) <= cost(finn) * 1.0001, target


def test_kept_estimates_follow_each_change_of_a_layers_folding(specialized):
    """A process keeps the search's estimates by the layer's kind and attributes: a layer
    costed again after its folding changed gets its new figures, those FINN's estimate gives
    afresh, and a second search of the same model folds every layer the same."""
    from qonnx.custom_op.registry import getCustomOp

    from brainsmith.frameworks.finn.folding.search import MATRIX_LAYERS, costing

    model = copy.deepcopy(specialized)
    (layer, *_) = [getCustomOp(n) for n in model.graph.node if n.op_type in MATRIX_LAYERS]
    kept, seen = costing(), []
    for pe in (1, layer.get_nodeattr("MH"), 1):
        layer.set_nodeattr("PE", pe)
        seen.append(kept.estimate(layer, PART))
        assert seen[-1] == estimate(layer, PART), pe
    assert seen[0] != seen[1] and seen[0] == seen[2]
    first, second = copy.deepcopy(specialized), copy.deepcopy(specialized)
    fold(first, 8_000, PART, AVAILABLE)
    fold(second, 8_000, PART, AVAILABLE)
    assert [list(n.attribute) for n in first.graph.node] == [
        list(n.attribute) for n in second.graph.node
    ]


@pytest.mark.big  # FINN's full-size CNV: make test-big
@pytest.mark.big  # FINN's full-size CNV: make test-big
def test_weights_go_to_uram_only_where_the_bitstream_initialises_it(hub, tmp_path):
    """On an UltraScale+ part FINN generates a layer with URAM weights only if they are
    written at run time (its codegen asserts so): FINN's full-size CNV w2a2, all RTL, folded
    at FINN's own fps there, builds through codegen with no weights in URAM."""
    model = export_zoo("cnv_w2a2", tmp_path)
    result = brainsmith.build(
        str(model), None,
        str(tmp_path / "out"), verify="none", prefer="rtl",
        options={"fpga_part": "xczu7ev-ffvc1156-2-e", "target_fps": 7972, "size_fifos": False},
    )  # fmt: skip
    assert result.report["status"] == "ok"
    styles = {
        node.name: attribute.s.decode()
        for node in ModelWrapper(str(Path(result.output_dir) / "final.onnx")).graph.node
        for attribute in node.attribute
        if attribute.name == "ram_style"
    }
    assert styles and "ultra" not in styles.values(), styles


def test_a_target_out_of_reach_names_the_limiting_layer_and_limit(specialized):
    model = copy.deepcopy(specialized)
    result = fold(model, 10, PART, AVAILABLE)  # 20 M fps: no layer can
    assert result.bottleneck and result.cycles > 10
    assert result.layers[result.bottleneck]["limit"] == result.limit
    assert "fully parallel" in result.limit or "at its most parallel" in result.limit
    balanced = layer_cycles(model)  # no layer folded faster than the slowest needs
    assert max(balanced.values()) == result.cycles
    small = fold(copy.deepcopy(specialized), 2000, PART, AVAILABLE, max_utilisation=0.005)
    assert small.limit.startswith("the part:") and "max_utilisation" in small.limit
    assert small.utilisation <= 0.005 or small.cycles > 2000


def test_a_design_over_the_part_takes_the_fastest_folding_that_fits_and_says_why(specialized):
    """With a stated share of the part between what the target needs and the smallest
    design, the search keeps the fastest folding that fits, 10x the smallest's frames per
    second or more, and its limit says why it is not faster: what every layer folded for
    the fastest its slowest layer goes needs (before: labelled with the target's cycles),
    the folding chosen with its most used resource, and what the next faster folding
    needs."""
    share = 0.01
    smallest = fold(copy.deepcopy(specialized), 2**30, PART, AVAILABLE)
    model = copy.deepcopy(specialized)
    result = fold(model, 100, PART, AVAILABLE, max_utilisation=share)
    assert result.utilisation <= share and result.cycles * 10 <= smallest.cycles
    search = _Search(PART, AVAILABLE)  # one cycle less for the slowest layer: over the share
    assert max(search.apply(model, result.cycles - 1).values()) < result.cycles
    assert search.utilisation(model) > share
    balanced = re.search(r"every layer folded for ([\d,]+) cycles \(the fastest (\S+) goes\)",
                         result.limit)  # fmt: skip
    assert balanced and int(balanced[1].replace(",", "")) > 100, result.limit
    chosen = f"folded for {result.cycles:,} cycles instead, the fastest folding within it ("
    assert chosen in result.limit, result.limit
    top = max(COSTED, key=lambda k: result.totals[k] / AVAILABLE[k] if AVAILABLE[k] else 0)
    assert f"({top} {result.totals[top]:,.0f} of {AVAILABLE[top]:,} (" in result.limit
    faster = re.search(r"; the next faster folding, ([\d,]+) cycles, needs (\S+) ", result.limit)
    assert faster and int(faster[1].replace(",", "")) < result.cycles, result.limit
    assert faster[2] in COSTED


def test_build_uses_the_search_the_blueprint_names(hub, tmp_path):
    blueprint = tmp_path / "finn_folding.yaml"
    blueprint.write_text(
        f"extends: {REPO / 'blueprints' / 'mlp.yaml'}\n"
        "build:\n  target_fps: 1000000\n  folding: {search: finn, mvau_wwidth_max: 8}\n"
    )
    model = str(REPO / "examples" / "models" / "mlp_4bit.onnx")
    for name, chosen in (
        ("finn", str(blueprint)),
        ("brainsmith", str(REPO / "blueprints" / "mlp.yaml")),
    ):
        result = brainsmith.build(model, chosen, str(tmp_path / name), verify="none",
                                  options={"target_fps": 1_000_000})  # fmt: skip
        record = json.loads(
            (Path(result.output_dir) / "finn" / "report" / "folding.json").read_text()
        )
        assert record["search"] == name
        assert set(record["layers"]) >= {"MVAU_rtl_0"} or record["layers"]


def test_folding_settings_are_checked_where_they_are_written(tmp_path):
    blueprint = tmp_path / "bad.yaml"
    blueprint.write_text(
        f"extends: {REPO / 'blueprints' / 'base.yaml'}\n"
        "build:\n"
        "  folding:\n"
        "    search: fastest\n"
        "    max_utilisation: 1.5\n"
        "    speed: 3\n"
    )
    with pytest.raises(BlueprintError) as caught:
        load_blueprint(str(blueprint))
    text = str(caught.value)
    assert (
        f"{blueprint}:4:13: error: build.folding.search is" in text and "brainsmith, finn" in text
    )
    assert f"{blueprint}:5:22: error: build.folding.max_utilisation is 1.5" in text
    assert f"{blueprint}:6:5: error: unknown key 'speed' in build.folding" in text


def test_the_folding_search_is_a_design_space_dimension(tmp_path):
    """Variants that differ only in build.folding share every step before folding."""
    from tests.support.processes import invoke

    blueprint = tmp_path / "explore.yaml"
    blueprint.write_text(
        f"extends: {REPO / 'blueprints' / 'mlp.yaml'}\n"
        "build: {target_fps: 100000}\n"
        "design_space:\n  build:\n    folding: [{search: brainsmith}, {search: finn}]\n"
    )
    code, out, err = invoke("blueprint", "show", str(blueprint))
    assert code == 0, err
    assert "2 variants" in out and "build.folding x2" in out
    assert "v00: steps 6-13 folding" in out and "[build.folding={'search': 'finn'}]" in out
    assert "    - search: finn\n      mvau_wwidth_max: 36\n" in out


@pytest.fixture(scope="module")
def wide_mlp(hub, tmp_path_factory) -> Path:
    """A binarized MLP with wide layers, as FINN's LFC (2-bit activations)."""
    from tests.test_zoo import export

    folder = tmp_path_factory.mktemp("wide_mlp")
    export(folder, {"lfc_w1a2": "tfc(1, 2, hidden=(768, 768, 768))"})
    return folder / "lfc_w1a2.onnx"


def test_memories_are_spread_over_lut_ram_and_block_ram_on_the_users_part(wide_mlp, tmp_path):
    """The wide MLP for a ZCU104 at 100,000 fps: each layer's cheapest folding alone puts
    every weight in LUT-RAM (48 % of the part's LUTs, no block RAM); the search moves layers
    to block RAM while that lowers the most used resource, to less than all weights in either
    memory would use."""
    from qonnx.custom_op.registry import getCustomOp

    part = "xczu7ev-ffvc1156-2-e"
    available = part_resources(part)[0]
    head = brainsmith.build(
        str(wide_mlp), None, str(tmp_path / "head"), stop_after=5,
        verify="none", options={"fpga_part": part},
    )  # fmt: skip
    model = ModelWrapper(head.checkpoint.model)
    result = fold(model, 2000, part, available)
    assert result.cycles <= 2000
    matrices = [getCustomOp(n) for n in model.graph.node if n.op_type.startswith("MVAU")]
    styles = {layer.get_nodeattr("ram_style") for layer in matrices}
    assert {"distributed", "block"} <= styles, styles

    def peak(style: str) -> float:
        for layer in matrices:
            layer.set_nodeattr("ram_style", style)
        totals = dict.fromkeys(COSTED, 0.0)
        for node in model.graph.node:
            if node.domain.startswith("finn.custom_op.fpgadataflow"):
                for key, value in estimate(getCustomOp(node), part).items():
                    totals[key] += value
        return max(totals[key] / available[key] for key in COSTED if available[key])

    assert result.utilisation < min(peak("distributed"), peak("block")) - 0.05


def test_a_design_over_the_part_is_an_error_unless_the_blueprint_accepts_it(wide_mlp, tmp_path):
    """FINN's SetFolding does not fit a design to the part: the wide MLP at 600,000 fps for a
    PYNQ-Z1's xc7z020 needs more LUTs than it has. The estimates step says so and stops
    (before: exit 0 with a warning); ``allow_over_part`` builds it, and the report warns."""
    options = {"fpga_part": "xc7z020clg400-1", "target_fps": 600_000,
               "folding": {"search": "finn"}}  # fmt: skip
    with pytest.raises(BuildError) as caught:
        brainsmith.build(str(wide_mlp), None, str(tmp_path / "out"), verify="none",
                         options=options)  # fmt: skip
    error = caught.value
    assert error.step == "estimates", error
    assert error.reason.startswith("the design does not fit xc7z020clg400-1: it is estimated to")
    assert "LUT " in error.reason and "MVAU_hls" in error.reason, error.reason
    assert re.search(r"LUT [\d,]+ \(\d+\.\d\d % of the part; ", error.reason), error.reason
    assert "build.allow_over_part: true" in error.hint
    result = brainsmith.build(
        str(wide_mlp),
        None,
        str(tmp_path / "accepted"),
        verify="none",
        options={**options, "allow_over_part": True},
    )
    from brainsmith.report.text import warning_lines

    report = json.loads(Path(result.report_path).read_text())
    over = [line for line in warning_lines(report) if "does not fit" in line]
    assert len(over) == 1 and "xc7z020clg400-1" in over[0] and "LUT" in over[0], over
    assert report["utilisation"]["percent"]["LUT"] > 100
    assert any("accepted: build.allow_over_part" in note for note in report["notes"])


def test_with_no_target_a_network_slower_than_the_default_is_folded_for_it(hub, tmp_path):
    """No target named: the zoo's ResNet, 589,824 cycles a frame unfolded, is folded for
    brainsmith's default throughput (at 5 ns: 200,000 cycles), and the build says so and
    how to ask for another; its report holds no target (the user named none)."""
    from brainsmith.blueprint.choices import DEFAULT_FPS

    model = str(REPO / "examples" / "models" / "zoo" / "resnet8.onnx")
    options = {"size_fifos": False}
    result = brainsmith.build(model, None, str(tmp_path / "out"), verify="none", options=options)
    report = result.report
    assert report["status"] == "ok" and report["target"] is None
    assert report["performance"]["estimated_fps"] >= DEFAULT_FPS
    note = next(n for n in report["notes"] if n.startswith("no target: "))
    assert f"folded for {DEFAULT_FPS:,} fps, brainsmith's default" in note
    assert "its slowest layer took 589,824 cycles a frame; 200,000 allowed" in note
    assert "--target-fps" in note
    record = json.loads((Path(result.output_dir) / "finn/report/folding.json").read_text())
    assert record["target_cycles"] == 200_000 and record["cycles"] <= 200_000


def test_with_no_target_a_network_that_meets_the_default_keeps_its_smallest_design(hub, tmp_path):
    """The shipped MLP (2,048 cycles a frame unfolded) is faster than the default target
    asks: no layer is folded and no folding is recorded."""
    from qonnx.custom_op.registry import getCustomOp

    def unfolded(model: ModelWrapper) -> bool:
        layers = [getCustomOp(n) for n in model.graph.node if n.op_type.startswith("MVAU")]
        return bool(layers) and all(
            layer.get_nodeattr("PE") == 1 and layer.get_nodeattr("SIMD") == 1 for layer in layers
        )

    mlp = str(REPO / "examples" / "models" / "mlp_4bit.onnx")
    head = brainsmith.build(mlp, None, str(tmp_path / "mlp"), stop_after=6, verify="none")
    assert unfolded(ModelWrapper(head.checkpoint.model))
    assert not (Path(head.output_dir) / "finn/report/folding.json").exists()


def test_with_no_target_a_default_the_part_cannot_hold_says_why_it_falls_short(hub, tmp_path):
    """The same ResNet for the smallest ULX3S (28 MULT18): the default asks for 80,000 cycles a
    frame at the board's 80 MHz, the part holds 98,304, and the note says what stopped it."""
    model = str(REPO / "examples" / "models" / "zoo" / "resnet8.onnx")
    options = {"board": "ulx3s-12f", "size_fifos": False}
    result = brainsmith.build(model, None, str(tmp_path / "out"), verify="none", options=options)
    note = next(n for n in result.report["notes"] if n.startswith("no target: "))
    assert "80,000 allowed at the clock" in note, note
    short = re.search(r"; short of it at ([\d,]+) cycles a frame: the part: .*MULT18", note)
    assert short and int(short[1].replace(",", "")) > 80_000, note
