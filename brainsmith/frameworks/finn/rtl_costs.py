"""brainsmith's estimates of what FINN does not estimate in RTL layers, fitted to Yosys.

FINN counts no LUTs for ``MVAU_rtl`` (a fixed 0) and has no DSP model for
``Thresholding_rtl``. Each such resource here is a
linear model of a layer's folding and bit widths, ``sum(coefficient * term)``, whose terms are
``TERMS`` and whose coefficients ``benchmarks/synth_fit.py`` fits by least squares to Yosys'
counts of single-layer designs (UltraScale+), shipped in ``rtl_costs.json`` with each fit's
error. The terms:

- ``PE``, ``SIMD``: the folding; ``in_bits``, ``w_bits``, ``acc_bits``, ``out_bits``: the
  input, weight, accumulator and output widths;
- products such as ``PE*SIMD`` (multiply lanes) multiply those names; ``1`` is a constant.

A matrix layer whose weights are kept in distributed RAM also has its weights in LUTs: one
LUT per 64 weight bits (``WEIGHT_BITS_PER_LUT``, a LUT as a 64 x 1 RAM), added to the fit of
the compute unit alone (the sweep synthesises the unit without its weight memory).
"""

from __future__ import annotations

import json
import math
from functools import cache
from importlib.resources import files

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

ESTIMATED_BY = "brainsmith"
WEIGHT_BITS_PER_LUT = 64

# kind -> resource -> the model's terms (the fitted resources are those FINN has no model for)
TERMS: dict[str, dict[str, tuple[str, ...]]] = {
    "MVAU_rtl": {"LUT": ("PE*SIMD", "PE*SIMD*w_bits", "PE*SIMD*in_bits", "PE*acc_bits", "1")},
    "Thresholding_rtl": {"DSP": ("1",)},
}


@cache
def coefficients() -> dict[str, dict[str, dict[str, Any]]]:
    """The fitted models from ``rtl_costs.json`` (read once): kind -> resource -> model."""
    text = files("brainsmith.frameworks.finn").joinpath("rtl_costs.json").read_text()
    kinds: dict[str, dict[str, dict[str, Any]]] = json.loads(text)["kinds"]
    return kinds


def kinds() -> tuple[str, ...]:
    return tuple(coefficients())


def features(layer: Any, extra: tuple[str, ...] = ()) -> dict[str, float]:
    """The terms of ``layer``'s kind (and ``extra`` terms), from its attributes and types."""
    values = _names(layer)
    kind = layer.onnx_node.op_type
    wanted = {term for terms in TERMS.get(kind, {}).values() for term in terms} | set(extra)
    return {term: _term(term, values) for term in sorted(wanted)}


def estimate(layer: Any) -> dict[str, float]:
    """brainsmith's estimate of each resource FINN does not estimate in ``layer`` (a FINN or
    brainsmith CustomOp); empty for a kind without a fitted model."""
    models = coefficients().get(layer.onnx_node.op_type)
    if not models:
        return {}
    found = features(layer)
    result: dict[str, float] = {}
    for resource, model in models.items():
        value = sum(
            c * found[t] for c, t in zip(model["coefficients"], model["terms"], strict=True)
        )
        result[resource] = float(round(max(0.0, value)))  # a count of cells
    if "LUT" in result and _weights_in_luts(layer):
        bits = layer.get_nodeattr("MW") * layer.get_nodeattr("MH") * _bits(layer, "w_bits")
        result["LUT"] += math.ceil(bits / WEIGHT_BITS_PER_LUT)
    return result


def _weights_in_luts(layer: Any) -> bool:
    types = layer.get_nodeattr_types()
    return (
        "mem_mode" in types
        and layer.get_nodeattr("mem_mode") == "internal_decoupled"
        and layer.get_nodeattr("ram_style") == "distributed"
    )


def _names(layer: Any) -> dict[str, float]:
    types = layer.get_nodeattr_types()
    values: dict[str, float] = {"1": 1.0}
    for name in ("PE", "SIMD"):
        values[name] = float(layer.get_nodeattr(name)) if name in types else 1.0
    for name in ("in_bits", "w_bits", "acc_bits", "out_bits"):
        values[name] = float(_bits(layer, name))
    return values


def _bits(layer: Any, name: str) -> int:
    from qonnx.core.datatype import DataType

    types = layer.get_nodeattr_types()
    if name == "in_bits":
        return int(layer.get_input_datatype(0).bitwidth())
    if name == "w_bits":
        return int(layer.get_input_datatype(1).bitwidth()) if "weightDataType" in types else 0
    if name == "acc_bits" and "accDataType" in types:
        return int(DataType[layer.get_nodeattr("accDataType")].bitwidth())
    return int(layer.get_output_datatype().bitwidth())


def _term(term: str, values: dict[str, float]) -> float:
    return math.prod(values[name] for name in term.split("*"))
