"""Running a built accelerator on a board: ``rtl/`` holds the host link's SystemVerilog (a
UART, frames with a CRC, the accelerator's AXI streams), ``link`` the host side of it;
``boards`` reads ECP5 boards from amaranth-boards, ``constraints`` writes their LPF, ``pll``
sets the PLL for the design clock and ``top`` makes the board top around the accelerator."""
