"""FINN's packing of values into hex words, in NumPy.

FINN writes every weight and threshold memory it generates, and every word it feeds an RTL
simulation, with ``finn.util.data_packing.pack_innermost_dim_as_hex_string``: one
``bitstring`` object per value, about 0.24 ms a row (7.2 s for a 30,000-row weight memory
of 16 4-bit values a word; 0.06 s here, ``python -m benchmarks.finn_fast_paths``).
``install()`` (idempotent, from ``prepare_finn``) puts ``pack_innermost_dim_as_hex_string``
below in its place, before any FINN layer imports it:
the same strings in an array of the same shape and dtype. Whatever it does not cover — a
value its type does not allow, a word wider than its padding (FINN raises for both), padding
that is not whole hex digits, a type that is neither integer nor FLOAT32, an empty array —
goes to FINN's own function, errors included.
"""

from __future__ import annotations

from brainsmith.frameworks.finn.on_import import when_imported

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import ModuleType

    import numpy as np
    from qonnx.core.datatype import BaseDataType

DATA_PACKING = "finn.util.data_packing"
NAME = "pack_innermost_dim_as_hex_string"
MARK = "_brainsmith_packing"
WIDEST = 62  # bits of one value that int64 arithmetic packs exactly
BLOCK_BITS = 1 << 22  # bits packed at a time (a bounded working set for large memories)


def install() -> None:
    """FINN's packing becomes the NumPy one, now if FINN's module is loaded, else when it is."""
    when_imported(DATA_PACKING, _replace)


def _replace(module: ModuleType) -> None:
    finns = getattr(module, NAME)
    if getattr(finns, MARK, False):
        return
    setattr(module, f"finn_{NAME}", finns)  # kept for comparison
    setattr(pack_innermost_dim_as_hex_string, MARK, True)
    setattr(module, NAME, pack_innermost_dim_as_hex_string)


def pack_innermost_dim_as_hex_string(
    ndarray: object,
    dtype: BaseDataType,
    pad_to_nbits: int,
    reverse_inner: bool = False,
    prefix: str = "0x",
) -> np.ndarray:
    """The innermost dimension of ``ndarray`` packed into one hex string per row, as FINN's
    function of this name packs it (first value in the most significant bits)."""
    import numpy as np

    values = np.asarray(ndarray, dtype=np.float32)
    words = _words(values, dtype, max(pad_to_nbits, 4), reverse_inner)
    if words is None:
        import finn.util.data_packing as finn

        finns = getattr(finn, f"finn_{NAME}")
        return finns(ndarray, dtype, pad_to_nbits, reverse_inner, prefix)  # type: ignore[no-any-return]
    digits = words.shape[-1]
    text = np.ascontiguousarray(words).view(f"S{digits}").reshape(values.shape[:-1])
    joined = np.char.add(prefix, text.astype(f"U{digits}"))
    return joined.astype(f"U{len(prefix) + digits}", copy=False)


def _words(values: np.ndarray, dtype: BaseDataType, pad: int, reverse: bool) -> np.ndarray | None:
    """Hex digits (ASCII codes, one row per word), or None where FINN's own function is to
    answer."""
    import numpy as np
    from qonnx.core.datatype import DataType

    if values.ndim == 0 or values.size == 0 or pad % 4:
        return None
    if dtype == DataType["BIPOLAR"]:
        values, dtype = (values + 1) / 2, DataType["BINARY"]
    if reverse:
        values = np.flip(values, -1)
    width = dtype.bitwidth()
    if dtype.is_fixed_point():
        values, dtype = values / dtype.scale_factor(), DataType[f"INT{width}"]
    if values.shape[-1] * width > pad or width > WIDEST:
        return None
    if dtype.is_integer():
        if not np.all(dtype.allowed(values)):
            return None
        codes = values.astype(np.int64) & ((1 << width) - 1)
    elif dtype == DataType["FLOAT32"]:
        codes = values.astype(np.float32).view(np.uint32).astype(np.int64)
    else:
        return None
    rows = codes.reshape(-1, values.shape[-1])
    digits = np.empty((rows.shape[0], pad // 4), dtype=np.uint8)
    step = max(1, BLOCK_BITS // (rows.shape[1] * width))
    for start in range(0, rows.shape[0], step):
        digits[start : start + step] = _hex_digits(rows[start : start + step], width, pad)
    return digits


def _hex_digits(codes: np.ndarray, width: int, pad: int) -> np.ndarray:
    """Rows of ``width``-bit codes, first in the most significant bits, zero-padded to
    ``pad`` bits, as ASCII hex digits."""
    import numpy as np

    shifts = np.arange(width - 1, -1, -1, dtype=np.int64)
    bits = ((codes[..., None] >> shifts) & 1).astype(np.uint8).reshape(codes.shape[0], -1)
    padded = np.zeros((codes.shape[0], pad), dtype=np.uint8)
    padded[:, pad - bits.shape[1] :] = bits
    nibbles = padded.reshape(codes.shape[0], pad // 4, 4) @ np.array([8, 4, 2, 1], np.uint8)
    return np.frombuffer(b"0123456789abcdef", dtype=np.uint8)[nibbles]
