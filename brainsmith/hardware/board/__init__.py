"""Running a built accelerator on a board: ``rtl/`` holds the host link's SystemVerilog (a
UART, frames with a CRC, the accelerator's AXI streams), ``link`` the host side of it;
``boards`` reads ECP5, Gowin and iCE40 boards from amaranth-boards, ``constraints`` writes
their pins in their family's format (LPF, CST, PCF), ``clocking`` is what each family's PLL
(``pll``: the ECP5's, ``gowin_pll``, ``ice40_pll``) gives for the design clock and ``top``
makes the board top around the accelerator."""
