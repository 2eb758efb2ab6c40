"""The hardware tools, in the order a design meets them: ``rtlsim/`` (Verilator: each layer
and the stitched accelerator simulated), ``synthesis/`` (Yosys: each layer mapped and
counted), ``place_route/`` (Yosys, nextpnr and the packers: the whole accelerator placed,
routed, timed and packed) and ``board/`` (the board's top and host link, its bitstream run,
simulated or loaded)."""
