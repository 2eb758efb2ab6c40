"""What the report counts: FPGA resource kinds and the bit widths of QONNX data types."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from brainsmith.builder.records import Resource

RESOURCES: tuple[Resource, ...] = ("LUT", "BRAM_18K", "URAM", "DSP")


def bits(datatype: str | None) -> int | None:
    """The bit width of a QONNX data type name."""
    if not datatype:
        return None
    from qonnx.core.datatype import DataType

    try:
        return int(DataType[datatype].bitwidth())
    except (KeyError, ValueError):
        return None
