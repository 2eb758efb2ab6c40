"""brainsmith's RTL backend of FINN's LabelSelect (TopK), which FINN has only in HLS."""

from __future__ import annotations

from finn.custom_op.fpgadataflow.labelselect import LabelSelect

from brainsmith.backends.handwritten import HandwrittenRTL
from brainsmith.plugin import backend


@backend(kernel="LabelSelect", backend_type="rtl", priority="LOW")
class LabelSelectRTL(LabelSelect, HandwrittenRTL):  # type: ignore[misc]
    """RTL LabelSelect (brainsmith's SystemVerilog): indices of the K largest values.

    A sorted list of K, PE values placed per beat; equal values keep the lower index first, as
    ONNX TopK does.
    """

    core = "bs_label_select"

    def core_parameters(self) -> dict[str, int]:
        idt = self.get_input_datatype()
        if not idt.is_integer():
            raise ValueError(
                f"{self.onnx_node.name}: LabelSelect_rtl compares integers, not {idt.name}; "
                "use prefer: hls"
            )
        return {
            "PE": self.get_nodeattr("PE"),
            "LABELS": self.get_nodeattr("Labels"),
            "K": self.get_nodeattr("K"),
            "IN_BITS": idt.bitwidth(),
            "SIGNED": int(idt.signed()),
            "OUT_BITS": self.get_output_datatype().bitwidth(),
        }

    def get_exp_cycles(self) -> int:
        """A beat per fold; the K indices leave while the next vector arrives, so with K
        above the folds the output sets the pace."""
        folds: int = self.get_nodeattr("Labels") // self.get_nodeattr("PE")
        vectors = 1
        for count in self.get_nodeattr("numInputVectors"):
            vectors *= count
        k: int = self.get_nodeattr("K")
        return vectors * max(folds, k)

    def lut_estimation(self, fpgapart: str | None = None) -> int:
        return self.fitted_luts()
