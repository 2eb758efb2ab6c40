"""Open-source RTL simulation of the layers a build generated (Verilator, no vendor tools).

``simulate_design(model, samples, workdir, parent)`` compiles every RTL layer of a finished
design from the files the build generated plus finn-rtllib (``sources``), with a generated
C++ AXI-stream testbench (``testbench.cpp``, ``compile``: cached by content hash), drives it
with the layer's input tensors from a Python execution of the design (``stimulus``) and
compares its output bit for bit (``layers``).
"""

from brainsmith.hardware.rtlsim.layers import DesignResult, LayerResult, simulate_design
from brainsmith.hardware.rtlsim.verilator import ToolchainError, find_toolchain

__all__ = ["DesignResult", "LayerResult", "ToolchainError", "find_toolchain", "simulate_design"]
