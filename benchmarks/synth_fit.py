"""Cost models of RTL layers fitted to Yosys' counts.

Small single-layer models of each kind (FINN's ``MVAU_rtl``, ``Thresholding_rtl``,
``ConvolutionInputGenerator_rtl``, ``StreamingFIFO_rtl``, ``StreamingDataWidthConverter_rtl``
and ``FMPadding_rtl``, and brainsmith's ``DuplicateStreams_rtl``, ``Pool_rtl``,
``IntAdd_rtl``, ``GlobalAccPool_rtl``, ``LabelSelect_rtl``, ``WidthConverter_rtl`` and
``StreamingDepthToSpace_rtl``) over
a sweep of shapes, bit widths and foldings, each synthesised by Yosys
(``brainsmith.hardware.synthesis``, UltraScale+, cached by content: a second run is fast; random
weights and thresholds are seeded per point, so they hit the cache too). Per kind and
resource the model in ``brainsmith.frameworks.finn.rtl_costs.TERMS`` is fitted by least
squares on the sweep's fitting points and checked on its held-out points, against the
previous estimate: FINN's where it has one, else the hand-written estimate brainsmith's
layer had (``HANDWRITTEN``). ``CHECKS`` are fitted the same way to compare with what FINN
does estimate; they are not shipped. ``VVAU_rtl`` is not swept: FINN specialises it only
for Versal parts, which Yosys does not map.

    .venv/bin/python -m benchmarks.synth_fit [--kinds Thresholding_rtl,...]
        [--family ecp5|ice40|gowin|gatemate]

``--kinds`` synthesises only those kinds' points again and takes the others' counts from the
previous benchmarks/results/synth_fit.json (every model is fitted again). ``SYNTH_FIT_JOBS``
(default 1) Yosys runs at once.

Writes the coefficients to brainsmith/frameworks/finn/rtl_costs.json and every point, each
fit's error and the previous estimate's error to benchmarks/results/synth_fit.json.

``--family ecp5`` synthesises the same points of the kinds the folding search folds by their
cost (``rtl_costs.FAMILY_KINDS``, and ``ECP5_POINTS``) for Lattice ECP5 (Yosys
``synth_ecp5``, FINN's layers made for the stand-in part a Lattice build has,
``brainsmith.planning.lattice.STAND_IN_PART``), counting LUT4, FF, MULT18 and EBR as
nextpnr does (``brainsmith.hardware.synthesis.ecp5``), and fits ``rtl_costs.FAMILY_TERMS``: written to
brainsmith/hardware/synthesis/costs/ecp5.json and benchmarks/results/synth_fit_ecp5.json.

``--family ice40`` does the same for Lattice iCE40 (Yosys ``synth_ice40``, its products in
logic cells: ``brainsmith.hardware.synthesis.ice40``) and fits
``rtl_costs.LOGIC_PRODUCT_TERMS``: costs/ice40.json and synth_fit_ice40.json;
``--family gowin`` for Gowin (``synth_gowin``, ``brainsmith.hardware.synthesis.gowin``, ECP5's
terms) and ``--family gatemate`` for GateMate (``synth_gatemate``, its products in logic:
``brainsmith.hardware.synthesis.gatemate``) likewise.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
PART = "xczu7ev-ffvc1156-2-e"
FAMILY = "xcup"
ECP5_PART = "LFE5U-85F-6BG381C"  # the ECP5 models' part (the ULX3S-85F's): every size alike
ICE40_PART = "iCE40UP5K-SG48"  # the iCE40 models' part (the iCEBreaker's)
GOWIN_PART = "GW2A-LV18PG256C8"  # the Gowin models' part (the Tang Primer 20K's)
GATEMATE_PART = "CCGM1A1"
OPEN_PARTS = {"ecp5": ECP5_PART, "ice40": ICE40_PART, "gowin": GOWIN_PART,
              "gatemate": GATEMATE_PART}  # fmt: skip
HW = "finn.custom_op.fpgadataflow"
COSTS = REPO / "brainsmith" / "frameworks" / "finn" / "rtl_costs.json"
FAMILY_COSTS = REPO / "brainsmith" / "hardware" / "synthesis" / "costs"  # <family>.json
# kinds also synthesised for 7-series (``counts_xc7``), to check their models there too
SEVEN_SERIES = ("StreamingFIFO_rtl", "StreamingDataWidthConverter_rtl")
JOBS = int(os.environ.get("SYNTH_FIT_JOBS", "1"))  # Yosys runs at once
MODEL_PART = PART  # the part FINN specialises and generates the layers for (main sets it)


@dataclass(frozen=True)
class Target:
    """A family the models are fitted for: Yosys' family, the part FINN makes the layers
    for, the resources' terms, where the models and the results go."""

    family: str
    part: str
    terms: dict[str, dict[str, tuple[str, ...]]]
    costs: Path
    results: Path
    also_xc7: tuple[str, ...]  # kinds also synthesised for 7-series


def target(family: str) -> Target:
    from brainsmith.frameworks.finn.rtl_costs import FAMILY_TERMS, LOGIC_PRODUCT_TERMS, TERMS
    from brainsmith.planning.lattice import STAND_IN_PART

    # each open family's terms: ECP5's, but an iCE40's products are all logic cells (its
    # synth_ice40 maps none to the UP5K's SB_MAC16); a GateMate's are its CC_MULT cells
    terms_of = {"ecp5": FAMILY_TERMS, "gowin": FAMILY_TERMS, "gatemate": FAMILY_TERMS,
                "ice40": LOGIC_PRODUCT_TERMS}  # fmt: skip

    if family in OPEN_PARTS:
        costs = FAMILY_COSTS / f"{family}.json"
        results = HERE / "results" / f"synth_fit_{family}.json"
        return Target(family, STAND_IN_PART, terms_of[family], costs, results, ())
    return Target(FAMILY, PART, TERMS, COSTS, HERE / "results" / "synth_fit.json", SEVEN_SERIES)


@dataclass
class Point:
    """One synthesised layer: its kind, attributes, features, Yosys' counts, FINN's estimate."""

    kind: str
    attributes: dict
    held_out: bool
    features: dict[str, float] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    counts_xc7: dict[str, int] = field(default_factory=dict)
    finn: dict[str, float | None] = field(default_factory=dict)
    seconds: float = 0.0
    cached: bool = False


# -- single-layer models ---------------------------------------------------------------------
def _model(op_type: str, inputs, outputs, datatypes: dict[str, str], initializers=None, **attrs):
    """One FINN kernel node specialised to its RTL backend for PART."""
    from finn.transformation.fpgadataflow.minimize_accumulator_width import (
        MinimizeAccumulatorWidth,
    )
    from finn.transformation.fpgadataflow.specialize_layers import SpecializeLayers
    from onnx import TensorProto, helper
    from qonnx.core.datatype import DataType
    from qonnx.core.modelwrapper import ModelWrapper
    from qonnx.transformation.infer_datatypes import InferDataTypes
    from qonnx.transformation.infer_shapes import InferShapes
    from qonnx.util.basic import qonnx_make_model

    names = [name for name, _ in inputs] + list(initializers or {})
    node = helper.make_node(
        op_type, names, [n for n, _ in outputs], domain=HW, backend="fpgadataflow",
        name=f"{op_type}_0", preferred_impl_style="rtl", **attrs,
    )  # fmt: skip
    graph = helper.make_graph(
        [node],
        op_type,
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in outputs],
    )
    model = ModelWrapper(qonnx_make_model(graph))
    for name, value in (initializers or {}).items():
        model.set_initializer(name, value)
    for name, datatype in datatypes.items():
        model.set_tensor_datatype(name, DataType[datatype])
    model = model.transform(InferShapes()).transform(InferDataTypes())
    model = model.transform(MinimizeAccumulatorWidth())
    model = model.transform(SpecializeLayers(MODEL_PART))
    if model.graph.node[0].op_type != f"{op_type}_rtl":
        raise RuntimeError(f"{op_type} {attrs} did not specialise to RTL")
    return model


OWN_BACKENDS = ("DuplicateStreamsRTL", "PoolRTL", "IntAddRTL", "GlobalAccPoolRTL",
                "LabelSelectRTL", "StreamingDepthToSpaceRTL")  # fmt: skip


def register_own_backends() -> None:
    """Load brainsmith's RTL backends the sweep builds, which registers each
    ``<kernel>_rtl`` with FINN so that ``SpecializeLayers`` can pick it."""
    from brainsmith.plugin import get_registry

    for name in OWN_BACKENDS:
        get_registry().get("backend", name)


def mvau(mw: int, mh: int, simd: int, pe: int, wbits: int, abits: int):
    from qonnx.core.datatype import DataType
    from qonnx.util.basic import gen_finn_dt_tensor

    wdt, idt = f"INT{wbits}", f"UINT{abits}"
    weights = gen_finn_dt_tensor(DataType[wdt], [mw, mh])
    weights[weights == DataType[wdt].min()] = 0  # narrow range, as quantised training gives
    return _model(
        "MVAU", [("x", [1, mw])], [("y", [1, mh])], {"x": idt, "w": wdt}, {"w": weights},
        MW=mw, MH=mh, SIMD=simd, PE=pe, inputDataType=idt, weightDataType=wdt,
        outputDataType="INT32", noActivation=1, binaryXnorMode=0, mem_mode="external",
    )  # fmt: skip


def thresholding(
    channels: int,
    pe: int,
    ibits: int,
    obits: int,
    floats: bool = False,
    shared: bool = False,
    po2: bool = False,
    tbits: int = 0,
):
    """FINN's RTL thresholds: ``floats`` takes float32 inputs (a float network's input
    quantizer), ``shared`` one row of thresholds for every channel (a per-tensor scale).
    The thresholds are a trained network's: a uniform quantizer's, evenly spaced, with a
    random scale and offset per row (a folded batch norm's); ``po2``: Brevitas' input
    quantizer of a power-of-two scale, ``(k - N / 2) / 2**(obits - 1)`` (README's
    quick-start network), whose float thresholds have few mantissa bits; ``tbits``:
    thresholds narrower than the input (a layer whose thresholds span less than its input's
    range: the RTL saturates the input to the thresholds' width)."""
    idt, odt, steps = f"INT{ibits}", f"UINT{obits}", 2**obits - 1
    tdt = f"INT{tbits}" if tbits else idt
    rows = 1 if shared else channels
    top = 4.0 if floats else float(2 ** ((tbits or ibits) - 1) - 1)
    scale = np.random.uniform(0.2, 1.0, [rows, 1]) * 2 * top / (steps + 1)
    offset = np.random.uniform(-0.5, 0.5, [rows, 1]) * scale * steps / 4
    thresholds = offset + scale * (np.arange(steps) - steps / 2 + 0.5)
    bounded = np.clip(np.round(thresholds), -top - 1, top)  # within the thresholds' type
    thresholds = thresholds.astype(np.float32) if floats else bounded
    if po2:
        thresholds = np.tile((np.arange(steps) - steps / 2) / 2 ** (obits - 1), (rows, 1))
        thresholds = thresholds.astype(np.float32)
    idt, tdt = ("FLOAT32", "FLOAT32") if floats else (idt, tdt)
    return _model(
        "Thresholding", [("x", [1, channels])], [("y", [1, channels])], {"x": idt, "t": tdt},
        {"t": thresholds}, NumChannels=channels, PE=pe, numSteps=steps, inputDataType=idt,
        weightDataType=tdt, outputDataType=odt, numInputVectors=[1],
    )  # fmt: skip


def swg(channels: int, simd: int, kernel: int, dim: int, bits: int):
    return window(channels, simd, (kernel, kernel), (dim, dim), (1, 1), (1, 1), 0, bits)


def window(
    channels: int,
    simd: int,
    kernel: tuple[int, int],
    size: tuple[int, int],
    stride: tuple[int, int],
    dilation: tuple[int, int],
    depthwise: int,
    bits: int,
):
    """A sliding window (height, width pairs) over unsigned ``bits``-bit inputs."""
    out = [
        (n - (k - 1) * d - 1) // s + 1
        for n, k, s, d in zip(size, kernel, stride, dilation, strict=True)
    ]
    idt = f"UINT{bits}"
    return _model(
        "ConvolutionInputGenerator", [("x", [1, *size, channels])],
        [("y", [1, *out, kernel[0] * kernel[1] * channels])], {"x": idt},
        ConvKernelDim=list(kernel), IFMChannels=channels, IFMDim=list(size), OFMDim=out,
        SIMD=simd, Stride=list(stride), Dilation=list(dilation), depthwise=depthwise,
        inputDataType=idt, outputDataType=idt,
    )  # fmt: skip


def duplicate(channels: int, pe: int, bits: int, streams: int):
    idt, shape = f"INT{bits}", [1, 4, channels]
    return _model(
        "DuplicateStreams", [("x", shape)], [(f"y{i}", shape) for i in range(streams)],
        {"x": idt}, NumChannels=channels, PE=pe, NumOutputStreams=streams, inputDataType=idt,
        numInputVectors=[1, 4],
    )  # fmt: skip


def pool(channels: int, pe: int, bits: int, kernel: int, function: str):
    from qonnx.core.datatype import DataType

    idt = DataType[f"INT{bits}"]
    window = kernel * kernel
    odt = idt
    if function == "AccPool":
        odt = DataType.get_smallest_possible(window * idt.min())
    return _model(
        "Pool", [("x", [1, 2, 2, window * channels])], [("y", [1, 2, 2, channels])],
        {"x": idt.name}, Channels=channels, PE=pe, KernelSize=[kernel, kernel],
        Function=function, OutImgDims=[2, 2], InputDataType=idt.name, OutputDataType=odt.name,
    )  # fmt: skip


def int_add(channels: int, pe: int, bits: int):
    a = f"INT{bits}"
    out = f"INT{bits + 1}"
    shape = [1, 4, channels]
    return _model(
        "IntAdd", [("a", shape), ("b", shape)], [("y", shape)], {"a": a, "b": a},
        lhs_dtype=a, rhs_dtype=a, out_dtype=out, lhs_shape=shape, rhs_shape=shape,
        out_shape=shape, PE=pe,
    )  # fmt: skip


def depth_to_space(channels: int, simd: int, block: int, width: int, bits: int, crd: bool):
    idt, depth = f"INT{bits}", channels * block * block
    return _model(
        "StreamingDepthToSpace", [("x", [1, 2, width, depth])],
        [("y", [1, 2 * block, width * block, channels])], {"x": idt}, HI=2, WI=width,
        NumChannels=channels, BlockSize=block, Mode="CRD" if crd else "DCR", SIMD=simd,
        inputDataType=idt,
    )  # fmt: skip


def global_acc_pool(channels: int, pe: int, bits: int, pixels: int):
    idt = f"INT{bits}"
    return _model(
        "GlobalAccPool", [("x", [1, pixels, pixels, channels])], [("y", [1, 1, 1, channels])],
        {"x": idt}, NumChannels=channels, PE=pe, inputDataType=idt,
        numInputVectors=[1, pixels, pixels],
    )  # fmt: skip


def label_select(labels: int, pe: int, k: int, bits: int):
    idt = f"INT{bits}"
    return _model(
        "LabelSelect", [("x", [1, labels])], [("y", [1, k])], {"x": idt}, Labels=labels, PE=pe,
        K=k, inputDataType=idt,
    )  # fmt: skip


def width_converter(channels: int, in_pe: int, out_pe: int, bits: int):
    """brainsmith's full-rate converter (``WidthConverter_rtl``), which stitching puts in
    place of FINN's RTL converter between widths that are not multiples of each other."""
    from brainsmith.backends import converters

    idt, shape = f"INT{bits}", [1, channels]
    model = _model(
        "StreamingDataWidthConverter", [("x", shape)], [("y", shape)], {"x": idt},
        inShape=shape, outShape=shape, inWidth=in_pe * bits, outWidth=out_pe * bits,
        dataType=idt,
    )  # fmt: skip
    converters.register()
    model.graph.node[0].op_type = converters.OP_TYPE
    return model


def fifo(depth: int, channels: int, pe: int, bits: int):
    """FINN's RTL FIFO (``fifo.sv`` picks shift register, LUT-RAM or block RAM by depth)."""
    idt = f"INT{bits}"
    return _model(
        "StreamingFIFO", [("x", [1, channels])], [("y", [1, channels])], {"x": idt},
        depth=depth, folded_shape=[1, channels // pe, pe], normal_shape=[1, channels],
        dataType=idt, impl_style="rtl",
    )  # fmt: skip


def dwc(channels: int, in_pe: int, out_pe: int, bits: int):
    """FINN's RTL width converter, between widths one of which divides the other."""
    idt, shape = f"INT{bits}", [1, channels]
    return _model(
        "StreamingDataWidthConverter", [("x", shape)], [("y", shape)], {"x": idt},
        inShape=shape, outShape=shape, inWidth=in_pe * bits, outWidth=out_pe * bits,
        dataType=idt,
    )  # fmt: skip


def fmpadding(channels: int, simd: int, dim: int, pad: int, bits: int):
    idt, out = f"UINT{bits}", dim + 2 * pad
    return _model(
        "FMPadding", [("x", [1, dim, dim, channels])], [("y", [1, out, out, channels])],
        {"x": idt}, ImgDim=[dim, dim], Padding=[pad] * 4, NumChannels=channels, SIMD=simd,
        inputDataType=idt, numInputVectors=1,
    )  # fmt: skip


BUILDERS = {
    "MVAU_rtl": mvau,
    "Thresholding_rtl": thresholding,
    "ConvolutionInputGenerator_rtl": swg,
    "DuplicateStreams_rtl": duplicate,
    "Pool_rtl": pool,
    "IntAdd_rtl": int_add,
    "GlobalAccPool_rtl": global_acc_pool,
    "LabelSelect_rtl": label_select,
    "WidthConverter_rtl": width_converter,
    "StreamingDepthToSpace_rtl": depth_to_space,
    "StreamingFIFO_rtl": fifo,
    "StreamingDataWidthConverter_rtl": dwc,
    "FMPadding_rtl": fmpadding,
}

# The sweep: (attributes, held out). Chosen to vary every term of each model independently
# (PE, SIMD, bit widths, accumulator width) with small matrices, so that Yosys takes seconds.
# VVAU_rtl is not swept: FINN specialises a VVAU to RTL only for Versal parts (its RTL is
# built on DSP58), and Yosys maps no Versal family.
SWEEP: dict[str, list[tuple[dict, bool]]] = {
    "MVAU_rtl": [
        *(
            ({"mw": mw, "mh": mh, "simd": s, "pe": p, "wbits": w, "abits": a}, False)
            for mw, mh, s, p, w, a in (
                (16, 8, 4, 2, 4, 4),
                (32, 16, 8, 4, 4, 4),
                (64, 16, 16, 4, 4, 4),
                (32, 32, 8, 8, 4, 4),
                (16, 16, 2, 16, 4, 4),
                (64, 8, 32, 2, 4, 4),
                (32, 16, 8, 4, 8, 8),
                (16, 8, 4, 2, 8, 8),
                (64, 16, 16, 4, 8, 8),
                (32, 32, 8, 8, 8, 8),
                (32, 16, 8, 4, 2, 4),
                (32, 16, 8, 4, 8, 4),
                (32, 16, 8, 4, 4, 8),
                (128, 8, 16, 2, 4, 4),
            )
        ),
        *(
            ({"mw": mw, "mh": mh, "simd": s, "pe": p, "wbits": w, "abits": a}, True)
            for mw, mh, s, p, w, a in (
                (48, 24, 12, 6, 4, 4),
                (64, 32, 16, 8, 8, 8),
                (32, 24, 4, 8, 4, 8),
            )
        ),
    ],
    "Thresholding_rtl": [
        ({"channels": c, "pe": p, "ibits": i, "obits": o}, held)
        for c, p, i, o, held in (
            (16, 4, 8, 4, False),
            (32, 8, 8, 2, False),
            (8, 8, 12, 4, False),
            (64, 16, 6, 3, False),
            (16, 2, 16, 4, True),
        )
    ]
    + [  # float inputs (32 bits), thresholds shared by every channel (per-tensor scale)
        ({"channels": c, "pe": p, "ibits": i, "obits": o, "floats": f, "shared": h}, held)
        for c, p, i, o, f, h, held in (
            (64, 1, 32, 8, True, True, False),
            (16, 4, 32, 8, True, True, False),
            (32, 2, 32, 4, True, False, False),
            (32, 1, 16, 8, False, True, False),
            (8, 1, 32, 6, True, False, True),
            (32, 1, 17, 4, False, False, True),
        )
    ]
    + [  # memories of every depth: constant (one word), LUT-RAM of 1 to 8 LUTs per bit
        ({"channels": c, "pe": p, "ibits": i, "obits": o, "floats": f, "shared": h}, held)
        for c, p, i, o, f, h, held in (
            (64, 1, 32, 4, True, True, False),
            (16, 16, 8, 4, False, False, False),
            (64, 1, 8, 4, False, False, False),
            (32, 4, 8, 6, False, False, True),
            (16, 2, 32, 2, True, True, True),
        )
    ]
    + [  # a power-of-two scale's float thresholds (Brevitas' input quantizer)
        (
            {
                "channels": c,
                "pe": 1,
                "ibits": 32,
                "obits": o,
                "floats": True,
                "shared": True,
                "po2": True,
            },
            held,
        )
        for c, o, held in ((64, 8, False), (32, 6, True))
    ]
    + [  # small layers, and thresholds narrower than the input (which the RTL saturates)
        ({"channels": c, "pe": p, "ibits": i, "obits": o, "shared": h, "tbits": t}, held)
        for c, p, i, o, h, t, held in (
            (8, 1, 4, 4, False, 0, False),
            (8, 1, 5, 4, True, 0, False),
            (8, 1, 13, 4, False, 10, False),
            (16, 4, 12, 3, False, 8, False),
            (8, 1, 4, 4, True, 0, True),
            (32, 2, 12, 4, False, 9, True),
        )
    ],
    "ConvolutionInputGenerator_rtl": [
        ({"channels": c, "simd": s, "kernel": k, "dim": d, "bits": b}, held)
        for c, s, k, d, b, held in (
            (8, 4, 3, 8, 4, False),
            (16, 16, 3, 8, 4, False),
            (4, 4, 2, 6, 8, False),
            (16, 8, 3, 12, 4, False),
            (8, 8, 5, 10, 2, False),
            (32, 8, 3, 6, 4, False),
            (12, 6, 3, 10, 4, True),
            (8, 2, 2, 8, 6, True),
        )
    ],
    "DuplicateStreams_rtl": [
        ({"channels": c, "pe": p, "bits": b, "streams": n}, held)
        for c, p, b, n, held in (
            (16, 4, 4, 2, False),
            (32, 16, 8, 2, False),
            (8, 8, 4, 3, False),
            (64, 32, 2, 2, False),
            (16, 8, 8, 4, False),
            (24, 12, 6, 3, True),
            (8, 2, 4, 4, True),
        )
    ],
    "Pool_rtl": [
        ({"channels": c, "pe": p, "bits": b, "kernel": k, "function": f}, held)
        for c, p, b, k, f, held in (
            (16, 4, 4, 2, "MaxPool", False),
            (32, 16, 8, 2, "MaxPool", False),
            (8, 8, 4, 3, "MaxPool", False),
            (16, 8, 4, 2, "AccPool", False),
            (32, 4, 8, 3, "AccPool", False),
            (24, 12, 6, 2, "MaxPool", True),
            (16, 16, 4, 3, "AccPool", True),
        )
    ],
    "IntAdd_rtl": [
        ({"channels": c, "pe": p, "bits": b}, held)
        for c, p, b, held in (
            (16, 4, 4, False),
            (32, 16, 8, False),
            (8, 8, 4, False),
            (64, 32, 2, False),
            (16, 2, 12, False),
            (24, 12, 6, True),
            (48, 24, 3, True),
        )
    ],
    "GlobalAccPool_rtl": [
        ({"channels": c, "pe": p, "bits": b, "pixels": x}, held)
        for c, p, b, x, held in (
            (16, 4, 4, 4, False),
            (32, 8, 8, 4, False),
            (8, 8, 4, 4, False),
            (64, 4, 4, 2, False),
            (16, 16, 2, 8, False),
            (32, 2, 6, 4, False),
            (24, 6, 4, 4, True),
            (48, 3, 8, 2, True),
        )
    ],
    "LabelSelect_rtl": [
        ({"labels": n, "pe": p, "k": k, "bits": b}, held)
        for n, p, k, b, held in (
            (16, 4, 3, 8, False),
            (32, 8, 1, 8, False),
            (16, 16, 2, 4, False),
            (64, 8, 5, 4, False),
            (10, 2, 3, 12, False),
            (32, 4, 8, 8, False),
            (24, 6, 4, 6, True),
            (16, 2, 1, 16, True),
        )
    ],
    "StreamingFIFO_rtl": [  # every storage fifo.sv picks: shift register, LUT-RAM, block RAM
        ({"depth": d, "channels": c, "pe": p, "bits": b}, held)
        for d, c, p, b, held in (
            (2, 16, 4, 4, False),
            (16, 16, 4, 4, False),
            (32, 32, 8, 8, False),
            (48, 16, 2, 4, False),
            (100, 16, 4, 8, False),
            (200, 32, 8, 4, False),
            (300, 16, 4, 8, False),
            (600, 16, 8, 4, False),
            (1000, 8, 4, 8, False),
            (8, 20, 10, 4, False),
            (40, 16, 2, 4, False),
            (60, 16, 4, 4, False),
            (120, 16, 2, 4, False),
            (250, 48, 12, 4, False),
            (400, 72, 18, 4, False),
            (700, 64, 16, 4, False),
            (1500, 16, 4, 4, False),
            (2, 4, 2, 4, False),
            (2, 32, 8, 4, False),
            (3, 96, 24, 4, False),
            (5, 48, 12, 4, False),
            (12, 32, 8, 4, False),
            (24, 24, 6, 4, True),
            (150, 24, 4, 6, True),
            (500, 32, 8, 4, True),
            (90, 40, 10, 4, True),
            (1200, 32, 8, 4, True),
            (4, 64, 16, 4, True),
            (16, 8, 2, 4, True),
        )
    ],
    "StreamingDataWidthConverter_rtl": [  # widths one of which divides the other
        ({"channels": c, "in_pe": i, "out_pe": o, "bits": b}, held)
        for c, i, o, b, held in (
            (16, 2, 8, 4, False),
            (16, 8, 2, 4, False),
            (32, 4, 16, 8, False),
            (32, 16, 4, 8, False),
            (24, 3, 12, 2, False),
            (12, 12, 4, 6, False),
            (16, 4, 2, 4, False),
            (32, 16, 2, 4, False),
            (16, 1, 8, 4, False),
            (40, 20, 4, 2, False),
            (48, 8, 24, 4, True),
            (20, 10, 2, 8, True),
            (24, 12, 2, 4, True),
            (36, 6, 18, 4, True),
        )
    ],
    "FMPadding_rtl": [
        ({"channels": c, "simd": m, "dim": d, "pad": p, "bits": b}, held)
        for c, m, d, p, b, held in (
            (8, 4, 6, 1, 4, False),
            (16, 16, 8, 1, 4, False),
            (16, 4, 10, 2, 8, False),
            (32, 8, 6, 1, 2, False),
            (4, 4, 12, 1, 8, False),
            (12, 6, 8, 2, 4, False),
            (24, 8, 6, 1, 4, True),
            (8, 2, 14, 1, 6, True),
        )
    ],
    "StreamingDepthToSpace_rtl": [  # DCR or SIMD 1: by beat; CRD at SIMD > 1: by element
        ({"channels": c, "simd": m, "block": r, "width": w, "bits": b, "crd": o}, held)
        for c, m, r, w, b, o, held in (
            (1, 1, 2, 8, 8, True, False),
            (1, 1, 3, 16, 8, True, False),
            (2, 1, 2, 12, 4, False, False),
            (4, 4, 2, 4, 4, False, False),
            (2, 2, 3, 8, 8, False, False),
            (1, 1, 4, 2, 2, True, False),
            (3, 1, 3, 10, 8, True, False),
            (4, 2, 2, 8, 6, False, False),
            (2, 2, 2, 8, 4, True, False),
            (4, 2, 2, 6, 8, True, False),
            (3, 3, 3, 4, 8, True, False),
            (1, 1, 3, 85, 8, True, True),
            (3, 3, 3, 32, 8, False, True),
            (2, 2, 2, 10, 6, True, True),
        )
    ],
    "WidthConverter_rtl": [  # input and output widths that are not multiples of each other
        ({"channels": c, "in_pe": i, "out_pe": o, "bits": b}, held)
        for c, i, o, b, held in (
            (24, 3, 4, 4, False),
            (24, 4, 3, 4, False),
            (48, 6, 8, 4, False),
            (30, 3, 5, 8, False),
            (30, 5, 3, 8, False),
            (12, 2, 3, 8, False),
            (24, 8, 3, 2, False),
            (36, 4, 6, 6, True),
            (60, 5, 6, 4, True),
        )
    ],
}


# Matrix layers of 2-bit products, which ECP5 makes of LUTs instead of multipliers (the
# sweep has one), and of a SIMD not a power of two, whose adder tree registers leaves of
# its shallower level: synthesised for ECP5 only, beside the sweep.
ECP5_POINTS: dict[str, list[tuple[dict, bool]]] = {
    "MVAU_rtl": [
        ({"mw": mw, "mh": mh, "simd": s, "pe": p, "wbits": w, "abits": a}, held)
        for mw, mh, s, p, w, a, held in (
            (16, 16, 4, 4, 2, 2, False),
            (32, 16, 4, 8, 4, 2, True),
            (30, 12, 6, 4, 4, 4, False),
            (36, 8, 9, 2, 8, 4, False),
            (20, 10, 5, 5, 6, 6, True),
        )
    ],
}


# Fitted the same way to compare with, not shipped: MVAU_rtl's DSPs (counted as its RTL
# packs them instead), and linear models of the stream widths alone for the FIFO and the
# converter, which do not follow fifo.sv's storage or vpc.sv's rotation.
CHECKS: dict[str, dict[str, tuple[str, ...]]] = {
    "StreamingFIFO_rtl": {"LUT": ("in_width", "1")},
    "StreamingDataWidthConverter_rtl": {"LUT": ("in_width", "out_width", "1")},
    "MVAU_rtl": {"DSP": ("PE*SIMD",)},
}


# The hand-written LUT estimates brainsmith's RTL layers had before their fitted models
# (rtl_costs.TERMS), kept to compare the fits with.
def _pool_luts(op) -> float:
    return op.get_nodeattr("PE") * (2 * op.accumulator_bits() + 4)


def _global_acc_pool_luts(op) -> float:
    bits = op.get_output_datatype().bitwidth()
    memory = op.get_nodeattr("NumChannels") * bits  # the sums, in LUT RAM (64 bits/LUT)
    return op.get_nodeattr("PE") * bits + math.ceil(memory / 64)


def _label_select_luts(op) -> float:
    bits = op.get_input_datatype().bitwidth() + 1
    return op.get_nodeattr("K") * op.get_nodeattr("PE") * (bits + 8)


HANDWRITTEN = {
    "DuplicateStreams_rtl": lambda op: 2 * op.get_num_output_streams(),
    "Pool_rtl": _pool_luts,
    "IntAdd_rtl": lambda op: op.pe * op.get_output_datatype().bitwidth(),
    "GlobalAccPool_rtl": _global_acc_pool_luts,
    "LabelSelect_rtl": _label_select_luts,
    "WidthConverter_rtl": lambda op: 2 * (op.get_instream_width() + 2 * op.get_outstream_width()),
    "StreamingDepthToSpace_rtl": lambda op: (
        math.ceil(2 * op.row_elements() * op.get_input_datatype().bitwidth() / 64)
        + 2 * op.get_outstream_width()
        + 80
    ),
}


# -- synthesis -------------------------------------------------------------------------------
def synthesise(
    points: list[tuple[Point, object]], workdir: str, family: str = FAMILY, also_xc7=SEVEN_SERIES
) -> None:
    """Yosys' counts of every point's layer for ``family`` (and 7-series for the kinds
    ``also_xc7``), ``JOBS`` at a time (each cached by content)."""
    from finn.transformation.fpgadataflow.prepare_ip import PrepareIP

    from brainsmith.hardware.synthesis.layer_sources import synthesis_design
    from brainsmith.hardware.synthesis.run import cache_root, synthesise_layer
    from brainsmith.hardware.synthesis.yosys import find_yosys

    yosys, root = find_yosys(), cache_root()
    designs = []
    for index, (point, model) in enumerate(points):
        prepared = model.transform(PrepareIP(MODEL_PART, 5.0))
        design = synthesis_design(prepared, prepared.graph.node[0])
        designs.append((point, design, family, index))
        if point.kind in also_xc7:
            designs.append((point, design, "xc7", index))

    def one(item):
        point, design, family, index = item
        folder = os.path.join(workdir, f"{index:03d}-{family}")
        return point, family, synthesise_layer(design, family, yosys, root, folder)

    with ThreadPoolExecutor(max_workers=JOBS) as pool:
        for point, made_for, result in pool.map(one, designs):
            if result.counts is None:
                raise RuntimeError(f"{point.kind} {point.attributes}: {result.reason}")
            if made_for == "xc7":
                point.counts_xc7 = dict(result.counts)
                continue
            point.counts = dict(result.counts)
            point.seconds, point.cached = result.seconds or 0.0, result.cached
            print(f"{point.kind} {point.attributes}: {result.counts} ({point.seconds:.1f} s)")


def finn_estimate(op) -> dict[str, float | None]:
    """FINN's estimate of each resource (the layer's own for brainsmith's layers, its
    hand-written one for the LUTs of ``HANDWRITTEN``); None where it has no model."""
    from brainsmith.frameworks.finn.estimation.coverage import NOT_ESTIMATED
    from brainsmith.frameworks.finn.facts import ESTIMATION_METHODS

    missing = NOT_ESTIMATED.get(op.onnx_node.op_type, ())
    found: dict[str, float | None] = {}
    for key, method in ESTIMATION_METHODS.items():
        if key in missing:
            found[key] = None
            continue
        if key == "LUT" and op.onnx_node.op_type in HANDWRITTEN:
            found[key] = float(HANDWRITTEN[op.onnx_node.op_type](op))
            continue
        function = getattr(op, method)
        try:
            found[key] = float(function(PART))
        except TypeError:
            found[key] = float(function())
    return found


def measured(point: Point, resource: str) -> float:
    """Yosys' count of ``resource`` as FINN counts it (BRAM_18K: a RAMB36 is two)."""
    if resource == "BRAM_18K":
        return point.counts["BRAM_18K"] + 2 * point.counts["BRAM_36K"]
    return point.counts[resource]


def error(predicted: float, actual: float) -> float:
    """Relative error; against at least 1, so that a true 0 predicted as 0.4 is 40 %."""
    return abs(predicted - actual) / max(actual, 1.0)


def summary(errors: list[float]) -> dict[str, float | int | None]:
    if not errors:
        return {"points": 0, "mean": None, "max": None}
    return {
        "points": len(errors),
        "mean": round(float(np.mean(errors)), 4),
        "max": round(float(np.max(errors)), 4),
    }


def fit(points: list[Point], terms: tuple[str, ...], resource: str) -> dict:
    """Least-squares coefficients of ``terms`` for ``resource`` on the fitting points, and
    the errors on them, on the held-out points and of FINN's estimate."""
    fitting = [p for p in points if not p.held_out]
    matrix = np.array([[p.features[t] for t in terms] for p in fitting], dtype=float)
    target = np.array([measured(p, resource) for p in fitting], dtype=float)
    weights = 1.0 / np.maximum(target, 1.0)  # relative, not absolute, error minimised
    solution, *_ = np.linalg.lstsq(matrix * weights[:, None], target * weights, rcond=None)
    coefficients = [round(float(c), 4) for c in solution]

    def predict(point: Point) -> float:
        return max(
            0.0, sum(c * point.features[t] for c, t in zip(coefficients, terms, strict=True))
        )

    on = [error(predict(p), measured(p, resource)) for p in fitting]
    held = [error(predict(p), measured(p, resource)) for p in points if p.held_out]
    finn = [
        error(estimate, measured(p, resource))
        for p in points
        if (estimate := p.finn.get(resource)) is not None
    ]
    finn_held = [
        error(estimate, measured(p, resource))
        for p in points
        if p.held_out and (estimate := p.finn.get(resource)) is not None
    ]
    return {
        "terms": list(terms),
        "coefficients": coefficients,
        "fit": summary(on),
        "held_out": summary(held),
        "finn": summary(finn),
        "finn_held_out": summary(finn_held),
    }


def main() -> int:
    from qonnx.custom_op.registry import getCustomOp

    from benchmarks.machine import machine_info
    from brainsmith.frameworks.finn.env import prepare_finn
    from brainsmith.frameworks.finn.rtl_costs import features

    global MODEL_PART
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kinds", help="comma-separated kinds to synthesise again")
    parser.add_argument("--family", choices=(FAMILY, *OPEN_PARTS), default=FAMILY)
    parser.add_argument("--only", type=int, help="synthesise the first N points alone, fit none")
    args = parser.parse_args()
    fitting = target(args.family)
    MODEL_PART = fitting.part
    ecp5 = args.family in OPEN_PARTS  # a Lattice family's: its terms, no FINN checks
    sweep_points = _sweep(ecp5)
    again = set(args.kinds.split(",")) if args.kinds else set(sweep_points)
    found_before = fitting.results.is_file()
    previous = json.loads(fitting.results.read_text())["points"] if found_before else []
    prepare_finn()
    register_own_backends()
    began = time.perf_counter()
    load_before = list(os.getloadavg())
    points: list[tuple[Point, object]] = []
    for kind, sweep in sweep_points.items():
        if kind not in again:  # the previous sweep's counts
            for old in (x for x in previous if x["kind"] == kind):
                found = Point(kind, old["attributes"], old["held_out"], old["features"])
                found.counts, found.finn, found.cached = old["counts"], old["finn"], True
                found.counts_xc7 = old.get("counts_xc7", {})
                found.seconds = old["seconds"]
                points.append((found, None))
            continue
        for index, (attributes, held_out) in enumerate(sweep):
            np.random.seed(index)  # the same weights and thresholds, so the cache holds
            model = BUILDERS[kind](**attributes)
            op = getCustomOp(model.graph.node[0])
            checks = {} if ecp5 else CHECKS.get(kind, {})
            extra = tuple(
                t
                for resources in (checks, fitting.terms.get(kind, {}))
                for terms in resources.values()
                for t in terms
            )
            found = features(op, extra, model)
            point = Point(kind, attributes, held_out, found)
            point.finn = {} if ecp5 else finn_estimate(op)
            points.append((point, model))
    if args.only:
        points = [p for p in points if p[1] is not None][: args.only]
    with tempfile.TemporaryDirectory(prefix="brainsmith-synth-fit-") as workdir:
        synthesise(
            [(p, m) for p, m in points if m is not None], workdir, fitting.family,
            fitting.also_xc7,
        )  # fmt: skip
    if args.only:
        return 0
    load_after = list(os.getloadavg())
    seconds = time.perf_counter() - began
    by_kind: dict[str, list[Point]] = {}
    for point, _ in points:
        by_kind.setdefault(point.kind, []).append(point)
    models: dict[str, dict[str, dict]] = {}
    checks: dict[str, dict[str, dict]] = {}
    for kind, resources in fitting.terms.items():
        for resource, terms in resources.items():
            models.setdefault(kind, {})[resource] = fit(by_kind[kind], terms, resource)
    for kind, resources in ({} if ecp5 else CHECKS).items():
        for resource, terms in resources.items():
            checks.setdefault(kind, {})[resource] = fit(by_kind[kind], terms, resource)
    shipped = {
        "part": OPEN_PARTS[args.family] if ecp5 else PART,
        "family": fitting.family,
        **({"layers_made_for": fitting.part, "memories": memories(args.family)} if ecp5 else {}),
        "source": "benchmarks/synth_fit.py: least squares on Yosys' counts",
        "kinds": {
            kind: {
                resource: {
                    "terms": found["terms"],
                    "coefficients": found["coefficients"],
                    "mean_error": found["fit"]["mean"],
                    "max_error": found["fit"]["max"],
                    "held_out_max_error": found["held_out"]["max"],
                }
                for resource, found in resources.items()
            }
            for kind, resources in models.items()
        },
    }
    fitting.costs.write_text(json.dumps(shipped, indent=2) + "\n")
    yosys_seconds = sum(p.seconds for p, _ in points if not p.cached)
    out = fitting.results
    out.write_text(
        json.dumps(
            {
                "benchmark": "synth_fit" + (f"_{args.family}" if ecp5 else ""),
                "part": shipped["part"],
                "family": fitting.family,
                "jobs": JOBS,
                "seconds": round(seconds, 1),
                "synthesised": sum(not p.cached for p, _ in points),
                "cached": sum(p.cached for p, m in points if m is not None),
                "reused": sum(m is None for _, m in points),
                "yosys_seconds": round(yosys_seconds, 1),
                "models": models,
                "checks": checks,
                "points": [
                    {
                        "kind": p.kind,
                        "attributes": p.attributes,
                        "held_out": p.held_out,
                        "features": p.features,
                        "counts": p.counts,
                        **({"counts_xc7": p.counts_xc7} if p.counts_xc7 else {}),
                        "finn": p.finn,
                        "seconds": round(p.seconds, 2),
                    }
                    for p, _ in points
                ],
                "machine": machine_info(),
                "load_average_before": load_before,
                "load_average_after": load_after,
            },
            indent=2,
        )
        + "\n"
    )
    print("\n".join(table(models)))
    print("\n".join(table(checks)))
    print(f"\n{seconds:.0f} s; load average {load_before[0]:.1f} -> {load_after[0]:.1f}")
    print(f"-> {out.relative_to(REPO)}, {fitting.costs.relative_to(REPO)}")
    return 0


def memories(family: str) -> dict:
    """The block RAM shapes and distributed RAM of an open family, as its synthesis module
    gives them, for its models' weight memories (``rtl_costs.family_memories``)."""
    from brainsmith.hardware.synthesis.yosys import OPEN_FAMILIES

    module = OPEN_FAMILIES[family]
    return {"block_ram": [list(shape) for shape in module.BLOCK_RAM_SHAPES],
            "distributed_ram_luts": module.DISTRIBUTED_RAM_LUTS}  # fmt: skip


def _sweep(ecp5: bool) -> dict[str, list[tuple[dict, bool]]]:
    """The sweep's points; for ECP5 those of ``rtl_costs.FAMILY_KINDS``, with ``ECP5_POINTS``
    beside them."""
    from brainsmith.frameworks.finn.rtl_costs import FAMILY_KINDS

    if not ecp5:
        return SWEEP
    return {kind: [*SWEEP[kind], *ECP5_POINTS.get(kind, [])] for kind in FAMILY_KINDS}


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.0f} %"


def table(models: dict[str, dict[str, dict]]) -> list[str]:
    lines = [
        "| kind | resource | model | points (fit + held out) | fit: mean / max error "
        "| held out: max error | previous estimate: mean / max error | previous estimate, "
        "held out: max error |",
        "|---|---|---|---:|---:|---:|---:|---:|",
    ]
    for kind, resources in models.items():
        for resource, found in resources.items():
            model = " + ".join(
                f"{c + 0.0:g}·{t}" if t != "1" else f"{c + 0.0:g}"  # no "-0"
                for c, t in zip(found["coefficients"], found["terms"], strict=True)
            )
            finn, finn_held = found["finn"], found.get("finn_held_out", {})
            finn_text = (
                "no model"
                if not finn["points"]
                else f"{_percent(finn['mean'])} / {_percent(finn['max'])}"
            )
            held_text = "no model" if not finn["points"] else _percent(finn_held.get("max"))
            lines.append(
                f"| {kind} | {resource} | {model} | {found['fit']['points']} + "
                f"{found['held_out']['points']} | {_percent(found['fit']['mean'])} / "
                f"{_percent(found['fit']['max'])} | {_percent(found['held_out']['max'])} "
                f"| {finn_text} | {held_text} |"
            )
    return lines


def section(data: dict) -> list[str]:
    """RESULTS.md's section: per kind and resource the fitted model and its errors."""
    return [
        "",
        "## RTL cost models fitted to Yosys (python -m benchmarks.synth_fit)",
        "",
        f"{len(data['points'])} single-layer designs for `{data['part']}` synthesised by Yosys "
        f"(`synth_xilinx -family {data['family']}`, out of context, {data['jobs']} at a time; "
        f"{data['synthesised']} synthesised, {data['cached']} from the cache, "
        f"{data.get('reused', 0)} taken from the previous sweep's results, "
        f"{data['seconds']:.0f} s in all; load average {data['load_average_before'][0]:.1f} "
        f"before, {data['load_average_after'][0]:.1f} after). Per kind and resource the "
        "model is fitted by least squares of the relative error on the fitting points and "
        "checked on the held-out ones; the error is |estimate - count| / max(count, 1). "
        "The previous estimate is FINN's where it has a model, and for brainsmith's own "
        "layers the hand-written estimate their backends had before the fit; the shipped "
        "models (`brainsmith/frameworks/finn/rtl_costs.json`) are brainsmith's estimates of "
        "what FINN does not estimate and the LUT estimates of brainsmith's RTL layers:",
        "",
        *table(data["models"]),
        "",
        *_verdicts(data["models"]),
        "",
        "WidthConverter_rtl's shifter has as many positions as its buffer holds multiples of "
        "the two widths' greatest common divisor, which a linear model of the two widths does "
        "not see: of its held-out points, 20 to 24 bits (divisor 4) is the one furthest off.",
        "",
        "StreamingDepthToSpace_rtl reads its row buffers by beat (DCR order, or SIMD 1), which "
        "Yosys maps to LUT-RAM, or in CRD order at SIMD > 1 by element, SIMD reads at once, "
        "which it builds of flip-flops and multiplexers (`element_row_bits`); the build puts a "
        "PixelShuffle after a thresholded MatMul in DCR order (`DepthToSpaceInWeightOrder`). "
        "LUT-RAM's LUTs per bit fall with the word's width, which the model does not see: the "
        "held-out DCR row of 24-bit beats is the one furthest off.",
        "",
        "The LUT models of Thresholding_rtl, ConvolutionInputGenerator_rtl, "
        "StreamingDataWidthConverter_rtl and StreamingFIFO_rtl are the report's in place of "
        "FINN's (`rtl_costs.REPLACED`; the folding search keeps FINN's). Thresholding_rtl is "
        "swept with a trained network's thresholds (evenly spaced per row), float32 inputs, "
        "thresholds shared by every channel (a per-tensor scale, which FINN builds as PE "
        "channels) and Brevitas' power-of-two scale (`po2`); FINN counts its threshold memory "
        "as LUT-RAM, once per channel. thresholding.sv searches in one stage per output bit, "
        "each a comparator of the thresholds' width and a memory per PE of the thresholds "
        "the stage compares with, 2^stage words per channel the PE serves. A memory of one or "
        "two words is a constant or a bit of the address, and a bit the same in every word a "
        "constant: the model counts per threshold bit a comparator per stage, against such a "
        "constant (`constant_stages`) or a memory (`memory_stages`), the memories' bits that "
        "differ between words (`memory_bits`, a LUT each up to 64 words; `deep_bits` once per "
        "further 64 words), read from the layer's thresholds, the input's saturation to "
        "thresholds narrower than it (`saturated`) and the control. The model before "
        "(comparators of the input's width per stage, the thresholds' bits and a constant) "
        "counted every stage's memory alike and every bit as stored: 6 of these 24 points "
        "beyond 25 %, the MLP's input quantizer (15 float thresholds shared by 64 channels, 4 "
        "stages whose memories hold 1 to 8 words) 53 % over, its sweep point 49 %, a "
        "power-of-two scale's float thresholds (`po2`, few mantissa bits, as README's "
        "quick-start network has them) 44 %. Now 23 of 24 are within 21 %, and 8 PEs of 2-bit "
        "outputs 26 % over.",
        "",
        "fifo.sv picks its storage by depth, width and `ram_style` (FINN's `get_ram_style`): "
        "a shift register up to 33 words (64 below 12 bits), which Yosys builds of flip-flops "
        "and a multiplexer per bit (LUTs grow with width x depth), LUT-RAM up to 257 words, "
        "block RAM beyond (its LUTs a constant, and a multiplexer per bit where the memory is "
        "split in two). The model has a constant and a slope per storage; a linear model of "
        "the stream width alone (below) does not follow that choice. The width converter "
        "(vpc.sv) rotates a wider input's lanes through a multiplexer per input bit with as "
        "many inputs as the input has lanes of the widths' greatest common divisor "
        "(`dwc_rotation`); a widening converter has none, which a linear model of the two "
        "widths (below) does not see. Both kinds' points are also synthesised for 7-series "
        "(`counts_xc7` in synth_fit.json); tests/test_rtl_costs.py checks each within 25 %.",
        "",
        "Fitted the same way to compare, not shipped: MVAU_rtl's DSPs (counted as its RTL "
        "packs them instead) and linear models of the stream widths alone. VVAU_rtl is not "
        "swept: FINN specialises a VVAU to RTL only for Versal parts (its RTL is built on "
        "DSP58), and Yosys maps no Versal family.",
        "",
        *table(data["checks"]),
    ]


def _verdicts(models: dict[str, dict[str, dict]]) -> list[str]:
    """Per model with a previous estimate: whether the fit beats it on the held-out points."""
    lines = []
    for kind, resources in models.items():
        for resource, found in resources.items():
            before = (found.get("finn_held_out") or {}).get("max")
            after = found["held_out"]["max"]
            if before is None or after is None:
                continue
            verdict = "better than" if after < before else "not better than"
            lines.append(
                f"- {kind} {resource}: the fit's held-out max error {_percent(after)} is "
                f"{verdict} the hand-written estimate's {_percent(before)} on the same points."
            )
    return lines


if __name__ == "__main__":
    sys.exit(main())
