"""nextpnr-ecp5's constraints (Lattice LPF) for a board top: each port's ball (``LOCATE
COMP``), its I/O standard and pull/drive attributes (``IOBUF PORT``) and the oscillator's
frequency (``FREQUENCY PORT``), from which nextpnr derives the PLL's output clock.
"""

from __future__ import annotations

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
    """The LPF of ``board``'s top."""
    lines = [f"# {board.name} ({board.part}), from amaranth-boards"]
    for port, pin in ports(board).items():
        attrs = " ".join(f"{key}={value}" for key, value in sorted(pin.attrs.items()))
        lines.append(f'LOCATE COMP "{port}" SITE "{pin.site}";')
        if attrs:
            lines.append(f'IOBUF PORT "{port}" {attrs};')
    lines.append(f'FREQUENCY PORT "{CLOCK}" {board.clock_mhz:g} MHZ;')
    return "\n".join(lines) + "\n"


__all__ = ["CLOCK", "LED", "RESET", "UART_RX", "UART_TX", "lpf", "ports"]
