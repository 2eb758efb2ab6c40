"""Stream beats packed and unpacked by brainsmith bit for bit as FINN's ``npy_to_rtlsim_input``
and ``rtlsim_output_to_npy`` do, over data types, shapes and stream paddings."""

from __future__ import annotations

import numpy as np
import pytest
from finn.util.data_packing import npy_to_rtlsim_input, rtlsim_output_to_npy
from qonnx.core.datatype import DataType

from brainsmith.hardware.rtlsim.beats import pack_beats, unpack_beats

TYPES = ["BIPOLAR", "BINARY", "UINT2", "INT2", "INT3", "UINT8", "INT8", "INT13", "INT32"]
SHAPES = [(1, 4, 4, 3, 5), (2, 7, 1), (3, 64), (10, 1)]


def random_values(dtype, shape, rng) -> np.ndarray:
    if dtype.get_canonical_name() == "BIPOLAR":
        return rng.choice([-1.0, 1.0], size=shape).astype(np.float32)
    return rng.integers(dtype.min(), dtype.max() + 1, size=shape).astype(np.float32)


@pytest.mark.parametrize("name", TYPES)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("padding", [0, 8, 13])
def test_beats_are_finn_s_bit_for_bit(name, shape, padding):
    dtype, rng = DataType[name], np.random.default_rng(len(name) + sum(shape) + padding)
    values = random_values(dtype, shape, rng)
    stream_bits = -(-dtype.bitwidth() * shape[-1] // 8) * 8 + padding
    beats = pack_beats(values, dtype, stream_bits)
    assert beats == list(npy_to_rtlsim_input(values, dtype, stream_bits))
    back = unpack_beats(beats, dtype, shape, stream_bits)
    assert np.array_equal(back, values)
    finn = rtlsim_output_to_npy(beats, None, dtype, shape, stream_bits, dtype.bitwidth())
    assert np.array_equal(back, finn)


def test_bits_beyond_the_elements_are_ignored_when_unpacking():
    dtype = DataType["INT4"]
    beats = pack_beats(np.array([[-8.0, 7.0]]), dtype, 16)
    assert unpack_beats([beats[0] | 0xFF00], dtype, (1, 2), 16).tolist() == [[-8.0, 7.0]]


@pytest.mark.parametrize(
    ("name", "values"), [("UINT2", [4.0]), ("INT4", [0.5]), ("BIPOLAR", [0.0]), ("INT4", [-9.0])]
)
def test_values_outside_the_data_type_are_refused(name, values):
    with pytest.raises(ValueError, match=f"a stream of {name} carries values that are not"):
        pack_beats(np.array([values]), DataType[name], 8)


def test_floating_point_streams_are_packed_by_finn():
    dtype = DataType["FLOAT32"]
    values = np.array([[1.5, -2.25]], dtype=np.float32)
    beats = pack_beats(values, dtype, 64)
    assert beats == list(npy_to_rtlsim_input(values, dtype, 64))
    assert np.array_equal(unpack_beats(beats, dtype, (1, 2), 64), values)
