"""Running a built accelerator on a board: ``rtl/`` holds the host link's SystemVerilog (a
UART, frames with a CRC, the accelerator's AXI streams), ``link`` the host side of it."""
