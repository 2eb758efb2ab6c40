"""brainsmith's RTL backend of the ``IntAdd`` kernel (FINN's integer ElementwiseAdd)."""

from __future__ import annotations

from finn.custom_op.fpgadataflow.rtlbackend import RTLBackend

from brainsmith.backends.handwritten import HandwrittenRTL
from brainsmith.kernels.int_add import IntAdd
from brainsmith.plugin import backend


@backend(kernel="IntAdd", backend_type="rtl")
class IntAddRTL(IntAdd, HandwrittenRTL):
    """RTL IntAdd (brainsmith's SystemVerilog): sums of two integer streams."""

    core = "bs_int_add"

    def get_nodeattr_types(self) -> dict[str, tuple[object, ...]]:
        return {**IntAdd.get_nodeattr_types(self), **RTLBackend.get_nodeattr_types(self)}

    def core_parameters(self) -> dict[str, int]:
        a, b = self.get_input_datatype(0), self.get_input_datatype(1)
        return {
            "PE": self.pe,
            "A_BITS": a.bitwidth(),
            "A_SIGNED": int(a.signed()),
            "B_BITS": b.bitwidth(),
            "B_SIGNED": int(b.signed()),
            "OUT_BITS": self.get_output_datatype().bitwidth(),
        }

    def lut_estimation(self, fpgapart: str | None = None) -> int:
        return self.fitted_luts()
