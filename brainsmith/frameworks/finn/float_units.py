"""finn-rtllib's float softmax and LayerNorm in Python, bit for bit.

FINN's Python models of ``HWSoftmax`` and ``LayerNorm`` compute the exact functions, but
their RTL (``softmax_rtl/softmaxf.sv``, ``layernorm/layernorm.sv``) approximates them: the
softmax evaluates its exponential as piecewise quadratics, sums in fixed point and takes the
reciprocal by two Newton steps from a bit-pattern seed; the LayerNorm sums in a SIMD adder
tree and a running accumulator, leaves out epsilon and takes one Newton step of the fast
inverse square root. The two differ by up to 0.5 % and 0.2 % of the largest output, so a
correct design could not be told from a wrong one in simulation.

Within ``rtl_arithmetic()`` (the Python execution RTL simulation is compared with), each
``*_rtl`` layer runs the RTL's own arithmetic in NumPy, operation by operation in IEEE single
precision (round to nearest even, as ``brainsmith.hardware.rtlsim.single_precision`` simulates every
``DSPFP32`` operation), with the RTL's truncating conversions and its order of additions, so
Verilator's outputs equal Python's bit for bit. Elsewhere (verification against the QONNX
model and torch) they compute the exact functions, what the network is meant to compute.
"""

from __future__ import annotations

import contextlib
import contextvars

import numpy as np

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator

F32 = np.float32
U32 = np.uint32

# softmaxf_pkg.sv: exp(x) for x <= 0 as c0 + x*(c1 + x*c2) on 17 segments: |x| < 1, then
# four octaves [2**o, 2**(o+1)) of four sub-segments each; below -16 it is 0.
EXP_COEFFS = np.array(
    [
        [0x3F7E975F, 0x3F6E39C4, 0x3E9E110F],
        [0x3F6568E0, 0x3F30D873, 0x3E266868],
        [0x3F571F0B, 0x3F19ED5F, 0x3E01993B],
        [0x3F471555, 0x3F047EBE, 0x3DC9DCE8],
        [0x3F36123F, 0x3EE206A3, 0x3D9D3604],
        [0x3F1CAD47, 0x3EB04426, 0x3D58D2EA],
        [0x3EF79FAF, 0x3E76B305, 0x3D0382A5],
        [0x3EBE177C, 0x3E29926B, 0x3C9F87B4],
        [0x3E8E855F, 0x3DE5E422, 0x3C418511],
        [0x3E351B65, 0x3D7F1912, 0x3BB9492D],
        [0x3DB86F15, 0x3CDDC5A1, 0x3B085362],
        [0x3D33A044, 0x3C3C3F16, 0x3A489B0F],
        [0x3CA917FA, 0x3B9CF423, 0x399398F1],
        [0x3BDC0487, 0x3AAE22EA, 0x388AEAFF],
        [0x3AAAF037, 0x396222A8, 0x3716676D],
        [0x397B5E6D, 0x380EC577, 0x35A2D6FA],
        [0x3831799C, 0x36B09D2D, 0x34304DC0],
    ],
    dtype=U32,
).view(F32)
EXP_CLAMP_EXPONENT = 131  # |x| >= 16
FRACTION_BITS = 23  # the exponentials and their sum: fixed point with 23 fraction bits
RECIPROCAL_SEED = 0x7EF477D5
RECIPROCAL_STEPS = 2
RSQRT_SEED = 0x5F3759DF

# The layers whose Python execution follows their RTL within rtl_arithmetic()
RTL_FLOAT_UNITS = frozenset({"HWSoftmax_rtl", "LayerNorm_rtl"})

_IN_RTL = contextvars.ContextVar("rtl_arithmetic", default=False)


@contextlib.contextmanager
def rtl_arithmetic() -> Iterator[None]:
    """Within it, FINN's RTL float layers execute in Python as their RTL computes."""
    token = _IN_RTL.set(True)
    try:
        yield
    finally:
        _IN_RTL.reset(token)


def in_rtl_arithmetic() -> bool:
    return _IN_RTL.get()


def softmax(x: np.ndarray, integers: bool = False) -> np.ndarray:
    """softmaxf.sv over the last axis of ``x``: FLOAT32 lanes, or ``integers`` converted
    by int_to_fp32.sv."""
    with np.errstate(all="ignore"):
        x = to_float(x) if integers else np.asarray(x, F32)
        top = _largest(x)
        infinite = _bits(top) == 0x7F800000
        shifted = x - top
        exp = _fixed_point(_exp(shifted))
        exp = np.where(infinite, np.where(_bits(x) == 0x7F800000, 1 << FRACTION_BITS, 0), exp)
        total = _sum_to_float(exp.sum(axis=-1, keepdims=True, dtype=np.int64))
        probabilities: np.ndarray = _as_float(exp) * _reciprocal(total)
        return probabilities


def layer_norm(x: np.ndarray, simd: int) -> np.ndarray:
    """layernorm.sv over the last axis of ``x``, ``simd`` lanes a beat: no epsilon, no
    scale or bias (FINN applies those in elementwise layers)."""
    with np.errstate(all="ignore"):
        x = np.asarray(x, F32)
        centred = x - _mean(x, simd)
        variance = _mean(centred * centred, simd)
        normalised: np.ndarray = centred * _inverse_square_root(variance)
        return normalised


def to_float(x: np.ndarray) -> np.ndarray:
    """int_to_fp32.sv: integers to single precision, the bits beyond the top 24 dropped."""
    values = np.rint(np.asarray(x, np.float64)).astype(np.int64)
    magnitude = np.abs(values)
    extra = np.maximum(_bit_length(magnitude) - 24, 0)
    magnitude = (magnitude >> extra) << extra
    converted: np.ndarray = (np.sign(values) * magnitude).astype(F32)
    return converted


def _bits(x: np.ndarray) -> np.ndarray:
    return np.asarray(x, F32).view(U32)


def _bit_length(values: np.ndarray) -> np.ndarray:
    length = np.zeros(values.shape, np.int64)
    nonzero = values > 0
    length[nonzero] = np.floor(np.log2(values[nonzero])).astype(np.int64) + 1
    # log2 of an integer above 2**53 may round up past a power of two
    length[nonzero] -= (values[nonzero] >> np.maximum(length[nonzero] - 1, 0)) == 0
    return length


def _largest(x: np.ndarray) -> np.ndarray:
    """softmaxf_max: the largest lane by the sign-magnitude comparison (+0 above -0)."""
    bits = _bits(x).astype(np.int64)
    magnitude = bits & 0x7FFFFFFF
    order = np.where(bits >> 31, -magnitude - 1, magnitude)
    index = np.argmax(order, axis=-1)[..., None]
    return np.take_along_axis(x, index, axis=-1)


def _exp(x: np.ndarray) -> np.ndarray:
    """softmaxf_exp's Horner chain on the segment that x's bits select."""
    bits = _bits(x)
    exponent = (bits >> 23) & 0xFF
    octave = (exponent - 127) & 3
    segment = np.where(exponent < 127, 0, 1 + octave * 4 + ((bits >> 21) & 3))
    c = EXP_COEFFS[segment]
    value = c[..., 0] + (c[..., 1] + c[..., 2] * x) * x
    clamped = (bits >> 31 == 1) & (exponent >= EXP_CLAMP_EXPONENT)
    return np.where(clamped, F32(0), value).astype(F32)


def _fixed_point(x: np.ndarray) -> np.ndarray:
    """fp32_to_ufixed: 1 integer and 23 fraction bits, truncated; negative or below 2**-23
    is 0, from 2 on all ones."""
    bits = _bits(x).astype(np.int64)
    exponent = (bits >> 23) & 0xFF
    significand = (bits & 0x7FFFFF) | (1 << 23)
    shift = np.clip(127 - exponent, 0, 63)
    fixed = significand >> shift
    fixed = np.where(exponent >= 128, (1 << 24) - 1, fixed)
    below = (bits >> 31 == 1) | (exponent == 0) | (exponent < 127 - FRACTION_BITS)
    return np.where(below, 0, fixed)


def _sum_to_float(total: np.ndarray) -> np.ndarray:
    """sum_to_fp32: the fixed-point sum as a float, the bits beyond 24 truncated."""
    length = _bit_length(total)
    extra = np.maximum(length - 24, 0)
    kept = (total >> extra) << extra
    return np.where(total == 0, 0, kept.astype(np.float64) / 2.0**FRACTION_BITS).astype(F32)


def _as_float(fixed: np.ndarray) -> np.ndarray:
    return (fixed.astype(np.float64) / 2.0**FRACTION_BITS).astype(F32)  # 24 bits: exact


def _reciprocal(x: np.ndarray) -> np.ndarray:
    """softmaxf_recip: y = seed - x's bits, then y * (2 - x*y) twice."""
    y = (U32(RECIPROCAL_SEED) - _bits(x)).view(F32)
    for _ in range(RECIPROCAL_STEPS):
        y = y * (F32(2) - x * y)
    return y


def _mean(x: np.ndarray, simd: int) -> np.ndarray:
    """The SIMD adder tree of each beat (node i adds nodes 2i+1 and 2i+2, lanes are the
    leaves from SIMD-1), each beat's sum scaled by 1/N and accumulated beat by beat."""
    n = x.shape[-1]
    beats = x.reshape(*x.shape[:-1], n // simd, simd)
    leaves = [beats[..., lane] for lane in range(simd)]
    tree: list[np.ndarray] = [leaves[0]] * (simd - 1) + leaves  # nodes filled from the last
    for node in reversed(range(simd - 1)):
        tree[node] = tree[2 * node + 1] + tree[2 * node + 2]
    scaled = tree[0] * F32(1.0 / n)
    total = np.zeros(x.shape[:-1], F32)
    for beat in range(n // simd):
        total = total + scaled[..., beat]
    return total[..., None]


def _inverse_square_root(x: np.ndarray) -> np.ndarray:
    """rsqrtf: the seed from x's bits, then one Newton step y * (1.5 - y * (x/2 * y)),
    x/2 by decrementing the exponent field."""
    bits = _bits(x)
    y = (U32(RSQRT_SEED) - (bits >> 1)).view(F32)
    half = ((bits & 0x807FFFFF) | ((((bits >> 23) & 0xFF) - 1) & 0xFF) << 23).view(F32)
    return y * (F32(1.5) - y * (half * y))
