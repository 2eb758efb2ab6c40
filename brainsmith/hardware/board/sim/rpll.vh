
  // brainsmith: Gowin's rPLL passing its input clock through, locked a few cycles after start
  reg [2:0] cycles = 3'd0;  // LOCK a few input clocks after start
  always @(posedge CLKIN) if (cycles != 3'd7) cycles <= cycles + 3'd1;
  assign CLKOUT = CLKIN;
  assign CLKOUTP = CLKIN;
  assign CLKOUTD = CLKIN;
  assign CLKOUTD3 = CLKIN;
  assign LOCK = cycles == 3'd7;
