"""A stitched accelerator on a real ECP5 board, reached from the host over a UART."""
