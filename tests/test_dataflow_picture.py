"""The dataflow picture (dataflow.svg) drawn from a report: compute layers as boxes in
stream order, FIFOs and width converters as the labels of the streams between them,
branches side by side, the bottleneck marked, CPU nodes outside the accelerator's box."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from brainsmith.report.picture import COLUMNS, dataflow_svg

SVG = "{http://www.w3.org/2000/svg}"


def layer(name, op_type, reads, cycles=100, **extra):
    return {"name": name, "op_type": op_type, "backend": "rtl", "cycles": cycles,
            "reads": [{"from": r, "bits": 8} for r in reads], **extra}  # fmt: skip


def residual_report() -> dict:
    """A fork into a body and a skip, joined by an add, with FIFOs and a width converter."""
    return {
        "layers": [
            layer("Thresholding_0", "Thresholding", [None], PE=2),
            layer("Fifo_0", "StreamingFIFO", ["Thresholding_0"], depth=2),
            layer("Dup_0", "DuplicateStreams", ["Fifo_0"]),
            layer("Fifo_1", "StreamingFIFO", ["Dup_0"], depth=19),
            layer("Dwc_0", "StreamingDataWidthConverter", ["Fifo_1"]),
            layer("Fifo_2", "StreamingFIFO", ["Dwc_0"], depth=2),
            layer("MVAU_0", "MVAU", ["Fifo_2"], cycles=900, PE=4, SIMD=8),
            layer("Fifo_3", "StreamingFIFO", ["Dup_0"], depth=289),
            layer("Add_0", "IntAdd", ["MVAU_0", "Fifo_3"]),
        ],
        "performance": {"max_cycles_layer": "MVAU_0", "max_cycles": 900},
        "cpu_nodes": {"count": 2, "nodes": [
            {"name": "Transpose_0", "op_type": "Transpose", "side": "before"},
            {"name": "Mul_0", "op_type": "Mul", "side": "after"}]},
    }  # fmt: skip


def boxes(svg: str) -> dict[str, ET.Element]:
    root = ET.fromstring(svg)  # well-formed XML, as a file or inline
    return {g.find(f"{SVG}title").text: g.find(f"{SVG}rect") for g in root.iter(f"{SVG}g")}


def texts(svg: str) -> list[str]:
    return [t.text for t in ET.fromstring(svg).iter(f"{SVG}text")]


def test_compute_layers_are_boxes_and_fifos_label_the_streams():
    svg = dataflow_svg(residual_report())
    assert set(boxes(svg)) == {"Thresholding_0", "Dup_0", "MVAU_0", "Add_0"}
    words = texts(svg)
    assert "FIFO 19+2" in words  # the body's stream: two FIFOs around a width converter
    assert "FIFO 289" in words and "FIFO 2" in words  # the skip's buffer, the fork's input
    assert "MVAU · rtl · PE 4 SIMD 8" in words


def test_the_bottleneck_is_marked_and_the_cpu_nodes_are_outside_the_accelerator():
    svg = dataflow_svg(residual_report())
    assert boxes(svg)["MVAU_0"].get("stroke") == "#b3261e"
    assert "900 cycles · bottleneck" in texts(svg)
    words = " ".join(texts(svg))
    assert "on the CPU, before: Transpose_0 (Transpose)" in words
    assert "on the CPU, after: Mul_0 (Mul)" in words
    assert "accelerator: 4 layers" in words


def test_a_join_comes_after_both_branches_and_its_inputs_enter_apart():
    svg = dataflow_svg(residual_report())
    found = boxes(svg)
    x = {name: float(rect.get("x")) for name, rect in found.items()}
    assert x["Thresholding_0"] < x["Dup_0"] < x["MVAU_0"] < x["Add_0"]
    ends = [line.get("points").split()[-1] for line in ET.fromstring(svg).iter(f"{SVG}polyline")]
    into_add = [end for end in ends if float(end.split(",")[0]) == x["Add_0"]]
    assert len(into_add) == 2 and len(set(into_add)) == 2


def test_branches_at_the_same_depth_get_lanes_and_long_chains_wrap_into_rows():
    chain = [layer(f"L{i}", "Thresholding", [f"L{i - 1}" if i else None]) for i in range(12)]
    branch = [layer("Side", "Thresholding", ["L0"])]
    found = boxes(dataflow_svg({"layers": chain + branch}))
    assert found["Side"].get("x") == found["L1"].get("x")
    assert float(found["Side"].get("y")) > float(found["L1"].get("y"))
    rows = {float(found[f"L{i}"].get("y")) for i in range(12)}
    assert len(rows) == -(-12 // COLUMNS)


def test_no_layers_no_picture():
    assert dataflow_svg({"layers": []}) is None
    assert dataflow_svg({"layers": [{"name": "x", "op_type": "MVAU"}]}) is None  # no streams
