"""brainsmith's RTL backend of FINN's OuterShuffle, which FINN has only in HLS: with FINN's
RTL InnerShuffle it puts a transformer's head split and merge in RTL, so encoders build
without an HLS layer and simulate whole in Verilator."""

from __future__ import annotations

import math
from collections.abc import Iterable

from finn.custom_op.fpgadataflow.outer_shuffle import OuterShuffle

from brainsmith.backends.handwritten import HandwrittenRTL
from brainsmith.plugin import backend

# Block RAM 18K aspect ratios: (depth, width)
BRAM_SHAPES = ((16384, 1), (8192, 2), (4096, 4), (2048, 9), (1024, 18), (512, 36))


@backend(kernel="OuterShuffle", backend_type="rtl", priority="LOW")
class OuterShuffleRTL(OuterShuffle, HandwrittenRTL):  # type: ignore[misc]
    """RTL OuterShuffle (brainsmith's SystemVerilog): outer permutation, two frame buffers.

    A frame written in input order into one of two buffers while the other is read in output
    order, one SIMD-wide beat per cycle.
    """

    core = "bs_outer_shuffle"

    def loops(self) -> list[tuple[int, int]]:
        """(beats, input stride in beats) of each output loop, outermost first; loops of
        one beat left out."""
        simd = self.get_nodeattr("SIMD")
        shape = list(self.get_nodeattr("transpose_in_shape"))
        perm = list(self.get_nodeattr("perm"))
        if perm[-1] != len(shape) - 1:
            raise ValueError(
                f"{self.onnx_node.name}: permutation {perm} moves the innermost dimension; "
                "an OuterShuffle keeps it (FINN's InnerShuffle swaps it)"
            )
        strides = [math.prod(shape[i + 1 :]) for i in range(len(shape))]
        found = [(shape[p], strides[p]) for p in perm]
        found[-1] = (shape[-1] // simd, 1)
        beats = [(size, stride if stride == 1 else stride // simd) for size, stride in found]
        return [loop for loop in beats if loop[0] > 1] or [(1, 1)]

    def words(self) -> int:
        words: int = math.prod(self.get_nodeattr("transpose_in_shape")) // self.get_nodeattr("SIMD")
        return words

    def core_parameters(self) -> dict[str, int | str]:
        loops = self.loops()
        return {
            "WIDTH": self.get_instream_width(),
            "WORDS": self.words(),
            "DIMS": len(loops),
            "SIZES": packed_constant(size for size, _ in loops),
            "STRIDES": packed_constant(stride for _, stride in loops),
        }

    def get_exp_cycles(self) -> int:
        """A frame per WORDS cycles once the first frame is in (two frame buffers)."""
        return self.words()

    def bram_estimation(self, fpgapart: str | None = None) -> int:
        """Two frames of WIDTH-bit beats in 18K block RAMs, at the best aspect ratio."""
        width: int = self.get_instream_width()
        depth = 2 * self.words()
        return min(math.ceil(width / w) * math.ceil(depth / d) for d, w in BRAM_SHAPES)

    def lut_estimation(self, fpgapart: str | None = None) -> int:
        """The address counters and the two-beat output buffer (not fitted to synthesis)."""
        width: int = self.get_instream_width()
        return 40 * len(self.loops()) + 2 * width


def packed_constant(values: Iterable[int]) -> str:
    """32-bit values as one Verilog constant, the first in the lowest bits."""
    items = list(values)
    number = sum(value << (32 * index) for index, value in enumerate(items))
    return f"{32 * len(items)}'h{number:x}"
