"""The ``IntAdd`` kernel: FINN's ElementwiseAdd of two integer streams, for RTL.

FINN implements an integer ElementwiseAdd only in HLS (its RTL adder takes floats). When a
build asks for RTL (``prefer: rtl``), the ``specialize`` step makes each such layer whose two
operands are streams of the output's shape an ``IntAdd``, which brainsmith implements in
SystemVerilog (``brainsmith/backends/arith.py``); it computes exactly as ElementwiseAdd.
"""

from __future__ import annotations

from finn.custom_op.fpgadataflow.elementwise_binary import ElementwiseAdd

from brainsmith.plugin import kernel


@kernel(op_type="IntAdd", domain="finn.custom_op.fpgadataflow")
class IntAdd(ElementwiseAdd):  # type: ignore[misc]
    """ElementwiseAdd of two integer streams (any widths and signedness), for RTL."""

    @staticmethod
    def takes(layer: ElementwiseAdd) -> bool:
        """Whether an ElementwiseAdd ``layer`` (a FINN op) can become an IntAdd."""
        styles = {layer.get_nodeattr("lhs_style"), layer.get_nodeattr("rhs_style")}
        shapes = [list(layer.get_nodeattr(n)) for n in ("lhs_shape", "rhs_shape", "out_shape")]
        types = [layer.get_input_datatype(0), layer.get_input_datatype(1)]
        fits: bool = (
            styles == {"input"}
            and shapes[0] == shapes[1] == shapes[2]
            and all(t.is_integer() and t.bitwidth() <= 31 for t in types)
            and layer.get_output_datatype().bitwidth() <= 32
        )
        return fits
