"""brainsmith's RTL backends of FINN's stream layers that FINN has only in HLS."""

from __future__ import annotations

from finn.custom_op.fpgadataflow.duplicatestreams import DuplicateStreams

from brainsmith.backends.handwritten import HandwrittenRTL
from brainsmith.plugin import backend


@backend(kernel="DuplicateStreams", backend_type="rtl", priority="LOW")
class DuplicateStreamsRTL(DuplicateStreams, HandwrittenRTL):  # type: ignore[misc]
    """RTL DuplicateStreams (brainsmith's SystemVerilog): one input to N outputs."""

    core = "bs_duplicate_streams"

    def core_parameters(self) -> dict[str, int]:
        return {"WIDTH": self.get_instream_width(), "N": self.get_num_output_streams()}

    def output_links(self, outputs: list[tuple[str, int]]) -> tuple[list[str], list[str]]:
        width = self.get_outstream_width()
        count = len(outputs)
        wires = [
            f"wire [{count * width - 1}:0] m_data;",
            f"wire [{count - 1}:0] m_valid;",
            f"wire [{count - 1}:0] m_ready;",
        ]
        for index, (name, _) in enumerate(outputs):
            wires += [
                f"assign {name}_TDATA = m_data[{(index + 1) * width - 1}:{index * width}];",
                f"assign {name}_TVALID = m_valid[{index}];",
                f"assign m_ready[{index}] = {name}_TREADY;",
            ]
        links = [
            "        .m_tdata(m_data)",
            "        .m_tvalid(m_valid)",
            "        .m_tready(m_ready)",
        ]
        return wires, links

    def lut_estimation(self, fpgapart: str | None = None) -> int:
        return self.fitted_luts()
