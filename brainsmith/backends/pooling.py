"""brainsmith's RTL backends of FINN's pooling layers, which FINN has only in HLS."""

from __future__ import annotations

import math

import numpy as np
from finn.custom_op.fpgadataflow.globalaccpool import GlobalAccPool
from finn.custom_op.fpgadataflow.pool import Pool

from brainsmith.backends.handwritten import HandwrittenRTL
from brainsmith.plugin import backend

FUNCTIONS = {"MaxPool": 0, "AccPool": 1, "QuantAvgPool": 2}


@backend(kernel="Pool", backend_type="rtl", priority="LOW")
class PoolRTL(Pool, HandwrittenRTL):  # type: ignore[misc]
    """RTL Pool (brainsmith's SystemVerilog): max, sum or shifted-sum pooling.

    FINN's Pool (MaxPool, AccPool, QuantAvgPool), fed by a depthwise
    sliding window: per channel fold, the window's beats one after another (the order
    brainsmith's Python execution of the generator and the pool already use).
    """

    core = "bs_pool"

    def core_parameters(self) -> dict[str, int]:
        function = self.get_nodeattr("Function")
        if function not in FUNCTIONS:
            raise ValueError(
                f"{self.onnx_node.name}: Function {function} has no RTL implementation "
                f"(brainsmith's Pool_rtl does {', '.join(FUNCTIONS)}); use prefer: hls"
            )
        idt, odt = self.get_input_datatype(), self.get_output_datatype()
        window = int(np.prod(self.get_nodeattr("KernelSize")))
        return {
            "PE": self.get_nodeattr("PE"),
            "WINDOW": window,
            "IN_BITS": idt.bitwidth(),
            "ACC_BITS": self.accumulator_bits(),
            "OUT_BITS": odt.bitwidth(),
            "SIGNED": int(idt.signed()),
            "FUNCTION": FUNCTIONS[function],
            "SHIFT": self.shift(),
        }

    def accumulator_bits(self) -> int:
        window = int(np.prod(self.get_nodeattr("KernelSize")))
        bits: int = self.get_input_datatype().bitwidth()
        return bits + math.ceil(math.log2(window)) + 1

    def shift(self) -> int:
        """QuantAvgPool's right shift, as FINN's Python execution computes it."""
        if self.get_nodeattr("Function") != "QuantAvgPool":
            return 0
        window = int(np.prod(self.get_nodeattr("KernelSize")))
        largest = (2 ** self.get_input_datatype().bitwidth() - 1) * window
        bits: int = self.get_output_datatype().bitwidth()
        return max(0, int(largest).bit_length() - bits)

    def lut_estimation(self, fpgapart: str | None = None) -> int:
        return self.fitted_luts()


@backend(kernel="GlobalAccPool", backend_type="rtl", priority="LOW")
class GlobalAccPoolRTL(GlobalAccPool, HandwrittenRTL):  # type: ignore[misc]
    """RTL GlobalAccPool (brainsmith's SystemVerilog): sums over every pixel."""

    core = "bs_global_acc_pool"

    def core_parameters(self) -> dict[str, int]:
        vectors = list(self.get_nodeattr("numInputVectors"))
        pe = self.get_nodeattr("PE")
        return {
            "PE": pe,
            "FOLDS": self.get_nodeattr("NumChannels") // pe,
            "PIXELS": int(np.prod(vectors[1:])) if len(vectors) > 1 else int(vectors[0]),
            "IN_BITS": self.get_input_datatype().bitwidth(),
            "OUT_BITS": self.get_output_datatype().bitwidth(),
            "SIGNED": int(self.get_input_datatype().signed()),
        }

    def lut_estimation(self, fpgapart: str | None = None) -> int:
        return self.fitted_luts()
