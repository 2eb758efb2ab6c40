"""What the report counts: FPGA resource kinds (FINN's, ``RESOURCES``) and the bit widths of
QONNX data types."""

from __future__ import annotations

from brainsmith.frameworks.finn.facts import RESOURCES

__all__ = ["RESOURCES", "bits"]


def bits(datatype: str | None) -> int | None:
    """The bit width of a QONNX data type name."""
    if not datatype:
        return None
    from qonnx.core.datatype import DataType

    try:
        return int(DataType[datatype].bitwidth())
    except (KeyError, ValueError):
        return None
