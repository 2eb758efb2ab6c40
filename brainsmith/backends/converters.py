"""brainsmith's stream width converter for widths that are not multiples of each other.

FINN's RTL converter (``dwc_axi`` over ``vpc``) moves such streams at one beat every two
cycles on the wider side: a 16-to-12-bit converter of 1,152 input beats takes 2,304 cycles
where its 1,536 output beats need 1,536, and the stitched accelerator runs up to 1.5 times
slower than FINN's estimate. ``bs_width_converter.sv`` keeps one beat per cycle on the
narrower side. Stitching (``brainsmith.hardware.rtlsim.stitched.partition``) uses it for every
converter whose widths are not multiples; for multiples FINN's converter is full rate and
stays.
"""

from __future__ import annotations

from finn.custom_op.fpgadataflow.rtl.streamingdatawidthconverter_rtl import (
    StreamingDataWidthConverter_rtl,
)
from finn.custom_op.fpgadataflow.streamingdatawidthconverter import (
    StreamingDataWidthConverter,
)

from brainsmith.backends.handwritten import HandwrittenRTL
from brainsmith.frameworks.finn.facts import RTL_DOMAIN

TYPE_CHECKING = False
if TYPE_CHECKING:
    import numpy as np
    import onnx

OP_TYPE = "WidthConverter_rtl"
DOMAIN = RTL_DOMAIN


class WidthConverter_rtl(HandwrittenRTL, StreamingDataWidthConverter_rtl):  # type: ignore[misc]
    """FINN's StreamingDataWidthConverter in brainsmith's full-rate SystemVerilog."""

    core = "bs_width_converter"

    def core_parameters(self) -> dict[str, int]:
        return {"IBITS": self.get_instream_width(), "OBITS": self.get_outstream_width()}

    def execute_node(self, context: dict[str, np.ndarray], graph: onnx.GraphProto) -> None:
        StreamingDataWidthConverter.execute_node(self, context, graph)  # Python in every mode

    def get_exp_cycles(self) -> int:
        """One beat per cycle on the narrower side: the larger of the two beat counts."""
        import numpy as np

        beats_in = int(np.prod(self.get_folded_input_shape()[:-1]))
        beats_out = int(np.prod(self.get_folded_output_shape()[:-1]))
        return max(beats_in, beats_out)

    def lut_estimation(self, fpgapart: str | None = None) -> int:
        return self.fitted_luts()


def needs_full_rate(op: StreamingDataWidthConverter) -> bool:
    """Whether FINN's converter ``op`` would run below one beat per cycle."""
    wide, narrow = sorted((op.get_instream_width(), op.get_outstream_width()), reverse=True)
    return bool(wide % narrow != 0)


def register() -> None:
    """Make ``WidthConverter_rtl`` a layer QONNX can instantiate (idempotent)."""
    import finn.custom_op.fpgadataflow.rtl as rtl_layers
    from qonnx.custom_op.registry import add_op_to_domain, is_custom_op

    if not is_custom_op(DOMAIN, OP_TYPE):
        add_op_to_domain(DOMAIN, WidthConverter_rtl)
    table = getattr(rtl_layers, "custom_op", None)
    if isinstance(table, dict):
        table.setdefault(OP_TYPE, WidthConverter_rtl)
