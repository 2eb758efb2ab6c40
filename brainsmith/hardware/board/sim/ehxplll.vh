
  // brainsmith: EHXPLLL passing its input clock through, locked a few cycles after start
  reg [2:0] cycles = 3'd0;  // LOCK a few input clocks after start
  always @(posedge CLKI) if (cycles != 3'd7) cycles <= cycles + 3'd1;
  assign CLKOP = CLKI;
  assign CLKOS = CLKI;
  assign CLKOS2 = CLKI;
  assign CLKOS3 = CLKI;
  assign LOCK = cycles == 3'd7;
  assign INTLOCK = LOCK;
