"""The constraints of a board top, in its family's place-and-route format: each port's pin
and its I/O attributes. ECP5: Lattice LPF for nextpnr-ecp5 (``LOCATE COMP``, ``IOBUF PORT``
and the oscillator's ``FREQUENCY PORT``, from which nextpnr derives the PLL's output clock);
Gowin: CST for nextpnr-himbaechel-gowin (``IO_LOC``, ``IO_PORT``); iCE40: PCF for
nextpnr-ice40 (``set_io``, a pull-up where the board asks one); GateMate: CCF for
nextpnr-himbaechel-gatemate (``Net "port" Loc = "pad" | attribute=value;``).
"""

from __future__ import annotations

from collections.abc import Mapping

TYPE_CHECKING = False
if TYPE_CHECKING:
    from brainsmith.hardware.board.boards import Board, Pin

# the board top's port names, shared with ``top``
CLOCK, UART_RX, UART_TX, RESET, LED = "clk_osc", "uart_rx", "uart_tx", "button", "led"


def ports(board: Board) -> dict[str, Pin]:
    """The board top's ports and the pin each goes to."""
    found = {CLOCK: board.clock, UART_RX: board.uart_rx, UART_TX: board.uart_tx}
    if board.reset is not None:
        found[RESET] = board.reset
    if board.led is not None:
        found[LED] = board.led
    return found


def lpf(board: Board) -> str:
    """The LPF of ``board``'s top (ECP5)."""
    lines = [f"# {board.name} ({board.part}), from amaranth-boards"]
    for port, pin in ports(board).items():
        attrs = " ".join(f"{key}={value}" for key, value in sorted(pin.attrs.items()))
        lines.append(f'LOCATE COMP "{port}" SITE "{pin.site}";')
        if attrs:
            lines.append(f'IOBUF PORT "{port}" {attrs};')
    lines.append(f'FREQUENCY PORT "{CLOCK}" {board.clock_mhz:g} MHZ;')
    return "\n".join(lines) + "\n"


def cst(pins: Mapping[str, tuple[str, Mapping[str, str]]], title: str = "") -> str:
    """Gowin's CST of ``pins`` (port -> (pin, attributes))."""
    lines = [f"// {title}"] if title else []
    for port, (site, attrs) in pins.items():
        lines.append(f'IO_LOC "{port}" {site};')
        if attrs:
            settings = " ".join(f"{key}={value}" for key, value in sorted(attrs.items()))
            lines.append(f'IO_PORT "{port}" {settings};')
    return "\n".join(lines) + "\n"


def pcf(pins: Mapping[str, tuple[str, Mapping[str, str]]], title: str = "") -> str:
    """The iCE40's PCF of ``pins`` (port -> (pin, attributes)): a pull-up where ``PULLUP``
    is 1; the other attributes are the pin's own (its bank's voltage, a global buffer)."""
    lines = [f"# {title}"] if title else []
    lines += [f"set_io{' -pullup yes' if attrs.get('PULLUP') == '1' else ''} {port} {site}"
              for port, (site, attrs) in pins.items()]  # fmt: skip
    return "\n".join(lines) + "\n"


def ccf(pins: Mapping[str, tuple[str, Mapping[str, str]]], title: str = "") -> str:
    """The GateMate's CCF of ``pins`` (port -> (pad, attributes))."""
    lines = [f"# {title}"] if title else []
    for port, (site, attrs) in pins.items():
        settings = "".join(f" | {key}={value}" for key, value in sorted(attrs.items()))
        lines.append(f'Net "{port}" Loc = "{site}"{settings};')
    return "\n".join(lines) + "\n"


def pin_table(board: Board) -> tuple[dict[str, tuple[str, dict[str, str]]], str]:
    """(port -> (pin, attributes), a title) of ``board``'s top, as ``cst``, ``pcf`` and ``ccf``
    take them."""
    pins = {port: (pin.site, pin.attrs) for port, pin in ports(board).items()}
    return pins, f"{board.name} ({board.part}), from its platform description"


__all__ = [
    "CLOCK",
    "LED",
    "RESET",
    "UART_RX",
    "UART_TX",
    "ccf",
    "cst",
    "lpf",
    "pcf",
    "pin_table",
    "ports",
]
