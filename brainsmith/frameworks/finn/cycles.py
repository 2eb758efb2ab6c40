"""FINN's cycle estimates where its RTL, measured in Verilator, keeps another pace.

A layer's ``get_exp_cycles`` is what the folding search, the report's frames per second,
FIFO sizing (its pace) and the check of a simulated design against its estimate all count,
so it must be the steady pace: cycles per frame when frames follow each other.
``install()`` (idempotent, from ``prepare_finn``) corrects:

- ``InnerShuffle``, FINN's RTL transpose of the two innermost dimensions (double-buffered
  pages of I x J / SIMD beats). FINN estimates 2 x beats + one page: the latency of one
  frame alone. Frame after frame it delivers one per 2 x beats cycles (within 0.5 % for
  every shape and SIMD 1 to 8 of ``tests/test_rtl_layers.py``): for two heads of 16 x 16
  at SIMD 1, 1,024 cycles where FINN says 1,280, which made it the slowest layer of an
  encoder whose matrix layers take 1,024. FINN's ``Shuffle`` estimate, the slowest of the
  stages it decomposes into, follows.

FINN's layer modules import torch (seconds), so each is corrected when it is imported.
"""

from __future__ import annotations

import math

from brainsmith.frameworks.finn.facts import HW_DOMAIN
from brainsmith.frameworks.finn.on_import import when_imported

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import ModuleType

    from finn.custom_op.fpgadataflow.hwcustomop import HWCustomOp

INNER_SHUFFLE = f"{HW_DOMAIN}.inner_shuffle"  # FINN's module of the layer
MARK = "_brainsmith_cycles"


def inner_shuffle_cycles(self: HWCustomOp) -> int:
    """Two cycles per beat of the frame, once the first page is in."""
    beats: int = math.prod(self.get_nodeattr("transpose_in_shape")) // self.get_nodeattr("SIMD")
    return 2 * beats


def _correct(module: ModuleType) -> None:
    layer = module.InnerShuffle
    if not getattr(layer.get_exp_cycles, MARK, False):
        setattr(inner_shuffle_cycles, MARK, True)
        layer.get_exp_cycles = inner_shuffle_cycles


def install() -> None:
    """Correct FINN's ``InnerShuffle`` now if it is imported, else when it is."""
    when_imported(INNER_SHUFFLE, _correct)
