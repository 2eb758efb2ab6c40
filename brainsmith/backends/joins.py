"""brainsmith's RTL backends of FINN's StreamingConcat and UpsampleNearestNeighbour, which FINN
has only in HLS: networks joining branches with ``torch.cat`` or upsampling feature maps then
build without an HLS layer and simulate whole in Verilator."""

from __future__ import annotations

import math

from finn.custom_op.fpgadataflow.concat import StreamingConcat
from finn.custom_op.fpgadataflow.upsampler import UpsampleNearestNeighbour

from brainsmith.backends.handwritten import HandwrittenRTL
from brainsmith.backends.shuffles import packed_constant
from brainsmith.plugin import backend

LUTRAM_BITS = 64  # bits one LUT holds as distributed RAM with an asynchronous read


@backend(kernel="StreamingConcat", backend_type="rtl", priority="LOW")
class StreamingConcatRTL(StreamingConcat, HandwrittenRTL):  # type: ignore[misc]
    """RTL StreamingConcat (brainsmith's SystemVerilog): inputs in turn, no buffering.

    For each vector, each input's beats in turn, every element extended to the output's
    type.
    """

    core = "bs_concat"

    def core_parameters(self) -> dict[str, int | str]:
        simd = self.get_nodeattr("SIMD")
        count = len(self.onnx_node.input)
        types = [self.get_input_datatype(i) for i in range(count)]
        widths = [self.get_instream_width(i) for i in range(count)]
        return {
            "N": count,
            "SIMD": simd,
            "OBITS": self.get_output_datatype().bitwidth(),
            "IN_WIDTH": sum(widths),
            "FOLDS": packed_constant(c // simd for c in self.get_nodeattr("ChannelsPerStream")),
            "IBITS": packed_constant(t.bitwidth() for t in types),
            "OFFSETS": packed_constant(sum(widths[:i]) for i in range(count)),
            "SIGNED": f"{count}'b" + "".join("1" if t.signed() else "0" for t in reversed(types)),
        }

    def input_links(self, inputs: list[tuple[str, int]]) -> tuple[list[str], list[str]]:
        """Every input's TDATA packed into the core's ``s_tdata``, the first lowest."""
        count = len(inputs)
        widths = [self.get_instream_width(i) for i in range(count)]
        data = ", ".join(
            f"{name}_TDATA[{widths[i] - 1}:0]" for i, (name, _) in reversed(list(enumerate(inputs)))
        )
        wires = [
            f"wire [{count - 1}:0] s_ready;",
            *(f"assign {name}_TREADY = s_ready[{i}];" for i, (name, _) in enumerate(inputs)),
        ]
        valid = ", ".join(f"{name}_TVALID" for name, _ in reversed(inputs))
        links = [
            f"        .s_tdata({{{data}}})",
            f"        .s_tvalid({{{valid}}})",
            "        .s_tready(s_ready)",
        ]
        return wires, links

    def lut_estimation(self, fpgapart: str | None = None) -> int:
        """A multiplexer of the inputs per output bit and the turn counters (not fitted to
        synthesis)."""
        count = len(self.onnx_node.input)
        width: int = self.get_outstream_width()
        return math.ceil(width * (count - 1) / 2) + 40


@backend(kernel="UpsampleNearestNeighbour", backend_type="rtl", priority="LOW")
class UpsampleNearestNeighbourRTL(UpsampleNearestNeighbour, HandwrittenRTL):  # type: ignore[misc]
    """RTL UpsampleNearestNeighbour (brainsmith's SystemVerilog): whole factors, a row buffer.

    For whole scale factors: one input row buffered, each pixel repeated across and each
    row down, one beat per cycle.
    """

    core = "bs_upsample"

    def factors(self) -> tuple[int, int]:
        """(rows, columns) of output per input pixel; refused unless whole."""
        high, wide = self.get_nodeattr("HO"), self.get_nodeattr("WO")
        rows, columns = self.get_nodeattr("HI"), self.get_nodeattr("WI")
        if high % rows or wide % columns:
            raise ValueError(
                f"{self.onnx_node.name}: upsampling {rows}x{columns} to {high}x{wide} is not by "
                "whole factors; brainsmith's RTL upsampler repeats pixels a whole number of "
                "times (use its HLS backend: --prefer hls)"
            )
        return high // rows, wide // columns

    def core_parameters(self) -> dict[str, int]:
        rows, columns = self.factors()
        return {
            "WIDTH": self.get_instream_width(),
            "WI": self.get_nodeattr("WI"),
            "FOLD": self.get_nodeattr("NumChannels") // self.get_nodeattr("SIMD"),
            "SH": rows,
            "SW": columns,
        }

    def lut_estimation(self, fpgapart: str | None = None) -> int:
        """The row buffer in LUT-RAM, its read multiplexer and the counters (not fitted to
        synthesis)."""
        words: int = self.get_nodeattr("WI") * self.get_nodeattr("NumChannels")
        width: int = self.get_instream_width()
        bits: int = self.get_input_datatype().bitwidth()
        return math.ceil(words * bits / LUTRAM_BITS) + width + 60
