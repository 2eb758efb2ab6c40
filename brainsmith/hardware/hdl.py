"""The SystemVerilog brainsmith generates, as typed objects: a module's ports (name,
direction, width), the signals it declares, its instances (module, name, parameters,
connections, attributes), assignments and the reset synchroniser, each rendering its own
lines; ``Module.render`` writes the whole text. Nothing here knows a board or a network: the
board tops (``board.top``, ``board.simulated``, ``board.gate_level``) and the stitched
accelerator (``rtlsim.stitched.design``) build these objects and render them once.

An instance's parameters, connections and attributes are given in lines (a tuple of lines,
each a tuple of pairs), so that the text keeps the layout the tops have always had.

The tops are not elaborated by amaranth (``amaranth.back.verilog.convert``), though it could
express them: it runs Yosys for each top, also where a cached bitstream is only looked up;
its Verilog is other text than the tops builds were made from, which would change every
bitstream's cache key and fail an export's check that its staged sources are the ones the
build makes now; and amaranth is installed with the ``lattice`` extra only, while the
simulated board and the export need their tops without it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

Direction = Literal["input", "output"]
Pairs = tuple[tuple[tuple[str, str], ...], ...]  # lines of (name, value) pairs
INDENT = "  "


def bit_range(width: int) -> str:
    """``[width-1:0] `` for a vector, nothing for one bit."""
    if width < 1:
        raise ValueError(f"a signal of {width} bits")
    return f"[{width - 1}:0] " if width > 1 else ""


def hex_constant(bits: int, digits: str) -> str:
    """A ``bits``-wide hex literal of ``digits``."""
    return f"{bits}'h{digits}"


def inverted(name: str, invert: bool) -> str:
    return f"~{name}" if invert else name


def any_of(terms: Sequence[str]) -> str:
    """The OR of ``terms`` (``1'b0`` for none)."""
    return " | ".join(terms) if terms else "1'b0"


class Item(Protocol):
    def lines(self) -> list[str]: ...


@dataclass(frozen=True)
class Port:
    """A port of a module: its name, direction and width in bits, declared ``logic`` or,
    with ``plain``, as a net of the default type (``input [7:0] x``)."""

    name: str
    direction: Direction
    width: int = 1
    plain: bool = False

    def declaration(self) -> str:
        if self.plain:
            return f"{self.direction} {bit_range(self.width)}{self.name}"
        return f"{self.direction:<6} logic {bit_range(self.width)}{self.name}"


@dataclass(frozen=True)
class Logic:
    """Signals of one width declared together, as ``logic`` or ``wire``."""

    names: tuple[str, ...]
    width: int = 1
    kind: Literal["logic", "wire"] = "logic"

    def lines(self) -> list[str]:
        return [f"{INDENT}{self.kind} {bit_range(self.width)}{', '.join(self.names)};"]


@dataclass(frozen=True)
class Assign:
    """``assign target = value;`` with an optional trailing comment."""

    target: str
    value: str
    comment: str = ""

    def lines(self) -> list[str]:
        note = f"  // {self.comment}" if self.comment else ""
        return [f"{INDENT}assign {self.target} = {self.value};{note}"]


@dataclass(frozen=True)
class Blank:
    def lines(self) -> list[str]:
        return [""]


@dataclass(frozen=True)
class ResetSynchroniser:
    """``out`` (active low) asserted at once while ``held`` is true, released on ``clock``
    ``stages - 1`` cycles after ``held`` falls (a shift register of ``stages`` flops, reset
    asynchronously)."""

    clock: str
    held: str  # the expression holding the reset
    out: str = "rst_n"
    stages: int = 3

    def lines(self) -> list[str]:
        last = self.stages - 1
        return [
            f"{INDENT}// reset: asserted at once while the PLL is unlocked or the button is "
            "pressed, released",
            f"{INDENT}// on the design clock two cycles after",
            *Logic(("held",)).lines(),
            *Logic(("release_n",), self.stages).lines(),
            *Assign("held", self.held).lines(),
            f"{INDENT}always_ff @(posedge {self.clock} or posedge held)",
            f"{INDENT * 2}if (held) release_n <= '0;",
            f"{INDENT * 2}else release_n <= {{release_n[{last - 1}:0], 1'b1}};",
            *Logic((self.out,)).lines(),
            *Assign(self.out, f"release_n[{last}]").lines(),
        ]


@dataclass(frozen=True)
class Instance:
    """An instance of ``module`` named ``name``: its ``parameters`` (``#(...)``), its port
    ``connections`` (a signal, or "" for a port left open) and the ``attributes`` before it,
    each in lines."""

    module: str
    name: str
    connections: Pairs
    parameters: Pairs = ()
    attributes: Pairs = ()

    def lines(self) -> list[str]:
        found = [
            INDENT + " ".join(f'(* {key}="{value}" *)' for key, value in line)
            for line in self.attributes
        ]
        head = f"{INDENT}{self.module}"
        if self.parameters:
            found += [f"{head} #(", *_pairs(self.parameters), f"{INDENT}) {self.name} ("]
        else:
            found.append(f"{head} {self.name} (")
        return [*found, *_pairs(self.connections), f"{INDENT});"]


def _pairs(lines: Pairs) -> list[str]:
    """``.name(value)`` pairs, comma-separated, a line of the text for each line given."""
    rendered = [", ".join(f".{name}({value})" for name, value in line) for line in lines]
    return [f"{INDENT * 2}{text}{',' if i < len(rendered) - 1 else ''}"
            for i, text in enumerate(rendered)]  # fmt: skip


@dataclass(frozen=True)
class Module:
    """A module: the comment lines above it, its name, ports and body, indented by
    ``indent`` (the stitched accelerator's top keeps the tabs it was first written with, so
    its text, and every netlist and cache key made from it, stays the same)."""

    name: str
    ports: tuple[Port, ...]
    body: tuple[Item, ...]
    comment: tuple[str, ...] = ()
    indent: str = INDENT
    parameters: tuple[tuple[str, str], ...] = ()  # (name, default value)

    def render(self) -> str:
        names = [port.name for port in self.ports]
        repeated = sorted({name for name in names if names.count(name) > 1})
        if repeated:
            raise ValueError(f"module {self.name} names {', '.join(repeated)} twice")
        lines = [f"// {line}" for line in self.comment]
        if self.parameters:
            lines.append(f"module {self.name} #(")
            lines.append(",\n".join(f"{self.indent}parameter {name} = {value}"
                                     for name, value in self.parameters))  # fmt: skip
            lines.append(") (")
        else:
            lines.append(f"module {self.name} (")
        lines.append(",\n".join(f"{self.indent}{port.declaration()}" for port in self.ports))
        lines.append(");")
        lines += [self._indented(line) for item in self.body for line in item.lines()]
        lines.append("endmodule")
        return "\n".join(lines) + "\n"

    def _indented(self, line: str) -> str:
        """``line`` with each leading ``INDENT`` as ``indent`` (as it is, with ``INDENT``)."""
        if self.indent == INDENT:
            return line
        text = line.lstrip(" ")
        units, rest = divmod(len(line) - len(text), len(INDENT))
        return self.indent * units + " " * rest + text


__all__ = [
    "Assign",
    "Blank",
    "Direction",
    "Instance",
    "Logic",
    "Module",
    "Port",
    "ResetSynchroniser",
    "any_of",
    "bit_range",
    "hex_constant",
    "inverted",
]
