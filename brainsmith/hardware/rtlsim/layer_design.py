"""What Verilator compiles for one layer: FINN's own file list for the layer's RTL backend
(``get_rtl_file_list``), the top module, and the AXI streams the testbench drives.

A matrix layer whose weights live in on-chip memory (``mem_mode: internal_decoupled``) is
two modules in the stitched design: FINN's IP Integrator script puts a memory streamer
(``<layer>_memstream_wrapper.v``, reading the generated ``memblock.dat``) in front of the
compute core. Here a small generated top module does the same wiring, so the weight file
the build wrote is simulated too. Every other layer is simulated from its own top module.

Verilator compatibility (``verilator_ready``, in the copy that is compiled; FINN's installed
files are never changed): finn-rtllib's ``add_multi.sv`` declares a constant function inside
a generate block, which IEEE 1800-2023 13.4.3 forbids and Verilator rejects ("Constant
function may not be declared under generate"): the same function moves to module scope
(so do ``layernorm.sv``'s and ``softmaxf.sv``'s, whose loop also reads past its array).
``fifo.sv`` builds a struct in a constant function, which Verilator cannot evaluate: the
same computation returns one field per call. Single-precision float arithmetic
(``$bitstoshortreal``: LayerNorm, Softmax, float Elementwise, Requant) is made exact
(``brainsmith.hardware.rtlsim.single_precision``); FINN's behavioural models stand in for the DSPFP32
primitive simulation does not have (``binopf.sv``, ``rsqrtf.sv``: chosen by default).

``fifo_gauge.sv`` can log every beat to a file its instance names (``DATA_LOGFILE``); the
copy compiled here never opens it (the stitched simulation reads the fill from its ports),
so no RTL compiled here writes files (``brainsmith.hardware.rtlsim.screen``).

Parameter files: generated Verilog names its ``.dat`` files either relative to its own
folder (``"./Thresholding_rtl_0_"``) or, after FINN's ``ReplaceVerilogRelPaths``, by
absolute path. Both become ``./`` paths here and the simulation runs in the layer's code
folder, so a compiled layer does not depend on where the build folder is: the same layer
built into another folder reuses it, and a moved or copied build folder reads its own
parameter files, not those of the folder it was built in (FINN names each layer's code
folder ``code_gen_ipgen_<layer>_<random>``, so a path into it is known by that name).
A design of several layers' folders (a stitched partition, a simulated board) names each
folder by a short relative name instead (``data0/``, ``data1/``: ``LayerDesign.data_folders``),
a link to it in the folder its simulation runs in (``link_data_folders``): its compiled
text, and so its executable, is the same wherever the build folder is.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from brainsmith.files import MAX_SOURCE_BYTES, read_regular
from brainsmith.hardware.rtlsim.single_precision import exact_single_precision

TYPE_CHECKING = False
if TYPE_CHECKING:
    from finn.custom_op.fpgadataflow.rtlbackend import RTLBackend
    from onnx import NodeProto
    from qonnx.core.modelwrapper import ModelWrapper

# How a layer or a stitched partition came out of simulation.
MATCH, MISMATCH, FAILED, NOT_SIMULATED = "match", "mismatch", "failed", "not simulated"
# how a build's notes say that the whole design crashed (an assertion, say) when simulated
CRASHED = "the whole accelerator crashed in its simulation"

HLS_REASON = "HLS layer: its RTL comes from Vitis HLS synthesis (not available here)"

# How far a measured pace may be from FINN's estimate and still count as what FINN promised:
# FINN's cycle formulas leave out a few cycles of pipeline per frame or row.
ESTIMATE_TOLERANCE = 0.10


def estimate_error(measured: float | None, estimated: float | None) -> float | None:
    """(measured - estimated) / estimated, rounded to 0.1 %; None without both."""
    if not measured or not estimated:
        return None
    return round(measured / estimated - 1, 3)


class NotSimulated(Exception):
    """A layer that cannot be simulated; the message says why."""


class MissingCode(NotSimulated):
    """The layer's generated RTL was recorded but is not there: a failure, not a skip."""


@dataclass(frozen=True)
class Stream:
    """One AXI stream of the simulated top: port prefix, node input/output index, bits."""

    port: str
    index: int
    width: int


@dataclass
class LayerDesign:
    """Everything needed to compile and drive one layer."""

    node: str
    op_type: str
    top: str  # module Verilator elaborates
    code_dir: str  # the layer's generated code; the simulation runs there
    files: list[str]  # in compile order
    inputs: list[Stream]
    outputs: list[Stream]
    clk2x: str = "none"  # none | same (tied to ap_clk) | double (a real 2x clock)
    generated: dict[str, str] = field(default_factory=dict)  # file name -> text
    probes: list[str] = field(default_factory=list)  # top outputs read once at the end
    depths: list[str] = field(default_factory=list)  # top inputs set before reset (FIFO depths)
    # (file name, text) of another C++ testbench than testbench.cpp: the first is compiled,
    # the others (headers it includes) are written beside it
    testbench: list[tuple[str, str]] | None = None
    # a stitched design's instances of its top and the layer each is (``n3`` -> ``MVAU_rtl_0``)
    instances: dict[str, str] = field(default_factory=dict)
    # (file name, text) -> the text a part's tools read in its place (a Lattice part's
    # fixes: ``synthesis.ecp5.lattice_ready``), so the simulation is of what they read
    read_as: Callable[[str, str], str] | None = None

    def data_folders(self) -> dict[str, str]:
        """Without a code folder: the folder of each Verilog file (its parameter files'
        folder), in compile order -> the relative name the compiled RTL reads it by."""
        if self.code_dir:
            return {}
        folders = dict.fromkeys(os.path.dirname(os.path.abspath(p)) for p in self.files
                                if p.endswith(".v"))  # fmt: skip
        return {folder: f"data{index}" for index, folder in enumerate(folders)}


def link_data_folders(design: LayerDesign, cwd: str) -> list[str]:
    """In ``cwd``, where ``design``'s simulation runs: each of its data folders' names
    (``LayerDesign.data_folders``) linked to that folder; the links."""
    links = []
    for folder, name in design.data_folders().items():
        link = os.path.join(cwd, name)
        if os.path.islink(link):
            os.remove(link)
        os.symlink(folder, link)
        links.append(link)
    return links


@contextlib.contextmanager
def data_folders_linked(design: LayerDesign, cwd: str) -> Iterator[None]:
    """``link_data_folders`` while the block runs; the links removed after it (a build
    folder keeps no link out of itself)."""
    links: list[str] = []
    try:
        links = link_data_folders(design, cwd)
        yield
    finally:
        for link in links:
            with contextlib.suppress(OSError):
                os.remove(link)


def layer_design(model: ModelWrapper, node: NodeProto, simulated: bool = True) -> LayerDesign:
    """The design of ``node`` (a ModelWrapper node); raises NotSimulated with the reason.
    ``simulated=False`` (for synthesis): without the checks that only simulation needs
    (parameters streamed in)."""
    op = _rtl_op(node)
    code_dir = str(op.get_nodeattr("code_gen_dir_ipgen") or "")
    if not code_dir:
        raise NotSimulated("no generated RTL (code_gen_dir_ipgen is empty); run the codegen step")
    if not os.path.isdir(code_dir):
        raise MissingCode(f"no generated RTL: {code_dir} does not exist")
    files = _rtl_files(op)
    interfaces = op.get_verilog_top_module_intf_names()
    inputs = [_stream(port, width) for port, width in interfaces["s_axis"]]
    outputs = [_stream(port, width) for port, width in interfaces["m_axis"]]
    if simulated:
        _require_stored_parameters(model, node, op, inputs)
    if interfaces.get("aximm"):
        raise NotSimulated("the layer reads parameters over AXI-MM from external memory")
    top = str(op.get_nodeattr("gen_top_module") or op.get_verilog_top_module_name())
    _require_ports(files, top, ["ap_clk", "ap_rst_n"] + [s.port for s in inputs + outputs])
    design = LayerDesign(
        node.name, node.op_type, top, os.path.abspath(code_dir), files, inputs, outputs
    )
    _with_feeder_or_clock(design, op, code_dir)
    return design


def _rtl_op(node: NodeProto) -> RTLBackend:
    """FINN's op of ``node``; NotSimulated unless it is an RTL layer."""
    from finn.custom_op.fpgadataflow.rtlbackend import RTLBackend
    from qonnx.custom_op.registry import getCustomOp

    if node.domain.endswith(".hls") or node.op_type.endswith("_hls"):
        raise NotSimulated(HLS_REASON)
    try:
        op = getCustomOp(node)
    except Exception as exc:  # an op FINN cannot instantiate has nothing to simulate
        raise NotSimulated(f"no FINN class for {node.op_type}: {exc}") from exc
    if not isinstance(op, RTLBackend):
        raise NotSimulated(f"{node.op_type} is not an RTL layer")
    return op


def _rtl_files(op: RTLBackend) -> list[str]:
    """FINN's list of the layer's RTL files, each of them there; NotSimulated otherwise."""
    try:
        files = [str(f) for f in op.get_rtl_file_list(abspath=True)]
    except Exception as exc:  # FINN's list needs attributes that codegen sets
        raise NotSimulated(f"FINN cannot list its RTL files: {exc}") from exc
    _require(files)
    return files


def _require_stored_parameters(
    model: ModelWrapper, node: NodeProto, op: RTLBackend, inputs: list[Stream]
) -> None:
    """NotSimulated where an input stream carries a parameter (streamed in, not stored)."""
    for stream in inputs:
        if model.get_initializer(node.input[stream.index]) is not None:
            raise NotSimulated(
                f"input {stream.port} carries the parameter {node.input[stream.index]} "
                f"(mem_mode {_attr(op, 'mem_mode')!r}); only parameters stored in the "
                "layer are simulated"
            )


def _with_feeder_or_clock(design: LayerDesign, op: RTLBackend, code_dir: str) -> None:
    """``design`` with what feeds its core as in FINN's stitched design: the weight streamer
    (``internal_decoupled``) or the operand loader (``dynamic``); else its ``ap_clk2x``."""
    pumped = bool(_attr(op, "pumpedCompute") or _attr(op, "pumpedMemory"))
    streamer = _memstream_wrapper(code_dir, design.node)
    loader = os.path.join(code_dir, f"{design.node}_dynamic_load_wrapper.v")
    if _attr(op, "mem_mode") == "internal_decoupled" and streamer:
        _with_weight_streamer(design, op, streamer, pumped)
    elif _attr(op, "mem_mode") == "dynamic" and os.path.isfile(loader):
        _with_operand_loader(design, op, loader)
    elif _has_port(design.files, design.top, "ap_clk2x"):
        design.clk2x = "double" if pumped else "same"


def _stream(port: str, width: int) -> Stream:
    match = re.fullmatch(r"(?:in|out)(\d+)_V", port)
    if match is None:
        raise NotSimulated(f"unexpected stream port name {port!r}")
    return Stream(port, int(match.group(1)), int(width))


def _attr(op: RTLBackend, name: str) -> object:
    return op.get_nodeattr(name) if name in op.get_nodeattr_types() else None


def _require(files: list[str]) -> None:
    for path in files:
        if not os.path.isfile(path):
            raise MissingCode(f"RTL file {path} does not exist (run the codegen step again)")


def _memstream_wrapper(code_dir: str, name: str) -> str:
    path = os.path.join(code_dir, f"{name}_memstream_wrapper.v")
    if os.path.isfile(path):
        return path
    found = sorted(f for f in os.listdir(code_dir) if f.endswith("_memstream_wrapper.v"))
    return os.path.join(code_dir, found[0]) if found else ""


def _module_header(files: list[str], module: str) -> str | None:
    """The port list of ``module`` as written in ``files``; None where no file declares it."""
    for path in files:
        text = read_regular(path, MAX_SOURCE_BYTES).decode(errors="replace")
        match = re.search(rf"\bmodule\s+{re.escape(module)}\b(.*?)\);", text, re.S)
        if match:
            return match.group(1)
    return None


def _has_port(files: list[str], module: str, port: str) -> bool:
    header = _module_header(files, module)
    return header is not None and re.search(rf"\b{port}\b", header) is not None


def _require_ports(files: list[str], module: str, ports: list[str]) -> None:
    """NotSimulated unless ``module`` declares every one of ``ports`` (FINN's port names: the
    testbench and the stitched design connect those), naming what is missing."""
    header = _module_header(files, module)
    if header is None:  # declared where the pattern does not see it: the compile will tell
        return
    missing = [port for port in ports if re.search(rf"\b{port}(?:_TDATA)?\b", header) is None]
    if missing:
        raise NotSimulated(
            f"its top module {module} has no port {', '.join(missing)}: the simulation "
            "connects FINN's port names (ap_clk, ap_rst_n, in0_V_TDATA, ...)"
        )


AXI_SIGNALS = ("TDATA", "TVALID", "TREADY")


def _ports_and_wiring(design: LayerDesign, pumped: bool = False) -> tuple[list[str], list[str]]:
    """The port list of a top around ``design``'s core (its clocks and streams) and the
    connections of the core's streams to the top's ports of the same names."""
    ports = ["input ap_clk", "input ap_rst_n"] + (["input ap_clk2x"] if pumped else [])
    for stream in design.inputs:
        ports += _stream_ports(stream, "input", "output")
    for stream in design.outputs:
        ports += _stream_ports(stream, "output", "input")
    streams = design.inputs + design.outputs
    wiring = [f".{s.port}_{x}({s.port}_{x})" for s in streams for x in AXI_SIGNALS]
    return ports, wiring


def _stream_ports(stream: Stream, forward: str, backward: str) -> list[str]:
    """An AXI stream's ports: data and valid in the ``forward`` direction, ready back."""
    return [
        f"{forward} [{stream.width - 1}:0] {stream.port}_TDATA",
        f"{forward} {stream.port}_TVALID",
        f"{backward} {stream.port}_TREADY",
    ]


def _with_operand_loader(design: LayerDesign, op: RTLBackend, loader: str) -> None:
    """Wire ``<layer>_dynamic_load_wrapper`` into the second input of a matrix layer of two
    streams, as FINN's IPI does: the operand arrives once per head, PE values a beat, and
    the loader (FINN's ``dynamic_load``, double-buffered) replays it for every input vector
    as the PE x SIMD beats the core reads."""
    extra = [loader, os.path.join(finn_rtllib(), "dynload", "hdl", "dynamic_load.sv")]
    _require(extra)
    operand = next(s for s in design.inputs if s.index == 1).port
    loader_instance = [
        f"\t{os.path.basename(loader)[: -len('.v')]} operand (",
        "\t\t.ap_clk(ap_clk), .ap_rst_n(ap_rst_n),",
        f"\t\t.s_axis_0_TDATA({operand}_TDATA), .s_axis_0_TVALID({operand}_TVALID),",
        f"\t\t.s_axis_0_TREADY({operand}_TREADY),",
        "\t\t.m_axis_0_TDATA(w_tdata), .m_axis_0_TVALID(w_tvalid), .m_axis_0_TREADY(w_tready)",
        "\t);",
    ]
    wide = (int(op.get_instream_width(1)) * int(op.get_nodeattr("SIMD")) + 7) // 8 * 8
    _feed_core(design, "operand loader", "mem_mode dynamic", loader_instance, wide, operand)
    design.files += extra
    design.clk2x = "none"


def _with_weight_streamer(design: LayerDesign, op: RTLBackend, streamer: str, pumped: bool) -> None:
    """Wire ``<layer>_memstream_wrapper`` into the core's weight input, as FINN's IPI does."""
    rtllib = finn_rtllib()
    extra = [
        streamer,
        os.path.join(rtllib, "axi", "hdl", "axilite.sv"),
        os.path.join(rtllib, "memstream", "hdl", "memstream_axi.sv"),
        os.path.join(rtllib, "memstream", "hdl", "memstream.sv"),
    ]
    _require(extra)
    clk2x = "ap_clk2x" if pumped else "ap_clk"
    streamer_instance = [
        f"\t{os.path.basename(streamer)[: -len('.v')]} weights (",
        f"\t\t.ap_clk(ap_clk), .ap_clk2x({clk2x}), .ap_rst_n(ap_rst_n),",
        "\t\t.s_axilite_AWVALID(1'b0), .s_axilite_AWPROT(3'b0), .s_axilite_AWADDR('0),",
        "\t\t.s_axilite_WVALID(1'b0), .s_axilite_WDATA(32'b0), .s_axilite_WSTRB(4'b0),",
        "\t\t.s_axilite_BREADY(1'b0), .s_axilite_ARVALID(1'b0), .s_axilite_ARPROT(3'b0),",
        "\t\t.s_axilite_ARADDR('0), .s_axilite_RREADY(1'b0),",
        "\t\t.s_axis_0_tvalid(1'b0), .s_axis_0_tdata('0),",
        "\t\t.m_axis_0_tready(w_tready), .m_axis_0_tvalid(w_tvalid), .m_axis_0_tdata(w_tdata)",
        "\t);",
    ]
    wide = int(op.get_instream_width_padded(1))
    _feed_core(
        design, "weight streamer", "mem_mode internal_decoupled", streamer_instance, wide,
        "in1_V", pumped,
    )  # fmt: skip
    design.files += extra
    design.clk2x = "double" if pumped else "none"


def finn_rtllib() -> str:
    """FINN's ``finn-rtllib`` folder, as its settings name it."""
    from finn.util.settings import get_settings

    return str(get_settings().finn_rtllib)


def _feed_core(
    design: LayerDesign,
    feeder: str,
    mode: str,
    instance: list[str],
    wide: int,
    port: str,
    pumped: bool = False,
) -> None:
    """Make ``design``'s top a generated module in which ``instance`` (the ``feeder``,
    driving ``w_tdata``/``w_tvalid`` and reading ``w_tready``, ``wide`` bits) feeds the
    core's stream ``port``; the core's other streams are the top's own."""
    clk2x = "ap_clk2x" if pumped else "ap_clk"
    core_clk2x = f" .ap_clk2x({clk2x})," if _has_port(design.files, design.top, "ap_clk2x") else ""
    ports, wiring = _ports_and_wiring(design, pumped)
    wiring = [w for w in wiring if not w.startswith(f".{port}_")]
    top = f"{design.top}_rtlsim_top"
    text = "\n".join(
        [
            f"// Generated by brainsmith.hardware.rtlsim: {feeder} -> compute core, as in the",
            f"// stitched design (FINN's IP Integrator hierarchy for {mode}).",
            f"module {top} (",
            ",\n".join(f"\t{p}" for p in ports),
            ");",
            f"\twire [{wide - 1}:0] w_tdata;",
            "\twire w_tvalid, w_tready;",
            *instance,
            f"\t{design.top} core (",
            f"\t\t.ap_clk(ap_clk),{core_clk2x} .ap_rst_n(ap_rst_n),",
            f"\t\t.{port}_TDATA(w_tdata), .{port}_TVALID(w_tvalid), .{port}_TREADY(w_tready),",
            "\t\t" + ", ".join(wiring),
            "\t);",
            "endmodule",
            "",
        ]
    )
    design.generated[f"{top}.sv"] = text
    design.top = top


def verilator_ready(path: str, text: str, code_dir: str = "", data_name: str = "") -> str:
    """``text`` of the RTL file ``path`` as compiled here: paths into ``code_dir`` made
    ``./`` paths (without a ``code_dir``: paths into the file's folder made ``data_name/``
    paths, or absolute without one), and Verilator-compatible (see the module docstring)."""
    if code_dir:
        text = _local_paths(text, code_dir, "./")
    elif path.endswith(".v"):  # several layers' folders
        folder = os.path.dirname(os.path.abspath(path))
        prefix = data_name or folder
        text = text.replace('$readmemh(".', f'$readmemh("{prefix}').replace('"./', f'"{prefix}/')
        text = _local_paths(text, folder, prefix + "/")
    fix = VERILATOR_FIXES.get(os.path.basename(path))
    return exact_single_precision(fix(text) if fix else text)


def localised_paths(text: str, code_dir: str) -> str:
    """``text`` with quoted paths into ``code_dir`` (or a folder of its name) made ``./``."""
    return _local_paths(text, code_dir, "./")


def _local_paths(text: str, folder: str, prefix: str) -> str:
    """Quoted paths into ``folder`` as ``prefix`` paths, also where they name the folder of
    the same name in the build folder the code was generated in (moved or copied since)."""
    folder = folder.rstrip(os.sep)
    text = text.replace(folder + os.sep, prefix)
    name = os.path.basename(folder)
    if not name.startswith("code_gen_"):
        return text
    return re.sub(r'"[^"\n]*/' + re.escape(name) + "/", lambda _: '"' + prefix, text)


def _hoisted(text: str, declaration: str, before: str) -> str:
    """``text`` with the first ``declaration`` (a regex of an indented block under generate)
    moved to module scope, one tab deep, just before the first ``before``; unchanged where
    either is missing or ``before`` does not come first (a FINN version without the
    construct: compile it as it is)."""
    match = re.search(r"\n([ \t]*)" + declaration, text, re.S)
    anchor = re.search(r"\n[ \t]*" + before, text)
    if match is None or anchor is None or anchor.start() > match.start():
        return text
    indent = match.group(1)
    block = "\n".join(
        line[len(indent) - 1 :] if line.startswith(indent) else line
        for line in match.group(0).strip("\n").split("\n")
    )
    text = text[: match.start()] + "\n" + text[match.end() :]
    return text[: anchor.start()] + "\n" + block + "\n" + text[anchor.start() :]


def hoist_leaf_loads(text: str) -> str:
    """add_multi.sv: the constant function under generate, moved to module scope."""
    return _hoisted(
        text,
        r"// Compute the count of decendents.*?endfunction\s*:\s*init_leaf_loads\n",
        r"uwire \[SUM_WIDTH-1:0\]\s+sum0;",
    )


def hoist_edge_delays(text: str) -> str:
    """layernorm.sv: the adder tree's constant function (and its type) declared under
    generate, which Verilator refuses, moved to module scope before the generate loop."""
    return _hoisted(
        text,
        r"typedef bit edge_delays_t\[2\*SIMD-1\];.*?endfunction\s*:\s*INIT_EDGE_DELAYS\n",
        r"for\s*\(genvar\s+step\b",
    )


SOFTMAX_TREES = (
    r"if\s*\(SIMD\s*==\s*1\)\s*begin\s*:\s*genNoTree",
    r"if\s*\(SIMD\s*<=\s*1\)\s*begin\s*:\s*genSumNoTree",
)


def hoist_softmax_edge_delays(text: str) -> str:
    """softmaxf.sv: its max and sum trees (SIMD above 1) each declare the same constant
    function under generate; in each module it moves to module scope before the tree. Its
    second loop starts by reading one element past the array (0 in simulation, an error in
    Verilator's constant evaluation), so it starts at the last element it can read."""
    declaration = r"typedef bit edge_delays_t\[2\*SIMD-1\];.*?endfunction[^\n]*\n"
    modules = re.split(r"(?=\nmodule\s)", text)
    for index, module in enumerate(modules):
        for tree in SOFTMAX_TREES:
            if re.search(tree, module):
                modules[index] = _hoisted(module, declaration, tree)
    return re.sub(
        PAST_THE_END, r"for(int  i = SIMD-2; i > 0; i--) begin\1if(d[2*i+1])", "".join(modules)
    )


PAST_THE_END = r"for\(int unsigned\s+i = SIMD-1; i > 0; i--\) begin(\s*)if\(d\[2\*i\+1\]\)"


def _rsqrt_behavioural_by_default(text: str) -> str:
    """rsqrtf.sv: its DSP wrapper's behavioural model when an instance does not choose (the
    variants for one or two cycles per input do not), since simulation has no DSPFP32."""
    return re.sub(
        r"(module rsqrtf_dspfp32 #\(\s*bit\s+FORCE_BEHAVIORAL\s*=\s*)0", r"\g<1>1", text, count=1
    )


def _behavioural_by_default(text: str) -> str:
    """binopf.sv: its behavioural model when an instance does not choose (FINN's softmax
    does not), since simulation has no DSPFP32 primitive; synthesis keeps the DSP. Its
    value-class warnings (invalid, overflow, underflow) are given once per instance: FINN's
    softmax runs its reciprocal free, valid every cycle, so an idle layer computes with
    whatever is in its registers and warned every cycle (millions of lines in a stitched
    design). Results are judged against Python, not by these warnings."""
    text = re.sub(r"(\bbit\s+FORCE_BEHAVIORAL\s*=\s*)0", r"\g<1>1", text, count=1)
    checks = re.search(BINOPF_CHECKS, text)
    flags = re.findall(BINOPF_WARNING, text)
    if checks is None or not flags:
        return text  # not the code this was written for: its warnings left as they are
    declared = "".join(f"logic  Warned_{flag} = 0;\n\t" for flag, _ in flags)
    text = text[: checks.start()] + declared + text[checks.start() :]
    return re.sub(BINOPF_WARNING, _warned_once, text)


BINOPF_CHECKS = r"always_ff @\(posedge clk\) begin\s*automatic logic \[1:0\]\s+msk\b"
BINOPF_WARNING = r'assert\(!\((\w+) & msk\)\) else \$warning\(("%m generated [\w ]+\.")\);'


def _warned_once(found: re.Match[str]) -> str:
    flag, message = found.group(1), found.group(2)
    return (
        f"if(({flag} & msk) && !Warned_{flag}) begin  // brainsmith.hardware.rtlsim: once\n"
        f'\t\t\t$warning({message[:-1]} (only the first is shown)");\n'
        f"\t\t\tWarned_{flag} <= 1;\n\t\tend"
    )


FMA_BEHAVIOURAL = """// brainsmith.hardware.rtlsim: DSPFP32 as its behaviour (FPOPMODE C + A*B), with the instance's
	// registers: A and B one stage, C three, the product two, the sum one.
	logic [31:0]  A1 = '0, B1 = '0, C1 = '0, C2 = '0, C3 = '0, M1 = '0, M2 = '0, R4 = '0;
	always_ff @(posedge clk) begin
		A1 <= a;  B1 <= b;
		C1 <= c;  C2 <= C1;  C3 <= C2;
		M1 <= $shortrealtobits($bitstoshortreal(A1) * $bitstoshortreal(B1));
		M2 <= M1;
		R4 <= $shortrealtobits($bitstoshortreal(C3) + $bitstoshortreal(M2));
	end
	assign  r = R4;
	assign  invalid = &R4[30-:8] && |R4[0+:23];
	assign  overflow = &R4[30-:8] && !(|R4[0+:23]);
	assign  underflow = 0;
"""


def _fma_as_behaviour(text: str) -> str:
    """softmax_pwpolyf.sv: its FMA is a DSPFP32 with no behavioural model; simulation has no
    primitive, so the instance becomes the same arithmetic with the same registers."""
    match = re.search(r"\n\tDSPFP32 #\(.*?\) DSPFP32_inst \(.*?\n\t\);\n", text, re.S)
    if match is None or "MODE_FMA = 7'b00_110_01" not in text or "FPCREG(3)" not in text:
        return text  # a FINN version with another datapath: compile it as it is
    return text[: match.start()] + "\n\t" + FMA_BEHAVIOURAL + text[match.end() :]


ROTATION_BITS = "(SIMD > 1? $clog2(SIMD) : 1)"


def _rotation_index_of_one_bit(text: str) -> str:
    """inner_shuffle.sv: at SIMD 1 its rotation index is ``$clog2(1) = 0`` bits wide, a
    zero-width type Verilator refuses; one bit (always 0) selects the single lane alike.
    Its casts between the unpacked index vector and the packed one Verilator does not
    support for one element, so they become the same bits assigned lane by lane (lane i
    at bits i*W, as the bit-stream cast places it)."""
    pack = ".idat(packed_rotidx_vec_t'(RdPat)),"
    unpack = "assign rd_pat_forwarded = rotidx_vec_t'(rd_pat_forwarded_packed);"
    if pack not in text or unpack not in text:
        return text  # a FINN version without the construct: compile it as it is
    width = f"[i*{ROTATION_BITS} +: {ROTATION_BITS}]"
    text = text.replace("$clog2(SIMD)-1:0]", f"{ROTATION_BITS}-1:0]")
    text = text.replace("[SIMD*$clog2(SIMD)-1:0]", f"[SIMD*{ROTATION_BITS}-1:0]")
    text = text.replace(
        "\tskid #(\n\t\t.DATA_WIDTH($bits(packed_rotidx_vec_t))",
        "\tuwire packed_rotidx_vec_t  rd_pat_packed;\n"
        f"\tfor(genvar  i = 0; i < SIMD; i++)  assign  rd_pat_packed{width} = RdPat[i];\n"
        "\tskid #(\n\t\t.DATA_WIDTH($bits(packed_rotidx_vec_t))",
        1,
    )
    text = text.replace(pack, ".idat(rd_pat_packed),")
    return text.replace(
        unpack,
        "for(genvar  i = 0; i < SIMD; i++)  "
        f"assign  rd_pat_forwarded[i] = rd_pat_forwarded_packed{width};",
    )


ABITS_ORIGINAL = """function abits_t INIT_ABITS();
    automatic abits_t abits = '{ lo: $clog2(DEPTH_REQ), hi: 0 };
    if(abits.lo > MIN_ABITS) begin
        automatic int unsigned hi_abits = $clog2(DEPTH_REQ - 2**(abits.lo-1));
        if(hi_abits < abits.lo - 1) begin
            abits.lo--;
            abits.hi = hi_abits < 1? 1 : hi_abits;
        end
    end
    return abits;
    endfunction : INIT_ABITS
    localparam abits_t ABITS = INIT_ABITS();"""
ABITS_READY = """function int unsigned INIT_ABITS_FIELD(input bit hi);
		automatic int unsigned  lo = $clog2(DEPTH_REQ);
		automatic int unsigned  h  = 0;
		if(lo > MIN_ABITS) begin
			automatic int unsigned  hi_abits = $clog2(DEPTH_REQ - 2**(lo-1));
			if(hi_abits < lo - 1) begin
				lo--;
				h = hi_abits < 1? 1 : hi_abits;
			end
		end
		return  hi? h : lo;
	endfunction : INIT_ABITS_FIELD
	localparam abits_t       ABITS      = '{ lo: INIT_ABITS_FIELD(0), hi: INIT_ABITS_FIELD(1) };"""


def _abits_without_struct_function(text: str) -> str:
    """fifo.sv: Verilator cannot evaluate a constant function that builds a struct
    ("Unknown node type ... CONSPACKUORSTRUCT"); the same computation, one field per call."""
    match = re.search(r"function abits_t INIT_ABITS\(\);.*?= INIT_ABITS\(\);", text, re.S)
    if match is None or _tokens(match.group(0)) != _tokens(ABITS_ORIGINAL):
        return text  # not the code this was written for: compile it as it is
    return text[: match.start()] + ABITS_READY + text[match.end() :]


def _tokens(code: str) -> list[str]:
    return re.sub(r"//[^\n]*", "", code).split()


GAUGE_LOG = 'int  LogFd = (DATA_LOGFILE != "")? $fopen(DATA_LOGFILE, "w") : 0;'
GAUGE_WRITES = ('$fwrite(LogFd, "[%m @%0t] MaxFill', '$fwrite(LogFd, "%0x\\n", idat)')


def _gauge_without_log_file(text: str) -> str:
    """fifo_gauge.sv: the beat log stays closed (``LogFd`` 0), so its writes go away too."""
    if GAUGE_LOG not in text or not all(write in text for write in GAUGE_WRITES):
        return text  # not the code this was written for: the screen refuses what it writes
    text = text.replace(GAUGE_LOG, "int  LogFd = 0;  // brainsmith.hardware.rtlsim: no beat log")
    return text.replace("$fwrite(LogFd, ", "$write(").replace("$fclose(LogFd);", "")


SKID_CHECK = '$error("%m: Requested number of %0d FEED_STAGES exceeds SRL capacity.");'


def _skid_check_with_its_argument(text: str) -> str:
    """skid.sv (FINN's InnerShuffle): its capacity check's message names a number it is not
    given, which Verilator refuses to compile ("Missing arguments for $display-like
    format"); the check stays, with the number it meant."""
    if SKID_CHECK not in text:
        return text  # not the code this was written for: left as it is
    return text.replace(SKID_CHECK, SKID_CHECK.replace('.");', '.", FEED_STAGES);'))


VERILATOR_FIXES = {
    "add_multi.sv": hoist_leaf_loads,
    "layernorm.sv": hoist_edge_delays,
    "softmaxf.sv": hoist_softmax_edge_delays,
    "rsqrtf.sv": _rsqrt_behavioural_by_default,
    "binopf.sv": _behavioural_by_default,
    "softmax_pwpolyf.sv": _fma_as_behaviour,
    "inner_shuffle.sv": _rotation_index_of_one_bit,
    "skid.sv": _skid_check_with_its_argument,
    "fifo.sv": _abits_without_struct_function,
    "fifo_gauge.sv": _gauge_without_log_file,
}
