"""FINN's RTL vector-vector layer (``VVAU_rtl``, a depthwise convolution's) on a Lattice part.

FINN keeps that layer for Versal parts: its one core packs three 8x9 products into a
DSP58, so ``SpecializeLayers`` gives the stand-in AMD part of a Lattice build the HLS layer,
which no Lattice part has, and ``VVAU_rtl`` refuses to write its HDL for any other part.
On a Lattice build a depthwise layer to be RTL whose data types FINN's core takes becomes
``VVAU_rtl`` before FINN specialises (``vector_layers_in_rtl``); its HDL is written as for a
Versal part (``generate_vector_layers``: the same wrapper, DSP58's latency), which
Verilator simulates with FINN's behavioural core, and the Lattice flow reads brainsmith's
core in place of the DSP58 one (``hardware/synthesis/rtl/vvu_lattice.sv``).
"""

from __future__ import annotations

import os

from brainsmith.frameworks.finn.facts import HW_DOMAIN, RTL_DOMAIN

TYPE_CHECKING = False
if TYPE_CHECKING:
    from onnx import NodeProto
    from qonnx.core.modelwrapper import ModelWrapper

# the Versal part a Lattice build's VVAU_rtl HDL is written for (its DSP58 wrapper)
VECTOR_CORE_PART = "xcve2302-sfva784-1LP-e-S"


def takes(node: NodeProto) -> bool:
    """Whether FINN's RTL vector-vector layer takes the VVAU ``node`` on a Versal part: no
    activation of its own, signed weights of up to 8 bits, activations of up to 8 bits (9
    signed)."""
    from finn.transformation.fpgadataflow.specialize_layers import _vvu_rtl_possible

    return bool(_vvu_rtl_possible(node, VECTOR_CORE_PART))


def vector_layers_in_rtl(model: ModelWrapper, styles: dict[str, str]) -> list[str]:
    """The VVAU layers asked to be RTL (``styles``) that FINN's RTL layer takes made
    ``VVAU_rtl`` as ``SpecializeLayers`` makes them on a Versal part; returns their names."""
    changed = []
    for node in model.graph.node:
        asked = node.domain == HW_DOMAIN and styles.get(node.name) == "rtl"
        if asked and node.op_type == "VVAU" and takes(node):
            node.op_type, node.domain = "VVAU_rtl", RTL_DOMAIN
            kept = [a for a in node.attribute if a.name != "preferred_impl_style"]
            del node.attribute[:]
            node.attribute.extend(kept)
            changed.append(node.name)
    return changed


def generate_vector_layers(model: ModelWrapper, clock_ns: float) -> None:
    """Each ``VVAU_rtl`` layer's HDL written for ``VECTOR_CORE_PART`` into a code folder of
    its own, unless it has one (FINN's ``PrepareIP`` then keeps it, as it keeps any layer's
    written code)."""
    from finn.util.basic import make_build_dir
    from qonnx.custom_op.registry import getCustomOp

    for node in model.get_nodes_by_op_type("VVAU_rtl"):
        layer = getCustomOp(node)
        if os.path.isdir(str(layer.get_nodeattr("code_gen_dir_ipgen"))):
            continue  # written before (a build continued from a checkpoint)
        folder = make_build_dir(prefix=f"code_gen_ipgen_{node.name}_")
        layer.set_nodeattr("code_gen_dir_ipgen", str(folder))
        layer.code_generation_ipgen(model, VECTOR_CORE_PART, clock_ns)


__all__ = ["VECTOR_CORE_PART", "generate_vector_layers", "takes", "vector_layers_in_rtl"]
