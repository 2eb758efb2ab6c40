"""brainsmith's RTL backend of the ``StreamingDepthToSpace`` kernel (DepthToSpace on a
channels-last stream, two row buffers)."""

from __future__ import annotations

from finn.custom_op.fpgadataflow.rtlbackend import RTLBackend

from brainsmith.backends.handwritten import HandwrittenRTL
from brainsmith.kernels.depth_to_space import StreamingDepthToSpace
from brainsmith.plugin import backend


@backend(kernel="StreamingDepthToSpace", backend_type="rtl")
class StreamingDepthToSpaceRTL(StreamingDepthToSpace, HandwrittenRTL):
    """RTL StreamingDepthToSpace (brainsmith's SystemVerilog): two row buffers.

    An input row is written into one buffer while the other is read once per output row, SIMD
    channels per beat.
    """

    core = "bs_depth_to_space"

    def get_nodeattr_types(self) -> dict[str, tuple[object, ...]]:
        return {**StreamingDepthToSpace.get_nodeattr_types(self),
                **RTLBackend.get_nodeattr_types(self)}  # fmt: skip

    def row_elements(self) -> int:
        """Elements of one input row: WI pixels of C * r * r channels."""
        *_, width, depth = self.get_normal_input_shape()
        return width * depth

    def core_parameters(self) -> dict[str, int]:
        return {
            "BITS": self.get_input_datatype().bitwidth(),
            "SIMD": self.get_nodeattr("SIMD"),
            "W": self.get_nodeattr("WI"),
            "C": self.get_nodeattr("NumChannels"),
            "R": self.block,
            "CRD": int(self.get_nodeattr("Mode") == "CRD"),
        }

    def lut_estimation(self, fpgapart: str | None = None) -> int:
        """The row buffers in LUT-RAM and the address counters: the model fitted to Yosys'
        counts (``rtl_costs``; by element, CRD at SIMD > 1, costs the most)."""
        return self.fitted_luts()
