"""RTL backends whose SystemVerilog ships with brainsmith (``brainsmith/backends/hdl``), for
FINN layers that FINN implements only in HLS.

A backend names its core module and parameters; ``generate_hdl`` copies the core into the
layer's code folder and writes a top module with FINN's port names (``ap_clk``, ``ap_rst_n``,
``in<i>_V_*``, ``out<i>_V_*``, TDATA padded to whole bytes) around it. The layer computes in
Python in every ``exec_mode`` (its FINN kernel's ``execute_node``); Verilator runs the HDL
(``brainsmith verify-rtl``, ``verify: rtlsim``).
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from pathlib import Path

from finn.custom_op.fpgadataflow.rtlbackend import RTLBackend

from brainsmith.frameworks.finn.rtl_costs import fitted

TYPE_CHECKING = False
if TYPE_CHECKING:
    from qonnx.core.modelwrapper import ModelWrapper

HDL = Path(__file__).parent / "hdl"


class HandwrittenRTL(RTLBackend):  # type: ignore[misc]
    """Mixin for an RTL backend of a FINN kernel: ``class PoolRTL(Pool, HandwrittenRTL)``."""

    core = ""  # the SystemVerilog module in brainsmith/backends/hdl/<core>.sv

    def core_parameters(self) -> Mapping[str, int | str]:
        """The core module's parameter values for this layer (a number, or a Verilog
        constant such as ``64'h...`` for a packed array)."""
        raise NotImplementedError

    def generate_hdl(self, model: ModelWrapper, fpgapart: str, clk: float) -> None:
        folder = Path(self.get_nodeattr("code_gen_dir_ipgen"))
        top = self.get_verilog_top_module_name()
        shutil.copy(HDL / f"{self.core}.sv", folder / f"{self.core}.sv")
        (folder / f"{top}.v").write_text(self.top_module(top))
        self.set_nodeattr("gen_top_module", top)
        self.set_nodeattr("ipgen_path", str(folder))
        self.set_nodeattr("ip_path", str(folder))

    def top_module(self, top: str) -> str:
        """The layer's top module: FINN's ports around the core (core port ``s<i>_*`` for
        input i, or ``s_*`` packed over all inputs; ``m<i>_*`` for output i, or ``m_*``)."""
        intf = self.get_verilog_top_module_intf_names()
        ports = ["    input  ap_clk", "    input  ap_rst_n"]
        for name, width in intf["s_axis"]:
            ports += [f"    input  [{width - 1}:0] {name}_TDATA", f"    input  {name}_TVALID",
                      f"    output {name}_TREADY"]  # fmt: skip
        for name, width in intf["m_axis"]:
            ports += [f"    output [{width - 1}:0] {name}_TDATA", f"    output {name}_TVALID",
                      f"    input  {name}_TREADY"]  # fmt: skip
        parameters = ",\n".join(f"        .{k}({v})" for k, v in self.core_parameters().items())
        in_wires, inputs = self.input_links(intf["s_axis"])
        out_wires, outputs = self.output_links(intf["m_axis"])
        wires = [*in_wires, *out_wires]
        links = ["        .clk(ap_clk)", "        .rst_n(ap_rst_n)", *inputs]
        return (
            f"// {self.onnx_node.op_type} {self.onnx_node.name}: brainsmith's {self.core}.sv "
            "with FINN's stream ports\n"
            f"module {top} (\n"
            + ",\n".join(ports)
            + "\n);\n"
            + "".join(f"    {line}\n" for line in wires)
            + f"    {self.core} #(\n{parameters}\n    ) core (\n"
            + ",\n".join([*links, *outputs])
            + "\n    );\nendmodule\n"
        )

    def input_links(self, inputs: list[tuple[str, int]]) -> tuple[list[str], list[str]]:
        """(declarations and assignments, core port links) for the inputs: each of FINN's
        wired to core input ``s<i>_*``, TDATA without its padding to whole bytes."""
        links = []
        for index, (name, _) in enumerate(inputs):
            bits = self.get_instream_width(index)
            links += [f"        .s{index}_tdata({name}_TDATA[{bits - 1}:0])",
                      f"        .s{index}_tvalid({name}_TVALID)",
                      f"        .s{index}_tready({name}_TREADY)"]  # fmt: skip
        return [], links

    def output_links(self, outputs: list[tuple[str, int]]) -> tuple[list[str], list[str]]:
        """(declarations and assignments, core port links) for the outputs: each core
        output ``m<i>_*`` wired to FINN's, TDATA zero-extended to whole bytes."""
        wires, links = [], []
        for index, (name, _) in enumerate(outputs):
            bits = self.get_outstream_width(index)
            wires += [f"wire [{bits - 1}:0] m{index}_data;",
                      f"assign {name}_TDATA = m{index}_data;"]  # fmt: skip
            links += [f"        .m{index}_tdata(m{index}_data)",
                      f"        .m{index}_tvalid({name}_TVALID)",
                      f"        .m{index}_tready({name}_TREADY)"]  # fmt: skip
        return wires, links

    def get_rtl_file_list(self, abspath: bool = False) -> list[str]:
        files = [f"{self.core}.sv", f"{self.get_verilog_top_module_name()}.v"]
        if not abspath:
            return files
        folder = Path(self.get_nodeattr("code_gen_dir_ipgen"))
        return [str(folder / name) for name in files]

    def code_generation_ipi(self) -> list[str]:
        """Vivado IP integrator commands that add this layer to a block design."""
        commands = [f"add_files -norecurse {path}" for path in self.get_rtl_file_list(abspath=True)]
        top = self.get_nodeattr("gen_top_module")
        return [*commands, f"create_bd_cell -type module -reference {top} {self.onnx_node.name}"]

    def fitted_luts(self) -> int:
        """The layer's LUTs from its kind's model fitted to Yosys' counts
        (``brainsmith.frameworks.finn.rtl_costs``, ``benchmarks/synth_fit.py``)."""
        found = fitted(self, "LUT")
        if found is None:
            raise LookupError(f"no fitted LUT model for {self.onnx_node.op_type}")
        return int(found)

    def bram_estimation(self, fpgapart: str | None = None) -> int:
        return 0

    def uram_estimation(self, fpgapart: str | None = None) -> int:
        return 0

    def dsp_estimation(self, fpgapart: str | None = None) -> int:
        return 0
