"""FINN's and QONNX's slow paths brainsmith replaces, answering as they do: the hex packing
of memories and simulation words (the same strings for every data type, width, padding,
order and shape FINN packs, FINN's errors where it raises, FINN's layers using it once
brainsmith has prepared FINN), and the check of one number against an integer type."""

from __future__ import annotations

import numpy as np
import pytest

from brainsmith.frameworks.finn.env import prepare_finn

prepare_finn()

import finn.util.data_packing as data_packing  # noqa: E402
from qonnx.core.datatype import DataType  # noqa: E402

from brainsmith.frameworks.finn.packing import pack_innermost_dim_as_hex_string as fast  # noqa: E402

finns = data_packing.finn_pack_innermost_dim_as_hex_string
TYPES = ["BINARY", "BIPOLAR", "INT2", "UINT3", "INT4", "UINT8", "INT9", "INT16", "UINT24",
         "INT32", "FIXED<8,3>", "FLOAT32"]  # fmt: skip


def _values(rng: np.random.Generator, name: str, shape: tuple[int, ...]) -> np.ndarray:
    dtype = DataType[name]
    if name == "FLOAT32":
        return rng.standard_normal(shape).astype(np.float32) * 1e3
    if dtype.is_fixed_point():
        ints = rng.integers(-(2 ** (dtype.bitwidth() - 1)), 2 ** (dtype.bitwidth() - 1), shape)
        return (ints * dtype.scale_factor()).astype(np.float32)
    if name == "BIPOLAR":
        return rng.choice([-1.0, 1.0], shape).astype(np.float32)
    return rng.integers(dtype.min(), dtype.max() + 1, shape).astype(np.float32)


@pytest.mark.parametrize("name", TYPES)
def test_every_type_packs_as_finn_packs_it(name: str) -> None:
    rng = np.random.default_rng(len(name))
    width = DataType[name].bitwidth()
    for shape in [(5,), (3, 4), (2, 3, 7), (1, 1, 2, 16)]:
        values = _values(rng, name, shape)
        row_bits = shape[-1] * width
        for pad in {row_bits + (-row_bits) % 4, row_bits + (-row_bits) % 4 + 8, 4}:
            if pad < row_bits:
                continue
            for reverse in (False, True):
                for prefix in ("0x", ""):
                    ours = fast(values, DataType[name], pad, reverse, prefix)
                    theirs = finns(values, DataType[name], pad, reverse, prefix)
                    assert ours.shape == theirs.shape and ours.dtype == theirs.dtype
                    assert (ours == theirs).all(), (name, shape, pad, reverse, prefix)


def test_extremes_lists_and_half_precision_containers_pack_as_finn_packs_them() -> None:
    int8 = DataType["INT8"]
    extremes = np.array([[-128, 127, 0, -1], [1, -2, 64, -65]], dtype=np.float32)
    assert (fast(extremes, int8, 32) == finns(extremes, int8, 32)).all()
    assert fast(extremes, int8, 32)[0] == "0x807f00ff"
    assert (fast([[1, 1, 1, 0]], DataType["BINARY"], 8) == np.array(["0x0e"])).all()
    half = extremes.astype(np.float16)
    assert (fast(half, int8, 40, True) == finns(half, int8, 40, True)).all()


def test_what_finn_refuses_is_refused_with_finn_s_error() -> None:
    with pytest.raises(AssertionError, match="not permitted"):
        fast(np.array([[3.0, 4.0]], np.float32), DataType["UINT2"], 8)
    with pytest.raises(AssertionError, match="not permitted"):
        fast(np.array([[0.5, 1.0]], np.float32), DataType["INT4"], 8)
    with pytest.raises(Exception, match="greater than pad_to_nbits"):
        fast(np.ones((2, 5), np.float32), DataType["INT4"], 16)


def test_a_large_memory_is_packed_in_blocks_the_same_way() -> None:
    values = _values(np.random.default_rng(7), "INT4", (70_000, 16))
    ours = fast(values, DataType["INT4"], 64)
    sample = np.random.default_rng(8).choice(len(values), 300, replace=False)
    assert (ours[sample] == finns(values[sample], DataType["INT4"], 64)).all()


def test_finn_s_layers_pack_with_it_once_finn_is_prepared() -> None:
    import finn.custom_op.fpgadataflow.matrixvectoractivation as mvau
    import finn.custom_op.fpgadataflow.rtl.thresholding_rtl as thresholds

    assert data_packing.pack_innermost_dim_as_hex_string is fast
    assert mvau.pack_innermost_dim_as_hex_string is fast
    assert thresholds.pack_innermost_dim_as_hex_string is fast


@pytest.mark.parametrize("name", ["BINARY", "UINT1", "INT2", "UINT4", "INT8", "INT32", "UINT32"])
def test_one_number_is_allowed_by_an_integer_type_as_qonnx_answers(name: str) -> None:
    dtype = DataType[name]
    numbers = [0, 1, -1, 2, -2, 3, 15, 16, 127, 128, -128, -129, 255, 256, 0.5, -0.5, 2**31 - 1,
               -(2**31), 2**32 - 1, 2**32, True, np.float32(3), np.int64(7), np.float64(2.5),
               float("nan"), float("inf"), -float("inf")]  # fmt: skip
    for number in numbers:
        ours, qonnx = dtype.allowed(number), type(dtype).qonnx_allowed(dtype, number)
        assert ours == qonnx and type(ours) is type(qonnx), (name, number)
    values = np.array(numbers[:-3], dtype=np.float64)
    assert (dtype.allowed(values) == type(dtype).qonnx_allowed(dtype, values)).all()
    assert np.vectorize(dtype.allowed)(values).tolist() == dtype.allowed(values).tolist()


def test_a_correction_runs_once_its_module_runs_and_then_the_finder_leaves(tmp_path, monkeypatch):
    """``when_imported`` corrects a module right after it runs, before anyone imports names
    from it, and with nothing left to correct asks no later import."""
    import importlib
    import sys

    from brainsmith.frameworks.finn.on_import import _OnImport, when_imported

    (tmp_path / "late_module_x.py").write_text("VALUE = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "late_module_x", raising=False)
    when_imported("late_module_x", lambda module: setattr(module, "VALUE", 2))
    assert any(isinstance(finder, _OnImport) for finder in sys.meta_path)
    from late_module_x import VALUE

    assert VALUE == 2
    assert not any(
        isinstance(finder, _OnImport) and "late_module_x" in finder.corrections
        for finder in sys.meta_path
    )
    assert importlib.import_module("late_module_x").VALUE == 2
    sys.modules.pop("late_module_x", None)
