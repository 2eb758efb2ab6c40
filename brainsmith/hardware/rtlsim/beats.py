"""Stream beats to and from arrays, bit for bit as FINN packs them (``npy_to_rtlsim_input``
and ``rtlsim_output_to_npy`` with the innermost dimension reversed: element 0 in the lowest
bits), vectorised with numpy for integer data types. FINN's own functions go element by
element in Python (a full-size CNV's sliding-window stream of 16 frames took minutes);
floating-point and fixed-point types still go through them."""

from __future__ import annotations

import numpy as np

TYPE_CHECKING = False
if TYPE_CHECKING:
    from qonnx.core.datatype import BaseDataType


def pack_beats(array: np.ndarray, dtype: BaseDataType, stream_bits: int) -> list[int]:
    """One integer per beat: the innermost dimension of ``array`` packed, ``dtype`` bits per
    element (two's complement; bipolar -1/+1 as 0/1)."""
    if not dtype.is_integer():
        from finn.util.data_packing import npy_to_rtlsim_input

        return list(npy_to_rtlsim_input(array, dtype, stream_bits))
    values = np.asarray(array, dtype=np.float64)
    name = dtype.get_canonical_name()
    if name == "BIPOLAR":
        valid = bool(np.isin(values, (-1, 1)).all())
        values = (values + 1) / 2
    else:
        valid = values.size == 0 or bool(
            np.array_equal(values, np.round(values))
            and dtype.allowed(values.min())
            and dtype.allowed(values.max())
        )
    if not valid:
        raise ValueError(f"a stream of {name} carries values that are not {name}")
    width = 1 if name == "BIPOLAR" else dtype.bitwidth()
    ints = values.astype(np.int64).reshape(-1, values.shape[-1] if values.ndim else 1)
    bits = (ints[..., None] >> np.arange(width, dtype=np.int64)) & 1  # two's complement
    packed = np.packbits(bits.astype(np.uint8).reshape(len(ints), -1), axis=1, bitorder="little")
    return [int.from_bytes(row.tobytes(), "little") for row in packed]


def unpack_beats(
    beats: list[int], dtype: BaseDataType, shape: tuple[int, ...], stream_bits: int
) -> np.ndarray:
    """The array of ``shape`` (its innermost dimension: the elements of one beat) that
    ``beats`` carry; bits beyond the elements (padding to the stream width) are ignored."""
    if not dtype.is_integer():
        from finn.util.data_packing import rtlsim_output_to_npy

        unpacked: np.ndarray = rtlsim_output_to_npy(
            beats, None, dtype, shape, stream_bits, dtype.bitwidth()
        )
        return unpacked
    width = 1 if dtype.get_canonical_name() == "BIPOLAR" else dtype.bitwidth()
    elements = shape[-1]
    used = width * elements
    size = (used + 7) // 8
    mask = (1 << used) - 1
    raw = np.frombuffer(
        b"".join((beat & mask).to_bytes(size, "little") for beat in beats), np.uint8
    )
    bits = np.unpackbits(raw.reshape(len(beats), size), axis=1, bitorder="little")[:, :used]
    ints = (bits.reshape(len(beats), elements, width).astype(np.int64) << np.arange(width)).sum(-1)
    if dtype.get_canonical_name() == "BIPOLAR":
        ints = 2 * ints - 1
    elif dtype.signed():
        ints = np.where(ints >= 1 << (width - 1), ints - (1 << width), ints)
    values: np.ndarray = ints.astype(np.float32).reshape(shape)
    return values
