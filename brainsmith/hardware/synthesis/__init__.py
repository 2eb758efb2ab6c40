"""Open-source synthesis of the RTL layers a build generated (Yosys ``synth_xilinx``, out of
context, no vendor tools): each layer's LUT, FF, CARRY, DSP, BRAM and URAM as Yosys maps them.

``synthesise_design(model, part, workdir, find_yosys())`` takes every RTL layer of a finished
design (``sources``: its files, fixed for Yosys on copies), runs Yosys on two at a time
(``yosys``) and caches each result by content (``run``); ``families`` says which family a
part is synthesised for, or why it cannot be.
"""

from brainsmith.hardware.synthesis.families import NotSynthesisable, family_of
from brainsmith.hardware.synthesis.run import DesignSynthesis, LayerSynthesis, synthesise_design
from brainsmith.hardware.synthesis.yosys import YosysMissing, find_yosys

__all__ = [
    "DesignSynthesis",
    "LayerSynthesis",
    "NotSynthesisable",
    "YosysMissing",
    "family_of",
    "find_yosys",
    "synthesise_design",
]
