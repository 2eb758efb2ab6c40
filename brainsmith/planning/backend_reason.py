"""Why a hardware layer got its backend (HLS or RTL): one answer for ``brainsmith check``, the
build's notes and build.log.

The blueprint asks for a style (a kernel with one backend type, ``prefer``, or brainsmith's
default rule) or lets FINN's rule choose; FINN's ``SpecializeLayers`` may still make a layer
HLS, and says why in a warning of several lines ("There is no RTL variant for X. The node will
automatically be set to HLS variant. The RTL Elementwise layers ... require Versal devices.").
``finn_refusals`` collects those warnings whole; ``backend_reason`` turns what was asked, what
was chosen and FINN's explanation into the reason shown everywhere.
"""

from __future__ import annotations

import contextlib
import logging
import re

from brainsmith.frameworks.finn.layers import registered_layers

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator

    import onnx

    from brainsmith.planning.plan import BuildPlan

# FINN's "no RTL variant" warning: "... for NODE. The node will ..." or "... of OP. Node NODE will"
NO_RTL = re.compile(
    r"There is no RTL variant (?:for (?P<node>\S+?)\.\s|of \S+?\.\s+Node (?P<named>\S+) will)"
)
FINN_FALLBACK = re.compile(r"^.*?set to HLS variant\.\s*", re.DOTALL)
VERSAL = re.compile(r"\bversal\b", re.IGNORECASE)


class _Collect(logging.Handler):
    def __init__(self, found: dict[str, str]) -> None:
        super().__init__(logging.WARNING)
        self.found = found

    def emit(self, record: logging.LogRecord) -> None:
        text = record.getMessage()
        match = NO_RTL.search(text)
        if match:
            self.found[match.group("node") or match.group("named")] = " ".join(text.split())


@contextlib.contextmanager
def finn_refusals() -> Iterator[dict[str, str]]:
    """Within the block: layer name -> FINN's whole warning (every line) saying it has no RTL
    variant, as ``SpecializeLayers`` logs them."""
    found: dict[str, str] = {}
    handler = _Collect(found)
    logger = logging.getLogger("finn_logger")
    logger.addHandler(handler)
    try:
        yield found
    finally:
        logger.removeHandler(handler)


def asked_reason(node: onnx.NodeProto, style: str, plan: BuildPlan) -> str:
    """Who asked for ``style`` for ``node`` (before specialisation): the blueprint's pin, its
    ``prefer``, the default rule; for MVAU/VVAU left to FINN's rule, that rule ("" otherwise)."""
    if not style:
        return _finn_rule(node)
    kernel = plan.kernel_for(node.op_type)
    if kernel is not None and len(set(kernel.backend_types)) == 1:
        return f"pinned to {style} by the blueprint"
    if style == plan.style_for(node.op_type):
        return f"prefer: {style}"
    return _unasked_reason(node.op_type, style)


def _finn_rule(node: onnx.NodeProto) -> str:
    """FINN's rule for an MVAU/VVAU ``node`` no one asked a style for ("" for other layers:
    said from the backend chosen)."""
    from qonnx.custom_op.registry import getCustomOp

    if node.op_type not in ("MVAU", "VVAU"):
        return ""
    inst = getCustomOp(node)
    bits = min(inst.get_input_datatype(0).bitwidth(), inst.get_input_datatype(1).bitwidth())
    if inst.get_nodeattr("noActivation") == 0:
        return "thresholds fused (RTL has none)"
    if bits < 4:
        return f"{bits}-bit operands: LUTs beat DSPs"
    return "4+ bit operands: DSP packing where the part allows"


def backend_reason(
    op_type: str, asked: str, why_asked: str, backend: str, part: str, finn_says: str = ""
) -> str:
    """Why a layer of ``op_type`` became ``backend`` (``Op_hls``/``Op_rtl``): ``asked`` is the
    style set before specialisation ("" where FINN's rule chose), ``why_asked`` who asked for
    it (``asked_reason``), ``finn_says`` FINN's whole warning when it refused RTL."""
    got = backend.rpartition("_")[2]
    if asked and got != asked:
        return f"{why_asked}, but {_refusal(op_type, got, part, finn_says)}"
    if why_asked:
        return why_asked
    if got == "hls" and finn_says:
        return rtl_refusal(op_type, part, finn_says)
    return _default_reason(backend)


def _refusal(op_type: str, got: str, part: str, finn_says: str) -> str:
    """Why FINN made a layer of ``op_type`` ``got`` (hls/rtl) against what was asked."""
    if got == "hls":
        return rtl_refusal(op_type, part, finn_says)
    return f"FINN has no HLS variant of {op_type}"


def rtl_refusal(op_type: str, part: str, finn_says: str) -> str:
    """Why FINN made a layer of ``op_type`` HLS for ``part``, from its whole warning."""
    from finn.util.basic import is_versal

    explanation = FINN_FALLBACK.sub("", " ".join(finn_says.split())) if finn_says else ""
    if not explanation:
        return f"FINN has no RTL variant of {op_type}"
    if VERSAL.search(explanation) and not is_versal(part):
        layers = "elementwise layers" if op_type.startswith("Elementwise") else f"{op_type} layer"
        return f"no RTL variant of {op_type} for this part: FINN's RTL {layers} need a Versal part"
    return f"no RTL variant of {op_type} for this layer: FINN says: {explanation}"


def _default_reason(backend: str) -> str:
    from finn.custom_op.fpgadataflow.hls import custom_op as hls
    from finn.custom_op.fpgadataflow.rtl import custom_op as rtl

    kernel, _, style = backend.rpartition("_")
    if style == "rtl":
        return "RTL layer (no Vitis HLS needed)"
    if f"{kernel}_rtl" not in rtl:
        return "HLS only"
    if f"{kernel}_hls" in hls:
        return "RTL does not support these datatypes or this part"
    return ""


def _unasked_reason(op_type: str, style: str) -> str:
    """Why a layer neither pinned nor preferred gets ``style``: the default rule keeps FINN's
    own layer where the other backend is a plugin's alternative (brainsmith's RTL pooling)."""
    other = registered_layers().get(f"{op_type}_rtl")
    name = other.qualified_name if other is not None else "the RTL alternative"
    return f"default rule: FINN's {style.upper()} layer ({name} with prefer: rtl)"
